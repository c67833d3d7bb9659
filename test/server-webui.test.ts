// The chat page at `/` (webui/): its HTTP side (types, CSP, gzip, ETag, --no-webui as
// llama-server's test_basic.py::test_no_webui expects) without a browser, and the page
// itself in Debian's chromium through puppeteer-core: a streamed reply, Stop, the
// conversation again after a reload, regenerate, delete; hostile markdown runs nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { get } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { loadModelMap, translateArgs } from '../bench/llama-server-suite/flags.js';
import { LlamaRouter, LlamaServer, modelsFromDir } from '../src/server/index.js';
import { tinyLlama, tinyQwen2 } from './helpers/models.js';
import { BIN, startServe } from './helpers/serve-child.js';

const CHROMIUM = '/usr/bin/chromium';

// The page-side callbacks below run in the browser; this program has no DOM library, so the
// few browser globals they name are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, typed by the browser
type Dom = any;
declare const document: Dom;
declare const window: Dom;
declare const getComputedStyle: Dom;
declare const MouseEvent: Dom;
type HTMLInputElement = { value: string; dispatchEvent(e: Event): boolean };
type DocumentFragment = object;
type HTMLElement = { hidden: boolean; dataset: Record<string, string | undefined> };

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** GET with node:http (fetch would undo the gzip the test checks). */
function raw(url: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('the chat page over HTTP', () => {
  let s: LlamaServer | undefined;
  let off: LlamaServer | undefined;
  before(async () => {
    s = await LlamaServer.listen({ model: tinyLlama(), port: 0, parallel: 1, nCtx: 256, apiKey: 'k' });
    off = await LlamaServer.listen({ model: tinyLlama(), port: 0, parallel: 1, nCtx: 256, webui: false });
  });
  after(async () => {
    await s?.close();
    await off?.close();
  });

  test('GET / is the page, with a strict CSP and no inline script, without the API key', async () => {
    const r = await raw(`${s!.url}/`);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    const html = r.body.toString('utf8');
    assert.ok(html.toLowerCase().includes('<!doctype html>'));
    const csp = String(r.headers['content-security-policy']);
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['cache-control'], 'no-cache');
    // every script comes from a file; no inline handlers
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    assert.ok(scripts.length > 0);
    for (const m of scripts) {
      assert.match(m[1]!, /\bsrc="\/webui\/[a-z]+\.js"/);
      assert.equal(m[2]!.trim(), '');
    }
    assert.doesNotMatch(html, /\son[a-z]+=/i);
    // the API itself still wants the key
    assert.equal((await raw(`${s!.url}/slots`)).status, 401);
  });

  test('assets: their types, gzip when accepted, 304 on a matching ETag, 404 for anything else', async () => {
    for (const [path, type] of [
      ['/webui/app.js', 'text/javascript; charset=utf-8'],
      ['/webui/markdown.js', 'text/javascript; charset=utf-8'],
      ['/webui/app.css', 'text/css; charset=utf-8'],
    ]) {
      const plain = await raw(`${s!.url}${path}`);
      assert.equal(plain.status, 200, path);
      assert.equal(plain.headers['content-type'], type, path);
      assert.equal(plain.headers['content-encoding'], undefined, path);
      assert.equal(Number(plain.headers['content-length']), plain.body.length);
      assert.ok(plain.body.length > 100, path);
      const gz = await raw(`${s!.url}${path}`, { 'Accept-Encoding': 'br, gzip;q=0.8' });
      assert.equal(gz.headers['content-encoding'], 'gzip', path);
      assert.match(String(gz.headers.vary), /Accept-Encoding/);
      assert.ok(gz.body.length < plain.body.length, `${path}: ${gz.body.length} gzip vs ${plain.body.length}`);
      assert.deepEqual(gunzipSync(gz.body), plain.body);
      // gzip;q=0 refuses it
      const refused = await raw(`${s!.url}${path}`, { 'Accept-Encoding': 'gzip;q=0' });
      assert.equal(refused.headers['content-encoding'], undefined, path);
      const etag = String(plain.headers.etag);
      const again = await raw(`${s!.url}${path}`, { 'If-None-Match': etag });
      assert.equal(again.status, 304, path);
      assert.equal(again.body.length, 0);
    }
    const js = (await raw(`${s!.url}/webui/app.js`)).body.toString('utf8');
    assert.match(js, /export function renderMarkdown|export \{[^}]*renderMarkdown/);
    for (const path of ['/webui/', '/webui/../package.json', '/webui/app.ts', '/app.js', '/favicon.ico']) {
      assert.equal((await raw(`${s!.url}${path}`)).status, 404, path);
    }
  });

  test('webui: false: / and its assets are 404s', async () => {
    for (const path of ['/', '/index.html', '/webui/app.js', '/webui/app.css']) {
      assert.equal((await raw(`${off!.url}${path}`)).status, 404, path);
    }
    assert.notEqual((await raw(`${off!.url}/health`)).status, 404);
  });
});

