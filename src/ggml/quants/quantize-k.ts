// Reference quantizers for the K-quants (Q2_K .. Q6_K), byte-exact with what
// llama-quantize writes when it runs without an importance matrix.
//
// With no imatrix, ggml_quantize_chunk -> quantize_qN_K -> quantize_row_qN_K_ref for
// every K type, so these reproduce the `_ref` algorithms. Byte-exactness needs C's
// float32 arithmetic: every product, sum, quotient and reciprocal goes through
// Math.fround (a double operation rounded once to float32 is the correctly rounded
// float32 result for + - * / and sqrt, so this is exact emulation, not approximation).
// Expressions keep C's evaluation order: `w*x*l` is `(w*x)*l`. No fused multiply-add:
// the fixtures' llama-quantize output and node-llama-cpp's x86-64 libggml-base both match
// unfused arithmetic bit for bit.
//
// Block layouts (little-endian, f16 scales):
//   Q2_K  84 B: scales[16] (lo nibble: scale, hi nibble: min), qs[64], d, dmin
//   Q3_K 110 B: hmask[32], qs[64], scales[12] (6-bit, packed), d
//   Q4_K 144 B: d, dmin, scales[12] (6-bit scale+min, packed), qs[128]
//   Q5_K 176 B: d, dmin, scales[12], qh[32], qs[128]
//   Q6_K 210 B: ql[128], qh[64], scales[16] (int8), d

import { f16ToF32, f32ToF16 } from '../fp16.js';
import type { QuantizeFn } from './codec.js';
import {
  clamp,
  F0_1,
  GROUP_MAX_EPS,
  makeQ3Quants,
  makeQkx2Quants,
  makeQkx3Quants,
  makeQpQuants,
  makeQxQuants,
  nearestInt,
  qkxMin,
} from './quant-search.js';

const fr = Math.fround;

const QK_K = 256;

/** Writes `x` (a float) as a little-endian f16 and returns the value read back from it. */
function putF16(dst: Uint8Array, off: number, x: number): number {
  const h = f32ToF16(x);
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
  return f16ToF32(h);
}

/** Packs 4 groups of 32 two-bit values (L[j+l], +32, +64, +96) into qs bytes, per 128 values. */
function pack2bit(L: Uint8Array | Int8Array, dst: Uint8Array, qo: number): void {
  for (let j = 0; j < QK_K; j += 128) {
    const q = qo + j / 4;
    for (let l = 0; l < 32; l++) {
      dst[q + l] = L[j + l]! | (L[j + l + 32]! << 2) | (L[j + l + 64]! << 4) | (L[j + l + 96]! << 6);
    }
  }
}

/** Runs a block-form quantizer over src[0..n) -> dst[0..), after checking the sizes. */
function wholeRow(name: string, fn: QuantizeFn, blockBytes: number, src: Float32Array, dst: Uint8Array, n: number) {
  if (!Number.isSafeInteger(n) || n < 0 || n % QK_K !== 0) {
    throw new RangeError(`${name}: n=${n} is not a multiple of ${QK_K}`);
  }
  const nb = n / QK_K;
  if (src.length < n) throw new RangeError(`${name}: source has ${src.length} values, need ${n}`);
  if (dst.length < nb * blockBytes) {
    throw new RangeError(`${name}: destination has ${dst.length} bytes, need ${nb * blockBytes}`);
  }
  fn(src, 0, dst, 0, nb);
}

// Scratch shared by the quantizers (single-threaded, never re-entered).
const Lu = new Uint8Array(QK_K);
const Li = new Int8Array(QK_K);
const Laux = new Uint8Array(32);
const weights = new Float32Array(32);
const scales = new Float32Array(16);
const mins = new Float32Array(16);

// ---------------------------------------------------------------- Q2_K

