// llama-ts/web in Debian's chromium (puppeteer-core), against `llama-ts web`'s server (COOP/
// COEP, range requests): the same tokens, texts, top-10 probabilities and embeddings as
// Node for the same models and prompts; a chat template with a forced tool call and a
// JSON-schema completion as on Node; sessions as bytes; download progress, abort and
// resume; a reload served from the cache with the models' URLs cut off; a page that is
// not cross-origin isolated on one thread. One browser for all.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'puppeteer-core';
import { serveWeb, type WebServer } from '../src/cli/web.js';
import { ensureModel } from '../src/generator/index.js';
import { type LlamaCompletionOptions, type LlamaCompletionResult, loadModel } from '../src/index.js';
import { decodeAudio, decodeImage } from '../src/media/index.js';
import { QWEN25 } from './chat-fixtures.js';
import { WEATHER_TOOL } from './helpers/clients.js';
import { tinyBert } from './helpers/models.js';
import { missingShared, sharedPath } from './helpers/shared.js';
import { splitModel } from './helpers/split.js';
import { encodeWebp, sampleRgba } from './helpers/webp-encode.js';

const CHROMIUM = '/usr/bin/chromium';
const STORIES = sharedPath('models/stories260K.gguf');
const MTMD = sharedPath('fixtures/mtmd/gemma3.mmproj.gguf') ? sharedPath('fixtures/mtmd/') : undefined;
const noBrowser = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent (Debian's chromium); the browser tests are skipped`;

// The page-side callbacks run in the browser; this program has no DOM library.
// biome-ignore lint/suspicious/noExplicitAny: the web entry's module, as the page sees it
type Web = any;
declare const window: { web: Web; crossOriginIsolated: boolean };
declare const document: Web;
const ENTRY = '/dist/src/web/index.js';

const PROMPTS = ['Once upon a time', 'The little dog'];
const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 99 } },
  required: ['name', 'age'],
  additionalProperties: false,
};
const CHAT: Partial<LlamaCompletionOptions> = {
  messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
  tools: [WEATHER_TOOL],
  tool_choice: 'required',
  jinja: true,
  temperature: 0,
  n_predict: 200,
};

/** What a completion is compared by: its text, token ids and top-10 probabilities. */
function summary(r: LlamaCompletionResult) {
  return {
    text: r.text,
    tokens: r.tokens,
    probs: (r.completion_probabilities ?? []).map((p) => p.probs.map((q) => [q.tok_str, q.prob] as const)),
    // (call ids are random)
    tool_calls: r.tool_calls?.map(({ id: _, ...c }) => c),
  };
}
type Summary = ReturnType<typeof summary>;

function sameCompletion(web: Summary, node: Summary, what: string): void {
  assert.equal(web.text, node.text, `${what}: text`);
  assert.deepEqual(web.tokens, node.tokens, `${what}: token ids`);
  assert.deepEqual(web.tool_calls, node.tool_calls, `${what}: tool calls`);
  assert.equal(web.probs.length, node.probs.length);
  for (let i = 0; i < node.probs.length; i++) {
    for (let k = 0; k < node.probs[i]!.length; k++) {
      const [ws, wp] = web.probs[i]![k]!;
      const [ns, np] = node.probs[i]![k]!;
      assert.equal(ws, ns, `${what}: token ${i}, candidate ${k}`);
      assert.ok(Math.abs(wp - np) <= 1e-5, `${what}: token ${i}, candidate ${k}: ${wp} vs ${np}`);
    }
  }
}

/** Node's answers, computed once. */
async function nodeRefs(model: string, chat: boolean) {
  const ctx = await loadModel({ model, n_ctx: 512, n_threads: 2, ...(chat ? { chat_template: QWEN25 } : {}) });
  try {
    const greedy: Summary[] = [];
    for (const prompt of PROMPTS)
      greedy.push(
        summary(await ctx.completion({ prompt, n_predict: 24, temperature: 0, n_probs: 10, return_tokens: true })),
      );
    const json = summary(
      await ctx.completion({ prompt: 'A person:', json_schema: SCHEMA, temperature: 0, n_predict: 64 }),
    );
    const tool = chat ? summary(await ctx.completion(CHAT as LlamaCompletionOptions)) : undefined;
    return { greedy, json, tool };
  } finally {
    await ctx.release();
  }
}

