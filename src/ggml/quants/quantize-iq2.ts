// Quantizers of the 2- and 3-bit codebook types, byte-exact with ggml's quantize_iq2_xxs,
// quantize_iq2_xs, quantize_iq2_s, quantize_iq3_xxs and quantize_iq3_s.
//
// All follow one plan per sub-block: weights (importance matrix times sqrt(sigma2 + x²),
// or x-derived without one); the magnitudes |x| are fitted (signs stored apart; IQ2_XXS,
// IQ2_XS and IQ3_XXS keep an even number of negatives per 8 by flipping the cheapest);
// a range of candidate scales each rounds the magnitudes to levels, snaps every group of
// 8 (IQ2) or 4 (IQ3) levels to the grid (iq-search.ts) and keeps the best weighted
// least-squares scale; off-grid groups are then re-snapped at that scale. The sub-block
// scales become 4-bit multiples of max_scale/31 (times a fudge factor in the f16 d).
// Float arithmetic is C's float32, operation by operation (Math.fround).

import { f32ToF16 } from '../fp16.js';
import { GRID_IQ2S, GRID_IQ2XS, GRID_IQ2XXS, GRID_IQ3S, GRID_IQ3XXS } from './iq-grids.js';
import { type GridSearch, gridSearch } from './iq-search.js';
import { clamp, cMax, makeQpQuants, nearestInt } from './quant-search.js';

const fr = Math.fround;
const QK_K = 256;
const FLT_MAX = 3.4028234663852886e38;
const EPS_1E15 = fr(1e-15);
const EPS_1E8 = fr(1e-8);
const F0_1 = fr(0.1);
const F0_2 = fr(0.2);

function putF16(dst: Uint8Array, off: number, x: number): void {
  const h = f32ToF16(x);
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
}

/** Σ x² of a 256-value block in float, times `mul`, over 256. */
function sigma2Of(x: Float32Array, xo: number, mul: number): number {
  let s = 0;
  for (let i = 0; i < QK_K; i++) s = fr(s + fr(x[xo + i]! * x[xo + i]!));
  return fr(fr(mul * s) / QK_K);
}

/** The level index of `coords` levels at L[lo..]. */
function indexOf(L: Int8Array, lo: number, coords: number, bits: number): number {
  let u = 0;
  for (let i = 0; i < coords; i++) u |= L[lo + i]! << (bits * i);
  return u;
}

/**
 * iq2/iq3_find_best_neighbour: the neighbour of off-grid u closest to xval/scale in the
 * weighted (waux) squared distance; its levels go to L[lo..]. Returns its grid index.
 */
function bestNeighbour(
  s: GridSearch,
  u: number,
  xval: Float32Array,
  xo: number,
  waux: Float32Array,
  scale: number,
  L: Int8Array,
  lo: number,
): number {
  const c = s.spec.coords;
  const list = s.neighbours(u);
  let best = FLT_MAX;
  let gi = -1;
  for (let j = 0; j < list.length; j++) {
    const g = list[j]! * c;
    let d2 = 0;
    for (let i = 0; i < c; i++) {
      const diff = fr(fr(scale * s.pos[g + i]!) - xval[xo + i]!);
      d2 = fr(d2 + fr(fr(waux[xo + i]! * diff) * diff));
    }
    if (d2 < best) {
      best = d2;
      gi = list[j]!;
    }
  }
  if (gi < 0) throw new RangeError('IQ quantizer: no grid point found (non-finite weights)');
  for (let i = 0; i < c; i++) L[lo + i] = (s.pos[gi * c + i]! - 1) >> 1;
  return gi;
}

/** Levels of the group at xval[xo..] for inverse scale id, clamped to [0, kMaxQ-1], into L[lo..]. */
function roundGroup(xval: Float32Array, xo: number, id: number, kmax: number, c: number, L: Int8Array, lo: number) {
  for (let i = 0; i < c; i++) {
    L[lo + i] = clamp(nearestInt(fr(0.5 * fr(fr(id * xval[xo + i]!) - 1))), 0, kmax - 1);
  }
}

