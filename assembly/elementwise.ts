// ADD, MUL, DIV (b broadcast over a), SCALE, SILU, GELU, TANH, SIGMOID, CLAMP, RMS_NORM,
// NORM, SOFT_MAX, SUM_ROWS. Work is split by rows of the result; most have an all-F32
// fast path and a generic one.

import { ldf, stf } from './access';
import { C_F32, F_GELU_A, F_GELU_C, F_MINUS_TEN, F_ONE, F_TEN, roundF16x4, sel32 } from './consts';
import { c1, c2, c3, extra, param, rowAt, rowPtr, share0, tNb, tNe, tRows, tType } from './desc';
import { exp64, expf4, f16ToF32, f32ToF16, tanh64, tanhf4 } from './math';
import { T_F32 } from './types';


const B_ADD: i32 = 0;
const B_MUL: i32 = 1;
const B_DIV: i32 = 2;

function binary(node: usize, ith: i32, nth: i32, kind: i32): void {
  const isMul = kind == B_MUL;
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const tb = tType(node, 2);
  const bne0 = tNe(node, 2, 0);
  const bne1 = tNe(node, 2, 1);
  const bne2 = tNe(node, 2, 2);
  const bne3 = tNe(node, 2, 3);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  const nb0 = tNb(node, 2, 0);
  const fast = td == T_F32 && ta == T_F32 && tb == T_F32 && nd0 == 4 && na0 == 4 && nb0 == 4;
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    const pb = rowPtr(node, 2, c1 % bne1, c2 % bne2, c3 % bne3);
    if (fast && bne0 == ne0 && kind != B_DIV) {
      let i = 0;
      if (isMul) {
        for (; i + 4 <= ne0; i += 4) {
          const o = <usize>i << 2;
          v128.store(pd + o, f32x4.mul(v128.load(pa + o), v128.load(pb + o)));
        }
        for (; i < ne0; i++) {
          const o = <usize>i << 2;
          store<f32>(pd + o, load<f32>(pa + o) * load<f32>(pb + o));
        }
      } else {
        for (; i + 4 <= ne0; i += 4) {
          const o = <usize>i << 2;
          v128.store(pd + o, f32x4.add(v128.load(pa + o), v128.load(pb + o)));
        }
        for (; i < ne0; i++) {
          const o = <usize>i << 2;
          store<f32>(pd + o, load<f32>(pa + o) + load<f32>(pb + o));
        }
      }
      continue;
    }
    if (fast && bne0 == 1 && kind == B_MUL) {
      // a row scaled by one value (an expert's output by its routing weight)
      const y = load<f32>(pb);
      const y4 = f32x4.splat(y);
      let i = 0;
      for (; i + 4 <= ne0; i += 4) {
        const o = <usize>i << 2;
        v128.store(pd + o, f32x4.mul(v128.load(pa + o), y4));
      }
      for (; i < ne0; i++) store<f32>(pd + (<usize>i << 2), load<f32>(pa + (<usize>i << 2)) * y);
      continue;
    }
    for (let i = 0; i < ne0; i++) {
      const x = ldf(pa + <usize>i * na0, ta);
      const y = ldf(pb + <usize>(i % bne0) * nb0, tb);
      stf(pd + <usize>i * nd0, td, kind == B_MUL ? x * y : kind == B_DIV ? x / y : x + y);
    }
  }
}

export function k_add(node: usize, ith: i32, nth: i32): void {
  binary(node, ith, nth, B_ADD);
}

export function k_mul(node: usize, ith: i32, nth: i32): void {
  binary(node, ith, nth, B_MUL);
}

export function k_div(node: usize, ith: i32, nth: i32): void {
  binary(node, ith, nth, B_DIV);
}

const U_SCALE: i32 = 0;
const U_SILU: i32 = 1;
const U_GELU: i32 = 2;
const U_TANH: i32 = 3;
const U_SIGMOID: i32 = 4;
const U_CLAMP: i32 = 5;

const SQRT_2_OVER_PI: f64 = 0.7978845608028654;

