// The server end to end: a real LlamaServer on a loopback port, talked to with the
// official `openai` client (and plain fetch for llama-server's own endpoints and error
// cases): chat, completions, streaming, logprobs, seeds, logit_bias, stop strings,
// json_schema, tools, embeddings (BERT), tokenize/detokenize, metrics, prefix reuse,
// disconnects, auth, CORS, body limit, a full queue.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { LlamaServer } from '../src/server/index.js';
import { chatModel, embeddingModel } from './server-fixtures.js';

const MODEL = chatModel();

async function post(url: string, body: unknown, headers: Record<string, string> = {}) {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await r.text();
  // biome-ignore lint/suspicious/noExplicitAny: test bodies are read by shape
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: r.status, headers: r.headers, json, text };
}

function metric(text: string, name: string): number {
  const m = new RegExp(`^${name.replace(/[:]/g, '\\:')} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : Number.NaN;
}

describe('server: generation', () => {
  let server: LlamaServer;
  let client: OpenAI;
  before(async () => {
    server = await LlamaServer.start({ model: MODEL, port: 0, parallel: 2, nCtx: 1024, maxQueue: 8 });
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
  });

  test('GET /health, /v1/models, /metrics', async () => {
    const h = await fetch(`${server.url}/health`);
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: 'ok' });
    const models = await client.models.list();
    assert.equal(models.data.length, 1);
    assert.equal(models.data[0]!.id, server.modelId);
    assert.equal(models.data[0]!.object, 'model');
    const m = await fetch(`${server.url}/metrics`);
    assert.match(m.headers.get('content-type')!, /^text\/plain/);
    const text = await m.text();
    assert.match(text, /# TYPE llamacpp:prompt_tokens_total counter/);
    assert.equal(metric(text, 'llamats:slots'), 2);
  });

  test('chat completion: content, usage, finish_reason length', async () => {
    const r = await client.chat.completions.create({
      model: server.modelId,
      messages: [{ role: 'user', content: 'Tell me a story.' }],
      max_tokens: 12,
      temperature: 0,
    });
    assert.equal(r.object, 'chat.completion');
    assert.match(r.id, /^chatcmpl-/);
    const c = r.choices[0]!;
    assert.equal(c.message.role, 'assistant');
    assert.equal(typeof c.message.content, 'string');
    assert.ok(c.finish_reason === 'length' || c.finish_reason === 'stop');
    assert.ok(r.usage!.prompt_tokens > 0);
    if (c.finish_reason === 'length') assert.equal(r.usage!.completion_tokens, 12);
    assert.equal(r.usage!.total_tokens, r.usage!.prompt_tokens + r.usage!.completion_tokens);
  });

  test('streaming chat equals the non-streamed reply (greedy)', async () => {
    const req = {
      model: server.modelId,
      messages: [{ role: 'user' as const, content: 'Once upon a time' }],
      max_tokens: 16,
      temperature: 0,
    };
    const whole = await client.chat.completions.create(req);
    const stream = await client.chat.completions.create({
      ...req,
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let role: string | undefined;
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined;
    let chunks = 0;
    for await (const ch of stream) {
      chunks++;
      assert.equal(ch.object, 'chat.completion.chunk');
      if (ch.usage) usage = ch.usage;
      const c = ch.choices[0];
      if (!c) continue;
      role ??= c.delta.role;
      text += c.delta.content ?? '';
      if (c.finish_reason) finish = c.finish_reason;
    }
    assert.ok(chunks >= 3);
    assert.equal(role, 'assistant');
    assert.equal(text, whole.choices[0]!.message.content);
    assert.equal(finish, whole.choices[0]!.finish_reason);
    assert.equal(usage?.completion_tokens, whole.usage!.completion_tokens);
  });

  test('completions: text, streaming, stop strings, seeds, logit_bias, logprobs', async () => {
    const base = { model: server.modelId, prompt: 'Once upon a time, there was', max_tokens: 24, temperature: 0 };
    const r = await client.completions.create(base);
    assert.equal(r.object, 'text_completion');
    const text = r.choices[0]!.text;
    assert.ok(text.length > 0);

    let streamed = '';
    for await (const ch of await client.completions.create({ ...base, stream: true })) {
      streamed += ch.choices[0]?.text ?? '';
    }
    assert.equal(streamed, text);

    // a stop string taken from the greedy text: the reply ends right before it
    const at = Math.max(1, Math.floor(text.length / 2));
    const stop = text.slice(at, at + 3);
    if (stop.trim().length > 0) {
      const s = await client.completions.create({ ...base, stop: [stop] });
      assert.equal(s.choices[0]!.finish_reason, 'stop');
      assert.equal(s.choices[0]!.text, text.slice(0, text.indexOf(stop)));
    }

    // the same seed draws the same text at temperature 1
    const seeded = { ...base, temperature: 1, seed: 1234 };
    const a = await client.completions.create(seeded);
    const b = await client.completions.create(seeded);
    assert.equal(a.choices[0]!.text, b.choices[0]!.text);

    // logprobs: the first token, then banned with logit_bias -100
    const lp = await client.completions.create({ ...base, max_tokens: 4, logprobs: 3 });
    const l = lp.choices[0]!.logprobs!;
    assert.equal(l.tokens!.length, lp.usage!.completion_tokens);
    assert.equal(l.token_logprobs!.length, l.tokens!.length);
    assert.ok(l.token_logprobs!.every((x) => x <= 0));
    assert.ok(Object.keys(l.top_logprobs![0]!).length >= 1);
    const first = await post(`${server.url}/tokenize`, { content: text });
    assert.equal(first.status, 200);
    const chat = await client.chat.completions.create({
      model: server.modelId,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 3,
      temperature: 0,
      logprobs: true,
      top_logprobs: 2,
    });
    const content = chat.choices[0]!.logprobs!.content!;
    assert.equal(content.length, chat.usage!.completion_tokens);
    assert.equal(content[0]!.top_logprobs.length, 2);
    const firstId = (content[0] as unknown as { id: number }).id;
    const banned = await client.chat.completions.create({
      model: server.modelId,
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 3,
      temperature: 0,
      logprobs: true,
      logit_bias: { [String(firstId)]: -100 },
    });
    assert.notEqual((banned.choices[0]!.logprobs!.content![0] as unknown as { id: number }).id, firstId);
  });

  test('response_format json_schema constrains the reply', async () => {
    const r = await client.chat.completions.create({
      model: server.modelId,
      messages: [{ role: 'user', content: 'yes or no?' }],
      max_tokens: 16,
      temperature: 0,
      response_format: {
        type: 'json_schema',
        json_schema: { name: 'answer', schema: { type: 'string', enum: ['yes', 'no'] } },
      },
    });
    // the grammar allows trailing white space, as llama.cpp's does
    assert.ok(['yes', 'no'].includes(JSON.parse(r.choices[0]!.message.content!)), r.choices[0]!.message.content!);
  });

  test('tools are accepted; any tool call parsed is well formed', async () => {
    const r = await client.chat.completions.create({
      model: server.modelId,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      max_tokens: 8,
      temperature: 0,
      tools: [
        {
          type: 'function',
          function: {
            name: 'get_weather',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        },
      ],
    });
    const m = r.choices[0]!.message;
    for (const call of m.tool_calls ?? []) {
      assert.equal(call.type, 'function');
      assert.equal(typeof (call as { function: { name: string } }).function.name, 'string');
    }
  });

  test('tokenize / detokenize round trip', async () => {
    const t = await post(`${server.url}/tokenize`, { content: 'Once upon a time', with_pieces: true });
    assert.equal(t.status, 200);
    const ids = t.json.tokens.map((x: { id: number }) => x.id);
    assert.ok(ids.length > 0);
    const d = await post(`${server.url}/detokenize`, { tokens: ids });
    assert.equal(d.json.content.trim(), 'Once upon a time');
    assert.equal((await post(`${server.url}/detokenize`, { tokens: [-1] })).status, 400);
  });

  test('a repeated prompt reuses the slot cache', async () => {
    const prompt = 'Once upon a time, there was a little girl named Lily. She liked to play outside.';
    const first = await post(`${server.url}/v1/completions`, { prompt, max_tokens: 2, temperature: 0 });
    const second = await post(`${server.url}/v1/completions`, { prompt, max_tokens: 2, temperature: 0 });
    assert.equal(first.status, 200);
    assert.ok(second.json.timings.cache_n >= first.json.usage.prompt_tokens - 1, JSON.stringify(second.json.timings));
    assert.equal(second.json.choices[0].text, first.json.choices[0].text);
  });

  test('a client that disconnects frees its slot at once', async () => {
    const ac = new AbortController();
    const res = await fetch(`${server.url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 100000, stream: true, ignore_eos: true }),
      signal: ac.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    const before = metric(await (await fetch(`${server.url}/metrics`)).text(), 'llamacpp:requests_processing');
    assert.equal(before, 1);
    ac.abort();
    const t0 = Date.now();
    let processing = 1;
    while (processing !== 0 && Date.now() - t0 < 2000) {
      await new Promise((r) => setTimeout(r, 20));
      processing = metric(await (await fetch(`${server.url}/metrics`)).text(), 'llamacpp:requests_processing');
    }
    assert.equal(processing, 0);
    const text = await (await fetch(`${server.url}/metrics`)).text();
    assert.ok(metric(text, 'llamats:requests_cancelled_total') >= 1);
  });

  test('errors: OpenAI-style JSON and status codes', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: server.modelId, messages: 'hi' as unknown as [] }),
      (e: unknown) => e instanceof OpenAI.BadRequestError && e.status === 400,
    );
    await assert.rejects(
      client.chat.completions.create({
        model: server.modelId,
        messages: [{ role: 'user', content: 'x' }],
        temperature: 'hot' as unknown as number,
      }),
      OpenAI.BadRequestError,
    );
    const bad = await post(`${server.url}/v1/chat/completions`, '{not json');
    assert.equal(bad.status, 400);
    assert.equal(bad.json.error.type, 'invalid_request_error');
    assert.equal(bad.json.error.code, 400);
    assert.equal(typeof bad.json.error.message, 'string');
    const nf = await fetch(`${server.url}/v1/nope`);
    assert.equal(nf.status, 404);
    assert.equal(((await nf.json()) as { error: { type: string } }).error.type, 'not_found_error');
    assert.equal((await fetch(`${server.url}/v1/chat/completions`)).status, 405);
    const long = await post(`${server.url}/v1/completions`, { prompt: 'a '.repeat(2000), max_tokens: 1 });
    assert.equal(long.status, 400);
    assert.match(long.json.error.message, /context/);
    const big = await post(`${server.url}/v1/completions`, { prompt: 'x'.repeat(11 * 1024 * 1024) });
    assert.equal(big.status, 413);
    const grammar = await post(`${server.url}/v1/completions`, { prompt: 'x', grammar: 'root ::= (' });
    assert.equal(grammar.status, 400);
    // no embeddings from a generative model unless asked for
    assert.equal((await post(`${server.url}/v1/embeddings`, { input: 'x' })).status, 501);
    // CORS is off by default
    assert.equal(nf.headers.get('access-control-allow-origin'), null);
  });
});

