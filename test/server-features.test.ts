// llama-server's features that its own test suite (tools/server/tests) starts servers
// with, on loopback: server-wide request defaults (--temp, --seed, --n-predict) reported by
// /props; --reasoning-budget 0; the date_string / datetime template values; CORS as
// llama-server answers it; --verbose's __verbose; --pooling none; token-id / text mixes and
// JSON-object prompts; response_fields; post_sampling_probs; --no-slots; comma-separated
// --alias and --tags with the models list; --sleep-idle-seconds. And `serve`'s flags for them.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { strftime } from '../src/chat/strftime.js';
import { LlamaServer } from '../src/server/index.js';
import { REPO_ROOT, sharedPath } from './helpers/shared.js';
import { chatModel, embeddingModel } from './server-fixtures.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies
type Json = Record<string, any>;

const MODEL = chatModel();
const STORIES = sharedPath('models/stories260K.gguf') !== undefined;

async function post(s: LlamaServer | string, path: string, body: unknown): Promise<{ status: number; body: Json }> {
  const url = typeof s === 'string' ? s : s.url;
  const r = await fetch(`${url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Json };
}
/** A streamed answer's data lines, parsed ([DONE] left out). */
async function sse(s: LlamaServer, path: string, body: unknown): Promise<Json[]> {
  const r = await fetch(`${s.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(r.status, 200);
  return (await r.text())
    .split('\n\n')
    .map((x) => x.trim())
    .filter((x) => x.startsWith('data: ') && x !== 'data: [DONE]')
    .map((x) => JSON.parse(x.slice(6)) as Json);
}

async function get(s: LlamaServer | string, path: string): Promise<{ status: number; body: Json }> {
  const r = await fetch(`${typeof s === 'string' ? s : s.url}${path}`);
  return { status: r.status, body: (await r.json()) as Json };
}

/** Qwen3's thinking switch: an empty <think> block when enable_thinking is false. */
const THINK_SWITCH = `{%- for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{%- if add_generation_prompt %}<|im_start|>assistant
{% if enable_thinking is defined and enable_thinking is false %}<think>

</think>

{% endif %}{% endif %}`;

describe('server-wide defaults, names, slots, CORS (as llama-server)', () => {
  let s: LlamaServer;
  before(async () => {
    s = await LlamaServer.start({
      model: MODEL,
      port: 0,
      parallel: 2,
      nCtx: 512,
      alias: 'tinyllama-2, fim,code,,fim',
      tags: 'chat,fim,small',
      defaults: { temperature: 0.8, seed: 42, n_predict: 8 },
      slots: false,
      cors: '*',
    });
  });
  after(() => s?.close());

  test('/props reports the defaults; requests that leave them out get them', async () => {
    const p = (await get(s, '/props')).body;
    const d = p.default_generation_settings;
    assert.equal(d.n_ctx, 256);
    assert.equal(d.params.seed, 42);
    assert.equal(d.params.temperature, 0.8);
    assert.equal(d.params.n_predict, 8);
    assert.equal(p.total_slots, 2);
    assert.equal(p.is_sleeping, false);
    assert.equal(p.model_alias, 'code');
    // no seed in the request: the server's 42, so two draws at temperature 0.8 agree
    const a = await post(s, '/completion', { prompt: 'Once upon a time', cache_prompt: false });
    const b = await post(s, '/completion', { prompt: 'Once upon a time', cache_prompt: false });
    assert.equal(a.status, 200);
    assert.equal(a.body.generation_settings.seed, 42);
    assert.equal(a.body.generation_settings.n_predict, 8);
    assert.equal(a.body.timings.predicted_n, 8);
    assert.equal(a.body.content, b.body.content);
    // the request's own values win
    const c = await post(s, '/completion', { prompt: 'Once upon a time', n_predict: 3, seed: 7 });
    assert.equal(c.body.generation_settings.seed, 7);
    assert.equal(c.body.timings.predicted_n, 3);
    // streamed, the final chunk's settings hold the defaults too (llama-server's test_completion_stream)
    const streamed = await sse(s, '/completion', { prompt: 'Once upon a time', stream: true });
    const end = streamed.at(-1)!;
    assert.equal(end.stop, true);
    assert.equal(end.generation_settings.seed, 42);
    assert.equal(end.generation_settings.n_predict, 8);
    assert.equal(end.generation_settings.return_progress, false);
    const chat = await post(s, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }] });
    assert.equal(chat.body.usage.completion_tokens <= 8, true);
  });

  test('--alias lists (sorted, the first is the id), --tags, the models list with capabilities', async () => {
    const m = (await get(s, '/models')).body;
    assert.equal(m.data.length, 1);
    assert.equal(m.data[0].id, 'code');
    assert.deepEqual(m.data[0].aliases, ['code', 'fim', 'tinyllama-2']);
    assert.deepEqual(m.data[0].tags, ['chat', 'fim', 'small']);
    assert.equal(m.models.length, 1);
    assert.equal(m.models[0].model, 'code');
    assert.deepEqual(m.models[0].capabilities, ['completion']);
    assert.deepEqual((await get(s, '/v1/models')).body, m);
    // requests name the model by its id
    assert.equal((await post(s, '/v1/completions', { prompt: 'x', max_tokens: 1 })).body.model, 'code');
  });

  test('--no-slots: GET /slots is a 501', async () => {
    const r = await get(s, '/slots');
    assert.equal(r.status, 501);
    assert.equal(r.body.error.type, 'not_supported_error');
    assert.equal((await get(s, '/props')).body.endpoint_slots, false);
  });

  test('CORS: the preflight is a 200 allowing any header; the origin is echoed', async () => {
    for (const origin of ['localhost', 'web.mydomain.fr']) {
      const r = await fetch(`${s.url}/completions`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'Authorization',
        },
      });
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('access-control-allow-origin'), origin);
      assert.equal(r.headers.get('access-control-allow-credentials'), 'true');
      assert.equal(r.headers.get('access-control-allow-methods'), 'GET, POST');
      assert.equal(r.headers.get('access-control-allow-headers'), '*');
    }
    // a preflight for DELETE (Ollama's /api/delete) is allowed it
    const d = await fetch(`${s.url}/api/delete`, {
      method: 'OPTIONS',
      headers: { Origin: 'https://x.example', 'Access-Control-Request-Method': 'DELETE' },
    });
    assert.equal(d.status, 200);
    assert.equal(d.headers.get('access-control-allow-methods'), 'GET, POST, DELETE');
  });
});

