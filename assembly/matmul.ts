// MUL_MAT in two steps. k_mm_prep turns every row of b (any float type, any strides)
// into the activation format the weight type wants: contiguous f32 (float weights and
// the rarer quant types), or quantized per 32 (Q4_0, Q8_0) or per 256 (Q4_K, Q6_K)
// elements. k_mm then computes dst[m, n] = a_row(m) · act_row(n), threads splitting the
// rows of a in groups of four (one interleaved group of a repacked tensor).
//
// Activation rows are 2.5 K bytes: quants (K or 2K bytes), scales at +2K, sums at
// +2K+K/8 (per-32 format: 8 x the sum, the Q4_0 offset), per-32 sums of the per-256
// format at +2K+K/4.
// Extras: 0 activation rows, 1 their stride, 2 format (0 f32, 1 per-32, 2 per-256,
// 3 b's own F32 rows used in place), 3/4 per-thread scratch (base, stride), 5 columns per
// chunk (activation rows kept in cache while a's rows stream), 6 whether a is a whole
// repacked tensor (its groups can be used as such), 7 the rounding of f32 activations
// (vecdot.ts: the grid of ggml-cpu's vec_dot_type for the weight type), 8 (MUL_MAT_ID)
// the bytes of each thread's scratch the products may use (its column map follows).
//
// MUL_MAT_ID (k_mmid) runs the same tiles per expert: each thread sorts the (slot, token)
// columns by the expert they chose (token order within an expert), then takes its share
// of (expert, group of four rows) units; every column of an expert goes through that
// expert's rows, so a prompt reads each used expert's weights once per column chunk and
// a decode step reads only the chosen experts' rows.

import { dotAdd, widenF16Row } from './consts';
import { extra, LAYOUT_K4, LAYOUT_REP4, qQs, qrow, qScale, qStride, share0, tAddr, tLayout, tNb, tNe, tType, tWord } from './desc';
import { dotBF16, dotF16, dotF32, tileFloat4x1, tileFloat4x2 } from './dot';
import { dotIQ, dotIQ1, dotIQx4, dotTQ1_0, dotTQ2_0, isIQ, unpackIQ } from './iquant';
import {
  colsQ5_0x4, DQ6, gemmQ4_0x4, gemmQ4Kx4, gemmQ5_0x4, gemmQ6Kx4, gemvQ4_0, gemvQ4K, gemvQ5_0, gemvQ6K, kGroup, kRow, krow,
  tileQ6Kx1, tileQ6Kx2, tileQ6Kx4, unpackQ4_0k4, unpackQ6Kx4, unpackRowQ4_0, unpackRowQ4K, unpackRowQ5_0, unpackRowQ6K,
} from './kquant';
import { f16ToF32, f32ToF16 } from './math';
import { dotMXFP4, dotMXFP4x4, gemmMXFP4x4, gemvMXFP4, unpackRowMXFP4 } from './mxfp4';
import {
  DQ4, DQ8,
  dotQ4_0, dotQ4_K, dotQ4_Kx4, dotQ5_0, dotQ6_K, dotQ6_Kx4, dotQ8_0, groupQ4_0, groupQ4_0x2, groupQ4_0x4, groupQ8_0, groupQ8_0x2, groupQ8_0x4, QB, tileQ4_0Pairx1, tileQ4_0Pairx2, tileQ4_0x1, tileQ4_0x2, unpackQ4_0k4Pair, unpackQ4_0x4,
} from './qdot';
import { readRow } from './rows';
import { T_BF16, T_F16, T_F32, T_MXFP4, T_Q4_0, T_Q4_1, T_Q4_K, T_Q5_0, T_Q6_K, T_Q8_0, T_TQ1_0, T_TQ2_0 } from './types';
import { ROUND_Q8_1, roundActRow } from './vecdot';

const FMT_F32: i32 = 0;
const FMT_Q32: i32 = 1;
const FMT_Q256: i32 = 2;
const FMT_DIRECT: i32 = 3;

@inline function hmax(v: v128): f32 {
  const m = f32x4.max(v, v128.shuffle<f32>(v, v, 2, 3, 0, 1));
  return max(f32x4.extract_lane(m, 0), f32x4.extract_lane(m, 1));
}

@inline function hsumI32(v: v128): i32 {
  return i32x4.extract_lane(v, 0) + i32x4.extract_lane(v, 1) + i32x4.extract_lane(v, 2) + i32x4.extract_lane(v, 3);
}

/** Quantize 16 f32 at x with inverse scale id into 16 int16 lanes (two i16x8). */
@inline function q16lo(x: usize, id: v128): v128 {
  const a = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(x), id)));
  const b = i32x4.trunc_sat_f32x4_s(f32x4.nearest(f32x4.mul(v128.load(x, 16), id)));
  return i16x8.narrow_i32x4_s(a, b);
}

/** Store 16 quants (two i16x8 holding elements 0..7, 8..15) in the build's format at q. */
@inline function storeQ16(n0: v128, n1: v128, q: usize): void {
  if (ASC_FEATURE_RELAXED_SIMD) {
    v128.store(q, i8x16.narrow_i16x8_s(n0, n1));
  } else {
    v128.store(q, v128.shuffle<i16>(n0, n1, 0, 2, 4, 6, 8, 10, 12, 14));
    v128.store(q, v128.shuffle<i16>(n0, n1, 1, 3, 5, 7, 9, 11, 13, 15), 16);
  }
}

function absMax(x: usize, n: i32): f32 {
  let m0 = f32x4.splat(0);
  let m1 = f32x4.splat(0);
  for (let i = 0; i < n; i += 8) {
    m0 = f32x4.max(m0, f32x4.abs(v128.load(x + (<usize>i << 2))));
    m1 = f32x4.max(m1, f32x4.abs(v128.load(x + (<usize>i << 2), 16)));
  }
  return hmax(f32x4.max(m0, m1));
}