describe('server: API key, CORS, a full queue', () => {
  let server: LlamaServer;
  before(async () => {
    server = await LlamaServer.start({
      model: MODEL,
      port: 0,
      parallel: 1,
      nCtx: 512,
      maxQueue: 1,
      apiKey: 'sk-secret',
      cors: 'https://example.test',
    });
  });
  after(async () => {
    await server?.close();
  });

  test('the API key is required (Bearer or x-api-key); health and models are public', async () => {
    const c = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    await assert.rejects(
      c.completions.create({ model: 'm', prompt: 'x', max_tokens: 1 }),
      (e: unknown) => e instanceof OpenAI.AuthenticationError && e.status === 401,
    );
    const none = await post(`${server.url}/v1/completions`, { prompt: 'x', max_tokens: 1 });
    assert.equal(none.status, 401);
    assert.equal(none.json.error.type, 'authentication_error');
    const ok = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'sk-secret', maxRetries: 0 });
    const r = await ok.completions.create({ model: 'm', prompt: 'x', max_tokens: 1 });
    assert.equal(r.object, 'text_completion');
    const x = await post(`${server.url}/v1/completions`, { prompt: 'x', max_tokens: 1 }, { 'x-api-key': 'sk-secret' });
    assert.equal(x.status, 200);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    assert.equal((await fetch(`${server.url}/v1/models`)).status, 200);
    assert.equal((await fetch(`${server.url}/metrics`)).status, 401);
  });

  test('CORS when enabled: the origin header and preflight', async () => {
    const r = await fetch(`${server.url}/health`);
    assert.equal(r.headers.get('access-control-allow-origin'), 'https://example.test');
    const pre = await fetch(`${server.url}/v1/chat/completions`, { method: 'OPTIONS' });
    assert.equal(pre.status, 200);
    assert.equal(pre.headers.get('access-control-allow-headers'), '*');
    // another origin's preflight is refused
    const other = await fetch(`${server.url}/v1/chat/completions`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://evil.test' },
    });
    assert.equal(other.status, 403);
  });

  test('beyond one slot and a queue of one: 503 at once', async () => {
    const h = { Authorization: 'Bearer sk-secret' };
    // long enough that the first request still runs when the third arrives (the context
    // is 512), and the third is sent only once the server reports one running, one queued
    const long = { prompt: 'Once', max_tokens: 480, ignore_eos: true };
    const gauge = async (name: string) => {
      const text = await (await fetch(`${server.url}/metrics`, { headers: h })).text();
      return Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);
    };
    const a = post(`${server.url}/v1/completions`, long, h);
    while ((await gauge('llamacpp:requests_processing')) < 1) await new Promise((r) => setTimeout(r, 5));
    const b = post(`${server.url}/v1/completions`, long, h);
    while ((await gauge('llamacpp:requests_deferred')) < 1) await new Promise((r) => setTimeout(r, 5));
    const t0 = performance.now();
    const c = await post(`${server.url}/v1/completions`, long, h);
    const ms = performance.now() - t0;
    assert.equal(c.status, 503);
    assert.equal(c.json.error.type, 'unavailable_error');
    assert.equal(c.headers.get('retry-after'), '1');
    assert.ok(ms < 500, `503 took ${ms} ms`);
    assert.equal((await a).status, 200);
    assert.equal((await b).status, 200);
  });
});