describe('/completion: prompts, response_fields, post_sampling_probs', () => {
  let s: LlamaServer;
  before(async () => {
    s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 2, nCtx: 1024 });
  });
  after(() => s?.close());
  const text = 'I believe the meaning of life is';

  test('response_fields: only the paths named, nested ones under their path; the prompt as evaluated', async () => {
    const r = await post(s, '/completion', {
      prompt: text,
      n_predict: 4,
      response_fields: ['content', 'generation_settings/n_predict', 'prompt', 'no/such'],
    });
    assert.equal(r.status, 200);
    assert.deepEqual(Object.keys(r.body).sort(), ['content', 'generation_settings/n_predict', 'prompt']);
    assert.equal(r.body['generation_settings/n_predict'], 4);
    assert.equal(typeof r.body.content, 'string');
    const bos = (await get(s, '/props')).body.bos_token as string;
    assert.ok((r.body.prompt as string).startsWith(bos), r.body.prompt);
    // llama-server's echo: the prompt's tokens as text, BOS included
    if (STORIES) assert.equal(r.body.prompt, `<s> ${text}`);
    const whole = await post(s, '/completion', { prompt: text, n_predict: 1, response_fields: [] });
    assert.ok('generation_settings' in whole.body);
    const bad = await post(s, '/completion', { prompt: text, response_fields: 'content' });
    assert.equal(bad.status, 400);
  });

  test('post_sampling_probs: probabilities (prob, top_probs) from the final candidates', async () => {
    const r = await post(s, '/completion', {
      prompt: text,
      n_probs: 10,
      temperature: 0,
      n_predict: 3,
      post_sampling_probs: true,
    });
    assert.equal(r.status, 200);
    assert.equal(r.body.completion_probabilities.length, 3);
    for (const t of r.body.completion_probabilities) {
      assert.equal('logprob' in t, false);
      assert.ok(t.prob > 0 && t.prob <= 1);
      assert.ok(Array.isArray(t.bytes));
      assert.ok(t.top_probs.length >= 1 && t.top_probs.length <= 10);
      for (const p of t.top_probs) assert.ok(p.prob >= 0 && p.prob <= 1);
      // greedy: the chosen token has all the probability, the rest is listed at 0
      assert.ok(t.top_probs.some((p: Json) => p.prob === 1));
    }
    // no __verbose without --verbose
    const chat = await post(s, '/v1/chat/completions', { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 1 });
    assert.equal('__verbose' in chat.body, false);
    const plain = await post(s, '/completion', { prompt: text, n_probs: 2, temperature: 0, n_predict: 1 });
    assert.ok(plain.body.completion_probabilities[0].logprob <= 0);
    assert.ok(Array.isArray(plain.body.completion_probabilities[0].top_logprobs));
  });

  test('JSON-object prompts, mixed with token ids; media for a text-only model is a 400', async () => {
    const tokens = ((await post(s, '/tokenize', { content: text, add_special: true })).body.tokens as number[]).slice();
    const one = await post(s, '/completion', { prompt: { prompt_string: text }, temperature: 0, n_predict: 4 });
    assert.equal(one.status, 200);
    const list = await post(s, '/completion', {
      prompt: [tokens, { prompt_string: text }, text],
      temperature: 0,
      n_predict: 4,
    });
    assert.equal(list.status, 200);
    assert.equal(list.body.length, 3);
    assert.equal(list.body[0].content, one.body.content);
    assert.equal(list.body[1].content, one.body.content);
    assert.equal(list.body[2].content, one.body.content);
    // token ids and text in one sequence
    const mixed = await post(s, '/completion', { prompt: [1, 2, 3, text, 7, 8, text], n_predict: 2 });
    assert.equal(mixed.status, 200);
    assert.equal(typeof mixed.body.content, 'string');
    const media = await post(s, '/completion', {
      prompt: { prompt_string: `${text} <__media__>`, multimodal_data: ['iVBORw0KGgo='] },
    });
    assert.equal(media.status, 400);
    assert.match(media.body.error.message, /multimodal/);
  });
});

