// The recurrent memory's promises, on the hybrid fixtures of ../shared/fixtures/archs/:
// - prompt processing in ubatches of 512, 64 and 7 tokens gives the logits of one decode
//   per token (max |Δ| ≤ 1e-4 on F32 files, with an F32 KV cache and without flash
//   attention: flash attention reads K/V as F16 (an F32 cache cast, as llama.cpp does), and
//   its kernels differ by row count (tiled with f32 V sums for many query rows, one row at
//   a time with V summed in f16 for few, as ggml-cpu does), which alone moves logits by
//   ~0.01; the recurrent blocks add nothing measurable);
// - a forked sequence (seqCp), a prefix restored from a checkpoint and a session saved
//   mid-generation each continue with exactly the tokens an uninterrupted run produces;
// - what a state cannot do is refused before anything changes: dropping a tail without a
//   checkpoint, a batch at a position the state has passed, shifting positions;
// each at 1, 2 and 3 threads, with the same bits at every thread count.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { modelIdentity } from '../src/api/info.js';
import { loadSession, saveSession } from '../src/api/session.js';
import { CpuReg } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, type ContextParams, Model } from '../src/model/index.js';
import { argmax, sameBits } from './helpers/arch-refs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

// one CPU device per thread count (each its own worker pool)
const cpus = [1, 2, 3].map((n) =>
  new CpuReg(`CPU-recurrent-mem-${n}`).addDevice({ name: `CPU-recurrent-mem-${n}`, threads: n }),
);
after(async () => {
  await Promise.all(cpus.map((d) => d.close()));
});

const ARCHS = ['qwen35', 'qwen35moe', 'lfm2', 'granitehybrid'];
const PROMPT = 'Lily and Ben were friends. One day, they went to the park to play with a big red ball.';

/** A long text for prompts spanning several ubatches. */
function longText(words: number): string {
  const vocab = ['the', 'little', 'dog', 'ran', 'to', 'park', 'and', 'Lily', 'saw', 'a', 'big', 'red', 'ball', 'happy'];
  let s = 'Once upon a time';
  let x = 12345;
  for (let i = 0; i < words; i++) {
    x = (x * 1103515245 + 12345) >>> 0;
    s += ` ${vocab[x % vocab.length]}`;
  }
  return s;
}

async function load(arch: string, cpu: Device): Promise<Model> {
  setLogCallback(() => {});
  try {
    return await Model.load(sharedPath(`fixtures/archs/${arch}-F32.gguf`)!, { devices: [cpu] });
  } finally {
    setLogCallback(null);
  }
}

/**
 * Greedy continuation of `seq` for n tokens from `logits`, one decode per token; each
 * step's logits go to `seen` when given.
 */
async function greedy(
  ctx: Context,
  logits: Float32Array,
  n: number,
  seq = 0,
  seen?: Float32Array[],
): Promise<number[]> {
  const out: number[] = [];
  let l = logits;
  for (let i = 0; i < n; i++) {
    seen?.push(l.slice());
    const id = argmax(l);
    out.push(id);
    if (i + 1 < n) {
      await ctx.decode({ tokens: [id], seqIds: [seq] });
      l = ctx.getLogits(-1);
    }
  }
  return out;
}

function skipFor(arch: string): string | false {
  return sharedPath(`fixtures/archs/${arch}-F32.gguf`) ? false : missingShared(`fixtures/archs/${arch}-F32.gguf`);
}

/** Every prompt token's logits, the prompt decoded `step` tokens at a time. */
async function promptLogits(
  model: Model,
  tokens: number[],
  params: ContextParams,
  step: number,
): Promise<Float32Array[]> {
  const ctx = new Context(model, { nCtx: 1024, nBatch: 512, typeK: 'f32', typeV: 'f32', flashAttn: false, ...params });
  try {
    const rows: Float32Array[] = [];
    for (let i = 0; i < tokens.length; i += step) {
      const chunk = tokens.slice(i, i + step);
      await ctx.decode({ tokens: chunk, logits: chunk.map(() => true) });
      for (let j = 0; j < chunk.length; j++) rows.push(ctx.getLogits(j));
    }
    return rows;
  } finally {
    ctx.free();
  }
}

