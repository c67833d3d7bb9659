// The codebook and ternary types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M,
// TQ1_0, TQ2_0): f32 rows (dequantIQ, ggml's arithmetic step for step) and integer dot
// products against Q8_K activations.
//
// A row of weights is first unpacked once (unpackIQ) into signed 8-bit values with an
// integer scale per 16 and a float scale per 256, which every column of the chunk then
// reuses (dotIQ, dotIQx4): per 256, Σ_16 scale · Σ value·activation in integers, times
// the row's float scale and the activations' one. Scales become integers by moving the
// types' constant factors into the float scale: IQ2 (2s+1)/8, IQ3_XXS (2s+1)/4, IQ3_S
// 2s+1; IQ1's shift of ±1/8 becomes exact as 8·g ± 1 with the scale /8.
//
// Unpacked row (K values): relaxed build: |value| bytes at +0, sign masks (0xff where
// negative) at +K; strict build: int16 values at +0, each 16 as 8 even-indexed then 8
// odd-indexed (the activations' order). Then int16 scales per 16 at +2K and f32 scales
// per 256 at +2K+K/8.
//
// TQ2_0 and TQ1_0 in the relaxed build take neither path: dotTQ2_0 and dotTQ1_0 read
// their fields directly.
//
// The grids live in every arena's header (src/backends/cpu/arena.ts writes them; keep
// the offsets in step): 8 bytes per IQ2/IQ1 point, 4 per IQ3 point, then the 128 sign
// bytes of IQ2_XXS/IQ2_XS/IQ3_XXS (7 stored bits completed to even parity), then 8 mask
// bytes (0xff where the bit is set) for each of the 256 sign bytes, then the same masks
// for each of the 128 stored 7-bit values, then IQ1's swizzle and its 8 + δ bytes.
//
// The one-column kernels (dotIQ2XXS and siblings) decode straight from the weights. They
// are bound by instruction count, not memory, so they avoid what V8 compiles into many
// instructions: vectors built from scalars in general registers (grid points load into
// lanes instead), constants written as splats (rematerialized every iteration; loaded
// from the tables instead), per-group scales extracted in general registers (a swizzle of
// a per-super-block vector instead), and short loop passes (two groups a pass).

import { f16ToF32 } from './math';
import { C_IQ1M_SHIFT, C_LANE16, C_M03, C_M4, C_M10, C_ONES16, C_W3, C_W8, dotAdd } from './consts';
import { hsum, rdot } from './dot';
import { rda } from './kquant';
import { T_IQ1_M, T_IQ1_S, T_IQ2_S, T_IQ2_XS, T_IQ2_XXS, T_IQ3_S, T_IQ3_XXS, T_TQ1_0, T_TQ2_0 } from './types';

const TABLES: usize = 16384;
const G_IQ2XXS: usize = TABLES;
const G_IQ2XS: usize = TABLES + 2048;
const G_IQ2S: usize = TABLES + 6144;
const G_IQ1S: usize = TABLES + 14336;
const G_IQ3XXS: usize = TABLES + 30720;
const G_IQ3S: usize = TABLES + 31744;
const KSIGNS: usize = TABLES + 33792;
/** 8 bytes per sign byte: 0xff where its bit k is set. */
const MASK8: usize = TABLES + 34048;
/** 8 mask bytes per 7 stored sign bits (MASK8 of the parity-completed byte). */
const KMASK: usize = TABLES + 36096;
/** IQ1: bytes 8 and 16 (the rest 0): swizzled by grid bytes -1/0/1, 0/8/16 (a negative index gives 0). */
const IQ1_SWZ: usize = TABLES + 37120;
/**
 * IQ1: 8 + δ per byte (9, or 7 where δ = -1) by IQ1_M's high-bits byte: bit 3 the low 8
 * values' δ, bit 7 the high 8 values' (16 bytes per byte value).
 */
const IQ1_DELTA: usize = TABLES + 37136;

/** The activation bytes at a with the signs of the mask m (0xff lanes negated). */
@inline function signed(a: usize, m: v128): v128 {
  return i8x16.sub(v128.xor(v128.load(a), m), m);
}

/** acc + f32(isum) · d per lane: a super-block's integer lane sums into the float accumulator. */
@inline function addBlock(acc: v128, isum: v128, d: f32): v128 {
  return f32x4.add(acc, f32x4.mul(f32x4.convert_i32x4_s(isum), f32x4.splat(d)));
}

// ---------------------------------------------------------------- f32 rows

@inline function gridByte(g: usize, j: i32): f32 {
  return <f32>load<u8>(g + <usize>j);
}

/** y[j] = ±(db · grid[j]) for n coordinates of a grid point, sign bit `shift + j` of signs. */
@inline function putPoint(dst: usize, db: f32, g: usize, n: i32, signs: u32, shift: i32): void {
  for (let j = 0; j < n; j++) {
    const v = db * gridByte(g, j);
    store<f32>(dst + (<usize>j << 2), (signs >> (shift + j)) & 1 ? -v : v);
  }
}

@inline function ksign(i: u32): u32 {
  return <u32>load<u8>(KSIGNS + <usize>(i & 127));
}

function dequantIQ2_XXS(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 66) {
    const d = f16ToF32(load<u16>(src));
    for (let ib = 0; ib < 8; ib++) {
      const q = src + 2 + <usize>ib * 8;
      const aux = load<u32>(q, 4);
      const db: f32 = d * (<f32>0.5 + <f32>(aux >> 28)) * <f32>0.25;
      for (let l = 0; l < 4; l++, dst += 32) {
        putPoint(dst, db, G_IQ2XXS + (<usize>load<u8>(q + <usize>l) << 3), 8, ksign(aux >> (7 * l)), 0);
      }
    }
  }
}

function dequantIQ2_XS(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 74) {
    const d = f16ToF32(load<u16>(src));
    for (let ib = 0; ib < 8; ib++) {
      const sc = <u32>load<u8>(src + 66 + <usize>ib);
      const db0: f32 = d * (<f32>0.5 + <f32>(sc & 15)) * <f32>0.25;
      const db1: f32 = d * (<f32>0.5 + <f32>(sc >> 4)) * <f32>0.25;
      for (let l = 0; l < 4; l++, dst += 32) {
        const q = <u32>load<u16>(src + 2 + (<usize>(4 * ib + l) << 1));
        putPoint(dst, l < 2 ? db0 : db1, G_IQ2XS + (<usize>(q & 511) << 3), 8, ksign(q >> 9), 0);
      }
    }
  }
}

function dequantIQ2_S(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 82) {
    const d = f16ToF32(load<u16>(src));
    for (let ib = 0; ib < 8; ib++) {
      const sc = <u32>load<u8>(src + 74 + <usize>ib);
      const qh = <u32>load<u8>(src + 66 + <usize>ib);
      const db0: f32 = d * (<f32>0.5 + <f32>(sc & 15)) * <f32>0.25;
      const db1: f32 = d * (<f32>0.5 + <f32>(sc >> 4)) * <f32>0.25;
      for (let l = 0; l < 4; l++, dst += 32) {
        const g = <u32>load<u8>(src + 2 + <usize>(4 * ib + l)) | ((qh << (8 - 2 * l)) & 0x300);
        const signs = <u32>load<u8>(src + 34 + <usize>(4 * ib + l));
        putPoint(dst, l < 2 ? db0 : db1, G_IQ2S + (<usize>g << 3), 8, signs, 0);
      }
    }
  }
}

