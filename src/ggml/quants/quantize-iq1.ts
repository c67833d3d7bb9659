// Quantizers of the 1-bit codebook types IQ1_S and IQ1_M, byte-exact with ggml's
// quantize_iq1_s (which needs an importance matrix) and quantize_iq1_m.
//
// Each value becomes -1, 0 or +1 plus a shift of ±1/8 shared by a group (IQ1_S: per
// sub-block of 32; IQ1_M: per group of 8, chosen for both halves of a sub-block of 16).
// With three levels the weighted least-squares split is found exactly: values sorted
// (C's qsort in glibc is a stable merge sort: ties keep index order), every pair of cut
// points tried with prefix sums. Groups of 8 off the grid snap to the nearest of their
// neighbours (iq-search.ts). Float arithmetic is C's float32, operation by operation.

import { f32ToF16 } from '../fp16.js';
import { GRID_IQ1S } from './iq-grids.js';
import { type GridSearch, gridSearch } from './iq-search.js';
import { clamp, cMax, nearestInt } from './quant-search.js';

const fr = Math.fround;
const QK_K = 256;
const FLT_MAX = 3.4028234663852886e38;
const DELTA = 0.125;
const X_P = [-1 + DELTA, DELTA, 1 + DELTA];
const X_M = [-1 - DELTA, -DELTA, 1 - DELTA];

// scratch (sub-blocks of at most 32)
const weight = new Float32Array(32);
const L = new Int8Array(32);
const order = new Int32Array(32);
const sumx = new Float32Array(33);
const sumw = new Float32Array(33);
const scales = new Float32Array(16);
const shifts = new Int8Array(16);
const index = new Int32Array(4);

/** Indices 0..n-1 of the values x[xo..] in ascending order, ties by index (a stable sort). */
function sortedOrder(x: Float32Array, xo: number, n: number): void {
  for (let j = 0; j < n; j++) order[j] = j;
  // insertion sort: stable, and n <= 32
  for (let j = 1; j < n; j++) {
    const v = order[j]!;
    const xv = x[xo + v]!;
    let k = j - 1;
    while (k >= 0 && x[xo + order[k]!]! > xv) {
      order[k + 1] = order[k]!;
      k--;
    }
    order[k + 1] = v;
  }
}

/**
 * iq1_find_best_neighbour2: the neighbour of off-grid u closest in weighted squared
 * distance to x[xo..] under scale·xx[level]; its levels go to L[lo..].
 */
function bestNeighbour(
  s: GridSearch,
  u: number,
  x: Float32Array,
  xo: number,
  wo: number,
  scale: number,
  xx: readonly number[],
  lo: number,
): number {
  const list = s.neighbours(u);
  let best = FLT_MAX;
  let gi = -1;
  for (let j = 0; j < list.length; j++) {
    const g = list[j]! * 8;
    let d2 = 0;
    for (let i = 0; i < 8; i++) {
      const q = xx[(s.pos[g + i]! - 1) >> 1]!;
      const diff = fr(fr(scale * q) - x[xo + i]!);
      d2 = fr(d2 + fr(fr(weight[wo + i]! * diff) * diff));
    }
    if (d2 < best) {
      best = d2;
      gi = list[j]!;
    }
  }
  // ggml then scans the whole grid, with an indexing slip that makes it compare garbage
  if (gi < 0) throw new RangeError('IQ1 quantizer: no grid point found (non-finite weights)');
  for (let i = 0; i < 8; i++) L[lo + i] = (s.pos[gi * 8 + i]! - 1) >> 1;
  return gi;
}

/** ggml's GGML_ASSERT(scale >= 0): a NaN scale (from non-finite weights) stops it. */
function assertScale(scale: number): void {
  if (!(scale >= 0)) throw new RangeError('IQ1 quantizer: the sub-block scale is not a number (non-finite input)');
}

function levelIndex(lo: number): number {
  let u = 0;
  for (let j = 0; j < 8; j++) u |= L[lo + j]! << (2 * j);
  return u;
}

function putF16(dst: Uint8Array, off: number, x: number): number {
  const h = f32ToF16(x);
  dst[off] = h & 0xff;
  dst[off + 1] = h >>> 8;
  return h;
}

function sigma2Of(x: Float32Array, xo: number): number {
  let s = 0;
  for (let i = 0; i < QK_K; i++) s = fr(s + fr(x[xo + i]! * x[xo + i]!));
  return fr(fr(2 * s) / QK_K);
}

