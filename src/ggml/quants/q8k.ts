// Q8_K quantization (activations for the K-quant dot products), byte-exact with
// ggml's quantize_row_q8_K_ref. Layout: d (f32), qs[256] (int8), bsums[16] (int16).

import { nearestInt, writeF32 } from './codec.js';

const fround = Math.fround;

export function quantizeQ8_K(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 256, o += 292) {
    let max = 0;
    let amax = 0;
    for (let j = 0; j < 256; j++) {
      const v = src[x + j]!;
      const ax = Math.abs(v);
      if (ax > amax) {
        amax = ax;
        max = v;
      }
    }
    if (!amax) {
      // ggml leaves bsums untouched here; zero them so the output is deterministic
      dst.fill(0, o, o + 292);
      continue;
    }
    // -127 (not -128) so that the largest magnitude maps to exactly +-127
    const iscale = fround(-127 / max);
    for (let g = 0; g < 16; g++) {
      let sum = 0;
      for (let l = 0; l < 16; l++) {
        const j = g * 16 + l;
        const q = Math.min(127, nearestInt(fround(iscale * src[x + j]!)));
        dst[o + 4 + j] = q & 0xff;
        sum += q;
      }
      dst[o + 260 + 2 * g] = sum & 0xff;
      dst[o + 261 + 2 * g] = (sum >>> 8) & 0xff;
    }
    writeF32(dst, o, fround(1 / iscale));
  }
}