function quantAct32(x: usize, act: usize, K: i32): void {
  const ad = act + 2 * <usize>K;
  const as = ad + (<usize>K >> 3);
  for (let b = 0; b < (K >> 5); b++) {
    const xb = x + (<usize>b << 7);
    const amax = absMax(xb, 32);
    // as ggml-cpu's AVX quantize_row_q8_0: the scale is stored as f16
    const d = f16ToF32(f32ToF16(amax / 127));
    const id = f32x4.splat(amax != 0 ? <f32>127 / amax : 0);
    const n0 = q16lo(xb, id);
    const n1 = q16lo(xb + 32, id);
    const n2 = q16lo(xb + 64, id);
    const n3 = q16lo(xb + 96, id);
    const s = i32x4.add(
      i32x4.add(i32x4.extadd_pairwise_i16x8_s(n0), i32x4.extadd_pairwise_i16x8_s(n1)),
      i32x4.add(i32x4.extadd_pairwise_i16x8_s(n2), i32x4.extadd_pairwise_i16x8_s(n3)),
    );
    const q = act + <usize>b * 32 * QB;
    storeQ16(n0, n1, q);
    storeQ16(n2, n3, q + 16 * QB);
    store<f32>(ad + (<usize>b << 2), d);
    store<i32>(as + (<usize>b << 2), hsumI32(s) << 3);
  }
}

function quantAct256(x: usize, act: usize, K: i32): void {
  const ad = act + 2 * <usize>K;
  const abs = ad + (<usize>K >> 3);
  for (let sb = 0; sb < (K >> 8); sb++) {
    const xb = x + (<usize>sb << 10);
    const amax = absMax(xb, 256);
    // as quantize_row_q8_K: d is the inverse of the (f32) quantization scale
    const ids: f32 = amax != 0 ? <f32>127 / amax : 0;
    const d: f32 = amax != 0 ? <f32>1 / ids : 0;
    const id = f32x4.splat(ids);
    const abs32 = ad + (<usize>K >> 2);
    for (let g = 0; g < 16; g += 2) {
      const xg = xb + (<usize>g << 6);
      const n0 = q16lo(xg, id);
      const n1 = q16lo(xg + 32, id);
      const n2 = q16lo(xg + 64, id);
      const n3 = q16lo(xg + 96, id);
      const s0 = hsumI32(i32x4.add(i32x4.extadd_pairwise_i16x8_s(n0), i32x4.extadd_pairwise_i16x8_s(n1)));
      const s1 = hsumI32(i32x4.add(i32x4.extadd_pairwise_i16x8_s(n2), i32x4.extadd_pairwise_i16x8_s(n3)));
      storeQ16(n0, n1, act + (<usize>sb * 256 + <usize>g * 16) * QB);
      storeQ16(n2, n3, act + (<usize>sb * 256 + <usize>g * 16 + 16) * QB);
      store<i16>(abs + ((<usize>sb * 16 + <usize>g) << 1), <i16>s0);
      store<i16>(abs + ((<usize>sb * 16 + <usize>g + 1) << 1), <i16>s1);
      store<i16>(abs32 + ((<usize>sb * 8 + (<usize>g >> 1)) << 1), <i16>(s0 + s1));
    }
    store<f32>(ad + (<usize>sb << 2), d);
  }
}

/** Step 1: every row of b (t2) into the activation rows. */
export function k_mm_prep(node: usize, ith: i32, nth: i32): void {
  const K = tNe(node, 2, 0);
  const N = tNe(node, 2, 1);
  const ne12 = tNe(node, 2, 2);
  const nr = N * ne12 * tNe(node, 2, 3);
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  const act = <usize>extra(node, 0);
  const stride = <usize>extra(node, 1);
  const fmt = extra(node, 2);
  const scratch = <usize>extra(node, 3) + <usize>ith * <usize>extra(node, 4);
  const direct = tType(node, 2) == T_F32 && tNb(node, 2, 0) == 4;
  for (let r = r0; r < r1; r++) {
    const n = r % N;
    const q = r / N;
    const i2 = q % ne12;
    const i3 = q / ne12;
    const dst = act + <usize>r * stride;
    if (fmt == FMT_F32) {
      readRow(node, 2, n, i2, i3, dst);
      roundActRow(extra(node, 7), dst, K);
      continue;
    }
    let src = scratch;
    if (direct) src = tAddr(node, 2) + <usize>n * tNb(node, 2, 1) + <usize>i2 * tNb(node, 2, 2) + <usize>i3 * tNb(node, 2, 3);
    else readRow(node, 2, n, i2, i3, scratch);
    if (fmt == FMT_Q32) quantAct32(src, dst, K);
    else quantAct256(src, dst, K);
  }
}

/**
 * The units (groups of four rows) of a product are dealt in pieces that the workers claim
 * as they go, through a counter (claim) that the host zeroes before every run
 * (encode.ts, EncodedJob.counters): two workers streaming weights rarely get the same
 * bandwidth, and with fixed shares the first one done waited at the barrier (10-15 % of a
 * gpt-oss-20b decode step on 2 threads). Each unit's results depend only on the unit and
 * the column chunk, so any dealing gives the same bits.
 */
const PIECES_PER_THREAD: i32 = 16;

/** Units per piece for `units` units over nth workers (all of them when one worker). */
@inline function pieceSize(node: usize, units: i32, nth: i32): i32 {
  if (nth == 1) return max(units, 1);
  // equal pieces, per worker as many as keep a piece at PIECE_BYTES of weights or more
  // (from 1 to PIECES_PER_THREAD): a claim costs about a microsecond on this VM, and
  // lfm2-1.2b's 2.4 MB products decoded 32 t/s in 16 pieces a worker, 47 in one
  const bytes = <u64>units * 4 * <u64>tNb(node, 1, 1);
  const k = <i32>min(<u64>PIECES_PER_THREAD, max(<u64>1, bytes / (<u64>nth * PIECE_BYTES)));
  const n = nth * k;
  return (units + n - 1) / n;
}

/** Bytes of weights below which a piece is not split further. */
const PIECE_BYTES: u64 = 1 << 20;

/**
 * The first unit of the next unclaimed piece (>= units when none is left). The counter sits
 * on a cache line of its own (encode.ts; extra word 9 holds its address), not on the
 * record's line of extras, which the kernels read all along.
 */
@inline function claim(node: usize, piece: i32): i32 {
  return atomic.add<i32>(<usize>extra(node, 9), 1) * piece;
}

