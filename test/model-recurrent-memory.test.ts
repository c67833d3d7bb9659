// The recurrent memory's promises, on the hybrid fixtures of ../shared/fixtures/archs/:
// - prompt processing in ubatches of 512, 64 and 7 tokens gives the logits of one decode
//   per token (max |Δ| ≤ 1e-4 on F32 files, with an F32 KV cache: with an F16 cache the
//   attention kernels themselves differ by row count (tiled with f32 V sums for many query
//   rows, one row at a time with V summed in f16 for few, as ggml-cpu does), which alone
//   moves logits by ~0.01; the recurrent blocks add nothing measurable);
// - a forked sequence (seqCp), a prefix restored from a checkpoint and a session saved
//   mid-generation each continue with exactly the tokens an uninterrupted run produces;
// - what a state cannot do is refused before anything changes: dropping a tail without a
//   checkpoint, a batch at a position the state has passed, shifting positions.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { modelIdentity } from '../src/api/info.js';
import { loadSession, saveSession } from '../src/api/session.js';
import { CpuReg } from '../src/backends/cpu/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, type ContextParams, Model } from '../src/model/index.js';
import { argmax } from './helpers/arch-refs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const cpu = new CpuReg('CPU-recurrent-mem').addDevice({ name: 'CPU-recurrent-mem', threads: 2 });
after(async () => {
  await cpu.close();
});

const ARCHS = ['qwen35', 'lfm2', 'granitehybrid'];
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

async function load(arch: string): Promise<Model> {
  setLogCallback(() => {});
  try {
    return await Model.load(sharedPath(`fixtures/archs/${arch}-F32.gguf`)!, { devices: [cpu] });
  } finally {
    setLogCallback(null);
  }
}

/** Greedy continuation of `seq` for n tokens from `logits`, one decode per token. */
async function greedy(ctx: Context, logits: Float32Array, n: number, seq = 0): Promise<number[]> {
  const out: number[] = [];
  let l = logits;
  for (let i = 0; i < n; i++) {
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

for (const arch of ARCHS) {
  test(`${arch}: prompt processing in ubatches of 512, 64 and 7 agrees with one decode per token`, {
    skip: skipFor(arch),
  }, async () => {
    const model = await load(arch);
    try {
      const tokens = model.vocab.encode(longText(700), { addSpecial: true, parseSpecial: false });
      assert.ok(tokens.length > 600, `${tokens.length} tokens`);
      const all = (params: ContextParams, step: number) =>
        (async () => {
          const ctx = new Context(model, { nCtx: 1024, nBatch: 512, typeK: 'f32', typeV: 'f32', ...params });
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
        })();
      const one = await all({ nUbatch: 1 }, 1);
      const lines: string[] = [];
      for (const u of [512, 64, 7]) {
        const rows = await all({ nUbatch: u }, 512);
        let worst = 0;
        rows.forEach((r, t) => {
          for (let i = 0; i < r.length; i++) worst = Math.max(worst, Math.abs(r[i] - one[t][i]));
        });
        assert.ok(worst <= 1e-4, `${arch}: ubatch ${u}: max |Δlogit| ${worst} against one token per decode`);
        lines.push(`ubatch ${u}: max |Δ| ${worst.toExponential(2)}`);
      }
      process.stdout.write(`# ${arch} F32, ${tokens.length} tokens: ${lines.join(', ')}\n`);
    } finally {
      model.free();
    }
  });

  test(`${arch}: a fork, a checkpoint-restored prefix and a saved session continue as an uninterrupted run`, {
    skip: skipFor(arch),
  }, async () => {
    const model = await load(arch);
    const dir = mkdtempSync(join(tmpdir(), 'llama-ts-recurrent-'));
    try {
      const prompt = model.vocab.encode(PROMPT, { addSpecial: true, parseSpecial: false });
      const n = prompt.length;
      const N = 16;
      // uninterrupted
      const ctx = new Context(model, { nCtx: 256, nSeqMax: 2 });
      await ctx.decode({ tokens: prompt });
      const want = await greedy(ctx, ctx.getLogits(-1), N);
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
      const file = join(dir, 'mid.session');
      const identity = modelIdentity(openGGUF(model.path), model);
      await saveSession(file, ctx, saved, identity);
      ctx.free();
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
      rmSync(dir, { recursive: true, force: true });
      model.free();
    }
  });

  test(`${arch}: what a recurrent state cannot do is refused, and nothing changes`, {
    skip: skipFor(arch),
  }, async () => {
    const model = await load(arch);
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
    } finally {
      ctx.free();
      model.free();
    }
  });
}
