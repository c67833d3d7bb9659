// ggml-cpu's "vec_dot_type": before a dot product with a row of weights of type W, the
// CPU backend converts the other operand (activations) to the type W's dot kernel takes:
// F16 weights dot F16 activations, BF16 with BF16, Q4_0/Q5_0/Q8_0/IQ4_NL/MXFP4 with Q8_0,
// Q4_1/Q5_1 with Q8_1, the K-quants, IQ4_XS and the IQ1/IQ2/IQ3 and ternary types with
// Q8_K. The reference kernels emulate that rounding (so their results match llama.cpp's
// to float accuracy): the activation row is converted and read back as floats, then
// dotted in double precision with the dequantized weights. Q8_0 and Q8_1 use the x86 AVX
// path's arithmetic (scale 127/amax, round half to even); Q8_K uses ggml's reference
// quantizer, as every x86 build does.

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
  for (let b = 0; b < n; b += 32) {
    let amax = 0;
    for (let j = b; j < b + 32; j++) amax = Math.max(amax, Math.abs(row[j]));
    const d = f16ToF32(f32ToF16(fround(amax / 127)));
    const id = amax !== 0 ? fround(127 / amax) : 0;
    for (let j = b; j < b + 32; j++) row[j] = roundEven(fround(row[j] * id)) * d;
  }
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