function unary(node: usize, ith: i32, nth: i32, kind: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  const s = param(node, 0);
  const b = param(node, 1);
  const fast = td == T_F32 && ta == T_F32 && nd0 == 4 && na0 == 4;
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    let i = 0;
    if (fast && kind == U_SILU) {
      for (; i + 4 <= ne0; i += 4) {
        const o = <usize>i << 2;
        const x = v128.load(pa + o);
        const e = expf4(f32x4.neg(x));
        v128.store(pd + o, f32x4.div(x, f32x4.add(C_F32(F_ONE), e)));
      }
    } else if (fast && kind == U_SIGMOID) {
      // as ggml's f32 sigmoid, 1 / (1 + e^-x)
      for (; i + 4 <= ne0; i += 4) {
        const o = <usize>i << 2;
        const e = expf4(f32x4.neg(v128.load(pa + o)));
        v128.store(pd + o, f32x4.div(C_F32(F_ONE), f32x4.add(C_F32(F_ONE), e)));
      }
    } else if (fast && kind == U_GELU) {
      for (; i + 4 <= ne0; i += 4) {
        const o = <usize>i << 2;
        v128.store(pd + o, geluF16x4(v128.load(pa + o)));
      }
    } else if (fast && kind == U_TANH) {
      for (; i + 4 <= ne0; i += 4) {
        const o = <usize>i << 2;
        v128.store(pd + o, tanhf4(v128.load(pa + o)));
      }
    }
    for (; i < ne0; i++) {
      const x = <f64>ldf(pa + <usize>i * na0, ta);
      let y: f64;
      if (kind == U_SCALE) y = s * x + b;
      else if (kind == U_SILU) y = x / (1 + exp64(-x));
      else if (kind == U_TANH) y = tanh64(x);
      else if (kind == U_SIGMOID) y = 1 / (1 + exp64(-x));
      else if (kind == U_CLAMP) y = Math.min(Math.max(x, s), b);
      else y = geluF16(x);
      stf(pd + <usize>i * nd0, td, <f32>y);
    }
  }
}

/**
 * ggml-cpu's GELU (GGML_GELU_FP16): 0 below -10, x above 10, otherwise the tanh
 * approximation of the f16-rounded input, rounded to f16 (its lookup table's entries).
 */
@inline function geluF16(x: f64): f64 {
  if (x <= -10) return 0;
  if (x >= 10) return x;
  const h = <f64>f16ToF32(f32ToF16(<f32>x));
  const g = 0.5 * h * (1 + tanh64(SQRT_2_OVER_PI * h * (1 + 0.044715 * h * h)));
  return <f64>f16ToF32(f32ToF16(<f32>g));
}

/**
 * geluF16 on four f32: 0.5·h·(1 + tanh y) as h / (1 + e^-2y), which loses nothing where
 * tanh y nears -1, so the f16 result matches geluF16's but for rare rounding ties.
 */
@inline function geluF16x4(x: v128): v128 {
  const h = roundF16x4(x);
  const one = C_F32(F_ONE);
  const c = f32x4.mul(C_F32(F_GELU_C), h);
  const y2 = f32x4.mul(c, f32x4.add(one, f32x4.mul(f32x4.mul(C_F32(F_GELU_A), h), h)));
  const g = roundF16x4(f32x4.div(h, f32x4.add(one, expf4(y2))));
  // x <= -10: 0; x >= 10: x
  const lo = f32x4.le(x, C_F32(F_MINUS_TEN));
  const hi = f32x4.ge(x, C_F32(F_TEN));
  return sel32(x, v128.andnot(g, lo), hi);
}

export function k_scale(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_SCALE);
}

export function k_silu(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_SILU);
}

export function k_gelu(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_GELU);
}

export function k_tanh(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_TANH);
}

export function k_sigmoid(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_SIGMOID);
}

/** CLAMP: params 0, 1 = min, max. */
export function k_clamp(node: usize, ith: i32, nth: i32): void {
  unary(node, ith, nth, U_CLAMP);
}

