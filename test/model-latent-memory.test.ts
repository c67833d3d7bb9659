// DeepSeek-2's latent cache on the memory layer (generated tiny-deepseek2, F32 weights and
// cache): one row per token holds [latent | rope part] and V is a view of its leading
// part, so the cache is K-only in bytes and in saved states; a context shift re-rotates
// only the rope part (after the latent); a saved sequence loads into another context and
// continues with the same tokens.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import { argmax } from './helpers/arch-refs.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-latent-'));
let model: Model;

before(async () => {
  const path = join(dir, 'tiny-deepseek2-F32.gguf');
  generateModel(presetSpec('tiny-deepseek2', 'F32'), path);
  setLogCallback(() => {});
  model = await Model.load(path);
  setLogCallback(null);
});
after(() => {
  model?.free();
  rmSync(dir, { recursive: true, force: true });
});

function tokens(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 3 + (x % 500);
  });
}

async function greedy(ctx: Context, n: number): Promise<{ ids: number[]; last: Float32Array }> {
  const ids: number[] = [];
  let logits = ctx.getLogits(-1).slice();
  for (let s = 0; s < n; s++) {
    ids.push(argmax(logits));
    await ctx.decode({ tokens: [ids[s]] });
    logits = ctx.getLogits(-1).slice();
  }
  return { ids, last: logits };
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test('tiny-deepseek2: the latent cache holds K rows only', () => {
  const ctx = new Context(model, { nCtx: 128, typeK: 'f32', typeV: 'f32' });
  try {
    const hp = model.hp;
    // [kv_lora_rank | rope dims] f32 per token and layer, one KV head
    assert.equal(ctx.memory!.bytes, hp.nLayer * 128 * hp.nEmbdHeadK * 4);
  } finally {
    ctx.free();
  }
});

test("tiny-deepseek2: a context shift re-rotates the keys' rope part only", async () => {
  const toks = tokens(40, 3);
  const at = new Context(model, { nCtx: 256, typeK: 'f32', typeV: 'f32' });
  const moved = new Context(model, { nCtx: 256, typeK: 'f32', typeV: 'f32' });
  try {
    await at.decode({ tokens: toks });
    await moved.decode({ tokens: toks, pos: toks.map((_, i) => 100 + i) });
    moved.seqAdd(0, 100, 140, -100);
    const a = await greedy(at, 6);
    const b = await greedy(moved, 6);
    assert.deepEqual(b.ids, a.ids);
    const d = maxDiff(a.last, b.last);
    process.stdout.write(`# shifted vs in place, max |Δlogit| ${d.toExponential(2)}\n`);
    assert.ok(d < 1e-3, `logits differ by ${d}`);
  } finally {
    at.free();
    moved.free();
  }
});

test('tiny-deepseek2: a saved sequence (K rows only) loads into another context and continues alike', async () => {
  const history = tokens(50, 4);
  const a = new Context(model, { nCtx: 256, typeK: 'f32', typeV: 'f32' });
  const b = new Context(model, { nCtx: 256, typeK: 'f32', typeV: 'f32' });
  try {
    await a.decode({ tokens: history });
    const parts: Uint8Array[] = [];
    await a.memory!.stateWrite(0, async (x) => {
      parts.push(x.slice());
    });
    const all = Buffer.concat(parts);
    // cell metadata aside, the state is one K row per token and layer
    const rows = 50 * model.hp.nLayer * model.hp.nEmbdHeadK * 4;
    assert.ok(all.length >= rows && all.length < rows + 4096, `state of ${all.length} bytes for ${rows} of K rows`);
    let at = 0;
    await b.memory!.stateRead(
      0,
      async (n) => {
        const x = all.subarray(at, at + n);
        at += n;
        return new Uint8Array(x);
      },
      a.memory!.stateCells(0),
    );
    assert.equal(at, all.length);
    assert.equal(b.seqPosMax(0), 49);
    a.seqRm(0, 49, -1);
    b.seqRm(0, 49, -1);
    await a.decode({ tokens: history.slice(49) });
    await b.decode({ tokens: history.slice(49) });
    const x = await greedy(a, 6);
    const y = await greedy(b, 6);
    assert.deepEqual(y.ids, x.ids);
    assert.deepEqual(y.last, x.last);
  } finally {
    a.free();
    b.free();
  }
});