/** quantize_row_q2_K_ref over `nb` blocks: 16 groups of 16, 2-bit values, 4-bit scale and min per group. */
export const quantizeQ2_K: QuantizeFn = (src, srcOff, dst, dstOff, nb) => {
  const L = Lu;
  const q4scale = 15;
  for (let i = 0; i < nb; i++) {
    const xo = srcOff + i * QK_K;
    const yo = dstOff + i * 84;
    let maxScale = 0;
    let maxMin = 0;
    for (let j = 0; j < 16; j++) {
      for (let l = 0; l < 16; l++) weights[l] = Math.abs(src[xo + 16 * j + l]!);
      const s = makeQkx2Quants(16, 3, src, xo + 16 * j, weights, L, 16 * j, Laux, -0.5, F0_1, 15, true);
      scales[j] = s;
      mins[j] = qkxMin;
      if (s > maxScale) maxScale = s;
      if (mins[j]! > maxMin) maxMin = mins[j]!;
    }
    let d: number;
    if (maxScale > 0) {
      const iscale = fr(q4scale / maxScale);
      for (let j = 0; j < 16; j++) dst[yo + j] = nearestInt(fr(iscale * scales[j]!)) & 0xff;
      d = putF16(dst, yo + 80, fr(maxScale / q4scale));
    } else {
      dst.fill(0, yo, yo + 16);
      d = putF16(dst, yo + 80, 0);
    }
    let dmin: number;
    if (maxMin > 0) {
      const iscale = fr(q4scale / maxMin);
      for (let j = 0; j < 16; j++) dst[yo + j] |= nearestInt(fr(iscale * mins[j]!)) << 4;
      dmin = putF16(dst, yo + 82, fr(maxMin / q4scale));
    } else {
      dmin = putF16(dst, yo + 82, 0);
    }
    // requantize against the scales as stored (f16 d times 4-bit factors)
    for (let j = 0; j < 16; j++) {
      const dl = fr(d * (dst[yo + j]! & 0xf));
      if (dl === 0) continue;
      const ml = fr(dmin * (dst[yo + j]! >> 4));
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(fr(fr(src[xo + 16 * j + ii]! + ml) / dl)), 0, 3);
      }
    }
    pack2bit(L, dst, yo + 16);
  }
};

/** Q2_K of src[0..n), n a multiple of 256, into dst (84 bytes per 256 values). */
export function quantizeQ2K(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('Q2_K', quantizeQ2_K, 84, src, dst, n);
}

// ---------------------------------------------------------------- Q3_K

/** quantize_row_q3_K_ref over `nb` blocks: 16 groups of 16, 3-bit values (2 low bits + hmask bit), 6-bit signed scales. */
export const quantizeQ3_K: QuantizeFn = (src, srcOff, dst, dstOff, nb) => {
  const L = Li;
  for (let i = 0; i < nb; i++) {
    const xo = srcOff + i * QK_K;
    const yo = dstOff + i * 110;
    const so = yo + 96; // scales[12]
    let maxScale = 0;
    let amax = 0;
    for (let j = 0; j < 16; j++) {
      const s = makeQ3Quants(16, 4, src, xo + 16 * j, L, 16 * j);
      scales[j] = s;
      const as = Math.abs(s);
      if (as > amax) {
        amax = as;
        maxScale = s;
      }
    }
    dst.fill(0, so, so + 12);
    let d: number;
    if (maxScale !== 0) {
      const iscale = fr(-32 / maxScale);
      for (let j = 0; j < 16; j++) {
        // C stores nearest_int into an int8_t before clamping
        let l = (nearestInt(fr(iscale * scales[j]!)) << 24) >> 24;
        l = clamp(l, -32, 31) + 32;
        if (j < 8) dst[so + j] = l & 0xf;
        else dst[so + j - 8] |= (l & 0xf) << 4;
        dst[so + 8 + (j % 4)] |= (l >> 4) << (2 * (j >> 2));
      }
      d = putF16(dst, yo + 108, fr(1 / iscale));
    } else {
      d = putF16(dst, yo + 108, 0);
    }
    for (let j = 0; j < 16; j++) {
      const lo4 = j < 8 ? dst[so + j]! & 0xf : dst[so + j - 8]! >> 4;
      const sc = (lo4 | (((dst[so + 8 + (j % 4)]! >> (2 * (j >> 2))) & 3) << 4)) - 32;
      const dl = fr(d * sc);
      if (dl === 0) continue;
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(fr(src[xo + 16 * j + ii]! / dl)), -4, 3) + 4;
      }
    }
    // high bit of value j goes to hmask[j % 32], bit j / 32
    dst.fill(0, yo, yo + 32);
    for (let j = 0; j < QK_K; j++) {
      if (L[j]! > 3) {
        dst[yo + (j & 31)] |= 1 << (j >> 5);
        L[j] = L[j]! - 4;
      }
    }
    pack2bit(L, dst, yo + 32);
  }
};

