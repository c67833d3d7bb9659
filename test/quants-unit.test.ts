import assert from 'node:assert/strict';
import { test } from 'node:test';
import { bf16ToF32, f16Table, f16ToF32, f32ToBF16, f32ToF16 } from '../src/ggml/fp16.js';
import { nearestInt, roundf } from '../src/ggml/quants/codec.js';
import { canDequantize, canQuantize, canQuantizeRows, dequantize, quantize } from '../src/ggml/quants/index.js';
import { GGMLType, QK_K, rowSize } from '../src/ggml/types.js';

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const fromBits = (b: number): number => {
  u32[0] = b;
  return f32[0]!;
};

test('f16: exact values, limits, subnormals, signed zero, inf, NaN', () => {
  assert.equal(f32ToF16(1), 0x3c00);
  assert.equal(f32ToF16(-2), 0xc000);
  assert.equal(f32ToF16(0.5), 0x3800);
  assert.equal(f32ToF16(65504), 0x7bff);
  assert.equal(f16ToF32(0x7bff), 65504);
  assert.equal(f32ToF16(-65504), 0xfbff);
  // 65519.99 rounds down to 65504; 65520 is the tie that rounds (to even) to inf
  assert.equal(f32ToF16(65519), 0x7bff);
  assert.equal(f32ToF16(65520), 0x7c00);
  assert.equal(f32ToF16(1e6), 0x7c00);
  assert.equal(f32ToF16(-Infinity), 0xfc00);
  assert.equal(f16ToF32(0x7c00), Infinity);
  assert.equal(f16ToF32(0xfc00), -Infinity);
  // smallest normal 2^-14, smallest subnormal 2^-24, largest subnormal
  assert.equal(f32ToF16(2 ** -14), 0x0400);
  assert.equal(f32ToF16(2 ** -24), 0x0001);
  assert.equal(f16ToF32(0x0001), 2 ** -24);
  assert.equal(f16ToF32(0x03ff), 1023 * 2 ** -24);
  assert.equal(f32ToF16(1023 * 2 ** -24), 0x03ff);
  assert.equal(f32ToF16(3 * 2 ** -25), 0x0002); // 1.5 units: tie to even (2)
  assert.equal(f32ToF16(5 * 2 ** -25), 0x0002); // 2.5 units: tie to even (2)
  assert.equal(f32ToF16(2 ** -25), 0x0000); // half a unit: tie to even (0)
  assert.equal(f32ToF16(-(2 ** -25)), 0x8000);
  assert.equal(f32ToF16(fromBits(0x33000001)), 0x0001); // just above half a unit
  assert.equal(f32ToF16(2 ** -26), 0);
  assert.equal(f32ToF16(1e-45), 0); // float32 subnormal
  // largest subnormal + half a unit carries into the smallest normal
  assert.equal(f32ToF16(1023.5 * 2 ** -24), 0x0400);
  assert.ok(Object.is(f16ToF32(0x8000), -0));
  assert.equal(f32ToF16(-0), 0x8000);
  assert.equal(f32ToF16(0), 0);
  const nan = f32ToF16(Number.NaN);
  assert.equal(nan & 0x7c00, 0x7c00);
  assert.notEqual(nan & 0x3ff, 0);
  assert.ok(Number.isNaN(f16ToF32(nan)));
  assert.ok(Number.isNaN(f16ToF32(0x7c01)));
});

test('f16: normal rounding ties go to even', () => {
  // 1 + 2^-11 is half an ulp above 1 (ulp 2^-10): tie, 1 is even
  assert.equal(f32ToF16(1 + 2 ** -11), 0x3c00);
  // 1 + 3*2^-11: tie between 0x3c01 (odd) and 0x3c02 (even)
  assert.equal(f32ToF16(1 + 3 * 2 ** -11), 0x3c02);
  assert.equal(f32ToF16(1 + 2 ** -11 + 2 ** -20), 0x3c01);
  assert.equal(f32ToF16(2047 / 1024 + 2 ** -11), 0x4000); // carry into the exponent
  assert.equal(f32ToF16(0.1), 0x2e66);
  assert.equal(f32ToF16(-3.3), 0xc29a);
});

test('f16: all 63488 finite halves round-trip, table matches', () => {
  const t = f16Table();
  for (let h = 0; h < 65536; h++) {
    const v = f16ToF32(h);
    if (Number.isNaN(v)) {
      assert.ok(Number.isNaN(t[h]!));
      continue;
    }
    assert.equal(t[h], v);
    assert.equal(f32ToF16(v), h, `h=${h.toString(16)}`);
  }
});