/** Step 2: dst[m, n, i2, i3] for the groups of four rows of a that the thread claims. */
export function k_mm(node: usize, ith: i32, nth: i32): void {
  const G = (tNe(node, 1, 1) + 3) >> 2;
  const units = G * tNe(node, 0, 2) * tNe(node, 0, 3);
  const piece = pieceSize(node, units, nth);
  for (let u0 = claim(node, piece); u0 < units; u0 = claim(node, piece)) mmUnits(node, ith, u0, min(units, u0 + piece));
}

/** k_mm for units [u0, u1). */
function mmUnits(node: usize, ith: i32, u0: i32, u1: i32): void {
  const M = tNe(node, 1, 1);
  const N = tNe(node, 0, 1);
  const ne12 = tNe(node, 0, 2);
  const r2 = ne12 / tNe(node, 1, 2);
  const r3 = tNe(node, 0, 3) / tNe(node, 1, 3);
  const G = (M + 3) >> 2;
  // the chunk is sized for 2.5·K bytes per activation row; the relaxed build's per-32 rows
  // use half of that (int8 quants), so twice the columns fit the same cache
  let nc = extra(node, 5);
  if (ASC_FEATURE_RELAXED_SIMD && extra(node, 2) == FMT_Q32) nc *= 2;
  if (tType(node, 1) == T_F16) nc = max(nc, F16_CHUNK);
  // whole tiles of four columns per chunk: a leftover column takes the slower one-column kernels
  const NC = nc >= 8 ? nc & ~3 : nc;
  // whole k4 Q4_0 groups go two at a time through the unpacked tiles (mmUnpackedPair)
  const pairs =
    ASC_FEATURE_RELAXED_SIMD && dotAdd() && tType(node, 1) == T_Q4_0 && tLayout(node, 1) == LAYOUT_K4 && extra(node, 6) != 0;
  const wholeGroups = tWord(node, 1, 14) >> 2;
  for (let c0 = 0; c0 < N; c0 += NC) {
    const c1 = min(N, c0 + NC);
    for (let u = u0; u < u1; u++) {
      const g = u % G;
      const bi = u / G;
      const i2 = bi % ne12;
      const i3 = bi / ne12;
      const m0 = g << 2;
      if (c1 - c0 == 1) {
        // one column: the run of whole interleaved groups from here in one loop
        const n = gemvRun(node, g, min(G, g + u1 - u), i2 / r2, i3 / r3, actRow(node, c0, i2, i3), dstAt(node, m0, c0, i2, i3));
        if (n > 0) {
          u += n - 1;
          continue;
        }
      }
      if (pairs && c1 - c0 >= UNPACK_MIN_COLS_PAIR && u + 1 < u1 && g + 2 <= wholeGroups && mmUnpackedPair(node, ith, m0, i2, i3, i2 / r2, i3 / r3, c0, c1)) {
        u++;
        continue;
      }
      mmGroup(node, ith, m0, min(4, M - m0), i2, i3, i2 / r2, i3 / r3, c0, c1);
    }
  }
}

/**
 * One column against the whole interleaved groups [g0, g1) of matrix (a2, a3) (act: its
 * activation row, out: group g0's four results): each group's kernel as mmGroup runs it
 * for one column (k4: mmGroupK4; rep4 Q4_0 / Q8_0: groupQ4_0 / groupQ8_0), without
 * mmGroup's per-group dispatch, which cost as much as a short group's product (a decode
 * step's 2048- and 768-wide rows). Returns the groups done (0: g0 is not a whole group,
 * or the weights are not interleaved).
 */
function gemvRun(node: usize, g0: i32, g1: i32, a2: i32, a3: i32, act: usize, out: usize): i32 {
  const layout = tLayout(node, 1);
  const type = tType(node, 1);
  const rep4 = layout == LAYOUT_REP4 && (type == T_Q4_0 || type == T_Q8_0);
  if ((layout != LAYOUT_K4 && !rep4) || extra(node, 6) == 0) return 0;
  g1 = min(g1, tWord(node, 1, 14) >> 2);
  if (g0 >= g1) return 0;
  const K = tNe(node, 1, 0);
  const step = <usize>tNb(node, 1, 1) << 2;
  let c = tAddr(node, 1) + <usize>a2 * tNb(node, 1, 2) + <usize>a3 * tNb(node, 1, 3) + <usize>g0 * step;
  const n = g1 - g0;
  if (rep4 && type == T_Q4_0) for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, groupQ4_0(c, K >> 5, act, K));
  else if (rep4) for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, groupQ8_0(c, K >> 5, act, K));
  else if (type == T_Q4_0) for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, gemvQ4_0(c, K >> 5, act, K));
  else if (type == T_MXFP4) for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, gemvMXFP4(c, K >> 5, act, K));
  else if (type == T_Q5_0) for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, gemvQ5_0(c, K >> 5, act, K));
  else if (type == T_Q6_K) for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, gemvQ6K(c, K >> 8, act, K));
  else for (let i = 0; i < n; i++, c += step, out += 16) v128.store(out, gemvQ4K(c, K >> 8, act, K));
  return n;
}

/**
 * Non-zero while k_mmid runs a group: the current expert's columns, two u32 each (the
 * activation row's address, the address of the column's first result).
 */
let colMap: usize = 0;

/**
 * MUL_MAT_ID: t0 = dst [M, nUsed, nT], t1 = as [K, M, nExpert], t2 = b [K, nB, nT] (its
 * rows prepared by k_mm_prep), t3 = ids I32 [nUsed, nT]. Scratch per thread: extra 8 bytes
 * for the tiles, then the column map (counts, starts and nUsed·nT address pairs).
 */
