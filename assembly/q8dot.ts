// Q8_0 weights against Q8_0 activations in the order of ggml-cpu's x86 kernels
// (ggml_vec_dot_q8_0_q8_0 for one column, llamafile's tinyBLAS_Q0_AVX for batches), so
// that a product has llama.cpp's bits given the same operands: each 32-element block's
// products summed in eight int32 lanes of four consecutive products, every lane
// accumulated over the blocks by a fused multiply-add acc = fma(d_w·d_a, f32(lane), acc)
// (d_w·d_a an f32 product), and the lanes of a row added at the end as
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)) (hsum_float_8). Lanes 0-3 come from
// elements 0-15 and lanes 4-7 from 16-31, one i32x4 each.
//
// The fused multiply-add is relaxed_madd where the host found it fused in both compiler
// tiers (fusedMadd, engine-flags.ts), else (the strict build, or an engine that multiplies
// and adds apart) computed exactly in f64: the product of an f32 and a lane (under 2^17)
// is exact there, the sum rounded twice (to f64, then f32), and where the f64 sum is an
// f32 halfway point the lost part of the exact sum decides the direction (TwoSum). Both
// give the same bits.

import { C_LOW29, C_MID29, C_ONES16, dotAdd, f16x4At, fusedMadd } from './consts';
import { hsum, rdot } from './dot';
import { f16ToF32 } from './math';
import { QB } from './qdot';

/**
 * ggml's lanes 0-3 (h = 0, elements 0-15) or 4-7 (h = 1, elements 16-31) of the block of
 * int8 weights at w against the activation block at act: each lane the sum of four
 * consecutive products. wide: the 32-bit relaxed dot (dotAdd).
 */
@inline function q8Lanes(w: usize, act: usize, h: usize, wide: bool): v128 {
  const x = v128.load(w + (h << 4));
  if (ASC_FEATURE_RELAXED_SIMD) {
    // |w| as the 7-bit operand, w's sign moved onto the activation
    const s = i8x16.lt_s(x, i8x16.splat(0));
    const a = i8x16.sub(v128.xor(v128.load(act + (h << 4)), s), s);
    if (wide) return i32x4.relaxed_dot_i8x16_i7x16_add_s(a, i8x16.abs(x), i32x4.splat(0));
    return i32x4.dot_i16x8_s(rdot(a, i8x16.abs(x)), C_ONES16());
  }
  // int16 activations, each 16 as 8 even-indexed then 8 odd-indexed elements
  const a = act + (h << 5);
  return i32x4.add(i32x4.dot_i16x8_s(i16x8.shr_s(i16x8.shl(x, 8), 8), v128.load(a)), i32x4.dot_i16x8_s(i16x8.shr_s(x, 8), v128.load(a, 16)));
}

/** f32(L) · d + acc per lane with one rounding (d: an f32 in every lane, L: int32 lanes). */
@inline function fmaLanes(acc: v128, d: v128, L: v128, fused: bool): v128 {
  if (ASC_FEATURE_RELAXED_SIMD && fused) return f32x4.relaxed_madd(f32x4.convert_i32x4_s(L), d, acc);
  const dd = f64x2.promote_low_f32x4(d);
  const lo = f64x2.add(f64x2.mul(dd, f64x2.convert_low_i32x4_s(L)), f64x2.promote_low_f32x4(acc));
  const hi = f64x2.add(
    f64x2.mul(dd, f64x2.convert_low_i32x4_s(v128.shuffle<i32>(L, L, 2, 3, 2, 3))),
    f64x2.promote_low_f32x4(v128.shuffle<f32>(acc, acc, 2, 3, 2, 3)),
  );
  if (v128.any_true(v128.or(i64x2.eq(v128.and(lo, C_LOW29()), C_MID29()), i64x2.eq(v128.and(hi, C_LOW29()), C_MID29())))) {
    return v128.shuffle<f32>(f32x4.demote_f64x2_zero(tieFix(dd, L, acc, lo, 0)), f32x4.demote_f64x2_zero(tieFix(dd, L, acc, hi, 1)), 0, 1, 4, 5);
  }
  return v128.shuffle<f32>(f32x4.demote_f64x2_zero(lo), f32x4.demote_f64x2_zero(hi), 0, 1, 4, 5);
}