function subWeights(x: Float32Array, xo: number, n: number, qw: Float32Array | null, qo: number, sigma2: number) {
  for (let i = 0; i < n; i++) {
    const v = x[xo + i]!;
    weight[i] = qw ? fr(qw[qo + i]! * fr(Math.sqrt(fr(sigma2 + fr(v * v))))) : fr(v * v);
  }
}

/** Σ_(j in [a, b)) (prefix) · c: C's `(s[b] - s[a])*c`. */
function seg(s: Float32Array, a: number, b: number, c: number): number {
  return fr(fr(s[b]! - s[a]!) * c);
}

// ---------------------------------------------------------------- IQ1_S

function iq1sBlocks(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array,
  qo0: number,
) {
  const s = gridSearch(GRID_IQ1S, 3);
  const bs = 32;
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 50 * ibl;
    dst.fill(0, yo, yo + 50);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl);
    for (let ib = 0; ib < 8; ib++) {
      const xb = xbl + bs * ib;
      subWeights(x, xb, bs, qw, qo0 + QK_K * ibl + bs * ib, sigma2);
      let max = Math.abs(x[xb]!);
      for (let i = 1; i < bs; i++) max = cMax(max, Math.abs(x[xb + i]!));
      if (max < fr(1e-12)) {
        scales[ib] = 0;
        shifts[ib] = 1;
        continue;
      }
      sortedOrder(x, xb, bs);
      sumx[0] = 0;
      sumw[0] = 0;
      for (let j = 0; j < bs; j++) {
        const i = order[j]!;
        sumx[j + 1] = fr(sumx[j]! + fr(weight[i]! * x[xb + i]!));
        sumw[j + 1] = fr(sumw[j]! + weight[i]!);
      }
      let bestScore = -FLT_MAX;
      let scale = max;
      let besti1 = -1;
      let besti2 = -1;
      let bestShift = 0;
      for (let i1 = 0; i1 <= bs; i1++) {
        for (let i2 = i1; i2 <= bs; i2++) {
          for (const [xx, shift] of [
            [X_P, 1],
            [X_M, -1],
          ] as const) {
            const sumqx = fr(fr(seg(sumx, 0, i1, xx[0]) + seg(sumx, i1, i2, xx[1])) + seg(sumx, i2, bs, xx[2]));
            const sumq2 = fr(
              fr(fr(seg(sumw, 0, i1, xx[0]) * xx[0]) + fr(seg(sumw, i1, i2, xx[1]) * xx[1])) +
                fr(seg(sumw, i2, bs, xx[2]) * xx[2]),
            );
            if (sumq2 > 0 && fr(sumqx * sumqx) > fr(bestScore * sumq2)) {
              scale = fr(sumqx / sumq2);
              bestScore = fr(scale * sumqx);
              besti1 = i1;
              besti2 = i2;
              bestShift = shift;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || bestShift === 0) {
        scales[ib] = 0;
        shifts[ib] = 1;
        continue;
      }
      for (let j = 0; j < bs; j++) L[order[j]!] = j < besti1 ? 0 : j < besti2 ? 1 : 2;
      if (scale < 0) {
        for (let j = 0; j < bs; j++) L[j] = 2 - L[j]!;
        scale = -scale;
        bestShift = -bestShift;
      }
      const xx = bestShift === 1 ? X_P : X_M;
      let allOnGrid = true;
      for (let k = 0; k < bs / 8; k++) {
        const u = levelIndex(8 * k);
        let g = s.map[u]!;
        if (g < 0) {
          allOnGrid = false;
          g = bestNeighbour(s, u, x, xb + 8 * k, 8 * k, scale, xx, 8 * k);
        }
        index[k] = g;
      }
      if (!allOnGrid) {
        let sumqx = 0;
        let sumq2 = 0;
        for (let k = 0; k < bs / 8; k++) {
          for (let j = 0; j < 8; j++) {
            const w = weight[8 * k + j]!;
            const q = xx[(s.pos[index[k]! * 8 + j]! - 1) >> 1]!;
            sumqx = fr(sumqx + fr(fr(w * q) * x[xb + 8 * k + j]!));
            sumq2 = fr(sumq2 + fr(fr(w * q) * q));
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = fr(sumqx / sumq2);
      }
      let h = 0;
      for (let k = 0; k < bs / 8; k++) {
        dst[yo + 2 + (bs / 8) * ib + k] = index[k]! & 255;
        h |= (index[k]! >> 8) << (3 * k);
      }
      dst[yo + 34 + 2 * ib] = h & 0xff;
      dst[yo + 35 + 2 * ib] = h >> 8;
      assertScale(scale);
      scales[ib] = scale;
      shifts[ib] = bestShift;
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) continue;
    const d = fr(maxScale / 15);
    putF16(dst, yo, fr(d * fr(1.125)));
    const id = fr(1 / d);
    for (let ib = 0; ib < 8; ib++) {
      let l = clamp(nearestInt(fr(0.5 * fr(fr(id * scales[ib]!) - 1))), 0, 7);
      if (shifts[ib] === -1) l |= 8;
      dst[yo + 35 + 2 * ib] |= l << 4;
    }
  }
}

// ---------------------------------------------------------------- IQ1_M

const MASKS = [0x00, 0x80, 0x08, 0x88];

/** The shift table of group k (0, 1) of a sub-block whose shift choice is `bestK` (0: ++, 1: +-, 2: -+, 3: --). */
function shiftOf(bestK: number, k: number): readonly number[] {
  if (k === 0) return bestK < 2 ? X_P : X_M;
  return bestK % 2 === 0 ? X_P : X_M;
}

const sq = new Float32Array(4);
const s2 = new Float32Array(4);

function iq1mBlocks(
  x: Float32Array,
  xo0: number,
  dst: Uint8Array,
  yo0: number,
  nb: number,
  qw: Float32Array | null,
  qo0: number,
) {
  const s = gridSearch(GRID_IQ1S, 3);
  const bs = 16;
  for (let ibl = 0; ibl < nb; ibl++) {
    const xbl = xo0 + QK_K * ibl;
    const yo = yo0 + 56 * ibl;
    dst.fill(0, yo, yo + 56);
    let maxScale = 0;
    const sigma2 = sigma2Of(x, xbl);
    for (let ib = 0; ib < 16; ib++) {
      const xb = xbl + bs * ib;
      subWeights(x, xb, bs, qw, qo0 + QK_K * ibl + bs * ib, sigma2);
      let max = Math.abs(x[xb]!);
      for (let i = 1; i < bs; i++) max = cMax(max, Math.abs(x[xb + i]!));
      if (max < fr(1e-7)) {
        scales[ib] = 0;
        shifts[ib] = 0;
        continue;
      }
      sortedOrder(x, xb, bs);
      let bestScore = -FLT_MAX;
      let scale = max;
      let besti1 = -1;
      let besti2 = -1;
      let bestK = -1;
      for (let i1 = 0; i1 <= bs; i1++) {
        for (let i2 = i1; i2 <= bs; i2++) {
          sq.fill(0);
          s2.fill(0);
          for (let j = 0; j < bs; j++) {
            const lv = j < i1 ? 0 : j < i2 ? 1 : 2;
            const i = order[j]!;
            const w = weight[i]!;
            const xi = x[xb + i]!;
            const p = X_P[lv]!;
            const m = X_M[lv]!;
            const wpx = fr(fr(w * p) * xi);
            const wmx = fr(fr(w * m) * xi);
            const wpp = fr(fr(w * p) * p);
            const wmm = fr(fr(w * m) * m);
            // the first half's shift is choice bit 1, the second half's bit 0
            const first = i < bs / 2;
            sq[0] = fr(sq[0]! + wpx);
            sq[1] = fr(sq[1]! + (first ? wpx : wmx));
            sq[2] = fr(sq[2]! + (first ? wmx : wpx));
            sq[3] = fr(sq[3]! + wmx);
            s2[0] = fr(s2[0]! + wpp);
            s2[1] = fr(s2[1]! + (first ? wpp : wmm));
            s2[2] = fr(s2[2]! + (first ? wmm : wpp));
            s2[3] = fr(s2[3]! + wmm);
          }
          for (let k = 0; k < 4; k++) {
            if (s2[k]! > 0 && fr(sq[k]! * sq[k]!) > fr(bestScore * s2[k]!)) {
              scale = fr(sq[k]! / s2[k]!);
              bestScore = fr(scale * sq[k]!);
              besti1 = i1;
              besti2 = i2;
              bestK = k;
            }
          }
        }
      }
      if (besti1 < 0 || besti2 < 0 || bestK < 0) {
        scales[ib] = 0;
        shifts[ib] = 0;
        continue;
      }
      for (let j = 0; j < bs; j++) L[order[j]!] = j < besti1 ? 0 : j < besti2 ? 1 : 2;
      if (scale < 0) {
        for (let j = 0; j < bs; j++) L[j] = 2 - L[j]!;
        scale = -scale;
        bestK = 3 - bestK;
      }
      let allOnGrid = true;
      for (let k = 0; k < 2; k++) {
        const u = levelIndex(8 * k);
        let g = s.map[u]!;
        if (g < 0) {
          allOnGrid = false;
          g = bestNeighbour(s, u, x, xb + 8 * k, 8 * k, scale, shiftOf(bestK, k), 8 * k);
        }
        index[k] = g;
      }
      if (!allOnGrid) {
        let sumqx = 0;
        let sumq2 = 0;
        for (let k = 0; k < 2; k++) {
          const xx = shiftOf(bestK, k);
          for (let j = 0; j < 8; j++) {
            const w = weight[8 * k + j]!;
            const q = xx[(s.pos[index[k]! * 8 + j]! - 1) >> 1]!;
            sumqx = fr(sumqx + fr(fr(w * q) * x[xb + 8 * k + j]!));
            sumq2 = fr(sumq2 + fr(fr(w * q) * q));
          }
        }
        if (sumqx > 0 && sumq2 > 0) scale = fr(sumqx / sumq2);
      }
      dst[yo + 2 * ib] = index[0]! & 255;
      dst[yo + 2 * ib + 1] = index[1]! & 255;
      dst[yo + 32 + ib] = (index[0]! >> 8) | ((index[1]! >> 8) << 4);
      assertScale(scale);
      scales[ib] = scale;
      shifts[ib] = bestK;
      maxScale = cMax(maxScale, scale);
    }
    if (!maxScale) continue;
    const sc = [0, 0, 0, 0];
    let d = fr(maxScale / 15);
    const id = fr(1 / d);
    let sumqx = 0;
    let sumq2 = 0;
    for (let ib = 0; ib < 16; ib++) {
      const l = clamp(nearestInt(fr(0.5 * fr(fr(id * scales[ib]!) - 1))), 0, 7);
      sc[ib >> 2] |= l << (3 * (ib % 4));
      dst[yo + 32 + ib] |= MASKS[shifts[ib]!]!;
      const xb = xbl + bs * ib;
      subWeights(x, xb, bs, qw, qo0 + QK_K * ibl + bs * ib, sigma2);
      const qh = dst[yo + 32 + ib]!;
      for (let k = 0; k < 2; k++) {
        const xx = shiftOf(shifts[ib]!, k);
        const g = (dst[yo + 2 * ib + k]! + ((qh << (8 - 4 * k)) & 0x700)) * 8;
        for (let j = 0; j < 8; j++) {
          const w = weight[8 * k + j]!;
          const q = fr(xx[(s.pos[g + j]! - 1) >> 1]! * (2 * l + 1));
          sumqx = fr(sumqx + fr(fr(w * q) * x[xb + 8 * k + j]!));
          sumq2 = fr(sumq2 + fr(fr(w * q) * q));
        }
      }
    }
    if (sumq2 > 0) d = fr(sumqx / sumq2);
    const h = f32ToF16(fr(d * fr(1.1125)));
    sc[0] |= (h & 0x000f) << 12;
    sc[1] |= (h & 0x00f0) << 8;
    sc[2] |= (h & 0x0f00) << 4;
    sc[3] |= h & 0xf000;
    for (let i = 0; i < 4; i++) {
      dst[yo + 48 + 2 * i] = sc[i]! & 0xff;
      dst[yo + 49 + 2 * i] = (sc[i]! >> 8) & 0xff;
    }
  }
}

/** quantize_iq1_s over `nb` blocks: needs quant weights (qw[qwOff + 256·b ..] for block b). */
export function quantizeIQ1_SWeighted(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array,
  qwOff: number,
): void {
  iq1sBlocks(src, srcOff, dst, dstOff, nb, qw, qwOff);
}

/** quantize_iq1_m over `nb` blocks; without quant weights, weights x². */
export function quantizeIQ1_MBlocks(
  src: Float32Array,
  srcOff: number,
  dst: Uint8Array,
  dstOff: number,
  nb: number,
  qw: Float32Array | null,
  qwOff: number,
): void {
  iq1mBlocks(src, srcOff, dst, dstOff, nb, qw, qwOff);
}
