// gpt-oss on the sliding-window memory (generated tiny-gpt-oss: window 8 on even layers,
// attention sinks, YaRN), F32 weights and caches (read by flash attention, which the sinks
// need, cast to F16 as llama.cpp does: another order of the same cells can move the one-row
// kernel's f16 V sum by an f16 unit, ~1.5e-3 in the logits here, hence 5e-3):
// - the sliding layer gets llama.cpp's iSWA ring (pad256(W + n_ubatch) = 256 cells at a
//   1,024 context), swa_full a full-size one;
// - at a 600-token context, greedy decoding runs the full layer's attention as the split-KV
//   case (one token against 512+ keys: key chunks merged, the sink joining once) and the
//   sliding layer's over the ring (one-row kernel, cells wrapped): the same tokens and
//   logits as with swa_full, as on the exact reference kernels (double precision, no
//   chunks: with a sink counted once per chunk, the greedy tokens already differ), and the
//   same bits at 1 and 3 threads;
// - a context shift re-rotates keys with YaRN's RoPE (a pure rotation): tokens evaluated
//   100 positions on and shifted back continue as the same tokens evaluated in place.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CpuReg } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, type ContextParams, Model } from '../src/model/index.js';
import { argmax } from './helpers/arch-refs.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-gpt-oss-swa-'));
const path = join(dir, 'tiny-gpt-oss-F32.gguf');
const cpus = [1, 3].map((n) => new CpuReg(`CPU-oss-${n}`).addDevice({ name: `CPU-oss-${n}`, threads: n }));
const models = new Map<string, Model>();

before(async () => {
  generateModel(presetSpec('tiny-gpt-oss', 'F32'), path);
  setLogCallback(() => {});
  for (const d of cpus) models.set(d.name, await Model.load(path, { devices: [d] }));
  models.set('reference', await Model.load(path, { devices: [referenceDevice as Device] }));
  setLogCallback(null);
});
after(async () => {
  for (const m of models.values()) m.free();
  await Promise.all(cpus.map((d) => d.close()));
  rmSync(dir, { recursive: true, force: true });
});

/** Deterministic token ids (avoiding 0-2). */
function tokens(n: number, seed: number): number[] {
  let x = seed;
  return Array.from({ length: n }, () => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return 3 + (x % 500);
  });
}

/** Decodes `toks` in chunks of 64, then `n` greedy tokens one at a time: their ids and every step's logits. */
async function greedy(ctx: Context, toks: number[], n: number): Promise<{ ids: number[]; logits: Float32Array[] }> {
  for (let i = 0; i < toks.length; i += 64) await ctx.decode({ tokens: toks.slice(i, i + 64) });
  const ids: number[] = [];
  const logits = [ctx.getLogits(-1).slice()];
  for (let s = 0; s < n; s++) {
    ids.push(argmax(logits[s]));
    await ctx.decode({ tokens: [ids[s]] });
    logits.push(ctx.getLogits(-1).slice());
  }
  return { ids, logits };
}

async function run(model: string, p: ContextParams, toks: number[], n: number, check?: (ctx: Context) => void) {
  const ctx = new Context(models.get(model)!, p);
  try {
    check?.(ctx);
    return await greedy(ctx, toks, n);
  } finally {
    ctx.free();
  }
}

function maxDiff(a: Float32Array[], b: Float32Array[]): number {
  let m = 0;
  a.forEach((x, s) => {
    for (let i = 0; i < x.length; i++) m = Math.max(m, Math.abs(x[i] - b[s][i]));
  });
  return m;
}

const params = (swaFull: boolean): ContextParams => ({ nCtx: 1024, nUbatch: 64, swaFull, typeK: 'f32', typeV: 'f32' });

test('tiny-gpt-oss at 600 tokens: ring and swa_full caches, 1 and 3 threads, the exact reference agree', async () => {
  const history = tokens(600, 1);
  const ring = await run('CPU-oss-1', params(false), history, 8, (ctx) => {
    assert.equal(ctx.memory?.caches.length, 2);
    assert.equal(ctx.memory?.caches[1].size, 256);
  });
  const ring3 = await run('CPU-oss-3', params(false), history, 8);
  const full = await run('CPU-oss-1', params(true), history, 8, (ctx) => {
    assert.equal(ctx.memory?.caches[1].size, 1024);
  });
  const exact = await run('reference', params(false), history, 8);
  ring.logits.forEach((l, s) => {
    assert.deepEqual(ring3.logits[s], l, `3 threads differ at step ${s}`);
  });
  assert.deepEqual(full.ids, ring.ids);
  assert.deepEqual(exact.ids, ring.ids);
  const dFull = maxDiff(ring.logits, full.logits);
  const dExact = maxDiff(ring.logits, exact.logits);
  const spread = Math.max(...ring.logits[0]) - Math.min(...ring.logits[0]);
  process.stdout.write(
    `# logits spread ${spread.toFixed(3)}; ring vs swa_full max |Δlogit| ${dFull.toExponential(2)}; vs exact reference ${dExact.toExponential(2)}\n`,
  );
  assert.ok(dFull < 5e-3, `ring vs swa_full: ${dFull}`);
  assert.ok(dExact < 5e-3, `vs the exact reference: ${dExact}`);
});

test("tiny-gpt-oss: a context shift re-rotates keys with YaRN's RoPE", async () => {
  const m = models.get('CPU-oss-1')!;
  const toks = tokens(40, 3);
  const at = new Context(m, { nCtx: 256, typeK: 'f32', typeV: 'f32' });
  const moved = new Context(m, { nCtx: 256, typeK: 'f32', typeV: 'f32' });
  try {
    await at.decode({ tokens: toks });
    await moved.decode({ tokens: toks, pos: toks.map((_, i) => 100 + i) });
    assert.ok(moved.canShift);
    moved.seqAdd(0, 100, 140, -100);
    assert.equal(moved.seqPosMax(0), 39);
    const a = await greedy(at, [], 6);
    const b = await greedy(moved, [], 6);
    assert.deepEqual(b.ids, a.ids);
    const d = maxDiff(a.logits, b.logits);
    process.stdout.write(`# shifted vs in place, max |Δlogit| ${d.toExponential(2)}\n`);
    assert.ok(d < 5e-3, `logits differ by ${d}`);
  } finally {
    at.free();
    moved.free();
  }
});
