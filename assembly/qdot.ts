// Integer dot products of quantized weights with quantized activations.
//
// Activation rows (written by k_mm_prep) hold, for K elements: the quants at +0 (K int8
// in the relaxed build; 2K int16 in the strict one, each 16 as 8 even-indexed then 8
// odd-indexed elements), the f32 scales at +2K (one per 32 elements, or per 256 for the
// K-quants), and the sums of the quants at +2K+K/8 (int32 per 32, or int16 per 16).
//
// Relaxed build: i16x8.relaxed_dot_i8x16_i7x16_s with the weight as the 7-bit operand
// (unsigned nibbles; |w| with the sign moved onto the activation for Q8_0), offsets
// corrected with the activation sums. Strict build: weights split into int16 lanes and
// i32x4.dot_i16x8_s against the permuted int16 activations.

import { C_BIT8, C_LANE16, C_M4, C_M10, C_M30, C_ONES16, C_QH_HI, C_QH_LO, C_W4, C_W8, dotAdd, f16x4, f16x4At } from './consts';
import { hsum, madd, rdot } from './dot';
import { f16ToF32 } from './math';

/** Sum of a 32-element Q4_0 block (16 bytes at w, unsigned nibbles) with activations. */
@inline function q4Block(w: v128, act: usize): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const m4 = C_M4();
    const p = i16x8.add(rdot(v128.load(act), v128.and(w, m4)), rdot(v128.load(act, 16), v128.and(i16x8.shr_u(w, 4), m4)));
    return i32x4.dot_i16x8_s(p, C_ONES16());
  }
  const m = C_W4();
  const e0 = v128.and(w, m);
  const e1 = v128.and(i16x8.shr_u(w, 8), m);
  const e2 = v128.and(i16x8.shr_u(w, 4), m);
  const e3 = i16x8.shr_u(w, 12);
  return i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(e0, v128.load(act)), i32x4.dot_i16x8_s(e1, v128.load(act, 16))),
    i32x4.add(i32x4.dot_i16x8_s(e2, v128.load(act, 32)), i32x4.dot_i16x8_s(e3, v128.load(act, 48))),
  );
}

/** Sum of a 32-element Q8_0 block (int8 at w) with activations. */
@inline function q8Block(w: usize, act: usize): v128 {
  const w0 = v128.load(w);
  const w1 = v128.load(w, 16);
  if (ASC_FEATURE_RELAXED_SIMD) {
    const s0 = i8x16.lt_s(w0, i8x16.splat(0));
    const s1 = i8x16.lt_s(w1, i8x16.splat(0));
    const a0 = i8x16.sub(v128.xor(v128.load(act), s0), s0);
    const a1 = i8x16.sub(v128.xor(v128.load(act, 16), s1), s1);
    const ones = C_ONES16();
    return i32x4.add(i32x4.dot_i16x8_s(rdot(a0, i8x16.abs(w0)), ones), i32x4.dot_i16x8_s(rdot(a1, i8x16.abs(w1)), ones));
  }
  const e0 = i16x8.shr_s(i16x8.shl(w0, 8), 8);
  const e1 = i16x8.shr_s(w0, 8);
  const e2 = i16x8.shr_s(i16x8.shl(w1, 8), 8);
  const e3 = i16x8.shr_s(w1, 8);
  return i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(e0, v128.load(act)), i32x4.dot_i16x8_s(e1, v128.load(act, 16))),
    i32x4.add(i32x4.dot_i16x8_s(e2, v128.load(act, 32)), i32x4.dot_i16x8_s(e3, v128.load(act, 48))),
  );
}

/** Bytes of activation quants per element: 1 (relaxed) or 2 (strict). */
export const QB: usize = ASC_FEATURE_RELAXED_SIMD ? 1 : 2;

/** One Q4_0 row (scales at sc, quants at qs, block stride) against an activation row. */
export function dotQ4_0(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  let acc = f32x4.splat(0);
  let corr: f32 = 0;
  for (let b = 0; b < nb; b++) {
    const s = f16ToF32(load<u16>(sc)) * load<f32>(ad + (<usize>b << 2));
    const i = q4Block(v128.load(qs), act + <usize>b * 32 * QB);
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i), f32x4.splat(s)));
    corr += <f32>load<i32>(as + (<usize>b << 2)) * s;
    sc += stride;
    qs += stride;
  }
  return hsum(acc) - corr;
}

/** 0x10 in the bytes of the elements whose bit is set in the Q5_0 high bits (sel: which qh bytes). */
@inline function q5High(qh: v128, sel: v128): v128 {
  const bits = C_BIT8();
  return v128.and(i8x16.eq(v128.and(i8x16.swizzle(qh, sel), bits), bits), C_M10());
}

/**
 * One Q5_0 row (ggml's 22-byte blocks at w: f16 scale, 32 high bits, 16 bytes of nibbles)
 * against a per-32 activation row: Σ_b d_w·d_a·Σ (q - 16)·a, the -16 from the stored sums.
 */
export function dotQ5_0(w: usize, nb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  let acc = f32x4.splat(0);
  let corr: f32 = 0;
  const m4 = C_M4();
  for (let b = 0; b < nb; b++) {
    const s = f16ToF32(load<u16>(w)) * load<f32>(ad + (<usize>b << 2));
    const qh = i32x4.splat(load<u32>(w, 2));
    const q = v128.load(w, 6);
    // elements 0-15 (low nibbles) and 16-31 (high nibbles), 5 bits each
    const v0 = v128.or(v128.and(q, m4), q5High(qh, C_QH_LO()));
    const v1 = v128.or(v128.and(i16x8.shr_u(q, 4), m4), q5High(qh, C_QH_HI()));
    const a = act + <usize>b * 32 * QB;
    let i: v128;
    if (ASC_FEATURE_RELAXED_SIMD) {
      const p = i16x8.add(rdot(v128.load(a), v0), rdot(v128.load(a, 16), v1));
      i = i32x4.dot_i16x8_s(p, C_ONES16());
    } else {
      const lo = C_W8();
      i = i32x4.add(
        i32x4.add(i32x4.dot_i16x8_s(v128.and(v0, lo), v128.load(a)), i32x4.dot_i16x8_s(i16x8.shr_u(v0, 8), v128.load(a, 16))),
        i32x4.add(i32x4.dot_i16x8_s(v128.and(v1, lo), v128.load(a, 32)), i32x4.dot_i16x8_s(i16x8.shr_u(v1, 8), v128.load(a, 48))),
      );
    }
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i), f32x4.splat(s)));
    corr += <f32>(load<i32>(as + (<usize>b << 2)) << 1) * s;
    w += 22;
  }
  return hsum(acc) - corr;
}

export function dotQ8_0(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const s = f16ToF32(load<u16>(sc)) * load<f32>(ad + (<usize>b << 2));
    const i = q8Block(qs, act + <usize>b * 32 * QB);
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i), f32x4.splat(s)));
    sc += stride;
    qs += stride;
  }
  return hsum(acc);
}