export function k_mmid(node: usize, ith: i32, nth: i32): void {
  const M = tNe(node, 1, 1);
  const nE = tNe(node, 1, 2);
  const nB = tNe(node, 2, 1);
  const nUsed = tNe(node, 3, 0);
  const nT = tNe(node, 3, 1);
  const idsAt = tAddr(node, 3);
  const in0 = tNb(node, 3, 0);
  const in1 = tNb(node, 3, 1);
  const dnb1 = tNb(node, 0, 1);
  const dnb2 = tNb(node, 0, 2);
  const direct = extra(node, 2) == FMT_DIRECT;
  const stride = <usize>extra(node, 1);
  const scratch = <usize>extra(node, 3) + <usize>ith * <usize>extra(node, 4);
  const counts = scratch + <usize>extra(node, 8);
  const starts = counts + (<usize>nE << 2);
  const map = starts + (<usize>nE << 2);
  memory.fill(counts, 0, <usize>nE << 2);
  for (let t = 0; t < nT; t++) {
    for (let i = 0; i < nUsed; i++) {
      const e = load<i32>(idsAt + <usize>i * in0 + <usize>t * in1);
      if (e < 0 || e >= nE) unreachable();
      const p = counts + (<usize>e << 2);
      store<i32>(p, load<i32>(p) + 1);
    }
  }
  let at = 0;
  for (let e = 0; e < nE; e++) {
    store<i32>(starts + (<usize>e << 2), at);
    at += load<i32>(counts + (<usize>e << 2));
  }
  // columns by expert, in token order (starts advance; they are rewound below)
  for (let t = 0; t < nT; t++) {
    for (let i = 0; i < nUsed; i++) {
      const e = load<i32>(idsAt + <usize>i * in0 + <usize>t * in1);
      const sp = starts + (<usize>e << 2);
      const c = load<i32>(sp);
      store<i32>(sp, c + 1);
      const r = i % nB;
      const act = direct
        ? tAddr(node, 2) + <usize>r * tNb(node, 2, 1) + <usize>t * tNb(node, 2, 2)
        : <usize>extra(node, 0) + <usize>(t * nB + r) * stride;
      store<u32>(map + (<usize>c << 3), <u32>act);
      store<u32>(map + (<usize>c << 3), <u32>(tAddr(node, 0) + <usize>i * dnb1 + <usize>t * dnb2), 4);
    }
  }
  const G = (M + 3) >> 2;
  let used = 0;
  for (let e = 0; e < nE; e++) if (load<i32>(counts + (<usize>e << 2)) > 0) used++;
  // (used expert, group of four rows) units, claimed in pieces as k_mm's
  const units = used * G;
  const piece = pieceSize(node, units, nth);
  for (let u0 = claim(node, piece); u0 < units; u0 = claim(node, piece)) mmidUnits(node, ith, counts, starts, map, u0, min(units, u0 + piece));
}

/** k_mmid for units [u0, u1) with the thread's column map (counts, starts rewound, map). */
function mmidUnits(node: usize, ith: i32, counts: usize, starts: usize, map: usize, u0: i32, u1: i32): void {
  const M = tNe(node, 1, 1);
  const nE = tNe(node, 1, 2);
  const G = (M + 3) >> 2;
  let nc = extra(node, 5);
  if (ASC_FEATURE_RELAXED_SIMD && extra(node, 2) == FMT_Q32) nc *= 2;
  if (tType(node, 1) == T_F16) nc = max(nc, F16_CHUNK);
  const NC = nc >= 8 ? nc & ~3 : nc;
  let u = 0;
  for (let e = 0; e < nE && u < u1; e++) {
    const cnt = load<i32>(counts + (<usize>e << 2));
    if (cnt == 0) continue;
    const g0 = max(u0 - u, 0);
    const g1 = min(u1 - u, G);
    u += G;
    if (g0 >= g1) continue;
    const first = load<i32>(starts + (<usize>e << 2)) - cnt;
    for (let c0 = 0; c0 < cnt; c0 += NC) {
      const c1 = min(cnt, c0 + NC);
      colMap = map + (<usize>first << 3);
      let g = g0;
      // one column (a decode step's expert): the run of whole interleaved groups in one loop
      if (c1 - c0 == 1) g += gemvRun(node, g0, g1, e, 0, actRow(node, c0, 0, 0), dstAt(node, g0 << 2, c0, 0, 0));
      for (; g < g1; g++) {
        const m0 = g << 2;
        mmGroup(node, ith, m0, min(4, M - m0), 0, 0, e, 0, c0, c1);
      }
      colMap = 0;
    }
  }
}

@inline function actRow(node: usize, n: i32, i2: i32, i3: i32): usize {
  if (colMap != 0) return <usize>load<u32>(colMap + (<usize>n << 3));
  if (extra(node, 2) == FMT_DIRECT) {
    return tAddr(node, 2) + <usize>n * tNb(node, 2, 1) + <usize>i2 * tNb(node, 2, 2) + <usize>i3 * tNb(node, 2, 3);
  }
  const N = tNe(node, 2, 1);
  const ne12 = tNe(node, 2, 2);
  return <usize>extra(node, 0) + <usize>((i3 * ne12 + i2) * N + n) * <usize>extra(node, 1);
}

@inline function dstAt(node: usize, m: i32, n: i32, i2: i32, i3: i32): usize {
  if (colMap != 0) return <usize>load<u32>(colMap + (<usize>n << 3), 4) + (<usize>m << 2);
  return tAddr(node, 0) + (<usize>m << 2) + <usize>n * tNb(node, 0, 1) + <usize>i2 * tNb(node, 0, 2) + <usize>i3 * tNb(node, 0, 3);
}