/** Weighted least-squares sums of xval against the values 2·L + 1: [Σ w·x·q, Σ w·q²]. */
function fitSums(n: number, weight: Float32Array, xval: Float32Array, L: Int8Array): [number, number] {
  let sumqx = 0;
  let sumq2 = 0;
  for (let i = 0; i < n; i++) {
    const w = weight[i]!;
    const q = 2 * L[i]! + 1;
    sumqx = fr(sumqx + fr(fr(w * xval[i]!) * q));
    sumq2 = fr(sumq2 + fr(fr(w * q) * q));
  }
  return [sumqx, sumq2];
}

/**
 * |x| of a group of 8 with the sign bits; `parity`: an odd number of negatives is made
 * even by flipping the value of least weight·x² (its sign bit toggled, its magnitude
 * negated). Returns the 7 or 8 stored sign bits.
 */
function magnitudes(
  x: Float32Array,
  xo: number,
  weight: Float32Array,
  wo: number,
  xval: Float32Array,
  parity: boolean,
) {
  let s = 0;
  let nflip = 0;
  for (let i = 0; i < 8; i++) {
    const v = x[xo + i]!;
    if (v >= 0) xval[wo + i] = v;
    else {
      xval[wo + i] = -v;
      nflip++;
      s |= 1 << i;
    }
  }
  if (!parity) return s;
  if (nflip % 2) {
    let imin = 0;
    let min = fr(fr(weight[wo]! * x[xo]!) * x[xo]!);
    for (let i = 1; i < 8; i++) {
      const ax = fr(fr(weight[wo + i]! * x[xo + i]!) * x[xo + i]!);
      if (ax < min) {
        min = ax;
        imin = i;
      }
    }
    xval[wo + imin] = -xval[wo + imin]!;
    s ^= 1 << imin;
  }
  return s & 127;
}

// per-call scratch (sub-blocks of at most 32)
const weight = new Float32Array(32);
const waux = new Float32Array(32);
const xval = new Float32Array(32);
const L = new Int8Array(32);
const Laux = new Int8Array(32);
const Lqp = new Uint8Array(32);
const onGrid = new Uint8Array(8);
const onGridAux = new Uint8Array(8);
const signs = new Uint8Array(8);
const scales = new Float32Array(16);
const gridIdx = new Int32Array(8);

/** Sub-block weights into `weight` (and sqrt into waux): qw·sqrt(sigma2 + x²), or `fallback(x, sigma2)`. */
function subWeights(
  x: Float32Array,
  xo: number,
  n: number,
  qw: Float32Array | null,
  qo: number,
  sigma2: number,
  fallback: (v: number) => number,
): void {
  for (let i = 0; i < n; i++) {
    const v = x[xo + i]!;
    weight[i] = qw ? fr(qw[qo + i]! * fr(Math.sqrt(fr(sigma2 + fr(v * v))))) : fallback(v);
    waux[i] = fr(Math.sqrt(weight[i]!));
  }
}

/**
 * The scale search shared by IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S for one sub-block of n values
 * (groups of c), candidates id = (2·kMaxQ − 1 + is·step) / max for is in [−nis, nis]:
 * leaves the levels in L (and the grid points in gridIdx) and returns the scale.
 * `requantAll`: the final re-snap visits every group (IQ3_S) instead of the off-grid ones.
 */