/** Q3_K of src[0..n), n a multiple of 256, into dst (110 bytes per 256 values). */
export function quantizeQ3K(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('Q3_K', quantizeQ3_K, 110, src, dst, n);
}

// ---------------------------------------------------------------- Q4_K / Q5_K

/**
 * Shared body of quantize_row_q4_K_ref and quantize_row_q5_K_ref: 8 groups of 32,
 * values in [0, nmax], 6-bit scale and min per group. Leaves the values in L and
 * writes d, dmin and the packed scales at yo.
 */
function quantizeScaleMin32(
  src: Float32Array,
  xo: number,
  dst: Uint8Array,
  yo: number,
  nmax: number,
  rmin: number,
  nstep: number,
  L: Uint8Array,
): void {
  let maxScale = 0;
  let maxMin = 0;
  for (let j = 0; j < 8; j++) {
    const go = xo + 32 * j;
    let sumX2 = 0;
    for (let l = 0; l < 32; l++) sumX2 = fr(sumX2 + fr(src[go + l]! * src[go + l]!));
    const avX = fr(Math.sqrt(fr(sumX2 / 32)));
    for (let l = 0; l < 32; l++) weights[l] = fr(avX + Math.abs(src[go + l]!));
    const s = makeQkx2Quants(32, nmax, src, go, weights, L, 32 * j, Laux, rmin, F0_1, nstep, false);
    scales[j] = s;
    mins[j] = qkxMin;
    if (s > maxScale) maxScale = s;
    if (mins[j]! > maxMin) maxMin = mins[j]!;
  }
  const invScale = maxScale > 0 ? fr(63 / maxScale) : 0;
  const invMin = maxMin > 0 ? fr(63 / maxMin) : 0;
  const so = yo + 4;
  for (let j = 0; j < 8; j++) {
    // C stores nearest_int into a uint8_t, then caps at 63
    const ls = Math.min(63, nearestInt(fr(invScale * scales[j]!)) & 0xff);
    const lm = Math.min(63, nearestInt(fr(invMin * mins[j]!)) & 0xff);
    if (j < 4) {
      dst[so + j] = ls;
      dst[so + j + 4] = lm;
    } else {
      dst[so + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      dst[so + j - 4] |= (ls >> 4) << 6;
      dst[so + j] |= (lm >> 4) << 6;
    }
  }
  const d = putF16(dst, yo, fr(maxScale / 63));
  const dmin = putF16(dst, yo + 2, fr(maxMin / 63));
  requantizeScaleMin32(src, xo, dst, so, d, dmin, nmax, L);
}

/** Q4_K qs: for each 64 values, byte l holds value l (low nibble) and l+32 (high nibble). */
function packQ4K(L: Uint8Array, dst: Uint8Array, yo: number): void {
  for (let j = 0; j < QK_K; j += 64) {
    const q = yo + 16 + j / 2;
    for (let l = 0; l < 32; l++) dst[q + l] = L[j + l]! | (L[j + l + 32]! << 4);
  }
}

/** Q5_K qs and qh: low nibbles as in Q4_K; bit 4 of value n+j -> qh[j] bit 2k, of n+j+32 -> bit 2k+1. */
function packQ5K(L: Uint8Array, dst: Uint8Array, yo: number): void {
  const qh = yo + 16;
  dst.fill(0, qh, qh + 32);
  for (let n64 = 0, k = 0; n64 < QK_K; n64 += 64, k++) {
    const ql = yo + 48 + n64 / 2;
    for (let j = 0; j < 32; j++) {
      let l1 = L[n64 + j]!;
      let l2 = L[n64 + j + 32]!;
      if (l1 > 15) {
        l1 -= 16;
        dst[qh + j] |= 1 << (2 * k);
      }
      if (l2 > 15) {
        l2 -= 16;
        dst[qh + j] |= 2 << (2 * k);
      }
      dst[ql + j] = l1 | (l2 << 4);
    }
  }
}

/** quantize_row_q4_K_ref over `nb` blocks: 4-bit values, 6-bit scales and mins per group of 32. */
export const quantizeQ4_K: QuantizeFn = (src, srcOff, dst, dstOff, nb) => {
  const L = Lu;
  for (let i = 0; i < nb; i++) {
    const yo = dstOff + i * 144;
    quantizeScaleMin32(src, srcOff + i * QK_K, dst, yo, 15, -1, 20, L);
    packQ4K(L, dst, yo);
  }
};

/** Q4_K of src[0..n), n a multiple of 256, into dst (144 bytes per 256 values). */
export function quantizeQ4K(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('Q4_K', quantizeQ4_K, 144, src, dst, n);
}

/** quantize_row_q5_K_ref over `nb` blocks: 5-bit values (4 low bits + qh bit), 6-bit scales and mins per group of 32. */
export const quantizeQ5_K: QuantizeFn = (src, srcOff, dst, dstOff, nb) => {
  const L = Lu;
  for (let i = 0; i < nb; i++) {
    const yo = dstOff + i * 176;
    quantizeScaleMin32(src, srcOff + i * QK_K, dst, yo, 31, -0.5, 15, L);
    packQ5K(L, dst, yo);
  }
};

/** Q5_K of src[0..n), n a multiple of 256, into dst (176 bytes per 256 values). */
export function quantizeQ5K(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('Q5_K', quantizeQ5_K, 176, src, dst, n);
}

// ---------------------------------------------------------------- Q6_K

/** quantize_row_q6_K_ref over `nb` blocks: 16 groups of 16, 6-bit values (ql nibble + qh 2 bits), int8 scales. */
export const quantizeQ6_K: QuantizeFn = (src, srcOff, dst, dstOff, nb) => q6K(src, srcOff, dst, dstOff, nb, null, 0);

/** Q6_K blocks, the groups' scales searched by make_qx_quants weighted by qw (null: x²). */
function q6K(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array | null,
  qwOff: number,
): void {
  const L = Lu;
  for (let i = 0; i < nb; i++) {
    const xo = srcOff + i * QK_K;
    const yo = dstOff + i * 210;
    let maxScale = 0;
    let maxAbsScale = 0;
    for (let ib = 0; ib < 16; ib++) {
      const s = makeQxQuants(16, 32, src, xo + 16 * ib, L, 16 * ib, qw, qwOff + i * QK_K + 16 * ib);
      scales[ib] = s;
      const as = Math.abs(s);
      if (as > maxAbsScale) {
        maxAbsScale = as;
        maxScale = s;
      }
    }
    if (maxAbsScale < GROUP_MAX_EPS) {
      dst.fill(0, yo, yo + 210);
      continue;
    }
    const iscale = fr(-128 / maxScale);
    const d = putF16(dst, yo + 208, fr(1 / iscale));
    const so = yo + 192;
    for (let ib = 0; ib < 16; ib++) dst[so + ib] = Math.min(127, nearestInt(fr(iscale * scales[ib]!))) & 0xff;
    for (let j = 0; j < 16; j++) {
      const sc = (dst[so + j]! << 24) >> 24;
      const dl = fr(d * sc);
      if (dl === 0) continue;
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(fr(src[xo + 16 * j + ii]! / dl)), -32, 31) + 32;
      }
    }
    // per 128 values: ql[l] = v[l] | v[l+64]<<4, ql[l+32] = v[l+32] | v[l+96]<<4,
    // qh[l] = the top 2 bits of v[l], v[l+32], v[l+64], v[l+96]
    for (let j = 0; j < QK_K; j += 128) {
      const ql = yo + j / 2;
      const qh = yo + 128 + j / 4;
      for (let l = 0; l < 32; l++) {
        const q1 = L[j + l]!;
        const q2 = L[j + l + 32]!;
        const q3 = L[j + l + 64]!;
        const q4 = L[j + l + 96]!;
        dst[ql + l] = (q1 & 0xf) | ((q3 & 0xf) << 4);
        dst[ql + l + 32] = (q2 & 0xf) | ((q4 & 0xf) << 4);
        dst[qh + l] = (q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6);
      }
    }
  }
}

