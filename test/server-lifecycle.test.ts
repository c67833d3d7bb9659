// The server's life as a replica behind a balancer: it listens before the model loads
// (503 "loading model"), reports busy slots (/health?fail_on_no_slot, /slots, /metrics),
// returns a stable X-Prefix-Key, and shuts down gracefully: requests in flight finish,
// and past the shutdown timeout streams end with finish_reason "abort" while answers not
// yet begun are 503s a balancer may retry.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { loadModel } from '../src/api/index.js';
import { LlamaServer } from '../src/server/index.js';
import { chatModel } from './server-fixtures.js';

const MODEL = chatModel();

/** A streamed answer: its status, headers and each `data:` event (parsed; '[DONE]' as is). */
async function stream(
  url: string,
  body: Record<string, unknown>,
  opts: { headers?: Record<string, string>; onEvent?: (e: unknown) => void; signal?: AbortSignal } = {},
): Promise<{ status: number; headers: Headers; events: unknown[] }> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...opts.headers },
    body: JSON.stringify({ ...body, stream: true }),
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
  const events: unknown[] = [];
  if (r.status !== 200) return { status: r.status, headers: r.headers, events: [await r.json()] };
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
    buf += dec.decode(chunk, { stream: true });
    let i = buf.indexOf('\n\n');
    while (i >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 2);
      if (line.startsWith('data: ')) {
        const data = line.slice(6);
        const e = data === '[DONE]' ? data : JSON.parse(data);
        events.push(e);
        opts.onEvent?.(e);
      }
      i = buf.indexOf('\n\n');
    }
  }
  return { status: r.status, headers: r.headers, events };
}

type Chunk = { choices: { finish_reason: string | null; delta?: { content?: string } }[]; usage?: unknown };

function finishOf(events: unknown[]): string | null | undefined {
  const chunks = events.filter((e): e is Chunk => typeof e === 'object' && e !== null && 'choices' in e);
  return chunks.at(-1)?.choices[0]?.finish_reason;
}

const json = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });

/** A request that generates until stopped (context shift keeps it going). */
const endless = {
  messages: [{ role: 'user', content: 'Tell a long story.' }],
  max_tokens: 1_000_000,
  ignore_eos: true,
};

