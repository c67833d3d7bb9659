// IQ4_NL and IQ4_XS quantizers, byte-exact with llama-quantize without an importance
// matrix.
//
// llama-quantize reaches these through ggml_quantize_chunk -> quantize_iq4_nl /
// quantize_iq4_xs, which call quantize_row_iq4_nl_impl with ntry = 7 even when the
// quant weights are null (then the weights are x*x). That differs from
// quantize_row_iq4_nl_ref (ntry = -1: no scale search, no final requantization), so it
// is the `quantize_*` path that is reproduced here. Float32 arithmetic is emulated with
// Math.fround at every operation, in C's evaluation order (see quantize-k.ts).
//
// Layouts (little-endian):
//   IQ4_NL  18 B per 32: d (f16), qs[16] (value j low nibble, j+16 high nibble)
//   IQ4_XS 136 B per 256: d (f16), scales_h (u16: 2 high bits per group), scales_l[4]
//                         (4 low bits per group), qs[128] (as IQ4_NL per group of 32)

import { f32ToF16 } from '../fp16.js';
import type { QuantizeFn } from './codec.js';
import { nearestInt } from './quant-search.js';

const fr = Math.fround;

const QK4_NL = 32;
const QK_K = 256;
const GROUP_MAX_EPS = fr(1e-15);
const NTRY = 7;

/** The 16 non-linear levels of IQ4_NL / IQ4_XS (kvalues_iq4nl), sorted. */
export const KVALUES_IQ4NL: Int8Array = Int8Array.of(
  -127,
  -104,
  -83,
  -65,
  -49,
  -35,
  -22,
  -10,
  1,
  13,
  25,
  38,
  53,
  69,
  89,
  113,
);

/**
 * best_index_int8 for the 16 sorted levels: index of the level nearest to x. Binary
 * search for the bracketing pair, then a float32 comparison of the two distances
 * (rounded, so a near-midpoint x can go either way exactly as in C; a tie, and NaN,
 * pick the upper level). This is the form llama.cpp had through 2026; a later
 * branch-free rewrite compares 2x with the pair's sum exactly, which differs only at
 * such near-midpoints and for NaN (index 0 instead of 15).
 */
function bestIndex(x: number): number {
  const v = KVALUES_IQ4NL;
  if (x <= v[0]!) return 0;
  if (x >= v[15]!) return 15;
  let ml = 0;
  let mu = 15;
  while (mu - ml > 1) {
    const mav = (ml + mu) >> 1;
    if (x < v[mav]!) mu = mav;
    else ml = mav;
  }
  return fr(x - v[mu - 1]!) < fr(v[mu]! - x) ? mu - 1 : mu;
}

function putF16(dst: Uint8Array, off: number, x: number): void {
  const h = f32ToF16(x);
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
}

/**
 * The per-block part of quantize_row_iq4_nl_impl (ntry 7): best scale for the 32 values
 * at x[xo..] under weights `wt` (null: x²), with indices into KVALUES_IQ4NL left in
 * L[lo..]. Returns the scale (0 for an all-zero block).
 */
function blockScale(x: Float32Array, xo: number, L: Uint8Array, lo: number, wt: Float32Array | null): number {
  const bs = 32;
  let amax = 0;
  let max = 0;
  for (let j = 0; j < bs; j++) {
    const ax = Math.abs(x[xo + j]!);
    if (ax > amax) {
      amax = ax;
      max = x[xo + j]!;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + bs);
    return 0;
  }
  const v0 = KVALUES_IQ4NL[0]!;
  let d = fr(-max / v0);
  let id = fr(1 / d);
  let sumqx = 0;
  let sumq2 = 0;
  for (let j = 0; j < bs; j++) {
    const xj = x[xo + j]!;
    const l = bestIndex(fr(id * xj));
    L[lo + j] = l;
    const q = KVALUES_IQ4NL[l]!;
    const w = wt ? wt[j]! : fr(xj * xj);
    const wq = fr(w * q);
    sumqx = fr(sumqx + fr(wq * xj));
    sumq2 = fr(sumq2 + fr(wq * q));
  }
  d = sumq2 > 0 ? fr(sumqx / sumq2) : 0;
  let best = fr(d * sumqx);
  for (let itry = -NTRY; itry <= NTRY; itry++) {
    // (itry + values[0]) is an int sum in C, converted once
    id = fr((itry + v0) / max);
    sumqx = 0;
    sumq2 = 0;
    for (let j = 0; j < bs; j++) {
      const xj = x[xo + j]!;
      const q = KVALUES_IQ4NL[bestIndex(fr(id * xj))]!;
      const w = wt ? wt[j]! : fr(xj * xj);
      const wq = fr(w * q);
      sumqx = fr(sumqx + fr(wq * xj));
      sumq2 = fr(sumq2 + fr(wq * q));
    }
    if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
      d = fr(sumqx / sumq2);
      best = fr(d * sumqx);
    }
  }
  return d;
}

/** Packs 32 indices: byte j holds index j (low nibble) and j+16 (high nibble). */
function pack32(L: Uint8Array, lo: number, dst: Uint8Array, qo: number): void {
  for (let j = 0; j < 16; j++) dst[qo + j] = L[lo + j]! | (L[lo + 16 + j]! << 4);
}

const L = new Uint8Array(QK_K);
const scales = new Float32Array(8);

/** quantize_iq4_nl without quant weights, over `nb` blocks: one f16 scale per 32 values, 4-bit level indices. */
export const quantizeIQ4_NL: QuantizeFn = (src, srcOff, dst, dstOff, nb) =>
  iq4NL(src, srcOff, dst, dstOff, nb, null, 0);