/**
 * An uninterrupted greedy run, then the same run after going back to a checkpoint, as a
 * fork evaluated beside sequence 0, and through a session saved mid-generation: each must
 * give the uninterrupted run's tokens. Returns the uninterrupted run's logits per step.
 */
async function continuity(model: Model, dir: string): Promise<Float32Array[]> {
  const prompt = model.vocab.encode(PROMPT, { addSpecial: true, parseSpecial: false });
  const n = prompt.length;
  const N = 16;
  const steps: Float32Array[] = [];
  const ctx = new Context(model, { nCtx: 256, nSeqMax: 2 });
  try {
    // uninterrupted
    await ctx.decode({ tokens: prompt });
    const want = await greedy(ctx, ctx.getLogits(-1), N, 0, steps);
    // the state stands after the prompt and N - 1 fed-back tokens: all of that is kept
    assert.equal(ctx.reusablePrefix(0, n + N + 5), n + N - 1);

    // a checkpoint was taken before the prompt's last token: back to it, and on again
    assert.equal(ctx.reusablePrefix(0, n - 1), n - 1);
    assert.equal(ctx.reusablePrefix(0, n - 2), 0, 'no checkpoint two tokens back');
    ctx.seqRm(0, n - 1, -1);
    assert.equal(ctx.seqPosMax(0), n - 2);
    await ctx.decode({ tokens: [prompt[n - 1]] });
    assert.deepEqual(await greedy(ctx, ctx.getLogits(-1), N), want, 'after restoring the checkpoint');

    // a fork: both sequences continue as one would alone, evaluated in one batch
    ctx.clearMemory();
    await ctx.decode({ tokens: prompt });
    const first = ctx.getLogits(-1);
    ctx.seqCp(0, 1);
    assert.equal(ctx.seqPosMax(1), n - 1);
    const got: number[][] = [[], []];
    let logits = [first, first];
    for (let i = 0; i < N; i++) {
      const ids = logits.map(argmax);
      got[0].push(ids[0]);
      got[1].push(ids[1]);
      if (i + 1 === N) break;
      await ctx.decode({ tokens: ids, seqIds: [0, 1], logits: [true, true] });
      logits = [ctx.getLogits(0), ctx.getLogits(1)];
    }
    assert.deepEqual(got[0], want, 'sequence 0 after the fork');
    assert.deepEqual(got[1], want, 'the forked sequence 1');

    // a session saved mid-generation: the state after prompt + 5 tokens, the 6th sampled
    ctx.clearMemory();
    await ctx.decode({ tokens: prompt });
    const head = await greedy(ctx, ctx.getLogits(-1), 6);
    const saved = [...prompt, ...head.slice(0, 5)];
    const file = join(dir, `mid-${model.hp.arch}.session`);
    const identity = modelIdentity(openGGUF(model.path), model);
    await saveSession(file, ctx, saved, identity);
    const ctx2 = new Context(model, { nCtx: 256 });
    try {
      const tokens = await loadSession(file, ctx2, identity);
      assert.deepEqual(tokens, saved);
      await ctx2.decode({ tokens: [head[5]] });
      const rest = await greedy(ctx2, ctx2.getLogits(-1), N - 6);
      assert.deepEqual([...head, ...rest], want, 'after loading the session');
    } finally {
      ctx2.free();
    }
  } finally {
    ctx.free();
  }
  return steps;
}

