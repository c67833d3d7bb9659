// Q8_0 weights against Q8_0 activations in ggml-cpu's x86 order (assembly/q8dot.ts): per
// block eight int32 lanes of four consecutive products, accumulated over the blocks by f32
// fused multiply-adds, the lanes added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
// The CPU device must give the bits of the reference device's emulation of it (vec-dot.ts,
// dotQ8_0x86) for every column count and row kind, with the multiply-add fused by the
// engine or computed in f64 (the fusedMadd flag) and either form of the 8-bit dot; the
// emulation's f32 rounding of a fused multiply-add is checked against exact integer
// arithmetic, on the cases where rounding through f64 first would go wrong.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FLAGS_AT } from '../src/backends/cpu/arena.js';
import { dotAddExact, engineFlags, FLAG_DOT_ADD, FLAG_FUSED_MADD } from '../src/backends/cpu/engine-flags.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { referenceGgmlCpuDevice } from '../src/backends/reference/index.js';
import { fmaF32 } from '../src/backends/reference/vec-dot.js';
import { weightProduct } from '../src/backends/testing/compute.js';
import { randomData } from '../src/backends/testing/op-harness.js';
import { f32ToF16 } from '../src/ggml/fp16.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

after(() => cpuDevice.close());

function setFlags(v: number): void {
  for (const a of cpuDevice.arenas.arenas) new Uint32Array(a.memory.buffer, FLAGS_AT, 1)[0] = v;
}

/** a·b + c rounded once to f32 (ties to even), in exact integer arithmetic. */
function exactFma(a: number, b: number, c: number): number {
  const S = 300; // every value here is an integer multiple of 2^-300
  const big = (x: number) => BigInt(x * 2 ** 150) * 2n ** 150n;
  const n = big(a) * BigInt(b) + big(c);
  if (n === 0n) return 0;
  const neg = n < 0n;
  const m = neg ? -n : n;
  const shift = m.toString(2).length - 24;
  if (shift <= 0) return (neg ? -1 : 1) * Number(m) * 2 ** -S;
  let q = m >> BigInt(shift);
  const rem = m - (q << BigInt(shift));
  const half = 1n << BigInt(shift - 1);
  if (rem > half || (rem === half && (q & 1n) === 1n)) q += 1n;
  return (neg ? -1 : 1) * Number(q) * 2 ** (shift - S);
}

test('fmaF32 rounds a fused multiply-add once, also where the f64 sum lands on an f32 halfway point', () => {
  // (2^24 - 1)(2^24 + 1) = 2^48 - 1: the sum is 2^-72 short of a halfway point, which f64 rounds onto
  const a = (2 ** 24 - 1) * 2 ** -72;
  const b = 2 ** 24 + 1;
  for (const c of [1, 1 + 2 ** -23, -1 - 2 ** -23, 3 * 2 ** 20 + 1]) {
    for (const [x, y] of [
      [a, b],
      [-a, b],
      [a * 2 ** 21, b],
    ]) {
      const want = exactFma(x, y, c);
      assert.equal(fmaF32(x, y, c), want, `${x}·${y} + ${c}`);
    }
  }
  assert.notEqual(
    Math.fround(a * b + (1 + 2 ** -23)),
    exactFma(a, b, 1 + 2 ** -23),
    'the case rounding twice gets wrong',
  );
  // and ordinary ones
  let s = 12345;
  const rnd = () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
  for (let i = 0; i < 20000; i++) {
    const x = Math.fround((rnd() - 0.5) * 2 ** (rnd() * 40 - 20));
    const y = Math.floor((rnd() - 0.5) * 130000);
    const c = Math.fround((rnd() - 0.5) * 2 ** (rnd() * 60 - 30));
    assert.equal(fmaF32(x, y, c), exactFma(x, y, c), `${x}·${y} + ${c}`);
  }
});

/** The flag words to try: the multiply-add fused (where it is) or in f64, each dot form. */
function flagSets(): number[] {
  const fused = cpuDevice.variant === 'relaxed' ? engineFlags() & FLAG_FUSED_MADD : 0;
  const dots = cpuDevice.variant === 'relaxed' && dotAddExact() ? [0, FLAG_DOT_ADD] : [0];
  const out: number[] = [];
  for (const f of fused ? [0, fused] : [0]) for (const d of dots) out.push(f | d);
  return out;
}

