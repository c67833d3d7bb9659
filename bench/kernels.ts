// CPU device kernel benchmark (prints figures and ratios; not a test):
// - memory read bandwidth (a wasm SIMD sum over 512 MiB) at 1 and 2 threads;
// - matrix-vector products (MXFP4 too, reported without a target), 4096x4096 and
//   2048x8192 (rows x cols), weights streamed from memory (enough copies to exceed the
//   caches, one graph of one product per copy), in GB/s of weight bytes at 1 and 2
//   threads, and as a ratio to the bandwidth of the same run;
// - matrix-matrix products, 512 x 4096 x 4096 (the prompt-processing shape), in
//   GFLOP/s-equivalent (2·M·N·K / time) at 2 threads;
// - few columns (2..16 activation rows: speculative verification, parallel slots) against
//   8960x1536 weights streamed from memory: CPU time per product over one column's, at 1
//   thread (same process; CPU time, so a shared machine's load matters less).
// Medians of several runs after a warm-up. `npm run bench:kernels -- --json` prints one
// JSON document instead. --no-fewcols skips the last part, --only-fewcols runs only it,
// --fewcols-n=1,2,4 sets its column counts, LLAMA_TS_BENCH_ROUNDS its rounds (9).

import { tensorSet } from '../src/backends/api.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import type { Backend } from '../src/backends/impl.js';
import { setBlockScales } from '../src/backends/testing/op-harness.js';
import { GraphAllocator } from '../src/ggml/alloc.js';
import { f32ToF16 } from '../src/ggml/fp16.js';
import { buildGraph } from '../src/ggml/graph.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor, type Tensor } from '../src/ggml/tensor.js';
import { GGMLType, rowSize, traitsOf } from '../src/ggml/types.js';

const json = process.argv.includes('--json');
// --types=Q4_0,Q8_0 (a subset), --no-matvec, --no-matmul, --threads=1 (matmul threads)
const only = process.argv
  .find((a) => a.startsWith('--types='))
  ?.slice(8)
  .split(',');
const want = (t: string) => !only || only.includes(t);
const mmThreads = Number(process.argv.find((a) => a.startsWith('--threads='))?.slice(10) ?? 2);
const say = (s: string) => {
  if (!json) console.log(s);
};

function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** f16 fields (byte offsets within a block) that must hold sane scales (IQ1_M: setBlockScales). */
const SCALES: Record<string, number[]> = {
  Q4_0: [0],
  Q8_0: [0],
  Q5_0: [0],
  Q4_K: [0, 2],
  Q6_K: [208],
  IQ2_XXS: [0],
  IQ2_XS: [0],
  IQ2_S: [0],
  IQ3_XXS: [0],
  IQ3_S: [0],
  IQ1_S: [0],
  TQ1_0: [52],
  TQ2_0: [64],
};

/** Plausible weight bytes for `rows` rows of K elements (finite floats, small scales). */
function weightBytes(type: number, K: number, rows: number): Uint8Array {
  const r = rng(42);
  const name = traitsOf(type).name;
  if (type === GGMLType.F32) {
    const f = new Float32Array(K * rows);
    for (let i = 0; i < f.length; i++) f[i] = r() * 2 - 1;
    return new Uint8Array(f.buffer);
  }
  if (type === GGMLType.F16) {
    const h = new Uint16Array(K * rows);
    for (let i = 0; i < h.length; i++) h[i] = f32ToF16(r() * 2 - 1);
    return new Uint8Array(h.buffer);
  }
  const bytes = new Uint8Array(rowSize(type, K) * rows);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (r() * 256) | 0;
  const ts = traitsOf(type).typeSize;
  if (type === GGMLType.IQ1_M) {
    setBlockScales(type, bytes, () => 0.001 + r() * 0.01);
    return bytes;
  }
  if (type === GGMLType.MXFP4) {
    // E8M0 exponent bytes: 2^-8 .. 2^-1
    for (let b = 0; b < bytes.length / ts; b++) bytes[b * ts] = 119 + ((r() * 8) | 0);
    return bytes;
  }
  for (let b = 0; b < bytes.length / ts; b++) {
    for (const off of SCALES[name]) {
      const h = f32ToF16(0.001 + r() * 0.01);
      bytes[b * ts + off] = h & 0xff;
      bytes[b * ts + off + 1] = h >> 8;
    }
  }
  return bytes;
}

/** Copies of a weight matrix placed in the device's weight buffers (the repacking type). */
function weights(type: number, K: number, M: number, minBytes: number): { ws: Tensor[]; bytes: number; free(): void } {
  const one = rowSize(type, K) * M;
  const copies = Math.max(1, Math.ceil(minBytes / one));
  const data = weightBytes(type, K, M);
  const ws: Tensor[] = [];
  const bufs: { free(): void }[] = [];
  for (let i = 0; i < copies; i++) {
    const w = newTensor(type, [K, M], `w${i}`);
    const b = cpuDevice.bufferType().alloc(one, 'weights');
    w.place(b, 0);
    b.initTensor(w);
    tensorSet(w, data);
    ws.push(w);
    bufs.push(b);
  }
  const free = () => {
    for (const b of bufs) b.free();
  };
  return { ws, bytes: one * copies, free };
}

