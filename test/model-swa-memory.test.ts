// The sliding-window memory with real models (generated tiny-gemma3: window 8, five
// sliding-window layers to one full; tiny-gemma4: shared-KV layers; tiny-phi3: partial
// rotary; tiny-smollm3: NoPE layers), on the default device:
// - reusing a cached prefix (Context.reusablePrefix, then seqRm and decoding the rest)
//   gives the same greedy tokens as a fresh context, for prefixes shorter and longer than
//   the window, before and after the window's ring of cells wraps (after it, a short
//   prefix is no longer reusable and is evaluated again; with swaFull it stays reusable);
// - a context shift (seqAdd) re-rotates each layer's keys with that layer's RoPE (bases,
//   partial rotary, none for NoPE layers): tokens evaluated 100 positions on and shifted
//   back continue as the same tokens evaluated in place;
// - a sequence's saved state loads into another context (with another window-cache size)
//   and continues with the same tokens.
// Caches are F32 where logits are compared, so that what differs (cell order, a shift's
// rotation) shows above F16's rounding: an F16 V is summed in f16, in cell order (flash
// attention reads an F32 cache cast to F16, as llama.cpp does: the shift compares without it). Another
// order of the same cells changes sums by ~1e-7, which GELU's f16 table (ggml-cpu's) can
// turn into a step of one f16 unit: hence 1e-2 where cells are placed differently.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, type ContextParams, Model } from '../src/model/index.js';
import { argmax } from './helpers/arch-refs.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-swa-mem-'));
const models = new Map<string, Model>();

before(async () => {
  setLogCallback(() => {});
  for (const p of ['tiny-gemma3', 'tiny-gemma4', 'tiny-phi3', 'tiny-smollm3']) {
    const path = join(dir, `${p}.gguf`);
    generateModel(presetSpec(p, 'F32'), path);
    models.set(p, await Model.load(path));
  }
  setLogCallback(null);
});
after(() => {
  for (const m of models.values()) m.free();
  rmSync(dir, { recursive: true, force: true });
});

/** Deterministic token ids (avoiding 0-2: unk, bos, eos). */
function tokens(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 3 + (x % 500);
  });
}