function searchScale(
  s: GridSearch,
  n: number,
  kmax: number,
  max: number,
  nis: number,
  step: number,
  requantAll: boolean,
  gridInit: boolean,
): number {
  const c = s.spec.coords;
  const bits = s.spec.bits;
  const ng = n / c;
  let best = 0;
  let scale = fr(max / (2 * kmax - 1));
  onGrid.fill(gridInit ? 1 : 0, 0, ng);
  for (let is = -nis; is <= nis; is++) {
    const id = fr(fr(2 * kmax - 1 + fr(is * step)) / max);
    const thisScale = fr(1 / id);
    for (let k = 0; k < ng; k++) {
      roundGroup(xval, c * k, id, kmax, c, Laux, c * k);
      const u = indexOf(Laux, c * k, c, bits);
      onGridAux[k] = 1;
      if (s.map[u]! < 0) {
        onGridAux[k] = 0;
        bestNeighbour(s, u, xval, c * k, waux, thisScale, Laux, c * k);
      }
    }
    const [sumqx, sumq2] = fitSums(n, weight, xval, Laux);
    if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
      scale = fr(sumqx / sumq2);
      best = fr(scale * sumqx);
      L.set(Laux.subarray(0, n));
      onGrid.set(onGridAux.subarray(0, ng));
    }
  }
  let offGrid = 0;
  for (let k = 0; k < ng; k++) if (!onGrid[k]) offGrid++;
  if (offGrid > 0 && scale > 0) {
    const id = fr(1 / scale);
    for (let k = 0; k < ng; k++) {
      if (!requantAll && onGrid[k]) continue;
      roundGroup(xval, c * k, id, kmax, c, L, c * k);
      const u = indexOf(L, c * k, c, bits);
      if (s.map[u]! < 0) bestNeighbour(s, u, xval, c * k, waux, scale, L, c * k);
    }
    const [sumqx, sumq2] = fitSums(n, weight, xval, L);
    if (sumq2 > 0) scale = fr(sumqx / sumq2);
  }
  return scale;
}

/** The grid point of every group of the final levels (ggml aborts on an off-grid one). */
function gridPoints(s: GridSearch, n: number): void {
  const c = s.spec.coords;
  for (let k = 0; k < n / c; k++) {
    const g = s.map[indexOf(L, c * k, c, s.spec.bits)]!;
    if (g < 0) throw new RangeError('IQ quantizer: a group ended off the grid');
    gridIdx[k] = g;
  }
}

/** ggml's GGML_ASSERT(scale >= 0): a NaN scale (from non-finite weights) stops it. */
function assertScale(scale: number): void {
  if (!(scale >= 0)) throw new RangeError('IQ quantizer: the sub-block scale is not a number (non-finite input)');
}

/** 4-bit sub-block scale codes: nearest_int(0.5·(scale/d − 1)) clamped to [0, 15]. */
function scaleCode(id: number, scale: number): number {
  return clamp(nearestInt(fr(0.5 * fr(fr(id * scale) - 1))), 0, 15);
}

/** Stores a 32-bit word little-endian at dst[p..p+3]. */
function putU32(dst: Uint8Array, p: number, v: number): void {
  dst[p] = v & 0xff;
  dst[p + 1] = (v >>> 8) & 0xff;
  dst[p + 2] = (v >>> 16) & 0xff;
  dst[p + 3] = v >>> 24;
}

/**
 * What every type does first with a sub-block of n values: its weights, the magnitudes and
 * sign bits of its groups of 8 (into xval and signs). Returns the largest magnitude.
 */
function prepareSubBlock(
  x: Float32Array,
  xb: number,
  n: number,
  qw: Float32Array | null,
  qo: number,
  sigma2: number,
  fallback: (v: number) => number,
  parity: boolean,
): number {
  subWeights(x, xb, n, qw, qo, sigma2, fallback);
  for (let k = 0; k < n / 8; k++) signs[k] = magnitudes(x, xb + 8 * k, weight, 8 * k, xval, parity);
  let max = xval[0]!;
  for (let i = 1; i < n; i++) max = cMax(max, xval[i]!);
  return max;
}

/** How IQ2_XS, IQ2_S, IQ3_XXS and IQ3_S fit a sub-block (see searchScale). */
interface SubBlockPlan {
  n: number;
  kmax: number;
  nis: number;
  step: number;
  requantAll: boolean;
  gridInit: boolean;
  /** An even number of negatives per 8 (7 sign bits stored), else 8 sign bits. */
  parity: boolean;
  /** A sub-block whose largest magnitude is this is stored as zeros (skipped). */
  empty: (max: number) => boolean;
}