/** What a state cannot do is refused, and the state is untouched; returns the logits seen. */
async function refusals(model: Model): Promise<Float32Array[]> {
  const ctx = new Context(model, { nCtx: 256, checkpoints: 2 });
  try {
    const prompt = model.vocab.encode(PROMPT, { addSpecial: true, parseSpecial: false });
    const n = prompt.length;
    await ctx.decode({ tokens: prompt });
    const logits = ctx.getLogits(-1).slice();
    assert.equal(ctx.canShift, false);
    assert.throws(() => ctx.seqRm(0, 3, -1), /cannot go back to position 3/);
    assert.throws(() => ctx.seqRm(0, 2, 4), /cannot drop positions 2..3/);
    assert.throws(() => ctx.seqAdd(0, 1, -1, -1), /cannot be shifted/);
    await assert.rejects(ctx.decode({ tokens: [5], pos: [3] }), /recurrent state is at position/);
    assert.equal(ctx.seqPosMax(0), n - 1, 'the state is untouched');
    // the state is where it was: the next token's logits are those of a fresh run
    await ctx.decode({ tokens: [argmax(logits)] });
    const next = ctx.getLogits(-1).slice();
    ctx.clearMemory();
    await ctx.decode({ tokens: [...prompt, argmax(logits)] });
    assert.deepEqual(Array.from(ctx.getLogits(-1)), Array.from(next));
    // removing everything always works; checkpoints are bounded
    ctx.seqRm(0, 0, -1);
    assert.equal(ctx.seqPosMax(0), -1);
    return [logits, next];
  } finally {
    ctx.free();
  }
}

/** Runs `fn` on the model loaded on each thread count's device; their results hold the same bits. */
async function atEachThreadCount(arch: string, fn: (model: Model, threads: number) => Promise<Float32Array[]>) {
  const runs: Float32Array[][] = [];
  for (const [i, cpu] of cpus.entries()) {
    const model = await load(arch, cpu);
    try {
      runs.push(await fn(model, i + 1));
    } finally {
      model.free();
    }
  }
  for (let t = 1; t < runs.length; t++)
    assert.ok(sameBits(runs[t], runs[0]), `${arch}: ${t + 1} threads differ from 1`);
}

for (const arch of ARCHS) {
  test(`${arch}: prompt processing in ubatches of 512, 64 and 7 agrees with one decode per token, at 1, 2 and 3 threads`, {
    skip: skipFor(arch),
  }, async () => {
    let one: Float32Array[] = [];
    const lines: string[] = [];
    let n = 0;
    await atEachThreadCount(arch, async (model, threads) => {
      const tokens = model.vocab.encode(longText(700), { addSpecial: true, parseSpecial: false });
      assert.ok(tokens.length > 600, `${tokens.length} tokens`);
      n = tokens.length;
      // one token per decode once (the slowest run), on 1 thread; the thread counts agree below
      if (threads === 1) one = await promptLogits(model, tokens, { nUbatch: 1 }, 1);
      const all: Float32Array[] = [];
      for (const u of [512, 64, 7]) {
        const rows = await promptLogits(model, tokens, { nUbatch: u }, 512);
        let worst = 0;
        rows.forEach((r, t) => {
          for (let i = 0; i < r.length; i++) worst = Math.max(worst, Math.abs(r[i] - one[t][i]));
        });
        assert.ok(
          worst <= 1e-4,
          `${arch}: ubatch ${u}, ${threads} threads: max |Δlogit| ${worst} against one token per decode`,
        );
        if (threads === 1) lines.push(`ubatch ${u}: max |Δ| ${worst.toExponential(2)}`);
        all.push(...rows);
      }
      return all;
    });
    process.stdout.write(`# ${arch} F32, ${n} tokens: ${lines.join(', ')}; same bits at 1, 2 and 3 threads\n`);
  });

  test(`${arch}: a fork, a checkpoint-restored prefix and a saved session continue as an uninterrupted run, at 1, 2 and 3 threads`, {
    skip: skipFor(arch),
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llama-ts-recurrent-'));
    try {
      await atEachThreadCount(arch, (model) => continuity(model, dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(`${arch}: what a recurrent state cannot do is refused, and nothing changes, at 1, 2 and 3 threads`, {
    skip: skipFor(arch),
  }, async () => {
    await atEachThreadCount(arch, (model) => refusals(model));
  });
}