/** quantize_iq4_nl with the quant weights qw[qwOff + 32·b ..] of block b. */
export function quantizeIQ4_NLWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  iq4NL(src, srcOff, dst, dstOff, nb, qw, qwOff);
}

const weight = new Float32Array(32);

/**
 * The quant weights of quantize_row_iq4_nl_impl for the 32 values at xo: qw · sqrt(sigma2
 * + x²), sigma2 twice the mean square of the super-block [so, so + sbs). Null without qw.
 */
function iq4Weights(
  src: Float32Array,
  so: number,
  sbs: number,
  xo: number,
  qw: Float32Array | null,
  qo: number,
): Float32Array | null {
  if (!qw) return null;
  let sigma2 = 0;
  for (let j = 0; j < sbs; j++) sigma2 = fr(sigma2 + fr(src[so + j]! * src[so + j]!));
  sigma2 = fr(sigma2 * fr(2 / sbs));
  for (let j = 0; j < 32; j++)
    weight[j] = fr(qw[qo + j]! * fr(Math.sqrt(fr(sigma2 + fr(src[xo + j]! * src[xo + j]!)))));
  return weight;
}

function iq4NL(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array | null,
  qwOff: number,
): void {
  for (let ib = 0; ib < nb; ib++) {
    const xo = srcOff + ib * QK4_NL;
    const yo = dstOff + ib * 18;
    const d = blockScale(src, xo, L, 0, iq4Weights(src, xo, QK4_NL, xo, qw, qwOff + ib * QK4_NL));
    putF16(dst, yo, d);
    // final pass (ntry > 0): requantize with the unrounded float scale
    const id = d !== 0 ? fr(1 / d) : 0;
    for (let j = 0; j < QK4_NL; j++) L[j] = bestIndex(fr(id * src[xo + j]!));
    pack32(L, 0, dst, yo + 2);
  }
}

/** IQ4_NL of src[0..n), n a multiple of 32, into dst (18 bytes per 32 values). */
export function quantizeIQ4NL(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('IQ4_NL', quantizeIQ4_NL, QK4_NL, 18, src, dst, n);
}

/** quantize_iq4_xs without quant weights, over `nb` blocks: f16 super-scale, 6-bit signed scale per 32, 4-bit level indices. */
export const quantizeIQ4_XS: QuantizeFn = (src, srcOff, dst, dstOff, nb) =>
  iq4XS(src, srcOff, dst, dstOff, nb, null, 0);

/** quantize_iq4_xs with the quant weights qw[qwOff + 256·b ..] of block b. */
export function quantizeIQ4_XSWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  iq4XS(src, srcOff, dst, dstOff, nb, qw, qwOff);
}

function iq4XS(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array | null,
  qwOff: number,
): void {
  for (let ibl = 0; ibl < nb; ibl++) {
    const xo = srcOff + ibl * QK_K;
    const yo = dstOff + ibl * 136;
    let maxScale = 0;
    let amaxScale = 0;
    for (let ib = 0; ib < 8; ib++) {
      const wt = iq4Weights(src, xo, QK_K, xo + 32 * ib, qw, qwOff + ibl * QK_K + 32 * ib);
      const s = blockScale(src, xo + 32 * ib, L, 32 * ib, wt);
      scales[ib] = s;
      const as = Math.abs(s);
      if (as > amaxScale) {
        amaxScale = as;
        maxScale = s;
      }
    }
    // super-scale: the largest group scale maps to -32 (an all-zero block gives -0)
    const d = fr(-maxScale / 32);
    putF16(dst, yo, d);
    const id = d !== 0 ? fr(1 / d) : 0;
    let scalesH = 0;
    const sl = yo + 4;
    for (let ib = 0; ib < 8; ib++) {
      let l = clamp(nearestInt(fr(id * scales[ib]!)), -32, 31);
      // requantize against d*l, using the unrounded float d as C does
      const dl = fr(d * l);
      const idl = dl !== 0 ? fr(1 / dl) : 0;
      const xb = xo + 32 * ib;
      for (let j = 0; j < 32; j++) L[32 * ib + j] = bestIndex(fr(idl * src[xb + j]!));
      l += 32;
      if (ib % 2 === 0) dst[sl + (ib >> 1)] = l & 0xf;
      else dst[sl + (ib >> 1)] |= (l & 0xf) << 4;
      scalesH |= (l >> 4) << (2 * ib);
    }
    dst[yo + 2] = scalesH & 0xff;
    dst[yo + 3] = scalesH >>> 8;
    for (let i = 0; i < 8; i++) pack32(L, 32 * i, dst, yo + 8 + 16 * i);
  }
}

/** IQ4_XS of src[0..n), n a multiple of 256, into dst (136 bytes per 256 values). */
export function quantizeIQ4XS(src: Float32Array, dst: Uint8Array, n: number): void {
  wholeRow('IQ4_XS', quantizeIQ4_XS, QK_K, 136, src, dst, n);
}

/** Runs a block-form quantizer over src[0..n) -> dst[0..), after checking the sizes. */
function wholeRow(
  name: string,
  fn: QuantizeFn,
  blockSize: number,
  blockBytes: number,
  src: Float32Array,
  dst: Uint8Array,
  n: number,
): void {
  if (!Number.isSafeInteger(n) || n < 0 || n % blockSize !== 0) {
    throw new RangeError(`${name}: n=${n} is not a multiple of ${blockSize}`);
  }
  const nb = n / blockSize;
  if (src.length < n) throw new RangeError(`${name}: source has ${src.length} values, need ${n}`);
  if (dst.length < nb * blockBytes) {
    throw new RangeError(`${name}: destination has ${dst.length} bytes, need ${nb * blockBytes}`);
  }
  fn(src, 0, dst, 0, nb);
}

function clamp(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, v));
}