function dequantIQ3_XXS(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 98) {
    const d = f16ToF32(load<u16>(src));
    for (let ib = 0; ib < 8; ib++) {
      const aux = load<u32>(src + 66 + (<usize>ib << 2));
      const db: f32 = d * (<f32>0.5 + <f32>(aux >> 28)) * <f32>0.5;
      const q = src + 2 + <usize>ib * 8;
      for (let l = 0; l < 4; l++, dst += 32) {
        const signs = ksign(aux >> (7 * l));
        putPoint(dst, db, G_IQ3XXS + (<usize>load<u8>(q + <usize>(2 * l)) << 2), 4, signs, 0);
        putPoint(dst + 16, db, G_IQ3XXS + (<usize>load<u8>(q + <usize>(2 * l + 1)) << 2), 4, signs, 4);
      }
    }
  }
}

function dequantIQ3_S(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 110) {
    const d = f16ToF32(load<u16>(src));
    for (let ib = 0; ib < 8; ib++) {
      const sc = <u32>load<u8>(src + 106 + <usize>(ib >> 1));
      const k: i32 = 1 + 2 * <i32>(ib & 1 ? sc >> 4 : sc & 15);
      const db: f32 = d * <f32>k;
      const qh = <u32>load<u8>(src + 66 + <usize>ib);
      const q = src + 2 + <usize>ib * 8;
      for (let l = 0; l < 4; l++, dst += 32) {
        const signs = <u32>load<u8>(src + 74 + <usize>(4 * ib + l));
        const g1 = <u32>load<u8>(q + <usize>(2 * l)) | ((qh << (8 - 2 * l)) & 256);
        const g2 = <u32>load<u8>(q + <usize>(2 * l + 1)) | ((qh << (7 - 2 * l)) & 256);
        putPoint(dst, db, G_IQ3S + (<usize>g1 << 2), 4, signs, 0);
        putPoint(dst + 16, db, G_IQ3S + (<usize>g2 << 2), 4, signs, 4);
      }
    }
  }
}

/** y[j] = dl · (grid[j] + delta) for one IQ1 grid point. */
@inline function putIQ1(dst: usize, dl: f32, g: usize, delta: f32): void {
  for (let j = 0; j < 8; j++) store<f32>(dst + (<usize>j << 2), dl * (<f32>load<i8>(g + <usize>j) + delta));
}

function dequantIQ1_S(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 50) {
    const d = f16ToF32(load<u16>(src));
    for (let ib = 0; ib < 8; ib++) {
      const qh = <u32>load<u16>(src + 34 + (<usize>ib << 1));
      const k: i32 = 2 * <i32>((qh >> 12) & 7) + 1;
      const dl: f32 = d * <f32>k;
      const delta: f32 = qh & 0x8000 ? <f32>-0.125 : <f32>0.125;
      for (let l = 0; l < 4; l++, dst += 32) {
        const g = <u32>load<u8>(src + 2 + <usize>(4 * ib + l)) | (((qh >> (3 * l)) & 7) << 8);
        putIQ1(dst, dl, G_IQ1S + (<usize>g << 3), delta);
      }
    }
  }
}

/** The f16 super-scale of an IQ1_M block, spread over the top nibbles of its four scale words. */
@inline function iq1mScale(src: usize): f32 {
  const s0 = <u32>load<u16>(src, 48);
  const s1 = <u32>load<u16>(src, 50);
  const s2 = <u32>load<u16>(src, 52);
  const s3 = <u32>load<u16>(src, 54);
  return f16ToF32((s0 >> 12) | ((s1 >> 8) & 0xf0) | ((s2 >> 4) & 0xf00) | (s3 & 0xf000));
}

function dequantIQ1_M(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 56) {
    const d = iq1mScale(src);
    for (let ib = 0; ib < 8; ib++) {
      const s = <u32>load<u16>(src + 48 + (<usize>(ib >> 1) << 1)) >> (6 * (ib & 1));
      const k1: i32 = 2 * <i32>(s & 7) + 1;
      const k2: i32 = 2 * <i32>((s >> 3) & 7) + 1;
      const dl1: f32 = d * <f32>k1;
      const dl2: f32 = d * <f32>k2;
      for (let l = 0; l < 4; l++, dst += 32) {
        const h = <u32>load<u8>(src + 32 + <usize>(2 * ib + (l >> 1))) >> (4 * (l & 1));
        const g = <u32>load<u8>(src + <usize>(4 * ib + l)) | ((h & 7) << 8);
        putIQ1(dst, l < 2 ? dl1 : dl2, G_IQ1S + (<usize>g << 3), h & 8 ? <f32>-0.125 : <f32>0.125);
      }
    }
  }
}

/** Trit n (0..4) of a TQ1_0 byte, 0..2. */
@inline function trit(q: u32, n: i32): i32 {
  const p: u32 = n == 0 ? 1 : n == 1 ? 3 : n == 2 ? 9 : n == 3 ? 27 : 81;
  return <i32>((((q * p) & 0xff) * 3) >> 8);
}

function dequantTQ1_0(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 54) {
    const d = f16ToF32(load<u16>(src, 52));
    for (let n = 0; n < 5; n++) {
      for (let m = 0; m < 32; m++, dst += 4) store<f32>(dst, <f32>(trit(load<u8>(src + <usize>m), n) - 1) * d);
    }
    for (let n = 0; n < 5; n++) {
      for (let m = 0; m < 16; m++, dst += 4) store<f32>(dst, <f32>(trit(load<u8>(src + 32 + <usize>m), n) - 1) * d);
    }
    for (let n = 0; n < 4; n++) {
      for (let m = 0; m < 4; m++, dst += 4) store<f32>(dst, <f32>(trit(load<u8>(src + 48 + <usize>m), n) - 1) * d);
    }
  }
}

function dequantTQ2_0(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 66) {
    const d = f16ToF32(load<u16>(src, 64));
    for (let j = 0; j < 64; j += 32) {
      for (let l = 0; l < 4; l++) {
        for (let m = 0; m < 32; m++, dst += 4) {
          store<f32>(dst, <f32>(<i32>((<u32>load<u8>(src + <usize>(j + m)) >> (2 * l)) & 3) - 1) * d);
        }
      }
    }
  }
}

/** n elements (a multiple of 256) of a codebook or ternary type at src as f32 at dst. */
export function dequantIQ(type: i32, src: usize, n: i32, dst: usize): void {
  const nb = n >> 8;
  switch (type) {
    case T_IQ2_XXS:
      dequantIQ2_XXS(src, nb, dst);
      return;
    case T_IQ2_XS:
      dequantIQ2_XS(src, nb, dst);
      return;
    case T_IQ2_S:
      dequantIQ2_S(src, nb, dst);
      return;
    case T_IQ3_XXS:
      dequantIQ3_XXS(src, nb, dst);
      return;
    case T_IQ3_S:
      dequantIQ3_S(src, nb, dst);
      return;
    case T_IQ1_S:
      dequantIQ1_S(src, nb, dst);
      return;
    case T_IQ1_M:
      dequantIQ1_M(src, nb, dst);
      return;
    case T_TQ1_0:
      dequantTQ1_0(src, nb, dst);
      return;
    case T_TQ2_0:
      dequantTQ2_0(src, nb, dst);
      return;
    default:
      unreachable();
  }
}

// ---------------------------------------------------------------- unpacked rows