/** Q6_K of src[0..n), n a multiple of 256, into dst (210 bytes per 256 values). */
export function quantizeQ6K(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('Q6_K', quantizeQ6_K, 210, src, dst, n);
}

// ---------------------------------------------------------------- with an importance matrix
//
// quantize_row_qN_K_impl: what ggml_quantize_chunk runs when given quant weights `qw` (the
// imatrix entries of the row's columns; block b reads qw[qwOff + 256·b ..]). Each value
// is weighted by qw · sqrt(sigma2 + x²) (Q6_K: qw alone), sigma2 the block's mean square
// (times 2 except for Q2_K); scales and mins are then quantized by make_qp_quants
// weighted by their group's summed weights.

const weights16 = new Float32Array(16);
const sw = new Float32Array(16);
const Ls = new Uint8Array(16);
const Lm = new Uint8Array(16);
const Lsi = new Int8Array(16);

/** Σ x² over the block at xo, in float, times `mul`, over 256. */
function blockSigma2(src: Float32Array, xo: number, mul: number): number {
  let sumx2 = 0;
  for (let j = 0; j < QK_K; j++) sumx2 = fr(sumx2 + fr(src[xo + j]! * src[xo + j]!));
  return fr(fr(mul * sumx2) / QK_K);
}

/** w[l] = qw[qo + l] · sqrt(sigma2 + x²) for n values at xo; returns their float sum. */
function imatrixWeights(
  src: Float32Array,
  xo: number,
  qw: Float32Array,
  qo: number,
  sigma2: number,
  w: Float32Array,
  n: number,
): number {
  let sum = 0;
  for (let l = 0; l < n; l++) {
    const x = src[xo + l]!;
    w[l] = fr(qw[qo + l]! * fr(Math.sqrt(fr(sigma2 + fr(x * x)))));
    sum = fr(sum + w[l]!);
  }
  return sum;
}

