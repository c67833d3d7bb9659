// ggml-cpu's "vec_dot_type" rounding: before a dot with weights of some type, ggml-cpu
// converts the activations to the type that weight's dot kernel takes (F16 for F16, BF16
// for BF16, Q8_0 for Q4_0/Q5_0/Q8_0/IQ4_NL, Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants
// and IQ4_XS). Kernels that do not quantize for integer dots round the f32 activations
// onto the same grid, so results stay those of llama.cpp.

import { bf16ToF32, f16ToF32, f32ToBF16, f32ToF16 } from './math';

export const ROUND_NONE: i32 = 0;
export const ROUND_F16: i32 = 1;
export const ROUND_BF16: i32 = 2;
/** Blocks of 32: q = round_even(x · 127/amax), value q · f16(amax/127) (ggml's AVX quantize_row_q8_0). */
export const ROUND_Q8_0: i32 = 3;
/** Blocks of 256: q = round_even(x · 127/amax), value q / (127/amax) (quantize_row_q8_K). */
export const ROUND_Q8_K: i32 = 4;
/**
 * As ROUND_Q8_0 (Q8_1 for Q4_1/Q5_1 weights), and after the n values one f32 per block:
 * f16(d·Σq) − f16(d)·Σq, the error of Q8_1's stored block sum that the weights' min
 * multiplies (see mmRows).
 */
export const ROUND_Q8_1: i32 = 5;

function absMaxScalar(x: usize, n: i32): f32 {
  let m: f32 = 0;
  for (let j = 0; j < n; j++) m = max(m, Mathf.abs(load<f32>(x + ((<usize>j) << 2))));
  return m;
}

/** Round n f32 values at x in place onto the grid of `kind`. */
export function roundActRow(kind: i32, x: usize, n: i32): void {
  if (kind == ROUND_F16) {
    for (let i = 0; i < n; i++) {
      const p = x + ((<usize>i) << 2);
      store<f32>(p, f16ToF32(f32ToF16(load<f32>(p))));
    }
  } else if (kind == ROUND_BF16) {
    for (let i = 0; i < n; i++) {
      const p = x + ((<usize>i) << 2);
      store<f32>(p, bf16ToF32(f32ToBF16(load<f32>(p))));
    }
  } else if (kind == ROUND_Q8_0 || kind == ROUND_Q8_K || kind == ROUND_Q8_1) {
    const bs = kind == ROUND_Q8_K ? 256 : 32;
    for (let b = 0; b + bs <= n; b += bs) {
      const xb = x + ((<usize>b) << 2);
      const amax = absMaxScalar(xb, bs);
      const id: f32 = amax != 0 ? <f32>127 / amax : 0;
      const raw: f32 = amax / 127;
      const d: f32 = kind == ROUND_Q8_K ? (amax != 0 ? <f32>1 / id : 0) : f16ToF32(f32ToF16(raw));
      let sum: f32 = 0;
      for (let j = 0; j < bs; j++) {
        const p = xb + ((<usize>j) << 2);
        const q = nearest<f32>(load<f32>(p) * id);
        sum += q;
        store<f32>(p, q * d);
      }
      if (kind == ROUND_Q8_1) {
        store<f32>(x + ((<usize>n) << 2) + ((<usize>(b >> 5)) << 2), f16ToF32(f32ToF16(raw * sum)) - d * sum);
      }
    }
  }
}
