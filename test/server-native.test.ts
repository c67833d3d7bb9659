// llama-server's own endpoints, the fields its README documents, on loopback:
// /completion (and /completions) with n_predict, n_probs, return_tokens, cache_prompt,
// id_slot, several prompts, token-id and mixed prompts, streaming (data: lines, the last
// with stop: true, no [DONE]), its error for an over-long prompt; /apply-template; /props;
// GET /slots; POST /slots/:id?action=save|restore|erase (only with --slot-save-path, file
// names confined to it); /infill on a model with fill-in-the-middle tokens.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { GGUFValueType, openGGUF } from '../src/gguf/index.js';
import { GGUFWriter } from '../src/gguf/writer.js';
import { LlamaServer } from '../src/server/index.js';
import { API_KEY, clientModel, startServer } from './helpers/clients.js';

// biome-ignore lint/suspicious/noExplicitAny: response bodies
type Json = Record<string, any>;

let server: LlamaServer;
let plain: LlamaServer;
let fim: LlamaServer;
let dir: string;

const H = { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' };

async function post(s: LlamaServer, path: string, body: unknown): Promise<{ status: number; body: Json }> {
  const r = await fetch(`${s.url}${path}`, { method: 'POST', headers: H, body: JSON.stringify(body) });
  return { status: r.status, body: (await r.json()) as Json };
}
async function get(s: LlamaServer, path: string): Promise<Json> {
  const r = await fetch(`${s.url}${path}`, { headers: H });
  assert.equal(r.status, 200);
  return (await r.json()) as Json;
}
/** A streamed /completion: its data lines, parsed. */
async function stream(s: LlamaServer, body: unknown): Promise<{ events: Json[]; raw: string }> {
  const r = await fetch(`${s.url}/completion`, { method: 'POST', headers: H, body: JSON.stringify(body) });
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type')!, /text\/event-stream/);
  const raw = await r.text();
  const events = raw
    .split('\n\n')
    .filter((x) => x.trim() !== '')
    .map((x) => {
      assert.ok(x.startsWith('data: '), x);
      return JSON.parse(x.slice(6)) as Json;
    });
  return { events, raw };
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'llama-ts-slots-'));
  server = await startServer({ slotSavePath: dir, embeddings: false });
  plain = await startServer({ parallel: 2, nCtx: 2 * 1024, embeddings: false });
  // the tiny llama with three of its byte tokens named FIM_PRE / FIM_SUF / FIM_MID
  const w = GGUFWriter.fromFile(openGGUF(clientModel()), { withData: true });
  w.set('tokenizer.ggml.fim_pre_token_id', GGUFValueType.UINT32, 3);
  w.set('tokenizer.ggml.fim_suf_token_id', GGUFValueType.UINT32, 4);
  w.set('tokenizer.ggml.fim_mid_token_id', GGUFValueType.UINT32, 5);
  w.write(join(dir, 'fim.gguf'));
  fim = await LlamaServer.start({ model: join(dir, 'fim.gguf'), port: 0, parallel: 1, nCtx: 1024, apiKey: API_KEY });
});
after(async () => {
  await server?.close();
  await plain?.close();
  await fim?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('/completion', () => {
  const req = { prompt: 'Once upon a time', n_predict: 4, temperature: 0, ignore_eos: true };

  test("the response's fields; n_probs and return_tokens", async () => {
    const { status, body: r } = await post(server, '/completion', { ...req, n_probs: 2, return_tokens: true });
    assert.equal(status, 200);
    assert.equal(r.index, 0);
    assert.equal(r.stop, true);
    assert.equal(r.model, server.modelId);
    // llama-server's echo: the prompt's tokens as text, BOS included
    assert.equal(r.prompt, `<s> ${req.prompt}`);
    assert.equal(r.tokens_predicted, 4);
    assert.ok(r.tokens_evaluated > 3);
    assert.equal(r.stop_type, 'limit');
    assert.equal(r.stopping_word, '');
    assert.equal(r.truncated, false);
    assert.equal(r.has_new_line, r.content.includes('\n'));
    assert.ok(Number.isInteger(r.id_slot) && r.id_slot >= 0 && r.id_slot < 4);
    assert.equal(r.generation_settings.n_predict, 4);
    assert.equal(r.generation_settings.temperature, 0);
    assert.equal(r.generation_settings.n_ctx, server.nCtxSlot);
    for (const k of ['prompt_n', 'prompt_ms', 'predicted_n', 'predicted_ms', 'predicted_per_second']) {
      assert.equal(typeof r.timings[k], 'number', k);
    }
    assert.equal(r.timings.predicted_n, 4);
    // the tokens are the content's (their bytes make it up)
    assert.equal(r.tokens.length, 4);
    const bytes = r.completion_probabilities.flatMap((p: Json) => p.bytes);
    assert.equal(Buffer.from(bytes).toString('utf8'), r.content);
    // n_probs: the sampled token and the 2 most likely, as ids, text, bytes and log-probabilities
    assert.equal(r.completion_probabilities.length, 4);
    for (const [i, p] of r.completion_probabilities.entries()) {
      assert.equal(p.id, r.tokens[i]);
      assert.ok(p.logprob <= 0 && Array.isArray(p.bytes) && typeof p.token === 'string');
      assert.equal(p.top_logprobs.length, 2);
      assert.equal(p.top_logprobs[0].id, p.id, 'greedy: the sampled token is the most likely');
      assert.ok(p.top_logprobs[0].logprob >= p.top_logprobs[1].logprob);
    }
    // without return_tokens, no tokens (llama-server's empty list)
    const bare = await post(server, '/completion', req);
    assert.deepEqual(bare.body.tokens, []);
    assert.equal(bare.body.content, r.content);
    assert.equal(bare.body.completion_probabilities, undefined);
  });

  test('/completions is the same endpoint (not the OpenAI shape)', async () => {
    const a = await post(server, '/completion', req);
    const b = await post(server, '/completions', req);
    assert.equal(b.status, 200);
    assert.equal(b.body.content, a.body.content);
    assert.equal(b.body.object, undefined);
    assert.equal(b.body.choices, undefined);
  });

  test('cache_prompt reuses the prefix in the slot id_slot names', async () => {
    const prompt = 'A native request about a cached prompt, in slot 2.';
    const a = await post(server, '/completion', { ...req, prompt, id_slot: 2 });
    assert.equal(a.body.id_slot, 2);
    const b = await post(server, '/completion', { ...req, prompt, id_slot: 2 });
    assert.equal(b.body.id_slot, 2);
    assert.equal(b.body.tokens_cached, b.body.tokens_evaluated - 1);
    assert.equal(b.body.timings.cache_n, b.body.tokens_cached);
    assert.equal(b.body.timings.prompt_n, 1, 'only the last prompt token is evaluated again');
    const c = await post(server, '/completion', { ...req, prompt, id_slot: 2, cache_prompt: false });
    assert.equal(c.body.timings.prompt_n, c.body.tokens_evaluated, 'cache_prompt: false evaluates it all');
    assert.equal(c.body.content, a.body.content);
  });

  test('prompts as token ids, a mix, and several at once', async () => {
    const tok = await post(server, '/tokenize', { content: req.prompt, add_special: true });
    const ids = await post(server, '/completion', { ...req, prompt: tok.body.tokens });
    const text = await post(server, '/completion', req);
    assert.equal(ids.body.content, text.body.content);
    const mix = await post(server, '/completion', { ...req, prompt: ['Once upon', ...tok.body.tokens.slice(-1)] });
    assert.equal(mix.status, 200);
    const many = await post(server, '/completion', { ...req, prompt: [req.prompt, 'The end'] });
    assert.ok(Array.isArray(many.body));
    assert.deepEqual(
      many.body.map((x: Json) => x.index),
      [0, 1],
    );
    assert.equal(many.body[0].content, text.body.content);
  });

  test('streamed: data lines, the last with stop: true and the full result, no [DONE]', async () => {
    const whole = await post(server, '/completion', { ...req, return_tokens: true });
    const { events, raw } = await stream(server, { ...req, return_tokens: true, stream: true });
    assert.ok(!raw.includes('[DONE]'));
    const last = events.at(-1)!;
    assert.equal(last.stop, true);
    assert.equal(last.tokens_predicted, 4);
    assert.equal(last.stop_type, 'limit');
    const pieces = events.slice(0, -1);
    assert.ok(pieces.every((e) => e.stop === false));
    assert.equal(pieces.map((e) => e.content).join(''), whole.body.content);
    assert.deepEqual(
      pieces.flatMap((e) => e.tokens),
      whole.body.tokens,
    );
    // tokens_predicted counts the tokens so far (a piece may carry several: a character's bytes)
    const counts = pieces.map((e) => e.tokens_predicted);
    assert.ok(counts.every((n, i) => n === (i === 0 ? 0 : counts[i - 1]) + pieces[i]!.tokens.length));
    assert.equal(counts.at(-1), 4);
  });

  test('an over-long prompt: exceed_context_size_error with n_prompt_tokens and n_ctx', async () => {
    const r = await post(plain, '/completion', { prompt: 'word '.repeat(1500), n_predict: 1 });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.type, 'exceed_context_size_error');
    assert.match(r.body.error.message, /^request \(\d+ tokens\) exceeds the available context size \(\d+ tokens\)/);
    assert.equal(r.body.error.code, 400);
    assert.equal(r.body.error.n_ctx, plain.nCtxSlot);
    assert.ok(r.body.error.n_prompt_tokens > plain.nCtxSlot);
  });

  test('bad fields are 400s naming them', async () => {
    for (const [body, param] of [
      [{ n_predict: 1 }, 'prompt'],
      [{ prompt: [{}], n_predict: 1 }, 'prompt'],
      [{ prompt: 'x', n_probs: 101 }, 'n_probs'],
    ] as const) {
      const r = await post(server, '/completion', body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.equal(r.body.error.param, param);
    }
  });
});

test('/apply-template: the prompt the chat template makes', async () => {
  const messages = [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: 'Hi' },
  ];
  // the model has no template: llama.cpp's fallback, ChatML
  const r = await post(server, '/apply-template', { messages });
  assert.equal(r.status, 200);
  assert.equal(
    r.body.prompt,
    '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
  );
  const bad = await post(server, '/apply-template', { messages: 'x' });
  assert.equal(bad.status, 400);
});

test('/props: default generation settings, slots, template, special tokens, build', async () => {
  const p = await get(server, '/props');
  assert.equal(p.total_slots, 4);
  assert.equal(p.default_generation_settings.n_ctx, server.nCtxSlot);
  assert.equal(p.default_generation_settings.params.temperature, 0.8);
  assert.equal(p.default_generation_settings.params.top_k, 40);
  assert.equal(p.default_generation_settings.params.n_predict, -1);
  assert.equal(p.model_path, clientModel());
  assert.equal(p.bos_token, '<s>');
  assert.equal(p.eos_token, '</s>');
  assert.equal(typeof p.chat_template, 'string');
  assert.match(p.build_info, /^llama-ts /);
  assert.deepEqual(p.modalities, { vision: false, audio: false });
});

test('GET /slots: each slot, and the one a running request holds', async () => {
  const idle = await get(plain, '/slots');
  assert.equal(idle.length, 2);
  for (const [i, s] of idle.entries()) {
    assert.equal(s.id, i);
    assert.equal(s.n_ctx, plain.nCtxSlot);
    assert.equal(s.is_processing, false);
    // as llama-server: no params before a slot holds a request
    assert.equal('params' in s, false);
    assert.equal(s.next_token[0].has_next_token, false);
  }
  // a long request in slot 1, seen while it runs
  const ac = new AbortController();
  const running = fetch(`${plain.url}/completion`, {
    method: 'POST',
    headers: H,
    body: JSON.stringify({ prompt: 'Once', n_predict: 400, ignore_eos: true, id_slot: 1, stream: true }),
    signal: ac.signal,
  });
  const res = await running;
  const reader = res.body!.getReader();
  await reader.read(); // a first token: the request is in its slot
  const busy = await get(plain, '/slots');
  ac.abort();
  await reader.cancel().catch(() => {});
  assert.equal(busy[0].is_processing, false);
  assert.equal(busy[1].is_processing, true);
  assert.ok(busy[1].id_task >= 0);
  assert.equal(busy[1].params.top_k, 40);
  assert.ok(busy[1].next_token[0].n_decoded >= 1);
});

describe('slot actions', () => {
  test('off without --slot-save-path: 501', async () => {
    const r = await post(plain, '/slots/0?action=save', { filename: 'x.bin' });
    assert.equal(r.status, 501);
    assert.equal(r.body.error.type, 'not_supported_error');
  });

  test('save, erase, restore: the cache comes back (the next request reuses it)', async () => {
    const prompt = 'A story to keep in a file, slot 1.';
    const first = await post(server, '/completion', { prompt, n_predict: 2, temperature: 0, id_slot: 1 });
    const saved = await post(server, '/slots/1?action=save', { filename: 'story.bin' });
    assert.equal(saved.status, 200);
    assert.equal(saved.body.id_slot, 1);
    assert.equal(saved.body.filename, 'story.bin');
    assert.equal(saved.body.n_saved, first.body.tokens_evaluated + 1, 'the prompt and the first generated token');
    assert.equal(typeof saved.body.timings.save_ms, 'number');
    assert.ok(existsSync(join(dir, 'story.bin')));
    const erased = await post(server, '/slots/1?action=erase', {});
    assert.deepEqual(erased.body, { id_slot: 1, n_erased: saved.body.n_saved });
    const cold = await post(server, '/completion', { prompt, n_predict: 2, temperature: 0, id_slot: 1 });
    assert.equal(cold.body.tokens_cached, 0, 'erased: nothing to reuse');
    await post(server, '/slots/1?action=erase', {});
    const restored = await post(server, '/slots/1?action=restore', { filename: 'story.bin' });
    assert.equal(restored.status, 200);
    assert.equal(restored.body.n_restored, saved.body.n_saved);
    assert.equal(typeof restored.body.timings.restore_ms, 'number');
    const warm = await post(server, '/completion', { prompt, n_predict: 2, temperature: 0, id_slot: 1 });
    assert.equal(warm.body.tokens_cached, warm.body.tokens_evaluated - 1, 'restored: the prompt is reused');
    assert.equal(warm.body.content, first.body.content);
  });

  test('file names stay in the folder; bad slots and actions are 400s', async () => {
    for (const filename of ['../x.bin', 'a/b.bin', '.hidden', '..', '', 42]) {
      const r = await post(server, '/slots/0?action=save', { filename });
      assert.equal(r.status, 400, JSON.stringify(filename));
      assert.equal(r.body.error.param, 'filename');
    }
    assert.equal((await post(server, '/slots/9?action=erase', {})).status, 400);
    assert.equal((await post(server, '/slots/0?action=dance', {})).status, 400);
    const missing = await post(server, '/slots/0?action=restore', { filename: 'nothing.bin' });
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.param, 'filename');
    assert.match(missing.body.error.message, /nothing\.bin: cannot open/);
  });
});