/** [Σs0, Σs1, Σs2, Σs3]: the lane sums of four i32x4. */
@inline function reduce4(s0: v128, s1: v128, s2: v128, s3: v128): v128 {
  const t0 = i32x4.add(v128.shuffle<i32>(s0, s1, 0, 4, 1, 5), v128.shuffle<i32>(s0, s1, 2, 6, 3, 7));
  const t1 = i32x4.add(v128.shuffle<i32>(s2, s3, 0, 4, 1, 5), v128.shuffle<i32>(s2, s3, 2, 6, 3, 7));
  return i32x4.add(v128.shuffle<i32>(t0, t1, 0, 1, 4, 5), v128.shuffle<i32>(t0, t1, 2, 3, 6, 7));
}

/**
 * Four interleaved Q4_0 rows (chunks of 72 bytes per block: 4 f16 scales, then 4 x 16
 * quant bytes) against one activation row: the four dot products.
 */
export function groupQ4_0(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    // the same steps as groupQ4_0x4, so one column and four agree exactly
    const m = C_M4();
    let c = f32x4.splat(0);
    for (let b = 0; b < nb; b++) {
      const w0 = v128.load(chunk, 8);
      const w1 = v128.load(chunk, 24);
      const w2 = v128.load(chunk, 40);
      const w3 = v128.load(chunk, 56);
      const l0 = v128.and(w0, m);
      const h0 = v128.and(i16x8.shr_u(w0, 4), m);
      const l1 = v128.and(w1, m);
      const h1 = v128.and(i16x8.shr_u(w1, 4), m);
      const l2 = v128.and(w2, m);
      const h2 = v128.and(i16x8.shr_u(w2, 4), m);
      const l3 = v128.and(w3, m);
      const h3 = v128.and(i16x8.shr_u(w3, 4), m);
      c = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, act, b, K, f16x4At(chunk), c);
      chunk += 72;
    }
    return c;
  }
  const ad = act + 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const a = act + <usize>b * 32 * QB;
    const s0 = q4Block(v128.load(chunk, 8), a);
    const s1 = q4Block(v128.load(chunk, 24), a);
    const s2 = q4Block(v128.load(chunk, 40), a);
    const s3 = q4Block(v128.load(chunk, 56), a);
    const r = i32x4.sub(reduce4(s0, s1, s2, s3), v128.load32_splat(as + (<usize>b << 2)));
    const dw = f32x4.mul(f16x4At(chunk), f32x4.splat(load<f32>(ad + (<usize>b << 2))));
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(r), dw));
    chunk += 72;
  }
  return acc;
}

/** Four interleaved Q8_0 rows (136-byte chunks: 4 scales, 4 x 32 quants). */
export function groupQ8_0(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  if (ASC_FEATURE_RELAXED_SIMD && dotAdd()) return groupQ8_0Wide(chunk, nb, act, K);
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    acc = colQ8_0(chunk, act, b, K, f16x4At(chunk), acc);
    chunk += 136;
  }
  return acc;
}

/** q8Block in 32-bit lanes (dotAdd): the same exact sums, one instruction fewer per vector. */
@inline function q8BlockWide(w: usize, act: usize): v128 {
  const w0 = v128.load(w);
  const w1 = v128.load(w, 16);
  const s0 = i8x16.lt_s(w0, i8x16.splat(0));
  const s1 = i8x16.lt_s(w1, i8x16.splat(0));
  const a0 = i8x16.sub(v128.xor(v128.load(act), s0), s0);
  const a1 = i8x16.sub(v128.xor(v128.load(act, 16), s1), s1);
  return i32x4.relaxed_dot_i8x16_i7x16_add_s(a1, i8x16.abs(w1), i32x4.relaxed_dot_i8x16_i7x16_add_s(a0, i8x16.abs(w0), i32x4.splat(0)));
}

/** groupQ8_0 with the 32-bit dot form, pointers advanced: colQ8_0's integers and float step. */
function groupQ8_0Wide(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  let acc = f32x4.splat(0);
  let da = act + 2 * <usize>K;
  for (let b = 0; b < nb; b++, chunk += 136, act += 32, da += 4) {
    const r = reduce4(q8BlockWide(chunk + 8, act), q8BlockWide(chunk + 40, act), q8BlockWide(chunk + 72, act), q8BlockWide(chunk + 104, act));
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(r), f32x4.mul(f16x4At(chunk), f32x4.splat(load<f32>(da)))));
  }
  return acc;
}

/** The eight 6-bit scales of a Q4_K super-block (12 packed bytes at p) as i16 lanes. */
@inline function k4Scales(p: usize): v128 {
  const u0 = load<u32>(p);
  const u2 = load<u32>(p, 8);
  const lo = u0 & 0x3f3f3f3f;
  const hi = (u2 & 0x0f0f0f0f) | (((u0 >> 6) & 0x03030303) << 4);
  return i16x8.extend_low_i8x16_u(i64x2.splat(<i64>lo | (<i64>hi << 32)));
}

/** The eight 6-bit mins of a Q4_K super-block as i16 lanes. */
@inline function k4Mins(p: usize): v128 {
  const u1 = load<u32>(p, 4);
  const u2 = load<u32>(p, 8);
  const lo = u1 & 0x3f3f3f3f;
  const hi = ((u2 >> 4) & 0x0f0f0f0f) | (((u1 >> 6) & 0x03030303) << 4);
  return i16x8.extend_low_i8x16_u(i64x2.splat(<i64>lo | (<i64>hi << 32)));
}

/** Lane j of an i16x8 in every lane. */
@inline function lane16(v: v128, j: i32): v128 {
  // the indices are in range, so the relaxed swizzle (a bare pshufb) is exact
  if (ASC_FEATURE_RELAXED_SIMD) return i8x16.relaxed_swizzle(v, C_LANE16(j));
  return i8x16.swizzle(v, C_LANE16(j));
}

/**
 * One column's integer sum over a 64-element group of a Q4_K super-block. Relaxed build:
 * u0, u1 the low nibbles (sub-block A) and v0, v1 the high ones (B) of the group's two
 * 16-byte halves; strict build: q0, q1 the raw quant bytes (u0/u1 = q0/q1). sA, sB: the
 * sub-block scales in every i16 lane.
 */
@inline function k4Col(u0: v128, u1: v128, v0: v128, v1: v128, a: usize, sA: v128, sB: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const lo = i16x8.add(rdot(v128.load(a), u0), rdot(v128.load(a, 16), u1));
    const hi = i16x8.add(rdot(v128.load(a, 32), v0), rdot(v128.load(a, 48), v1));
    return i32x4.add(i32x4.dot_i16x8_s(lo, sA), i32x4.dot_i16x8_s(hi, sB));
  }
  const q0 = u0;
  const q1 = u1;
  const m = C_W4();
  const lo = i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(v128.and(q0, m), v128.load(a)), i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q0, 8), m), v128.load(a, 16))),
    i32x4.add(i32x4.dot_i16x8_s(v128.and(q1, m), v128.load(a, 32)), i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q1, 8), m), v128.load(a, 48))),
  );
  const hi = i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q0, 4), m), v128.load(a, 64)), i32x4.dot_i16x8_s(i16x8.shr_u(q0, 12), v128.load(a, 80))),
    i32x4.add(i32x4.dot_i16x8_s(v128.and(i16x8.shr_u(q1, 4), m), v128.load(a, 96)), i32x4.dot_i16x8_s(i16x8.shr_u(q1, 12), v128.load(a, 112))),
  );
  // sA, sB hold the scale in every i16 lane: widen to i32 lanes for the multiply
  return i32x4.add(i32x4.mul(lo, i32x4.extend_low_i16x8_s(sA)), i32x4.mul(hi, i32x4.extend_low_i16x8_s(sB)));
}

