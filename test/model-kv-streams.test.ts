// KV cache streams (llama.cpp's non-unified cache, Context.setKvStreams): a sequence's
// logits have the same bits whichever region of the cache it uses and whatever the other
// sequences hold or decode beside it. Before streams, a sequence attended the cells
// [0, padded extent of the whole cache): its keys sat at other offsets on another slot,
// and once other sequences' cells passed 256 a decode step took the split-KV kernel
// (chunks of 256 keys by cell index) where a fresh slot took the row kernel.
// Runs on the default (CPU) device, whose kernels these are.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ensureModel } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import { tinyLlama } from './helpers/models.js';

let model: Model;
let gemma3: Model;
before(async () => {
  setLogCallback(() => {});
  model = await Model.load(tinyLlama());
  // sliding-window layers (window 8): the iSWA memory, a ring per stream
  gemma3 = await Model.load(ensureModel('tiny-gemma3', 'Q8_0'));
});
after(() => {
  model?.free();
  gemma3?.free();
  setLogCallback(null);
});

const toks = (n: number, k: number) => Array.from({ length: n }, (_, i) => ((i * 7 + k) % 200) + 3);

function newContext(m: Model = model): Context {
  const ctx = new Context(m, { nCtx: 2048, nBatch: 512, nUbatch: 512, nSeqMax: 4, nThreads: 2 });
  ctx.setKvStreams(4);
  return ctx;
}

/** Logits of the prompt's last token, then of 3 decode steps, as seq `seq` after `others` ran. */
async function run(ctx: Context, nPrompt: number, seq: number, others: [number, number][]): Promise<Float32Array[]> {
  for (const [s, n] of others) await ctx.decode({ tokens: toks(n, s + 11), seqIds: new Array(n).fill(s) });
  const out: Float32Array[] = [];
  await ctx.decode({ tokens: toks(nPrompt, 1), seqIds: new Array(nPrompt).fill(seq) });
  out.push(ctx.getLogits(nPrompt - 1).slice());
  for (let k = 0; k < 3; k++) {
    await ctx.decode({ tokens: [5 + k], seqIds: [seq] });
    out.push(ctx.getLogits(0).slice());
  }
  return out;
}

function sameBits(a: Float32Array[], b: Float32Array[], what: string): void {
  assert.equal(a.length, b.length);
  a.forEach((x, i) => {
    const d = x.findIndex((v, j) => !Object.is(v, b[i][j]));
    assert.equal(d, -1, `${what}: row ${i} differs at ${d}: ${x[d]} vs ${b[i][d]}`);
  });
}

test('a sequence gives the same bits in every stream, whatever the others hold', async () => {
  // 20 tokens: row kernel; 70: tiled; decode steps: row, or split-KV at 512+ attended cells
  for (const [m, n] of [
    [model, 20],
    [model, 70],
    [gemma3, 70],
  ] as const) {
    const fresh = newContext(m);
    const ref = await run(fresh, n, 0, []);
    fresh.free();
    const cases: [number, [number, number][]][] = [
      [1, [[0, 37]]],
      [1, [[0, 300]]],
      [
        3,
        [
          [0, 300],
          [2, 300],
          [1, 100],
        ],
      ],
      [
        2,
        [
          [0, 300],
          [1, 300],
          [3, 200],
        ],
      ],
    ];
    for (const [seq, others] of cases) {
      const ctx = newContext(m);
      sameBits(await run(ctx, n, seq, others), ref, `${n} tokens as seq ${seq} after ${JSON.stringify(others)}`);
      ctx.free();
    }
  }
});

// Batched with others, a sequence keeps its bits while the kernel choice is the same (here
// under 512 attended cells, fewer than 64 query rows); llama.cpp guarantees no more (a lone
// decode step at 512+ cells takes ggml-cpu's split-KV path, a batched one does not).
test('after a slot is cleared and refilled, and beside other sequences in one batch, the bits stay', async () => {
  const fresh = newContext();
  const ref = await run(fresh, 30, 0, []);
  fresh.free();
  const ctx = newContext();
  // traffic on every slot, then slot 2 cleared and reused
  for (let s = 0; s < 4; s++)
    await ctx.decode({ tokens: toks(200 + 10 * s, s), seqIds: new Array(200 + 10 * s).fill(s) });
  ctx.seqRm(2, -1, -1);
  // the prompt and decode steps of seq 2 batched with one token of each other sequence
  const prompt = toks(30, 1);
  await ctx.decode({
    tokens: [...prompt, 9, 9, 9],
    seqIds: [...new Array(30).fill(2), 0, 1, 3],
    logits: [...new Array(29).fill(false), true, true, true, true],
  });
  const got = [ctx.getLogits(29).slice()];
  for (let k = 0; k < 3; k++) {
    await ctx.decode({ tokens: [5 + k, 7, 7, 7], seqIds: [2, 0, 1, 3], logits: [true, true, true, true] });
    got.push(ctx.getLogits(0).slice());
  }
  ctx.free();
  sameBits(got, ref, 'seq 2 after traffic, batched with the others');
});

test('one stream (the default) is the shared cache: a sequence past 256 cells of others attends them all', async () => {
  // what made slots differ: documents that streams are what fixes it
  const a = new Context(model, { nCtx: 2048, nBatch: 512, nUbatch: 512, nSeqMax: 4, nThreads: 2 });
  const ref = await run(a, 20, 0, []);
  a.free();
  const b = new Context(model, { nCtx: 2048, nBatch: 512, nUbatch: 512, nSeqMax: 4, nThreads: 2 });
  const got = await run(b, 20, 1, [[0, 300]]);
  b.free();
  assert.ok(
    got.some((x, i) => x.some((v, j) => !Object.is(v, ref[i][j]))),
    'a shared cache was expected to change the bits',
  );
});

test('a sequence copied into another stream (n_cmpl) is copied there, and decodes as the original would', async () => {
  const fresh = newContext();
  const ref = await run(fresh, 40, 0, []);
  fresh.free();
  const ctx = newContext();
  await ctx.decode({ tokens: toks(250, 7), seqIds: new Array(250).fill(1) });
  await ctx.decode({ tokens: toks(40, 1), seqIds: new Array(40).fill(0) });
  ctx.seqCp(0, 3, -1, -1);
  ctx.seqRm(0, -1, -1);
  const got = [ref[0]];
  for (let k = 0; k < 3; k++) {
    await ctx.decode({ tokens: [5 + k], seqIds: [3] });
    got.push(ctx.getLogits(0).slice());
  }
  // sequence 0's region is empty again: a 512-cell region takes a 500-token prompt
  await ctx.decode({ tokens: toks(500, 2), seqIds: new Array(500).fill(0) });
  ctx.free();
  sameBits(got, ref, 'seq 3 copied from seq 0');
});
