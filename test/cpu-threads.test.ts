// Results bit-identical at any thread count, under repetition: generated llamas with every
// K/V head layout (multi-head, grouped, one K/V head) in float, legacy, K- and IQ quants,
// decoded on the CPU device at 2 and 3 threads many times and compared with 1 thread.
//
// Guards the race behind NaN logits on one-K/V-head models (issue 13): steps that share a
// phase run on different workers at once, and each node's scratch slots used to be spaced
// by the node's own need, so SET_ROWS of a narrow V row on worker 1 wrote into ROPE's
// cos/sin table on worker 0. Whether the two meet depends on timing, hence the repetitions;
// the first test checks the encoded job itself, which needs no luck.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { EXTRA_WORD, encodeGraph } from '../src/backends/cpu/encode.js';
import { CpuReg } from '../src/backends/cpu/index.js';
import { F_NO_BARRIER, F_SINGLE, KERNELS, STEP_WORDS } from '../src/backends/cpu/protocol.js';
import { tensorSet } from '../src/backends/index.js';
import { type FileTypeName, generateModel, presetSpec } from '../src/generator/index.js';
import { allocTensors, GraphAllocator } from '../src/ggml/alloc.js';
import { buildGraph } from '../src/ggml/graph.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';

const HEADS: [nHead: number, nHeadKv: number][] = [
  [8, 8],
  [8, 4],
  [8, 2],
  [8, 1],
  [16, 1],
];
const TYPES: FileTypeName[] = ['F32', 'Q4_0', 'Q6_K', 'Q5_K_M', 'IQ4_XS'];
const THREADS = [2, 3];
const RUNS = 50;
/** A prompt (logits of every token kept), then single-token decodes. */
const PROMPT = [1, 259, 292, 272, 260, 347, 417];
const STEPS = 2;

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-threads-'));
// a device of its own, so its pool is this test's
const reg = new CpuReg('CPU-threads');
const device = reg.addDevice({ name: 'CPU-threads', threads: Math.max(...THREADS) });
setLogCallback(() => {});
after(async () => {
  await device.close();
  setLogCallback(null);
  rmSync(dir, { recursive: true, force: true });
});

// The same bug without timing: in an encoded job, the scratch a step may use on a worker
// ([slot, slot + stride), as the kernels address it) is nobody else's in its phase.
test('steps that share a phase on different workers have disjoint scratch', () => {
  const buft = device.bufferType();
  // a layer's independent ROPE (8 heads of 64) and SET_ROWS (one 64-wide V row into the cache)
  const q = newTensor(GGMLType.F32, [64, 8, 1]).setName('q');
  const pos = newTensor(GGMLType.I32, [1]).setName('pos');
  const v = newTensor(GGMLType.F32, [64, 1]).setName('v');
  const idx = newTensor(GGMLType.I32, [1]).setName('idx');
  const cache = newTensor(GGMLType.F16, [64, 16]).setName('cache');
  const [cacheBuf] = allocTensors([cache], buft, 'any');
  const graph = buildGraph(ops.rope(q, pos, { nDims: 64, mode: 0, freqBase: 10000 }), ops.setRows(cache, v, idx));
  const alloc = new GraphAllocator([buft]);
  alloc.allocGraph(graph);
  tensorSet(idx, new Int32Array([3]));
  try {
    const { steps, nsteps } = encodeGraph(graph.nodes, 2, device.arenas);
    const mem = new Int32Array(device.arenas.arenas[0]!.memory.buffer);
    // per phase: [worker, first byte, end, kernel] of every step's scratch
    const phases: [number, number, number, string][][] = [[]];
    for (let i = 0; i < nsteps; i++) {
      const [, kernel, rec, flags] = steps.subarray(i * STEP_WORDS, i * STEP_WORDS + 4) as unknown as number[];
      const name = KERNELS[kernel!]!;
      const ex = (rec! >>> 2) + EXTRA_WORD; // the record's extras: scratch address, then stride (assembly/desc.ts)
      const [slot, stride] = name.startsWith('k_mm') ? [mem[ex + 3]!, mem[ex + 4]!] : [mem[ex]!, mem[ex + 1]!];
      assert.ok(stride > 0, `${name}: no scratch read from its record (the extras moved?)`);
      const workers = flags! & F_SINGLE ? [flags! >>> 8] : [0, 1];
      // a single step's record holds its worker's slot; a split step's workers add ith * stride
      for (const w of workers) {
        const lo = flags! & F_SINGLE ? slot : slot + w * stride;
        phases[phases.length - 1]!.push([w, lo, lo + stride, name]);
      }
      if ((flags! & F_NO_BARRIER) === 0 && i < nsteps - 1) phases.push([]);
    }
    const shared = phases.find((p) => new Set(p.map((x) => x[0])).size > 1);
    assert.ok(shared, 'ROPE and SET_ROWS share a phase on two workers');
    for (const p of phases) {
      for (const a of p) {
        for (const b of p) {
          if (a[0] < b[0] && a[1] < b[2] && b[1] < a[2]) {
            assert.fail(
              `worker ${a[0]}'s ${a[3]} scratch [${a[1]}, ${a[2]}) overlaps worker ${b[0]}'s ${b[3]} [${b[1]}, ${b[2]})`,
            );
          }
        }
      }
    }
  } finally {
    alloc.free();
    cacheBuf!.free();
  }
});