/** Low nibbles of q (relaxed build; the raw bytes in the strict one). */
@inline function nibLo(q: v128): v128 {
  return ASC_FEATURE_RELAXED_SIMD ? v128.and(q, C_M4()) : q;
}

/** High nibbles of q (relaxed build; unused in the strict one). */
@inline function nibHi(q: v128): v128 {
  return ASC_FEATURE_RELAXED_SIMD ? v128.and(i16x8.shr_u(q, 4), C_M4()) : q;
}

/** Q4_K super-block step for one column: integer sums, then scaled into acc (lanes), mins into accMin. */
@inline function k4Finish(dd: v128, mn: v128, act: usize, sb: i32, K: i32, isum: v128, acc: v128): v128 {
  const ad = act + 2 * <usize>K;
  // [d, dmin] times the activation scale
  const s = f32x4.mul(dd, v128.load32_splat(ad + (<usize>sb << 2)));
  // Σ_j min_j * (activation sum of sub-block j), from the per-32 sums
  const msum = i32x4.dot_i16x8_s(mn, v128.load(ad + (<usize>K >> 2) + (<usize>sb << 4)));
  return f32x4.sub(
    f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(isum), v128.shuffle<f32>(s, s, 0, 0, 0, 0))),
    f32x4.mul(f32x4.convert_i32x4_s(msum), v128.shuffle<f32>(s, s, 1, 1, 1, 1)),
  );
}

/** [d, dmin, 0, 0] of the Q4_K super-block at w, as f32. */
@inline function k4D(w: usize): v128 {
  return f16x4(i32x4.extend_low_i16x8_u(v128.load32_zero(w)));
}

/** One Q4_K row (nsb super-blocks of 144 bytes) against a Q8_K-style activation row. */
export function dotQ4_K(w: usize, nsb: i32, act: usize, K: i32): f32 {
  let acc = f32x4.splat(0);
  for (let sb = 0; sb < nsb; sb++, w += 144) {
    const sc = k4Scales(w + 4);
    let isum = i32x4.splat(0);
    // a loop, not unrolled: V8 would hoist every load of an unrolled body and spill
    for (let g = 0; g < 4; g++) {
      const q0 = v128.load(w + 16 + <usize>g * 32);
      const q1 = v128.load(w + 16 + <usize>g * 32, 16);
      const a = act + (<usize>sb * 256 + <usize>g * 64) * QB;
      isum = i32x4.add(isum, k4Col(nibLo(q0), nibLo(q1), nibHi(q0), nibHi(q1), a, lane16(sc, 2 * g), lane16(sc, 2 * g + 1)));
    }
    acc = k4Finish(k4D(w), k4Mins(w + 4), act, sb, K, isum, acc);
  }
  return hsum(acc);
}

/** One Q4_K row against four activation rows; the four dot products. */
export function dotQ4_Kx4(w: usize, nsb: i32, a0: usize, a1: usize, a2: usize, a3: usize, K: i32): v128 {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let sb = 0; sb < nsb; sb++, w += 144) {
    const sc = k4Scales(w + 4);
    let s0 = i32x4.splat(0);
    let s1 = i32x4.splat(0);
    let s2 = i32x4.splat(0);
    let s3 = i32x4.splat(0);
    for (let g = 0; g < 4; g++) {
      const q0 = v128.load(w + 16 + <usize>g * 32);
      const q1 = v128.load(w + 16 + <usize>g * 32, 16);
      const sA = lane16(sc, 2 * g);
      const sB = lane16(sc, 2 * g + 1);
      const o = (<usize>sb * 256 + <usize>g * 64) * QB;
      const u0 = nibLo(q0);
      const u1 = nibLo(q1);
      const v0 = nibHi(q0);
      const v1 = nibHi(q1);
      s0 = i32x4.add(s0, k4Col(u0, u1, v0, v1, a0 + o, sA, sB));
      s1 = i32x4.add(s1, k4Col(u0, u1, v0, v1, a1 + o, sA, sB));
      s2 = i32x4.add(s2, k4Col(u0, u1, v0, v1, a2 + o, sA, sB));
      s3 = i32x4.add(s3, k4Col(u0, u1, v0, v1, a3 + o, sA, sB));
    }
    const dd = k4D(w);
    const mn = k4Mins(w + 4);
    c0 = k4Finish(dd, mn, a0, sb, K, s0, c0);
    c1 = k4Finish(dd, mn, a1, sb, K, s1, c1);
    c2 = k4Finish(dd, mn, a2, sb, K, s2, c2);
    c3 = k4Finish(dd, mn, a3, sb, K, s3, c3);
  }
  return hsum4(c0, c1, c2, c3);
}

/** [Σc0, Σc1, Σc2, Σc3] of four f32x4. */
@inline export function hsum4(c0: v128, c1: v128, c2: v128, c3: v128): v128 {
  const t0 = f32x4.add(v128.shuffle<f32>(c0, c1, 0, 4, 1, 5), v128.shuffle<f32>(c0, c1, 2, 6, 3, 7));
  const t1 = f32x4.add(v128.shuffle<f32>(c2, c3, 0, 4, 1, 5), v128.shuffle<f32>(c2, c3, 2, 6, 3, 7));
  return f32x4.add(v128.shuffle<f32>(t0, t1, 0, 1, 4, 5), v128.shuffle<f32>(t0, t1, 2, 3, 6, 7));
}

/** The 16 six-bit quants (0..63) of elements 16s..16s+15 of one Q6_K half. */
@inline function q6Vec(L: v128, H: v128, hiNibble: bool, hshift: i32): v128 {
  const m4 = C_M4();
  const m30 = C_M30();
  const lo = hiNibble ? v128.and(i16x8.shr_u(L, 4), m4) : v128.and(L, m4);
  let h: v128;
  if (hshift == 4) h = i16x8.shl(H, 4);
  else if (hshift == 2) h = i16x8.shl(H, 2);
  else if (hshift == 0) h = H;
  else h = i16x8.shr_u(H, 2);
  return v128.or(lo, v128.and(h, m30));
}

/**
 * Scaled dot of one 16-element Q6_K sub-block (quants q, 0..63) with activations at a;
 * sc holds the sub-block's scale in every i16 lane.
 */
