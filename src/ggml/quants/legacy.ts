// The 32-element block types Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1 (ggml's "legacy" quants).
//
// Layouts (little-endian, f16 scales):
//   Q4_0 (18 B): d, qs[16]            q = nibble - 8;        x = q*d
//   Q4_1 (20 B): d, m, qs[16]         q = nibble;            x = q*d + m
//   Q5_0 (22 B): d, qh[4], qs[16]     q = nibble|bit<<4 - 16; x = q*d
//   Q5_1 (24 B): d, m, qh[4], qs[16]  q = nibble|bit<<4;     x = q*d + m
//   Q8_0 (34 B): d, qs[32] (int8)     x = q*d
//   Q8_1 (36 B): d, s, qs[32] (int8)  x = q*d; s = d * sum(q) (used by dot products)
// Element j < 16 sits in the low nibble of qs[j], element j + 16 in its high nibble.
//
// The quantizers reproduce quantize_row_*_ref bit for bit: every C float operation is
// one Math.fround (a double result of a single +,-,*,/ on floats rounds to the same
// float as the C operation), and C's conversions are spelled out where they occur:
// (int8_t)(v) truncates toward zero, roundf rounds half away from zero.

import { f16Table, f32ToF16 } from '../fp16.js';
import { type RowQuantizeFn, roundf } from './codec.js';
import { makeQkx3Quants, makeQxQuants, qkxMin } from './quant-search.js';

const fround = Math.fround;
const FLT_MAX = 3.4028234663852886e38;

// ---- dequantize -------------------------------------------------------------------

export function dequantizeQ4_0(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 18, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j]!;
      dst[y + j] = ((q & 0x0f) - 8) * d;
      dst[y + j + 16] = ((q >>> 4) - 8) * d;
    }
  }
}

export function dequantizeQ4_1(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 20, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    const m = t[src[o + 2]! | (src[o + 3]! << 8)]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 4 + j]!;
      // q*d is exact in float, so the store's single rounding matches C's add
      dst[y + j] = (q & 0x0f) * d + m;
      dst[y + j + 16] = (q >>> 4) * d + m;
    }
  }
}

export function dequantizeQ5_0(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 22, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    const qh = src[o + 2]! | (src[o + 3]! << 8) | (src[o + 4]! << 16) | (src[o + 5]! << 24);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 6 + j]!;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      dst[y + j] = ((q & 0x0f) - 16 + h0) * d;
      dst[y + j + 16] = ((q >>> 4) - 16 + h1) * d;
    }
  }
}

export function dequantizeQ5_1(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 24, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    const m = t[src[o + 2]! | (src[o + 3]! << 8)]!;
    const qh = src[o + 4]! | (src[o + 5]! << 8) | (src[o + 6]! << 16) | (src[o + 7]! << 24);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 8 + j]!;
      const h0 = ((qh >>> j) << 4) & 0x10;
      const h1 = (qh >>> (j + 12)) & 0x10;
      dst[y + j] = ((q & 0x0f) | h0) * d + m;
      dst[y + j + 16] = ((q >>> 4) | h1) * d + m;
    }
  }
}

export function dequantizeQ8_0(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 34, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let j = 0; j < 32; j++) dst[y + j] = ((src[o + 2 + j]! << 24) >> 24) * d;
  }
}

export function dequantizeQ8_1(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 36, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let j = 0; j < 32; j++) dst[y + j] = ((src[o + 4 + j]! << 24) >> 24) * d;
  }
}

// ---- quantize (reference, byte-exact) -----------------------------------------------

function putF16(dst: Uint8Array, o: number, x: number): void {
  const h = f32ToF16(x);
  dst[o] = h & 0xff;
  dst[o + 1] = h >>> 8;
}

function putU32(dst: Uint8Array, o: number, v: number): void {
  dst[o] = v & 0xff;
  dst[o + 1] = (v >>> 8) & 0xff;
  dst[o + 2] = (v >>> 16) & 0xff;
  dst[o + 3] = (v >>> 24) & 0xff;
}

/**
 * C's (int8_t)(v) for a float on x86-64: truncation to int32 (cvttss2si, which gives
 * INT32_MIN for NaN, infinities and values beyond int32) keeping the low 8 bits, signed.
 * A zero-scale block makes 1/d infinite, so this decides its quants.
 */
function toInt8(v: number): number {
  const t = Math.abs(v) < 2147483648 ? Math.trunc(v) : -2147483648;
  return (t << 24) >> 24;
}