describe('llama-ts/web in chromium', { skip: noBrowser, timeout: 120_000 }, () => {
  let browser: Browser;
  let server: WebServer;
  let open: WebServer;
  let page: Page;
  const errors: string[] = [];
  const warnings: string[] = [];
  const qwen3 = ensureModel('tiny-qwen3', 'Q8_0');
  const bert = tinyBert();
  const reranker = ensureModel('tiny-qwen3-reranker', 'F32');
  const haveStories = STORIES !== undefined;
  let huge = '';
  let served: Record<string, string> = {};

  /** A fresh page on `s`'s origin with the web entry imported as window.web. */
  async function webPage(s: WebServer): Promise<Page> {
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(String(e)));
    p.on('console', (m) => {
      if (/warn/.test(m.text())) warnings.push(m.text());
    });
    await p.goto(`${s.url}/blank.html`);
    await p.evaluate(async (entry) => {
      window.web = await import(entry);
    }, ENTRY);
    return p;
  }

  before(async () => {
    // a sparse 5 GiB file (no disk used): refused before its download
    huge = join(mkdtempSync(join(tmpdir(), 'llama-ts-web-')), 'huge.gguf');
    writeFileSync(huge, '');
    truncateSync(huge, 5 * 2 ** 30);
    const models: Record<string, string> = {
      'qwen3.gguf': qwen3,
      'bert.gguf': bert,
      'reranker.gguf': reranker,
      'huge.gguf': huge,
    };
    // a URL whose file changes between an aborted download and its resumption
    models['changing.gguf'] = qwen3;
    // qwen3 as gguf-split's 2 shards
    for (const f of splitModel(qwen3, dirname(huge), 2, 'qwen3')) models[f.slice(dirname(huge).length + 1)] = f;
    if (STORIES) models['stories.gguf'] = STORIES;
    if (MTMD) for (const f of ['gemma3.gguf', 'gemma3.mmproj.gguf']) models[f] = `${MTMD}${f}`;
    served = models;
    server = await serveWeb({ port: 0, models });
    open = await serveWeb({ port: 0, models, isolated: false });
    const { default: puppeteer } = await import('puppeteer-core');
    browser = await puppeteer.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
    });
    page = await webPage(server);
    await page.evaluate(() => window.web.clearDownloadCache());
  });
  after(async () => {
    await browser?.close();
    await server?.close();
    await open?.close();
    if (huge) rmSync(dirname(huge), { recursive: true, force: true });
  });

  /** Greedy completions, a JSON-schema one and (with a template) a forced tool call, in the page. */
  const runInPage = (p: Page, url: string, chat: boolean, threads: number) =>
    p.evaluate(
      async (url, chat, threads, prompts, schema, chatOptions, template) => {
        const pick = (r: Web) => ({
          text: r.text,
          tokens: r.tokens,
          probs: (r.completion_probabilities ?? []).map((p: Web) => p.probs.map((q: Web) => [q.tok_str, q.prob])),
          tool_calls: r.tool_calls?.map(({ id: _, ...c }: Web) => c),
        });
        const ctx = await window.web.loadModel({
          model: url,
          n_ctx: 512,
          n_threads: threads,
          ...(chat ? { chat_template: template } : {}),
        });
        const greedy = [];
        for (const prompt of prompts)
          greedy.push(
            pick(await ctx.completion({ prompt, n_predict: 24, temperature: 0, n_probs: 10, return_tokens: true })),
          );
        const json = pick(
          await ctx.completion({ prompt: 'A person:', json_schema: schema, temperature: 0, n_predict: 64 }),
        );
        const tool = chat ? pick(await ctx.completion(chatOptions)) : undefined;
        await ctx.release();
        return { greedy, json, tool, isolated: window.crossOriginIsolated };
      },
      url,
      chat,
      threads,
      PROMPTS,
      SCHEMA,
      CHAT,
      QWEN25,
    ) as Promise<{ greedy: Summary[]; json: Summary; tool: Summary | undefined; isolated: boolean }>;

  test('tiny qwen3 (generated): greedy text, token ids and top-10 probabilities as Node; a forced tool call through a chat template; a JSON-schema completion', async () => {
    const [node, web] = await Promise.all([nodeRefs(qwen3, true), runInPage(page, '/models/qwen3.gguf', true, 2)]);
    assert.equal(web.isolated, true);
    for (const [i, w] of web.greedy.entries()) sameCompletion(w, node.greedy[i]!, `prompt ${i}`);
    sameCompletion(web.json, node.json, 'json schema');
    const parsed = JSON.parse(web.json.text);
    assert.deepEqual(Object.keys(parsed).sort(), ['age', 'name']);
    sameCompletion(web.tool!, node.tool!, 'tool call');
    assert.equal(web.tool!.tool_calls?.[0]?.function.name, 'get_weather');
    assert.deepEqual(errors, []);
  });

  test("stories260K (llama.cpp's test model): as Node; progress in order; a session as bytes", {
    skip: haveStories ? false : missingShared('models/stories260K.gguf'),
  }, async () => {
    const node = await nodeRefs(STORIES!, false);
    const r = await page.evaluate(async (prompt) => {
      const events: [string, number][] = [];
      const ctx = await window.web.loadModel(
        { model: '/models/stories.gguf', n_ctx: 256, n_threads: 2 },
        (f: number, i: Web) => events.push([i.phase, f]),
      );
      const a = await ctx.completion({ prompt, n_predict: 24, temperature: 0, n_probs: 10, return_tokens: true });
      const session = await ctx.saveSession();
      const other = await window.web.loadModel({ model: '/models/stories.gguf', n_ctx: 256, n_threads: 2 });
      const loaded = await other.loadSession(session);
      await other.release();
      await ctx.release();
      return {
        events,
        text: a.text,
        tokens: a.tokens,
        probs: a.completion_probabilities.map((p: Web) => p.probs.map((q: Web) => [q.tok_str, q.prob])),
        sessionBytes: session.length,
        loadedTokens: loaded.tokens_loaded,
      };
    }, PROMPTS[0]);
    sameCompletion({ ...r, tool_calls: undefined }, node.greedy[0]!, 'stories260K');
    // download 0 → 1, then load 0 → 1, each never going back
    const phases = r.events.map(([p]) => p);
    const firstLoad = phases.indexOf('load');
    assert.ok(firstLoad > 0 && phases.slice(0, firstLoad).every((p) => p === 'download'), phases.join(','));
    assert.ok(phases.slice(firstLoad).every((p) => p === 'load'));
    for (const part of [r.events.slice(0, firstLoad), r.events.slice(firstLoad)]) {
      for (let i = 1; i < part.length; i++) assert.ok(part[i]![1] >= part[i - 1]![1], JSON.stringify(part));
      assert.equal(part.at(-1)![1], 1);
    }
    assert.ok(r.sessionBytes > 1000);
    assert.equal(r.loadedTokens, 5 + 23); // BOS and 4 prompt tokens, 23 of the 24 generated (the last one is not evaluated yet)
  });

  test("an embedding equal to Node's within 1e-6; rerank scores as Node's", async () => {
    const text = 'The quick brown fox';
    const query = 'what is a panda?';
    const docs = ['hi', 'pandas eat bamboo', 'paris'];
    const ctx = await loadModel({ model: bert, embedding: true, n_threads: 2 });
    const want = Array.from((await ctx.embedding(text)).embedding);
    await ctx.release();
    const rr = await loadModel({ model: reranker, n_ctx: 512, n_threads: 2 });
    const wantRank = await rr.rerank(query, docs);
    await rr.release();
    const got = await page.evaluate(
      async (text, query, docs) => {
        const c = await window.web.loadModel({ model: '/models/bert.gguf', embedding: true, n_threads: 2 });
        const e = Array.from((await c.embedding(text)).embedding) as number[];
        await c.release();
        const r = await window.web.loadModel({ model: '/models/reranker.gguf', n_ctx: 512, n_threads: 2 });
        const rank = await r.rerank(query, docs);
        await r.release();
        return { e, rank: rank as { index: number; score: number }[] };
      },
      text,
      query,
      docs,
    );
    assert.equal(got.e.length, want.length);
    for (let i = 0; i < want.length; i++)
      assert.ok(Math.abs(got.e[i]! - want[i]!) <= 1e-6, `${i}: ${got.e[i]} vs ${want[i]}`);
    assert.equal(got.rank.length, wantRank.length);
    for (let i = 0; i < wantRank.length; i++) {
      assert.equal(got.rank[i]!.index, wantRank[i]!.index);
      assert.ok(
        Math.abs(got.rank[i]!.score - wantRank[i]!.score) <= 1e-6,
        `${got.rank[i]!.score} vs ${wantRank[i]!.score}`,
      );
    }
  });

  test('a model as a Blob, as bytes or as gguf-split shards gives the same tokens as from its URL; tokenize as Node; a model over 4 GiB is refused before its download', async () => {
    const node = await loadModel({ model: qwen3, n_threads: 1 });
    const want = (await node.tokenize('Hello world, tokens!')).tokens;
    await node.release();
    const r = await page.evaluate(async () => {
      const run = async (model: Web) => {
        const ctx = await window.web.loadModel({ model, n_threads: 2 });
        const out = await ctx.completion({
          prompt: 'Once upon a time',
          n_predict: 8,
          temperature: 0,
          return_tokens: true,
        });
        const tokens = Array.from((await ctx.tokenize('Hello world, tokens!')).tokens);
        await ctx.release();
        return { out: out.tokens, tokens };
      };
      const blob = await (await fetch('/models/qwen3.gguf')).blob();
      const fromUrl = await run('/models/qwen3.gguf');
      const fromBlob = await run(blob);
      const fromBytes = await run(await blob.arrayBuffer());
      const fromShards = await run(['/models/qwen3-00001-of-00002.gguf', '/models/qwen3-00002-of-00002.gguf']);
      const seen: string[] = [];
      let refused = '';
      try {
        await window.web.loadModel({ model: '/models/huge.gguf' }, (_f: number, i: Web) => seen.push(i.phase));
      } catch (e) {
        refused = `${(e as { code?: string }).code}: ${(e as Error).message}`;
      }
      return { fromUrl, fromBlob, fromBytes, fromShards, refused, seen };
    });
    assert.deepEqual(r.fromBlob, r.fromUrl);
    assert.deepEqual(r.fromBytes, r.fromUrl);
    assert.deepEqual(r.fromShards, r.fromUrl);
    assert.deepEqual(r.fromUrl.tokens, Array.from(want));
    assert.match(r.refused, /^ERR_MODEL: .*5\.00 GiB; llama-ts in the browser holds at most 4 GiB/);
    assert.deepEqual(r.seen, [], 'no download progress: refused on the headers');
  });

  test('abort mid-generation ends the completion early (interrupted)', async () => {
    const r = await page.evaluate(async () => {
      const ctx = await window.web.loadModel({ model: '/models/qwen3.gguf', n_ctx: 512, n_threads: 2 });
      const ac = new AbortController();
      let seen = 0;
      const out = await ctx.completion(
        { prompt: 'Hello', n_predict: 400, temperature: 1, ignore_eos: true, signal: ac.signal },
        () => {
          if (++seen === 3) ac.abort();
        },
      );
      await ctx.release();
      return { interrupted: out.interrupted, n: out.tokens_predicted };
    });
    assert.equal(r.interrupted, true);
    assert.ok(r.n < 20, `${r.n} tokens`);
  });

  test('a download aborted midway resumes from what it kept; a reload loads from the cache with the network cut', async () => {
    await page.evaluate(() => window.web.clearDownloadCache());
    // slow enough to abort midway (the model is ~0.9 MB)
    const cdp = await page.createCDPSession();
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 300_000,
      uploadThroughput: -1,
    });
    const aborted = await page.evaluate(async () => {
      const ac = new AbortController();
      let at = 0;
      try {
        await window.web.loadModel({ model: '/models/qwen3.gguf', signal: ac.signal }, (_f: number, i: Web) => {
          if (i.phase === 'download' && i.loaded > 0 && at === 0) {
            at = i.loaded;
            ac.abort();
          }
        });
        return { error: 'loaded', at };
      } catch (e) {
        return { error: (e as Error).name, at };
      }
    });
    assert.equal(aborted.error, 'AbortError');
    assert.ok(aborted.at > 0);
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    const resumed = await page.evaluate(async () => {
      const first: number[] = [];
      const ctx = await window.web.loadModel({ model: '/models/qwen3.gguf', n_threads: 2 }, (_f: number, i: Web) => {
        if (i.phase === 'download') first.push(i.loaded, i.total);
      });
      const r = await ctx.completion({ prompt: 'Once upon a time', n_predict: 8, temperature: 0 });
      await ctx.release();
      return { first: first.slice(0, 2), last: first.slice(-2), text: r.text };
    });
    assert.ok(resumed.first[0]! >= aborted.at, `resumed at ${resumed.first[0]} (aborted at ${aborted.at})`);
    assert.equal(resumed.last[0], resumed.last[1]);

    // a file that changed on the server after a download stopped: the resumption starts over (If-Range)
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: 300_000,
      uploadThroughput: -1,
    });
    const stopped = await page.evaluate(async () => {
      const ac = new AbortController();
      let at = 0;
      await window.web
        .loadModel({ model: '/models/changing.gguf', signal: ac.signal }, (_f: number, i: Web) => {
          if (i.phase === 'download' && i.loaded > 0 && at === 0) {
            at = i.loaded;
            ac.abort();
          }
        })
        .catch(() => {});
      return at;
    });
    assert.ok(stopped > 0);
    await cdp.send('Network.emulateNetworkConditions', {
      offline: false,
      latency: 0,
      downloadThroughput: -1,
      uploadThroughput: -1,
    });
    served['changing.gguf'] = bert;
    const changed = await page.evaluate(async () => {
      const loaded: number[] = [];
      const ctx = await window.web.loadModel(
        { model: '/models/changing.gguf', embedding: true },
        (_f: number, i: Web) => {
          if (i.phase === 'download') loaded.push(i.loaded, i.total);
        },
      );
      const arch = ctx.getModelInfo().metadata['general.architecture'];
      await ctx.release();
      return { loaded, arch };
    });
    assert.equal(changed.arch, 'bert');
    assert.equal(changed.loaded[0], 0, 'started over');
    assert.equal(changed.loaded.at(-2), changed.loaded.at(-1), 'complete');
    assert.equal(changed.loaded.at(-1), statSync(bert).size, 'the new file whole, not the old one continued');

    // the network cut for the models; a reload gets them from the cache
    const asked: string[] = [];
    page.on('request', (req) => {
      if (req.url().includes('/models/')) asked.push(req.url());
    });
    await cdp.send('Network.enable');
    await cdp.send('Network.setBlockedURLs', { urls: ['*/models/*'] });
    await page.reload();
    const offline = await page.evaluate(async (entry) => {
      window.web = await import(entry);
      const ctx = await window.web.loadModel({ model: '/models/qwen3.gguf', n_threads: 2 });
      const r = await ctx.completion({ prompt: 'Once upon a time', n_predict: 8, temperature: 0 });
      await ctx.release();
      return r.text;
    }, ENTRY);
    assert.equal(offline, resumed.text);
    assert.deepEqual(asked, []);
    // the cut is real: the URL itself no longer loads
    const cut = await page.evaluate(() =>
      fetch('/models/qwen3.gguf').then(
        (r) => r.status,
        (e) => String(e),
      ),
    );
    assert.match(String(cut), /TypeError|Failed/);
    await cdp.send('Network.setBlockedURLs', { urls: [] });
  });

  test("the example page (llama-ts web): load by URL, a streamed chat reply equal to Node's, tokens/s; a screenshot", async (t) => {
    const question = 'Tell me a story';
    const ctx = await loadModel({ model: qwen3, n_threads: 2 });
    const want = (
      await ctx.completion({
        messages: [{ role: 'user', content: question }],
        n_predict: 256,
        temperature: 0,
        jinja: true,
      })
    ).text;
    await ctx.release();
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(String(e)));
    await p.setViewport({ width: 900, height: 700 });
    await p.goto(`${server.url}/`);
    await p.waitForFunction(() => (document.getElementById('url') as unknown as { value: string }).value !== '');
    await p.$eval('#url', (el) => {
      (el as unknown as { value: string }).value = '/models/qwen3.gguf';
    });
    await p.$eval('#temperature', (el) => {
      (el as unknown as { value: string }).value = '0';
    });
    await p.click('#load');
    await p.waitForSelector('body[data-loaded]');
    await p.type('#input', question);
    await p.click('#send');
    await p.waitForSelector('body[data-replied]');
    const shown = await p.evaluate(() => ({
      reply: document.querySelector('.msg.assistant')?.textContent,
      stats: document.getElementById('stats')?.textContent,
    }));
    const shot = join(tmpdir(), 'llama-ts-web-example.png');
    await p.screenshot({ path: shot });
    t.diagnostic(`screenshot: ${shot}`);
    await p.close();
    assert.equal(shown.reply, want);
    assert.match(shown.stats ?? '', /\d+ tokens, [\d.]+ tokens\/s/);
    assert.deepEqual(errors, []);
  });

  test('FLAC and MP3 decode in the page as on Node; their decoders load only then, from /vendor/', async () => {
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(String(e)));
    const vendor: string[] = [];
    p.on('request', (r) => {
      const m = /\/vendor\/([^/?]+)$/.exec(r.url());
      if (m) vendor.push(m[1]!);
    });
    await p.goto(`${server.url}/blank.html`);
    await p.evaluate(async (entry) => {
      window.web = await import(entry);
    }, ENTRY);
    // the engine's modules (the media layer among them) load without the audio decoders
    assert.deepEqual(
      vendor.filter((v) => v !== 'jinja.js'),
      [],
    );
    for (const name of ['stereo-44k.flac', 'mono-22k-24bit.flac', 'stereo-44k.mp3']) {
      const bytes = readFileSync(new URL(`../../test/fixtures/media/${name}`, import.meta.url));
      const node = await decodeAudio(new Uint8Array(bytes));
      const web = await p.evaluate(async (b64) => {
        const media = await import('/dist/src/media/index.js' as string);
        const a = await media.decodeAudio(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
        return { sampleRate: a.sampleRate, samples: Array.from(a.samples as Float32Array) };
      }, bytes.toString('base64'));
      assert.equal(web.sampleRate, node.sampleRate, name);
      assert.equal(web.samples.length, node.samples.length, name);
      assert.deepEqual(Float32Array.from(web.samples), node.samples, `${name}: samples`);
    }
    await p.close();
    assert.deepEqual(vendor.filter((v) => v !== 'jinja.js').sort(), ['flac.js', 'mpg123.js']);
    assert.deepEqual(errors, []);
  });

  test('WebP decodes in the page as on Node; libwebp (webp.js, webp_dec.wasm) loads only then, from /vendor/', async () => {
    const p = await browser.newPage();
    p.on('pageerror', (e) => errors.push(String(e)));
    const vendor: string[] = [];
    p.on('request', (r) => {
      const m = /\/vendor\/([^/?]+)$/.exec(r.url());
      if (m) vendor.push(m[1]!);
    });
    await p.goto(`${server.url}/blank.html`);
    for (const lossless of [true, false]) {
      const bytes = await encodeWebp(sampleRgba(21, 13, true), lossless);
      const node = await decodeImage(bytes);
      const web = await p.evaluate(async (b64) => {
        const media = await import('/dist/src/media/index.js' as string);
        const img = await media.decodeImage(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)));
        return { width: img.width, height: img.height, data: Array.from(img.data as Uint8Array) };
      }, Buffer.from(bytes).toString('base64'));
      assert.equal(web.width, 21);
      assert.equal(web.height, 13);
      assert.deepEqual(Uint8Array.from(web.data), node.data, lossless ? 'lossless' : 'lossy');
    }
    await p.close();
    assert.deepEqual(vendor.filter((v) => v !== 'jinja.js').sort(), ['webp.js', 'webp_dec.wasm']);
    assert.deepEqual(errors, []);
  });

  test('gemma3 with its projector (a URL, then bytes): a chat with data: URL images gives the top-10 probabilities of Node', {
    skip: MTMD ? false : missingShared('fixtures/mtmd/gemma3.mmproj.gguf'),
  }, async () => {
    const png = (f: string) => `data:image/png;base64,${readFileSync(`${MTMD}img/${f}`).toString('base64')}`;
    const messages = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in the picture ' },
          { type: 'image_url', image_url: { url: png('gray-40x40.png') } },
          { type: 'text', text: ' and in ' },
          { type: 'image_url', image_url: { url: png('checker-37x53.png') } },
          { type: 'text', text: ' today?' },
        ],
      },
    ];
    const options = { messages, n_predict: 6, temperature: 0, n_probs: 10, return_tokens: true };
    const ctx = await loadModel({ model: `${MTMD}gemma3.gguf`, n_ctx: 2048, n_batch: 512, n_threads: 2 });
    // on Node a projector is a path
    await assert.rejects(
      ctx.initMultimodal({ path: new Uint8Array(8) }),
      /path: a Uint8Array where the path .*llama-ts\/web/,
    );
    await ctx.initMultimodal({ path: `${MTMD}gemma3.mmproj.gguf` });
    const node = summary(await ctx.completion(options as LlamaCompletionOptions));
    await ctx.release();
    const mmproj = readFileSync(`${MTMD}gemma3.mmproj.gguf`).toString('base64');
    const web = await page.evaluate(
      async (options, mmproj) => {
        const pick = (r: Web) => ({
          text: r.text,
          tokens: r.tokens,
          probs: (r.completion_probabilities ?? []).map((p: Web) => p.probs.map((q: Web) => [q.tok_str, q.prob])),
          tool_calls: undefined,
        });
        const ctx = await window.web.loadModel({
          model: '/models/gemma3.gguf',
          n_ctx: 2048,
          n_batch: 512,
          n_threads: 2,
        });
        const before = ctx.isMultimodalEnabled();
        await ctx.initMultimodal({ path: '/models/gemma3.mmproj.gguf' });
        const byUrl = pick(await ctx.completion(options));
        const bytes = Uint8Array.from(atob(mmproj), (c) => c.charCodeAt(0));
        await ctx.initMultimodal({ path: bytes });
        const byBytes = pick(await ctx.completion(options));
        const support = ctx.getMultimodalSupport();
        await ctx.release();
        return { before, support, byUrl, byBytes };
      },
      options,
      mmproj,
    );
    assert.equal(web.before, false);
    assert.deepEqual(web.support, { vision: true, audio: false });
    assert.ok(node.probs.length > 0);
    sameCompletion(web.byUrl as Summary, node, 'projector by URL');
    sameCompletion(web.byBytes as Summary, node, 'projector as bytes');
    assert.deepEqual(errors, []);
  });

  test('a page that is not cross-origin isolated runs on one thread, says so, and gives the same text', async () => {
    const p = await webPage(open);
    const before = warnings.length;
    const [node, web] = await Promise.all([nodeRefs(qwen3, false), runInPage(p, '/models/qwen3.gguf', false, 2)]);
    await p.close();
    assert.equal(web.isolated, false);
    for (const [i, w] of web.greedy.entries()) sameCompletion(w, node.greedy[i]!, `prompt ${i} (one thread)`);
    assert.ok(
      warnings.slice(before).some((w) => /running on 1: this page is not cross-origin isolated/.test(w)),
      warnings.join('\n'),
    );
  });
});
