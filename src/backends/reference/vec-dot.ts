// ggml-cpu's "vec_dot_type": before a dot product with a row of weights of type W, the
// CPU backend converts the other operand (activations) to the type W's dot kernel takes:
// F16 weights dot F16 activations, BF16 with BF16, Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4 with Q8_0,
// Q4_1/Q5_1 with Q8_1, the K-quants, IQ4_XS and the IQ1/IQ2/IQ3 and ternary types with
// Q8_K. The reference kernels emulate that rounding (so their results match llama.cpp's
// to float accuracy): the activation row is converted and read back as floats, then
// dotted in double precision with the dequantized weights. Q8_0 and Q8_1 use the x86 AVX
// path's arithmetic (scale 127/amax, round half to even); Q8_K uses ggml's reference
// quantizer, as every x86 build does. Q8_0 weights against Q8_0 activations go further
// and take the x86 kernels' order of float operations (dotQ8_0x86), bit for bit.

import { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from '../../ggml/fp16.js';
import { dequantize, quantize } from '../../ggml/quants/index.js';
import { GGMLType, traitsOf } from '../../ggml/types.js';

const fround = Math.fround;

/** The type ggml-cpu converts the activations to before a dot with weights of `type`. */
export function vecDotType(type: number): number {
  switch (type) {
    case GGMLType.F16:
      return GGMLType.F16;
    case GGMLType.BF16:
      return GGMLType.BF16;
    case GGMLType.Q4_0:
    case GGMLType.Q5_0:
    case GGMLType.Q8_0:
    case GGMLType.IQ4_NL:
    case GGMLType.MXFP4:
      return GGMLType.Q8_0;
    case GGMLType.Q4_1:
    case GGMLType.Q5_1:
      return GGMLType.Q8_1;
    case GGMLType.Q2_K:
    case GGMLType.Q3_K:
    case GGMLType.Q4_K:
    case GGMLType.Q5_K:
    case GGMLType.Q6_K:
    case GGMLType.IQ4_XS:
    case GGMLType.IQ2_XXS:
    case GGMLType.IQ2_XS:
    case GGMLType.IQ2_S:
    case GGMLType.IQ3_XXS:
    case GGMLType.IQ3_S:
    case GGMLType.IQ1_S:
    case GGMLType.IQ1_M:
    case GGMLType.TQ1_0:
    case GGMLType.TQ2_0:
      return GGMLType.Q8_K;
    default:
      return GGMLType.F32;
  }
}

/** Round half to even (x86 `_mm256_round_ps(x, _MM_ROUND_NEAREST)`). */
function roundEven(x: number): number {
  const r = Math.round(x);
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

/**
 * Q8_0/Q8_1 blocks of 32 as ggml-cpu's AVX quantize_row_q8_0/q8_1 write them, read back:
 * x ≈ q · f16(amax / 127), q = round_even(x · 127 / amax).
 */
function roundQ8Blocks(row: Float32Array, n: number): void {
  const { q, d } = quantizeQ8Blocks(row, n);
  for (let j = 0; j < n; j++) row[j] = q[j] * d[j >> 5];
}

/** The quants and scales (f16, as f32) of ggml-cpu's AVX quantize_row_q8_0 for n floats of row. */
export function quantizeQ8Blocks(row: Float32Array, n: number): { q: Int8Array; d: Float32Array } {
  const q = new Int8Array(n);
  const d = new Float32Array(n >> 5);
  for (let b = 0; b < n; b += 32) {
    let amax = 0;
    for (let j = b; j < b + 32; j++) amax = Math.max(amax, Math.abs(row[j]));
    d[b >> 5] = f16ToF32(f32ToF16(fround(amax / 127)));
    const id = amax !== 0 ? fround(127 / amax) : 0;
    for (let j = b; j < b + 32; j++) q[j] = roundEven(fround(row[j] * id));
  }
  return { q, d };
}

const f64 = new Float64Array(1);
const f64Words = new Uint32Array(f64.buffer);

/**
 * fma(a, b, c) rounded once to f32, for f32 a and c and an integer b under 2^29 (so a·b is
 * exact in f64): the f64 sum rounded to f32, except where that sum was itself rounded onto
 * a point halfway between two f32, where the part it lost (Knuth's TwoSum) decides.
 */
export function fmaF32(a: number, b: number, c: number): number {
  const p = a * b;
  const s = p + c;
  f64[0] = s;
  // an f32 halfway point: the 29 mantissa bits below an f32's are 1000...0
  if ((f64Words[0] & 0x1fffffff) !== 0x10000000) return fround(s);
  const bb = s - p;
  const e = p - (s - bb) + (c - bb);
  if (e === 0) return fround(s);
  // one f64 ulp towards the exact sum (the low word is 2^28: no carry)
  f64Words[0] += e > 0 === s > 0 ? 1 : -1;
  return fround(f64[0]);
}

/**
 * The Q8_0 row at w[p..] (ggml's 34-byte blocks) dotted with Q8_0 activations (aq, ad; n
 * elements) in ggml-cpu's x86 order (ggml_vec_dot_q8_0_q8_0 and llamafile's
 * tinyBLAS_Q0_AVX): per block, eight lanes of four consecutive integer products, each
 * accumulated by an f32 fused multiply-add with the f32 product of the two scales; the
 * lanes then added as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)).
 */
export function dotQ8_0x86(w: Uint8Array, p: number, aq: Int8Array, ad: Float32Array, n: number): number {
  const acc = [0, 0, 0, 0, 0, 0, 0, 0];
  for (let b = 0; b < n >> 5; b++, p += 34) {
    const d = fround(f16ToF32(w[p] | (w[p + 1] << 8)) * ad[b]);
    for (let k = 0; k < 8; k++) {
      let lane = 0;
      for (let j = 0; j < 4; j++) lane += ((w[p + 2 + 4 * k + j] << 24) >> 24) * aq[32 * b + 4 * k + j];
      acc[k] = fmaF32(d, lane, acc[k]);
    }
  }
  const lo = fround(fround(acc[0] + acc[4]) + fround(acc[2] + acc[6]));
  const hi = fround(fround(acc[1] + acc[5]) + fround(acc[3] + acc[7]));
  return fround(lo + hi);
}

/**
 * Converts `row` (n floats) in place to what ggml-cpu's dot kernels see after converting it
 * to `vdType` (a vecDotType result).
 */
export function roundToVecDotType(vdType: number, row: Float32Array, n = row.length): void {
  switch (vdType) {
    case GGMLType.F32:
      return;
    case GGMLType.F16:
      for (let i = 0; i < n; i++) row[i] = f16ToF32(f32ToF16(row[i]));
      return;
    case GGMLType.BF16:
      for (let i = 0; i < n; i++) row[i] = bf16ToF32(f32ToBF16(row[i]));
      return;
    case GGMLType.Q8_0:
    case GGMLType.Q8_1:
      roundQ8Blocks(row, n);
      return;
    default: {
      const tr = traitsOf(vdType);
      const bytes = new Uint8Array((n / tr.blockSize) * tr.typeSize);
      quantize(vdType, row.subarray(0, n), bytes, n);
      dequantize(vdType, bytes, row, n);
    }
  }
}

/** Whether a row of `n` activations can be converted for weights of `type` (whole blocks). */
export function canRoundFor(type: number, n: number): boolean {
  const vd = vecDotType(type);
  return n % traitsOf(vd).blockSize === 0;
}

/**
 * Q4_1 and Q5_1 dot Q8_1 with the activations' block sum s = f16(d · Σq) (d the unrounded
 * scale) instead of f16(d) · Σq: returns Σ_blocks m_w · (s − f16(d)·Σq), the term to add
 * to a dot of dequantized values. `w` holds one row of Q4_1/Q5_1 blocks, `x` the F32
 * activations before rounding.
 */
export function q8_1SumCorrection(type: number, w: Uint8Array, wOff: number, x: Float32Array, n: number): number {
  const bs = traitsOf(type).typeSize;
  let corr = 0;
  for (let b = 0, o = wOff; b < n; b += 32, o += bs) {
    let amax = 0;
    for (let j = b; j < b + 32; j++) amax = Math.max(amax, Math.abs(x[j]));
    const dRaw = fround(amax / 127);
    const id = amax !== 0 ? fround(127 / amax) : 0;
    let sum = 0;
    for (let j = b; j < b + 32; j++) sum += roundEven(fround(x[j] * id));
    const s = f16ToF32(f32ToF16(fround(dRaw * sum)));
    const d = f16ToF32(f32ToF16(dRaw));
    const m = f16ToF32(w[o + 2] | (w[o + 3] << 8));
    corr += m * (s - d * sum);
  }
  return corr;
}