/**
 * One sub-block by plan: -1 when it is empty (nothing to store), else its scale (≥ 0),
 * with the grid points in gridIdx and the sign bits in signs.
 */
function fitSubBlock(
  s: GridSearch,
  plan: SubBlockPlan,
  x: Float32Array,
  xb: number,
  qw: Float32Array | null,
  qo: number,
  sigma2: number,
  fallback: (v: number) => number,
): number {
  const { n } = plan;
  const max = prepareSubBlock(x, xb, n, qw, qo, sigma2, fallback, plan.parity);
  L.fill(0, 0, n);
  if (plan.empty(max)) return -1;
  let scale = searchScale(s, n, plan.kmax, max, plan.nis, plan.step, plan.requantAll, plan.gridInit);
  if (scale < 0) {
    // never expected; ggml flips the scale and the signs
    scale = -scale;
    const mask = plan.parity ? 127 : 0xff;
    for (let k = 0; k < n / 8; k++) signs[k] = ~signs[k]! & mask;
  }
  gridPoints(s, n);
  assertScale(scale);
  return scale;
}

const noWeights = () => 0;
const squared = (v: number) => fr(v * v);

// ---------------------------------------------------------------- IQ2_XXS

/** quantize_iq2_xxs over `nb` blocks: needs quant weights (qw[qo0 + 256·b ..] for block b). */
export function quantizeIQ2_XXSWeighted(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array,
  qo0: number,
): void {
  const s = gridSearch(GRID_IQ2XXS, 2);
  const kmax = 3;
  const q2 = new Uint32Array(16);
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 66 * ibl;
    putF16(dst, yo, 0);
    q2.fill(0);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl, 1);
    for (let ib = 0; ib < 8; ib++) {
      const max = prepareSubBlock(x, xbl + 32 * ib, 32, qw, qo0 + QK_K * ibl + 32 * ib, sigma2, noWeights, true);
      if (max < EPS_1E15) {
        scales[ib] = 0;
        L.fill(0);
        continue;
      }
      let scale = makeQpQuants(32, kmax + 1, xval, 0, Lqp, 0, weight, 0);
      const effMax = fr(scale * kmax);
      if (effMax <= 0) {
        scales[ib] = 0;
        L.fill(0);
        continue;
      }
      let best = 0;
      for (let is = -6; is <= 6; is++) {
        const id = fr(fr(2 * kmax - 1 + fr(is * F0_1)) / effMax);
        const thisScale = fr(1 / id);
        for (let k = 0; k < 4; k++) {
          roundGroup(xval, 8 * k, id, kmax, 8, Laux, 8 * k);
          const u = indexOf(Laux, 8 * k, 8, 2);
          if (s.map[u]! < 0) bestNeighbour(s, u, xval, 8 * k, waux, thisScale, Laux, 8 * k);
        }
        const [sumqx, sumq2] = fitSums(32, weight, xval, Laux);
        if (sumq2 > 0 && fr(sumqx * sumqx) > fr(best * sumq2)) {
          scale = fr(sumqx / sumq2);
          best = fr(scale * sumqx);
          L.set(Laux);
        }
      }
      if (scale > 0) {
        const id = fr(1 / scale);
        for (let k = 0; k < 4; k++) {
          roundGroup(xval, 8 * k, id, kmax, 8, L, 8 * k);
          const u = indexOf(L, 8 * k, 8, 2);
          if (s.map[u]! < 0) bestNeighbour(s, u, xval, 8 * k, waux, scale, L, 8 * k);
        }
        const [sumqx, sumq2] = fitSums(32, weight, xval, L);
        if (sumq2 > 0) scale = fr(sumqx / sumq2);
      }
      if (scale < 0) {
        // never expected; ggml flips the scale and the signs
        scale = -scale;
        for (let k = 0; k < 4; k++) signs[k] = ~signs[k]! & 127;
      }
      gridPoints(s, 32);
      for (let k = 0; k < 4; k++) {
        q2[2 * ib] = (q2[2 * ib]! | (gridIdx[k]! << (8 * k))) >>> 0;
        q2[2 * ib + 1] = (q2[2 * ib + 1]! | (signs[k]! << (7 * k))) >>> 0;
      }
      assertScale(scale);
      scales[ib] = scale;
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) {
      dst.fill(0, yo + 2, yo + 66);
      continue;
    }
    const d = fr(maxScale / 31);
    putF16(dst, yo, d);
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) q2[2 * ib + 1] = (q2[2 * ib + 1]! | (scaleCode(id, scales[ib]!) << 28)) >>> 0;
    for (let i = 0; i < 16; i++) putU32(dst, yo + 2 + 4 * i, q2[i]!);
  }
}

