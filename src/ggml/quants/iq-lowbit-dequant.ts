// Dequantizers of the codebook types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M
// (256 values per block). Each group of 8 (IQ2, IQ1) or 4 (IQ3) values is one point of
// the type's grid (iq-grids.ts), times a sub-block scale; IQ2/IQ3 add one sign bit per
// value, IQ1 a shift of +-1/8 per group.
//
// Layouts (little-endian; d is an f16 super-block scale):
//   IQ2_XXS  66 B: d, 8 x { 4 grid bytes, u32: 4 x 7 sign bits, 4-bit scale in bits 28-31 }
//   IQ2_XS   74 B: d, qs u16[32] (9-bit grid index, 7 sign bits), scales[8] (2 x 4 bits)
//   IQ2_S    82 B: d, qs[32] (grid index low bytes), signs[32], qh[8] (2 high bits per
//                  group), scales[8] (2 x 4 bits)
//   IQ3_XXS  98 B: d, qs[64] (grid indices), 8 x u32 (4 x 7 sign bits, 4-bit scale)
//   IQ3_S   110 B: d, qs[64] (index low bytes), qh[8] (9th bits), signs[32], scales[4]
//   IQ1_S    50 B: d, qs[32] (index low bytes), qh u16[8] (4 x 3 index bits, 3-bit scale,
//                  shift sign in bit 15)
//   IQ1_M    56 B: qs[32], qh[16] (2 x {3 index bits, shift sign}), scales u16[4]
//                  (4 x 3-bit scales each; the f16 super-scale in their top nibbles)
// Float arithmetic follows ggml's dequantize_row_* operation by operation (Math.fround
// where C rounds an intermediate to float), so results are the same bits.

import { f16Table } from '../fp16.js';
import {
  GRID_IQ1S,
  GRID_IQ2S,
  GRID_IQ2XS,
  GRID_IQ2XXS,
  GRID_IQ3S,
  GRID_IQ3XXS,
  gridValues,
  signsOf7,
} from './iq-grids.js';

const fr = Math.fround;
const IQ1_DELTA = 0.125;

/** y[j] = ±(db · grid[j]) for the 8 (or 4) coordinates of one grid point. */
function putPoint(
  dst: Float32Array,
  y: number,
  db: number,
  grid: Int8Array,
  g: number,
  n: number,
  signs: number,
  shift: number,
): void {
  for (let j = 0; j < n; j++) {
    const v = fr(db * grid[g + j]!);
    dst[y + j] = (signs >> (shift + j)) & 1 ? -v : v;
  }
}

export function dequantizeIQ2_XXS(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ2XXS);
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 66) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let ib = 0; ib < 8; ib++) {
      const q = o + 2 + 8 * ib;
      const aux = (src[q + 4]! | (src[q + 5]! << 8) | (src[q + 6]! << 16) | (src[q + 7]! << 24)) >>> 0;
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        putPoint(dst, y, db, grid, src[q + l]! * 8, 8, signsOf7((aux >>> (7 * l)) & 127), 0);
      }
    }
  }
}

export function dequantizeIQ2_XS(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ2XS);
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 74) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 66 + ib]!;
      const db0 = fr(fr(d * (0.5 + (sc & 0xf))) * 0.25);
      const db1 = fr(fr(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        const p = o + 2 + 2 * (4 * ib + l);
        const q = src[p]! | (src[p + 1]! << 8);
        putPoint(dst, y, l < 2 ? db0 : db1, grid, (q & 511) * 8, 8, signsOf7(q >> 9), 0);
      }
    }
  }
}

export function dequantizeIQ2_S(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ2S);
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 82) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 74 + ib]!;
      const qh = src[o + 66 + ib]!;
      const db0 = fr(fr(d * (0.5 + (sc & 0xf))) * 0.25);
      const db1 = fr(fr(d * (0.5 + (sc >> 4))) * 0.25);
      for (let l = 0; l < 4; l++, y += 8) {
        const g = src[o + 2 + 4 * ib + l]! | ((qh << (8 - 2 * l)) & 0x300);
        putPoint(dst, y, l < 2 ? db0 : db1, grid, g * 8, 8, src[o + 34 + 4 * ib + l]!, 0);
      }
    }
  }
}