@inline function q6Sub(q: v128, a: usize, sc: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i32x4.dot_i16x8_s(rdot(v128.load(a), q), sc);
  const ev = v128.and(q, C_W8());
  const od = i16x8.shr_u(q, 8);
  const s = i32x4.add(i32x4.dot_i16x8_s(ev, v128.load(a)), i32x4.dot_i16x8_s(od, v128.load(a, 16)));
  return i32x4.mul(s, i32x4.extend_low_i16x8_s(sc));
}

/**
 * The four sub-blocks of one Q6_K quarter (i = 2n + t: half n, bytes 16t..16t+15 of its
 * ql/qh rows) whose quants share those bytes: sub-blocks t, 2+t, 4+t, 6+t of half n.
 * Calls are written as a loop over i (V8 spills an unrolled body).
 */
@inline function q6Quarter(w: usize, i: i32): usize {
  return w + <usize>(i >> 1) * 64 + <usize>(i & 1) * 16;
}

/** One Q6_K row (nsb super-blocks of 210 bytes) against a Q8_K-style activation row. */
export function dotQ6_K(w: usize, nsb: i32, act: usize, K: i32): f32 {
  let accf = f32x4.splat(0);
  const st: usize = 16 * QB;
  for (let sb = 0; sb < nsb; sb++, w += 210) {
    let acc = i32x4.splat(0);
    for (let i = 0; i < 4; i++) {
      const n = i >> 1;
      const t = i & 1;
      const ql = q6Quarter(w, i);
      const La = v128.load(ql);
      const Lc = v128.load(ql, 32);
      const H = v128.load(w + 128 + <usize>n * 32 + <usize>t * 16);
      const sv = i16x8.extend_low_i8x16_s(v128.load64_zero(w + 192 + <usize>n * 8));
      const a = act + (<usize>sb * 256 + <usize>n * 128 + <usize>t * 16) * QB;
      acc = i32x4.add(acc, q6Sub(q6Vec(La, H, false, 4), a, lane16(sv, t)));
      acc = i32x4.add(acc, q6Sub(q6Vec(Lc, H, false, 2), a + 2 * st, lane16(sv, 2 + t)));
      acc = i32x4.add(acc, q6Sub(q6Vec(La, H, true, 0), a + 4 * st, lane16(sv, 4 + t)));
      acc = i32x4.add(acc, q6Sub(q6Vec(Lc, H, true, -2), a + 6 * st, lane16(sv, 6 + t)));
    }
    accf = q6Finish(w, act, sb, K, acc, f16ToF32(load<u16>(w, 208)), accf);
  }
  return hsum(accf);
}

// ---- tiles for matrix-matrix products: one weight decode shared by four columns ----------

/** Row totals [r0, r1, r2, r3] of four i16x8 partial sums (each lane at most 7620). */
@inline function reduce16(p0: v128, p1: v128, p2: v128, p3: v128): v128 {
  const t01 = i16x8.add(v128.shuffle<i64>(p0, p1, 0, 2), v128.shuffle<i64>(p0, p1, 1, 3));
  const t23 = i16x8.add(v128.shuffle<i64>(p2, p3, 0, 2), v128.shuffle<i64>(p2, p3, 1, 3));
  const u = i16x8.add(v128.shuffle<i32>(t01, t23, 0, 2, 4, 6), v128.shuffle<i32>(t01, t23, 1, 3, 5, 7));
  return i32x4.dot_i16x8_s(u, C_ONES16());
}

/** One column's step over a block of four interleaved Q4_0 rows (relaxed build). */
@inline function colQ4_0(
  l0: v128, h0: v128, l1: v128, h1: v128, l2: v128, h2: v128, l3: v128, h3: v128,
  act: usize, b: i32, K: i32, dw: v128, acc: v128,
): v128 {
  const q = act + (<usize>b << 5);
  const x0 = v128.load(q);
  const x1 = v128.load(q, 16);
  const ad = act + 2 * <usize>K;
  const r = reduce16(
    i16x8.add(rdot(x0, l0), rdot(x1, h0)),
    i16x8.add(rdot(x0, l1), rdot(x1, h1)),
    i16x8.add(rdot(x0, l2), rdot(x1, h2)),
    i16x8.add(rdot(x0, l3), rdot(x1, h3)),
  );
  const ri = i32x4.sub(r, v128.load32_splat(ad + (<usize>K >> 3) + (<usize>b << 2)));
  return madd(f32x4.convert_i32x4_s(ri), f32x4.mul(dw, v128.load32_splat(ad + (<usize>b << 2))), acc);
}

/** Four interleaved Q4_0 rows against four activation rows; results to out0..3 (4 f32 each). */
export function groupQ4_0x4(
  chunk: usize, nb: i32, K: i32,
  a0: usize, a1: usize, a2: usize, a3: usize,
  o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  if (!ASC_FEATURE_RELAXED_SIMD) {
    v128.store(o0, groupQ4_0(chunk, nb, a0, K));
    v128.store(o1, groupQ4_0(chunk, nb, a1, K));
    v128.store(o2, groupQ4_0(chunk, nb, a2, K));
    v128.store(o3, groupQ4_0(chunk, nb, a3, K));
    return;
  }
  const m = C_M4();
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const w0 = v128.load(chunk, 8);
    const w1 = v128.load(chunk, 24);
    const w2 = v128.load(chunk, 40);
    const w3 = v128.load(chunk, 56);
    const l0 = v128.and(w0, m);
    const h0 = v128.and(i16x8.shr_u(w0, 4), m);
    const l1 = v128.and(w1, m);
    const h1 = v128.and(i16x8.shr_u(w1, 4), m);
    const l2 = v128.and(w2, m);
    const h2 = v128.and(i16x8.shr_u(w2, 4), m);
    const l3 = v128.and(w3, m);
    const h3 = v128.and(i16x8.shr_u(w3, 4), m);
    const dw = f16x4At(chunk);
    c0 = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, a0, b, K, dw, c0);
    c1 = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, a1, b, K, dw, c1);
    c2 = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, a2, b, K, dw, c2);
    c3 = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, a3, b, K, dw, c3);
    chunk += 72;
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

/** Four interleaved Q4_0 rows against two activation rows (the steps of groupQ4_0x4). */
export function groupQ4_0x2(chunk: usize, nb: i32, K: i32, a0: usize, a1: usize, o0: usize, o1: usize): void {
  if (!ASC_FEATURE_RELAXED_SIMD) {
    v128.store(o0, groupQ4_0(chunk, nb, a0, K));
    v128.store(o1, groupQ4_0(chunk, nb, a1, K));
    return;
  }
  const m = C_M4();
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const w0 = v128.load(chunk, 8);
    const w1 = v128.load(chunk, 24);
    const w2 = v128.load(chunk, 40);
    const w3 = v128.load(chunk, 56);
    const l0 = v128.and(w0, m);
    const h0 = v128.and(i16x8.shr_u(w0, 4), m);
    const l1 = v128.and(w1, m);
    const h1 = v128.and(i16x8.shr_u(w1, 4), m);
    const l2 = v128.and(w2, m);
    const h2 = v128.and(i16x8.shr_u(w2, 4), m);
    const l3 = v128.and(w3, m);
    const h3 = v128.and(i16x8.shr_u(w3, 4), m);
    const dw = f16x4At(chunk);
    c0 = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, a0, b, K, dw, c0);
    c1 = colQ4_0(l0, h0, l1, h1, l2, h2, l3, h3, a1, b, K, dw, c1);
    chunk += 72;
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
}