describe('--verbose, --reasoning-budget 0, the date values templates get', () => {
  let s: LlamaServer;
  let llama3: LlamaServer;
  before(async () => {
    s = await LlamaServer.start({
      model: MODEL,
      port: 0,
      parallel: 1,
      nCtx: 1024,
      chatTemplate: THINK_SWITCH,
      reasoningBudget: 0,
      verbose: true,
    });
    llama3 = await LlamaServer.start({
      model: MODEL,
      port: 0,
      parallel: 1,
      nCtx: 1024,
      chatTemplate: `{{ bos_token }}{{ date_string }}|{{ datetime }}|{% for m in messages %}{{ m.content }}{% endfor %}`,
      verbose: true,
    });
  });
  after(async () => {
    await s?.close();
    await llama3?.close();
  });

  test('reasoning budget 0: templates render with enable_thinking false (apply-template and chat)', async () => {
    const msgs = [{ role: 'user', content: 'What is today?' }];
    const t = await post(s, '/apply-template', { messages: msgs });
    assert.ok(t.body.prompt.endsWith('<|im_start|>assistant\n<think>\n\n</think>\n\n'), t.body.prompt);
    // a request may still ask for thinking
    const on = await post(s, '/apply-template', { messages: msgs, enable_thinking: true });
    assert.ok(on.body.prompt.endsWith('<|im_start|>assistant\n'), on.body.prompt);
    const c = await post(s, '/v1/chat/completions', { messages: msgs, max_tokens: 2 });
    assert.equal(c.status, 200);
    assert.ok((c.body.__verbose.prompt as string).endsWith('<think>\n\n</think>\n\n'), c.body.__verbose.prompt);
  });

  test('--verbose: __verbose holds the /completion-shaped result with the prompt as evaluated', async () => {
    const c = await post(llama3, '/v1/chat/completions', {
      messages: [{ role: 'user', content: 'Hi' }],
      max_tokens: 2,
    });
    const v = c.body.__verbose;
    assert.equal(typeof v.content, 'string');
    assert.equal(v.content, c.body.choices[0].message.content);
    assert.equal(v.tokens_predicted, c.body.usage.completion_tokens);
    assert.ok('generation_settings' in v);
    const today = new Date();
    assert.ok(
      (v.prompt as string).includes(`${strftime(today, '%d %b %Y')}|${strftime(today, '%b %d %Y')}|Hi`),
      v.prompt,
    );
    const cmpl = await post(llama3, '/v1/completions', { prompt: 'Once', max_tokens: 1 });
    assert.equal(typeof cmpl.body.__verbose.prompt, 'string');
    assert.equal('tokens' in cmpl.body, false);
  });

  test("--verbose, streamed: the chat's result on its first final chunk; each completions chunk its own (llama-server's)", async () => {
    const body = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 3, temperature: 0, stream: true };
    const chunks = await sse(llama3, '/v1/chat/completions', body);
    const verbose = chunks.filter((c) => '__verbose' in c);
    assert.equal(verbose.length, 1);
    const final = verbose[0]!;
    assert.equal(final.choices[0].finish_reason, 'length');
    const v = final.__verbose;
    // the text went out in the deltas: the final result's is empty, as llama-server's stream
    assert.equal(v.content, '');
    assert.deepEqual(v.tokens, []);
    assert.equal(v.stop, true);
    assert.equal(v.tokens_predicted, 3);
    assert.ok((v.prompt as string).endsWith('|Hi'), v.prompt);
    // what the client asked for, not what the server added to learn it
    assert.equal(v.generation_settings.return_progress, false);

    const prompt = 'Once upon';
    const n = (await post(llama3, '/tokenize', { content: prompt, add_special: true })).body.tokens.length;
    const whole = await post(llama3, '/v1/completions', { prompt, max_tokens: 3, temperature: 0 });
    const cmpl = await sse(llama3, '/v1/completions', { prompt, max_tokens: 3, temperature: 0, stream: true });
    const parts = cmpl.filter((c) => c.choices[0]?.finish_reason === null);
    assert.ok(parts.length > 0);
    let predicted = 0;
    for (const c of parts) {
      const p = c.__verbose;
      assert.equal(p.content, c.choices[0].text);
      assert.equal(p.stop, false);
      assert.equal(p.id_slot, -1);
      assert.equal(p.tokens_evaluated, n);
      predicted += p.tokens.length;
      assert.equal(p.tokens_predicted, predicted);
      // logprobs were not asked for: none, though the token ids came with the engine's entries
      assert.equal(c.choices[0].logprobs, null);
    }
    assert.equal(parts.map((c) => c.choices[0].text).join(''), whole.body.choices[0].text);
    const end = cmpl.find((c) => c.choices[0]?.finish_reason === 'length')!;
    assert.equal(end.__verbose.stop, true);
    assert.equal(end.__verbose.content, '');
    assert.equal(end.__verbose.generation_settings.n_probs, 0);
    assert.equal(end.__verbose.generation_settings.return_progress, false);
  });
});