/** Address of the sign masks of sign byte s (0..255). */
@inline function mask8At(s: u32): usize {
  return MASK8 + (<usize>s << 3);
}

/** The 8 sign masks (0xff where bit k of s is set) of a sign byte. */
@inline function signMask8(s: u32): u64 {
  return load<u64>(mask8At(s & 0xff));
}

/** Two points of 8 grid bytes with their sign bytes, as 16 signed values (staging at t). */
@inline function put16(t: usize, g0: u64, s0: u32, g1: u64, s1: u32): void {
  const g = i64x2(<i64>g0, <i64>g1);
  const m = i64x2(<i64>signMask8(s0), <i64>signMask8(s1));
  v128.store(t, i8x16.sub(v128.xor(g, m), m));
}

/** Four IQ3 points (4 grid bytes each) with two sign bytes (one per pair), as 16 signed values. */
@inline function put16x4(t: usize, g0: u32, g1: u32, s0: u32, g2: u32, g3: u32, s1: u32): void {
  put16(t, <u64>g0 | (<u64>g1 << 32), s0, <u64>g2 | (<u64>g3 << 32), s1);
}

/** The first `nt` trits of 16 TQ1_0 bytes q, less 1, to t + stride·n (16 signed bytes each). */
@inline function tritsTQ1(q: v128, t: usize, stride: usize, nt: i32): void {
  let lo = i16x8.extend_low_i8x16_u(q);
  let hi = i16x8.extend_high_i8x16_u(q);
  const three = i16x8.splat(3);
  const ff = i16x8.splat(0xff);
  const one = i8x16.splat(1);
  for (let n = 0; n < nt; n++) {
    const pl = i16x8.mul(lo, three);
    const ph = i16x8.mul(hi, three);
    v128.store(t + <usize>n * stride, i8x16.sub(i8x16.narrow_i16x8_u(i16x8.shr_u(pl, 8), i16x8.shr_u(ph, 8)), one));
    lo = v128.and(pl, ff);
    hi = v128.and(ph, ff);
  }
}

/**
 * One super-block of `type` at w into staging: 256 signed values at t, 16 int16 scales at
 * sc; returns the float scale.
 */
