// Ollama's API through the official `ollama` npm client (0.6.4, unchanged) against the
// real server on loopback: version, list, show, ps; chat and generate, streamed and not,
// greedy text equal to the OpenAI endpoints' for the same prompt and options, `think`
// (reasoning in message.thinking), tools (calls in Ollama's shape, arguments an object),
// a JSON schema `format`, `context`; embed and the older embeddings against
// /v1/embeddings; pull from a local mirror of the Hugging Face download path with
// Ollama's progress lines, list and delete of the cached file; errors in Ollama's shape
// with its status codes.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Ollama } from 'ollama';
import { LlamaServer } from '../src/server/index.js';
import { ADD_TOOL, API_KEY, clientModel, startServer, THINKING_HERMES, WEATHER_TOOL } from './helpers/clients.js';
import { type HubMirror, startHubMirror } from './helpers/hub-mirror.js';
import { embeddingModel } from './server-fixtures.js';

/** The reasoning template, its block opened by the `enable_thinking` switch Ollama's `think` sets. */
const THINK_SWITCH = THINKING_HERMES.replace('{%- if think %}', '{%- if enable_thinking %}');
assert.notEqual(THINK_SWITCH, THINKING_HERMES);

// biome-ignore lint/suspicious/noExplicitAny: answers read field by field, as documented by Ollama
type Json = Record<string, any>;

const REPO = 'test-owner/Tiny-GGUF';
const FILE = 'tiny-q8_0.gguf';
/** The file `hf.co/REPO` (no quantization) names: Q4_K_M, as Ollama's default (the same bytes here). */
const FILE_Q4 = 'tiny-q4_k_m.gguf';

let srv: LlamaServer;
let emb: LlamaServer;
let hub: HubMirror;
let cache: string;
let blob: Buffer;
let sha: string;
let ol: Ollama;
let olEmb: Ollama;
const auth = { Authorization: `Bearer ${API_KEY}` };

before(async () => {
  cache = mkdtempSync(join(tmpdir(), 'llama-ts-ollama-'));
  // a Hugging Face mirror: the file list, and a 302 from resolve/ to a "CDN" naming the sha256
  blob = readFileSync(clientModel());
  hub = await startHubMirror(REPO, [FILE, FILE_Q4], blob);
  sha = hub.sha;
  process.env.LLAMA_TS_HF_ENDPOINT = hub.url;
  srv = await startServer({ chatTemplate: THINK_SWITCH, alias: 'tiny', cacheDir: cache, embeddings: false });
  emb = await LlamaServer.start({ model: embeddingModel(), port: 0, alias: 'bert' });
  ol = new Ollama({ host: srv.url, headers: auth });
  olEmb = new Ollama({ host: emb.url });
});
after(async () => {
  await srv?.close();
  await emb?.close();
  await hub?.close();
});

async function openai(path: string, body: unknown, server = srv): Promise<Json> {
  const r = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { ...auth, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200, await r.clone().text());
  return (await r.json()) as Json;
}

/** Rejects with the client's ResponseError: its message and status. */
async function rejects(p: Promise<unknown>, status: number, message: RegExp): Promise<void> {
  await assert.rejects(p, (e: { status_code?: number; message: string }) => {
    assert.equal(e.status_code, status, e.message);
    assert.match(e.message, message);
    return true;
  });
}

const isDate = (s: unknown) => typeof s === 'string' && !Number.isNaN(Date.parse(s)) && /^\d{4}-\d\d-\d\dT/.test(s);