export function dequantizeIQ3_XXS(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ3XXS);
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 98) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let ib = 0; ib < 8; ib++) {
      const a = o + 66 + 4 * ib;
      const aux = (src[a]! | (src[a + 1]! << 8) | (src[a + 2]! << 16) | (src[a + 3]! << 24)) >>> 0;
      const db = fr(fr(d * (0.5 + (aux >>> 28))) * 0.5);
      const q = o + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, y += 8) {
        const signs = signsOf7((aux >>> (7 * l)) & 127);
        putPoint(dst, y, db, grid, src[q + 2 * l]! * 4, 4, signs, 0);
        putPoint(dst, y + 4, db, grid, src[q + 2 * l + 1]! * 4, 4, signs, 4);
      }
    }
  }
}

export function dequantizeIQ3_S(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ3S);
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 110) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let ib = 0; ib < 8; ib++) {
      const sc = src[o + 106 + (ib >> 1)]!;
      const db = fr(d * (1 + 2 * (ib & 1 ? sc >> 4 : sc & 0xf)));
      const qh = src[o + 66 + ib]!;
      const q = o + 2 + 8 * ib;
      for (let l = 0; l < 4; l++, y += 8) {
        const signs = src[o + 74 + 4 * ib + l]!;
        const g1 = src[q + 2 * l]! | ((qh << (8 - 2 * l)) & 256);
        const g2 = src[q + 2 * l + 1]! | ((qh << (7 - 2 * l)) & 256);
        putPoint(dst, y, db, grid, g1 * 4, 4, signs, 0);
        putPoint(dst, y + 4, db, grid, g2 * 4, 4, signs, 4);
      }
    }
  }
}

/** y[j] = dl · (grid[j] + delta) for one IQ1 grid point. */
function putIQ1(dst: Float32Array, y: number, dl: number, grid: Int8Array, g: number, delta: number): void {
  for (let j = 0; j < 8; j++) dst[y + j] = dl * (grid[g + j]! + delta);
}

export function dequantizeIQ1_S(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ1S);
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 50) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let ib = 0; ib < 8; ib++) {
      const qh = src[o + 34 + 2 * ib]! | (src[o + 35 + 2 * ib]! << 8);
      const dl = fr(d * (2 * ((qh >> 12) & 7) + 1));
      const delta = qh & 0x8000 ? -IQ1_DELTA : IQ1_DELTA;
      for (let l = 0; l < 4; l++, y += 8) {
        const g = src[o + 2 + 4 * ib + l]! | (((qh >> (3 * l)) & 7) << 8);
        putIQ1(dst, y, dl, grid, g * 8, delta);
      }
    }
  }
}

export function dequantizeIQ1_M(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) {
  const t = f16Table();
  const grid = gridValues(GRID_IQ1S);
  const sc = [0, 0, 0, 0];
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 56) {
    for (let i = 0; i < 4; i++) sc[i] = src[o + 48 + 2 * i]! | (src[o + 49 + 2 * i]! << 8);
    const d = t[(sc[0]! >> 12) | ((sc[1]! >> 8) & 0xf0) | ((sc[2]! >> 4) & 0xf00) | (sc[3]! & 0xf000)]!;
    for (let ib = 0; ib < 8; ib++) {
      const s = sc[ib >> 1]! >> (6 * (ib & 1));
      const dl1 = fr(d * (2 * (s & 7) + 1));
      const dl2 = fr(d * (2 * ((s >> 3) & 7) + 1));
      for (let l = 0; l < 4; l++, y += 8) {
        const h = src[o + 32 + 2 * ib + (l >> 1)]! >> (4 * (l & 1));
        const g = src[o + 4 * ib + l]! | ((h & 7) << 8);
        putIQ1(dst, y, l < 2 ? dl1 : dl2, grid, g * 8, h & 8 ? -IQ1_DELTA : IQ1_DELTA);
      }
    }
  }
}
