// quantize -> dequantize on random data stays within each type's error bound.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { dequantize, quantize } from '../src/ggml/quants/index.js';
import { GGMLType, rowSize, traitsOf } from '../src/ggml/types.js';

/** Deterministic xorshift32 in [0, 1). */
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

/** Random rows with varied scales, plus an all-zero block, a constant block and one outlier. */
function sample(n: number, seed: number): Float32Array {
  const r = rng(seed);
  const x = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const scale = 10 ** ((Math.floor(i / 256) % 5) - 2); // 0.01 .. 100 by super-block
    x[i] = (r() * 2 - 1) * scale;
  }
  x.fill(0, 0, 256);
  x.fill(0.37, 256, 512);
  x[700] = 1000;
  return x;
}

// Largest error allowed for one element, from its block's values: half a step of the
// quantization grid (a full step where ggml clamps the extreme), plus the f16 rounding
// of the stored scale and offset.
type Bound = (blk: Float32Array) => number;
const amaxOf = (b: Float32Array): number => b.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
const rangeOf = (b: Float32Array): number => Math.max(...b) - Math.min(...b);
const F16_REL = 2 ** -11;

const CASES: readonly [GGMLType, Bound][] = [
  [GGMLType.Q4_0, (b) => (amaxOf(b) / 8) * (1 + 1e-3)],
  [GGMLType.Q5_0, (b) => (amaxOf(b) / 16) * (1 + 1e-3)],
  [GGMLType.Q4_1, (b) => (rangeOf(b) / 15) * 0.5 + (rangeOf(b) + amaxOf(b)) * F16_REL * 1.01],
  [GGMLType.Q5_1, (b) => (rangeOf(b) / 31) * 0.5 + (rangeOf(b) + amaxOf(b)) * F16_REL * 1.01],
  [GGMLType.Q8_0, (b) => (amaxOf(b) / 127) * 0.5 + amaxOf(b) * F16_REL * 1.01],
  [GGMLType.Q8_1, (b) => (amaxOf(b) / 127) * 0.5 + amaxOf(b) * F16_REL * 1.01],
  [GGMLType.Q8_K, (b) => (amaxOf(b) / 127) * 0.5 * (1 + 1e-5)],
  [GGMLType.F16, (b) => amaxOf(b) * F16_REL + 2 ** -25], // absolute half-unit below 2^-14 (subnormals)
  [GGMLType.BF16, (b) => amaxOf(b) * 2 ** -8],
  [GGMLType.F32, () => 0],
];

for (const [type, bound] of CASES) {
  const tr = traitsOf(type);
  test(`round trip ${tr.name}: error within bound`, () => {
    const n = 256 * 12;
    const x = sample(n, 0x9e3779b9 ^ type);
    const q = new Uint8Array(rowSize(type, n));
    quantize(type, x, q, n);
    const y = new Float32Array(n);
    dequantize(type, q, y, n);
    const bs = tr.blockSize;
    let sq = 0;
    for (let b = 0; b < n; b += bs) {
      const blk = x.subarray(b, b + bs);
      const lim = bound(blk);
      for (let i = b; i < b + bs; i++) {
        const e = Math.abs(y[i]! - x[i]!);
        sq += e * e;
        assert.ok(e <= lim, `${tr.name} [${i}]: x ${x[i]} y ${y[i]} err ${e} > ${lim}`);
      }
    }
    // zero block stays exactly zero; constant block comes back within f16 rounding
    for (let i = 0; i < 256; i++) assert.ok(y[i] === 0, `[${i}] = ${y[i]}`); // -0 allowed (d = -0 in ggml too)
    for (let i = 256; i < 512; i++) assert.ok(Math.abs(y[i]! - 0.37) <= 0.37 * 2 ** -8 + 0.37 / 254);
    assert.ok(Number.isFinite(sq));
  });
}
