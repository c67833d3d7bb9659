// The library on a model with recurrent layers (a generated tiny Qwen3.5: Gated DeltaNet +
// attention): a full context ends the generation (no shift: the state would still carry
// the dropped tokens), a repeated or extended prompt resumes at the checkpoint taken before
// the last prompt token (the state has moved on through the reply), a prompt that diverges
// is evaluated again, and a loaded session continues correctly; every reply is what a
// fresh context gives.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { type LlamaContext, loadModel } from '../src/index.js';

const PROMPT = 'Once upon a time there was a little dog';

describe('library on a hybrid (recurrent + attention) model', () => {
  let path: string;
  let ctx: LlamaContext;
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-api-recurrent-'));
  const fresh = async (prompt: string, n: number): Promise<string> => {
    const c = await loadModel({ model: path, n_threads: 1, n_ctx: 128 });
    try {
      return (await c.completion({ prompt, n_predict: n, temperature: 0 })).text;
    } finally {
      await c.release();
    }
  };
  before(async () => {
    path = ensureModel('tiny-qwen35', 'F32');
    ctx = await loadModel({ model: path, n_threads: 1, n_ctx: 128 });
  });
  after(async () => {
    await ctx.release();
    rmSync(dir, { recursive: true, force: true });
  });

  test('a full context ends the generation: no context shift', async () => {
    const small = await loadModel({ model: path, n_threads: 1, n_ctx: 32, ctx_shift: true });
    try {
      const r = await small.completion({ prompt: PROMPT, n_predict: 100, temperature: 0 });
      assert.equal(r.context_full, true);
      assert.equal(r.stopped_limit, true);
      assert.ok(r.tokens_evaluated + r.tokens_predicted <= 33, `${r.tokens_evaluated} + ${r.tokens_predicted}`);
    } finally {
      await small.release();
    }
  });

  test('prefix reuse through the recurrent state: checkpoints, divergence', async () => {
    const a = await ctx.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
    assert.equal(a.text, await fresh(PROMPT, 12));
    // the same prompt again: back to the checkpoint before its last token
    const b = await ctx.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
    assert.equal(b.text, a.text);
    assert.equal(b.tokens_cached, a.tokens_evaluated - 1);
    // a longer prompt sharing the first: the state is past it (the reply), so it resumes
    // at the same checkpoint
    const longer = `${PROMPT} and a cat`;
    const c = await ctx.completion({ prompt: longer, n_predict: 8, temperature: 0 });
    assert.equal(c.text, await fresh(longer, 8));
    assert.equal(c.tokens_cached, a.tokens_evaluated - 1);
    // a prompt that diverges before any checkpoint: evaluated again from the start
    const other = 'The cat sat';
    const d = await ctx.completion({ prompt: other, n_predict: 8, temperature: 0 });
    assert.equal(d.tokens_cached, 0);
    assert.equal(d.text, await fresh(other, 8));
  });

  test('a saved session loads and continues as a fresh context does', async () => {
    await ctx.completion({ prompt: PROMPT, n_predict: 6, temperature: 0 });
    const file = join(dir, 's.session');
    await ctx.saveSession(file);
    const other = await loadModel({ model: path, n_threads: 1, n_ctx: 128 });
    try {
      await other.loadSession(file);
      const r = await other.completion({ prompt: PROMPT, n_predict: 12, temperature: 0 });
      assert.equal(r.text, await fresh(PROMPT, 12));
    } finally {
      await other.release();
    }
  });
});