/** One column's step over a block of four interleaved Q8_0 rows. */
@inline function colQ8_0(chunk: usize, act: usize, b: i32, K: i32, dw: v128, acc: v128): v128 {
  const a = act + <usize>b * 32 * QB;
  const r = reduce4(q8Block(chunk + 8, a), q8Block(chunk + 40, a), q8Block(chunk + 72, a), q8Block(chunk + 104, a));
  return q8Finish(r, act, b, K, dw, acc);
}

/** One column's float step for a block of Q8_0 rows: acc + r · (dw · da). */
@inline function q8Finish(r: v128, act: usize, b: i32, K: i32, dw: v128, acc: v128): v128 {
  const s = f32x4.mul(dw, f32x4.splat(load<f32>(act + 2 * <usize>K + (<usize>b << 2))));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(r), s));
}

/** Integer sums of one activation block (int8 at a) with four rows widened to int16 (relaxed build). */
@inline function q8Wide(
  a: usize,
  w00: v128, w01: v128, w02: v128, w03: v128, w10: v128, w11: v128, w12: v128, w13: v128,
  w20: v128, w21: v128, w22: v128, w23: v128, w30: v128, w31: v128, w32: v128, w33: v128,
): v128 {
  const x0 = v128.load(a);
  const x1 = v128.load(a, 16);
  const a0 = i16x8.extend_low_i8x16_s(x0);
  const a1 = i16x8.extend_high_i8x16_s(x0);
  const a2 = i16x8.extend_low_i8x16_s(x1);
  const a3 = i16x8.extend_high_i8x16_s(x1);
  const s0 = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(w00, a0), i32x4.dot_i16x8_s(w01, a1)), i32x4.add(i32x4.dot_i16x8_s(w02, a2), i32x4.dot_i16x8_s(w03, a3)));
  const s1 = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(w10, a0), i32x4.dot_i16x8_s(w11, a1)), i32x4.add(i32x4.dot_i16x8_s(w12, a2), i32x4.dot_i16x8_s(w13, a3)));
  const s2 = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(w20, a0), i32x4.dot_i16x8_s(w21, a1)), i32x4.add(i32x4.dot_i16x8_s(w22, a2), i32x4.dot_i16x8_s(w23, a3)));
  const s3 = i32x4.add(i32x4.add(i32x4.dot_i16x8_s(w30, a0), i32x4.dot_i16x8_s(w31, a1)), i32x4.add(i32x4.dot_i16x8_s(w32, a2), i32x4.dot_i16x8_s(w33, a3)));
  return reduce4(s0, s1, s2, s3);
}

/** Four interleaved Q8_0 rows against four activation rows. */
export function groupQ8_0x4(
  chunk: usize, nb: i32, K: i32,
  a0: usize, a1: usize, a2: usize, a3: usize,
  o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const dw = f16x4At(chunk);
    if (ASC_FEATURE_RELAXED_SIMD) {
      // widen the four rows once, use them for the four columns (the integer sums are the
      // same as q8Block's, so one column and four still agree exactly)
      const r0a = v128.load(chunk, 8);
      const r0b = v128.load(chunk, 24);
      const r1a = v128.load(chunk, 40);
      const r1b = v128.load(chunk, 56);
      const r2a = v128.load(chunk, 72);
      const r2b = v128.load(chunk, 88);
      const r3a = v128.load(chunk, 104);
      const r3b = v128.load(chunk, 120);
      const w00 = i16x8.extend_low_i8x16_s(r0a);
      const w01 = i16x8.extend_high_i8x16_s(r0a);
      const w02 = i16x8.extend_low_i8x16_s(r0b);
      const w03 = i16x8.extend_high_i8x16_s(r0b);
      const w10 = i16x8.extend_low_i8x16_s(r1a);
      const w11 = i16x8.extend_high_i8x16_s(r1a);
      const w12 = i16x8.extend_low_i8x16_s(r1b);
      const w13 = i16x8.extend_high_i8x16_s(r1b);
      const w20 = i16x8.extend_low_i8x16_s(r2a);
      const w21 = i16x8.extend_high_i8x16_s(r2a);
      const w22 = i16x8.extend_low_i8x16_s(r2b);
      const w23 = i16x8.extend_high_i8x16_s(r2b);
      const w30 = i16x8.extend_low_i8x16_s(r3a);
      const w31 = i16x8.extend_high_i8x16_s(r3a);
      const w32 = i16x8.extend_low_i8x16_s(r3b);
      const w33 = i16x8.extend_high_i8x16_s(r3b);
      const q = <usize>b << 5;
      c0 = q8Finish(q8Wide(a0 + q, w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33), a0, b, K, dw, c0);
      c1 = q8Finish(q8Wide(a1 + q, w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33), a1, b, K, dw, c1);
      c2 = q8Finish(q8Wide(a2 + q, w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33), a2, b, K, dw, c2);
      c3 = q8Finish(q8Wide(a3 + q, w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33), a3, b, K, dw, c3);
    } else {
      c0 = colQ8_0(chunk, a0, b, K, dw, c0);
      c1 = colQ8_0(chunk, a1, b, K, dw, c1);
      c2 = colQ8_0(chunk, a2, b, K, dw, c2);
      c3 = colQ8_0(chunk, a3, b, K, dw, c3);
    }
    chunk += 136;
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}

/** Four interleaved Q8_0 rows against two activation rows (the steps of groupQ8_0x4). */
export function groupQ8_0x2(chunk: usize, nb: i32, K: i32, a0: usize, a1: usize, o0: usize, o1: usize): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  for (let b = 0; b < nb; b++) {
    const dw = f16x4At(chunk);
    if (ASC_FEATURE_RELAXED_SIMD) {
      const r0a = v128.load(chunk, 8);
      const r0b = v128.load(chunk, 24);
      const r1a = v128.load(chunk, 40);
      const r1b = v128.load(chunk, 56);
      const r2a = v128.load(chunk, 72);
      const r2b = v128.load(chunk, 88);
      const r3a = v128.load(chunk, 104);
      const r3b = v128.load(chunk, 120);
      const w00 = i16x8.extend_low_i8x16_s(r0a);
      const w01 = i16x8.extend_high_i8x16_s(r0a);
      const w02 = i16x8.extend_low_i8x16_s(r0b);
      const w03 = i16x8.extend_high_i8x16_s(r0b);
      const w10 = i16x8.extend_low_i8x16_s(r1a);
      const w11 = i16x8.extend_high_i8x16_s(r1a);
      const w12 = i16x8.extend_low_i8x16_s(r1b);
      const w13 = i16x8.extend_high_i8x16_s(r1b);
      const w20 = i16x8.extend_low_i8x16_s(r2a);
      const w21 = i16x8.extend_high_i8x16_s(r2a);
      const w22 = i16x8.extend_low_i8x16_s(r2b);
      const w23 = i16x8.extend_high_i8x16_s(r2b);
      const w30 = i16x8.extend_low_i8x16_s(r3a);
      const w31 = i16x8.extend_high_i8x16_s(r3a);
      const w32 = i16x8.extend_low_i8x16_s(r3b);
      const w33 = i16x8.extend_high_i8x16_s(r3b);
      const q = <usize>b << 5;
      c0 = q8Finish(q8Wide(a0 + q, w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33), a0, b, K, dw, c0);
      c1 = q8Finish(q8Wide(a1 + q, w00, w01, w02, w03, w10, w11, w12, w13, w20, w21, w22, w23, w30, w31, w32, w33), a1, b, K, dw, c1);
    } else {
      c0 = colQ8_0(chunk, a0, b, K, dw, c0);
      c1 = colQ8_0(chunk, a1, b, K, dw, c1);
    }
    chunk += 136;
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
}