function mmGroup(node: usize, ith: i32, m0: i32, mc: i32, i2: i32, i3: i32, a2: i32, a3: i32, c0: i32, c1: i32): void {
  const type = tType(node, 1);
  const K = tNe(node, 1, 0);
  const nb1 = tNb(node, 1, 1);
  const base = <usize>a2 * tNb(node, 1, 2) + <usize>a3 * tNb(node, 1, 3);
  if (
    mc == 4 &&
    (type == T_Q4_0 || type == T_Q8_0) &&
    tLayout(node, 1) == LAYOUT_REP4 &&
    extra(node, 6) != 0 &&
    m0 + 4 <= tWord(node, 1, 14)
  ) {
    const chunk = tAddr(node, 1) + base + <usize>m0 * nb1;
    const nb = K >> 5;
    if (ASC_FEATURE_RELAXED_SIMD && type == T_Q4_0 && c1 - c0 >= UNPACK_MIN_COLS && mmUnpacked(node, ith, chunk, nb, K, m0, i2, i3, c0, c1, false)) return;
    let n = c0;
    for (; n + 4 <= c1; n += 4) {
      const x0 = actRow(node, n, i2, i3);
      const x1 = actRow(node, n + 1, i2, i3);
      const x2 = actRow(node, n + 2, i2, i3);
      const x3 = actRow(node, n + 3, i2, i3);
      const o0 = dstAt(node, m0, n, i2, i3);
      const o1 = dstAt(node, m0, n + 1, i2, i3);
      const o2 = dstAt(node, m0, n + 2, i2, i3);
      const o3 = dstAt(node, m0, n + 3, i2, i3);
      if (type == T_Q4_0) groupQ4_0x4(chunk, nb, K, x0, x1, x2, x3, o0, o1, o2, o3);
      else groupQ8_0x4(chunk, nb, K, x0, x1, x2, x3, o0, o1, o2, o3);
    }
    if (n + 2 <= c1) {
      const x0 = actRow(node, n, i2, i3);
      const x1 = actRow(node, n + 1, i2, i3);
      const o0 = dstAt(node, m0, n, i2, i3);
      const o1 = dstAt(node, m0, n + 1, i2, i3);
      if (type == T_Q4_0) groupQ4_0x2(chunk, nb, K, x0, x1, o0, o1);
      else groupQ8_0x2(chunk, nb, K, x0, x1, o0, o1);
      n += 2;
    }
    for (; n < c1; n++) {
      const act = actRow(node, n, i2, i3);
      const r = type == T_Q4_0 ? groupQ4_0(chunk, nb, act, K) : groupQ8_0(chunk, nb, act, K);
      v128.store(dstAt(node, m0, n, i2, i3), r);
    }
    return;
  }
  if (mc == 4 && tLayout(node, 1) == LAYOUT_K4 && extra(node, 6) != 0 && m0 + 4 <= tWord(node, 1, 14)) {
    mmGroupK4(node, ith, type, tAddr(node, 1) + base + <usize>m0 * nb1, K, m0, i2, i3, c0, c1);
    return;
  }
  const scratch = <usize>extra(node, 3) + <usize>ith * <usize>extra(node, 4);
  const plainRows = tNb(node, 1, 0) == (type == T_F32 ? 4 : 2);
  if (mc == 4 && (type == T_F32 || type == T_F16) && plainRows && (K & 3) == 0) {
    // groups of four rows always take these tiles (pairs of columns, then one), so a
    // column's result never depends on the batch it came in
    const p = tAddr(node, 1) + base + <usize>m0 * nb1;
    // F16 against many columns: the four rows widened to f32 once (exact) into the scratch,
    // so the tiles run on f32 rows, the same products in the same order as on the F16 ones
    const rs = <usize>K << 2;
    const widen = type == T_F16 && c1 - c0 >= WIDEN_MIN_COLS && rs * 4 <= <usize>(extra(node, 8) > 0 ? extra(node, 8) : extra(node, 4));
    if (widen) for (let r = 0; r < 4; r++) widenF16Row(p + <usize>r * nb1, scratch + <usize>r * rs, K);
    let n = c0;
    for (; n + 2 <= c1; n += 2) {
      const x0 = actRow(node, n, i2, i3);
      const x1 = actRow(node, n + 1, i2, i3);
      const o0 = dstAt(node, m0, n, i2, i3);
      const o1 = dstAt(node, m0, n + 1, i2, i3);
      if (widen) tileFloat4x2<f32>(scratch, rs, x0, x1, K, o0, o1);
      else if (type == T_F16) tileFloat4x2<u16>(p, nb1, x0, x1, K, o0, o1);
      else tileFloat4x2<f32>(p, nb1, x0, x1, K, o0, o1);
    }
    if (n < c1) {
      const x0 = actRow(node, n, i2, i3);
      const o0 = dstAt(node, m0, n, i2, i3);
      if (widen) tileFloat4x1<f32>(scratch, rs, x0, K, o0);
      else if (type == T_F16) tileFloat4x1<u16>(p, nb1, x0, K, o0);
      else tileFloat4x1<f32>(p, nb1, x0, K, o0);
    }
    return;
  }
  mmRows(node, scratch, type, plainRows, m0, mc, base, i2, i3, a2, a3, c0, c1);
}

/**
 * Columns of a chunk from which a group of four F16 rows is widened to f32 once (mmGroup)
 * rather than converted in every tile. Zen 5, 1 thread, 4304x1152 and 1152x4304 weights,
 * CPU time: 2 columns 1.1x the F16 tiles' time, 3 columns 0.8x, 4 columns 0.7x.
 */
const WIDEN_MIN_COLS: i32 = 3;

/**
 * Least columns of a chunk against F16 weights: widening a group costs about one column
 * and is paid once per chunk, so the chunk grows past the activations' 256 KB (encode.ts)
 * when K is long. Zen 5, 1 thread, K=4304: 12 columns (the 256 KB) 35 GFLOP/s, 32: 38,
 * 64: 41, 128: 44.
 */
const F16_CHUNK: i32 = 128;

/** A whole group of four interleaved Q4_K / Q5_0 / Q6_K / Q4_0 / MXFP4 rows (kquant.ts, mxfp4.ts): columns four at a time, then one. */
function mmGroupK4(node: usize, ith: i32, type: i32, chunk: usize, K: i32, m0: i32, i2: i32, i3: i32, c0: i32, c1: i32): void {
  const q5 = type == T_Q5_0;
  const q6 = type == T_Q6_K;
  const q4 = type == T_Q4_0;
  const mx = type == T_MXFP4;
  if (q6 && unpackQ6K(c1 - c0) && mmUnpackedQ6K(node, ith, chunk, K, m0, i2, i3, c0, c1)) return;
  if (ASC_FEATURE_RELAXED_SIMD && q4 && dotAdd() && c1 - c0 >= UNPACK_MIN_COLS_K4 && mmUnpacked(node, ith, chunk, K >> 5, K, m0, i2, i3, c0, c1, true)) return;
  let n = c0;
  for (; n + 4 <= c1; n += 4) {
    const x0 = actRow(node, n, i2, i3);
    const x1 = actRow(node, n + 1, i2, i3);
    const x2 = actRow(node, n + 2, i2, i3);
    const x3 = actRow(node, n + 3, i2, i3);
    const o0 = dstAt(node, m0, n, i2, i3);
    const o1 = dstAt(node, m0, n + 1, i2, i3);
    const o2 = dstAt(node, m0, n + 2, i2, i3);
    const o3 = dstAt(node, m0, n + 3, i2, i3);
    if (q4) gemmQ4_0x4(chunk, K >> 5, K, x0, x1, x2, x3, o0, o1, o2, o3);
    else if (mx) gemmMXFP4x4(chunk, K >> 5, K, x0, x1, x2, x3, o0, o1, o2, o3);
    else if (q5) gemmQ5_0x4(chunk, K >> 5, K, x0, x1, x2, x3, o0, o1, o2, o3);
    else if (q6) gemmQ6Kx4(chunk, K >> 8, K, x0, x1, x2, x3, o0, o1, o2, o3);
    else gemmQ4Kx4(chunk, K >> 8, K, x0, x1, x2, x3, o0, o1, o2, o3);
  }
  for (; n < c1; n++) {
    const x = actRow(node, n, i2, i3);
    const v = q4
      ? gemvQ4_0(chunk, K >> 5, x, K)
      : mx
        ? gemvMXFP4(chunk, K >> 5, x, K)
        : q5
        ? gemvQ5_0(chunk, K >> 5, x, K)
        : q6
          ? gemvQ6K(chunk, K >> 8, x, K)
          : gemvQ4K(chunk, K >> 8, x, K);
    v128.store(dstAt(node, m0, n, i2, i3), v);
  }
}