describe('/infill', () => {
  test("the model's FIM tokens around the prefix and the suffix", async () => {
    const input_prefix = 'def add(a, b):\n    ';
    const input_suffix = '\n    return c\n';
    const r = await post(fim, '/infill', { input_prefix, input_suffix, n_predict: 3, temperature: 0 });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.tokens_predicted, 3);
    // BOS, FIM_PRE, the prefix, FIM_SUF, the suffix, FIM_MID (no FIM_REP / FIM_SEP in this vocabulary)
    const t = async (content: string) => (await post(fim, '/tokenize', { content })).body.tokens.length;
    assert.equal(r.body.tokens_evaluated, 1 + 1 + (await t(input_prefix)) + 1 + (await t(input_suffix)) + 1);
    // the prompt goes after the prefix; input_extra chunks before it all
    const more = await post(fim, '/infill', {
      input_prefix,
      input_suffix,
      prompt: 'c = ',
      input_extra: [{ filename: 'util.py', text: 'x = 1\n' }],
      n_predict: 1,
    });
    assert.equal(more.status, 200);
    assert.ok(more.body.tokens_evaluated > r.body.tokens_evaluated + 3);
  });

  test('a model without FIM tokens: a 400 naming input_prefix', async () => {
    const r = await post(server, '/infill', { input_prefix: 'a', input_suffix: 'b', n_predict: 1 });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.param, 'input_prefix');
    assert.match(r.body.error.message, /fill-in-the-middle/);
  });
});
