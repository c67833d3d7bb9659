// The server's slots are the library's units: a slot whose context fills shifts and goes
// on exactly as the library's completion() does with the same options (n_keep kept, half
// of the rest dropped), or ends with 'length' when shifting is off (--no-context-shift)
// or no max_tokens was given. The server handles a full context as llama-server does
// (llama_server_context: one cell kept free, so one token earlier than llama.node, and
// `truncated` after a shift or a full context; llama.cpp's tools/server/tests/unit/test_ctx_shift.py).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, loadModel } from '../src/index.js';
import { LlamaServer } from '../src/server/index.js';
import { tinyLlama } from './helpers/models.js';

const MODEL = tinyLlama();
const SLOT = 64;
const PROMPT = 'Once upon a time';

async function complete(server: LlamaServer, body: Record<string, unknown>) {
  const res = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ prompt: PROMPT, temperature: 0, ignore_eos: true, return_tokens: true, ...body }),
  });
  assert.equal(res.status, 200);
  // biome-ignore lint/suspicious/noExplicitAny: read by shape
  return (await res.json()) as any;
}

describe('a slot whose context fills', () => {
  let shifting: LlamaServer;
  let fixed: LlamaServer;
  let lib: LlamaContext;
  let libFixed: LlamaContext;
  before(async () => {
    // two slots of 64 tokens each; the library's contexts hold 64 tokens
    shifting = await LlamaServer.start({ model: MODEL, port: 0, parallel: 2, nCtx: 2 * SLOT, threads: 1 });
    fixed = await LlamaServer.start({
      model: MODEL,
      port: 0,
      parallel: 2,
      nCtx: 2 * SLOT,
      threads: 1,
      ctxShift: false,
    });
    lib = await loadModel({ model: MODEL, n_ctx: SLOT, n_threads: 1 });
    libFixed = await loadModel({ model: MODEL, n_ctx: SLOT, n_threads: 1, ctx_shift: false });
  });
  after(async () => {
    await shifting?.close();
    await fixed?.close();
    await lib?.release();
    await libFixed?.release();
  });

  test('it shifts and continues as the library does (greedy and sampled, n_keep 0 and 3)', async () => {
    for (const o of [{}, { n_keep: 3 }, { temperature: 0.8, seed: 5 }]) {
      const want = await lib.completion({
        prompt: PROMPT,
        temperature: 0,
        ignore_eos: true,
        return_tokens: true,
        n_predict: 150,
        llama_server_context: true,
        ...o,
      });
      assert.equal(want.tokens_predicted, 150, 'the library shifted past its 64 tokens');
      assert.equal(want.context_full, false);
      const got = await complete(shifting, { max_tokens: 150, ...o });
      assert.equal(got.choices[0].finish_reason, 'length');
      assert.equal(got.usage.completion_tokens, 150);
      assert.deepEqual(got.tokens, want.tokens, JSON.stringify(o));
      assert.equal(got.choices[0].text, want.text);
    }
  });

  test('without context shift (or without max_tokens) it ends when the context is full', async () => {
    const want = await libFixed.completion({
      prompt: PROMPT,
      temperature: 0,
      ignore_eos: true,
      n_predict: 150,
      return_tokens: true,
      llama_server_context: true,
    });
    assert.equal(want.context_full, true);
    const got = await complete(fixed, { max_tokens: 150 });
    assert.equal(got.choices[0].finish_reason, 'length');
    assert.deepEqual(got.tokens, want.tokens);
    // llama-server's count: prompt and reply fill the slot (llama.node's library: one more)
    assert.equal(got.usage.prompt_tokens + got.usage.completion_tokens, SLOT);
    // shifting on, but no max_tokens (n_predict -1): as the library, it stops at the full context
    const open = await complete(shifting, {});
    assert.equal(open.choices[0].finish_reason, 'length');
    assert.equal(open.usage.prompt_tokens + open.usage.completion_tokens, SLOT);
  });

  test("/completion's truncated: after a shift, and when the slot fills without one (llama-server's)", async () => {
    const native = async (server: LlamaServer, body: Record<string, unknown>) => {
      const res = await fetch(`${server.url}/completion`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: PROMPT, temperature: 0, ignore_eos: true, ...body }),
      });
      assert.equal(res.status, 200);
      // biome-ignore lint/suspicious/noExplicitAny: read by shape
      return (await res.json()) as any;
    };
    const short = await native(shifting, { n_predict: 8 });
    assert.equal(short.truncated, false);
    assert.equal(short.tokens_predicted, 8);
    const shifted = await native(shifting, { n_predict: 100 });
    assert.equal(shifted.tokens_predicted, 100);
    assert.equal(shifted.truncated, true, 'the context shifted');
    const full = await native(fixed, { n_predict: -1 });
    assert.equal(full.truncated, true, 'the slot filled');
    assert.equal(full.tokens_evaluated + full.tokens_predicted, SLOT);
  });
});