/** One Q6_K row against four activation rows; the four dot products. */
export function dotQ6_Kx4(w: usize, nsb: i32, a0: usize, a1: usize, a2: usize, a3: usize, K: i32): v128 {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  const st: usize = 16 * QB;
  for (let sb = 0; sb < nsb; sb++, w += 210) {
    let s0 = i32x4.splat(0);
    let s1 = i32x4.splat(0);
    let s2 = i32x4.splat(0);
    let s3 = i32x4.splat(0);
    for (let i = 0; i < 4; i++) {
      const n = i >> 1;
      const t = i & 1;
      const ql = q6Quarter(w, i);
      const La = v128.load(ql);
      const Lc = v128.load(ql, 32);
      const H = v128.load(w + 128 + <usize>n * 32 + <usize>t * 16);
      const sv = i16x8.extend_low_i8x16_s(v128.load64_zero(w + 192 + <usize>n * 8));
      const o = (<usize>sb * 256 + <usize>n * 128 + <usize>t * 16) * QB;
      {
        const q = q6Vec(La, H, false, 4);
        const sc = lane16(sv, 0 + t);
        const oo = o + 0 * st;
        s0 = i32x4.add(s0, q6Sub(q, a0 + oo, sc));
        s1 = i32x4.add(s1, q6Sub(q, a1 + oo, sc));
        s2 = i32x4.add(s2, q6Sub(q, a2 + oo, sc));
        s3 = i32x4.add(s3, q6Sub(q, a3 + oo, sc));
      }
      {
        const q = q6Vec(Lc, H, false, 2);
        const sc = lane16(sv, 2 + t);
        const oo = o + 2 * st;
        s0 = i32x4.add(s0, q6Sub(q, a0 + oo, sc));
        s1 = i32x4.add(s1, q6Sub(q, a1 + oo, sc));
        s2 = i32x4.add(s2, q6Sub(q, a2 + oo, sc));
        s3 = i32x4.add(s3, q6Sub(q, a3 + oo, sc));
      }
      {
        const q = q6Vec(La, H, true, 0);
        const sc = lane16(sv, 4 + t);
        const oo = o + 4 * st;
        s0 = i32x4.add(s0, q6Sub(q, a0 + oo, sc));
        s1 = i32x4.add(s1, q6Sub(q, a1 + oo, sc));
        s2 = i32x4.add(s2, q6Sub(q, a2 + oo, sc));
        s3 = i32x4.add(s3, q6Sub(q, a3 + oo, sc));
      }
      {
        const q = q6Vec(Lc, H, true, -2);
        const sc = lane16(sv, 6 + t);
        const oo = o + 6 * st;
        s0 = i32x4.add(s0, q6Sub(q, a0 + oo, sc));
        s1 = i32x4.add(s1, q6Sub(q, a1 + oo, sc));
        s2 = i32x4.add(s2, q6Sub(q, a2 + oo, sc));
        s3 = i32x4.add(s3, q6Sub(q, a3 + oo, sc));
      }
    }
    const d = f16ToF32(load<u16>(w, 208));
    c0 = q6Finish(w, a0, sb, K, s0, d, c0);
    c1 = q6Finish(w, a1, sb, K, s1, d, c1);
    c2 = q6Finish(w, a2, sb, K, s2, d, c2);
    c3 = q6Finish(w, a3, sb, K, s3, d, c3);
  }
  return hsum4(c0, c1, c2, c3);
}

/** Subtract the -32 offset (via the activation sums) and scale one column's super-block sums. */
@inline function q6Finish(w: usize, act: usize, sb: i32, K: i32, isum: v128, d: f32, acc: v128): v128 {
  const ad = act + 2 * <usize>K;
  const scv = v128.load(w + 192);
  const bs = ad + (<usize>K >> 3) + (<usize>sb << 5);
  const off = i32x4.add(
    i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(scv), v128.load(bs)),
    i32x4.dot_i16x8_s(i16x8.extend_high_i8x16_s(scv), v128.load(bs, 16)),
  );
  const s = i32x4.sub(isum, i32x4.shl(off, 5));
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(s), f32x4.splat(d * load<f32>(ad + (<usize>sb << 2)))));
}

// ---- unpacked Q4_0 tiles for matrix-matrix products (relaxed build) ----------------------
//
// A piece of a group's blocks is unpacked once into per-thread scratch and then used for
// every column of the chunk: per block the four rows' scales as f32 (16 bytes), then the
// quants with the rows' 4-byte runs interleaved ([r0 k0..3][r1 k0..3][r2 k0..3][r3 k0..3]
// per vector) as unsigned nibbles. Against an activation run broadcast to every i32 lane,
// the 16-bit dot then yields lanes [r0 r0 r1 r1 r2 r2 r3 r3]: eight dots and one widening
// per block and column, no horizontal sums. The integer sums equal groupQ4_0's and the
// float steps are the same, so a column's result does not depend on the path that
// computed it (batch independence). (The same scheme for Q8_0, as the low and high nibbles
// of w + 128, takes twice the dots and measured no faster than groupQ8_0x4.)
// i32x4.relaxed_dot_i8x16_i7x16_add_s is not used: Node 20's baseline compiler (Liftoff)
// returns twice the sum for it, and TurboFan lowers it to pmaddubsw + pmaddwd + paddd (no VNNI).

/** Bytes of one unpacked Q4_0 block (scales + 8 vectors). */
export const DQ4: usize = 144;