test('bf16: round to nearest even on the top half, NaN made quiet, subnormals kept', () => {
  assert.equal(f32ToBF16(1), 0x3f80);
  assert.equal(bf16ToF32(0x3f80), 1);
  assert.equal(f32ToBF16(fromBits(0x3f808000)), 0x3f80); // tie, even stays
  assert.equal(f32ToBF16(fromBits(0x3f818000)), 0x3f82); // tie, odd rounds up
  assert.equal(f32ToBF16(fromBits(0x3f808001)), 0x3f81);
  assert.equal(f32ToBF16(fromBits(0x3f807fff)), 0x3f80);
  assert.equal(f32ToBF16(fromBits(0x7f7fffff)), 0x7f80); // max float rounds to inf
  assert.equal(f32ToBF16(-Infinity), 0xff80);
  assert.equal(f32ToBF16(fromBits(0x00018000)), 0x0002); // subnormal, tie to even (no flush)
  assert.equal(f32ToBF16(fromBits(0x80010000)), 0x8001);
  assert.equal(f32ToBF16(fromBits(0x7f800001)), 0x7fc0); // signalling NaN -> quiet
  assert.equal(f32ToBF16(fromBits(0xffa00000)), 0xffe0);
  assert.ok(Number.isNaN(bf16ToF32(f32ToBF16(Number.NaN))));
});

test('nearestInt rounds ties to even, roundf away from zero', () => {
  assert.deepEqual([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998].map(nearestInt), [0, 2, 2, 0, -2, -2, 2]);
  assert.deepEqual([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998].map(roundf), [1, 2, 3, -1, -2, -3, 2]);
});

test('Q4_0: a hand-built block dequantizes and quantizes as ggml does', () => {
  // d = 0.5 (f16 0x3800), nibbles j -> q = j & 15: value (q - 8) * 0.5
  const blk = new Uint8Array(18);
  blk[0] = 0x00;
  blk[1] = 0x38;
  for (let j = 0; j < 16; j++) blk[2 + j] = (j & 15) | ((15 - j) << 4);
  const out = new Float32Array(32);
  dequantize(GGMLType.Q4_0, blk, out, 32);
  for (let j = 0; j < 16; j++) {
    assert.equal(out[j], (j - 8) * 0.5);
    assert.equal(out[j + 16], (15 - j - 8) * 0.5);
  }
  // quantizing: max magnitude -4 at j=0 -> d = -4 / -8 = 0.5; q = trunc(x/d + 8.5) (15 at most)
  const back = new Uint8Array(18);
  quantize(GGMLType.Q4_0, out, back, 32);
  assert.deepEqual(back, blk);
  // a block whose max is positive: d = max / -8 is negative, and +max saturates at 15
  const x = new Float32Array(32);
  x[0] = 8;
  x[1] = -4;
  x[2] = 1.2;
  const q = new Uint8Array(18);
  quantize(GGMLType.Q4_0, x, q, 32);
  assert.equal(f16ToF32(q[0]! | (q[1]! << 8)), -1);
  assert.equal(q[2]! & 15, 0); // 8 * -1 = -8 -> trunc(0.5) = 0
  assert.equal(q[3]! & 15, 12); // -4 * -1 = 4 -> trunc(12.5) = 12
  assert.equal(q[4]! & 15, 7); // -1.2 + 8.5 = 7.3 -> 7
  assert.equal(q[5]! & 15, 8); // 0 -> 8
});

test('Q8_0 and Q8_1: hand-computed block', () => {
  const x = new Float32Array(32);
  for (let j = 0; j < 32; j++) x[j] = (j - 16) * 0.25; // amax 4 -> d = 4/127
  const q = new Uint8Array(34);
  quantize(GGMLType.Q8_0, x, q, 32);
  const d = Math.fround(4 / 127);
  assert.equal(q[0]! | (q[1]! << 8), f32ToF16(d));
  const id = Math.fround(1 / d);
  for (let j = 0; j < 32; j++) {
    const want = roundf(Math.fround(x[j]! * id));
    assert.equal((q[2 + j]! << 24) >> 24, want);
  }
  assert.equal((q[2]! << 24) >> 24, -127);
  const q1 = new Uint8Array(36);
  quantize(GGMLType.Q8_1, x, q1, 32);
  let sum = 0;
  for (let j = 0; j < 32; j++) {
    assert.equal(q1[4 + j], q[2 + j]);
    sum += (q1[4 + j]! << 24) >> 24;
  }
  assert.equal(q1[2]! | (q1[3]! << 8), f32ToF16(Math.fround(sum * d)));
  const y = new Float32Array(32);
  dequantize(GGMLType.Q8_1, q1, y, 32);
  const dh = f16ToF32(q1[0]! | (q1[1]! << 8));
  for (let j = 0; j < 32; j++) assert.equal(y[j], Math.fround(((q1[4 + j]! << 24) >> 24) * dh));
});

