// Shared shapes and C-float helpers for the row codecs.
//
// Every codec works on whole blocks: `nb` blocks read from `src[srcOff..]` and written
// to `dst[dstOff..]` (offsets in elements of each array). Validation happens once, in
// index.ts; these functions trust their arguments.

/** Decodes `nb` blocks of bytes at src[srcOff] into floats at dst[dstOff]. */
export type DequantizeFn = (src: Uint8Array, srcOff: number, dst: Float32Array, dstOff: number, nb: number) => void;

/** Encodes `nb` blocks of floats at src[srcOff] into bytes at dst[dstOff]. */
export type QuantizeFn = (src: Float32Array, srcOff: number, dst: Uint8Array, dstOff: number, nb: number) => void;

/**
 * Quantizes one row of `n` floats at src[srcOff..] into dst[dstOff..] as ggml's
 * quantize_<type> does (ggml_quantize_chunk for one row), with the row's importance
 * weights (`qw`: one per column, from qw[0]) or without (null).
 */
export type RowQuantizeFn = (
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  n: number,
  qw: Float32Array | null,
) => void;

export interface RowCodec {
  dequantize?: DequantizeFn;
  quantize?: QuantizeFn;
  /** ggml's quantize_<type>, importance matrix path included (else `quantize` per row). */
  quantizeRow?: RowQuantizeFn;
}

const fround = Math.fround;

/**
 * ggml's nearest_int: adds 1.5 * 2^23 in float arithmetic, which rounds to an integer
 * with ties to even (valid for |x| <= 2^22). `x` must already be a float32 value.
 */
export function nearestInt(x: number): number {
  return fround(x + 12582912) - 12582912;
}

/** C roundf: round half away from zero. */
export function roundf(x: number): number {
  return x < 0 ? -Math.round(-x) : Math.round(x);
}

/** Reads a little-endian float32 from bytes at any alignment. */
export function readF32(src: Uint8Array, off: number): number {
  return bitsToF32Local(src[off]! | (src[off + 1]! << 8) | (src[off + 2]! << 16) | (src[off + 3]! << 24));
}

/** Writes a little-endian float32 to bytes at any alignment. */
export function writeF32(dst: Uint8Array, off: number, x: number): void {
  scratchF32[0] = x;
  const w = scratchU32[0]!;
  dst[off] = w & 0xff;
  dst[off + 1] = (w >>> 8) & 0xff;
  dst[off + 2] = (w >>> 16) & 0xff;
  dst[off + 3] = w >>> 24;
}

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

function bitsToF32Local(bits: number): number {
  scratchU32[0] = bits >>> 0;
  return scratchF32[0]!;
}