/** Ollama's timing and count fields on a final answer. */
function assertFinal(r: Json, reason: string): void {
  assert.equal(r.done, true);
  assert.equal(r.done_reason, reason);
  assert.ok(isDate(r.created_at));
  for (const k of [
    'total_duration',
    'load_duration',
    'prompt_eval_count',
    'prompt_eval_duration',
    'eval_count',
    'eval_duration',
  ]) {
    assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k} = ${r[k]}`);
  }
  assert.ok(r.prompt_eval_count > 0 && r.prompt_eval_duration > 0 && r.eval_duration > 0);
  assert.ok(r.total_duration >= r.prompt_eval_duration + r.eval_duration);
}

const GREEDY = { temperature: 0, num_predict: 12 };

describe('models', () => {
  test('version, list, ps, show', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    assert.deepEqual(await ol.version(), { version: pkg.version });
    const list = await ol.list();
    assert.equal(list.models.length, 1);
    const m = list.models[0]! as unknown as Json;
    assert.equal(m.name, 'tiny:latest');
    assert.equal(m.model, 'tiny:latest');
    assert.equal(m.size, statSync(clientModel()).size);
    assert.match(m.digest, /^[0-9a-f]{64}$/);
    assert.ok(isDate(m.modified_at));
    assert.deepEqual(m.details, {
      parent_model: '',
      format: 'gguf',
      family: 'llama',
      families: ['llama'],
      parameter_size: m.details.parameter_size,
      quantization_level: 'Q8_0',
    });
    assert.match(m.details.parameter_size, /^\d+(\.\d)?[KMB]$/);
    const ps = (await ol.ps()).models as unknown as Json[];
    assert.equal(ps.length, 1);
    assert.equal(ps[0]!.name, 'tiny:latest');
    assert.equal(ps[0]!.context_length, srv.nCtxSlot);
    assert.equal(ps[0]!.size_vram, 0);
    assert.ok(isDate(ps[0]!.expires_at));
    assert.deepEqual(ps[0]!.details, m.details);
    const s = (await ol.show({ model: 'tiny' })) as unknown as Json;
    assert.deepEqual(s.details, m.details);
    assert.equal(s.model_info['general.architecture'], 'llama');
    assert.equal(s.model_info['llama.context_length'], 4096);
    // the template served (given in place of the model's), with tools and a thinking switch
    assert.equal(s.template, THINK_SWITCH);
    assert.deepEqual(s.capabilities, ['completion', 'tools', 'thinking']);
    assert.equal(typeof s.modelfile, 'string');
    // the embedding model says what it does
    const e = (await olEmb.show({ model: 'bert:latest' })) as unknown as Json;
    assert.deepEqual(e.capabilities, ['embedding']);
    assert.equal(e.details.family, 'bert');
  });

  test('errors in Ollama shape: unknown model 404, images 400, no model 400', async () => {
    await rejects(
      ol.chat({ model: 'llama3', messages: [{ role: 'user', content: 'hi' }] }),
      404,
      /^model 'llama3' not found$/,
    );
    await rejects(ol.show({ model: 'other:7b' }), 404, /not found/);
    await rejects(ol.generate({ model: 'tiny', prompt: 'x', images: ['AAAA'] }), 400, /text-only model/);
    await rejects(
      ol.generate({ model: 'tiny', prompt: 'x', images: ['no base64!'] }),
      400,
      /images\[0\]: illegal base64/,
    );
    await rejects(
      ol.chat({ model: 'tiny', messages: [{ role: 'user', content: 'x', images: ['AAAA'] }] }),
      400,
      /images/,
    );
    await rejects(ol.generate({ model: '', prompt: 'x' }), 400, /model is required/);
    const r = await fetch(`${srv.url}/api/generate`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'tiny', prompt: 'x', options: { temperature: 'hot' } }),
    });
    assert.equal(r.status, 400);
    assert.deepEqual(Object.keys((await r.json()) as object), ['error']);
    await rejects(olEmb.chat({ model: 'bert', messages: [{ role: 'user', content: 'x' }] }), 501, /embedding model/);
    // Ollama streams unless told not to: NDJSON lines, the last one done
    const s = await fetch(`${srv.url}/api/chat`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'x' }], options: { num_predict: 3 } }),
    });
    assert.equal(s.headers.get('content-type'), 'application/x-ndjson');
    const lines = (await s.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Json);
    assert.deepEqual(
      lines.map((l) => l.done),
      [...lines.slice(1).map(() => false), true],
    );
    assert.equal(lines.at(-1)!.eval_count, 3);
  });
});

describe('generation', () => {
  test('generate (raw) is /v1/completions greedy text; streamed the same; context is prompt and reply tokens', async () => {
    const prompt = 'Once upon a time';
    const ref = await openai('/v1/completions', {
      prompt,
      max_tokens: 12,
      temperature: 0,
      cache_prompt: false,
      return_tokens: true,
    });
    const r = await ol.generate({ model: 'tiny:latest', prompt, raw: true, options: GREEDY });
    assert.equal(r.response, ref.choices[0].text);
    assert.equal(r.model, 'tiny:latest');
    assertFinal(r as unknown as Json, ref.choices[0].finish_reason);
    assert.equal(r.prompt_eval_count, ref.usage.prompt_tokens);
    assert.equal(r.eval_count, ref.usage.completion_tokens);
    assert.equal(r.context.length, r.prompt_eval_count + r.eval_count);
    assert.deepEqual(r.context.slice(r.prompt_eval_count), ref.tokens);
    assert.deepEqual(
      r.context.slice(0, r.prompt_eval_count),
      (await openai('/tokenize', { content: prompt, add_special: true })).tokens,
    );
    let text = '';
    let last: Json | undefined;
    let n = 0;
    for await (const ch of await ol.generate({ model: 'tiny', prompt, raw: true, options: GREEDY, stream: true })) {
      if (!ch.done) text += ch.response;
      last = ch as unknown as Json;
      n++;
    }
    assert.ok(n > 2);
    assert.equal(text, r.response);
    assertFinal(last!, r.done_reason);
    assert.equal(last!.response, '');
    assert.deepEqual(last!.context, r.context);
    // the reply continued from `context`: the same tokens as the whole text as one prompt
    const more = await ol.generate({
      model: 'tiny',
      prompt: ' The end',
      raw: true,
      context: r.context,
      options: GREEDY,
    });
    const whole = await openai('/v1/completions', {
      prompt: [...r.context, ...(await openai('/tokenize', { content: ' The end' })).tokens],
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(more.response, whole.choices[0].text);
  });

  test('generate through the template (system) is /v1/chat/completions; num_predict and stop map; load and unload', async () => {
    const messages = [
      { role: 'system', content: 'Be brief.' },
      { role: 'user', content: 'Tell a story' },
    ];
    const ref = await openai('/v1/chat/completions', {
      messages,
      max_tokens: 12,
      temperature: 0,
      cache_prompt: false,
      enable_thinking: false,
    });
    const r = await ol.generate({
      model: 'tiny',
      system: 'Be brief.',
      prompt: 'Tell a story',
      think: false,
      options: GREEDY,
    });
    assert.equal(r.response, ref.choices[0].message.content);
    assert.equal(r.prompt_eval_count, ref.usage.prompt_tokens);
    assert.equal(r.done_reason, 'length');
    assert.equal(r.eval_count, 12);
    // a stop string ends it early ("stop"), sampled with a seed: the same twice
    // `context` through the template: the earlier prompt and reply's tokens, then this turn's
    const next = await ol.generate({
      model: 'tiny',
      prompt: 'And then',
      context: r.context,
      think: false,
      options: GREEDY,
    });
    const turn = await openai('/apply-template', {
      messages: [{ role: 'user', content: 'And then' }],
      enable_thinking: false,
    });
    const turnTokens = (await openai('/tokenize', { content: turn.prompt })).tokens as number[];
    const refNext = await openai('/v1/completions', {
      prompt: [...r.context, ...turnTokens],
      max_tokens: 12,
      temperature: 0,
      return_tokens: true,
    });
    assert.equal(next.prompt_eval_count, r.context.length + turnTokens.length);
    assert.equal(next.response, refNext.choices[0].text);
    assert.deepEqual(next.context, [...r.context, ...turnTokens, ...refNext.tokens]);
    // a stop string (from the middle of that reply) ends the same reply there: "stop"
    const word = r.response!.slice(4, 7);
    const stopped = await ol.generate({
      model: 'tiny',
      system: 'Be brief.',
      prompt: 'Tell a story',
      think: false,
      options: { ...GREEDY, stop: [word] },
    });
    assert.equal(stopped.done_reason, 'stop');
    assert.equal(stopped.response, r.response!.slice(0, r.response!.indexOf(word)));
    // an empty prompt loads the model; keep_alive 0 "unloads" it
    const load = await ol.generate({ model: 'tiny', prompt: '' });
    assert.deepEqual([load.done, load.done_reason, load.response], [true, 'load', '']);
    const unload = await ol.generate({ model: 'tiny', prompt: '', keep_alive: 0 });
    assert.equal(unload.done_reason, 'unload');
  });

  test('options: seeded sampling with every mapped option is /v1/completions text', async () => {
    // one slot: a seeded sample here depends on the slot a request lands in (after other
    // requests filled the slots, the same seeded request gives other text), so both
    // requests must run in the same one; a short raw prompt, so a reused prefix rounds as
    // a whole evaluation does
    const single = await startServer({ parallel: 1, nCtx: 2048, alias: 'tiny', embeddings: false });
    const one = new Ollama({ host: single.url, headers: auth });
    try {
      const sampling = [
        {
          seed: 7,
          temperature: 1.5,
          top_k: 50,
          top_p: 0.95,
          min_p: 0.01,
          typical_p: 0.9,
          repeat_penalty: 1.1,
          repeat_last_n: 16,
          presence_penalty: 0.5,
          frequency_penalty: 0.3,
        },
        { seed: 3, temperature: 1, mirostat: 2, mirostat_tau: 4, mirostat_eta: 0.2 },
      ];
      for (const o of sampling) {
        const a = await one.generate({
          model: 'tiny',
          prompt: 'Tell a story',
          raw: true,
          options: { ...o, num_predict: 10 },
        });
        const ref = await openai('/v1/completions', { prompt: 'Tell a story', ...o, max_tokens: 10 }, single);
        assert.equal(a.response, ref.choices[0].text, JSON.stringify(o));
        assert.equal(a.eval_count, ref.usage.completion_tokens);
        const greedy = await openai(
          '/v1/completions',
          { prompt: 'Tell a story', temperature: 0, max_tokens: 10 },
          single,
        );
        assert.notEqual(a.response, greedy.choices[0].text);
      }
    } finally {
      await single.close();
    }
  });

  test('chat is /v1/chat/completions greedy text, streamed the same', async () => {
    const messages = [{ role: 'user', content: 'Once upon a time' }];
    const ref = await openai('/v1/chat/completions', {
      messages,
      max_tokens: 12,
      temperature: 0,
      cache_prompt: false,
      enable_thinking: false,
    });
    const r = await ol.chat({ model: 'tiny', messages, think: false, options: GREEDY, keep_alive: '5m' });
    assert.deepEqual(r.message, { role: 'assistant', content: ref.choices[0].message.content });
    assertFinal(r as unknown as Json, 'length');
    assert.equal(r.prompt_eval_count, ref.usage.prompt_tokens);
    assert.equal(r.eval_count, ref.usage.completion_tokens);
    let text = '';
    const chunks: Json[] = [];
    for await (const ch of await ol.chat({ model: 'tiny', messages, think: false, options: GREEDY, stream: true })) {
      chunks.push(ch as unknown as Json);
      text += ch.message.content;
    }
    assert.equal(text, r.message.content);
    for (const ch of chunks.slice(0, -1)) {
      assert.equal(ch.done, false);
      assert.equal(ch.message.role, 'assistant');
      assert.ok(isDate(ch.created_at));
    }
    assertFinal(chunks.at(-1)!, 'length');
    // log-probabilities: each generated token's, with its top alternatives, as the OpenAI endpoint's
    const lpRef = await openai('/v1/chat/completions', {
      messages,
      max_tokens: 12,
      temperature: 0,
      enable_thinking: false,
      logprobs: true,
      top_logprobs: 2,
    });
    const lp = (
      await ol.chat({ model: 'tiny', messages, think: false, options: GREEDY, logprobs: true, top_logprobs: 2 })
    ).logprobs as unknown as Json[];
    const strip = (e: Json) => ({
      token: e.token,
      logprob: e.logprob,
      top: (e.top_logprobs as Json[]).map((t) => [t.token, t.logprob]),
    });
    assert.equal(lp.length, 12);
    assert.deepEqual(lp.map(strip), (lpRef.choices[0].logprobs.content as Json[]).map(strip));
    const streamedLp: Json[] = [];
    for await (const ch of await ol.chat({
      model: 'tiny',
      messages,
      think: false,
      options: GREEDY,
      logprobs: true,
      top_logprobs: 2,
      stream: true,
    })) {
      streamedLp.push(...((ch.logprobs ?? []) as unknown as Json[]));
    }
    assert.deepEqual(streamedLp.map(strip), lp.map(strip));
  });

  test('think: the reasoning in message.thinking (and generate.thinking), apart from the content', async () => {
    const messages = [{ role: 'user', content: 'Why is the sky blue?' }];
    const r = await ol.chat({ model: 'tiny', messages, think: true, options: GREEDY });
    assert.ok(r.message.thinking && r.message.thinking.length > 0, JSON.stringify(r.message));
    assert.ok(!r.message.content.includes('<think>'));
    const ref = await openai('/v1/chat/completions', {
      messages,
      max_tokens: 12,
      temperature: 0,
      enable_thinking: true,
    });
    assert.equal(r.message.thinking, ref.choices[0].message.reasoning_content);
    let thinking = '';
    for await (const ch of await ol.chat({ model: 'tiny', messages, think: true, options: GREEDY, stream: true })) {
      thinking += ch.message.thinking ?? '';
    }
    assert.equal(thinking, r.message.thinking);
    const g = await ol.generate({ model: 'tiny', prompt: 'Why is the sky blue?', think: true, options: GREEDY });
    assert.equal(g.thinking, r.message.thinking);
    const off = await ol.chat({ model: 'tiny', messages, think: false, options: GREEDY });
    assert.equal(off.message.thinking, undefined);
  });

  test('tools: calls in Ollama shape (arguments an object), streamed as a whole call, and a tool result back', async () => {
    const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
    const req = {
      model: 'tiny',
      messages,
      tools: [WEATHER_TOOL, ADD_TOOL],
      tool_choice: 'required',
      parallel_tool_calls: false,
      think: false,
      options: { temperature: 0, num_predict: 120 },
    };
    const r = await ol.chat({ ...req, stream: false } as never as Parameters<Ollama['chat']>[0] & { stream: false });
    const calls = r.message.tool_calls as unknown as {
      function: { name: string; arguments: Record<string, unknown>; index: number };
    }[];
    assert.ok(calls && calls.length >= 1, JSON.stringify(r.message));
    assert.equal(r.done_reason, 'stop');
    for (const [i, c] of calls.entries()) {
      assert.equal(c.function.index, i);
      assert.ok(['get_weather', 'add'].includes(c.function.name));
      assert.equal(typeof c.function.arguments, 'object');
      if (c.function.name === 'add') assert.deepEqual(Object.keys(c.function.arguments).sort(), ['a', 'b']);
      else assert.equal(typeof c.function.arguments.city, 'string');
    }
    const streamed: unknown[] = [];
    for await (const ch of await ol.chat({ ...req, stream: true } as never as Parameters<Ollama['chat']>[0] & {
      stream: true;
    })) {
      const m = (ch as { message: { tool_calls?: unknown[] } }).message;
      if (m.tool_calls) streamed.push(...m.tool_calls);
    }
    // the same calls (each request's ids are its own)
    const noId = (cs: unknown[]) => cs.map((c) => ({ ...(c as object), id: typeof (c as { id?: unknown }).id }));
    assert.deepEqual(noId(streamed), noId(calls));
    assert.equal(noId(calls)[0]!.id, 'string');
    // the call and its result back: the template renders both, and the model answers
    const next = await ol.chat({
      model: 'tiny',
      messages: [
        ...messages,
        { role: 'assistant', content: '', tool_calls: calls as never },
        { role: 'tool', content: '{"temp": 21}', tool_name: calls[0]!.function.name },
      ],
      tools: [WEATHER_TOOL, ADD_TOOL],
      think: false,
      options: GREEDY,
    });
    assert.equal(next.done, true);
    assert.ok(next.prompt_eval_count > r.prompt_eval_count);
  });

  test('format: a JSON schema constrains the reply; "json" too', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer', minimum: 0, maximum: 99 } },
      required: ['name', 'age'],
    };
    const r = await ol.chat({
      model: 'tiny',
      messages: [{ role: 'user', content: 'A person' }],
      format: schema,
      think: false,
      options: { temperature: 0, num_predict: 200 },
    });
    const v = JSON.parse(r.message.content) as { name: string; age: number };
    assert.deepEqual(Object.keys(v).sort(), ['age', 'name']);
    assert.ok(typeof v.name === 'string' && v.name.length <= 8);
    assert.ok(Number.isInteger(v.age) && v.age >= 0 && v.age <= 99);
    assert.equal(r.done_reason, 'stop');
    const g = await ol.generate({
      model: 'tiny',
      prompt: 'A person',
      format: schema,
      think: false,
      options: { temperature: 0, num_predict: 200 },
    });
    assert.deepEqual(JSON.parse(g.response!), v);
    // any JSON: the grammar opens an object (greedy, the model alone starts otherwise)
    const j = await ol.generate({ model: 'tiny', prompt: 'A person', format: 'json', think: false, options: GREEDY });
    assert.match(j.response!, /^\s*\{/);
    const free = await ol.generate({ model: 'tiny', prompt: 'A person', think: false, options: GREEDY });
    assert.doesNotMatch(free.response!, /^\s*\{/);
    await rejects(ol.generate({ model: 'tiny', prompt: 'x', format: 'yaml' }), 400, /invalid format/);
  });
});

describe('embeddings', () => {
  test('embed is /v1/embeddings (L2-normalized); dimensions; the older embeddings unnormalized', async () => {
    const input = ['hello world', 'a second text'];
    const r = await olEmb.embed({ model: 'bert', input });
    const ref = (await (
      await fetch(`${emb.url}/v1/embeddings`, { method: 'POST', body: JSON.stringify({ input }) })
    ).json()) as { data: { embedding: number[] }[]; usage: { prompt_tokens: number } };
    assert.equal(r.model, 'bert');
    assert.deepEqual(
      r.embeddings,
      ref.data.map((d) => d.embedding),
    );
    assert.equal(r.prompt_eval_count, ref.usage.prompt_tokens);
    assert.ok(Number.isInteger(r.total_duration) && r.total_duration > 0);
    const one = await olEmb.embed({ model: 'bert', input: 'hello world', dimensions: 8 });
    assert.equal(one.embeddings[0]!.length, 8);
    assert.ok(Math.abs(Math.hypot(...one.embeddings[0]!) - 1) < 1e-5);
    const legacy = await olEmb.embeddings({ model: 'bert', prompt: 'hello world' });
    const norm = Math.hypot(...legacy.embedding);
    assert.equal(legacy.embedding.length, r.embeddings[0]!.length);
    for (const [i, x] of legacy.embedding.entries()) assert.ok(Math.abs(x / norm - r.embeddings[0]![i]!) < 1e-5);
    await rejects(ol.embed({ model: 'tiny', input: 'x' }), 501, /embeddings/);
    // truncate (Ollama's default true): a long input loses its end, keeping the tokenizer's last token
    const long = 'hello world '.repeat(1500);
    const cut = await olEmb.embed({ model: 'bert', input: [long, `${long}and more words at the end`] });
    assert.equal(cut.embeddings.length, 2);
    assert.deepEqual(cut.embeddings[0], cut.embeddings[1]);
    const tok = (await (
      await fetch(`${emb.url}/tokenize`, { method: 'POST', body: JSON.stringify({ content: long, add_special: true }) })
    ).json()) as { tokens: number[] };
    const limit = Number(
      /at most (\d+)/.exec(
        await (
          await fetch(`${emb.url}/v1/embeddings`, { method: 'POST', body: JSON.stringify({ input: long }) })
        ).text(),
      )?.[1],
    );
    assert.ok(limit > 0 && tok.tokens.length > limit);
    assert.equal(cut.prompt_eval_count, 2 * limit);
    const ref1 = (await (
      await fetch(`${emb.url}/v1/embeddings`, {
        method: 'POST',
        body: JSON.stringify({ input: [[...tok.tokens.slice(0, limit - 1), tok.tokens.at(-1)]] }),
      })
    ).json()) as { data: { embedding: number[] }[] };
    assert.deepEqual(cut.embeddings[0], ref1.data[0]!.embedding);
    await rejects(olEmb.embed({ model: 'bert', input: long, truncate: false }), 400, /at most/);
  });
});

describe('pull and delete', () => {
  test('pull hf.co/REPO:QUANT with Ollama progress lines; list; pull again; delete', async () => {
    const name = `hf.co/${REPO}:Q8_0`;
    const lines: Json[] = [];
    for await (const p of await ol.pull({ model: name, stream: true })) lines.push(p as unknown as Json);
    const statuses = lines.map((l) => l.status);
    assert.equal(statuses[0], 'pulling manifest');
    assert.deepEqual(statuses.slice(-3), ['verifying sha256 digest', 'writing manifest', 'success']);
    const pulling = lines.filter((l) => l.status.startsWith('pulling ') && l.status !== 'pulling manifest');
    assert.ok(pulling.length >= 2);
    for (const l of pulling) {
      assert.equal(l.status, `pulling ${sha.slice(0, 12)}`);
      assert.equal(l.digest, `sha256:${sha}`);
      assert.equal(l.total, blob.length);
    }
    assert.equal(pulling[0]!.completed, 0);
    assert.equal(pulling.at(-1)!.completed, blob.length);
    const path = join(cache, ...REPO.split('/'), FILE);
    assert.deepEqual(readFileSync(path), blob);
    const listed = (await ol.list()).models.map((m) => m.name);
    assert.deepEqual(listed, ['tiny:latest', name]);
    // in the cache already: one layer, whole; not streamed: one answer
    const again: Json[] = [];
    for await (const p of await ol.pull({ model: `hf.co/${REPO}:q8_0`, stream: true })) again.push(p as never);
    assert.deepEqual(
      again.map((l) => [l.status, l.completed]),
      [
        ['pulling manifest', undefined],
        [`pulling ${sha.slice(0, 12)}`, blob.length],
        ['verifying sha256 digest', undefined],
        ['writing manifest', undefined],
        ['success', undefined],
      ],
    );
    assert.deepEqual(await ol.pull({ model: name }), { status: 'success' });
    await rejects(ol.pull({ model: `hf.co/${REPO}:Q2_K` }), 404, /no GGUF file for 'q2_k'/);
    await rejects(ol.pull({ model: 'llama3' }), 400, /only Hugging Face models/);
    const streamedError = async () => {
      for await (const _ of await ol.pull({ model: 'hf.co/nobody/Missing', stream: true })) {
      }
    };
    await assert.rejects(streamedError, /HTTP 404/);
    await rejects(ol.delete({ model: 'tiny' }), 400, /cannot be deleted while served/);
    assert.deepEqual(await ol.delete({ model: name }), { status: 'success' });
    assert.equal(existsSync(path), false);
    assert.deepEqual(
      (await ol.list()).models.map((m) => m.name),
      ['tiny:latest'],
    );
    await rejects(ol.delete({ model: name }), 404, /not found/);
    // no quantization named: Q4_K_M
    assert.deepEqual(await ol.pull({ model: `hf.co/${REPO}` }), { status: 'success' });
    assert.ok(existsSync(join(cache, ...REPO.split('/'), FILE_Q4)));
    assert.deepEqual(
      (await ol.list()).models.map((m) => m.name),
      ['tiny:latest', `hf.co/${REPO}:Q4_K_M`],
    );
    await ol.delete({ model: `hf.co/${REPO}:latest` });
    assert.equal(existsSync(join(cache, ...REPO.split('/'), FILE_Q4)), false);
  });

  test('while the model loads: 503 in Ollama shape; /api/version answers', async () => {
    const loading = await LlamaServer.listen({ model: clientModel(), port: 0 });
    try {
      const v = await fetch(`${loading.url}/api/version`);
      assert.equal(v.status, 200);
      const r = await fetch(`${loading.url}/api/chat`, {
        method: 'POST',
        body: JSON.stringify({ model: 'x', messages: [{ role: 'user', content: 'x' }] }),
      });
      assert.equal(r.status, 503);
      assert.deepEqual(await r.json(), { error: 'Loading model' });
    } finally {
      await loading.close();
    }
  });
});
