// Row dequantizers: n elements of any readable type to f32. Q4_0 and Q8_0 rows are
// addressed through (scale pointer, quant pointer, block stride) so that the same code
// reads ggml's layout and the 4-row interleaved one.

import { f16x4 } from './consts';
import { LAYOUT_K4, qQs, qrow, qScale, qStride, tLayout } from './desc';
import { dequantIQ, isIQ } from './iquant';
import { dequantRowQ4_0, dequantRowQ4K, dequantRowQ5_0, dequantRowQ6K, kGroup, kRow, krow } from './kquant';
import { bf16ToF32, f16ToF32 } from './math';
import { dequantMXFP4, dequantRowMXFP4 } from './mxfp4';
import {
  T_BF16, T_F16, T_F32, T_I32, T_IQ4_NL, T_IQ4_XS, T_MXFP4,T_Q2_K, T_Q3_K, T_Q4_0, T_Q4_1, T_Q4_K, T_Q5_0, T_Q5_1, T_Q5_K,
  T_Q6_K, T_Q8_0, 
} from './types';

/** The IQ4_NL codebook as one vector (a constant, not a data segment). */
@inline function iq4Table(): v128 {
  return i8x16(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
}

/** Widen 16 i8 lanes, scale by d (splat), store 16 f32 at dst. */
@inline function storeScaledI8(q: v128, d: v128, dst: usize): void {
  const lo = i16x8.extend_low_i8x16_s(q);
  const hi = i16x8.extend_high_i8x16_s(q);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(lo)), d));
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(lo)), d), 16);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_low_i16x8_s(hi)), d), 32);
  v128.store(dst, f32x4.mul(f32x4.convert_i32x4_s(i32x4.extend_high_i16x8_s(hi)), d), 48);
}

export function dequantQ4_0(sc: usize, qs: usize, stride: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++) {
    const d = f32x4.splat(f16ToF32(load<u16>(sc)));
    const w = v128.load(qs);
    const lo = i8x16.sub(v128.and(w, i8x16.splat(0x0f)), i8x16.splat(8));
    const hi = i8x16.sub(i8x16.shr_u(w, 4), i8x16.splat(8));
    storeScaledI8(lo, d, dst);
    storeScaledI8(hi, d, dst + 64);
    sc += stride;
    qs += stride;
    dst += 128;
  }
}

export function dequantQ8_0(sc: usize, qs: usize, stride: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++) {
    const d = f32x4.splat(f16ToF32(load<u16>(sc)));
    storeScaledI8(v128.load(qs), d, dst);
    storeScaledI8(v128.load(qs, 16), d, dst + 64);
    sc += stride;
    qs += stride;
    dst += 128;
  }
}

function dequantQ4_1(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 20, dst += 128) {
    const d = f16ToF32(load<u16>(src));
    const m = f16ToF32(load<u16>(src, 2));
    for (let j = 0; j < 16; j++) {
      const q = <i32>load<u8>(src + 4 + j);
      store<f32>(dst + (j << 2), <f32>(q & 15) * d + m);
      store<f32>(dst + ((j + 16) << 2), <f32>(q >> 4) * d + m);
    }
  }
}

function dequantQ5_0(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 22, dst += 128) {
    const d = f16ToF32(load<u16>(src));
    const qh = load<u32>(src, 2);
    for (let j = 0; j < 16; j++) {
      const q = <i32>load<u8>(src + 6 + j);
      const h0 = <i32>(((qh >> j) << 4) & 0x10);
      const h1 = <i32>((qh >> (j + 12)) & 0x10);
      store<f32>(dst + (j << 2), <f32>((q & 15) - 16 + h0) * d);
      store<f32>(dst + ((j + 16) << 2), <f32>((q >> 4) - 16 + h1) * d);
    }
  }
}