/**
 * Whether a group of Q6_K rows is unpacked once (kquant.ts, unpackQ6Kx4) for a chunk of n
 * columns. Unpacking costs about a quarter of a four-column pass when the weights stream
 * from memory and saves about a sixth of each such pass after it: so from two columns on,
 * except four and five, where one pass of gemmQ6Kx4 (and a gemvQ6K) measured faster.
 */
@inline function unpackQ6K(n: i32): bool {
  return n >= 2 && (n < 4 || n > 5);
}

/**
 * One group of four Q6_K rows against columns [c0, c1): the whole group unpacked into the
 * thread's scratch, then every column against it (fours, a pair, one). The same bits as
 * gemmQ6Kx4 / gemvQ6K. False (nothing done) when the scratch cannot hold the group.
 */
function mmUnpackedQ6K(node: usize, ith: i32, chunk: usize, K: i32, m0: i32, i2: i32, i3: i32, c0: i32, c1: i32): bool {
  const room = <usize>(extra(node, 8) > 0 ? extra(node, 8) : extra(node, 4));
  const nsb = K >> 8;
  if (<usize>nsb * DQ6 > room) return false;
  const scr = <usize>extra(node, 3) + <usize>ith * <usize>extra(node, 4);
  unpackQ6Kx4(chunk, nsb, scr);
  let n = c0;
  for (; n + 4 <= c1; n += 4) {
    tileQ6Kx4(
      chunk, scr, nsb, K,
      actRow(node, n, i2, i3), actRow(node, n + 1, i2, i3), actRow(node, n + 2, i2, i3), actRow(node, n + 3, i2, i3),
      dstAt(node, m0, n, i2, i3), dstAt(node, m0, n + 1, i2, i3), dstAt(node, m0, n + 2, i2, i3), dstAt(node, m0, n + 3, i2, i3),
    );
  }
  if (n + 2 <= c1) {
    tileQ6Kx2(chunk, scr, nsb, K, actRow(node, n, i2, i3), actRow(node, n + 1, i2, i3), dstAt(node, m0, n, i2, i3), dstAt(node, m0, n + 1, i2, i3));
    n += 2;
  }
  if (n < c1) tileQ6Kx1(chunk, scr, nsb, K, actRow(node, n, i2, i3), dstAt(node, m0, n, i2, i3));
  return true;
}

/**
 * Columns of a chunk from which a group of Q4_0 rows is unpacked once (qdot.ts,
 * unpackQ4_0x4) rather than decoded per four columns: unpacking costs about one column.
 */
const UNPACK_MIN_COLS: i32 = 8;

/**
 * The same for k4 Q4_0 groups, whose four-column kernel needs no horizontal sums: the tiles
 * pay only with the 32-bit dot form (dotAdd), from about 20 columns (Zen 5, Node 24, CPU
 * time in one process: 0.95x of the four-column kernel's at 32 and 512 columns, 1.0-1.1x
 * at 9-17); with 16-bit dots they took 1.5x the four-column kernel's time at 8 to 512.
 */
const UNPACK_MIN_COLS_K4: i32 = 20;

/**
 * Columns of a chunk from which two whole k4 Q4_0 groups are unpacked side by side
 * (mmUnpackedPair; 32-bit dot form only). Zen 5, Node 24, CPU time of bench:kernels'
 * few-column products: at 4 columns the four-column kernel took 0.86x of the pair's time;
 * at 5-7 the pair 0.9-1.0x of gemmQ4_0x4 plus gemvQ4_0, at 8-16 0.76-0.90x; a prompt's
 * 512 columns ran 1.2-1.3x faster than through mmUnpacked's one group at a time.
 */
const UNPACK_MIN_COLS_PAIR: i32 = 5;

/**
 * One group of four Q4_0 rows (rep4 layout, or k4 when k4) against columns [c0, c1): the
 * group's blocks unpacked into the thread's scratch a piece at a time, each piece then used
 * for every column (pairs, then one). The results are the same bits as groupQ4_0x4's and
 * gemmQ4_0x4's. False (nothing done) when the scratch cannot hold one block.
 */
function mmUnpacked(node: usize, ith: i32, chunk: usize, nb: i32, K: i32, m0: i32, i2: i32, i3: i32, c0: i32, c1: i32, k4: bool): bool {
  const room = <usize>(extra(node, 8) > 0 ? extra(node, 8) : extra(node, 4)) / DQ4;
  if (room == 0) return false;
  // pieces of at most 32 blocks keep the unpacked rows in L1 next to the activations
  const P = <i32>min(room, 32);
  const scr = <usize>extra(node, 3) + <usize>ith * <usize>extra(node, 4);
  for (let b0 = 0; b0 < nb; b0 += P) {
    const n = min(P, nb - b0);
    const first = b0 == 0;
    if (k4) unpackQ4_0k4(chunk + <usize>b0 * 72, n, scr);
    else unpackQ4_0x4(chunk + <usize>b0 * 72, n, scr);
    let c = c0;
    for (; c + 2 <= c1; c += 2) {
      const x0 = actRow(node, c, i2, i3);
      const x1 = actRow(node, c + 1, i2, i3);
      tileQ4_0x2(scr, b0, n, K, x0, x1, dstAt(node, m0, c, i2, i3), dstAt(node, m0, c + 1, i2, i3), first);
    }
    if (c < c1) tileQ4_0x1(scr, b0, n, K, actRow(node, c, i2, i3), dstAt(node, m0, c, i2, i3), first);
  }
  return true;
}

