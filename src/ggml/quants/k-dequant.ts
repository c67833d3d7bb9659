// Dequantizers of the K-quants (256-element super-blocks): Q2_K, Q3_K, Q4_K, Q5_K,
// Q6_K, and the activation type Q8_K.
//
// Layouts (little-endian; d/dmin are f16 unless noted):
//   Q2_K (84 B):  scales[16] (lo nibble: scale, hi: min), qs[64] (2 bits), d, dmin
//   Q3_K (110 B): hmask[32] (high bit), qs[64] (low 2 bits), scales[12] (16 x 6 bits), d
//   Q4_K (144 B): d, dmin, scales[12] (8 x 6-bit scale + 8 x 6-bit min), qs[128]
//   Q5_K (176 B): d, dmin, scales[12], qh[32] (5th bits), qs[128]
//   Q6_K (210 B): ql[128] (low 4 bits), qh[64] (high 2 bits), scales[16] (int8), d
//   Q8_K (292 B): d (f32), qs[256] (int8), bsums[16] (int16, sums of 16 quants)
//
// Each product below is exact in float32 (small integers times an f16-derived scale),
// so computing in doubles and letting the Float32Array store round once gives exactly
// what ggml's float code does.

import { f16Table } from '../fp16.js';
import { readF32 } from './codec.js';

export function dequantizeQ2_K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 84) {
    const d = t[src[o + 80]! | (src[o + 81]! << 8)]!;
    const dmin = t[src[o + 82]! | (src[o + 83]! << 8)]!;
    let is = 0;
    for (let half = 0; half < 2; half++) {
      const q = o + 16 + half * 32;
      for (let shift = 0; shift < 8; shift += 2) {
        for (let part = 0; part < 32; part += 16) {
          const sc = src[o + is++]!;
          const dl = d * (sc & 0x0f);
          const ml = dmin * (sc >>> 4);
          for (let l = 0; l < 16; l++) dst[y++] = dl * ((src[q + part + l]! >>> shift) & 3) - ml;
        }
      }
    }
  }
}

// 16 six-bit scales of Q3_K: low 4 bits in bytes 0..7 (two per byte), high 2 bits in 8..11.
const q3Scales = new Int32Array(16);

export function dequantizeQ3_K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 110) {
    const d = t[src[o + 108]! | (src[o + 109]! << 8)]!;
    const sc = o + 96;
    for (let j = 0; j < 16; j++) {
      const lo = j < 8 ? src[sc + j]! & 0x0f : src[sc + j - 8]! >>> 4;
      const hi = (src[sc + 8 + (j & 3)]! >>> (2 * (j >>> 2))) & 3;
      q3Scales[j] = (lo | (hi << 4)) - 32;
    }
    let is = 0;
    let m = 1;
    for (let half = 0; half < 2; half++) {
      const q = o + 32 + half * 32;
      for (let shift = 0; shift < 8; shift += 2, m <<= 1) {
        for (let part = 0; part < 32; part += 16) {
          const dl = d * q3Scales[is++]!;
          for (let l = 0; l < 16; l++) {
            const lo2 = (src[q + part + l]! >>> shift) & 3;
            const v = src[o + part + l]! & m ? lo2 : lo2 - 4;
            dst[y++] = dl * v;
          }
        }
      }
    }
  }
}

/** Fills sc[0..7] (scales) and mn[0..7] (mins) from the 12 packed bytes of Q4_K/Q5_K. */
function scaleMinK4(src: Uint8Array, p: number, sc: Int32Array, mn: Int32Array): void {
  for (let j = 0; j < 4; j++) {
    sc[j] = src[p + j]! & 63;
    mn[j] = src[p + j + 4]! & 63;
  }
  for (let j = 4; j < 8; j++) {
    sc[j] = (src[p + j + 4]! & 0x0f) | ((src[p + j - 4]! >>> 6) << 4);
    mn[j] = (src[p + j + 4]! >>> 4) | ((src[p + j]! >>> 6) << 4);
  }
}

const k4Sc = new Int32Array(8);
const k4Mn = new Int32Array(8);

export function dequantizeQ4_K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 144) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    const dmin = t[src[o + 2]! | (src[o + 3]! << 8)]!;
    scaleMinK4(src, o + 4, k4Sc, k4Mn);
    for (let g = 0; g < 4; g++) {
      const q = o + 16 + g * 32;
      const d1 = d * k4Sc[2 * g]!;
      const m1 = dmin * k4Mn[2 * g]!;
      const d2 = d * k4Sc[2 * g + 1]!;
      const m2 = dmin * k4Mn[2 * g + 1]!;
      for (let l = 0; l < 32; l++) dst[y++] = d1 * (src[q + l]! & 0x0f) - m1;
      for (let l = 0; l < 32; l++) dst[y++] = d2 * (src[q + l]! >>> 4) - m2;
    }
  }
}

export function dequantizeQ5_K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 176) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    const dmin = t[src[o + 2]! | (src[o + 3]! << 8)]!;
    scaleMinK4(src, o + 4, k4Sc, k4Mn);
    const qh = o + 16;
    for (let g = 0, u1 = 1, u2 = 2; g < 4; g++, u1 <<= 2, u2 <<= 2) {
      const ql = o + 48 + g * 32;
      const d1 = d * k4Sc[2 * g]!;
      const m1 = dmin * k4Mn[2 * g]!;
      const d2 = d * k4Sc[2 * g + 1]!;
      const m2 = dmin * k4Mn[2 * g + 1]!;
      for (let l = 0; l < 32; l++) dst[y++] = d1 * ((src[ql + l]! & 0x0f) + (src[qh + l]! & u1 ? 16 : 0)) - m1;
      for (let l = 0; l < 32; l++) dst[y++] = d2 * ((src[ql + l]! >>> 4) + (src[qh + l]! & u2 ? 16 : 0)) - m2;
    }
  }
}

const fround = Math.fround;

// d * scale for the 8 groups of 16 in one half of a Q6_K block (exact in float32)
const q6Scales = new Float64Array(8);

export function dequantizeQ6_K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  const s = q6Scales;
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 210, y += 256) {
    const d = t[src[o + 208]! | (src[o + 209]! << 8)]!;
    for (let n = 0; n < 2; n++) {
      const ql = o + n * 64;
      const qh = o + 128 + n * 32;
      const sc = o + 192 + n * 8;
      const yy = y + n * 128;
      for (let k = 0; k < 8; k++) s[k] = fround(d * ((src[sc + k]! << 24) >> 24));
      for (let l = 0; l < 32; l++) {
        const is = l >>> 4;
        const h = src[qh + l]!;
        const a = src[ql + l]!;
        const c = src[ql + l + 32]!;
        // (d*sc) times q is exact in double, so the store rounds once, as C's float product
        dst[yy + l] = s[is]! * (((a & 0x0f) | ((h & 3) << 4)) - 32);
        dst[yy + l + 32] = s[is + 2]! * (((c & 0x0f) | (((h >>> 2) & 3) << 4)) - 32);
        dst[yy + l + 64] = s[is + 4]! * (((a >>> 4) | (((h >>> 4) & 3) << 4)) - 32);
        dst[yy + l + 96] = s[is + 6]! * (((c >>> 4) | (((h >>> 6) & 3) << 4)) - 32);
      }
    }
  }
}

export function dequantizeQ8_K(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 292, y += 256) {
    const d = readF32(src, o);
    for (let j = 0; j < 256; j++) dst[y + j] = d * ((src[o + 4 + j]! << 24) >> 24);
  }
}