/** The element of largest magnitude, sign kept (the first one on ties). */
function signedAbsMax(src: Float32Array, x: number): number {
  let amax = 0;
  let max = 0;
  for (let j = 0; j < 32; j++) {
    const v = src[x + j]!;
    if (amax < Math.abs(v)) {
      amax = Math.abs(v);
      max = v;
    }
  }
  return max;
}

export function quantizeQ4_0(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += 18) {
    const d = fround(signedAbsMax(src, x) / -8);
    const id = d ? fround(1 / d) : 0;
    putF16(dst, o, d);
    for (let j = 0; j < 16; j++) {
      const x0 = fround(src[x + j]! * id);
      const x1 = fround(src[x + 16 + j]! * id);
      const q0 = Math.min(15, toInt8(fround(x0 + 8.5)));
      const q1 = Math.min(15, toInt8(fround(x1 + 8.5)));
      // C ors the whole uint8 values: a wrapped quant's high bits land in the byte
      dst[o + 2 + j] = (q0 & 0xff) | (q1 << 4);
    }
  }
}

export function quantizeQ4_1(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += 20) {
    let min = FLT_MAX;
    let max = -FLT_MAX;
    for (let j = 0; j < 32; j++) {
      const v = src[x + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fround(fround(max - min) / 15);
    const id = d ? fround(1 / d) : 0;
    putF16(dst, o, d);
    putF16(dst, o + 2, min);
    for (let j = 0; j < 16; j++) {
      const x0 = fround(fround(src[x + j]! - min) * id);
      const x1 = fround(fround(src[x + 16 + j]! - min) * id);
      const q0 = Math.min(15, toInt8(fround(x0 + 0.5)));
      const q1 = Math.min(15, toInt8(fround(x1 + 0.5)));
      dst[o + 4 + j] = (q0 & 0xff) | (q1 << 4);
    }
  }
}

export function quantizeQ5_0(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += 22) {
    const d = fround(signedAbsMax(src, x) / -16);
    const id = d ? fround(1 / d) : 0;
    putF16(dst, o, d);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = fround(src[x + j]! * id);
      const x1 = fround(src[x + 16 + j]! * id);
      const q0 = Math.min(31, toInt8(fround(x0 + 16.5))) & 0xff;
      const q1 = Math.min(31, toInt8(fround(x1 + 16.5))) & 0xff;
      dst[o + 6 + j] = (q0 & 0x0f) | ((q1 & 0x0f) << 4);
      qh |= ((q0 & 0x10) >>> 4) << j;
      qh |= ((q1 & 0x10) >>> 4) << (j + 16);
    }
    putU32(dst, o + 2, qh);
  }
}

export function quantizeQ5_1(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += 24) {
    let min = FLT_MAX;
    let max = -FLT_MAX;
    for (let j = 0; j < 32; j++) {
      const v = src[x + j]!;
      if (v < min) min = v;
      if (v > max) max = v;
    }
    const d = fround(fround(max - min) / 31);
    const id = d ? fround(1 / d) : 0;
    putF16(dst, o, d);
    putF16(dst, o + 2, min);
    let qh = 0;
    for (let j = 0; j < 16; j++) {
      const x0 = fround(fround(src[x + j]! - min) * id);
      const x1 = fround(fround(src[x + 16 + j]! - min) * id);
      // no clamp here in ggml: (uint8_t)(x + 0.5f) never exceeds 31 for finite input
      const q0 = toInt8(fround(x0 + 0.5)) & 0xff;
      const q1 = toInt8(fround(x1 + 0.5)) & 0xff;
      dst[o + 8 + j] = (q0 & 0x0f) | ((q1 & 0x0f) << 4);
      qh |= ((q0 & 0x10) >>> 4) << j;
      qh |= ((q1 & 0x10) >>> 4) << (j + 16);
    }
    putU32(dst, o + 4, qh);
  }
}

function absMax(src: Float32Array, x: number): number {
  let amax = 0;
  for (let j = 0; j < 32; j++) {
    const a = Math.abs(src[x + j]!);
    if (a > amax) amax = a;
  }
  return amax;
}

export function quantizeQ8_0(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += 34) {
    const d = fround(absMax(src, x) / 127);
    const id = d ? fround(1 / d) : 0;
    putF16(dst, o, d);
    for (let j = 0; j < 32; j++) dst[o + 2 + j] = roundf(fround(src[x + j]! * id)) & 0xff;
  }
}