/**
 * Two whole k4 Q4_0 groups (rows m0 .. m0 + 7 of matrix (a2, a3)) against columns
 * [c0, c1): unpacked side by side into the thread's scratch a piece at a time (qdot.ts,
 * unpackQ4_0k4Pair), each piece then used for every column (pairs, then one), so each
 * broadcast activation run feeds eight rows. The same bits as mmUnpacked's. False (nothing
 * done) when the scratch cannot hold one block.
 */
function mmUnpackedPair(node: usize, ith: i32, m0: i32, i2: i32, i3: i32, a2: i32, a3: i32, c0: i32, c1: i32): bool {
  const room = <usize>(extra(node, 8) > 0 ? extra(node, 8) : extra(node, 4)) / DQ8;
  if (room == 0) return false;
  const K = tNe(node, 1, 0);
  const nb = K >> 5;
  const nb1 = tNb(node, 1, 1);
  const ca = tAddr(node, 1) + <usize>a2 * tNb(node, 1, 2) + <usize>a3 * tNb(node, 1, 3) + <usize>m0 * nb1;
  const cb = ca + 4 * nb1;
  // pieces of at most 32 blocks (9 KB) keep the unpacked rows in L1 next to the activations
  const P = <i32>min(room, 32);
  const scr = <usize>extra(node, 3) + <usize>ith * <usize>extra(node, 4);
  for (let b0 = 0; b0 < nb; b0 += P) {
    const n = min(P, nb - b0);
    const first = b0 == 0;
    unpackQ4_0k4Pair(ca + <usize>b0 * 72, cb + <usize>b0 * 72, n, scr);
    let c = c0;
    for (; c + 2 <= c1; c += 2) {
      tileQ4_0Pairx2(
        scr, b0, n, K, actRow(node, c, i2, i3), actRow(node, c + 1, i2, i3),
        dstAt(node, m0, c, i2, i3), dstAt(node, m0, c + 1, i2, i3), dstAt(node, m0 + 4, c, i2, i3), dstAt(node, m0 + 4, c + 1, i2, i3), first,
      );
    }
    if (c < c1) tileQ4_0Pairx1(scr, b0, n, K, actRow(node, c, i2, i3), dstAt(node, m0, c, i2, i3), dstAt(node, m0 + 4, c, i2, i3), first);
  }
  return true;
}

/**
 * The ggml-layout bytes of the row of k4 weights (Q4_0, Q5_0, Q4_K, Q6_K, MXFP4) that starts `o`
 * logical bytes into the node's weights, for rows outside the tiles (a view): in place
 * when the row is outside any group, else unpacked into scratch.
 */
function k4Row(node: usize, type: i32, o: usize, K: i32, scratch: usize): usize {
  krow(node, 1, o, type == T_Q4_0 ? 18 : type == T_Q5_0 ? 22 : type == T_MXFP4 ? 17 : type == T_Q4_K ? 144 : 210);
  if (kRow < 0) return kGroup;
  if (type == T_Q4_0) unpackRowQ4_0(kGroup, kRow, K >> 5, scratch);
  else if (type == T_MXFP4) unpackRowMXFP4(kGroup, kRow, K >> 5, scratch);
  else if (type == T_Q5_0) unpackRowQ5_0(kGroup, kRow, K >> 5, scratch);
  else if (type == T_Q4_K) unpackRowQ4K(kGroup, kRow, K >> 8, scratch);
  else unpackRowQ6K(kGroup, kRow, K >> 8, scratch);
  return scratch;
}

/** Σ_b min_b · corr_b: Q8_1's block-sum rounding against Q4_1/Q5_1 mins (vecdot.ts). */
function q81Correction(w: usize, ts: usize, corr: usize, nb: i32): f32 {
  let s: f32 = 0;
  for (let b = 0; b < nb; b++) s += f16ToF32(load<u16>(w + <usize>b * ts, 2)) * load<f32>(corr + (<usize>b << 2));
  return s;
}