/** Median seconds of `reps` evaluations of the products ws[i] x b (after one warm-up). */
async function timeProducts(backend: Backend, ws: Tensor[], N: number, reps: number): Promise<number> {
  const K = ws[0].ne[0];
  const b = newTensor(GGMLType.F32, [K, N], 'x');
  const outs = ws.map((w) => ops.mulMat(w, b));
  const graph = buildGraph(...outs);
  const alloc = new GraphAllocator([cpuDevice.bufferType()]);
  alloc.allocGraph(graph);
  const x = new Float32Array(K * N);
  const r = rng(7);
  for (let i = 0; i < x.length; i++) x[i] = r() * 2 - 1;
  tensorSet(b, x);
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i <= reps; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await backend.graphCompute(graph);
    const c = process.cpuUsage(c0);
    if (i > 0 || reps === 0) {
      times.push((performance.now() - t0) / 1000);
      cpu.push((c.user + c.system) / 1e6);
    }
  }
  alloc.free();
  // LLAMA_TS_BENCH_CPUTIME=1: seconds of CPU time over the threads instead (a loaded machine)
  return process.env.LLAMA_TS_BENCH_CPUTIME
    ? median(cpu) / ((backend as unknown as { threads: number }).threads ?? 1)
    : median(times);
}

async function bandwidth(nth: number): Promise<number> {
  const bytes = 512 * 2 ** 20;
  const buf = cpuDevice.hostBufferType().alloc(bytes) as unknown as {
    base: number;
    free(): void;
    hostBytes(): Uint8Array;
  };
  buf.hostBytes().fill(1);
  const out = buf.base;
  const times: number[] = [];
  for (let i = 0; i < 8; i++) {
    const t0 = performance.now();
    await cpuDevice.runKernel('k_read_bw', [buf.base, bytes, out], nth);
    if (i > 0) times.push((performance.now() - t0) / 1000);
  }
  buf.free();
  return bytes / median(times) / 1e9;
}

const IQ = ['IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ3_XXS', 'IQ3_S', 'IQ1_S', 'IQ1_M', 'TQ1_0', 'TQ2_0'] as const;
const MATVEC_TYPES = ['F32', 'F16', 'Q8_0', 'Q4_0', 'Q5_0', 'Q4_K', 'Q6_K', 'MXFP4', ...IQ] as const;
const MATMUL_TYPES = ['F32', 'F16', 'Q8_0', 'Q4_0', 'Q5_0', 'Q4_K', 'Q6_K', 'MXFP4', ...IQ] as const;
const TARGETS: Record<string, number> = {
  Q4_0: 0.65,
  Q8_0: 0.75,
  Q4_K: 0.5,
  Q6_K: 0.5,
  ...Object.fromEntries(IQ.map((t) => [t, 0.4])),
};

const result = {
  bandwidth_gbs: {} as Record<string, number>,
  matvec: [] as { type: string; rows: number; cols: number; threads: number; gbs: number; ratio: number }[],
  matmul: [] as { type: string; m: number; n: number; k: number; threads: number; gflops: number }[],
  fewcols: [] as { type: string; rows: number; cols: number; n: number; cpuMs: number; ratio: number }[],
};
const onlyFew = process.argv.includes('--only-fewcols');

say(`cpu device: ${cpuDevice.description}, ${cpuDevice.variant} SIMD kernels`);
cpuDevice.workers(2);
for (const nth of [1, 2]) result.bandwidth_gbs[nth] = await bandwidth(nth);
say(
  `read bandwidth: ${result.bandwidth_gbs[1].toFixed(1)} GB/s (1 thread), ${result.bandwidth_gbs[2].toFixed(1)} GB/s (2 threads)`,
);

say('\nmatrix-vector (weights streamed from memory), GB/s of weights and ratio to read bandwidth');
say('type   rows x cols   1 thread        2 threads       target (2 threads)');
for (const name of process.argv.includes('--no-matvec') || onlyFew ? [] : MATVEC_TYPES.filter(want)) {
  for (const [M, K] of [
    [4096, 4096],
    [2048, 8192],
  ]) {
    const type = GGMLType[name];
    const w = weights(type, K, M, 384 * 2 ** 20);
    const cells: string[] = [];
    for (const nth of [1, 2]) {
      const s = await timeProducts(cpuDevice.initBackend(`threads=${nth}`), w.ws, 1, 7);
      const gbs = w.bytes / s / 1e9;
      const ratio = gbs / result.bandwidth_gbs[nth];
      result.matvec.push({ type: name, rows: M, cols: K, threads: nth, gbs, ratio });
      cells.push(`${gbs.toFixed(1).padStart(5)} (${ratio.toFixed(2)}x)`);
    }
    w.free();
    const target = TARGETS[name] ? `>= ${TARGETS[name]}x` : 'reported';
    say(`${name.padEnd(6)} ${`${M}x${K}`.padEnd(13)} ${cells[0].padEnd(15)} ${cells[1].padEnd(15)} ${target}`);
  }
}