/** Unpack 16 quant bytes of four rows (w0..w3): runs k of rows 0..3 to lo + 16k (low nibbles) and hi + 16k (high). */
@inline function tr4(w0: v128, w1: v128, w2: v128, w3: v128, lo: usize, hi: usize): void {
  const m = C_M4();
  const t0 = v128.shuffle<i32>(w0, w1, 0, 4, 1, 5);
  const t1 = v128.shuffle<i32>(w2, w3, 0, 4, 1, 5);
  const t2 = v128.shuffle<i32>(w0, w1, 2, 6, 3, 7);
  const t3 = v128.shuffle<i32>(w2, w3, 2, 6, 3, 7);
  const v0 = v128.shuffle<i64>(t0, t1, 0, 2);
  const v1 = v128.shuffle<i64>(t0, t1, 1, 3);
  const v2 = v128.shuffle<i64>(t2, t3, 0, 2);
  const v3 = v128.shuffle<i64>(t2, t3, 1, 3);
  v128.store(lo, v128.and(v0, m));
  v128.store(lo, v128.and(v1, m), 16);
  v128.store(lo, v128.and(v2, m), 32);
  v128.store(lo, v128.and(v3, m), 48);
  v128.store(hi, v128.and(i16x8.shr_u(v0, 4), m));
  v128.store(hi, v128.and(i16x8.shr_u(v1, 4), m), 16);
  v128.store(hi, v128.and(i16x8.shr_u(v2, 4), m), 32);
  v128.store(hi, v128.and(i16x8.shr_u(v3, 4), m), 48);
}

/** Unpack n blocks of a Q4_0 group (72-byte blocks at chunk) to s: scales, 4 low-nibble runs (elements 0..15), 4 high (16..31). */
export function unpackQ4_0x4(chunk: usize, n: i32, s: usize): void {
  for (let b = 0; b < n; b++, chunk += 72, s += DQ4) {
    v128.store(s, f16x4At(chunk));
    tr4(v128.load(chunk, 8), v128.load(chunk, 24), v128.load(chunk, 40), v128.load(chunk, 56), s + 16, s + 80);
  }
}

/** Lane 0 (1, 2, 3) of x in every i32 lane: a 4-byte activation run broadcast. */
@inline function bc0(x: v128): v128 {
  return v128.shuffle<i32>(x, x, 0, 0, 0, 0);
}
@inline function bc1(x: v128): v128 {
  return v128.shuffle<i32>(x, x, 1, 1, 1, 1);
}
@inline function bc2(x: v128): v128 {
  return v128.shuffle<i32>(x, x, 2, 2, 2, 2);
}
@inline function bc3(x: v128): v128 {
  return v128.shuffle<i32>(x, x, 3, 3, 3, 3);
}

/**
 * Σ q·a − sub over the 8 runs of one column's block (activation quants at q) against
 * unpacked vectors w0..w7 (i32 lanes): 16-bit lanes widened at the end, or (wide, dotAdd)
 * 32-bit lanes from −sub on in two chains. The same exact integers either way.
 */
@inline function col8(
  q: usize, sub: v128, w0: v128, w1: v128, w2: v128, w3: v128, w4: v128, w5: v128, w6: v128, w7: v128, wide: bool,
): v128 {
  const x = v128.load(q);
  const y = v128.load(q, 16);
  if (wide) {
    const z = i32x4.splat(0);
    let p = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc0(x), w0, i32x4.neg(sub));
    let r = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc1(x), w1, z);
    let t = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc2(x), w2, z);
    let u = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc3(x), w3, z);
    p = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc0(y), w4, p);
    r = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc1(y), w5, r);
    t = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc2(y), w6, t);
    u = i32x4.relaxed_dot_i8x16_i7x16_add_s(bc3(y), w7, u);
    return i32x4.add(i32x4.add(p, r), i32x4.add(t, u));
  }
  let p = rdot(bc0(x), w0);
  p = i16x8.add(p, rdot(bc1(x), w1));
  p = i16x8.add(p, rdot(bc2(x), w2));
  p = i16x8.add(p, rdot(bc3(x), w3));
  p = i16x8.add(p, rdot(bc0(y), w4));
  p = i16x8.add(p, rdot(bc1(y), w5));
  p = i16x8.add(p, rdot(bc2(y), w6));
  p = i16x8.add(p, rdot(bc3(y), w7));
  return i32x4.sub(i32x4.dot_i16x8_s(p, C_ONES16()), sub);
}

/** A Q4_0 column's float step (colQ4_0's): acc + i · (dw · da), i = Σ − 8·Σa. */
@inline function fin4(i: v128, dw: v128, da: v128, acc: v128): v128 {
  return madd(f32x4.convert_i32x4_s(i), f32x4.mul(dw, da), acc);
}

/**
 * Q4_0: unpacked blocks [b0, b0 + n) of one group (at s) against two columns (activation
 * rows a0, a1) into the four-row results at o0, o1, which hold the sums over the blocks
 * before b0 unless first. The unpacked vectors are loaded once for both columns.
 */
export function tileQ4_0x2(s: usize, b0: i32, n: i32, K: i32, a0: usize, a1: usize, o0: usize, o1: usize, first: bool): void {
  if (ASC_FEATURE_RELAXED_SIMD && dotAdd()) tileQ4_0x2Of(s, b0, n, K, a0, a1, o0, o1, first, true);
  else tileQ4_0x2Of(s, b0, n, K, a0, a1, o0, o1, first, false);
}