describe('--pooling none: per-token vectors on /embeddings; /v1/embeddings refuses', () => {
  let s: LlamaServer;
  let pooled: LlamaServer;
  before(async () => {
    s = await LlamaServer.start({ model: embeddingModel(), port: 0, pooling: 'none' });
    pooled = await LlamaServer.start({ model: embeddingModel(), port: 0 });
  });
  after(async () => {
    await s?.close();
    await pooled?.close();
  });

  test('one vector per token (specials included), not normalized', async () => {
    const n = (await post(s, '/tokenize', { content: 'hello hello hello', add_special: true })).body.tokens.length;
    for (const path of ['/embeddings', '/embedding']) {
      const r = await post(s, path, { input: 'hello hello hello' });
      assert.equal(r.status, 200);
      assert.equal(r.body.length, 1);
      assert.equal(r.body[0].index, 0);
      assert.equal(r.body[0].embedding.length, n);
      for (const v of r.body[0].embedding as number[][]) {
        assert.ok(Math.abs(v.reduce((a, x) => a + x * x, 0) - 1) > 1e-3);
      }
    }
    const oai = await post(s, '/v1/embeddings', { input: 'hello hello hello' });
    assert.equal(oai.status, 400);
    assert.match(oai.body.error.message, /pooling 'none'/);
  });

  test('pooled: /embeddings holds the one normalized vector, /v1/embeddings is OpenAI-shaped', async () => {
    const r = await post(pooled, '/embeddings', { content: 'hello' });
    assert.equal(r.body[0].embedding.length, 1);
    const v = r.body[0].embedding[0] as number[];
    assert.ok(Math.abs(v.reduce((a, x) => a + x * x, 0) - 1) < 1e-3);
    const oai = await post(pooled, '/v1/embeddings', { input: 'hello' });
    assert.deepEqual(oai.body.data[0].embedding, v);
  });

  test("inputs as llama-server takes them: '', ids and text mixed, lists of those", async () => {
    for (const [input, n] of [
      ['', 1],
      [[12, 34, 'string', 56, 78], 1],
      [['string1', [12, 34, 56]], 2],
      [
        [
          [12, 34, 56],
          [12, 'string', 34, 56],
        ],
        2,
      ],
      [['a', { prompt_string: 'b' }], 2],
    ] as const) {
      const r = await post(pooled, '/v1/embeddings', { input });
      assert.equal(r.status, 200, JSON.stringify(input));
      assert.equal(r.body.data.length, n);
      for (const d of r.body.data) assert.ok(d.embedding.length > 1);
    }
    const long = await post(pooled, '/v1/embeddings', { input: 'This is a test '.repeat(3000) });
    assert.equal(long.status, 400);
    assert.match(long.body.error.message, /too large/);
    assert.equal((await post(pooled, '/v1/embeddings', { input: [] })).status, 400);
  });
});