/** SUM_ROWS: t0 = dst [1, ne1, ne2, ne3], t1 = a; each row summed in double. */
export function k_sum_rows(node: usize, ith: i32, nth: i32): void {
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const n = tNe(node, 1, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const ta = tType(node, 1);
  const na0 = tNb(node, 1, 0);
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pa = rowPtr(node, 1, c1, c2, c3);
    let sum: f64 = 0;
    for (let i = 0; i < n; i++) sum += <f64>ldf(pa + <usize>i * na0, ta);
    stf(rowPtr(node, 0, c1, c2, c3), tType(node, 0), <f32>sum);
  }
}

/** RMS_NORM: the sum of squares in f32 lanes folded into a double (strided rows: in double). */
export function k_rms_norm(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  const eps = param(node, 0);
  const fast = td == T_F32 && ta == T_F32 && nd0 == 4 && na0 == 4;
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    let ss: f64 = 0;
    if (fast) {
      let acc0 = f32x4.splat(0);
      let acc1 = f32x4.splat(0);
      let i = 0;
      for (; i + 8 <= ne0; i += 8) {
        const x0 = v128.load(pa + (<usize>i << 2));
        const x1 = v128.load(pa + (<usize>i << 2), 16);
        acc0 = f32x4.add(acc0, f32x4.mul(x0, x0));
        acc1 = f32x4.add(acc1, f32x4.mul(x1, x1));
      }
      const acc = f32x4.add(acc0, acc1);
      ss = <f64>f32x4.extract_lane(acc, 0) + <f64>f32x4.extract_lane(acc, 1);
      ss += <f64>f32x4.extract_lane(acc, 2) + <f64>f32x4.extract_lane(acc, 3);
      for (; i < ne0; i++) {
        const x = <f64>load<f32>(pa + (<usize>i << 2));
        ss += x * x;
      }
    } else {
      for (let i = 0; i < ne0; i++) {
        const x = <f64>ldf(pa + <usize>i * na0, ta);
        ss += x * x;
      }
    }
    const sc = 1 / Math.sqrt(ss / ne0 + eps);
    if (fast) {
      const s4 = f32x4.splat(<f32>sc);
      let i = 0;
      for (; i + 4 <= ne0; i += 4) {
        const o = <usize>i << 2;
        v128.store(pd + o, f32x4.mul(v128.load(pa + o), s4));
      }
      for (; i < ne0; i++) store<f32>(pd + (<usize>i << 2), <f32>(<f64>load<f32>(pa + (<usize>i << 2)) * sc));
    } else {
      for (let i = 0; i < ne0; i++) {
        stf(pd + <usize>i * nd0, td, <f32>(<f64>ldf(pa + <usize>i * na0, ta) * sc));
      }
    }
  }
}

/**
 * NORM as ggml-cpu computes it (ggml_compute_forward_norm_f32, x86-64 AVX-512 build, which
 * node-llama-cpp loads on AVX-512 machines): the mean from a double sum rounded to f32,
 * y = x - mean in f32, the squares of y summed per 16 elements in _mm512_reduce_add_ps's
 * tree (lanes i + 8, then i + 4, then 0 + 2 and 1 + 3, then the two) into a double (a
 * tail under 16 one by one), variance and scale 1/sqrtf(variance + eps) in f32, then
 * y·scale. Every rounding of llama.cpp's, so a layer norm's output is bit for bit
 * llama.cpp's: an ulp off would round differently where an F16 K/V or a Q8_0 activation
 * is rounded next, and BERT rerankers amplified such flips to 1e-3 in their scores.
 */