@inline function tileQ4_0x2Of(
  s: usize, b0: i32, n: i32, K: i32, a0: usize, a1: usize, o0: usize, o1: usize, first: bool, wide: bool,
): void {
  const ad0 = a0 + 2 * <usize>K;
  const ad1 = a1 + 2 * <usize>K;
  const sk = <usize>K >> 3;
  let c0 = first ? f32x4.splat(0) : v128.load(o0);
  let c1 = first ? f32x4.splat(0) : v128.load(o1);
  for (let b = b0; b < b0 + n; b++, s += DQ4) {
    const w0 = v128.load(s, 16);
    const w1 = v128.load(s, 32);
    const w2 = v128.load(s, 48);
    const w3 = v128.load(s, 64);
    const w4 = v128.load(s, 80);
    const w5 = v128.load(s, 96);
    const w6 = v128.load(s, 112);
    const w7 = v128.load(s, 128);
    const q = <usize>b << 5;
    const f = <usize>b << 2;
    const dw = v128.load(s);
    c0 = fin4(col8(a0 + q, v128.load32_splat(ad0 + sk + f), w0, w1, w2, w3, w4, w5, w6, w7, wide), dw, v128.load32_splat(ad0 + f), c0);
    c1 = fin4(col8(a1 + q, v128.load32_splat(ad1 + sk + f), w0, w1, w2, w3, w4, w5, w6, w7, wide), dw, v128.load32_splat(ad1 + f), c1);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
}

/** Q4_0, one column (see tileQ4_0x2). */
export function tileQ4_0x1(s: usize, b0: i32, n: i32, K: i32, a: usize, o: usize, first: bool): void {
  if (ASC_FEATURE_RELAXED_SIMD && dotAdd()) tileQ4_0x1Of(s, b0, n, K, a, o, first, true);
  else tileQ4_0x1Of(s, b0, n, K, a, o, first, false);
}

@inline function tileQ4_0x1Of(s: usize, b0: i32, n: i32, K: i32, a: usize, o: usize, first: bool, wide: bool): void {
  const ad = a + 2 * <usize>K;
  const sk = <usize>K >> 3;
  let c = first ? f32x4.splat(0) : v128.load(o);
  for (let b = b0; b < b0 + n; b++, s += DQ4) {
    const f = <usize>b << 2;
    const i = col8(
      a + (<usize>b << 5), v128.load32_splat(ad + sk + f),
      v128.load(s, 16), v128.load(s, 32), v128.load(s, 48), v128.load(s, 64),
      v128.load(s, 80), v128.load(s, 96), v128.load(s, 112), v128.load(s, 128), wide,
    );
    c = fin4(i, v128.load(s), v128.load32_splat(ad + f), c);
  }
  v128.store(o, c);
}

// ---- Q4_0, two k4 groups at once (eight rows) ---------------------------------------------
//
// The tiles above broadcast each 4-byte activation run with a shuffle and use it for one
// vector of four rows: one shuffle per dot, and shuffles and dots compete for the same
// vector pipes (Zen 5: a one-column-pair tile of four rows ran at about one dot a cycle).
// Two groups unpacked side by side let every broadcast feed both groups' vectors. 32-bit
// dot form only (dotAdd); the integer sums and the float step per block are col8's and
// fin4's, so the results are the bits of tileQ4_0x2 / gemmQ4_0x4 / gemvQ4_0.

/** Bytes of one unpacked block column of two groups (unpackQ4_0k4Pair). */
export const DQ8: usize = 288;

/**
 * Unpack n block columns of two k4 Q4_0 groups (at ca, cb): per block, group a's four d
 * as f32, group b's, then for each of the eight runs (low nibbles of the four quant
 * vectors, then high) group a's vector and group b's.
 */
export function unpackQ4_0k4Pair(ca: usize, cb: usize, n: i32, s: usize): void {
  const m4 = C_M4();
  for (let b = 0; b < n; b++, ca += 72, cb += 72, s += DQ8) {
    v128.store(s, f16x4At(ca));
    v128.store(s, f16x4At(cb), 16);
    for (let kk: usize = 0; kk < 64; kk += 16) {
      const wa = v128.load(ca + kk, 8);
      const wb = v128.load(cb + kk, 8);
      const o = s + 2 * kk;
      v128.store(o, v128.and(wa, m4), 32);
      v128.store(o, v128.and(wb, m4), 48);
      v128.store(o, v128.and(i16x8.shr_u(wa, 4), m4), 160);
      v128.store(o, v128.and(i16x8.shr_u(wb, 4), m4), 176);
    }
  }
}

/**
 * Unpacked blocks [b0, b0 + n) of two groups (at s, unpackQ4_0k4Pair) against two columns
 * (activation rows a0, a1): group a's four results at oa0 / oa1, group b's at ob0 / ob1,
 * which hold the sums over the blocks before b0 unless first. Needs dotAdd.
 * A block goes in four steps of two runs (the inner loop, not unrolled: unrolled, V8
 * hoists all the loads of the block and spills; a step's 14 vectors stay in registers).
 */
export function tileQ4_0Pairx2(
  s: usize, b0: i32, n: i32, K: i32, a0: usize, a1: usize, oa0: usize, oa1: usize, ob0: usize, ob1: usize, first: bool,
): void {
  const ad0 = a0 + 2 * <usize>K;
  const ad1 = a1 + 2 * <usize>K;
  const sk = <usize>K >> 3;
  const z = f32x4.splat(0);
  let ca0 = first ? z : v128.load(oa0);
  let ca1 = first ? z : v128.load(oa1);
  let cb0 = first ? z : v128.load(ob0);
  let cb1 = first ? z : v128.load(ob1);
  for (let b = b0; b < b0 + n; b++, s += DQ8) {
    const q = <usize>b << 5;
    const f = <usize>b << 2;
    let pa0 = i32x4.neg(v128.load32_splat(ad0 + sk + f));
    let pa1 = i32x4.neg(v128.load32_splat(ad1 + sk + f));
    let pb0 = pa0;
    let pb1 = pa1;
    // runs 2i and 2i + 1 (elements 8i .. 8i + 7 of the block; high nibbles from i = 2)
    for (let i: usize = 0; i < 4; i++) {
      const x0 = v128.load64_splat(a0 + q + 8 * i);
      const x1 = v128.load64_splat(a1 + q + 8 * i);
      const w = s + 64 * i;
      let u = bc0(x0);
      let v = bc0(x1);
      let wa = v128.load(w, 32);
      let wb = v128.load(w, 48);
      pa0 = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, wa, pa0);
      pb0 = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, wb, pb0);
      pa1 = i32x4.relaxed_dot_i8x16_i7x16_add_s(v, wa, pa1);
      pb1 = i32x4.relaxed_dot_i8x16_i7x16_add_s(v, wb, pb1);
      u = bc1(x0);
      v = bc1(x1);
      wa = v128.load(w, 64);
      wb = v128.load(w, 80);
      pa0 = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, wa, pa0);
      pb0 = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, wb, pb0);
      pa1 = i32x4.relaxed_dot_i8x16_i7x16_add_s(v, wa, pa1);
      pb1 = i32x4.relaxed_dot_i8x16_i7x16_add_s(v, wb, pb1);
    }
    const da0 = v128.load32_splat(ad0 + f);
    const da1 = v128.load32_splat(ad1 + f);
    const dwa = v128.load(s);
    const dwb = v128.load(s, 16);
    ca0 = fin4(pa0, dwa, da0, ca0);
    ca1 = fin4(pa1, dwa, da1, ca1);
    cb0 = fin4(pb0, dwb, da0, cb0);
    cb1 = fin4(pb1, dwb, da1, cb1);
  }
  v128.store(oa0, ca0);
  v128.store(oa1, ca1);
  v128.store(ob0, cb0);
  v128.store(ob1, cb1);
}

/** One column against two unpacked groups (see tileQ4_0Pairx2). */
export function tileQ4_0Pairx1(s: usize, b0: i32, n: i32, K: i32, a: usize, oa: usize, ob: usize, first: bool): void {
  const ad = a + 2 * <usize>K;
  const sk = <usize>K >> 3;
  const z = f32x4.splat(0);
  let ca = first ? z : v128.load(oa);
  let cb = first ? z : v128.load(ob);
  for (let b = b0; b < b0 + n; b++, s += DQ8) {
    const q = <usize>b << 5;
    const f = <usize>b << 2;
    let pa = i32x4.neg(v128.load32_splat(ad + sk + f));
    let pb = pa;
    for (let i: usize = 0; i < 4; i++) {
      const x = v128.load64_splat(a + q + 8 * i);
      const w = s + 64 * i;
      let u = bc0(x);
      pa = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, v128.load(w, 32), pa);
      pb = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, v128.load(w, 48), pb);
      u = bc1(x);
      pa = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, v128.load(w, 64), pa);
      pb = i32x4.relaxed_dot_i8x16_i7x16_add_s(u, v128.load(w, 80), pb);
    }
    const da = v128.load32_splat(ad + f);
    ca = fin4(pa, v128.load(s), da, ca);
    cb = fin4(pb, v128.load(s, 16), da, cb);
  }
  v128.store(oa, ca);
  v128.store(ob, cb);
}