test('return_progress: prompt_progress events before the first batch and after each (llama-server)', async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 1, nCtx: 512, nBatch: 64 });
  try {
    /** A streamed request's prompt_progress events, and whether any text came before the last. */
    const progress = async (path: string, body: Json) => {
      const r = await fetch(`${s.url}${path}`, { method: 'POST', body: JSON.stringify({ ...body, stream: true }) });
      const events = (await r.text())
        .split('\n\n')
        .filter((x) => x.startsWith('data: {'))
        .map((x) => JSON.parse(x.slice(6)) as Json);
      const at = events.flatMap((e, i) => (e.prompt_progress ? [i] : []));
      return { list: at.map((i) => events[i]!.prompt_progress as Json), first: events[at.at(-1)! + 1], events };
    };
    const messages = [{ role: 'user', content: 'This is a test'.repeat(10) }];
    const a = await progress('/v1/chat/completions', { messages, max_tokens: 3, return_progress: true });
    const total = a.list[0]!.total as number;
    assert.ok(total > 64);
    assert.equal(a.list[0]!.cache, 0);
    assert.equal(a.list[0]!.processed, 0);
    // one event to start, then one per batch of 64
    assert.equal(a.list.length, 1 + Math.ceil(total / 64));
    for (const [i, p] of a.list.entries()) {
      assert.equal(p.total, total);
      assert.equal(p.cache, 0);
      assert.ok(p.time_ms >= 0);
      if (i > 0) assert.equal(p.processed, Math.min(total, i * 64));
    }
    assert.equal(a.list[0]!.processed, 0);
    assert.equal(a.events[0].choices[0].delta.role, 'assistant');
    // the same prompt again: the cache holds all but its last token
    const b = await progress('/v1/chat/completions', { messages, max_tokens: 3, return_progress: true });
    assert.deepEqual(
      b.list.map((p) => [p.cache, p.processed]),
      [
        [total - 1, total - 1],
        [total - 1, total],
      ],
    );
    // /completion and /v1/completions too; nothing without return_progress
    const c = await progress('/completion', { prompt: 'Once upon a time', n_predict: 2, return_progress: true });
    assert.equal(c.list.at(-1)!.processed, c.list.at(-1)!.total);
    assert.equal(c.events[0].stop, false);
    const d = await progress('/v1/completions', { prompt: 'Once upon a time', max_tokens: 2, return_progress: true });
    assert.equal(d.list.length, 2);
    assert.equal((await progress('/completion', { prompt: 'Once upon', n_predict: 2 })).list.length, 0);
  } finally {
    await s.close();
  }
});

