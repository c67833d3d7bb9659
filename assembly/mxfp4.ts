// MXFP4 rows (ggml type 39: 17-byte blocks of 32, an E8M0 exponent byte then 16 bytes of
// E2M1 codes, element j < 16 the low nibble of byte j, j + 16 the high one): dequantized
// to f32, and dotted with per-32 quantized activations (Q8_0, ggml's vec_dot_type for it)
// as integer sums: the codes become their doubled values (-12..12) through a byte
// shuffle, and each block's sum is scaled by 2^(e-128) times the activation scale.

import { hsum } from './dot';
import { QB } from './qdot';

/** ggml's kvalues_mxfp4 (E2M1 values doubled) as one vector. */
@inline function codebook(): v128 {
  return i8x16(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
}

/** 2^(e − 128) as f32 bits (GGML_E8M0_TO_FP32_HALF; e = 0, 1 give the subnormals 2^-128, 2^-127). */
@inline export function e8m0Half(e: u32): f32 {
  return reinterpret<f32>(e < 2 ? <u32>0x00200000 << e : (e - 1) << 23);
}

/** The block's 32 values as int8 lanes: elements 0..15 (lo) and 16..31 (hi). */
@inline function codesLo(q: v128): v128 {
  return i8x16.swizzle(codebook(), v128.and(q, i8x16.splat(0x0f)));
}
@inline function codesHi(q: v128): v128 {
  return i8x16.swizzle(codebook(), i8x16.shr_u(q, 4));
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

/** The codebook plus 12 (0..24): the relaxed build's weight operand (see blockSums). */
@inline function codebookBiased(): v128 {
  return i8x16(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
}

/**
 * The block's 32 codes in the build's form: relaxed, the values plus 12 (a valid 7-bit
 * operand); strict, the values.
 */
@inline function blockLo(q: v128): v128 {
  // the indices are 0..15, so the relaxed swizzle (a bare pshufb) is exact
  if (ASC_FEATURE_RELAXED_SIMD) return i8x16.relaxed_swizzle(codebookBiased(), v128.and(q, i8x16.splat(0x0f)));
  return codesLo(q);
}
@inline function blockHi(q: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return i8x16.relaxed_swizzle(codebookBiased(), i8x16.shr_u(q, 4));
  return codesHi(q);
}

/**
 * Σ w·a over one block as i32x4 partial sums: lo, hi from blockLo/blockHi, a the
 * activation quants of the build's format (int8 in the relaxed build; int16 even/odd
 * halves in the strict one). Relaxed: Σ (w + 12)·a − Σ 12·a per pair of elements, so each
 * i16 lane (at most 2·2·24·127 before the subtraction) and each i32 lane hold exactly what
 * signed products would, with no sign handling.
 */
@inline function blockSums(lo: v128, hi: v128, act: usize): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const a0 = v128.load(act);
    const a1 = v128.load(act, 16);
    const twelve = i8x16.splat(12);
    const p = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(a0, lo), i16x8.relaxed_dot_i8x16_i7x16_s(a1, hi));
    const o = i16x8.add(i16x8.relaxed_dot_i8x16_i7x16_s(a0, twelve), i16x8.relaxed_dot_i8x16_i7x16_s(a1, twelve));
    return i32x4.dot_i16x8_s(i16x8.sub(p, o), i16x8.splat(1));
  }
  const e0 = i16x8.shr_s(i16x8.shl(lo, 8), 8);
  const e1 = i16x8.shr_s(lo, 8);
  const e2 = i16x8.shr_s(i16x8.shl(hi, 8), 8);
  const e3 = i16x8.shr_s(hi, 8);
  return i32x4.add(
    i32x4.add(i32x4.dot_i16x8_s(e0, v128.load(act)), i32x4.dot_i16x8_s(e1, v128.load(act, 16))),
    i32x4.add(i32x4.dot_i16x8_s(e2, v128.load(act, 32)), i32x4.dot_i16x8_s(e3, v128.load(act, 48))),
  );
}

/** One MXFP4 row (nb blocks at w) against a per-32 activation row of K elements. */
export function dotMXFP4(w: usize, nb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  for (let b = 0; b < nb; b++, w += 17) {
    const s = e8m0Half(load<u8>(w)) * load<f32>(ad + (<usize>b << 2));
    const q = v128.load(w, 1);
    const i = blockSums(blockLo(q), blockHi(q), act + <usize>b * 32 * QB);
    acc = f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(i), f32x4.splat(s)));
  }
  return hsum(acc);
}

/**
 * One MXFP4 row against four activation rows: the four dots (each the same steps, so the
 * same bits, as dotMXFP4's), decoding each block once.
 */
export function dotMXFP4x4(w: usize, nb: i32, x0: usize, x1: usize, x2: usize, x3: usize, K: i32): v128 {
  const k2 = 2 * <usize>K;
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let b = 0; b < nb; b++, w += 17) {
    const e = e8m0Half(load<u8>(w));
    const q = v128.load(w, 1);
    const lo = blockLo(q);
    const hi = blockHi(q);
    const o = <usize>b * 32 * QB;
    const so = <usize>b << 2;
    c0 = f32x4.add(c0, f32x4.mul(f32x4.convert_i32x4_s(blockSums(lo, hi, x0 + o)), f32x4.splat(e * load<f32>(x0 + k2 + so))));
    c1 = f32x4.add(c1, f32x4.mul(f32x4.convert_i32x4_s(blockSums(lo, hi, x1 + o)), f32x4.splat(e * load<f32>(x1 + k2 + so))));
    c2 = f32x4.add(c2, f32x4.mul(f32x4.convert_i32x4_s(blockSums(lo, hi, x2 + o)), f32x4.splat(e * load<f32>(x2 + k2 + so))));
    c3 = f32x4.add(c3, f32x4.mul(f32x4.convert_i32x4_s(blockSums(lo, hi, x3 + o)), f32x4.splat(e * load<f32>(x3 + k2 + so))));
  }
  return f32x4(hsum(c0), hsum(c1), hsum(c2), hsum(c3));
}
