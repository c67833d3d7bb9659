// IEEE half (f16) and bfloat16 (bf16) conversions with ggml's exact rounding.
//
// f32 -> f16 rounds to nearest, ties to even, with subnormals, as F16C's
// `vcvtps2ph imm=0` and ggml's portable GGML_FP32_TO_FP16 both do. f32 -> bf16 is
// ggml_compute_fp32_to_bf16: NaN is made quiet, everything else (subnormals included)
// rounds to nearest even on the upper 16 bits. All conversions work on bit patterns
// through one shared scratch word, so they allocate nothing per call.
//
// Typed arrays use the platform's byte order; Node runs on little-endian hosts only,
// which the GGUF byte layouts also assume.

const scratchF32 = new Float32Array(1);
const scratchU32 = new Uint32Array(scratchF32.buffer);

/** Bit pattern (uint32) of `x` rounded to float32. */
export function f32Bits(x: number): number {
  scratchF32[0] = x;
  return scratchU32[0]!;
}

/** The float32 whose bit pattern is `bits`. */
export function bitsToF32(bits: number): number {
  scratchU32[0] = bits;
  return scratchF32[0]!;
}

/** f16 bit pattern -> value (computed; see f16Table() for a lookup table). */
export function f16ToF32(h: number): number {
  const sign = (h & 0x8000) << 16;
  const exp = (h >>> 10) & 0x1f;
  let mant = h & 0x3ff;
  if (exp === 0x1f) {
    // inf / NaN (payload kept in the top mantissa bits)
    scratchU32[0] = (sign | 0x7f800000 | (mant << 13)) >>> 0;
    return scratchF32[0]!;
  }
  if (exp === 0) {
    if (mant === 0) return sign ? -0 : 0;
    // subnormal half: normalize into a float32 normal
    let e = 113;
    while ((mant & 0x400) === 0) {
      mant <<= 1;
      e--;
    }
    scratchU32[0] = (sign | (e << 23) | ((mant & 0x3ff) << 13)) >>> 0;
    return scratchF32[0]!;
  }
  scratchU32[0] = (sign | ((exp + 112) << 23) | (mant << 13)) >>> 0;
  return scratchF32[0]!;
}

/** float -> f16 bit pattern, round to nearest even (the value is first taken as float32). */
export function f32ToF16(x: number): number {
  scratchF32[0] = x;
  const w = scratchU32[0]!;
  const sign = (w >>> 16) & 0x8000;
  const abs = w & 0x7fffffff;
  if (abs >= 0x7f800000) {
    // inf stays inf; NaN becomes a quiet NaN keeping the top payload bits (as F16C does)
    return abs === 0x7f800000 ? sign | 0x7c00 : sign | 0x7e00 | ((abs >>> 13) & 0x3ff);
  }
  // 65520 and above round (to even) past 65504, the largest half
  if (abs >= 0x477ff000) return sign | 0x7c00;
  if (abs < 0x38800000) {
    // below 2^-14: a half subnormal, in units of 2^-24
    const e = abs >>> 23;
    const shift = 126 - e;
    if (shift > 24) return sign;
    const mant = (abs & 0x7fffff) | 0x800000;
    let q = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (q & 1) !== 0)) q++;
    return sign | q;
  }
  // normal: rebias the exponent (127 -> 15), drop 13 mantissa bits, round to even;
  // a carry out of the mantissa correctly bumps the exponent
  let h = (abs - 0x38000000) >>> 13;
  const rem = abs & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) !== 0)) h++;
  return sign | h;
}

/** The value `x` takes after a round trip through f16 (as a JS number). */
export function roundToF16(x: number): number {
  return f16ToF32(f32ToF16(x));
}

/** bf16 bit pattern -> value. */
export function bf16ToF32(h: number): number {
  scratchU32[0] = (h & 0xffff) << 16;
  return scratchF32[0]!;
}

/** float -> bf16 bit pattern exactly as ggml_compute_fp32_to_bf16. */
export function f32ToBF16(x: number): number {
  scratchF32[0] = x;
  const w = scratchU32[0]!;
  if ((w & 0x7fffffff) > 0x7f800000) return ((w >>> 16) | 64) & 0xffff;
  // w + 0x8000 stays below 2^32 for every non-NaN w, so plain number arithmetic is exact
  return ((w + 0x7fff + ((w >>> 16) & 1)) >>> 16) & 0xffff;
}

let table: Float32Array | undefined;

/** 65536-entry f16 -> f32 table (256 KiB), built on first use. */
export function f16Table(): Float32Array {
  if (table) return table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16ToF32(h);
  table = t;
  return t;
}

/** Reads the little-endian f16 at `src[off]` as a number. */
export function readF16(src: Uint8Array, off: number): number {
  return f16Table()[src[off]! | (src[off + 1]! << 8)]!;
}

/** Writes `x` as a little-endian f16 at `dst[off]`. */
export function writeF16(dst: Uint8Array, off: number, x: number): void {
  const h = f32ToF16(x);
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
}