function dequantQ5_1(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 24, dst += 128) {
    const d = f16ToF32(load<u16>(src));
    const m = f16ToF32(load<u16>(src, 2));
    const qh = load<u32>(src, 4);
    for (let j = 0; j < 16; j++) {
      const q = <i32>load<u8>(src + 8 + j);
      const h0 = <i32>(((qh >> j) << 4) & 0x10);
      const h1 = <i32>((qh >> (j + 12)) & 0x10);
      store<f32>(dst + (j << 2), <f32>((q & 15) | h0) * d + m);
      store<f32>(dst + ((j + 16) << 2), <f32>((q >> 4) | h1) * d + m);
    }
  }
}

function dequantIQ4_NL(src: usize, nb: i32, dst: usize): void {
  const kv = iq4Table();
  for (let b = 0; b < nb; b++, src += 18, dst += 128) {
    const d = f32x4.splat(f16ToF32(load<u16>(src)));
    const w = v128.load(src, 2);
    storeScaledI8(i8x16.swizzle(kv, v128.and(w, i8x16.splat(0x0f))), d, dst);
    storeScaledI8(i8x16.swizzle(kv, i8x16.shr_u(w, 4)), d, dst + 64);
  }
}

function dequantIQ4_XS(src: usize, nb: i32, dst: usize): void {
  const kv = iq4Table();
  for (let b = 0; b < nb; b++, src += 136) {
    const d = f16ToF32(load<u16>(src));
    const scalesH = <u32>load<u16>(src, 2);
    for (let ib: u32 = 0; ib < 8; ib++, dst += 128) {
      const ls = ((<u32>load<u8>(src + 4 + (ib >> 1)) >> (4 * (ib & 1))) & 15) | (((scalesH >> (2 * ib)) & 3) << 4);
      const dl = f32x4.splat(d * <f32>(<i32>ls - 32));
      const w = v128.load(src + 8 + ib * 16);
      storeScaledI8(i8x16.swizzle(kv, v128.and(w, i8x16.splat(0x0f))), dl, dst);
      storeScaledI8(i8x16.swizzle(kv, i8x16.shr_u(w, 4)), dl, dst + 64);
    }
  }
}

function dequantQ2_K(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 84) {
    const d = f16ToF32(load<u16>(src, 80));
    const dmin = f16ToF32(load<u16>(src, 82));
    let is = 0;
    for (let half = 0; half < 2; half++) {
      const q = src + 16 + half * 32;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let part = 0; part < 32; part += 16) {
          const sc = <i32>load<u8>(src + is++);
          const dl = d * <f32>(sc & 15);
          const ml = dmin * <f32>(sc >> 4);
          for (let l = 0; l < 16; l++) {
            store<f32>(dst, dl * <f32>((<i32>load<u8>(q + part + l) >> shift) & 3) - ml);
            dst += 4;
          }
        }
      }
    }
  }
}

function q3Scale(sc: usize, j: i32): i32 {
  const lo = j < 8 ? <i32>load<u8>(sc + j) & 15 : <i32>load<u8>(sc + j - 8) >> 4;
  const hi = (<i32>load<u8>(sc + 8 + (j & 3)) >> (2 * (j >> 2))) & 3;
  return (lo | (hi << 4)) - 32;
}

function dequantQ3_K(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 110) {
    const d = f16ToF32(load<u16>(src, 108));
    let is = 0;
    let m = 1;
    for (let half = 0; half < 2; half++) {
      const q = src + 32 + half * 32;
      for (let shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (let part = 0; part < 32; part += 16) {
          const dl = d * <f32>q3Scale(src + 96, is++);
          for (let l = 0; l < 16; l++) {
            const lo2 = (<i32>load<u8>(q + part + l) >> shift) & 3;
            const v = (<i32>load<u8>(src + part + l) & m) != 0 ? lo2 : lo2 - 4;
            store<f32>(dst, dl * <f32>v);
            dst += 4;
          }
        }
      }
    }
  }
}

/** 6-bit scale j (0..7) of the 12 packed bytes of Q4_K/Q5_K. */
@inline export function k4Scale(p: usize, j: i32): i32 {
  return j < 4
    ? <i32>load<u8>(p + j) & 63
    : (<i32>load<u8>(p + j + 4) & 15) | ((<i32>load<u8>(p + j - 4) >> 6) << 4);
}