say(`\nmatrix-matrix 512 x 4096 x 4096 (N x M x K), ${mmThreads} threads, GFLOP/s-equivalent`);
for (const name of process.argv.includes('--no-matmul') || onlyFew ? [] : MATMUL_TYPES.filter(want)) {
  const type = GGMLType[name];
  const [M, K, N] = [4096, 4096, 512];
  const w = weights(type, K, M, 0);
  const s = await timeProducts(cpuDevice.initBackend(`threads=${mmThreads}`), w.ws, N, 3);
  w.free();
  const gflops = (2 * M * N * K) / s / 1e9;
  result.matmul.push({ type: name, m: N, n: M, k: K, threads: mmThreads, gflops });
  say(
    `${name.padEnd(6)} ${gflops.toFixed(1).padStart(7)} GFLOP/s  (${(s * 1000).toFixed(0)} ms)${name === 'F32' || name === 'F16' ? '' : '   orientation >= 170'}`,
  );
}

/**
 * CPU seconds per evaluation of the products ws[i] x b for each column count in ns: the
 * graphs evaluated in turn, round after round (a shared machine's load drifts over all of
 * them alike), the least of the rounds after a warm-up one (other processes only ever add
 * to a product's CPU time).
 */
async function cpuProducts(backend: Backend, ws: Tensor[], ns: number[], rounds: number): Promise<number[]> {
  const K = ws[0].ne[0];
  const runs = ns.map((N) => {
    const b = newTensor(GGMLType.F32, [K, N], 'x');
    const graph = buildGraph(...ws.map((w) => ops.mulMat(w, b)));
    const alloc = new GraphAllocator([cpuDevice.bufferType()]);
    alloc.allocGraph(graph);
    const x = new Float32Array(K * N);
    const r = rng(7);
    for (let i = 0; i < x.length; i++) x[i] = r() * 2 - 1;
    tensorSet(b, x);
    return { graph, alloc, cpu: [] as number[] };
  });
  for (let i = 0; i <= rounds; i++) {
    for (const run of runs) {
      const c0 = process.cpuUsage();
      await backend.graphCompute(run.graph);
      const c = process.cpuUsage(c0);
      if (i > 0) run.cpu.push((c.user + c.system) / 1e6);
    }
  }
  for (const run of runs) run.alloc.free();
  return runs.map((run) => Math.min(...run.cpu));
}

const FEWCOLS_TYPES = ['Q4_0', 'Q8_0', 'Q4_K', 'Q6_K'] as const;
// --fewcols-n=1,2,4 (column counts; the first is the base of the ratios)
const FEWCOLS_N = (process.argv.find((a) => a.startsWith('--fewcols-n='))?.slice(12) ?? '1,2,3,4,5,8,12,16')
  .split(',')
  .map(Number);
if (!process.argv.includes('--no-fewcols')) {
  say(
    `\nfew columns, 8960x1536 weights streamed from memory, 1 thread: CPU time of an N-column product over N=${FEWCOLS_N[0]}'s`,
  );
  say(`type   ${FEWCOLS_N.map((n) => `N=${n}`.padStart(6)).join(' ')}   (CPU ms per matrix, N=${FEWCOLS_N.join('/')})`);
  const backend = cpuDevice.initBackend('threads=1');
  for (const name of FEWCOLS_TYPES.filter(want)) {
    const [M, K] = [8960, 1536];
    const w = weights(GGMLType[name], K, M, 256 * 2 ** 20);
    const secs = await cpuProducts(backend, w.ws, FEWCOLS_N, Number(process.env.LLAMA_TS_BENCH_ROUNDS) || 9);
    const base = secs[0];
    const cells = FEWCOLS_N.map((n, i) => {
      result.fewcols.push({ type: name, rows: M, cols: K, n, cpuMs: secs[i] * 1000, ratio: secs[i] / base });
      return (secs[i] / base).toFixed(2).padStart(6);
    });
    w.free();
    const ms = secs.map((x) => ((x * 1000) / w.ws.length).toFixed(2)).join('/');
    say(`${name.padEnd(6)} ${cells.join(' ')}   (${ms})`);
  }
}

if (json) console.log(JSON.stringify(result));
await cpuDevice.close();