function unpackBlock(type: i32, w: usize, t: usize, sc: usize): f32 {
  switch (type) {
    case T_IQ2_XXS: {
      for (let ib = 0; ib < 8; ib++) {
        const q = w + 2 + <usize>ib * 8;
        const aux = load<u32>(q, 4);
        for (let p = 0; p < 2; p++) {
          const l = 2 * p;
          const g0 = load<u64>(G_IQ2XXS + (<usize>load<u8>(q + <usize>l) << 3));
          const g1 = load<u64>(G_IQ2XXS + (<usize>load<u8>(q + <usize>(l + 1)) << 3));
          put16(t + <usize>(32 * ib + 16 * p), g0, ksign(aux >> (7 * l)), g1, ksign(aux >> (7 * (l + 1))));
        }
        const s = <i16>(2 * (aux >> 28) + 1);
        store<i16>(sc + (<usize>(2 * ib) << 1), s);
        store<i16>(sc + (<usize>(2 * ib + 1) << 1), s);
      }
      return f16ToF32(load<u16>(w)) * <f32>0.125;
    }
    case T_IQ2_XS: {
      for (let ib = 0; ib < 8; ib++) {
        const s = <u32>load<u8>(w + 66 + <usize>ib);
        for (let p = 0; p < 2; p++) {
          const q0 = <u32>load<u16>(w + 2 + (<usize>(4 * ib + 2 * p) << 1));
          const q1 = <u32>load<u16>(w + 2 + (<usize>(4 * ib + 2 * p + 1) << 1));
          const g0 = load<u64>(G_IQ2XS + (<usize>(q0 & 511) << 3));
          const g1 = load<u64>(G_IQ2XS + (<usize>(q1 & 511) << 3));
          put16(t + <usize>(32 * ib + 16 * p), g0, ksign(q0 >> 9), g1, ksign(q1 >> 9));
          store<i16>(sc + (<usize>(2 * ib + p) << 1), <i16>(2 * ((s >> (4 * p)) & 15) + 1));
        }
      }
      return f16ToF32(load<u16>(w)) * <f32>0.125;
    }
    case T_IQ2_S: {
      for (let ib = 0; ib < 8; ib++) {
        const s = <u32>load<u8>(w + 74 + <usize>ib);
        const qh = <u32>load<u8>(w + 66 + <usize>ib);
        for (let p = 0; p < 2; p++) {
          const l = 2 * p;
          const i0 = <u32>load<u8>(w + 2 + <usize>(4 * ib + l)) | ((qh << (8 - 2 * l)) & 0x300);
          const i1 = <u32>load<u8>(w + 2 + <usize>(4 * ib + l + 1)) | ((qh << (6 - 2 * l)) & 0x300);
          const s0 = <u32>load<u8>(w + 34 + <usize>(4 * ib + l));
          const s1 = <u32>load<u8>(w + 34 + <usize>(4 * ib + l + 1));
          put16(t + <usize>(32 * ib + 16 * p), load<u64>(G_IQ2S + (<usize>i0 << 3)), s0, load<u64>(G_IQ2S + (<usize>i1 << 3)), s1);
          store<i16>(sc + (<usize>(2 * ib + p) << 1), <i16>(2 * ((s >> (4 * p)) & 15) + 1));
        }
      }
      return f16ToF32(load<u16>(w)) * <f32>0.125;
    }
    case T_IQ3_XXS: {
      for (let ib = 0; ib < 8; ib++) {
        const aux = load<u32>(w + 66 + (<usize>ib << 2));
        const q = w + 2 + <usize>ib * 8;
        for (let p = 0; p < 2; p++) {
          const l = 2 * p;
          put16x4(
            t + <usize>(32 * ib + 16 * p),
            load<u32>(G_IQ3XXS + (<usize>load<u8>(q + <usize>(2 * l)) << 2)),
            load<u32>(G_IQ3XXS + (<usize>load<u8>(q + <usize>(2 * l + 1)) << 2)),
            ksign(aux >> (7 * l)),
            load<u32>(G_IQ3XXS + (<usize>load<u8>(q + <usize>(2 * l + 2)) << 2)),
            load<u32>(G_IQ3XXS + (<usize>load<u8>(q + <usize>(2 * l + 3)) << 2)),
            ksign(aux >> (7 * (l + 1))),
          );
        }
        const s = <i16>(2 * (aux >> 28) + 1);
        store<i16>(sc + (<usize>(2 * ib) << 1), s);
        store<i16>(sc + (<usize>(2 * ib + 1) << 1), s);
      }
      return f16ToF32(load<u16>(w)) * <f32>0.25;
    }
    case T_IQ3_S: {
      for (let ib = 0; ib < 8; ib++) {
        const qh = <u32>load<u8>(w + 66 + <usize>ib);
        const q = w + 2 + <usize>ib * 8;
        for (let p = 0; p < 2; p++) {
          const l = 2 * p;
          const i0 = <u32>load<u8>(q + <usize>(2 * l)) | ((qh << (8 - 2 * l)) & 256);
          const i1 = <u32>load<u8>(q + <usize>(2 * l + 1)) | ((qh << (7 - 2 * l)) & 256);
          const i2 = <u32>load<u8>(q + <usize>(2 * l + 2)) | ((qh << (6 - 2 * l)) & 256);
          const i3 = <u32>load<u8>(q + <usize>(2 * l + 3)) | ((qh << (5 - 2 * l)) & 256);
          put16x4(
            t + <usize>(32 * ib + 16 * p),
            load<u32>(G_IQ3S + (<usize>i0 << 2)),
            load<u32>(G_IQ3S + (<usize>i1 << 2)),
            <u32>load<u8>(w + 74 + <usize>(4 * ib + l)),
            load<u32>(G_IQ3S + (<usize>i2 << 2)),
            load<u32>(G_IQ3S + (<usize>i3 << 2)),
            <u32>load<u8>(w + 74 + <usize>(4 * ib + l + 1)),
          );
        }
        const sb = <u32>load<u8>(w + 106 + <usize>(ib >> 1));
        const s = <i16>(2 * (ib & 1 ? sb >> 4 : sb & 15) + 1);
        store<i16>(sc + (<usize>(2 * ib) << 1), s);
        store<i16>(sc + (<usize>(2 * ib + 1) << 1), s);
      }
      return f16ToF32(load<u16>(w));
    }
    case T_IQ1_S: {
      for (let ib = 0; ib < 8; ib++) {
        const qh = <u32>load<u16>(w + 34 + (<usize>ib << 1));
        const delta = i8x16.splat(qh & 0x8000 ? -1 : 1);
        for (let p = 0; p < 2; p++) {
          const l = 2 * p;
          const i0 = <u32>load<u8>(w + 2 + <usize>(4 * ib + l)) | (((qh >> (3 * l)) & 7) << 8);
          const i1 = <u32>load<u8>(w + 2 + <usize>(4 * ib + l + 1)) | (((qh >> (3 * l + 3)) & 7) << 8);
          const g = i64x2(load<i64>(G_IQ1S + (<usize>i0 << 3)), load<i64>(G_IQ1S + (<usize>i1 << 3)));
          // 8·(g + δ) = 8g ± 1: exact in integers, the 1/8 goes to the float scale
          v128.store(t + <usize>(32 * ib + 16 * p), i8x16.add(i8x16.shl(g, 3), delta));
        }
        const s = <i16>(2 * ((qh >> 12) & 7) + 1);
        store<i16>(sc + (<usize>(2 * ib) << 1), s);
        store<i16>(sc + (<usize>(2 * ib + 1) << 1), s);
      }
      return f16ToF32(load<u16>(w)) * <f32>0.125;
    }
    case T_IQ1_M: {
      for (let ib = 0; ib < 8; ib++) {
        const s = <u32>load<u16>(w + 48 + (<usize>(ib >> 1) << 1)) >> (6 * (ib & 1));
        for (let p = 0; p < 2; p++) {
          const qh = <u32>load<u8>(w + 32 + <usize>(2 * ib + p));
          const i0 = <u32>load<u8>(w + <usize>(4 * ib + 2 * p)) | ((qh & 7) << 8);
          const i1 = <u32>load<u8>(w + <usize>(4 * ib + 2 * p + 1)) | (((qh >> 4) & 7) << 8);
          const d0: i64 = qh & 0x08 ? -1 : 0x0101010101010101;
          const d1: i64 = qh & 0x80 ? -1 : 0x0101010101010101;
          const g = i64x2(load<i64>(G_IQ1S + (<usize>i0 << 3)), load<i64>(G_IQ1S + (<usize>i1 << 3)));
          v128.store(t + <usize>(32 * ib + 16 * p), i8x16.add(i8x16.shl(g, 3), i64x2(d0, d1)));
          store<i16>(sc + (<usize>(2 * ib + p) << 1), <i16>(2 * ((s >> (3 * p)) & 7) + 1));
        }
      }
      return iq1mScale(w) * <f32>0.125;
    }
    case T_TQ1_0: {
      // trit n of byte q is (q·3^n mod 256)·3 >> 8: 16-bit lanes, multiplied by 3 step by step
      tritsTQ1(v128.load(w), t, 32, 5);
      tritsTQ1(v128.load(w, 16), t + 16, 32, 5);
      tritsTQ1(v128.load(w, 32), t + 160, 16, 5);
      for (let n = 0; n < 4; n++) {
        for (let m = 0; m < 4; m++) store<i8>(t + <usize>(240 + 4 * n + m), <i8>(trit(load<u8>(w + 48 + <usize>m), n) - 1));
      }
      for (let i = 0; i < 16; i++) store<i16>(sc + (<usize>i << 1), 1);
      return f16ToF32(load<u16>(w, 52));
    }
    case T_TQ2_0: {
      for (let j = 0; j < 2; j++) {
        const q = v128.load(w + <usize>(32 * j));
        const q1 = v128.load(w + <usize>(32 * j + 16));
        for (let l = 0; l < 4; l++) {
          const m3 = i8x16.splat(3);
          const one = i8x16.splat(1);
          v128.store(t + <usize>(128 * j + 32 * l), i8x16.sub(v128.and(i16x8.shr_u(q, 2 * l), m3), one));
          v128.store(t + <usize>(128 * j + 32 * l + 16), i8x16.sub(v128.and(i16x8.shr_u(q1, 2 * l), m3), one));
        }
      }
      for (let i = 0; i < 16; i++) store<i16>(sc + (<usize>i << 1), 1);
      return f16ToF32(load<u16>(w, 64));
    }
    default:
      unreachable();
      return 0;
  }
}

/**
 * Unpacks a row of nsb super-blocks of `type` at w into dst (the layout above), staging
 * each super-block's values in the 256 bytes at t.
 */
