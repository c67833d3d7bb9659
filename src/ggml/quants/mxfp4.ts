// MXFP4 (ggml type 39, the OCP microscaling FP4 format gpt-oss ships its experts in):
// blocks of 32 elements, 17 bytes: a shared E8M0 exponent byte `e`, then 16 bytes of
// 4-bit E2M1 codes (element j < 16 is the low nibble of qs[j], j + 16 the high one).
// ggml stores the codes' values doubled as small integers (kvalues_mxfp4) and halves the
// scale instead: value = kvalues[code] · 2^(e − 128), exact in float32 for every e
// (e = 0 and 1 give the subnormals 2^-128 and 2^-127).
//
// The quantizer is ggml's quantize_row_mxfp4_ref: e = floor(log2(amax)) − 2 + 127 taken
// to uint8 as x86 does it (through a 32-bit integer, keeping the low byte, so blocks whose
// amax is below 2^-125 wrap around, as ggml's do), then each element gets the first code
// of least |kvalues[i]·d − x| in float arithmetic.

/** ggml's kvalues_mxfp4: E2M1 values times two. */
export const KVALUES_MXFP4: Readonly<Int8Array> = new Int8Array([
  0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12,
]);

/** Bytes per block. */
const BLOCK = 17;

const fround = Math.fround;

/** GGML_E8M0_TO_FP32_HALF: 2^(e − 128) (exact: float32 reaches 2^-149). */
export function e8m0Half(e: number): number {
  return 2 ** (e - 128);
}

export function dequantizeMXFP4(src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number): void {
  const kv = KVALUES_MXFP4;
  for (let b = 0, o = srcOff, y = dstOff; b < nb; b++, o += BLOCK, y += 32) {
    const d = e8m0Half(src[o]!);
    for (let j = 0; j < 16; j++) {
      const q = src[o + 1 + j]!;
      dst[y + j] = kv[q & 0x0f]! * d;
      dst[y + j + 16] = kv[q >>> 4]! * d;
    }
  }
}

/** The first code whose value is nearest x (float32 errors, strict comparison, as ggml). */
function bestIndex(x: number, d: number): number {
  const kv = KVALUES_MXFP4;
  let best = 0;
  let bestErr = Math.abs(fround(kv[0]! * d - x));
  for (let i = 1; i < 16; i++) {
    // k·d is exact; the difference computed in double and rounded once equals float32's
    const err = Math.abs(fround(kv[i]! * d - x));
    if (err < bestErr) {
      best = i;
      bestErr = err;
    }
  }
  return best;
}

export function quantizeMXFP4(src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number): void {
  for (let b = 0, x = srcOff, o = dstOff; b < nb; b++, x += 32, o += BLOCK) {
    let amax = 0;
    for (let j = 0; j < 32; j++) {
      const a = Math.abs(src[x + j]!);
      if (amax < a) amax = a;
    }
    // log2f is within an ulp of log2: rounding the double result to float gives the same
    // floor except for inputs within ~1e-7 relative of a power of two, where both round to it
    const e = amax > 0 ? (Math.floor(fround(Math.log2(amax))) - 2 + 127) & 0xff : 0;
    const d = e8m0Half(e);
    dst[o] = e;
    for (let j = 0; j < 16; j++) {
      dst[o + 1 + j] = bestIndex(src[x + j]!, d) | (bestIndex(src[x + 16 + j]!, d) << 4);
    }
  }
}
