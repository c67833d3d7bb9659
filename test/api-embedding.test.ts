// LlamaContext.embedding on generated models (llama.cpp's embeddings of ../shared's BERT
// fixtures are checked in shared-api.test.ts): pooled, L2-normalized vectors,
// embd_normalize with llama.cpp's meaning, and mean / last-token pooled embeddings of a
// generative model (whose context still generates).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { type LlamaContext, LlamaError, loadModel } from '../src/index.js';
import { tinyBert, tinyLlama } from './helpers/models.js';

const LLAMA = tinyLlama();

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let ab = 0;
  let aa = 0;
  let bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i]! * b[i]!;
    aa += a[i]! * a[i]!;
    bb += b[i]! * b[i]!;
  }
  return ab / Math.sqrt(aa * bb);
}

function norm(v: ArrayLike<number>, p = 2): number {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += Math.abs(v[i]!) ** p;
  return s ** (1 / p);
}

for (const type of ['F16', 'Q8_0'] as const) {
  describe(`a generated BERT (${type})`, () => {
    let ctx: LlamaContext;
    const texts = ['hello world', 'the cat sat on the mat', 'a'];
    before(async () => {
      ctx = await loadModel({ model: tinyBert(type), embedding: true, n_threads: 1 });
    });
    after(() => ctx?.release());

    test('pooled, L2-normalized; the same text gives the same vector, another text another', async () => {
      const seen: Float32Array[] = [];
      for (const t of texts) {
        const { embedding } = await ctx.embedding(t);
        assert.ok(embedding instanceof Float32Array);
        assert.equal(embedding.length, 64);
        assert.ok(Math.abs(norm(embedding) - 1) < 1e-5);
        assert.deepEqual((await ctx.embedding(t)).embedding, embedding);
        for (const o of seen) assert.ok(cosine(o, embedding) < 0.9999);
        seen.push(embedding);
      }
    });

    test('embd_normalize: -1 raw (llama.node 0.3.3), 0 max-abs, 1 taxicab, 2 L2, 3 p-norm', async () => {
      const text = texts[1]!;
      const raw = (await ctx.embedding(text, { embd_normalize: -1 })).embedding;
      const l2 = (await ctx.embedding(text)).embedding;
      const n = norm(raw);
      assert.ok(Math.abs(n - 1) > 1e-3, 'raw is not normalized');
      for (let i = 0; i < raw.length; i++) assert.ok(Math.abs(raw[i]! / n - l2[i]!) < 1e-6);
      const maxAbs = (await ctx.embedding(text, { embd_normalize: 0 })).embedding;
      assert.ok(Math.abs(Math.max(...maxAbs.map(Math.abs)) - 32760) < 0.01);
      assert.ok(Math.abs(norm((await ctx.embedding(text, { embd_normalize: 1 })).embedding, 1) - 1) < 1e-5);
      assert.ok(Math.abs(norm((await ctx.embedding(text, { embd_normalize: 3 })).embedding, 3) - 1) < 1e-5);
      await assert.rejects(ctx.embedding(text, { embd_normalize: -2 }), (e: unknown) => {
        assert.ok(e instanceof LlamaError && e.code === 'ERR_OPTION' && /embd_normalize/.test(e.message));
        return true;
      });
    });

    test('an embedding model does not generate; a text longer than the context is an error', async () => {
      await assert.rejects(ctx.completion({ prompt: 'hello' }), (e: unknown) => {
        assert.ok(e instanceof LlamaError && e.code === 'ERR_CONTEXT' && /embedding model/.test(e.message));
        return true;
      });
      await assert.rejects(ctx.embedding('word '.repeat(2000)), (e: unknown) => {
        assert.ok(e instanceof LlamaError && e.code === 'ERR_CONTEXT', String(e));
        return true;
      });
    });
  });
}

describe('a generative model', () => {
  test('mean-pooled by default, last-token with pooling_type; the context still generates', async () => {
    const mean = await loadModel({ model: LLAMA, embedding: true, n_threads: 1, n_ctx: 128 });
    const last = await loadModel({ model: LLAMA, embedding: true, pooling_type: 'last', n_threads: 1, n_ctx: 128 });
    try {
      const a = (await mean.embedding('Once upon a time')).embedding;
      const b = (await last.embedding('Once upon a time')).embedding;
      assert.equal(a.length, 64);
      assert.ok(Math.abs(norm(a) - 1) < 1e-5 && Math.abs(norm(b) - 1) < 1e-5);
      assert.ok(cosine(a, b) < 0.999, 'mean and last pooling differ');
      // same text, same vector; another text, another vector
      assert.deepEqual((await mean.embedding('Once upon a time')).embedding, a);
      assert.ok(cosine((await mean.embedding('The dog ran home')).embedding, a) < 0.999);
      const r = await mean.completion({ prompt: 'Once upon a time', n_predict: 4, temperature: 0 });
      assert.equal(r.tokens_predicted, 4);
    } finally {
      await mean.release();
      await last.release();
    }
  });
});
