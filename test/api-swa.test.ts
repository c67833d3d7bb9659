// Sliding-window models through the generation loop (loadModel → completion), on a
// generated tiny Gemma 3 (window 8, 5 of 6 layers sliding): a completion that reuses a
// cached prefix gives the same tokens as a fresh context, for prefixes shorter and longer
// than the window, before and after the window's ring of cells has wrapped (then the
// prefix cannot be reused: the memory says so and the prompt is evaluated again); context
// shift with the window; swa_full; a session saved and loaded; parallel slots (a ring
// sized for n_parallel sequences, rebuilt larger by parallel.enable). EmbeddingGemma
// through embedding(), against llama.cpp's vectors (test/refs/swa).
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { type LlamaContext, loadModel } from '../src/index.js';
import { REPO_ROOT } from './helpers/shared.js';

const MODEL = ensureModel('tiny-gemma3', 'Q8_0');
const W = 8;
/** n_ctx 1024, n_ubatch 32: the sliding-window ring has pad256(8 + 32) = 256 cells. */
const OPTS = { model: MODEL, n_ctx: 1024, n_batch: 64, n_ubatch: 32, n_threads: 2 } as const;

/** Deterministic token ids (no control tokens: 10..499), after BOS. */
function ids(bos: number, n: number, seed: number): number[] {
  let s = seed >>> 0 || 1;
  const out = [bos];
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    out.push(10 + (s % 490));
  }
  return out;
}

async function greedy(ctx: LlamaContext, prompt: number[], n = 12) {
  return ctx.completion({ prompt, n_predict: n, temperature: 0, return_tokens: true, ignore_eos: true });
}

