// Dequantizers of the non-linear 4-bit types IQ4_NL and IQ4_XS.
//
// Both map a 4-bit index through the same 16-entry codebook (ggml's kvalues_iq4nl).
//   IQ4_NL (18 B, 32 elements):   d (f16), qs[16]
//   IQ4_XS (136 B, 256 elements): d (f16), scales_h (u16: 8 x 2 high bits),
//                                 scales_l[4] (8 x 4 low bits), qs[128]
// Within each group of 32, element j < 16 is the low nibble of qs[j], j + 16 the high one.

import { f16Table } from '../fp16.js';

/** The IQ4_NL / IQ4_XS codebook. */
export const KVALUES_IQ4NL: Readonly<Int8Array> = new Int8Array([
  -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
]);

export function dequantizeIQ4_NL(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  const kv = KVALUES_IQ4NL;
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 18, y += 32) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    for (let j = 0; j < 16; j++) {
      const q = src[o + 2 + j]!;
      dst[y + j] = d * kv[q & 0x0f]!;
      dst[y + j + 16] = d * kv[q >>> 4]!;
    }
  }
}

export function dequantizeIQ4_XS(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const t = f16Table();
  const kv = KVALUES_IQ4NL;
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += 136) {
    const d = t[src[o]! | (src[o + 1]! << 8)]!;
    const scalesH = src[o + 2]! | (src[o + 3]! << 8);
    for (let ib = 0; ib < 8; ib++, y += 32) {
      const ls = ((src[o + 4 + (ib >>> 1)]! >>> (4 * (ib & 1))) & 0x0f) | (((scalesH >>> (2 * ib)) & 3) << 4);
      // d*(ls-32) is exact in float; its product with a codebook value is exact in double
      const dl = d * (ls - 32);
      const q = o + 8 + ib * 16;
      for (let j = 0; j < 16; j++) {
        const v = src[q + j]!;
        dst[y + j] = dl * kv[v & 0x0f]!;
        dst[y + j + 16] = dl * kv[v >>> 4]!;
      }
    }
  }
}