/**
 * The f64 sum s = p + a of lanes 2h, 2h + 1 (p = d·L exact, a = acc) moved one f64 ulp
 * towards the exact sum where s is an f32 halfway point and the sum was rounded, so that
 * rounding it to f32 gives the correctly rounded exact sum (a rare case, kept out of line).
 */
function tieFix(dd: v128, L: v128, acc: v128, s: v128, h: i32): v128 {
  const Lh = h == 0 ? L : v128.shuffle<i32>(L, L, 2, 3, 2, 3);
  const ah = h == 0 ? acc : v128.shuffle<f32>(acc, acc, 2, 3, 2, 3);
  const p = f64x2.mul(dd, f64x2.convert_low_i32x4_s(Lh));
  const a = f64x2.promote_low_f32x4(ah);
  // Knuth's TwoSum: e is exactly (p + a) - s
  const bb = f64x2.sub(s, p);
  const e = f64x2.add(f64x2.sub(p, f64x2.sub(s, bb)), f64x2.sub(a, bb));
  const tie = v128.and(i64x2.eq(v128.and(s, C_LOW29()), C_MID29()), f64x2.ne(e, f64x2.splat(0)));
  // +1 on the bits (a larger magnitude) where e has s's sign, else -1
  const step = v128.or(i64x2.shr_s(v128.xor(e, s), 63), i64x2.splat(1));
  return i64x2.add(s, v128.and(tie, step));
}

/** ggml's hsum_float_8 of four rows' lanes (lo: lanes 0-3, hi: 4-7), one result per lane. */
@inline function hsum8x4(lo0: v128, hi0: v128, lo1: v128, hi1: v128, lo2: v128, hi2: v128, lo3: v128, hi3: v128): v128 {
  const t0 = f32x4.add(lo0, hi0);
  const t1 = f32x4.add(lo1, hi1);
  const t2 = f32x4.add(lo2, hi2);
  const t3 = f32x4.add(lo3, hi3);
  // [(l0 + l4) + (l2 + l6), (l1 + l5) + (l3 + l7)] of two rows each
  const u01 = f32x4.add(v128.shuffle<f32>(t0, t1, 0, 1, 4, 5), v128.shuffle<f32>(t0, t1, 2, 3, 6, 7));
  const u23 = f32x4.add(v128.shuffle<f32>(t2, t3, 0, 1, 4, 5), v128.shuffle<f32>(t2, t3, 2, 3, 6, 7));
  return f32x4.add(v128.shuffle<f32>(u01, u23, 0, 2, 4, 6), v128.shuffle<f32>(u01, u23, 1, 3, 5, 7));
}

/** One Q8_0 row (scales at sc, quants at qs, block stride) against an activation row. */
@inline function rowQ8_0(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32, wide: bool, fused: bool): f32 {
  let lo = f32x4.splat(0);
  let hi = f32x4.splat(0);
  let da = act + 2 * <usize>K;
  for (let b = 0; b < nb; b++, sc += stride, qs += stride, act += 32 * QB, da += 4) {
    const d = f32x4.splat(f16ToF32(load<u16>(sc)) * load<f32>(da));
    lo = fmaLanes(lo, d, q8Lanes(qs, act, 0, wide), fused);
    hi = fmaLanes(hi, d, q8Lanes(qs, act, 1, wide), fused);
  }
  return hsum(f32x4.add(lo, hi));
}

function rowQ8_0E(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  return rowQ8_0(sc, qs, stride, nb, act, K, false, false);
}
function rowQ8_0EW(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  return rowQ8_0(sc, qs, stride, nb, act, K, true, false);
}
function rowQ8_0F(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  return rowQ8_0(sc, qs, stride, nb, act, K, false, true);
}
function rowQ8_0FW(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  return rowQ8_0(sc, qs, stride, nb, act, K, true, true);
}