/** 6-bit min j (0..7) of the 12 packed bytes of Q4_K/Q5_K. */
@inline export function k4Min(p: usize, j: i32): i32 {
  return j < 4
    ? <i32>load<u8>(p + j + 4) & 63
    : (<i32>load<u8>(p + j + 4) >> 4) | ((<i32>load<u8>(p + j) >> 6) << 4);
}

function dequantQ4_K(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 144) {
    const d = f16ToF32(load<u16>(src));
    const dmin = f16ToF32(load<u16>(src, 2));
    for (let g = 0; g < 4; g++) {
      const q = src + 16 + g * 32;
      const d1 = d * <f32>k4Scale(src + 4, 2 * g);
      const m1 = dmin * <f32>k4Min(src + 4, 2 * g);
      const d2 = d * <f32>k4Scale(src + 4, 2 * g + 1);
      const m2 = dmin * <f32>k4Min(src + 4, 2 * g + 1);
      for (let l = 0; l < 32; l++) store<f32>(dst + (l << 2), d1 * <f32>(<i32>load<u8>(q + l) & 15) - m1);
      dst += 128;
      for (let l = 0; l < 32; l++) store<f32>(dst + (l << 2), d2 * <f32>(<i32>load<u8>(q + l) >> 4) - m2);
      dst += 128;
    }
  }
}

function dequantQ5_K(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 176) {
    const d = f16ToF32(load<u16>(src));
    const dmin = f16ToF32(load<u16>(src, 2));
    const qh = src + 16;
    let u1 = 1;
    let u2 = 2;
    for (let g = 0; g < 4; g++, u1 <<= 2, u2 <<= 2) {
      const ql = src + 48 + g * 32;
      const d1 = d * <f32>k4Scale(src + 4, 2 * g);
      const m1 = dmin * <f32>k4Min(src + 4, 2 * g);
      const d2 = d * <f32>k4Scale(src + 4, 2 * g + 1);
      const m2 = dmin * <f32>k4Min(src + 4, 2 * g + 1);
      for (let l = 0; l < 32; l++) {
        const h = <i32>load<u8>(qh + l);
        store<f32>(dst + (l << 2), d1 * <f32>((<i32>load<u8>(ql + l) & 15) + ((h & u1) != 0 ? 16 : 0)) - m1);
      }
      dst += 128;
      for (let l = 0; l < 32; l++) {
        const h = <i32>load<u8>(qh + l);
        store<f32>(dst + (l << 2), d2 * <f32>((<i32>load<u8>(ql + l) >> 4) + ((h & u2) != 0 ? 16 : 0)) - m2);
      }
      dst += 128;
    }
  }
}

function dequantQ6_K(src: usize, nb: i32, dst: usize): void {
  for (let b = 0; b < nb; b++, src += 210) {
    const d = f16ToF32(load<u16>(src, 208));
    for (let n = 0; n < 2; n++) {
      const ql = src + n * 64;
      const qh = src + 128 + n * 32;
      const sc = src + 192 + n * 8;
      for (let l = 0; l < 32; l++) {
        const is = l >> 4;
        const h = <i32>load<u8>(qh + l);
        const a = <i32>load<u8>(ql + l);
        const c = <i32>load<u8>(ql + l + 32);
        const s0 = d * <f32>load<i8>(sc + is);
        const s2 = d * <f32>load<i8>(sc + is + 2);
        const s4 = d * <f32>load<i8>(sc + is + 4);
        const s6 = d * <f32>load<i8>(sc + is + 6);
        store<f32>(dst + (l << 2), s0 * <f32>(((a & 15) | ((h & 3) << 4)) - 32));
        store<f32>(dst + ((l + 32) << 2), s2 * <f32>(((c & 15) | (((h >> 2) & 3) << 4)) - 32));
        store<f32>(dst + ((l + 64) << 2), s4 * <f32>(((a >> 4) | (((h >> 4) & 3) << 4)) - 32));
        store<f32>(dst + ((l + 96) << 2), s6 * <f32>(((c >> 4) | (((h >> 6) & 3) << 4)) - 32));
      }
      dst += 512;
    }
  }
}