test("serve --no-webui: test_basic.py::test_no_webui's expectation, and the suite's shim passes the flag", async () => {
  // the shim passes --no-webui on when `serve --help` lists it
  const help = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' }).stdout;
  const flags = new Set(help.match(/--[a-z][a-z0-9-]*/g) ?? []);
  const t = translateArgs(['--model', tinyLlama(), '--no-webui'], flags, loadModelMap(), '/models', '/suite');
  assert.ok(t.argv.includes('--no-webui'), t.argv.join(' '));
  for (const [extra, status] of [
    [[], 200],
    [['--no-webui'], 404],
  ] as const) {
    const child = await startServe(['-m', tinyLlama(), '-np', '1', '-c', '256', '-t', '1', ...extra]);
    try {
      const r = await fetch(`${child.url}/`);
      assert.equal(r.status, status, `serve ${extra.join(' ')}`);
      const body = await r.text();
      if (status === 200) assert.ok(body.toLowerCase().includes('<!doctype html>'));
    } finally {
      await new Promise((res) => {
        child.process.once('exit', res);
        child.process.kill('SIGTERM');
      });
    }
  }
});

const noBrowser = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent (Debian's chromium package); the browser test is skipped`;

test('the page in chromium: stream, stop, reload, regenerate, delete; hostile markdown runs nothing', {
  skip: noBrowser,
  timeout: 60_000,
}, async (t) => {
  const { default: puppeteer } = await import('puppeteer-core');
  const shots = mkdtempSync(join(tmpdir(), 'llama-ts-webui-'));
  const child = await startServe(['-m', tinyLlama(), '-np', '1', '-c', '8192', '-t', '1']);
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: join(shots, 'profile'),
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    /** A settings field changed as by typing. */
    const setField = (id: string, value: string) =>
      page.$eval(
        `#${id}`,
        (el, v) => {
          (el as unknown as HTMLInputElement).value = v;
          el.dispatchEvent(new Event('input'));
        },
        value,
      );
    await page.setViewport({ width: 1000, height: 700 });
    await page.goto(`${child.url}/`, { waitUntil: 'load' });
    await page.waitForSelector('body[data-started]');
    // greedy and long: the tiny model does not end by itself before Stop
    await page.click('#toggle-settings');
    await setField('temperature', '0');
    await setField('max-tokens', '6000');
    // a slow link keeps the stream going long enough to stop it midway
    await page.emulateNetworkConditions({ download: 4000, upload: 1_000_000, latency: 0 });
    await page.type('#input', 'Hello there');
    await page.click('#send');
    // the first text, and the reply's state then (streaming, or why not)
    const first = await page
      .waitForFunction(
        () => {
          const m = document.querySelector('.msg.assistant');
          const text = m?.querySelector('.content')?.textContent ?? '';
          const error = document.getElementById('error').textContent;
          return text.length > 0 || error ? { state: m?.dataset.state, length: text.length, error } : false;
        },
        { timeout: 15_000 },
      )
      .catch(async (e: Error) => {
        const html = await page.$eval('#messages', (m) => m.outerHTML);
        throw new Error(`${e.message}; page: ${html}; serve: ${child.stderr().slice(-2000)}`);
      });
    const seen = (await first.jsonValue()) as { state: string; length: number; error: string };
    assert.deepEqual({ state: seen.state, error: seen.error }, { state: 'streaming', error: '' }, JSON.stringify(seen));
    assert.equal(await page.$eval('#stop', (b) => (b as HTMLElement).hidden), false);
    await page.click('#stop');
    await page.waitForSelector('.msg.assistant[data-state="stopped"]', { timeout: 5000 });
    await page.emulateNetworkConditions(null);
    const stoppedText = await page.$eval('.msg.assistant .content', (e) => e.textContent ?? '');
    assert.ok(stoppedText.length > 0);
    assert.equal(await page.$eval('#send', (b) => (b as HTMLElement).hidden), false);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(
      await page.$eval('.msg.assistant .content', (e) => e.textContent ?? ''),
      stoppedText,
      'no text after Stop',
    );
    await page.screenshot({ path: join(shots, 'chat.png') });

    // kept in IndexedDB: listed after a reload, and opened again as it was
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('#conversations li');
    const titles = await page.$$eval('#conversations li .open', (b) => b.map((x) => x.textContent));
    assert.deepEqual(titles, ['Hello there']);
    assert.equal(await page.$$eval('.msg', (m) => m.length), 0);
    await page.click('#conversations li .open');
    await page.waitForSelector('.msg.assistant');
    assert.equal(await page.$eval('.msg.user', (e) => e.textContent), 'Hello there');
    assert.equal(await page.$eval('.msg.assistant .content', (e) => e.textContent ?? ''), stoppedText);
    assert.equal(await page.$eval('.msg.assistant', (e) => (e as HTMLElement).dataset.state), 'stopped');

    // regenerate: a short reply replaces the stopped one
    // (set again: a reload right after a change may not see it in localStorage yet)
    await setField('temperature', '0');
    await setField('max-tokens', '8');
    await page.click('.msg.assistant .regenerate');
    await page.waitForSelector('.msg.assistant[data-state="done"]', { timeout: 10_000 });
    assert.equal(await page.$$eval('.msg.assistant', (m) => m.length), 1);
    const regenerated = await page.$eval('.msg.assistant .content', (e) => e.textContent ?? '');
    assert.ok(regenerated.length > 0);
    assert.equal(await page.$$eval('.msg.assistant .note', (n) => n.length), 0, 'the stopped reply is gone');

    // at a phone's width, the conversation list folds away
    await page.setViewport({ width: 390, height: 800 });
    assert.equal(await page.$eval('#toggle-sidebar', (e) => getComputedStyle(e).display !== 'none'), true);
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);
    await page.screenshot({ path: join(shots, 'phone.png') });
    await page.click('#toggle-sidebar');
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().left >= 0);
    await page.screenshot({ path: join(shots, 'phone-list.png') });
    await page.mouse.click(330, 400);
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);

    // light or dark as the system says
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor as string);
    assert.equal(await background(), 'rgb(255, 255, 255)');
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    assert.equal(await background(), 'rgb(23, 24, 27)');
    await page.screenshot({ path: join(shots, 'dark.png') });
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);

    // delete
    await page.setViewport({ width: 1000, height: 700 });
    assert.ok((await page.$eval('.msg.assistant .content', (e) => e.textContent ?? '')).length < 2000);
    await page.click('#conversations li .delete');
    await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 0);
    assert.equal(await page.$$eval('.msg', (m) => m.length), 0);

    // deleted while its reply streams: the reply ends and is not saved back
    await setField('max-tokens', '6000');
    await page.emulateNetworkConditions({ download: 4000, upload: 1_000_000, latency: 0 });
    // (the first prompt again: greedy, the tiny model does not end it within 6000 tokens)
    await page.type('#input', 'Hello there');
    await page.click('#send');
    await page.waitForSelector('#conversations li');
    await page.waitForSelector('.msg.assistant[data-state="streaming"]', { timeout: 5000 }).catch(async (e: Error) => {
      const html = await page.$eval('main', (m) => m.outerHTML);
      throw new Error(`${e.message}; page: ${html.slice(-3000)}`);
    });
    assert.ok((await page.$eval('.msg.assistant .content', (e) => e.textContent ?? '')).length < 2000);
    await page.click('#conversations li .delete');
    await page.waitForFunction(
      () => document.querySelectorAll('#conversations li').length === 0 && document.getElementById('stop').hidden,
    );
    await page.emulateNetworkConditions(null);
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('body[data-started]');
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await page.$$eval('#conversations li', (l) => l.length), 0);
    await setField('temperature', '0');
    await setField('max-tokens', '8');

    // reasoning apart and the settings in the request: a scripted answer (the tiny model
    // does not think), as the server streams it
    await page.setRequestInterception(true);
    const sent: unknown[] = [];
    const reasoning = 'First <img src=x onerror="document.title=1"> think.';
    page.on('request', (req) => {
      if (!req.url().endsWith('/v1/chat/completions')) return void req.continue();
      sent.push(JSON.parse(req.postData() ?? 'null'));
      const chunk = (delta: object) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
      void req.respond({
        status: 200,
        contentType: 'text/event-stream',
        body: `${chunk({ role: 'assistant' })}${chunk({ reasoning_content: reasoning })}${chunk({ content: 'The **answer** is `42`.' })}data: [DONE]\n\n`,
      });
    });
    await setField('system', 'Be brief.');
    await page.type('#input', 'Why?');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.msg.assistant[data-state="done"]', { timeout: 5000 });
    assert.deepEqual(sent, [
      {
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Why?' },
        ],
        stream: true,
        temperature: 0,
        max_tokens: 8,
      },
    ]);
    const shown = await page.$eval('.msg.assistant', (m) => ({
      open: m.querySelector('details')?.open,
      summary: m.querySelector('details summary')?.textContent,
      reasoning: m.querySelector('details .reasoning')?.textContent,
      content: m.querySelector('.content')?.textContent,
      strong: m.querySelector('.content strong')?.textContent,
      code: m.querySelector('.content code')?.textContent,
      imgs: m.querySelectorAll('img').length,
    }));
    assert.deepEqual(shown, {
      open: false,
      summary: 'Reasoning',
      reasoning,
      content: 'The answer is 42.',
      strong: 'answer',
      code: '42',
      imgs: 0,
    });
    assert.notEqual(await page.title(), '1');
    await page.setRequestInterception(false);
    assert.deepEqual(errors, []);

    // hostile markdown through the page's own renderer, with the CSP bypassed so that only
    // the renderer stands between the text and the DOM; a hook records any execution
    const xss = await browser.newPage();
    await xss.setBypassCSP(true);
    await xss.goto(`${child.url}/`, { waitUntil: 'load' });
    const hostile = [
      'Hi <img src=x onerror="window.__ran.push(\'img\')"> **bold <svg onload="window.__ran.push(\'svg\')">**',
      "<script>window.__ran.push('script')</script>",
      "[click](javascript:window.__ran.push('link')) [js2](JavaScript:alert(1)) [d](data:text/html,x) [ok](https://example.com/a?b=1)",
      '`<b onmouseover="window.__ran.push(\'code\')">x</b>` *it<iframe src="javascript:window.__ran.push(\'iframe\')"></iframe>*',
      '',
      '```html',
      '<img src=y onerror="window.__ran.push(\'fence\')">',
      '```',
    ].join('\n');
    const result = await xss.evaluate(async (text: string) => {
      const w = window as unknown as { __ran: string[] };
      w.__ran = [];
      const m = (await import('/webui/app.js' as string)) as { renderMarkdown: (t: string) => DocumentFragment };
      const host = document.createElement('div');
      document.body.appendChild(host);
      host.appendChild(m.renderMarkdown(text));
      // the hook works: the same markup through innerHTML does run
      const control = document.createElement('div');
      control.innerHTML = '<img src=z onerror="window.__ran.push(\'control\')">';
      document.body.appendChild(control);
      for (const el of host.querySelectorAll('*')) el.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      await new Promise((r) => setTimeout(r, 500));
      const all = [...host.querySelectorAll('*')];
      return {
        ran: w.__ran,
        onAttrs: all.filter((e) => [...e.attributes].some((a) => a.name.toLowerCase().startsWith('on'))).length,
        tags: [...new Set(all.map((e) => e.tagName.toLowerCase()))].sort(),
        hrefs: [...host.querySelectorAll('a')].map((a) => a.getAttribute('href')),
        fence: host.querySelector('pre code')?.textContent,
        text: host.textContent,
      };
    }, hostile);
    assert.deepEqual(result.ran, ['control']);
    assert.equal(result.onAttrs, 0);
    assert.deepEqual(result.tags, ['a', 'br', 'code', 'em', 'p', 'pre', 'strong']);
    assert.deepEqual(result.hrefs, ['https://example.com/a?b=1']);
    assert.equal(result.fence, '<img src=y onerror="window.__ran.push(\'fence\')">');
    assert.ok(result.text?.includes("<script>window.__ran.push('script')</script>"));
    assert.ok(result.text?.includes("[click](javascript:window.__ran.push('link'))"));
    await xss.screenshot({ path: join(shots, 'xss.png') });
    for (const f of ['chat.png', 'phone.png', 'phone-list.png', 'dark.png', 'xss.png'])
      assert.ok(statSync(join(shots, f)).size > 1000, f);
    t.diagnostic(`screenshots in ${shots}`);
  } finally {
    await browser.close();
    await new Promise((res) => {
      child.process.once('exit', res);
      child.process.kill('SIGTERM');
    });
  }
});