/** quantize_row_q2_K_impl over `nb` blocks. */
export function quantizeQ2_KWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  const L = Lu;
  for (let i = 0; i < nb; i++) {
    const xo = srcOff + i * QK_K;
    const yo = dstOff + i * 84;
    const sigma2 = blockSigma2(src, xo, 1);
    for (let j = 0; j < 16; j++) {
      sw[j] = imatrixWeights(src, xo + 16 * j, qw, qwOff + i * QK_K + 16 * j, sigma2, weights16, 16);
      scales[j] = makeQkx3Quants(16, 3, src, xo + 16 * j, weights16, L, 16 * j, Laux);
      mins[j] = qkxMin;
    }
    const dm = putF16(dst, yo + 80, makeQpQuants(16, 15, scales, 0, Ls, 0, sw, 0));
    const mm = putF16(dst, yo + 82, makeQpQuants(16, 15, mins, 0, Lm, 0, sw, 0));
    for (let j = 0; j < 16; j++) dst[yo + j] = Ls[j]! | (Lm[j]! << 4);
    for (let j = 0; j < 16; j++) {
      const d = fr(dm * (dst[yo + j]! & 0xf));
      if (d === 0) continue;
      const m = fr(mm * (dst[yo + j]! >> 4));
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(fr(fr(src[xo + 16 * j + ii]! + m) / d)), 0, 3);
      }
    }
    pack2bit(L, dst, yo + 16);
  }
}

/** quantize_row_q3_K_impl over `nb` blocks. */
export function quantizeQ3_KWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  const L = Li;
  for (let i = 0; i < nb; i++) {
    const xo = srcOff + i * QK_K;
    const yo = dstOff + i * 110;
    const so = yo + 96;
    const sigma2 = blockSigma2(src, xo, 2);
    for (let j = 0; j < 16; j++) {
      sw[j] = imatrixWeights(src, xo + 16 * j, qw, qwOff + i * QK_K + 16 * j, sigma2, weights16, 16);
      scales[j] = makeQxQuants(16, 4, src, xo + 16 * j, L, 16 * j, weights16, 0);
    }
    dst.fill(0, so, so + 12);
    const dBlock = makeQxQuants(16, 32, scales, 0, Lsi, 0, sw, 0);
    for (let j = 0; j < 16; j++) {
      const l = Lsi[j]!;
      if (j < 8) dst[so + j] = l & 0xf;
      else dst[so + j - 8] |= (l & 0xf) << 4;
      dst[so + 8 + (j % 4)] |= (l >> 4) << (2 * (j >> 2));
    }
    const d = putF16(dst, yo + 108, dBlock);
    for (let j = 0; j < 16; j++) {
      const lo4 = j < 8 ? dst[so + j]! & 0xf : dst[so + j - 8]! >> 4;
      const sc = (lo4 | (((dst[so + 8 + (j % 4)]! >> (2 * (j >> 2))) & 3) << 4)) - 32;
      const dl = fr(d * sc);
      if (dl === 0) continue;
      for (let ii = 0; ii < 16; ii++) {
        L[16 * j + ii] = clamp(nearestInt(fr(src[xo + 16 * j + ii]! / dl)), -4, 3) + 4;
      }
    }
    dst.fill(0, yo, yo + 32);
    for (let j = 0; j < QK_K; j++) {
      if (L[j]! > 3) {
        dst[yo + (j & 31)] |= 1 << (j >> 5);
        L[j] = L[j]! - 4;
      }
    }
    pack2bit(L, dst, yo + 32);
  }
}