export function dotQ8_0(sc: usize, qs: usize, stride: usize, nb: i32, act: usize, K: i32): f32 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    if (fusedMadd()) return dotAdd() ? rowQ8_0FW(sc, qs, stride, nb, act, K) : rowQ8_0F(sc, qs, stride, nb, act, K);
    return dotAdd() ? rowQ8_0EW(sc, qs, stride, nb, act, K) : rowQ8_0E(sc, qs, stride, nb, act, K);
  }
  return rowQ8_0E(sc, qs, stride, nb, act, K);
}

/**
 * Four interleaved Q8_0 rows (136-byte chunks per block: 4 f16 scales, then 4 x 32
 * quants) against one activation row: the four dot products.
 */
@inline function group(chunk: usize, nb: i32, act: usize, K: i32, wide: bool, fused: bool): v128 {
  let lo0 = f32x4.splat(0);
  let hi0 = f32x4.splat(0);
  let lo1 = f32x4.splat(0);
  let hi1 = f32x4.splat(0);
  let lo2 = f32x4.splat(0);
  let hi2 = f32x4.splat(0);
  let lo3 = f32x4.splat(0);
  let hi3 = f32x4.splat(0);
  let da = act + 2 * <usize>K;
  for (let b = 0; b < nb; b++, chunk += 136, act += 32 * QB, da += 4) {
    const d = f32x4.mul(f16x4At(chunk), f32x4.splat(load<f32>(da)));
    const d0 = v128.shuffle<f32>(d, d, 0, 0, 0, 0);
    lo0 = fmaLanes(lo0, d0, q8Lanes(chunk + 8, act, 0, wide), fused);
    hi0 = fmaLanes(hi0, d0, q8Lanes(chunk + 8, act, 1, wide), fused);
    const d1 = v128.shuffle<f32>(d, d, 1, 1, 1, 1);
    lo1 = fmaLanes(lo1, d1, q8Lanes(chunk + 40, act, 0, wide), fused);
    hi1 = fmaLanes(hi1, d1, q8Lanes(chunk + 40, act, 1, wide), fused);
    const d2 = v128.shuffle<f32>(d, d, 2, 2, 2, 2);
    lo2 = fmaLanes(lo2, d2, q8Lanes(chunk + 72, act, 0, wide), fused);
    hi2 = fmaLanes(hi2, d2, q8Lanes(chunk + 72, act, 1, wide), fused);
    const d3 = v128.shuffle<f32>(d, d, 3, 3, 3, 3);
    lo3 = fmaLanes(lo3, d3, q8Lanes(chunk + 104, act, 0, wide), fused);
    hi3 = fmaLanes(hi3, d3, q8Lanes(chunk + 104, act, 1, wide), fused);
  }
  return hsum8x4(lo0, hi0, lo1, hi1, lo2, hi2, lo3, hi3);
}

function groupE(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  return group(chunk, nb, act, K, false, false);
}
function groupEW(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  return group(chunk, nb, act, K, true, false);
}
function groupF(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  return group(chunk, nb, act, K, false, true);
}
function groupFW(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  return group(chunk, nb, act, K, true, true);
}

/** Four interleaved Q8_0 rows against one activation row (a column's result does not depend on its batch). */
export function groupQ8_0(chunk: usize, nb: i32, act: usize, K: i32): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    if (fusedMadd()) return dotAdd() ? groupFW(chunk, nb, act, K) : groupF(chunk, nb, act, K);
    return dotAdd() ? groupEW(chunk, nb, act, K) : groupE(chunk, nb, act, K);
  }
  return groupE(chunk, nb, act, K);
}

/** lanes of a column's block against one row's |w| (m) with w's sign masks (s): q8Lanes' sums. */
@inline function q8LanesPre(act: usize, m: v128, s: v128, wide: bool): v128 {
  const a = i8x16.sub(v128.xor(v128.load(act), s), s);
  if (wide) return i32x4.relaxed_dot_i8x16_i7x16_add_s(a, m, i32x4.splat(0));
  return i32x4.dot_i16x8_s(rdot(a, m), C_ONES16());
}