test('listens before loading: /health and every endpoint answer 503 until the model is loaded', {
  timeout: 60_000,
}, async () => {
  const s = await LlamaServer.listen({ model: MODEL, port: 0, parallel: 1, nCtx: 512, threads: 1 });
  try {
    assert.equal(s.state, 'loading');
    const h = await fetch(`${s.url}/health`);
    assert.equal(h.status, 503);
    assert.deepEqual(await h.json(), { status: 'loading model' });
    const c = await json(`${s.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(c.status, 503);
    assert.equal(c.headers.get('retry-after'), '1');
    assert.match(((await c.json()) as { error: { message: string } }).error.message, /Loading model/);
    for (const path of ['/v1/models', '/metrics', '/slots']) assert.equal((await fetch(`${s.url}${path}`)).status, 503);
    await s.load();
    assert.equal(s.state, 'ready');
    const ok = await fetch(`${s.url}/health`);
    assert.equal(ok.status, 200);
    assert.deepEqual(await ok.json(), { status: 'ok' });
  } finally {
    await s.close();
  }
});

test('a model that fails to load: load() rejects, /health says so, requests get 503', { timeout: 30_000 }, async () => {
  const s = await LlamaServer.listen({ model: '/nonexistent/model.gguf', port: 0 });
  try {
    await assert.rejects(s.load());
    assert.equal(s.state, 'failed');
    const h = await fetch(`${s.url}/health`);
    assert.equal(h.status, 500);
    assert.equal(((await h.json()) as { status: string }).status, 'error');
    assert.equal((await json(`${s.url}/v1/completions`, { prompt: 'x' })).status, 503);
  } finally {
    await s.close();
  }
});

test('busy slots: /health?fail_on_no_slot 503, /slots and /metrics show the slot at work', {
  timeout: 60_000,
}, async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 1, nCtx: 512, threads: 1 });
  try {
    assert.equal((await fetch(`${s.url}/health?fail_on_no_slot=1`)).status, 200);
    const ac = new AbortController();
    let started!: () => void;
    const first = new Promise<void>((res) => {
      started = res;
    });
    const running = stream(`${s.url}/v1/chat/completions`, endless, {
      signal: ac.signal,
      onEvent: () => started(),
    }).catch(() => undefined);
    await first;
    const busy = await fetch(`${s.url}/health?fail_on_no_slot=1`);
    assert.equal(busy.status, 503);
    assert.deepEqual(await busy.json(), { status: 'no slot available', slots_idle: 0, slots_processing: 1 });
    // without the flag: still ready (requests queue)
    const plain = await fetch(`${s.url}/health`);
    assert.equal(plain.status, 200);
    assert.deepEqual(await plain.json(), { status: 'ok' });
    const slots = (await (await fetch(`${s.url}/slots`)).json()) as {
      id: number;
      is_processing: boolean;
      state: string;
      n_ctx: number;
      n_prompt_tokens: number;
      next_token: { n_decoded: number }[];
    }[];
    assert.equal(slots.length, 1);
    assert.equal(slots[0]!.id, 0);
    assert.equal(slots[0]!.is_processing, true);
    assert.equal(slots[0]!.state, 'generating');
    assert.equal(slots[0]!.n_ctx, 512);
    assert.ok(slots[0]!.n_prompt_tokens > 0);
    assert.ok(slots[0]!.next_token[0]!.n_decoded > 0);
    assert.equal((await fetch(`${s.url}/slots?fail_on_no_slot=1`)).status, 503);
    // a second request waits in the queue
    const queued = json(`${s.url}/v1/completions`, { prompt: 'Once', max_tokens: 2 });
    let metrics = '';
    for (let i = 0; i < 100 && !/llamacpp:requests_deferred 1\n/.test(metrics); i++) {
      metrics = await (await fetch(`${s.url}/metrics`)).text();
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.match(metrics, /llamacpp:requests_deferred 1\n/);
    assert.match(metrics, /llamats:requests_in_flight 2\n/);
    assert.match(metrics, /llamats:slot_processing\{slot="0"\} 1\n/);
    assert.match(metrics, /llamats:slot_cached_tokens\{slot="0"\} [1-9]\d*\n/);
    ac.abort();
    await running;
    assert.equal((await queued).status, 200);
    let idle = 0;
    for (let i = 0; i < 100 && idle !== 200; i++) {
      idle = (await fetch(`${s.url}/health?fail_on_no_slot=1`)).status;
      if (idle !== 200) await new Promise((r) => setTimeout(r, 20));
    }
    assert.equal(idle, 200);
    const after = (await (await fetch(`${s.url}/slots`)).json()) as { is_processing: boolean; n_cached: number }[];
    assert.equal(after[0]!.is_processing, false);
    assert.ok(after[0]!.n_cached > 0, 'the idle slot keeps its cached prefix');
  } finally {
    await s.close();
  }
});

test('X-Prefix-Key: one key per conversation, kept across turns, on streams and plain answers', {
  timeout: 60_000,
}, async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 2, nCtx: 1024, threads: 1 });
  try {
    const url = `${s.url}/v1/chat/completions`;
    const messages: { role: string; content: string }[] = [
      { role: 'system', content: 'You tell stories.' },
      { role: 'user', content: 'Tell me about a cat.' },
    ];
    let key = '';
    const keys: string[] = [];
    const cached: number[] = [];
    for (let turn = 0; turn < 4; turn++) {
      const headers: Record<string, string> = key ? { 'X-Prefix-Key': key } : {};
      let reply: string;
      if (turn % 2 === 0) {
        const r = await json(url, { messages, max_tokens: 16, temperature: 0 }, headers);
        assert.equal(r.status, 200);
        key = r.headers.get('x-prefix-key') ?? '';
        const j = (await r.json()) as {
          choices: { message: { content: string } }[];
          usage: { prompt_tokens_details: { cached_tokens: number } };
        };
        reply = j.choices[0]!.message.content;
        cached.push(j.usage.prompt_tokens_details.cached_tokens);
      } else {
        const r = await stream(url, { messages, max_tokens: 16, temperature: 0 }, { headers });
        assert.equal(r.status, 200);
        key = r.headers.get('x-prefix-key') ?? '';
        reply = (r.events as Chunk[])
          .filter((e) => typeof e === 'object')
          .map((e) => e.choices[0]?.delta?.content ?? '')
          .join('');
        const last = (r.events as Chunk[]).filter((e) => typeof e === 'object').at(-1) as unknown as {
          usage: { prompt_tokens_details: { cached_tokens: number } };
        };
        cached.push(last.usage.prompt_tokens_details.cached_tokens);
      }
      keys.push(key);
      messages.push({ role: 'assistant', content: reply }, { role: 'user', content: `What happened next (${turn})?` });
    }
    assert.match(keys[0]!, /^\d+-[0-9a-f]{16}$/);
    assert.deepEqual(keys, [keys[0], keys[0], keys[0], keys[0]], 'the same key every turn');
    assert.equal(cached[0], 0);
    for (const n of cached.slice(1)) assert.ok(n > 0, `later turns reuse the cache: ${cached}`);
    // another conversation: another key; a forged or malformed key is replaced, never an error
    const other = await json(
      url,
      { messages: [{ role: 'user', content: 'A dog?' }], max_tokens: 2 },
      { 'X-Prefix-Key': key },
    );
    assert.equal(other.status, 200);
    const otherKey = other.headers.get('x-prefix-key');
    assert.match(otherKey ?? '', /^\d+-[0-9a-f]{16}$/);
    assert.notEqual(otherKey, key);
    const junk = await json(
      url,
      { messages: [{ role: 'user', content: 'A dog?' }], max_tokens: 2 },
      { 'X-Prefix-Key': 'x'.repeat(500) },
    );
    assert.equal(junk.status, 200);
    assert.equal(junk.headers.get('x-prefix-key'), otherKey);
    // raw completions too
    const c = await json(`${s.url}/v1/completions`, { prompt: 'Once upon a time', max_tokens: 2 });
    assert.match(c.headers.get('x-prefix-key') ?? '', /^\d+-[0-9a-f]{16}$/);
  } finally {
    await s.close();
  }
});

test('the library makes no key unless asked; with prefix_key it returns one', { timeout: 60_000 }, async () => {
  const ctx = await loadModel({ model: MODEL, n_ctx: 256, n_threads: 1 });
  try {
    const plain = await ctx.completion({ prompt: 'Once upon a time', n_predict: 2 });
    assert.equal(plain.prefix_key, undefined);
    const keyed = await ctx.completion({ prompt: 'Once upon a time', n_predict: 2, prefix_key: '' });
    assert.match(keyed.prefix_key ?? '', /^\d+-[0-9a-f]{16}$/);
    const again = await ctx.completion({
      prompt: 'Once upon a time there was',
      n_predict: 2,
      prefix_key: keyed.prefix_key!,
    });
    assert.equal(again.prefix_key, keyed.prefix_key);
  } finally {
    await ctx.release();
  }
});

test('shutdown: the port closes, a stream in flight finishes, then the server is closed', {
  timeout: 60_000,
}, async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 2, nCtx: 1024, threads: 1 });
  const url = s.url;
  let started!: () => void;
  const first = new Promise<void>((res) => {
    started = res;
  });
  const running = stream(
    `${url}/v1/chat/completions`,
    { messages: [{ role: 'user', content: 'Tell a story.' }], max_tokens: 300, ignore_eos: true },
    { onEvent: () => started() },
  );
  await first;
  const down = s.shutdown(30);
  assert.equal(s.state, 'draining');
  // no new connections
  await assert.rejects(fetch(`${url}/health`));
  const r = await running;
  assert.equal(r.status, 200);
  assert.equal(finishOf(r.events), 'length');
  assert.equal(r.events.at(-1), '[DONE]');
  await down;
  assert.equal(s.state, 'closed');
});

test('shutdown past its timeout: a begun stream ends with finish_reason "abort"; a queued request gets 503', {
  timeout: 60_000,
}, async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 1, nCtx: 512, threads: 1, maxQueue: 4 });
  const url = s.url;
  let started!: () => void;
  const first = new Promise<void>((res) => {
    started = res;
  });
  const running = stream(`${url}/v1/chat/completions`, endless, { onEvent: () => started() });
  await first;
  // waits for the only slot
  const queued = json(`${url}/v1/completions`, { prompt: 'Once', max_tokens: 4 });
  for (let i = 0; i < 100; i++) {
    const m = await (await fetch(`${url}/metrics`)).text();
    if (/llamacpp:requests_deferred 1\n/.test(m)) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  const t0 = performance.now();
  await s.shutdown(0.5);
  const ms = performance.now() - t0;
  assert.ok(ms >= 450 && ms < 10_000, `shutdown took ${ms.toFixed(0)} ms`);
  const r = await running;
  assert.equal(r.status, 200);
  assert.equal(finishOf(r.events), 'abort');
  assert.equal(r.events.at(-1), '[DONE]');
  const q = await queued;
  assert.equal(q.status, 503);
  assert.match(((await q.json()) as { error: { message: string } }).error.message, /shut down/);
  assert.equal(s.state, 'closed');
});

test('shutdown while loading stops loading; no answer is owed', { timeout: 30_000 }, async () => {
  const s = await LlamaServer.listen({ model: MODEL, port: 0, parallel: 1, nCtx: 512, threads: 1 });
  const loading = s.load();
  await s.shutdown(5);
  await loading.catch(() => {});
  assert.equal(s.state, 'closed');
});