export function quantizeQ8_1(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += 36) {
    const d = fround(absMax(src, x) / 127);
    const id = d ? fround(1 / d) : 0;
    putF16(dst, o, d);
    let sum = 0;
    for (let j = 0; j < 32; j++) {
      const q = roundf(fround(src[x + j]! * id));
      dst[o + 4 + j] = q & 0xff;
      sum += q;
    }
    putF16(dst, o + 2, fround(sum * d));
  }
}

// ---- with an importance matrix ---------------------------------------------------
//
// quantize_row_q{4,5}_{0,1}_impl: with quant weights, every block's scale (and min) is
// searched by make_qx_quants / make_qkx3_quants, each value weighted by
// qw · sqrt(sigma2 + x²), sigma2 the mean square of the whole row.

const wt = new Float32Array(32);
const Lq = new Uint8Array(32);
const Laux = new Uint8Array(32);

/** The row's mean square, in float. */
function rowSigma2(src: Float32Array, xo: number, n: number): number {
  let sum = 0;
  for (let j = 0; j < n; j++) sum = fround(sum + fround(src[xo + j]! * src[xo + j]!));
  return fround(sum / n);
}

function blockWeights(src: Float32Array, xo: number, qw: Float32Array, qo: number, sigma2: number): void {
  for (let j = 0; j < 32; j++) {
    const x = src[xo + j]!;
    wt[j] = fround(qw[qo + j]! * fround(Math.sqrt(fround(sigma2 + fround(x * x)))));
  }
}

/** Nibbles j and j+16 of 32 values into 16 bytes; bit 4 of each (when hi) into a u32 at qhOff. */
function pack32(L: Uint8Array, dst: Uint8Array, qs: number, qhOff: number): void {
  let qh = 0;
  for (let j = 0; j < 16; j++) {
    const l0 = L[j]!;
    const l1 = L[j + 16]!;
    dst[qs + j] = (l0 & 0x0f) | ((l1 & 0x0f) << 4);
    qh |= ((l0 & 0x10) >>> 4) << j;
    qh |= ((l1 & 0x10) >>> 4) << (j + 16);
  }
  if (qhOff >= 0) putU32(dst, qhOff, qh);
}

function symmetricRow(
  nmax: number,
  bytes: number,
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  n: number,
  qw: Float32Array,
): void {
  const sigma2 = rowSigma2(src, srcOff, n);
  for (let b = 0, x = srcOff, o = dstOff; b < n / 32; b++, x += 32, o += bytes) {
    blockWeights(src, x, qw, b * 32, sigma2);
    putF16(dst, o, makeQxQuants(32, nmax, src, x, Lq, 0, wt, 0));
    if (nmax === 8) pack32(Lq, dst, o + 2, -1);
    else pack32(Lq, dst, o + 6, o + 2);
  }
}

function offsetRow(
  nmax: number,
  bytes: number,
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  n: number,
  qw: Float32Array,
): void {
  const sigma2 = rowSigma2(src, srcOff, n);
  for (let b = 0, x = srcOff, o = dstOff; b < n / 32; b++, x += 32, o += bytes) {
    blockWeights(src, x, qw, b * 32, sigma2);
    putF16(dst, o, makeQkx3Quants(32, nmax, src, x, wt, Lq, 0, Laux));
    putF16(dst, o + 2, -qkxMin);
    if (nmax === 15) pack32(Lq, dst, o + 4, -1);
    else pack32(Lq, dst, o + 8, o + 4);
  }
}

/** quantize_q4_0 for one row: the reference without quant weights. */
export const quantizeRowQ4_0: RowQuantizeFn = (src, so, dst, o, n, qw) =>
  qw ? symmetricRow(8, 18, src, so, dst, o, n, qw) : quantizeQ4_0(src, so, dst, o, n / 32);
export const quantizeRowQ5_0: RowQuantizeFn = (src, so, dst, o, n, qw) =>
  qw ? symmetricRow(16, 22, src, so, dst, o, n, qw) : quantizeQ5_0(src, so, dst, o, n / 32);
export const quantizeRowQ4_1: RowQuantizeFn = (src, so, dst, o, n, qw) =>
  qw ? offsetRow(15, 20, src, so, dst, o, n, qw) : quantizeQ4_1(src, so, dst, o, n / 32);
export const quantizeRowQ5_1: RowQuantizeFn = (src, so, dst, o, n, qw) =>
  qw ? offsetRow(31, 24, src, so, dst, o, n, qw) : quantizeQ5_1(src, so, dst, o, n / 32);
