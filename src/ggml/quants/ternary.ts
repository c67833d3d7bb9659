// The ternary types TQ1_0 and TQ2_0 (BitNet-style weights: -1, 0, +1 times a scale per
// 256 values), dequantizers and ggml's reference quantizers (no importance matrix: ggml
// ignores one for these types).
//
// Layouts (little-endian, d an f16 scale at the end of the block):
//   TQ1_0 54 B: qs[48] (5 trits a byte), qh[4] (4 trits a byte), d
//     A byte holds trits t0..t4 (each 0..2) as ceil(256 * (t0·81 + t1·27 + t2·9 + t3·3 + t4) / 243):
//     the n-th trit is then the top "digit" of (byte · 3^n mod 256) · 3 / 256. Byte m of
//     qs[0..32) holds values m + 32n (n = 0..4), of qs[32..48) values 160 + m + 16n, of
//     qh values 240 + m + 4n (n = 0..3, one trit position left empty).
//   TQ2_0 66 B: qs[64] (4 two-bit values a byte: value m + 32n of each 128 in bits 2n),
//     q - 1 in -1..2 (the quantizer writes 0..2 only), d

import { f16Table, f32ToF16 } from '../fp16.js';
import type { QuantizeFn } from './codec.js';

const fr = Math.fround;
const POW3 = [1, 3, 9, 27, 81, 243];

/** Trit n (0..4) of a TQ1_0 byte. */
function trit(q: number, n: number): number {
  return (((q * POW3[n]!) & 0xff) * 3) >> 8;
}

export function dequantizeTQ1_0(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 54) {
    const d = t[src[o + 52]! | (src[o + 53]! << 8)]!;
    for (let n = 0; n < 5; n++) for (let m = 0; m < 32; m++) dst[y++] = (trit(src[o + m]!, n) - 1) * d;
    for (let n = 0; n < 5; n++) for (let m = 0; m < 16; m++) dst[y++] = (trit(src[o + 32 + m]!, n) - 1) * d;
    for (let n = 0; n < 4; n++) for (let m = 0; m < 4; m++) dst[y++] = (trit(src[o + 48 + m]!, n) - 1) * d;
  }
}

export function dequantizeTQ2_0(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 66) {
    const d = t[src[o + 64]! | (src[o + 65]! << 8)]!;
    for (let j = 0; j < 64; j += 32) {
      for (let n = 0; n < 4; n++) {
        for (let m = 0; m < 32; m++) dst[y++] = (((src[o + j + m]! >> (2 * n)) & 3) - 1) * d;
      }
    }
  }
}

/**
 * `(int)lroundf(x)`: to nearest, halves away from zero; NaN, infinities and values beyond
 * a long give LONG_MIN (glibc converts them with cvttss2si), whose low 32 bits are 0.
 * An all-subnormal block's 1/amax overflows to infinity, so this decides its trits.
 */
function lround(x: number): number {
  if (!(Math.abs(x) < 2 ** 63)) return 0;
  const r = x < 0 ? -Math.floor(-x + 0.5) : Math.floor(x + 0.5);
  return r | 0;
}

/** amax of the block, written as the f16 scale; returns 1/amax (0 for an all-zero block). */
function ternaryScale(src: Float32Array, xo: number, dst: Uint8Array, dOff: number): number {
  let amax = 0;
  for (let j = 0; j < 256; j++) amax = Math.max(amax, Math.abs(src[xo + j]!));
  const h = f32ToF16(amax);
  dst[dOff] = h & 0xff;
  dst[dOff + 1] = h >>> 8;
  return amax ? fr(1 / amax) : 0;
}

/** Packs trits (0..2) base 3, the first the most significant, as ceil(v · 256 / 243). */
function packTrits(v: number): number {
  return ((v * 256 + 242) / 243) | 0;
}

/** quantize_row_tq1_0_ref over `nb` blocks. */
export const quantizeTQ1_0: QuantizeFn = (src, srcOff, dst, dstOff, nb) => {
  for (let b = 0; b < nb; b++) {
    let x = srcOff + b * 256;
    const o = dstOff + b * 54;
    const id = ternaryScale(src, x, dst, o + 52);
    const tr = (i: number) => lround(fr(src[i]! * id)) + 1;
    for (let m = 0; m < 32; m++) {
      let q = 0;
      for (let n = 0; n < 5; n++) q = q * 3 + tr(x + m + 32 * n);
      dst[o + m] = packTrits(q);
    }
    x += 160;
    for (let m = 0; m < 16; m++) {
      let q = 0;
      for (let n = 0; n < 5; n++) q = q * 3 + tr(x + m + 16 * n);
      dst[o + 32 + m] = packTrits(q);
    }
    x += 80;
    for (let j = 0; j < 4; j++) {
      let q = 0;
      for (let m = 0; m < 4; m++) q = q * 3 + tr(x + j + 4 * m);
      dst[o + 48 + j] = packTrits(q * 3);
    }
  }
};

/** quantize_row_tq2_0_ref over `nb` blocks. */
export const quantizeTQ2_0: QuantizeFn = (src, srcOff, dst, dstOff, nb) => {
  for (let b = 0; b < nb; b++) {
    const xo = srcOff + b * 256;
    const o = dstOff + b * 66;
    const id = ternaryScale(src, xo, dst, o + 64);
    for (let j = 0; j < 64; j += 32) {
      for (let m = 0; m < 32; m++) {
        let q = 0;
        for (let n = 0; n < 4; n++) q += ((lround(fr(src[xo + 4 * j + m + 32 * n]! * id)) + 1) & 3) << (2 * n);
        dst[o + j + m] = q;
      }
    }
  }
};