for (const K of [64, 1024]) {
  test(`cpu Q8_0 products have ggml-cpu's x86 bits (K=${K}, M=11, columns 1-13)`, async (t) => {
    const M = 11; // two groups of four interleaved rows and three plain rows
    const N = 13;
    const wdata = randomData(newTensor(GGMLType.Q8_0, [K, M]), 61);
    const data = randomData(newTensor(GGMLType.F32, [K, N]), 62) as Float32Array;
    const want = await weightProduct(referenceGgmlCpuDevice(), GGMLType.Q8_0, K, M, wdata, data, 0, N);
    t.diagnostic(`${cpuDevice.variant} build, flag words ${flagSets().join(', ')}`);
    try {
      for (const f of flagSets()) {
        setFlags(f);
        for (const [j0, n] of [
          [0, N],
          [0, 1],
          [3, 2],
          [5, 4],
          [9, 3],
        ]) {
          const got = await weightProduct(cpuDevice, GGMLType.Q8_0, K, M, wdata, data, j0, n);
          assert.deepEqual(got, want.subarray(j0 * M, (j0 + n) * M), `flags ${f}: columns ${j0}..${j0 + n - 1}`);
        }
      }
    } finally {
      setFlags(engineFlags());
    }
  });
}

test('cpu Q8_0 products round each multiply-add once where an f64 sum would land on an f32 halfway point', async () => {
  // two blocks, lane 0 only: block 0 leaves acc = 2047·2047·3 = 12570627 (odd, 24 bits);
  // block 1 adds (1661·2^-16)(1953·2^-15)·331 = (2^30 - 1)·2^-31 = 0.5 - 2^-31, whose f64
  // sum rounds onto the halfway point 12570627.5 (and then to even: 12570628, as the old
  // 4-lane multiply-then-add kernel did too); the fused multiply-add gives 12570627
  const K = 64;
  const M = 5; // a group of four interleaved rows and a plain row, all alike
  const w = new Uint8Array(34 * 2 * M);
  const x = new Float32Array(K);
  const f16 = (v: number) => f32ToF16(v);
  for (let m = 0; m < M; m++) {
    const p = 68 * m;
    w[p] = f16(2047) & 255;
    w[p + 1] = f16(2047) >> 8;
    w[p + 2] = 3;
    w[p + 34] = f16(1661 * 2 ** -16) & 255;
    w[p + 35] = f16(1661 * 2 ** -16) >> 8;
    w.set([127, 127, 77], p + 36);
  }
  // activations q·s with |q| = 127 in a lane the weights leave out, so the scale is s
  x[0] = 2047;
  x[28] = 127 * 2047;
  const s1 = 1953 * 2 ** -15;
  x.set([s1, s1, s1], 32);
  x[60] = 127 * s1;
  const acc = exactFma(2047 * 2047, 3, 0);
  const want = exactFma(1661 * 1953 * 2 ** -31, 331, acc);
  assert.equal(want, 12570627);
  assert.equal(Math.fround(1661 * 1953 * 2 ** -31 * 331 + acc), 12570628, 'rounding through f64 goes the other way');
  const data = new Float32Array(4 * K);
  for (let j = 0; j < 4; j++) data.set(x, j * K);
  const ref = await weightProduct(referenceGgmlCpuDevice(), GGMLType.Q8_0, K, M, w, data, 0, 1);
  assert.deepEqual(Array.from(ref), Array(M).fill(want), 'reference device');
  try {
    for (const f of flagSets()) {
      setFlags(f);
      for (const n of [1, 4]) {
        const got = await weightProduct(cpuDevice, GGMLType.Q8_0, K, M, w, data, 0, n);
        assert.deepEqual(Array.from(got), Array(M * n).fill(want), `flags ${f}, ${n} columns`);
      }
    }
  } finally {
    setFlags(engineFlags());
  }
});