// ---------------------------------------------------------------- IQ2_XS and IQ2_S

const PLAN_IQ2XS: SubBlockPlan = {
  n: 16,
  kmax: 3,
  nis: 9,
  step: F0_1,
  requantAll: false,
  gridInit: true,
  parity: true,
  empty: (m) => m < EPS_1E15,
};
const PLAN_IQ2S: SubBlockPlan = { ...PLAN_IQ2XS, parity: false, empty: (m) => m < EPS_1E8 };

/** quantize_iq2_xs over `nb` blocks: needs quant weights. */
export function quantizeIQ2_XSWeighted(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array,
  qo0: number,
): void {
  const s = gridSearch(GRID_IQ2XS, 2);
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 74 * ibl;
    putF16(dst, yo, 0);
    dst.fill(0, yo + 2, yo + 74);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl, 1);
    for (let ib = 0; ib < 16; ib++) {
      const scale = fitSubBlock(s, PLAN_IQ2XS, x, xbl + 16 * ib, qw, qo0 + QK_K * ibl + 16 * ib, sigma2, noWeights);
      scales[ib] = Math.max(scale, 0);
      if (scale < 0) continue;
      for (let k = 0; k < 2; k++) {
        const v = gridIdx[k]! | (signs[k]! << 9);
        dst[yo + 2 + 2 * (2 * ib + k)] = v & 0xff;
        dst[yo + 3 + 2 * (2 * ib + k)] = v >>> 8;
      }
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) {
      dst.fill(0, yo + 2, yo + 66);
      continue;
    }
    const d = fr(maxScale / 31);
    putF16(dst, yo, d);
    const id = fr(1 / d);
    for (let ib = 0; ib < 16; ib++) dst[yo + 66 + (ib >> 1)] |= scaleCode(id, scales[ib]!) << (4 * (ib & 1));
  }
}

/** quantize_iq2_s over `nb` blocks; without quant weights, weights 0.25·sigma2 + x². */
export function quantizeIQ2_SBlocks(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array | null,
  qo0: number,
): void {
  const s = gridSearch(GRID_IQ2S, 1);
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 82 * ibl;
    dst.fill(0, yo, yo + 82);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl, 2);
    const quarter = fr(0.25 * sigma2);
    const fallback = (v: number) => fr(quarter + fr(v * v));
    for (let ib = 0; ib < 16; ib++) {
      const scale = fitSubBlock(s, PLAN_IQ2S, x, xbl + 16 * ib, qw, qo0 + QK_K * ibl + 16 * ib, sigma2, fallback);
      scales[ib] = Math.max(scale, 0);
      if (scale < 0) continue;
      for (let k = 0; k < 2; k++) {
        const i8 = 2 * ib + k;
        dst[yo + 2 + i8] = gridIdx[k]! & 255;
        dst[yo + 66 + (i8 >> 2)] |= (gridIdx[k]! >> 8) << (2 * (i8 % 4));
        dst[yo + 2 + 32 + i8] = signs[k]!;
      }
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) continue;
    const d = fr(maxScale / 31);
    putF16(dst, yo, fr(d * fr(0.9875)));
    const id = fr(1 / d);
    for (let ib = 0; ib < 16; ib++) {
      const l = scaleCode(id, scales[ib]!);
      if (ib % 2 === 0) dst[yo + 74 + (ib >> 1)] = l;
      else dst[yo + 74 + (ib >> 1)] |= l << 4;
    }
  }
}