test('the page on a router (serve --models-dir): the settings offer its models, a reply comes from the one chosen', {
  skip: noBrowser,
  timeout: 60_000,
}, async () => {
  const { default: puppeteer } = await import('puppeteer-core');
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-webui-router-'));
  copyFileSync(tinyLlama(), join(dir, 'a.gguf'));
  copyFileSync(tinyQwen2(), join(dir, 'b.gguf'));
  const router = await LlamaRouter.listen({
    models: modelsFromDir(dir),
    spawn: {
      entry: fileURLToPath(new URL('../src/cli/serve-child.js', import.meta.url)),
      baseArgs: ['-c', '512', '-np', '1', '-t', '1'],
    },
    port: 0,
    modelsMax: 1,
  });
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: join(dir, 'profile'),
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    await page.goto(`${router.url}/`, { waitUntil: 'load' });
    await page.waitForSelector('#model-field:not([hidden])', { timeout: 10_000 });
    const options = await page.$$eval('#model option', (o) => o.map((x) => (x as unknown as { value: string }).value));
    assert.deepEqual(options, ['a', 'b']);
    await page.select('#model', 'b');
    await page.type('#input', 'Hello');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-state="done"]', { timeout: 30_000 });
    assert.equal(await page.$eval('#error', (e) => (e as HTMLElement).hidden), true);
    assert.ok((await page.$eval('.msg.assistant .content', (e) => e.textContent ?? '')).length > 0);
    assert.deepEqual(
      router.instances.map((i) => `${i.name} ${i.status}`),
      ['a unloaded', 'b loaded'],
    );
  } finally {
    await browser.close();
    await router.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});