/**
 * Shared body of quantize_row_q4_K_impl and quantize_row_q5_K_impl: 8 groups of 32 with
 * scale and min searched by make_qkx3_quants, their 6-bit codes by make_qp_quants (Q5_K
 * caps them at 63, Q4_K lets a wrapped code through as C does). Leaves the values in L.
 */
function scaleMin32Weighted(
  src: Float32Array,
  xo: number,
  dst: Uint8Array,
  yo: number,
  nmax: number,
  cap: boolean,
  qw: Float32Array,
  qo: number,
  L: Uint8Array,
): void {
  const sigma2 = blockSigma2(src, xo, 2);
  for (let j = 0; j < 8; j++) {
    sw[j] = imatrixWeights(src, xo + 32 * j, qw, qo + 32 * j, sigma2, weights, 32);
    scales[j] = makeQkx3Quants(32, nmax, src, xo + 32 * j, weights, L, 32 * j, Laux);
    mins[j] = qkxMin;
  }
  const dBlock = makeQpQuants(8, 63, scales, 0, Ls, 0, sw, 0);
  const mBlock = makeQpQuants(8, 63, mins, 0, Lm, 0, sw, 0);
  const so = yo + 4;
  for (let j = 0; j < 8; j++) {
    const ls = cap ? Math.min(63, Ls[j]!) : Ls[j]!;
    const lm = cap ? Math.min(63, Lm[j]!) : Lm[j]!;
    if (j < 4) {
      dst[so + j] = ls;
      dst[so + j + 4] = lm;
    } else {
      dst[so + j + 4] = (ls & 0xf) | ((lm & 0xf) << 4);
      dst[so + j - 4] |= (ls >> 4) << 6;
      dst[so + j] |= (lm >> 4) << 6;
    }
  }
  const d = putF16(dst, yo, dBlock);
  const dmin = putF16(dst, yo + 2, mBlock);
  requantizeScaleMin32(src, xo, dst, so, d, dmin, nmax, L);
}

/** Values of the 8 groups of 32 against the scales and mins as stored (K-quant 6-bit codes at so). */
function requantizeScaleMin32(
  src: Float32Array,
  xo: number,
  dst: Uint8Array,
  so: number,
  d: number,
  dmin: number,
  nmax: number,
  L: Uint8Array,
): void {
  for (let j = 0; j < 8; j++) {
    let sc: number;
    let m: number;
    if (j < 4) {
      sc = dst[so + j]! & 63;
      m = dst[so + j + 4]! & 63;
    } else {
      sc = (dst[so + j + 4]! & 0xf) | ((dst[so + j - 4]! >> 6) << 4);
      m = (dst[so + j + 4]! >> 4) | ((dst[so + j]! >> 6) << 4);
    }
    const dl = fr(d * sc);
    if (dl === 0) continue;
    const ml = fr(dmin * m);
    for (let ii = 0; ii < 32; ii++) {
      L[32 * j + ii] = clamp(nearestInt(fr(fr(src[xo + 32 * j + ii]! + ml) / dl)), 0, nmax);
    }
  }
}

/** quantize_row_q4_K_impl over `nb` blocks. */
export function quantizeQ4_KWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  const L = Lu;
  for (let i = 0; i < nb; i++) {
    const yo = dstOff + i * 144;
    scaleMin32Weighted(src, srcOff + i * QK_K, dst, yo, 15, false, qw, qwOff + i * QK_K, L);
    packQ4K(L, dst, yo);
  }
}

/** quantize_row_q5_K_impl over `nb` blocks. */
export function quantizeQ5_KWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  const L = Lu;
  for (let i = 0; i < nb; i++) {
    const yo = dstOff + i * 176;
    scaleMin32Weighted(src, srcOff + i * QK_K, dst, yo, 31, true, qw, qwOff + i * QK_K, L);
    packQ5K(L, dst, yo);
  }
}

/** quantize_row_q6_K_impl over `nb` blocks: the reference algorithm with make_qx_quants weighted by qw itself. */
export function quantizeQ6_KWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  q6K(src, srcOff, dst, dstOff, nb, qw, qwOff);
}