describe('sliding-window model through the generation loop', () => {
  let ctx: LlamaContext;
  let fresh: LlamaContext;
  let bos = 2;
  before(async () => {
    ctx = await loadModel(OPTS);
    fresh = await loadModel(OPTS);
    bos = (await ctx.tokenize('a')).tokens[0] ?? bos;
  });
  after(async () => {
    await ctx?.release();
    await fresh?.release();
  });

  /** `first` in ctx, then `second`: its tokens equal a fresh context's; returns tokens_cached. */
  async function reuse(first: number[], second: number[]): Promise<number> {
    await greedy(ctx, first);
    const got = await greedy(ctx, second);
    const want = await greedy(fresh, second);
    // the fresh context must not reuse anything: clear it by a prompt sharing nothing
    await greedy(fresh, ids(bos, 3, 999), 1);
    assert.deepEqual(got.tokens, want.tokens, 'tokens after reusing the cache = a fresh context');
    assert.equal(got.text, want.text);
    return got.tokens_cached;
  }

  test(`a prefix shorter than the window (${W}) is reused, tokens as a fresh context`, async () => {
    const p = ids(bos, 5, 1); // BOS + 5
    const cached = await reuse([...p, ...ids(bos, 30, 2).slice(1)], [...p, ...ids(bos, 10, 3).slice(1)]);
    assert.equal(cached, p.length);
  });

  test('a prefix longer than the window, ring not wrapped: reused', async () => {
    const p = ids(bos, 40, 4);
    const cached = await reuse([...p, ...ids(bos, 20, 5).slice(1)], [...p, ...ids(bos, 10, 6).slice(1)]);
    assert.equal(cached, p.length);
  });

  test('a long prefix after the ring wrapped, its window still held: reused', async () => {
    // 300 prompt tokens + 12 generated: the ring (256 cells) holds positions ≥ 56, and the
    // window before position 290 is among them
    const p = ids(bos, 290, 7);
    const cached = await reuse([...p, ...ids(bos, 10, 8).slice(1)], [...p, ...ids(bos, 10, 9).slice(1)]);
    assert.equal(cached, p.length);
  });

  test('a prefix whose window the ring has overwritten: evaluated again, same tokens', async () => {
    // 40 shared tokens, then 400 more: positions 32..39 left the ring long ago
    const p = ids(bos, 40, 10);
    const cached = await reuse([...p, ...ids(bos, 400, 11).slice(1)], [...p, ...ids(bos, 10, 12).slice(1)]);
    assert.equal(cached, 0);
  });

  test('the same prompt twice: all but the last token from the cache', async () => {
    const p = ids(bos, 60, 13);
    await greedy(ctx, p);
    const r = await greedy(ctx, p);
    assert.equal(r.tokens_cached, p.length - 1);
  });

  test('context shift through the window: generation goes on past n_ctx', async () => {
    const small = await loadModel({ ...OPTS, n_ctx: 64 });
    try {
      const r = await small.completion({
        prompt: ids(bos, 20, 14),
        n_predict: 120,
        temperature: 0,
        ignore_eos: true,
        n_keep: 4,
      });
      assert.equal(r.tokens_predicted, 120);
      assert.equal(r.context_full, false);
    } finally {
      await small.release();
    }
  });

  test('swa_full: the same tokens, and a prefix stays reusable after any history', async () => {
    const full = await loadModel({ ...OPTS, swa_full: true });
    try {
      const p = ids(bos, 40, 10);
      await greedy(full, [...p, ...ids(bos, 400, 11).slice(1)]);
      const r = await greedy(full, [...p, ...ids(bos, 10, 12).slice(1)]);
      assert.equal(r.tokens_cached, p.length);
      const want = await greedy(fresh, [...p, ...ids(bos, 10, 12).slice(1)]);
      assert.deepEqual(r.tokens, want.tokens);
    } finally {
      await full.release();
    }
  });

  test('a session saved and loaded continues as the original', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llama-ts-swa-'));
    try {
      const p = ids(bos, 300, 15);
      await greedy(ctx, p, 4);
      const file = join(dir, 'session.bin');
      await ctx.saveSession(file);
      const other = await loadModel(OPTS);
      try {
        await other.loadSession(file);
        const q = [...p, ...ids(bos, 6, 16).slice(1)];
        const a = await greedy(ctx, q);
        const b = await greedy(other, q);
        assert.deepEqual(b.tokens, a.tokens);
        assert.ok(b.tokens_cached > 0, `tokens_cached ${b.tokens_cached}`);
      } finally {
        await other.release();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('sliding-window model, parallel slots', () => {
  test('parallel.enable beyond n_parallel rebuilds the ring; 3 slots give each sequential greedy result', async () => {
    // window 128: loaded for one sequence the ring has pad256(128 + 32) = 256 cells, too few
    // for three sequences of ~130 tokens inside their windows; enable(3) makes it 512
    const wide = ensureModel('tiny-gemma3', 'Q8_0', undefined, { shape: { slidingWindow: 128 } });
    const ctx = await loadModel({ ...OPTS, model: wide, n_ctx: 3 * 256 });
    try {
      const bos = (await ctx.tokenize('a')).tokens[0] ?? 2;
      const prompts = [ids(bos, 100, 21), ids(bos, 110, 22), ids(bos, 120, 23)];
      const want: unknown[] = [];
      for (const p of prompts) want.push((await greedy(ctx, p, 20)).tokens);
      await ctx.parallel.enable({ n_parallel: 3 });
      const reqs = await Promise.all(
        prompts.map((prompt) =>
          ctx.parallel.completion({ prompt, n_predict: 20, temperature: 0, ignore_eos: true, return_tokens: true }),
        ),
      );
      const got = await Promise.all(reqs.map((r) => r.promise));
      got.forEach((g, i) => {
        assert.deepEqual(g.tokens, want[i], `slot ${i}`);
      });
    } finally {
      await ctx.release();
    }
  });
});

test("EmbeddingGemma through embedding(): llama.cpp's vectors (cosine > 0.9999)", async () => {
  const ref = JSON.parse(readFileSync(join(REPO_ROOT, 'test/refs/swa/tiny-gemma-embedding-Q8_0.ref.json'), 'utf8')) as {
    cases: { prompt: string; embedding: number[] }[];
  };
  const ctx = await loadModel({ model: ensureModel('tiny-gemma-embedding', 'Q8_0'), embedding: true, n_threads: 2 });
  try {
    for (const c of ref.cases) {
      const got = (await ctx.embedding(c.prompt)).embedding;
      let dot = 0;
      let na = 0;
      let nb = 0;
      for (let i = 0; i < got.length; i++) {
        dot += got[i] * c.embedding[i];
        na += got[i] * got[i];
        nb += c.embedding[i] * c.embedding[i];
      }
      const cos = dot / Math.sqrt(na * nb);
      assert.ok(cos > 0.9999, `'${c.prompt.slice(0, 20)}…': cosine ${cos}`);
    }
  } finally {
    await ctx.release();
  }
});