describe('server: embeddings', () => {
  let server: LlamaServer;
  let client: OpenAI;
  before(async () => {
    server = await LlamaServer.start({ model: embeddingModel(), port: 0 });
    client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  });
  after(async () => {
    await server?.close();
  });

  test('one and many inputs, base64 (the client default) and float', async () => {
    const r = await client.embeddings.create({ model: server.modelId, input: ['hello world', 'a cat sat'] });
    assert.equal(r.object, 'list');
    assert.equal(r.data.length, 2);
    const [a, b] = r.data.map((d) => d.embedding);
    assert.equal(a!.length, server.modelInfo.nEmbd);
    const norm = Math.hypot(...a!);
    assert.ok(Math.abs(norm - 1) < 1e-4, `norm ${norm}`);
    assert.notDeepEqual(a, b);
    assert.ok(r.usage.prompt_tokens > 0);
    const f = await post(`${server.url}/v1/embeddings`, { input: 'hello world', encoding_format: 'float' });
    assert.equal(f.status, 200);
    const v = f.json.data[0].embedding as number[];
    for (let i = 0; i < v.length; i++) assert.ok(Math.abs(v[i]! - a![i]!) < 1e-6);
    // a generation request to an embedding model
    assert.equal((await post(`${server.url}/v1/completions`, { prompt: 'x' })).status, 501);
    assert.equal((await post(`${server.url}/v1/embeddings`, { input: 42 })).status, 400);
  });
});