function convertF16(src: usize, n: i32, dst: usize): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(dst + (<usize>i << 2), f16x4(v128.load16x4_u(src + (<usize>i << 1))));
  for (; i < n; i++) store<f32>(dst + (<usize>i << 2), f16ToF32(load<u16>(src + (<usize>i << 1))));
}

function convertBF16(src: usize, n: i32, dst: usize): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    v128.store(dst + (<usize>i << 2), i32x4.shl(v128.load16x4_u(src + (<usize>i << 1)), 16));
  }
  for (; i < n; i++) store<f32>(dst + (<usize>i << 2), bf16ToF32(load<u16>(src + (<usize>i << 1))));
}

/**
 * Dequantize n elements (a whole number of blocks) of the row of tensor t that starts
 * `o` logical bytes after its element [0,0,0,0] into f32 at dst. Rows must be
 * contiguous (plain types: nb0 equal to the element size).
 */
export function dequantRow(node: usize, t: i32, type: i32, o: usize, dst: usize, n: i32): void {
  const src = <usize>load<u32>(node + ((<usize>t * 16) << 2)) + o;
  switch (type) {
    case T_F32:
      memory.copy(dst, src, <usize>n << 2);
      return;
    case T_F16:
      convertF16(src, n, dst);
      return;
    case T_BF16:
      convertBF16(src, n, dst);
      return;
    case T_I32:
      for (let i = 0; i < n; i++) store<f32>(dst + (<usize>i << 2), <f32>load<i32>(src + (<usize>i << 2)));
      return;
    case T_Q4_0:
      if (tLayout(node, t) == LAYOUT_K4) {
        krow(node, t, o, 18);
        if (kRow >= 0) dequantRowQ4_0(kGroup, kRow, n >> 5, dst);
        else dequantQ4_0(kGroup, kGroup + 2, 18, n >> 5, dst);
        return;
      }
      qrow(node, t, o, 18);
      dequantQ4_0(qScale, qQs, qStride, n >> 5, dst);
      return;
    case T_Q8_0:
      qrow(node, t, o, 34);
      dequantQ8_0(qScale, qQs, qStride, n >> 5, dst);
      return;
    case T_Q4_1:
      dequantQ4_1(src, n >> 5, dst);
      return;
    case T_Q5_0:
      krow(node, t, o, 22);
      if (kRow >= 0) dequantRowQ5_0(kGroup, kRow, n >> 5, dst);
      else dequantQ5_0(kGroup, n >> 5, dst);
      return;
    case T_Q5_1:
      dequantQ5_1(src, n >> 5, dst);
      return;
    case T_IQ4_NL:
      dequantIQ4_NL(src, n >> 5, dst);
      return;
    case T_Q2_K:
      dequantQ2_K(src, n >> 8, dst);
      return;
    case T_Q3_K:
      dequantQ3_K(src, n >> 8, dst);
      return;
    case T_Q4_K:
      krow(node, t, o, 144);
      if (kRow >= 0) dequantRowQ4K(kGroup, kRow, n >> 8, dst);
      else dequantQ4_K(kGroup, n >> 8, dst);
      return;
    case T_Q5_K:
      dequantQ5_K(src, n >> 8, dst);
      return;
    case T_Q6_K:
      krow(node, t, o, 210);
      if (kRow >= 0) dequantRowQ6K(kGroup, kRow, n >> 8, dst);
      else dequantQ6_K(kGroup, n >> 8, dst);
      return;
    case T_IQ4_XS:
      dequantIQ4_XS(src, n >> 8, dst);
      return;
    case T_MXFP4:
      krow(node, t, o, 17);
      if (kRow >= 0) dequantRowMXFP4(kGroup, kRow, n >> 5, dst);
      else dequantMXFP4(kGroup, n >> 5, dst);
      return;
    default:
      if (isIQ(type)) {
        dequantIQ(type, src, n, dst);
        return;
      }
      unreachable();
  }
}