// ---------------------------------------------------------------- IQ3_XXS and IQ3_S

const PLAN_IQ3XXS: SubBlockPlan = {
  n: 32,
  kmax: 8,
  nis: 15,
  step: F0_2,
  requantAll: false,
  gridInit: true,
  parity: true,
  empty: (m) => m < EPS_1E8,
};
// `!max`: a NaN maximum also counts as empty, as in ggml's IQ3_S
const PLAN_IQ3S: SubBlockPlan = {
  ...PLAN_IQ3XXS,
  nis: 9,
  requantAll: true,
  gridInit: false,
  parity: false,
  empty: (m) => !m,
};

/** quantize_iq3_xxs over `nb` blocks; without quant weights, weights x². */
export function quantizeIQ3_XXSBlocks(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array | null,
  qo0: number,
): void {
  const s = gridSearch(GRID_IQ3XXS, 2);
  const sas = new Uint32Array(8);
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 98 * ibl;
    dst.fill(0, yo, yo + 98);
    sas.fill(0);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl, 2);
    for (let ib = 0; ib < 8; ib++) {
      const scale = fitSubBlock(s, PLAN_IQ3XXS, x, xbl + 32 * ib, qw, qo0 + QK_K * ibl + 32 * ib, sigma2, squared);
      scales[ib] = Math.max(scale, 0);
      if (scale < 0) continue;
      for (let k = 0; k < 8; k++) dst[yo + 2 + 8 * ib + k] = gridIdx[k]!;
      sas[ib] = (signs[0]! | (signs[1]! << 7) | (signs[2]! << 14) | (signs[3]! << 21)) >>> 0;
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) {
      dst.fill(0, yo + 2, yo + 98);
      continue;
    }
    const d = fr(maxScale / 31);
    putF16(dst, yo, fr(d * fr(1.0125)));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) putU32(dst, yo + 66 + 4 * ib, (sas[ib]! | (scaleCode(id, scales[ib]!) << 28)) >>> 0);
  }
}

/** quantize_iq3_s over `nb` blocks; without quant weights, weights x². */
export function quantizeIQ3_SBlocks(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array | null,
  qo0: number,
): void {
  const s = gridSearch(GRID_IQ3S, 3);
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 110 * ibl;
    dst.fill(0, yo, yo + 110);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl, 2);
    // ggml advances its qs and signs pointers only past sub-blocks it stores, so an
    // all-zero sub-block shifts the later ones' bytes (qh and scales stay in place)
    let qsAt = yo + 2;
    let signsAt = yo + 74;
    for (let ib = 0; ib < 8; ib++) {
      const scale = fitSubBlock(s, PLAN_IQ3S, x, xbl + 32 * ib, qw, qo0 + QK_K * ibl + 32 * ib, sigma2, squared);
      scales[ib] = Math.max(scale, 0);
      if (scale < 0) continue;
      for (let k = 0; k < 8; k++) {
        dst[qsAt + k] = gridIdx[k]! & 255;
        dst[yo + 66 + ib] |= (gridIdx[k]! >> 8) << k;
      }
      qsAt += 8;
      for (let k = 0; k < 4; k++) dst[signsAt + k] = signs[k]!;
      signsAt += 4;
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) continue;
    const d = fr(maxScale / 31);
    putF16(dst, yo, fr(d * fr(1.033)));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib += 2) {
      dst[yo + 106 + (ib >> 1)] = scaleCode(id, scales[ib]!) | (scaleCode(id, scales[ib + 1]!) << 4);
    }
  }
}