/**
 * KV cells: just the prompt and the steps, so every run writes the same cells (with more,
 * a run's tokens land after the last run's, and the order of the cells is the order keys
 * are summed in).
 */
const N_CTX = PROMPT.length + STEPS;

/**
 * `n` runs at one thread count, on two contexts: one decodes the prompt (every token's
 * logits), the other, holding the prompt, the steps after it. Each context keeps one graph
 * shape and the two do not alternate, so every run reuses its encoded job: the repetitions
 * stay cheap. Returns each run's rows, the prompt's first.
 */
async function runs(model: Model, nThreads: number, steps: number[], n: number): Promise<Float32Array[][]> {
  const prompt = new Context(model, { nCtx: N_CTX, nThreads });
  const gen = new Context(model, { nCtx: N_CTX, nThreads });
  try {
    const out: Float32Array[][] = [];
    for (let r = 0; r < n; r++) {
      prompt.clearMemory();
      await prompt.decode({ tokens: PROMPT, logits: PROMPT.map(() => true) });
      out.push(PROMPT.map((_, i) => prompt.getLogits(i).slice()));
    }
    await gen.decode({ tokens: PROMPT });
    for (let r = 0; r < n; r++) {
      gen.seqRm(0, PROMPT.length, -1);
      let pos = PROMPT.length;
      for (const t of steps) {
        await gen.decode({ tokens: [t], pos: [pos++] });
        out[r]!.push(gen.getLogits().slice());
      }
    }
    return out;
  } finally {
    prompt.free();
    gen.free();
  }
}

function argmax(v: Float32Array): number {
  let best = 0;
  for (let j = 1; j < v.length; j++) if (v[j]! > v[best]!) best = j;
  return best;
}

/** Index of the first element whose bits differ, or -1. */
function firstDiff(a: Float32Array, b: Float32Array): number {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  if (x.length !== y.length) return 0;
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return i;
  return -1;
}

for (const [nHead, nHeadKv] of HEADS) {
  for (const type of TYPES) {
    test(`n_head ${nHead}, n_head_kv ${nHeadKv}, ${type}: logits at ${THREADS.join(' and ')} threads match 1 thread, ${RUNS} runs each`, async () => {
      const path = join(dir, `h${nHead}-kv${nHeadKv}-${type}.gguf`);
      // 256 wide: K-quant and IQ4_XS rows are whole super-blocks (no fallback types);
      // heads of 32: ROPE's cos/sin table then reaches into the bytes where a narrow V row
      // used to land
      const shape = { nEmbd: 256, nFf: 256, nHead, nHeadKv, headDim: 32 };
      generateModel(presetSpec('tiny-llama', type, { shape }), path);
      const model = await Model.load(path, { devices: [device] });
      try {
        // the tokens: greedy at 1 thread
        const steps: number[] = [];
        for (let i = 0; i < STEPS; i++) {
          const rows = (await runs(model, 1, steps, 1))[0]!;
          steps.push(argmax(rows[rows.length - 1]!));
        }
        // what every run at 2 and 3 threads must reproduce bit for bit
        const ref = (await runs(model, 1, steps, 1))[0]!;
        for (const row of ref) assert.ok(row.every(Number.isFinite), 'the 1-thread logits are finite');
        for (const nThreads of THREADS) {
          const got = await runs(model, nThreads, steps, RUNS);
          for (let r = 0; r < RUNS; r++) {
            for (let k = 0; k < ref.length; k++) {
              const i = firstDiff(got[r]![k]!, ref[k]!);
              if (i >= 0) {
                assert.fail(
                  `${nThreads} threads, run ${r + 1}, logits row ${k}: element ${i} is ${got[r]![k]![i]}, 1 thread gave ${ref[k]![i]}`,
                );
              }
            }
          }
        }
      } finally {
        model.free();
      }
    });
  }
}