test('Q8_K: scale is -max/127 as float32, bsums are sums of 16', () => {
  const x = new Float32Array(QK_K);
  for (let j = 0; j < QK_K; j++) x[j] = Math.sin(j) * 3;
  x[100] = -5;
  const q = new Uint8Array(rowSize(GGMLType.Q8_K, QK_K));
  quantize(GGMLType.Q8_K, x, q, QK_K);
  const dv = new DataView(q.buffer);
  const iscale = Math.fround(-127 / -5);
  assert.equal(dv.getFloat32(0, true), Math.fround(1 / iscale));
  assert.equal(dv.getInt8(4 + 100), -127);
  for (let g = 0; g < 16; g++) {
    let s = 0;
    for (let l = 0; l < 16; l++) s += dv.getInt8(4 + g * 16 + l);
    assert.equal(dv.getInt16(260 + 2 * g, true), s);
  }
  const y = new Float32Array(QK_K);
  dequantize(GGMLType.Q8_K, q, y, QK_K);
  for (let j = 0; j < QK_K; j++) assert.ok(Math.abs(y[j]! - x[j]!) <= 5 / 127 / 2 + 1e-6);
  // an all-zero block gives d = 0 and zero quants
  const z = new Uint8Array(292).fill(7);
  quantize(GGMLType.Q8_K, new Float32Array(QK_K), z, QK_K);
  assert.ok(z.every((b) => b === 0));
});

test('Q5_0: the fifth bit goes to qh, element j at bit j', () => {
  const x = new Float32Array(32);
  x[0] = -16; // d = -16/-16 = 1: q = trunc(x + 16.5)
  x[1] = 15;
  x[17] = 3;
  const q = new Uint8Array(22);
  quantize(GGMLType.Q5_0, x, q, 32);
  assert.equal(f16ToF32(q[0]! | (q[1]! << 8)), 1);
  const qh = q[2]! | (q[3]! << 8) | (q[4]! << 16) | (q[5]! << 24);
  // q: x0 -> 0, x1 -> 31, zeros -> 16 (bit 4 set), x17 -> 19
  assert.equal(qh & 1, 0);
  assert.equal((qh >>> 1) & 1, 1);
  assert.equal((qh >>> 17) & 1, 1);
  assert.equal(q[6]! & 15, 0);
  assert.equal(q[7]! & 15, 15);
  assert.equal(q[7]! >>> 4, 3); // element 17
  const y = new Float32Array(32);
  dequantize(GGMLType.Q5_0, q, y, 32);
  assert.equal(y[0], -16);
  assert.equal(y[1], 15);
  assert.equal(y[17], 3);
  assert.equal(y[5], 0);
});

test('dispatch: capabilities and argument checks', () => {
  for (const t of [0, 1, 30, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 20, 23]) assert.ok(canDequantize(t), `deq ${t}`);
  for (const t of [0, 1, 30, 2, 3, 6, 7, 8, 9, 15]) assert.ok(canQuantize(t), `q ${t}`);
  for (const t of [16, 17, 18, 19, 21, 22, 29, 34, 35]) assert.ok(canDequantize(t), `deq ${t}`);
  assert.ok(canDequantize(GGMLType.MXFP4));
  assert.equal(canDequantize(GGMLType.F64), false);
  assert.equal(canQuantize(999), false);
  // IQ2_XXS quantizes only with an importance matrix: rows, not plain blocks
  assert.equal(canQuantize(GGMLType.IQ2_XXS), false);
  assert.equal(canQuantizeRows(GGMLType.IQ2_XXS), true);
  const dst = new Float32Array(64);
  assert.throws(() => dequantize(GGMLType.Q4_0, new Uint8Array(18), dst, 33), RangeError);
  assert.throws(() => dequantize(GGMLType.Q4_0, new Uint8Array(18), dst, 64), /need 36 bytes/);
  assert.throws(() => dequantize(GGMLType.Q4_0, new Uint8Array(36), new Float32Array(32), 64), RangeError);
  assert.throws(() => dequantize(GGMLType.F64, new Uint8Array(512), dst, 64), /no dequantizer/);
  assert.throws(() => quantize(GGMLType.Q8_0, new Float32Array(32), new Uint8Array(33), 32), RangeError);
  assert.throws(() => quantize(GGMLType.Q8_0, new Float32Array(32), new Uint8Array(34), -32), RangeError);
  // n = 0 is a no-op
  dequantize(GGMLType.Q4_K, new Uint8Array(0), new Float32Array(0), 0);
});

test('F32/F16/BF16 rows: copy at odd byte offsets, conversions per element', () => {
  const x = Float32Array.of(1, -2.5, 3.3, 1e-8, 70000, -0);
  const bytes = new Uint8Array(x.length * 4 + 1);
  bytes.set(new Uint8Array(x.buffer), 1);
  const y = new Float32Array(x.length);
  dequantize(GGMLType.F32, bytes.subarray(1), y, x.length);
  assert.deepEqual(y, x);
  const h = new Uint8Array(x.length * 2);
  quantize(GGMLType.F16, x, h, x.length);
  dequantize(GGMLType.F16, h, y, x.length);
  for (let i = 0; i < x.length; i++) assert.equal(y[i], f16ToF32(f32ToF16(x[i]!)));
  quantize(GGMLType.BF16, x, h, x.length);
  dequantize(GGMLType.BF16, h, y, x.length);
  for (let i = 0; i < x.length; i++) assert.equal(y[i], bf16ToF32(f32ToBF16(x[i]!)));
});
