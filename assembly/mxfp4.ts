// MXFP4 rows (ggml type 39: 17-byte blocks of 32, an E8M0 exponent byte then 16 bytes of
// E2M1 codes, element j < 16 the low nibble of byte j, j + 16 the high one): dequantized
// to f32, and dotted with per-32 quantized activations (Q8_0, ggml's vec_dot_type for it)
// as integer sums: the codes become their doubled values (-12..12) through a byte
// shuffle, and each block's exact sum is scaled by 2^(e-128) times the activation scale.
//
// Every path (ggml's layout, the k4 layout below; one column or four) takes the same steps
// per block and row: the exact integer Σ w·a, then acc + Σ·(2^(e-128)·da) (fused in the
// relaxed build), so a row's result does not depend on its layout or its batch.

import { C_M4, C_MXFP4, C_MXFP4_BIASED, C_ONE32, C_ONES16, dotAdd, sel32 } from './consts';
import { madd } from './dot';
import { rda, rdot } from './kquant';
import { QB } from './qdot';

/** 2^(e − 128) as f32 bits (GGML_E8M0_TO_FP32_HALF; e = 0, 1 give the subnormals 2^-128, 2^-127). */
@inline export function e8m0Half(e: u32): f32 {
  return reinterpret<f32>(e < 2 ? <u32>0x00200000 << e : (e - 1) << 23);
}

/** e8m0Half of the four bytes at p, as f32x4 (the same bits lane by lane). */
@inline function e8m0Half4(p: usize): v128 {
  const e = i32x4.extend_low_i16x8_u(v128.load8x8_u(p));
  const one = C_ONE32();
  const normal = i32x4.shl(i32x4.sub(e, one), 23);
  // a byte of 0 or 1 (the subnormal results) is rare: test the four at once (a zero byte
  // of w & 0xfefefefe), and only then take e = 0, 1 to 0x00200000 << e = (e + 1) << 21
  const w = load<u32>(p) & 0xfefefefe;
  if (((w - 0x01010101) & ~w & 0x80808080) == 0) return normal;
  return sel32(i32x4.shl(i32x4.add(e, one), 21), normal, i32x4.le_u(e, one));
}

/** The block's 32 values as int8 lanes: elements 0..15 (lo) and 16..31 (hi). */
@inline function codesLo(q: v128): v128 {
  return i8x16.swizzle(C_MXFP4(), v128.and(q, C_M4()));
}
@inline function codesHi(q: v128): v128 {
  return i8x16.swizzle(C_MXFP4(), i8x16.shr_u(q, 4));
}

/** Widen 16 i8 lanes, scale by d, store 16 f32 at dst. */
@inline function store16(q: v128, d: v128, dst: usize): void {
  const lo = i16x8.extend_low_i8x16_s(q);
  const hi = i16x8.extend_high_i8x16_s(q);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(lo)), d));
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(lo)), d), 16);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(hi)), d), 32);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(hi)), d), 48);
}

/** nb blocks at src (ggml's bytes) to 32·nb f32 at dst (exact: small integers times a power of two). */
export function dequantMXFP4(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 17, dst += 128) {
    const d = f32x4.splat(e8m0Half(load<u8>(src)));
    const q = v128.load(src, 1);
    store16(codesLo(q), d, dst);
    store16(codesHi(q), d, dst + 64);
  }
}

/**
 * The codes of one vector of quant bytes in the relaxed build's form: the values plus 12
 * (0..24, a valid 7-bit operand); the indices are 0..15, so the relaxed swizzle (a bare
 * pshufb) is exact. Σ (w + 12)·a less 12 Σ a is then Σ w·a, with 12 Σ a from the
 * activation row's stored 8 Σ a (times 3/2: exact, a multiple of 8).
 */
@inline function biasedLo(q: v128): v128 {
  return swizzle16(C_MXFP4_BIASED(), v128.and(q, C_M4()));
}
@inline function biasedHi(q: v128): v128 {
  return swizzle16(C_MXFP4_BIASED(), v128.and(i16x8.shr_u(q, 4), C_M4()));
}
@inline function swizzle16(t: v128, i: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i8x16.relaxed_swizzle(t, i);
  return i8x16.swizzle(t, i);
}

/** 12 Σ a of block b of an activation row (act, K elements) from its stored 8 Σ a. */
@inline function bias12(act: usize, b: i32, K: i32): i32 {
  const s8 = load<i32>(act + 2 * <usize>K + (<usize>K >> 3) + (<usize>b << 2));
  return s8 + (s8 >> 1);
}