export function k_norm(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  const eps = <f32>param(node, 0);
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    let sum: f64 = 0;
    for (let i = 0; i < ne0; i++) sum += <f64>ldf(pa + <usize>i * na0, ta);
    const mean = <f32>sum / <f32>ne0;
    for (let i = 0; i < ne0; i++) stf(pd + <usize>i * nd0, td, ldf(pa + <usize>i * na0, ta) - mean);
    let ss: f64 = 0;
    let i = 0;
    for (; i + 16 <= ne0; i += 16) {
      const p = pd + <usize>i * nd0;
      const u0 = sqAt(p, nd0, td, 0) + sqAt(p, nd0, td, 8) + (sqAt(p, nd0, td, 4) + sqAt(p, nd0, td, 12));
      const u1 = sqAt(p, nd0, td, 1) + sqAt(p, nd0, td, 9) + (sqAt(p, nd0, td, 5) + sqAt(p, nd0, td, 13));
      const u2 = sqAt(p, nd0, td, 2) + sqAt(p, nd0, td, 10) + (sqAt(p, nd0, td, 6) + sqAt(p, nd0, td, 14));
      const u3 = sqAt(p, nd0, td, 3) + sqAt(p, nd0, td, 11) + (sqAt(p, nd0, td, 7) + sqAt(p, nd0, td, 15));
      ss += <f64>(u0 + u2 + (u1 + u3));
    }
    for (; i < ne0; i++) ss += <f64>sqAt(pd, nd0, td, i);
    const variance = <f32>(ss / ne0);
    const scale = <f32>1 / Mathf.sqrt(variance + eps);
    for (let j = 0; j < ne0; j++) {
      const q = pd + <usize>j * nd0;
      stf(q, td, ldf(q, td) * scale);
    }
  }
}

/** Square of element j of a row (f32 arithmetic). */
@inline function sqAt(p: usize, nb0: usize, t: i32, j: i32): f32 {
  const y = ldf(p + <usize>j * nb0, t);
  return y * y;
}

/** SOFT_MAX: t1 = a, t2 = mask (optional: type -1). Scratch: extra 0 + ith * extra 1. */
export function k_soft_max(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 0, 0);
  const ne1 = tNe(node, 0, 1);
  const ne2 = tNe(node, 0, 2);
  const nr = tRows(node, 0);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const td = tType(node, 0);
  const ta = tType(node, 1);
  const tm = tType(node, 2);
  const nd0 = tNb(node, 0, 0);
  const na0 = tNb(node, 1, 0);
  const nm0 = tNb(node, 2, 0);
  const mne2 = tNe(node, 2, 2);
  const mne3 = tNe(node, 2, 3);
  const scale = <f32>param(node, 0);
  const row = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  for (let r = r0; r < r1; r++) {
    rowAt(r, ne1, ne2);
    const pd = rowPtr(node, 0, c1, c2, c3);
    const pa = rowPtr(node, 1, c1, c2, c3);
    const pm = tm >= 0 ? rowPtr(node, 2, c1, c2 % mne2, c3 % mne3) : 0;
    let mx = -Infinity;
    for (let i = 0; i < ne0; i++) {
      let x = ldf(pa + <usize>i * na0, ta) * scale;
      if (tm >= 0) x += ldf(pm + <usize>i * nm0, tm);
      store<f32>(row + (<usize>i << 2), x);
      if (x > mx) mx = x;
    }
    const m4 = f32x4.splat(<f32>mx);
    let sum: f64 = 0;
    let i = 0;
    let acc = f32x4.splat(0);
    for (; i + 4 <= ne0; i += 4) {
      const o = <usize>i << 2;
      const e = expf4(f32x4.sub(v128.load(row + o), m4));
      v128.store(row + o, e);
      acc = f32x4.add(acc, e);
    }
    sum = <f64>f32x4.extract_lane(acc, 0) + <f64>f32x4.extract_lane(acc, 1);
    sum += <f64>f32x4.extract_lane(acc, 2) + <f64>f32x4.extract_lane(acc, 3);
    for (; i < ne0; i++) {
      const o = <usize>i << 2;
      const e = <f32>exp64(<f64>(load<f32>(row + o) - <f32>mx));
      store<f32>(row + o, e);
      sum += e;
    }
    const inv = <f32>(1 / sum);
    for (let j = 0; j < ne0; j++) stf(pd + <usize>j * nd0, td, load<f32>(row + (<usize>j << 2)) * inv);
  }
}