export function unpackIQ(type: i32, w: usize, nsb: i32, dst: usize, t: usize): void {
  const K = <usize>nsb << 8;
  const ts: usize = type == T_IQ2_XXS ? 66 : type == T_IQ2_XS ? 74 : type == T_IQ2_S ? 82 : type == T_IQ3_XXS ? 98
    : type == T_IQ3_S ? 110 : type == T_IQ1_S ? 50 : type == T_IQ1_M ? 56 : type == T_TQ1_0 ? 54 : 66;
  for (let sb = 0; sb < nsb; sb++, w += ts) {
    const d = unpackBlock(type, w, t, dst + 2 * K + (<usize>sb << 5));
    store<f32>(dst + 2 * K + (K >> 3) + (<usize>sb << 2), d);
    const o = <usize>sb << 8;
    for (let j: usize = 0; j < 256; j += 16) {
      const v = v128.load(t + j);
      if (ASC_FEATURE_RELAXED_SIMD) {
        v128.store(dst + o + j, i8x16.abs(v));
        v128.store(dst + K + o + j, i8x16.lt_s(v, i8x16.splat(0)));
      } else {
        const ev = i8x16.shuffle(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
        const od = i8x16.shuffle(v, v, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
        v128.store(dst + ((o + j) << 1), i16x8.extend_low_i8x16_s(ev));
        v128.store(dst + ((o + j) << 1) + 16, i16x8.extend_low_i8x16_s(od));
      }
    }
  }
}

/** One 16-element group's integer sum (i32 lanes) times its scale, against activation quants at a. */
@inline function group16(u: usize, K: usize, e: usize, a: usize, s: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    const m = v128.load(u + K + e);
    const x = signed(a, m);
    return i32x4.dot_i16x8_s(rdot(x, v128.load(u + e)), s);
  }
  const w = u + (e << 1);
  const p = i32x4.add(i32x4.dot_i16x8_s(v128.load(w), v128.load(a)), i32x4.dot_i16x8_s(v128.load(w, 16), v128.load(a, 16)));
  return i32x4.mul(p, i32x4.extend_low_i16x8_s(s));
}

/** Bytes of activation quants per element: 1 (relaxed) or 2 (strict). */
const QB: usize = ASC_FEATURE_RELAXED_SIMD ? 1 : 2;

/** An unpacked row (K elements) against a Q8_K activation row. */
export function dotIQ(u: usize, act: usize, K: i32): f32 {
  const k = <usize>K;
  let acc = f32x4.splat(0);
  for (let sb: usize = 0; sb < (k >> 8); sb++) {
    let isum = i32x4.splat(0);
    for (let g: usize = 0; g < 16; g++) {
      const e = (sb << 8) + (g << 4);
      const s = i16x8.splat(load<i16>(u + 2 * k + ((sb * 16 + g) << 1)));
      isum = i32x4.add(isum, group16(u, k, e, act + e * QB, s));
    }
    const d = load<f32>(u + 2 * k + (k >> 3) + (sb << 2)) * load<f32>(act + 2 * k + (sb << 2));
    acc = addBlock(acc, isum, d);
  }
  return hsum(acc);
}

/** An unpacked row against four activation rows: the four dot products. */
export function dotIQx4(u: usize, a0: usize, a1: usize, a2: usize, a3: usize, K: i32): v128 {
  const k = <usize>K;
  let c0 = f32x4.splat(0);
  let c1 = f32x4.splat(0);
  let c2 = f32x4.splat(0);
  let c3 = f32x4.splat(0);
  for (let sb: usize = 0; sb < (k >> 8); sb++) {
    let i0 = i32x4.splat(0);
    let i1 = i32x4.splat(0);
    let i2 = i32x4.splat(0);
    let i3 = i32x4.splat(0);
    for (let g: usize = 0; g < 16; g++) {
      const e = (sb << 8) + (g << 4);
      const s = i16x8.splat(load<i16>(u + 2 * k + ((sb * 16 + g) << 1)));
      i0 = i32x4.add(i0, group16(u, k, e, a0 + e * QB, s));
      i1 = i32x4.add(i1, group16(u, k, e, a1 + e * QB, s));
      i2 = i32x4.add(i2, group16(u, k, e, a2 + e * QB, s));
      i3 = i32x4.add(i3, group16(u, k, e, a3 + e * QB, s));
    }
    const dw = load<f32>(u + 2 * k + (k >> 3) + (sb << 2));
    const so: usize = 2 * k + (sb << 2);
    c0 = f32x4.add(c0, f32x4.mul(f32x4.convert_i32x4_s(i0), f32x4.splat(dw * load<f32>(a0 + so))));
    c1 = f32x4.add(c1, f32x4.mul(f32x4.convert_i32x4_s(i1), f32x4.splat(dw * load<f32>(a1 + so))));
    c2 = f32x4.add(c2, f32x4.mul(f32x4.convert_i32x4_s(i2), f32x4.splat(dw * load<f32>(a2 + so))));
    c3 = f32x4.add(c3, f32x4.mul(f32x4.convert_i32x4_s(i3), f32x4.splat(dw * load<f32>(a3 + so))));
  }
  return f32x4(hsum(c0), hsum(c1), hsum(c2), hsum(c3));
}

/**
 * One row of nsb super-blocks of `type` at w against one activation row, decoding each
 * super-block into the 256-byte staging at t (and its scales at t + 256) and dotting it
 * at once: for a single column, unpacking the whole row first would cost more. The relaxed
 * build skips the staging for every IQ type (dotIQ2XXS and its siblings below).
 */
export function dotIQ1(type: i32, w: usize, nsb: i32, act: usize, K: i32, t: usize): f32 {
  if (ASC_FEATURE_RELAXED_SIMD) {
    // decoded and dotted 16 values at a time, without staging (below)
    if (type == T_IQ2_XXS) return dotIQ2XXS(w, nsb, act, K);
    if (type == T_IQ2_XS) return dotIQ2XS(w, nsb, act, K);
    if (type == T_IQ2_S) return dotIQ2S(w, nsb, act, K);
    if (type == T_IQ3_XXS) return dotIQ3XXS(w, nsb, act, K);
    if (type == T_IQ3_S) return dotIQ3S(w, nsb, act, K);
    if (type == T_IQ1_S) return dotIQ1S(w, nsb, act, K);
    if (type == T_IQ1_M) return dotIQ1M(w, nsb, act, K);
  }
  const k = <usize>K;
  const ts: usize = type == T_IQ2_XXS ? 66 : type == T_IQ2_XS ? 74 : type == T_IQ2_S ? 82 : type == T_IQ3_XXS ? 98
    : type == T_IQ3_S ? 110 : type == T_IQ1_S ? 50 : type == T_IQ1_M ? 56 : type == T_TQ1_0 ? 54 : 66;
  const sc = t + 256;
  let acc = f32x4.splat(0);
  for (let sb: usize = 0; sb < <usize>nsb; sb++, w += ts) {
    const d = unpackBlock(type, w, t, sc);
    let isum = i32x4.splat(0);
    for (let g: usize = 0; g < 16; g++) {
      const v = v128.load(t + (g << 4));
      const s = i16x8.splat(load<i16>(sc + (g << 1)));
      const a = act + ((sb << 8) + (g << 4)) * QB;
      if (ASC_FEATURE_RELAXED_SIMD) {
        const m = i8x16.lt_s(v, i8x16.splat(0));
        const x = signed(a, m);
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(rdot(x, i8x16.abs(v)), s));
      } else {
        const ev = i8x16.shuffle(v, v, 0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14);
        const od = i8x16.shuffle(v, v, 1, 3, 5, 7, 9, 11, 13, 15, 1, 3, 5, 7, 9, 11, 13, 15);
        const p = i32x4.add(
          i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(ev), v128.load(a)),
          i32x4.dot_i16x8_s(i16x8.extend_low_i8x16_s(od), v128.load(a, 16)),
        );
        isum = i32x4.add(isum, i32x4.mul(p, i32x4.extend_low_i16x8_s(s)));
      }
    }
    const dd = d * load<f32>(act + 2 * k + (sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/** Whether `type` is one of this file's types. */
@inline export function isIQ(type: i32): bool {
  return (
    type == T_IQ2_XXS || type == T_IQ2_XS || type == T_IQ2_S || type == T_IQ3_XXS || type == T_IQ3_S ||
    type == T_IQ1_S || type == T_IQ1_M || type == T_TQ1_0 || type == T_TQ2_0
  );
}

/**
 * The 8 bytes at p0 and at p1 as one vector, loaded into its lanes: i64x2 of two scalar
 * loads would go through general registers (a load, a move and an insert each).
 */
@inline function lanes64(p0: usize, p1: usize): v128 {
  return v128.load64_lane(p1, v128.load64_zero(p0), 1);
}

/** The 4 bytes at p0..p3 as one vector (lanes64's reason). */
@inline function lanes32(p0: usize, p1: usize, p2: usize, p3: usize): v128 {
  return v128.load32_lane(p3, v128.load32_lane(p2, v128.load32_lane(p1, v128.load32_zero(p0), 1), 2), 3);
}

/** Address of the sign masks of the 7 stored sign bits in the low bits of i. */
@inline function kmaskAt(i: u32): usize {
  return KMASK + (<usize>(i & 127) << 3);
}


/**
 * IQ2_XXS, relaxed build, one column: decoded and dotted 16 values at a time, without
 * staging, the signs moved onto the activations (grid bytes are at most 43: 7-bit
 * operands as they are). The integer lane sums and the float steps are dotIQ1's, so the
 * results are the same bits as the staged and the unpacked paths.
 */
export function dotIQ2XXS(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 66) {
    let isum = i32x4.splat(0);
    for (let q = w + 2; q < w + 66; q += 8, a += 32) {
      const aux = load<u32>(q, 4);
      const g0 = lanes64(G_IQ2XXS + (<usize>load<u8>(q) << 3), G_IQ2XXS + (<usize>load<u8>(q, 1) << 3));
      const m0 = lanes64(kmaskAt(aux), kmaskAt(aux >> 7));
      const g1 = lanes64(G_IQ2XXS + (<usize>load<u8>(q, 2) << 3), G_IQ2XXS + (<usize>load<u8>(q, 3) << 3));
      const m1 = lanes64(kmaskAt(aux >> 14), kmaskAt(aux >> 21));
      const x0 = signed(a, m0);
      const x1 = signed(a + 16, m1);
      const p = i16x8.add(rdot(x0, g0), rdot(x1, g1));
      isum = i32x4.add(isum, i32x4.dot_i16x8_s(p, i16x8.splat(<i16>(2 * (aux >> 28) + 1))));
    }
    const dd = f16ToF32(load<u16>(w)) * <f32>0.125 * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/**
 * The sixteen 4-bit scales in the 8 bytes at p (low nibble first), as 2s + 1 in the i16
 * lanes of two vectors: scales 0-7 (lo) and 8-15. A group's scale is then broadcast by one
 * swizzle (C_LANE16) instead of being extracted, shifted and splatted from a general register.
 */
@inline function nibbles16(p: usize): v128 {
  const b = v128.load64_zero(p);
  return i8x16.shuffle(v128.and(b, C_M4()), v128.and(i16x8.shr_u(b, 4), C_M4()), 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
}

@inline function oddScales(n: v128): v128 {
  return i16x8.add(i16x8.shl(n, 1), C_ONES16());
}

/** IQ2_XS, as dotIQ2XXS: 9-bit grid indices with their 7 sign bits, a scale per 16. */
export function dotIQ2XS(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 74) {
    let isum = i32x4.splat(0);
    const n = nibbles16(w + 66);
    let sv = oddScales(i16x8.extend_low_i8x16_u(n));
    let q = w + 2;
    for (let h = 0; h < 2; h++) {
      for (let j = 0; j < 8; j += 2, a += 32, q += 8) {
        // per group two 16-bit fields: 9-bit grid index, then 7 sign bits; as byte offsets
        // (8 per entry); two groups a pass
        const f = load<u32>(q);
        const e = load<u32>(q, 4);
        const g0 = lanes64(G_IQ2XS + (<usize>(f << 3) & 0xff8), G_IQ2XS + (<usize>(f >> 13) & 0xff8));
        const m0 = lanes64(KMASK + (<usize>(f >> 6) & 0x3f8), KMASK + (<usize>(f >> 22) & 0x3f8));
        const g1 = lanes64(G_IQ2XS + (<usize>(e << 3) & 0xff8), G_IQ2XS + (<usize>(e >> 13) & 0xff8));
        const m1 = lanes64(KMASK + (<usize>(e >> 6) & 0x3f8), KMASK + (<usize>(e >> 22) & 0x3f8));
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(rdot(signed(a, m0), g0), i8x16.relaxed_swizzle(sv, C_LANE16(j))));
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(rdot(signed(a + 16, m1), g1), i8x16.relaxed_swizzle(sv, C_LANE16(j + 1))));
      }
      sv = oddScales(i16x8.extend_high_i8x16_u(n));
    }
    const dd = f16ToF32(load<u16>(w)) * <f32>0.125 * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/** IQ3_XXS, as dotIQ2XXS: 4-byte grid points (at most 62), a scale per 32. */
export function dotIQ3XXS(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 98) {
    let isum = i32x4.splat(0);
    for (let ib: usize = 0; ib < 8; ib++, a += 32) {
      const q = w + 2 + (ib << 3);
      const aux = load<u32>(w + 66 + (ib << 2));
      const g0 = lanes32(g3At(q, 0), g3At(q, 1), g3At(q, 2), g3At(q, 3));
      const g1 = lanes32(g3At(q, 4), g3At(q, 5), g3At(q, 6), g3At(q, 7));
      const m0 = lanes64(kmaskAt(aux), kmaskAt(aux >> 7));
      const m1 = lanes64(kmaskAt(aux >> 14), kmaskAt(aux >> 21));
      const x0 = signed(a, m0);
      const x1 = signed(a + 16, m1);
      // each 16-bit lane at most 2·2·62·127 = 31,496
      const p = i16x8.add(rdot(x0, g0), rdot(x1, g1));
      isum = i32x4.add(isum, i32x4.dot_i16x8_s(p, i16x8.splat(<i16>(2 * (aux >> 28) + 1))));
    }
    const dd = f16ToF32(load<u16>(w)) * <f32>0.25 * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/** IQ2_S, as dotIQ2XS: 10-bit grid indices, a sign byte per 8 values, a scale per 16. */
export function dotIQ2S(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 82) {
    let isum = i32x4.splat(0);
    const n = nibbles16(w + 74);
    let sv = oddScales(i16x8.extend_low_i8x16_u(n));
    let q = w + 2;
    let ph = w + 66;
    for (let h = 0; h < 2; h++) {
      // two groups of 16 per pass: a sub-block, with one byte of high index bits (2 per point)
      for (let j = 0; j < 8; j += 2, a += 32, q += 4, ph++) {
        const qh = <usize>load<u8>(ph);
        const ib = <usize>load<u32>(q);
        const sg = load<u32>(q, 32);
        const g0 = lanes64(G_IQ2S + (((ib & 0xff) | ((qh << 8) & 0x300)) << 3), G_IQ2S + ((((ib >> 8) & 0xff) | ((qh << 6) & 0x300)) << 3));
        const m0 = lanes64(mask8At(sg & 0xff), mask8At((sg >> 8) & 0xff));
        const g1 = lanes64(G_IQ2S + ((((ib >> 16) & 0xff) | ((qh << 4) & 0x300)) << 3), G_IQ2S + (((ib >> 24) | ((qh << 2) & 0x300)) << 3));
        const m1 = lanes64(mask8At((sg >> 16) & 0xff), mask8At(sg >> 24));
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(rdot(signed(a, m0), g0), i8x16.relaxed_swizzle(sv, C_LANE16(j))));
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(rdot(signed(a + 16, m1), g1), i8x16.relaxed_swizzle(sv, C_LANE16(j + 1))));
      }
      sv = oddScales(i16x8.extend_high_i8x16_u(n));
    }
    const dd = f16ToF32(load<u16>(w)) * <f32>0.125 * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/** IQ3_S, as dotIQ2XXS: 9-bit indices of 4-byte grid points, a sign byte per 8, a scale per 32. */
export function dotIQ3S(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 110) {
    let isum = i32x4.splat(0);
    for (let ib: usize = 0; ib < 8; ib++, a += 32) {
      const qh = <u32>load<u8>(w + 66 + ib);
      const q = w + 2 + (ib << 3);
      const g0 = lanes32(g3sAt(q, 0, qh), g3sAt(q, 1, qh), g3sAt(q, 2, qh), g3sAt(q, 3, qh));
      const g1 = lanes32(g3sAt(q, 4, qh), g3sAt(q, 5, qh), g3sAt(q, 6, qh), g3sAt(q, 7, qh));
      const sg = w + 74 + (ib << 2);
      const m0 = lanes64(mask8At(<u32>load<u8>(sg)), mask8At(<u32>load<u8>(sg, 1)));
      const m1 = lanes64(mask8At(<u32>load<u8>(sg, 2)), mask8At(<u32>load<u8>(sg, 3)));
      const x0 = signed(a, m0);
      const x1 = signed(a + 16, m1);
      const p = i16x8.add(rdot(x0, g0), rdot(x1, g1));
      const sv = <u32>load<u8>(w + 106 + (ib >> 1)) >> (<u32>(ib & 1) << 2);
      isum = i32x4.add(isum, i32x4.dot_i16x8_s(p, i16x8.splat(<i16>(2 * (sv & 15) + 1))));
    }
    const dd = f16ToF32(load<u16>(w)) * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/** Address of IQ3_S grid point j (0..7) of a sub-block: low byte at q + j, bit j of qh the ninth. */
@inline function g3sAt(q: usize, j: u32, qh: u32): usize {
  return G_IQ3S + (<usize>(<u32>load<u8>(q + j) | ((qh << (8 - j)) & 256)) << 2);
}

/**
 * 16 IQ1 values v = 8g + δ as u = v + 16 (7 to 25: the 7-bit operand of the 16-bit dot):
 * the grid bytes g (-1, 0, 1) swizzled to 0, 8, 16, plus 8 + δ per byte from dv.
 */
@inline function iq1U(lo: usize, hi: usize, dv: v128): v128 {
  const g = v128.load64_lane(G_IQ1S + (hi << 3), v128.load64_zero(G_IQ1S + (lo << 3)), 1);
  return i8x16.add(i8x16.relaxed_swizzle(v128.load(IQ1_SWZ), g), dv);
}

/**
 * IQ1_S, one column, as dotIQ2XXS: 11-bit indices of signed grid points, δ and a scale per
 * 32. Each 16-bit lane holds Σ u·a − 16·Σ a over its pair (u = v + 16), so that the lanes,
 * and the results, are those of the unpacked path. Grid points load straight into vector
 * lanes, and δ comes from a table: V8 would build both in general registers.
 */
export function dotIQ1S(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 50) {
    let isum = i32x4.splat(0);
    for (let ib: usize = 0; ib < 8; ib++, a += 32) {
      const qh = <usize>load<u16>(w + 34 + (ib << 1));
      const q = w + 2 + (ib << 2);
      // δ = -1 (bit 15): the entry of 0x88 (7 in both halves), else that of 0 (9)
      const dv = v128.load(IQ1_DELTA + (qh >> 15) * (0x88 << 4));
      const u0 = iq1U(<usize>load<u8>(q) | ((qh & 7) << 8), <usize>load<u8>(q, 1) | ((qh & 0x38) << 5), dv);
      const u1 = iq1U(<usize>load<u8>(q, 2) | ((qh & 0x1c0) << 2), <usize>load<u8>(q, 3) | ((qh & 0xe00) >> 1), dv);
      const x0 = v128.load(a);
      const x1 = v128.load(a, 16);
      const c16 = C_M10();
      // (each lane at most 2·2·9·127 in magnitude)
      const p = i16x8.sub(i16x8.add(rdot(x0, u0), rdot(x1, u1)), i16x8.add(rdot(x0, c16), rdot(x1, c16)));
      isum = i32x4.add(isum, i32x4.dot_i16x8_s(p, i16x8.splat(<i16>(2 * ((qh >> 12) & 7) + 1))));
    }
    const dd = f16ToF32(load<u16>(w)) * <f32>0.125 * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/**
 * IQ1_M's sixteen 3-bit scales (four per 16-bit word at p, at bits 0, 3, 6 and 9) as 2s + 1
 * in the i16 lanes of the scales of groups 0-7 (half 0) or 8-15: each word in four lanes,
 * field k moved to the top bits by a product with 2^(13 - 3k), then shifted down.
 */
@inline function iq1mScales(p: usize, half: i32): v128 {
  const wd = v128.load64_zero(p);
  const r = half == 0
    ? i8x16.shuffle(wd, wd, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3)
    : i8x16.shuffle(wd, wd, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7);
  return i16x8.add(i16x8.shl(i16x8.shr_u(i16x8.mul(r, C_IQ1M_SHIFT()), 13), 1), C_ONES16());
}

/** IQ1_M, one column, as dotIQ1S: δ per 8 values, a scale per 16, the block scale in the scale bits. */
export function dotIQ1M(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 56) {
    let isum = i32x4.splat(0);
    let sv = iq1mScales(w + 48, 0);
    let q = w;
    let qh = w + 32;
    for (let h = 0; h < 2; h++) {
      // two groups of 16 a pass: index bytes at q, high bits (and δ) bytes at qh
      for (let j = 0; j < 8; j += 2, a += 32, q += 4, qh += 2) {
        const ib = <usize>load<u32>(q);
        const hb = <usize>load<u16>(qh);
        const h0 = hb & 0xff;
        const h1 = hb >> 8;
        const u0 = iq1U((ib & 0xff) | ((h0 & 7) << 8), ((ib >> 8) & 0xff) | ((h0 & 0x70) << 4), v128.load(IQ1_DELTA + (h0 << 4)));
        const u1 = iq1U(((ib >> 16) & 0xff) | ((h1 & 7) << 8), (ib >> 24) | ((h1 & 0x70) << 4), v128.load(IQ1_DELTA + (h1 << 4)));
        const x0 = v128.load(a);
        const x1 = v128.load(a, 16);
        const c16 = C_M10();
        const p0 = i16x8.sub(rdot(x0, u0), rdot(x0, c16));
        const p1 = i16x8.sub(rdot(x1, u1), rdot(x1, c16));
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(p0, i8x16.relaxed_swizzle(sv, C_LANE16(j))));
        isum = i32x4.add(isum, i32x4.dot_i16x8_s(p1, i8x16.relaxed_swizzle(sv, C_LANE16(j + 1))));
      }
      sv = iq1mScales(w + 48, 1);
    }
    const dd = iq1mScale(w) * <f32>0.125 * load<f32>(ad + (<usize>sb << 2));
    acc = addBlock(acc, isum, dd);
  }
  return hsum(acc);
}

/** IQ1 grid point i (8 signed bytes). */
@inline function g1s(i: u32): i64 {
  return load<i64>(G_IQ1S + (<usize>i << 3));
}

/** Address of the IQ3_XXS grid point of index byte j at q (4 bytes). */
@inline function g3At(q: usize, j: usize): usize {
  return G_IQ3XXS + (<usize>load<u8>(q + j) << 2);
}

/** Σ q·a (p: i16 lanes) widened to i32 lanes, less Σ a from the 8 per-32 activation sums at s: Σ (q − 1)·a. */
@inline function lessSums(p: v128, s: usize): v128 {
  return i32x4.sub(i32x4.dot_i16x8_s(p, i16x8.splat(1)), i32x4.extadd_pairwise_i16x8_s(v128.load(s)));
}

/**
 * TQ2_0, relaxed build: one row of nsb blocks at w against one per-256 activation row,
 * straight from the 2-bit fields (no unpacked row): Σ (q − 1)·a = Σ q·a − Σ a per block,
 * q ∈ 0..3 the 7-bit operand of the dot, Σ a from the activation row's per-32 sums; then
 * the block's integer total times d·d_a, summed in order. Every column count uses it, so
 * a column's result does not depend on the batch. Where the engine has a one-instruction
 * 32-bit dot (dotAdd) the products go straight into 32-bit lanes: each lane then sums the
 * same four bytes of every 16 as the 16-bit dot's pair of lanes, so the same results.
 */
export function dotTQ2_0(w: usize, nsb: i32, act: usize, K: i32): f32 {
  return dotAdd() ? dotTQ2_0Of(w, nsb, act, K, true) : dotTQ2_0Of(w, nsb, act, K, false);
}

@inline function dotTQ2_0Of(w: usize, nsb: i32, act: usize, K: i32, wide: bool): f32 {
  const ad = act + 2 * <usize>K;
  const a32 = ad + (<usize>K >> 2);
  // loaded once (a splat would be rematerialized at every use)
  const m3 = C_M03();
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 66) {
    // 64 bytes of 2-bit fields a loop pass, four fields of 32 bytes written out: a loop per
    // field cost more in loop control than in arithmetic
    let p = i16x8.splat(0);
    let r = i32x4.splat(0);
    let r1 = i32x4.splat(0);
    for (let j: usize = 0; j < 64; j += 32, a += 128) {
      const q0 = v128.load(w + j);
      const q1 = v128.load(w + j, 16);
      if (wide) {
        r = rda(v128.load(a), v128.and(q0, m3), r);
        r1 = rda(v128.load(a, 16), v128.and(q1, m3), r1);
        r = rda(v128.load(a, 32), v128.and(i16x8.shr_u(q0, 2), m3), r);
        r1 = rda(v128.load(a, 48), v128.and(i16x8.shr_u(q1, 2), m3), r1);
        r = rda(v128.load(a, 64), v128.and(i16x8.shr_u(q0, 4), m3), r);
        r1 = rda(v128.load(a, 80), v128.and(i16x8.shr_u(q1, 4), m3), r1);
        r = rda(v128.load(a, 96), v128.and(i16x8.shr_u(q0, 6), m3), r);
        r1 = rda(v128.load(a, 112), v128.and(i16x8.shr_u(q1, 6), m3), r1);
      } else {
        p = i16x8.add(p, i16x8.add(rdot(v128.load(a), v128.and(q0, m3)), rdot(v128.load(a, 16), v128.and(q1, m3))));
        p = i16x8.add(p, i16x8.add(rdot(v128.load(a, 32), v128.and(i16x8.shr_u(q0, 2), m3)), rdot(v128.load(a, 48), v128.and(i16x8.shr_u(q1, 2), m3))));
        p = i16x8.add(p, i16x8.add(rdot(v128.load(a, 64), v128.and(i16x8.shr_u(q0, 4), m3)), rdot(v128.load(a, 80), v128.and(i16x8.shr_u(q1, 4), m3))));
        p = i16x8.add(p, i16x8.add(rdot(v128.load(a, 96), v128.and(i16x8.shr_u(q0, 6), m3)), rdot(v128.load(a, 112), v128.and(i16x8.shr_u(q1, 6), m3))));
      }
    }
    const s = a32 + (<usize>sb << 4);
    const t = wide ? i32x4.sub(i32x4.add(r, r1), i32x4.extadd_pairwise_i16x8_s(v128.load(s))) : lessSums(p, s);
    const d = load<f32>(ad + (<usize>sb << 2)) * f16ToF32(load<u16>(w, 64));
    acc = addBlock(acc, t, d);
  }
  return hsum(acc);
}

/**
 * TQ1_0, relaxed build: as dotTQ2_0, with the trits computed in the loop (trit n of byte q
 * is (q·3^n mod 256)·3 >> 8: 16-bit lanes multiplied by 3 step by step) instead of
 * staged: 48 bytes of five trits (elements 32n + m of bytes 0..31, 160 + 16n + m of
 * bytes 32..47), then four of the four qh bytes (240 + 4n + m).
 */
export function dotTQ1_0(w: usize, nsb: i32, act: usize, K: i32): f32 {
  const ad = act + 2 * <usize>K;
  const a32 = ad + (<usize>K >> 2);
  let acc = f32x4.splat(0);
  let a = act;
  for (let sb = 0; sb < nsb; sb++, w += 54) {
    let p = i16x8.splat(0);
    const q0 = v128.load(w);
    const q1 = v128.load(w, 16);
    let l0 = i16x8.extend_low_i8x16_u(q0);
    let h0 = i16x8.extend_high_i8x16_u(q0);
    let l1 = i16x8.extend_low_i8x16_u(q1);
    let h1 = i16x8.extend_high_i8x16_u(q1);
    for (let n = 0; n < 5; n++, a += 32) {
      l0 = i16x8.mul(l0, C_W3());
      h0 = i16x8.mul(h0, C_W3());
      l1 = i16x8.mul(l1, C_W3());
      h1 = i16x8.mul(h1, C_W3());
      const t0 = i8x16.narrow_i16x8_u(i16x8.shr_u(l0, 8), i16x8.shr_u(h0, 8));
      const t1 = i8x16.narrow_i16x8_u(i16x8.shr_u(l1, 8), i16x8.shr_u(h1, 8));
      p = i16x8.add(p, i16x8.add(rdot(v128.load(a), t0), rdot(v128.load(a, 16), t1)));
      l0 = v128.and(l0, C_W8());
      h0 = v128.and(h0, C_W8());
      l1 = v128.and(l1, C_W8());
      h1 = v128.and(h1, C_W8());
    }
    const q2 = v128.load(w, 32);
    let l2 = i16x8.extend_low_i8x16_u(q2);
    let h2 = i16x8.extend_high_i8x16_u(q2);
    for (let n = 0; n < 5; n++, a += 16) {
      l2 = i16x8.mul(l2, C_W3());
      h2 = i16x8.mul(h2, C_W3());
      p = i16x8.add(p, rdot(v128.load(a), i8x16.narrow_i16x8_u(i16x8.shr_u(l2, 8), i16x8.shr_u(h2, 8))));
      l2 = v128.and(l2, C_W8());
      h2 = v128.and(h2, C_W8());
    }
    // the qh bytes in every 4-byte run, run n scaled by 3^n (mod 256), then one more step
    const qh = i32x4.splat(load<u32>(w, 48));
    const lh = v128.and(i16x8.mul(i16x8.extend_low_i8x16_u(qh), i16x8(1, 1, 1, 1, 3, 3, 3, 3)), C_W8());
    const hh = v128.and(i16x8.mul(i16x8.extend_high_i8x16_u(qh), i16x8(9, 9, 9, 9, 27, 27, 27, 27)), C_W8());
    const th = i8x16.narrow_i16x8_u(i16x8.shr_u(i16x8.mul(lh, C_W3()), 8), i16x8.shr_u(i16x8.mul(hh, C_W3()), 8));
    p = i16x8.add(p, rdot(v128.load(a), th));
    a += 16;
    const t = lessSums(p, a32 + (<usize>sb << 4));
    const d = load<f32>(ad + (<usize>sb << 2)) * f16ToF32(load<u16>(w, 52));
    acc = addBlock(acc, t, d);
  }
  return hsum(acc);
}