test("--kv-unified: each slot may use the whole context; idle slots' caches make room, then requests fail", async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 4, nCtx: 256, kvUnified: true });
  try {
    assert.equal((await get(s, '/props')).body.default_generation_settings.n_ctx, 256);
    const run = (n: number[]) =>
      Promise.all(
        n.map((n_predict) =>
          post(s, '/completion', { prompt: 'A', n_predict, ignore_eos: true, temperature: 0 }).then((r) => ({
            status: r.status,
            n: r.body.timings?.predicted_n,
          })),
        ),
      );
    // 2 prompt tokens each: 4 × 82 cells do not fit in 256 at once, but the 40-token
    // request ends first and its cache is dropped for the others
    const fit = await run([80, 40, 80, 80]);
    assert.deepEqual(
      fit.map((r) => [r.status, r.n]),
      [
        [200, 80],
        [200, 40],
        [200, 80],
        [200, 80],
      ],
    );
    // 4 × 72 cells cannot fit: every request fails
    assert.deepEqual(
      (await run([70, 70, 70, 70])).map((r) => r.status),
      [500, 500, 500, 500],
    );
    // the context is usable again afterwards; one request may use more than 256 / 4
    assert.deepEqual(await run([200]), [{ status: 200, n: 200 }]);
  } finally {
    await s.close();
  }
});

test('--sleep-idle-seconds: the model unloads when idle and loads again for the next request', async () => {
  const s = await LlamaServer.start({ model: MODEL, port: 0, parallel: 1, nCtx: 512, sleepIdleSeconds: 0.3 });
  try {
    const first = await post(s, '/completion', { prompt: 'Hello', n_predict: 2, temperature: 0 });
    // polling /props and /health is not activity
    for (let i = 0; i < 6; i++) {
      await get(s, '/props');
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal((await get(s, '/health')).status, 200);
    const p = await get(s, '/props');
    assert.equal(p.status, 200);
    assert.equal(p.body.is_sleeping, true);
    assert.equal((await get(s, '/models')).status, 200);
    const r = await post(s, '/completion', { prompt: 'Hello', n_predict: 2, temperature: 0 });
    assert.equal(r.status, 200);
    assert.equal(r.body.content, first.body.content);
    assert.equal((await get(s, '/props')).body.is_sleeping, false);
  } finally {
    await s.close();
  }
});

test('serve: bad values of the new flags exit 2 naming the flag', () => {
  for (const [args, flag] of [
    [['--pooling', 'max'], '--pooling'],
    [['--sleep-idle-seconds', '0'], '--sleep-idle-seconds'],
    [['--seed', '-2'], '--seed'],
    [['--temp', 'hot'], '--temp'],
    [['-n', '-3'], '--n-predict'],
    [['--reasoning-budget', 'x'], '--reasoning-budget'],
    [['--cors', '*', '--no-cors'], '--no-cors'],
  ] as const) {
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'llama-ts.js'), 'serve', '-m', MODEL, ...args], {
      encoding: 'utf8',
    });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr.slice(0, 200)}`);
    assert.ok(r.stderr.includes(flag), r.stderr.slice(0, 200));
  }
});

describe('serve: the flags', () => {
  let p: ChildProcess;
  let url = '';
  let err = '';
  before(async () => {
    p = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'bin', 'llama-ts.js'),
        'serve',
        '-m',
        MODEL,
        '--port',
        '0',
        '-c',
        '512',
        '-np',
        '2',
        '--temp',
        '0.5',
        '--seed',
        '-1',
        '-n',
        '5',
        '--no-slots',
        '-a',
        'b,a',
        '--tags',
        'x,y',
        '--reasoning-budget',
        '-1',
        '--sleep-idle-seconds',
        '-1',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    p.stderr!.setEncoding('utf8');
    url = await new Promise<string>((resolve, reject) => {
      p.stderr!.on('data', (d: string) => {
        err += d;
        const m = /ready on (http:\/\/\S+)/.exec(err);
        if (m) resolve(m[1]!);
      });
      p.once('exit', (code) => reject(new Error(`serve exited ${code}: ${err}`)));
    });
  });
  after(() => {
    p?.kill('SIGKILL');
  });

  test('--temp, --seed -1, -n, --no-slots, -a, --tags, and llama-server’s CORS by default', async () => {
    const props = (await get(url, '/props')).body;
    assert.equal(props.default_generation_settings.params.temperature, 0.5);
    assert.equal(props.default_generation_settings.params.seed, -1);
    assert.equal(props.default_generation_settings.params.n_predict, 5);
    assert.equal((await get(url, '/slots')).status, 501);
    const m = (await get(url, '/models')).body;
    assert.equal(m.data[0].id, 'a');
    assert.deepEqual(m.data[0].tags, ['x', 'y']);
    const r = await fetch(`${url}/health`, { headers: { Origin: 'http://app.example' } });
    assert.equal(r.headers.get('access-control-allow-origin'), 'http://app.example');
  });
});