/** The exact Σ w·a of one block (quant bytes q) with block b of an activation row. */
@inline function blockDot(q: v128, act: usize, b: i32, K: i32): i32 {
  const a = act + <usize>b * 32 * QB;
  let s: v128;
  if (ASC_FEATURE_RELAXED_SIMD) {
    // each i16 lane at most 2·2·24·127 = 12192
    s = i32x4.dot_i16x8_s(i16x8.add(rdot(v128.load(a), biasedLo(q)), rdot(v128.load(a, 16), biasedHi(q))), C_ONES16());
  } else {
    // int16 activations, each 16 as 8 even-indexed then 8 odd-indexed elements (qdot.ts)
    const lo = codesLo(q);
    const hi = codesHi(q);
    s = i32x4.add(
      i32x4.add(i32x4.dot_i16x8_s(i16x8.shr_s(i16x8.shl(lo, 8), 8), v128.load(a)), i32x4.dot_i16x8_s(i16x8.shr_s(lo, 8), v128.load(a, 16))),
      i32x4.add(i32x4.dot_i16x8_s(i16x8.shr_s(i16x8.shl(hi, 8), 8), v128.load(a, 32)), i32x4.dot_i16x8_s(i16x8.shr_s(hi, 8), v128.load(a, 48))),
    );
  }
  const t = i32x4.extract_lane(s, 0) + i32x4.extract_lane(s, 1) + i32x4.extract_lane(s, 2) + i32x4.extract_lane(s, 3);
  return ASC_FEATURE_RELAXED_SIMD ? t - bias12(act, b, K) : t;
}

/** acc + Σ·(2^(e-128)·da) in lane 0 for block b of a row (e at w) against activation row act. */
@inline function blockStep(w: usize, q: v128, act: usize, b: i32, K: i32, acc: v128): v128 {
  const s = e8m0Half(load<u8>(w)) * load<f32>(act + 2 * <usize>K + (<usize>b << 2));
  return madd(f32x4.splat(<f32>blockDot(q, act, b, K)), f32x4.splat(s), acc);
}

/** One MXFP4 row (nb blocks at w, ggml's layout) against a per-32 activation row of K elements. */
export function dotMXFP4(w: usize, nb: i32, act: usize, K: i32): f32 {
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++, w += 17) acc = blockStep(w, v128.load(w, 1), act, b, K, acc);
  return f32x4.extract_lane(acc, 0);
}

/** One MXFP4 row against four activation rows: dotMXFP4's steps for each. */
export function dotMXFP4x4(w: usize, nb: i32, x0: usize, x1: usize, x2: usize, x3: usize, K: i32): v128 {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let b = 0; b < nb; b++, w += 17) {
    const q = v128.load(w, 1);
    c0 = blockStep(w, q, x0, b, K, c0);
    c1 = blockStep(w, q, x1, b, K, c1);
    c2 = blockStep(w, q, x2, b, K, c2);
    c3 = blockStep(w, q, x3, b, K, c3);
  }
  return f32x4(f32x4.extract_lane(c0, 0), f32x4.extract_lane(c1, 0), f32x4.extract_lane(c2, 0), f32x4.extract_lane(c3, 0));
}

// ---- the k4 layout (relaxed build, weights only; src/backends/cpu/layout-k.ts) ----------
//
// A group's block column (4 x 17 = 68 bytes): +0 e of rows 0..3; +4 + 16kk: byte 4r+e =
// qs[4kk+e] of row r (low nibble: element 4kk+e, high nibble: element 16+4kk+e), as Q4_0's
// k4 (kquant.ts). Each code vector meets one broadcast run of four activation bytes and
// gives a lane per row, so four rows need no horizontal sums.

/** Repack four MXFP4 rows (ggml layout at src, rowBytes apart) into the group at dst (ts: 17). */
export function repackMXFP4(src: usize, dst: usize, nb: i32, ts: i32, rowBytes: i32): void {
  for (let b = 0; b < nb; b++) {
    const c = dst + <usize>b * 68;
    for (let r = 0; r < 4; r++) {
      const p = src + <usize>r * <usize>rowBytes + <usize>b * 17;
      store<u8>(c + <usize>r, load<u8>(p));
      for (let kk = 0; kk < 4; kk++) store<u32>(c + 4 + <usize>(16 * kk + 4 * r), load<u32>(p + 1 + <usize>(4 * kk)));
    }
  }
}

/** Restore row r (0..3) of the group at c (nb blocks) in ggml's layout at dst. */
export function unpackRowMXFP4(c: usize, r: i32, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, c += 68, dst += 17) {
    store<u8>(dst, load<u8>(c + <usize>r));
    for (let kk = 0; kk < 4; kk++) store<u32>(dst + 1 + <usize>(4 * kk), load<u32>(c + 4 + <usize>(16 * kk + 4 * r)));
  }
}

/** Dequantize row r of the group at c (nb blocks) to f32 at dst, as dequantMXFP4. */
export function dequantRowMXFP4(c: usize, r: i32, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, c += 68, dst += 128) {
    const d = e8m0Half(load<u8>(c + <usize>r));
    for (let j = 0; j < 16; j++) {
      const q = <i32>load<u8>(c + 4 + <usize>((j >> 2) * 16 + r * 4 + (j & 3)));
      store<f32>(dst + (j << 2), <f32>load<i8>(KVALUES + (q & 15)) * d);
      store<f32>(dst + ((j + 16) << 2), <f32>load<i8>(KVALUES + (q >> 4)) * d);
    }
  }
}

/** The codebook as it is in the constant table (consts.ts, C_MXFP4). */
const KVALUES: usize = 1024 + 1024;