/**
 * Four interleaved Q8_0 rows against four activation rows with the fused multiply-add
 * (relaxed build): a row at a time, its block's |w| and signs found once for the four
 * columns (eight accumulators; the group's weights stay in cache from row to row).
 */
@inline function group4(chunk: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize, wide: bool): void {
  const off = 2 * <usize>K;
  for (let r: usize = 0; r < 4; r++) {
    let l0 = f32x4.splat(0);
    let h0 = f32x4.splat(0);
    let l1 = f32x4.splat(0);
    let h1 = f32x4.splat(0);
    let l2 = f32x4.splat(0);
    let h2 = f32x4.splat(0);
    let l3 = f32x4.splat(0);
    let h3 = f32x4.splat(0);
    let w = chunk + 8 + 32 * r;
    let sc = chunk + 2 * r;
    for (let b: usize = 0; b < <usize>nb; b++, w += 136, sc += 136) {
      const x0 = v128.load(w);
      const x1 = v128.load(w, 16);
      const s0 = i8x16.lt_s(x0, i8x16.splat(0));
      const s1 = i8x16.lt_s(x1, i8x16.splat(0));
      const m0 = i8x16.abs(x0);
      const m1 = i8x16.abs(x1);
      const dw = f16ToF32(load<u16>(sc));
      const q = b << 5;
      const db = off + (b << 2);
      let d = f32x4.splat(dw * load<f32>(a0 + db));
      l0 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a0 + q, m0, s0, wide)), d, l0);
      h0 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a0 + q + 16, m1, s1, wide)), d, h0);
      d = f32x4.splat(dw * load<f32>(a1 + db));
      l1 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a1 + q, m0, s0, wide)), d, l1);
      h1 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a1 + q + 16, m1, s1, wide)), d, h1);
      d = f32x4.splat(dw * load<f32>(a2 + db));
      l2 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a2 + q, m0, s0, wide)), d, l2);
      h2 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a2 + q + 16, m1, s1, wide)), d, h2);
      d = f32x4.splat(dw * load<f32>(a3 + db));
      l3 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a3 + q, m0, s0, wide)), d, l3);
      h3 = f32x4.relaxed_madd(f32x4.convert_i32x4_s(q8LanesPre(a3 + q + 16, m1, s1, wide)), d, h3);
    }
    store<f32>(o0 + 4 * r, hsum(f32x4.add(l0, h0)));
    store<f32>(o1 + 4 * r, hsum(f32x4.add(l1, h1)));
    store<f32>(o2 + 4 * r, hsum(f32x4.add(l2, h2)));
    store<f32>(o3 + 4 * r, hsum(f32x4.add(l3, h3)));
  }
}

function group4F(chunk: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize): void {
  group4(chunk, nb, K, a0, a1, a2, a3, o0, o1, o2, o3, false);
}
function group4FW(chunk: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize): void {
  group4(chunk, nb, K, a0, a1, a2, a3, o0, o1, o2, o3, true);
}

/**
 * Four interleaved Q8_0 rows against four activation rows, each column's bits those of
 * groupQ8_0 (the same lanes and operations).
 */
export function groupQ8_0x4(chunk: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize): void {
  if (ASC_FEATURE_RELAXED_SIMD && fusedMadd()) {
    if (dotAdd()) group4FW(chunk, nb, K, a0, a1, a2, a3, o0, o1, o2, o3);
    else group4F(chunk, nb, K, a0, a1, a2, a3, o0, o1, o2, o3);
    return;
  }
  v128.store(o0, groupQ8_0(chunk, nb, a0, K));
  v128.store(o1, groupQ8_0(chunk, nb, a1, K));
  v128.store(o2, groupQ8_0(chunk, nb, a2, K));
  v128.store(o3, groupQ8_0(chunk, nb, a3, K));
}