/** Decodes `toks` in chunks of `chunk`, then `n` greedy tokens one at a time; returns them and the last logits. */
async function continueGreedy(
  ctx: Context,
  toks: number[],
  n: number,
  chunk = 64,
): Promise<{ ids: number[]; last: Float32Array }> {
  for (let i = 0; i < toks.length; i += chunk) await ctx.decode({ tokens: toks.slice(i, i + chunk) });
  const ids: number[] = [];
  let logits = ctx.getLogits(-1);
  for (let s = 0; s < n; s++) {
    const id = argmax(logits);
    ids.push(id);
    await ctx.decode({ tokens: [id] });
    logits = ctx.getLogits(-1);
  }
  return { ids, last: logits };
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function fresh(m: Model, p: ContextParams, toks: number[], n: number) {
  const ctx = new Context(m, p);
  try {
    return await continueGreedy(ctx, toks, n);
  } finally {
    ctx.free();
  }
}

for (const [label, historyLen, prefixLen, reusable, swaFull] of [
  ['short history, prefix shorter than the window', 30, 5, 5, false],
  ['short history, prefix longer than the window', 30, 20, 20, false],
  ['the ring has wrapped, prefix longer than the window', 400, 380, 380, false],
  ['the ring has wrapped, prefix shorter than the window: evaluated again', 400, 5, 0, false],
  ['the ring has wrapped, swaFull keeps the short prefix reusable', 400, 5, 5, true],
] as [string, number, number, number, boolean][]) {
  test(`tiny-gemma3 prefix reuse: ${label}`, async () => {
    const m = models.get('tiny-gemma3')!;
    const params: ContextParams = { nCtx: 1024, nUbatch: 64, swaFull, typeK: 'f32', typeV: 'f32' };
    const history = tokens(historyLen, 1);
    const next = [...history.slice(0, prefixLen), ...tokens(25, 2)];
    const ctx = new Context(m, params);
    try {
      if (historyLen > 256) assert.ok(ctx.memory?.caches[1].size === (swaFull ? 1024 : 256));
      await continueGreedy(ctx, history, 4);
      const n = ctx.reusablePrefix(0, prefixLen);
      assert.equal(n, reusable);
      ctx.seqRm(0, n, -1);
      const reused = await continueGreedy(ctx, next.slice(n), 8);
      const want = await fresh(m, params, next, 8);
      assert.deepEqual(reused.ids, want.ids);
      process.stdout.write(`# reused vs fresh, max |Δlogit| ${maxDiff(reused.last, want.last).toFixed(5)}\n`);
      assert.ok(maxDiff(reused.last, want.last) < 1e-2, `logits differ by ${maxDiff(reused.last, want.last)}`);
    } finally {
      ctx.free();
    }
  });
}

for (const name of ['tiny-gemma3', 'tiny-gemma4', 'tiny-phi3', 'tiny-smollm3']) {
  test(`${name}: a context shift re-rotates each layer's keys with its own RoPE`, async () => {
    const m = models.get(name)!;
    const toks = tokens(40, 3);
    // without flash attention, which reads an F32 cache cast to F16 (as llama.cpp does)
    const at = new Context(m, { nCtx: 256, typeK: 'f32', typeV: 'f32', flashAttn: false });
    const moved = new Context(m, { nCtx: 256, typeK: 'f32', typeV: 'f32', flashAttn: false });
    try {
      await at.decode({ tokens: toks });
      await moved.decode({ tokens: toks, pos: toks.map((_, i) => 100 + i) });
      assert.ok(moved.canShift);
      moved.seqAdd(0, 100, 140, -100);
      assert.equal(moved.seqPosMax(0), 39);
      const a = await continueGreedy(at, [], 6);
      const b = await continueGreedy(moved, [], 6);
      assert.deepEqual(b.ids, a.ids);
      process.stdout.write(`# ${name}: shifted vs in place, max |Δlogit| ${maxDiff(a.last, b.last).toFixed(5)}\n`);
      assert.ok(maxDiff(a.last, b.last) < 1e-2, `${name}: logits differ by ${maxDiff(a.last, b.last)}`);
    } finally {
      at.free();
      moved.free();
    }
  });
}

test('tiny-gemma3: a saved sequence loads into a context with a smaller window cache and continues alike', async () => {
  const m = models.get('tiny-gemma3')!;
  const history = tokens(400, 4);
  const a = new Context(m, { nCtx: 1024, nUbatch: 64, typeK: 'f32', typeV: 'f32' });
  const b = new Context(m, { nCtx: 1024, nUbatch: 8, typeK: 'f32', typeV: 'f32' });
  try {
    for (let i = 0; i < history.length; i += 64) await a.decode({ tokens: history.slice(i, i + 64) });
    const parts: Uint8Array[] = [];
    await a.memory!.stateWrite(0, async (x) => {
      parts.push(x.slice());
    });
    const all = Buffer.concat(parts);
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
    assert.equal(b.seqPosMax(0), 399);
    assert.equal(b.memory!.caches[1].size, 256);
    // the last token again for its logits, in both
    a.seqRm(0, 399, -1);
    b.seqRm(0, 399, -1);
    const x = await continueGreedy(a, history.slice(399), 8);
    const y = await continueGreedy(b, history.slice(399), 8);
    assert.deepEqual(y.ids, x.ids);
    process.stdout.write(`# saved and loaded vs continued, max |Δlogit| ${maxDiff(x.last, y.last).toFixed(5)}\n`);
    assert.ok(maxDiff(x.last, y.last) < 1e-2);
  } finally {
    a.free();
    b.free();
  }
});