/**
 * One column's block step over a group: acc + (Σ w·a)·(2^(e-128)·da), lanes = rows (l/h:
 * the biased codes of the four low / high nibble vectors; dw: the rows' 2^(e-128)).
 * Wide (dotAdd): 32-bit lanes from −12 Σ a on, two chains; else 16-bit lane pairs, the
 * low and high halves apart (each at most 4·2·24·127 = 24384), widened at the end.
 */
@inline function mxCol(
  act: usize, b: i32, K: i32, l0: v128, l1: v128, l2: v128, l3: v128, h0: v128, h1: v128, h2: v128, h3: v128,
  dw: v128, acc: v128, wide: bool,
): v128 {
  const a = act + (<usize>b << 5);
  const b12 = bias12(act, b, K);
  let i: v128;
  if (wide) {
    let p = rda(v128.load32_splat(a), l0, i32x4.splat(-b12));
    let q = rda(v128.load32_splat(a, 4), l1, i32x4.splat(0));
    p = rda(v128.load32_splat(a, 8), l2, p);
    q = rda(v128.load32_splat(a, 12), l3, q);
    p = rda(v128.load32_splat(a, 16), h0, p);
    q = rda(v128.load32_splat(a, 20), h1, q);
    p = rda(v128.load32_splat(a, 24), h2, p);
    q = rda(v128.load32_splat(a, 28), h3, q);
    i = i32x4.add(p, q);
  } else {
    let p = rdot(v128.load32_splat(a), l0);
    p = i16x8.add(p, rdot(v128.load32_splat(a, 4), l1));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 8), l2));
    p = i16x8.add(p, rdot(v128.load32_splat(a, 12), l3));
    let q = rdot(v128.load32_splat(a, 16), h0);
    q = i16x8.add(q, rdot(v128.load32_splat(a, 20), h1));
    q = i16x8.add(q, rdot(v128.load32_splat(a, 24), h2));
    q = i16x8.add(q, rdot(v128.load32_splat(a, 28), h3));
    i = i32x4.sub(i32x4.add(i32x4.dot_i16x8_s(p, C_ONES16()), i32x4.dot_i16x8_s(q, C_ONES16())), i32x4.splat(b12));
  }
  return madd(f32x4.convert_i32x4_s(i), f32x4.mul(dw, v128.load32_splat(act + 2 * <usize>K + (<usize>b << 2))), acc);
}

/** Four rows (the group at c, nb blocks) against one activation row: [r0..r3]. */
export function gemvMXFP4(c: usize, nb: i32, act: usize, K: i32): v128 {
  return dotAdd() ? gemvMXFP4Of(c, nb, act, K, true) : gemvMXFP4Of(c, nb, act, K, false);
}

@inline function gemvMXFP4Of(c: usize, nb: i32, act: usize, K: i32, wide: bool): v128 {
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++, c += 68) {
    const w0 = v128.load(c, 4);
    const w1 = v128.load(c, 20);
    const w2 = v128.load(c, 36);
    const w3 = v128.load(c, 52);
    acc = mxCol(
      act, b, K,
      biasedLo(w0), biasedLo(w1), biasedLo(w2), biasedLo(w3),
      biasedHi(w0), biasedHi(w1), biasedHi(w2), biasedHi(w3),
      e8m0Half4(c), acc, wide,
    );
  }
  return acc;
}

/** Four rows against four activation rows (results at o0..o3); per column the steps of gemvMXFP4. */
export function gemmMXFP4x4(
  c: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
): void {
  if (dotAdd()) gemmMXFP4x4Of(c, nb, K, a0, a1, a2, a3, o0, o1, o2, o3, true);
  else gemmMXFP4x4Of(c, nb, K, a0, a1, a2, a3, o0, o1, o2, o3, false);
}

@inline function gemmMXFP4x4Of(
  c: usize, nb: i32, K: i32, a0: usize, a1: usize, a2: usize, a3: usize, o0: usize, o1: usize, o2: usize, o3: usize,
  wide: bool,
): void {
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let b = 0; b < nb; b++, c += 68) {
    // the eight code vectors decoded once for the four columns
    const w0 = v128.load(c, 4);
    const w1 = v128.load(c, 20);
    const w2 = v128.load(c, 36);
    const w3 = v128.load(c, 52);
    const l0 = biasedLo(w0);
    const l1 = biasedLo(w1);
    const l2 = biasedLo(w2);
    const l3 = biasedLo(w3);
    const h0 = biasedHi(w0);
    const h1 = biasedHi(w1);
    const h2 = biasedHi(w2);
    const h3 = biasedHi(w3);
    const dw = e8m0Half4(c);
    c0 = mxCol(a0, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c0, wide);
    c1 = mxCol(a1, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c1, wide);
    c2 = mxCol(a2, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c2, wide);
    c3 = mxCol(a3, b, K, l0, l1, l2, l3, h0, h1, h2, h3, dw, c3, wide);
  }
  v128.store(o0, c0);
  v128.store(o1, c1);
  v128.store(o2, c2);
  v128.store(o3, c3);
}