/** Row by row (and column by column) for whatever the tiles above do not cover. */
function mmRows(
  node: usize, scratch: usize, type: i32, plainRows: bool, m0: i32, mc: i32, base: usize,
  i2: i32, i3: i32, a2: i32, a3: i32, c0: i32, c1: i32,
): void {
  const K = tNe(node, 1, 0);
  const nb1 = tNb(node, 1, 1);
  for (let m = m0; m < m0 + mc; m++) {
    const o = base + <usize>m * nb1;
    const pa = tAddr(node, 1) + o;
    if (type == T_Q4_0 || type == T_Q8_0) {
      const ts: usize = type == T_Q4_0 ? 18 : 34;
      let sc: usize;
      let qs: usize;
      let st: usize;
      if (tLayout(node, 1) == LAYOUT_K4) {
        sc = k4Row(node, type, o, K, scratch);
        qs = sc + 2;
        st = 18;
      } else {
        qrow(node, 1, o, ts);
        sc = qScale;
        qs = qQs;
        st = qStride;
      }
      for (let n = c0; n < c1; n++) {
        const act = actRow(node, n, i2, i3);
        const v = type == T_Q4_0 ? dotQ4_0(sc, qs, st, K >> 5, act, K) : dotQ8_0(sc, qs, st, K >> 5, act, K);
        store<f32>(dstAt(node, m, n, i2, i3), v);
      }
    } else if (type == T_Q5_0) {
      const q5 = tLayout(node, 1) == LAYOUT_K4 ? k4Row(node, type, o, K, scratch) : pa;
      let n = c0;
      if (ASC_FEATURE_RELAXED_SIMD) {
        for (; n + 4 <= c1; n += 4) {
          const x0 = actRow(node, n, i2, i3);
          const x1 = actRow(node, n + 1, i2, i3);
          const x2 = actRow(node, n + 2, i2, i3);
          const x3 = actRow(node, n + 3, i2, i3);
          const v = colsQ5_0x4(q5, K >> 5, K, x0, x1, x2, x3);
          store<f32>(dstAt(node, m, n, i2, i3), f32x4.extract_lane(v, 0));
          store<f32>(dstAt(node, m, n + 1, i2, i3), f32x4.extract_lane(v, 1));
          store<f32>(dstAt(node, m, n + 2, i2, i3), f32x4.extract_lane(v, 2));
          store<f32>(dstAt(node, m, n + 3, i2, i3), f32x4.extract_lane(v, 3));
        }
      }
      for (; n < c1; n++) {
        store<f32>(dstAt(node, m, n, i2, i3), dotQ5_0(q5, K >> 5, actRow(node, n, i2, i3), K));
      }
    } else if (type == T_Q4_K || type == T_Q6_K) {
      const pa = tLayout(node, 1) == LAYOUT_K4 ? k4Row(node, type, o, K, scratch) : tAddr(node, 1) + o;
      let n = c0;
      for (; n + 4 <= c1; n += 4) {
        const x0 = actRow(node, n, i2, i3);
        const x1 = actRow(node, n + 1, i2, i3);
        const x2 = actRow(node, n + 2, i2, i3);
        const x3 = actRow(node, n + 3, i2, i3);
        const v = type == T_Q4_K ? dotQ4_Kx4(pa, K >> 8, x0, x1, x2, x3, K) : dotQ6_Kx4(pa, K >> 8, x0, x1, x2, x3, K);
        store<f32>(dstAt(node, m, n, i2, i3), f32x4.extract_lane(v, 0));
        store<f32>(dstAt(node, m, n + 1, i2, i3), f32x4.extract_lane(v, 1));
        store<f32>(dstAt(node, m, n + 2, i2, i3), f32x4.extract_lane(v, 2));
        store<f32>(dstAt(node, m, n + 3, i2, i3), f32x4.extract_lane(v, 3));
      }
      for (; n < c1; n++) {
        const act = actRow(node, n, i2, i3);
        const v = type == T_Q4_K ? dotQ4_K(pa, K >> 8, act, K) : dotQ6_K(pa, K >> 8, act, K);
        store<f32>(dstAt(node, m, n, i2, i3), v);
      }
    } else if (type == T_MXFP4 && extra(node, 2) == FMT_Q32) {
      const mx = tLayout(node, 1) == LAYOUT_K4 ? k4Row(node, type, o, K, scratch) : pa;
      let n = c0;
      for (; n + 4 <= c1; n += 4) {
        const x0 = actRow(node, n, i2, i3);
        const x1 = actRow(node, n + 1, i2, i3);
        const x2 = actRow(node, n + 2, i2, i3);
        const x3 = actRow(node, n + 3, i2, i3);
        const v = dotMXFP4x4(mx, K >> 5, x0, x1, x2, x3, K);
        store<f32>(dstAt(node, m, n, i2, i3), f32x4.extract_lane(v, 0));
        store<f32>(dstAt(node, m, n + 1, i2, i3), f32x4.extract_lane(v, 1));
        store<f32>(dstAt(node, m, n + 2, i2, i3), f32x4.extract_lane(v, 2));
        store<f32>(dstAt(node, m, n + 3, i2, i3), f32x4.extract_lane(v, 3));
      }
      for (; n < c1; n++) store<f32>(dstAt(node, m, n, i2, i3), dotMXFP4(mx, K >> 5, actRow(node, n, i2, i3), K));
    } else if (ASC_FEATURE_RELAXED_SIMD && (type == T_TQ2_0 || type == T_TQ1_0)) {
      // straight from the 2-bit fields or trits, column by column (iquant.ts)
      for (let n = c0; n < c1; n++) {
        const act = actRow(node, n, i2, i3);
        store<f32>(dstAt(node, m, n, i2, i3), type == T_TQ2_0 ? dotTQ2_0(pa, K >> 8, act, K) : dotTQ1_0(pa, K >> 8, act, K));
      }
    } else if (isIQ(type) && c1 - c0 == 1) {
      // one column: decoded and dotted super-block by super-block (iquant.ts)
      store<f32>(dstAt(node, m, c0, i2, i3), dotIQ1(type, pa, K >> 8, actRow(node, c0, i2, i3), K, scratch));
    } else if (isIQ(type)) {
      // unpacked once for the row, then every column of the chunk (iquant.ts)
      const k = <usize>K;
      unpackIQ(type, pa, K >> 8, scratch, scratch + 2 * k + (k >> 3) + (k >> 6));
      let n = c0;
      for (; n + 4 <= c1; n += 4) {
        const v = dotIQx4(scratch, actRow(node, n, i2, i3), actRow(node, n + 1, i2, i3), actRow(node, n + 2, i2, i3), actRow(node, n + 3, i2, i3), K);
        store<f32>(dstAt(node, m, n, i2, i3), f32x4.extract_lane(v, 0));
        store<f32>(dstAt(node, m, n + 1, i2, i3), f32x4.extract_lane(v, 1));
        store<f32>(dstAt(node, m, n + 2, i2, i3), f32x4.extract_lane(v, 2));
        store<f32>(dstAt(node, m, n + 3, i2, i3), f32x4.extract_lane(v, 3));
      }
      for (; n < c1; n++) store<f32>(dstAt(node, m, n, i2, i3), dotIQ(scratch, actRow(node, n, i2, i3), K));
    } else if ((type == T_F32 || type == T_F16 || type == T_BF16) && plainRows) {
      for (let n = c0; n < c1; n++) {
        const act = actRow(node, n, i2, i3);
        let v: f32;
        if (type == T_F32) v = dotF32(pa, act, K);
        else if (type == T_F16) v = dotF16(pa, act, K);
        else v = dotBF16(pa, act, K);
        store<f32>(dstAt(node, m, n, i2, i3), v);
      }
    } else {
      readRow(node, 1, m, a2, a3, scratch);
      const q81 = extra(node, 7) == ROUND_Q8_1;
      for (let n = c0; n < c1; n++) {
        const act = actRow(node, n, i2, i3);
        let v = dotF32(scratch, act, K);
        if (q81) v += q81Correction(pa, type == T_Q4_1 ? 20 : 24, act + (<usize>K << 2), K >> 5);
        store<f32>(dstAt(node, m, n, i2, i3), v);
      }
    }
  }
}
