// FLASH_ATTN_EXT: for each query row (token iq1, head iq2), a softmax over the KV
// positions of q·k·scale (softcap, + mask), weighting the V rows. K/V head is
// iq2 / (nHead / nHeadKV). t1 = q, t2 = k, t3 = v, t4 = mask, t5 = sinks (one logit per
// head joining every row's softmax without a value; gpt-oss), each type -1 when absent.
//
// Tiled: a tile is up to RMAX query rows that share a K/V head (the heads of a GQA group,
// for one or more tokens), run against blocks of B keys. A block's K rows (transposed)
// and V rows are widened to f32 once and reused by every row of the tile (with several
// tiles per head, once per head and thread); the scores of a block are a small matmul.
// The softmax runs online per key block (one max and rescale per block), with exp in f32
// (expNeg4) and V summed in f32.
//
// Batch independence: a row's arithmetic depends only on the fixed block boundaries
// (block j covers keys [jB, jB+B)), never on the other rows of its tile: every kernel
// below computes each row with the same operations in the same order, a block with no
// unmasked key for a row leaves that row as it is (rescale 1, weights 0: only a -0 sum
// could turn +0), and one-row tiles (decoding) run the same code. The reference device's ggml-cpu numerics (src/backends/reference/ops/
// attention.ts) describe this arithmetic.
//
// Split (one query token against many keys, ggml-cpu's split-KV case): the keys are cut
// into fixed chunks of extra 5 blocks; a unit is a tile (the GQA group) and one chunk, run
// as above from an empty state, and leaves its rows' max, sum and unnormalized V sum at
// extra 4 (per head and chunk: M, S, 0, 0, then V4 floats). k_flash_attn_merge then folds
// each head's chunks in order (ggml_flash_attn_ext_reduce_partials) and divides by the sum.
// The chunks do not depend on the thread count, so neither do the results. With F16 keys
// (the KV cache's) a chunk's scores are read from the cache rows directly (scoresF16, the
// row kernel's dot per key), without widening and transposing the block's K: at long
// contexts that conversion was the larger part of a decode's attention.

import { ldf } from './access';
import {
  C_F32, F_CEPHES_LN2_HI, F_CEPHES_LN2_LO, F_CEPHES_P0, F_CEPHES_P1, F_CEPHES_P2, F_CEPHES_P3, F_CEPHES_P4, F_CEPHES_P5,
  F_EXP_MIN, F_LOG2E, F_ONE, f16x4, roundF16x4, special8, widen8Hi, widen8Lo, widenF16Row,
} from './consts';
import { extra, param, tAddr, tNb, tNe, tType } from './desc';
import { pow2, tanh64 } from './math';
import { readRow } from './rows';
import { T_F16 } from './types';
import { ROUND_F16, roundActRow } from './vecdot';

/** Keys per block. Fixed: results depend on the block boundaries. */
const B: i32 = 32;
/** Most query rows in a tile. */
const RMAX: i32 = 32;

/** a*b + c: fused with relaxed SIMD, else a product and a sum (each build always the same). */
@inline function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(f32x4.mul(a, b), c);
}

/**
 * e^x for x <= 0 (four lanes), within 1.3 ulp of the exact value; 0 below -87.3 (and for
 * -inf). x = n ln2 + r (Cody-Waite, n ln2's high part exact), e^r by a degree-7
 * polynomial (Cephes' expf coefficients) in Horner form, times 2^n.
 */
@inline function expNeg4(x: v128): v128 {
  const tiny = f32x4.lt(x, C_F32(F_EXP_MIN));
  const xc = f32x4.pmax(x, C_F32(F_EXP_MIN));
  const n = f32x4.nearest(f32x4.mul(xc, C_F32(F_LOG2E)));
  let r = f32x4.sub(xc, f32x4.mul(n, C_F32(F_CEPHES_LN2_HI)));
  r = f32x4.sub(r, f32x4.mul(n, C_F32(F_CEPHES_LN2_LO)));
  let p = C_F32(F_CEPHES_P0);
  p = madd(p, r, C_F32(F_CEPHES_P1));
  p = madd(p, r, C_F32(F_CEPHES_P2));
  p = madd(p, r, C_F32(F_CEPHES_P3));
  p = madd(p, r, C_F32(F_CEPHES_P4));
  p = madd(p, r, C_F32(F_CEPHES_P5));
  const y = madd(p, f32x4.mul(r, r), f32x4.add(r, C_F32(F_ONE)));
  return v128.andnot(f32x4.mul(y, pow2(n)), tiny);
}

@inline function ceil4(n: i32): i32 {
  return (n + 3) & ~3;
}

// ---- per-thread scratch layout (src/backends/cpu/encode.ts faScratchBytes mirrors it) ----
// qt  RMAX x D4 f32    query rows of the tile (rounded to K's vec_dot_type, zero padded)
// sp  RMAX x B f32     scores, then probabilities, of the current block
// acc RMAX x V4 f32    V sums
// st  RMAX x 4 f32     per row: running max, running sum, this block's rescale, mask kind
// rpm RMAX u32         per row: address of its mask row
// tmp 4 x max(D4,V4)   rows being converted
// kv  blocks of B keys: K transposed (D4 x B f32) then V (B x V4 f32); one block, or with
//     extra 3 the whole head (ceil(nKV / B) blocks), converted once per head

/** Widen keys [j0, j0+B) of the K/V head to f32 at blk: K transposed, then V; zeros past nKV. */
function convertBlock(
  node: usize,
  j0: i32,
  nKV: i32,
  ik2: i32,
  ik3: i32,
  iv2: i32,
  iv3: i32,
  D4: i32,
  V4: i32,
  tmp: usize,
  blk: usize,
  withK: bool = true,
): void {
  const D = tNe(node, 2, 0);
  const Dv = tNe(node, 3, 0);
  const tstride = <usize>max(D4, V4) << 2;
  // F16 rows whose elements are adjacent (the KV cache's) are widened here directly
  const kF16 = tType(node, 2) == T_F16 && tNb(node, 2, 0) == 2 && (D & 3) == 0;
  const vF16 = tType(node, 3) == T_F16 && tNb(node, 3, 0) == 2 && (Dv & 3) == 0;
  const kBase = tAddr(node, 2) + <usize>ik2 * tNb(node, 2, 2) + <usize>ik3 * tNb(node, 2, 3);
  const vBase = tAddr(node, 3) + <usize>iv2 * tNb(node, 3, 2) + <usize>iv3 * tNb(node, 3, 3);
  for (let k4 = 0; withK && k4 < B; k4 += 4) {
    for (let i = 0; i < 4; i++) {
      const row = tmp + <usize>i * tstride;
      const j = j0 + k4 + i;
      if (j < nKV) {
        if (kF16) {
          widenF16Row(kBase + <usize>j * tNb(node, 2, 1), row, D);
        } else {
          readRow(node, 2, j, ik2, ik3, row);
          for (let d = D; d < D4; d++) store<f32>(row + (<usize>d << 2), 0);
        }
      } else {
        memory.fill(row, 0, <usize>D4 << 2);
      }
    }
    // 4x4 transposes: Kt[d][k4..k4+4) = rows[0..4)[d]
    for (let d = 0; d < D4; d += 4) {
      const o = <usize>d << 2;
      const a = v128.load(tmp + o);
      const b = v128.load(tmp + tstride + o);
      const c = v128.load(tmp + 2 * tstride + o);
      const e = v128.load(tmp + 3 * tstride + o);
      const t0 = v128.shuffle<f32>(a, b, 0, 4, 1, 5);
      const t1 = v128.shuffle<f32>(a, b, 2, 6, 3, 7);
      const t2 = v128.shuffle<f32>(c, e, 0, 4, 1, 5);
      const t3 = v128.shuffle<f32>(c, e, 2, 6, 3, 7);
      const p = blk + ((<usize>d * B + k4) << 2);
      v128.store(p, v128.shuffle<f32>(t0, t2, 0, 1, 4, 5));
      v128.store(p + (<usize>B << 2), v128.shuffle<f32>(t0, t2, 2, 3, 6, 7));
      v128.store(p + (<usize>B << 3), v128.shuffle<f32>(t1, t3, 0, 1, 4, 5));
      v128.store(p + <usize>B * 12, v128.shuffle<f32>(t1, t3, 2, 3, 6, 7));
    }
  }
  const vb = blk + ((<usize>D4 * B) << 2);
  for (let k = 0; k < B; k++) {
    const row = vb + ((<usize>k * V4) << 2);
    const j = j0 + k;
    if (j < nKV && vF16) {
      widenF16Row(vBase + <usize>j * tNb(node, 3, 1), row, Dv);
    } else if (j < nKV) {
      readRow(node, 3, j, iv2, iv3, row);
      for (let d = Dv; d < V4; d++) store<f32>(row + (<usize>d << 2), 0);
    } else {
      memory.fill(row, 0, <usize>V4 << 2);
    }
  }
}

/** Raw scores of 4 query rows (q, stride qs bytes) against the B keys of a block (kt: D x B). */
function scores4(q: usize, qs: usize, kt: usize, D: i32, sp: usize): void {
  for (let kk = 0; kk < B; kk += 8) {
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let b0 = f32x4.splat(0);
    let b1 = f32x4.splat(0);
    let c0 = f32x4.splat(0);
    let c1 = f32x4.splat(0);
    let d0 = f32x4.splat(0);
    let d1 = f32x4.splat(0);
    let pk = kt + (<usize>kk << 2);
    let pq = q;
    for (let d = 0; d < D; d++) {
      const k0 = v128.load(pk);
      const k1 = v128.load(pk, 16);
      const q0 = v128.load32_splat(pq);
      const q1 = v128.load32_splat(pq + qs);
      const q2 = v128.load32_splat(pq + 2 * qs);
      const q3 = v128.load32_splat(pq + 3 * qs);
      a0 = madd(q0, k0, a0);
      a1 = madd(q0, k1, a1);
      b0 = madd(q1, k0, b0);
      b1 = madd(q1, k1, b1);
      c0 = madd(q2, k0, c0);
      c1 = madd(q2, k1, c1);
      d0 = madd(q3, k0, d0);
      d1 = madd(q3, k1, d1);
      pk += <usize>B << 2;
      pq += 4;
    }
    const o = sp + (<usize>kk << 2);
    const rs = <usize>B << 2;
    v128.store(o, a0);
    v128.store(o, a1, 16);
    v128.store(o + rs, b0);
    v128.store(o + rs, b1, 16);
    v128.store(o + 2 * rs, c0);
    v128.store(o + 2 * rs, c1, 16);
    v128.store(o + 3 * rs, d0);
    v128.store(o + 3 * rs, d1, 16);
  }
}

/** Raw scores of 2 query rows against the B keys of a block (the same operations per score as scores4). */
function scores2(q: usize, qs: usize, kt: usize, D: i32, sp: usize): void {
  for (let kk = 0; kk < B; kk += 16) {
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let b0 = f32x4.splat(0);
    let b1 = f32x4.splat(0);
    let b2 = f32x4.splat(0);
    let b3 = f32x4.splat(0);
    let pk = kt + (<usize>kk << 2);
    let pq = q;
    for (let d = 0; d < D; d++) {
      const k0 = v128.load(pk);
      const k1 = v128.load(pk, 16);
      const k2 = v128.load(pk, 32);
      const k3 = v128.load(pk, 48);
      const q0 = v128.load32_splat(pq);
      const q1 = v128.load32_splat(pq + qs);
      a0 = madd(q0, k0, a0);
      a1 = madd(q0, k1, a1);
      a2 = madd(q0, k2, a2);
      a3 = madd(q0, k3, a3);
      b0 = madd(q1, k0, b0);
      b1 = madd(q1, k1, b1);
      b2 = madd(q1, k2, b2);
      b3 = madd(q1, k3, b3);
      pk += <usize>B << 2;
      pq += 4;
    }
    const o = sp + (<usize>kk << 2);
    const rs = <usize>B << 2;
    v128.store(o, a0);
    v128.store(o, a1, 16);
    v128.store(o, a2, 32);
    v128.store(o, a3, 48);
    v128.store(o + rs, b0);
    v128.store(o + rs, b1, 16);
    v128.store(o + rs, b2, 32);
    v128.store(o + rs, b3, 48);
  }
}

/** Raw scores of one query row against the B keys of a block (the same operations per score as scores4). */
function scores1(q: usize, kt: usize, D: i32, sp: usize): void {
  for (let kk = 0; kk < B; kk += 16) {
    let a0 = f32x4.splat(0);
    let a1 = f32x4.splat(0);
    let a2 = f32x4.splat(0);
    let a3 = f32x4.splat(0);
    let pk = kt + (<usize>kk << 2);
    let pq = q;
    for (let d = 0; d < D; d++) {
      const q0 = v128.load32_splat(pq);
      a0 = madd(q0, v128.load(pk), a0);
      a1 = madd(q0, v128.load(pk, 16), a1);
      a2 = madd(q0, v128.load(pk, 32), a2);
      a3 = madd(q0, v128.load(pk, 48), a3);
      pk += <usize>B << 2;
      pq += 4;
    }
    const o = sp + (<usize>kk << 2);
    v128.store(o, a0);
    v128.store(o, a1, 16);
    v128.store(o, a2, 32);
    v128.store(o, a3, 48);
  }
}

/** Σ of a row's four lanes, (0 + 1) + (2 + 3): the row kernel's dot (attention-row.ts). */
@inline function hsum4(a: v128): f32 {
  return f32x4.extract_lane(a, 0) + f32x4.extract_lane(a, 1) + (f32x4.extract_lane(a, 2) + f32x4.extract_lane(a, 3));
}

/**
 * The split case with F16 keys (the KV cache's): raw scores of R query rows (q, stride
 * qs) against the n keys from the row at kp (rows kn bytes apart), read from the cache
 * directly instead of a widened, transposed block: each key's eight halves are widened in
 * registers for four rows at a time. A score is the row kernel's dot (four lanes over d,
 * then (0 + 1) + (2 + 3)). Scores of the block past n are 0 (the caller masks them).
 */
function scoresF16(q: usize, qs: usize, R: i32, kp: usize, kn: usize, n: i32, D: i32, sp: usize): void {
  const D8 = D & ~7;
  for (let k = 0; k < n; k++) {
    const kr = kp + <usize>k * kn;
    let r = 0;
    for (; r + 4 <= R; r += 4) {
      let a0 = f32x4.splat(0);
      let a1 = f32x4.splat(0);
      let a2 = f32x4.splat(0);
      let a3 = f32x4.splat(0);
      let pq = q + <usize>r * qs;
      let ph = kr;
      for (let d = 0; d < D8; d += 8, pq += 32, ph += 16) {
        const v = v128.load(ph);
        const sp8 = special8(v);
        const lo = widen8Lo(v, ph, sp8);
        const hi = widen8Hi(v, ph, sp8);
        a0 = madd(v128.load(pq), lo, a0);
        a1 = madd(v128.load(pq + qs), lo, a1);
        a2 = madd(v128.load(pq + 2 * qs), lo, a2);
        a3 = madd(v128.load(pq + 3 * qs), lo, a3);
        a0 = madd(v128.load(pq, 16), hi, a0);
        a1 = madd(v128.load(pq + qs, 16), hi, a1);
        a2 = madd(v128.load(pq + 2 * qs, 16), hi, a2);
        a3 = madd(v128.load(pq + 3 * qs, 16), hi, a3);
      }
      if (D8 < D) {
        const lo = f16x4(v128.load16x4_u(ph));
        a0 = madd(v128.load(pq), lo, a0);
        a1 = madd(v128.load(pq + qs), lo, a1);
        a2 = madd(v128.load(pq + 2 * qs), lo, a2);
        a3 = madd(v128.load(pq + 3 * qs), lo, a3);
      }
      const o = sp + ((<usize>r * B + k) << 2);
      const rs = <usize>B << 2;
      store<f32>(o, hsum4(a0));
      store<f32>(o + rs, hsum4(a1));
      store<f32>(o + 2 * rs, hsum4(a2));
      store<f32>(o + 3 * rs, hsum4(a3));
    }
    for (; r < R; r++) {
      let a = f32x4.splat(0);
      let pq = q + <usize>r * qs;
      let ph = kr;
      for (let d = 0; d < D8; d += 8, pq += 32, ph += 16) {
        const v = v128.load(ph);
        const sp8 = special8(v);
        a = madd(v128.load(pq), widen8Lo(v, ph, sp8), a);
        a = madd(v128.load(pq, 16), widen8Hi(v, ph, sp8), a);
      }
      if (D8 < D) a = madd(v128.load(pq), f16x4(v128.load16x4_u(ph)), a);
      store<f32>(sp + ((<usize>r * B + k) << 2), hsum4(a));
    }
  }
  for (let r = 0; r < R; r++) memory.fill(sp + ((<usize>r * B + n) << 2), 0, <usize>(B - n) << 2);
}

/**
 * acc = acc * ms + Σ_k p[k] · V[k] (k in block order) for 4 rows (p, acc: row strides
 * B and V4 floats; ms at st + 8 with stride 16 bytes).
 */
function accum4(p: usize, acc: usize, st: usize, vb: usize, V4: i32): void {
  const ps = <usize>B << 2;
  const as = <usize>V4 << 2;
  const m0 = v128.load32_splat(st + 8);
  const m1 = v128.load32_splat(st + 24);
  const m2 = v128.load32_splat(st + 40);
  const m3 = v128.load32_splat(st + 56);
  let c = 0;
  for (; c + 8 <= V4; c += 8) {
    const pa = acc + (<usize>c << 2);
    let a0 = f32x4.mul(v128.load(pa), m0);
    let a1 = f32x4.mul(v128.load(pa, 16), m0);
    let b0 = f32x4.mul(v128.load(pa + as), m1);
    let b1 = f32x4.mul(v128.load(pa + as, 16), m1);
    let c0 = f32x4.mul(v128.load(pa + 2 * as), m2);
    let c1 = f32x4.mul(v128.load(pa + 2 * as, 16), m2);
    let d0 = f32x4.mul(v128.load(pa + 3 * as), m3);
    let d1 = f32x4.mul(v128.load(pa + 3 * as, 16), m3);
    let pv = vb + (<usize>c << 2);
    let pp = p;
    for (let k = 0; k < B; k++) {
      const v0 = v128.load(pv);
      const v1 = v128.load(pv, 16);
      const p0 = v128.load32_splat(pp);
      const p1 = v128.load32_splat(pp + ps);
      const p2 = v128.load32_splat(pp + 2 * ps);
      const p3 = v128.load32_splat(pp + 3 * ps);
      a0 = madd(p0, v0, a0);
      a1 = madd(p0, v1, a1);
      b0 = madd(p1, v0, b0);
      b1 = madd(p1, v1, b1);
      c0 = madd(p2, v0, c0);
      c1 = madd(p2, v1, c1);
      d0 = madd(p3, v0, d0);
      d1 = madd(p3, v1, d1);
      pv += as;
      pp += 4;
    }
    v128.store(pa, a0);
    v128.store(pa, a1, 16);
    v128.store(pa + as, b0);
    v128.store(pa + as, b1, 16);
    v128.store(pa + 2 * as, c0);
    v128.store(pa + 2 * as, c1, 16);
    v128.store(pa + 3 * as, d0);
    v128.store(pa + 3 * as, d1, 16);
  }
  // a last 4 columns: one row at a time
  if (c < V4) for (let r = 0; r < 4; r++) accum1From(p + <usize>r * ps, acc + <usize>r * as, st + <usize>r * 16, vb, V4, c);
}

/** accum4 for 2 rows. */
function accum2(p: usize, acc: usize, st: usize, vb: usize, V4: i32): void {
  const ps = <usize>B << 2;
  const as = <usize>V4 << 2;
  const m0 = v128.load32_splat(st + 8);
  const m1 = v128.load32_splat(st + 24);
  let c = 0;
  for (; c + 16 <= V4; c += 16) {
    const pa = acc + (<usize>c << 2);
    let a0 = f32x4.mul(v128.load(pa), m0);
    let a1 = f32x4.mul(v128.load(pa, 16), m0);
    let a2 = f32x4.mul(v128.load(pa, 32), m0);
    let a3 = f32x4.mul(v128.load(pa, 48), m0);
    let b0 = f32x4.mul(v128.load(pa + as), m1);
    let b1 = f32x4.mul(v128.load(pa + as, 16), m1);
    let b2 = f32x4.mul(v128.load(pa + as, 32), m1);
    let b3 = f32x4.mul(v128.load(pa + as, 48), m1);
    let pv = vb + (<usize>c << 2);
    let pp = p;
    for (let k = 0; k < B; k++) {
      const v0 = v128.load(pv);
      const v1 = v128.load(pv, 16);
      const v2 = v128.load(pv, 32);
      const v3 = v128.load(pv, 48);
      const p0 = v128.load32_splat(pp);
      const p1 = v128.load32_splat(pp + ps);
      a0 = madd(p0, v0, a0);
      a1 = madd(p0, v1, a1);
      a2 = madd(p0, v2, a2);
      a3 = madd(p0, v3, a3);
      b0 = madd(p1, v0, b0);
      b1 = madd(p1, v1, b1);
      b2 = madd(p1, v2, b2);
      b3 = madd(p1, v3, b3);
      pv += as;
      pp += 4;
    }
    v128.store(pa, a0);
    v128.store(pa, a1, 16);
    v128.store(pa, a2, 32);
    v128.store(pa, a3, 48);
    v128.store(pa + as, b0);
    v128.store(pa + as, b1, 16);
    v128.store(pa + as, b2, 32);
    v128.store(pa + as, b3, 48);
  }
  if (c < V4) for (let r = 0; r < 2; r++) accum1From(p + <usize>r * ps, acc + <usize>r * as, st + <usize>r * 16, vb, V4, c);
}

/** accum4 for one row, columns [c0, V4). */
function accum1From(p: usize, acc: usize, st: usize, vb: usize, V4: i32, c0: i32): void {
  const as = <usize>V4 << 2;
  const m = v128.load32_splat(st + 8);
  let c = c0;
  for (; c + 16 <= V4; c += 16) {
    const pa = acc + (<usize>c << 2);
    let a0 = f32x4.mul(v128.load(pa), m);
    let a1 = f32x4.mul(v128.load(pa, 16), m);
    let a2 = f32x4.mul(v128.load(pa, 32), m);
    let a3 = f32x4.mul(v128.load(pa, 48), m);
    let pv = vb + (<usize>c << 2);
    let pp = p;
    for (let k = 0; k < B; k++) {
      const p0 = v128.load32_splat(pp);
      a0 = madd(p0, v128.load(pv), a0);
      a1 = madd(p0, v128.load(pv, 16), a1);
      a2 = madd(p0, v128.load(pv, 32), a2);
      a3 = madd(p0, v128.load(pv, 48), a3);
      pv += as;
      pp += 4;
    }
    v128.store(pa, a0);
    v128.store(pa, a1, 16);
    v128.store(pa, a2, 32);
    v128.store(pa, a3, 48);
  }
  for (; c < V4; c += 4) {
    const pa = acc + (<usize>c << 2);
    let a0 = f32x4.mul(v128.load(pa), m);
    let pv = vb + (<usize>c << 2);
    let pp = p;
    for (let k = 0; k < B; k++) {
      a0 = madd(v128.load32_splat(pp), v128.load(pv), a0);
      pv += as;
      pp += 4;
    }
    v128.store(pa, a0);
  }
}

@inline function hmax(v: v128): f32 {
  return max(max(f32x4.extract_lane(v, 0), f32x4.extract_lane(v, 1)), max(f32x4.extract_lane(v, 2), f32x4.extract_lane(v, 3)));
}

/**
 * Keys [j0, j1) of mask row pm (stride nb0, type tm): 0 all hidden (-inf), 1 all zero
 * (adding them changes nothing), 2 anything else.
 */
function maskKind(pm: usize, nb0: usize, tm: i32, j0: i32, j1: i32): i32 {
  let vis = false;
  let zero = true;
  let j = j0;
  if (tm == T_F16 && nb0 == 2) {
    const ninf = i16x8.splat(<i16>0xfc00);
    const abs = i16x8.splat(0x7fff);
    for (; j + 8 <= j1; j += 8) {
      const h = v128.load(pm + (<usize>j << 1));
      vis = vis || !i16x8.all_true(i16x8.eq(h, ninf));
      zero = zero && !v128.any_true(v128.and(h, abs));
    }
  }
  for (; j < j1; j++) {
    const m = ldf(pm + <usize>j * nb0, tm);
    vis = vis || m != -Infinity;
    zero = zero && m == 0;
  }
  return vis ? (zero ? 1 : 2) : 0;
}

/**
 * Head h's sink (t5, one logit per head) joins a row's softmax state (st: M, S) and its V
 * sum (acc, V4 f32) as one more score with no value, as ggml-cpu adds it: a sink above
 * the max rescales the sum and becomes the max, else it adds exp(sink - M) to the sum.
 */
function addSink(node: usize, h: i32, st: usize, acc: usize, V4: i32): void {
  const sk = ldf(tAddr(node, 5) + <usize>h * tNb(node, 5, 0), tType(node, 5));
  const M = load<f32>(st);
  const S = load<f32>(st, 4);
  if (sk > M) {
    const ms = f32x4.extract_lane(expNeg4(f32x4.splat(M - sk)), 0);
    const m4 = f32x4.splat(ms);
    for (let d = 0; d < V4; d += 4) v128.store(acc + (<usize>d << 2), f32x4.mul(v128.load(acc + (<usize>d << 2)), m4));
    store<f32>(st, sk);
    store<f32>(st, S * ms + 1, 4);
  } else {
    store<f32>(st, S + f32x4.extract_lane(expNeg4(f32x4.splat(sk - M)), 0), 4);
  }
}

/** Bytes of one partial (head, chunk): M, S, two unused floats, then the V sum. */
@inline function partBytes(V4: i32): usize {
  return (<usize>V4 + 4) << 2;
}

export function k_flash_attn(node: usize, ith: i32, nth: i32): void {
  const D = tNe(node, 1, 0);
  const nQ = tNe(node, 1, 1);
  const nHead = tNe(node, 1, 2);
  const ne3 = tNe(node, 1, 3);
  const nKV = tNe(node, 2, 1);
  const Dv = tNe(node, 3, 0);
  const rk2 = nHead / tNe(node, 2, 2);
  const rk3 = ne3 / tNe(node, 2, 3);
  const rv2 = nHead / tNe(node, 3, 2);
  const rv3 = ne3 / tNe(node, 3, 3);
  const scale0 = <f32>param(node, 0);
  const softcap = <f32>param(node, 1);
  const scale: f32 = softcap != 0 ? scale0 / softcap : scale0;
  const tm = tType(node, 4);
  const mnb0 = tm >= 0 ? tNb(node, 4, 0) : 0;
  const qRound = extra(node, 2);
  const D4 = ceil4(D);
  const V4 = ceil4(Dv);
  const nBlk = (nKV + B - 1) / B;
  // heads per tile: a divisor of the GQA group (the tile shares one K and one V head)
  let G = rk2 == rv2 ? min(rk2, RMAX) : 1;
  while (rk2 % G != 0) G--;
  const Tt = RMAX / G;
  const nTiles = (nQ + Tt - 1) / Tt;
  const nChunks = nHead / G;
  // split: key chunks of kcb blocks, each a unit of its own
  const part = <usize>extra(node, 4);
  const kcb = part != 0 ? extra(node, 5) : nBlk;
  // split case with F16 keys: scores straight from the cache rows (scoresF16)
  const kDirect = part != 0 && tType(node, 2) == T_F16 && tNb(node, 2, 0) == 2 && (D & 3) == 0 && !(extra(node, 3) != 0 && nTiles > 1);
  const nKC = part != 0 ? (nBlk + kcb - 1) / kcb : 1;
  const units = ne3 * nChunks * nTiles * nKC;

  const base = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const qt = base;
  const sp = qt + ((<usize>RMAX * D4) << 2);
  const acc = sp + ((<usize>RMAX * B) << 2);
  const st = acc + ((<usize>RMAX * V4) << 2);
  const rpm = st + ((<usize>RMAX * 4) << 2);
  const tmp = rpm + ((<usize>RMAX) << 2);
  const kvBase = (tmp + ((<usize>4 * max(D4, V4)) << 2) + 63) & ~63;
  const blkBytes = (<usize>B * (D4 + V4)) << 2;
  // the whole head's blocks are kept when there is room and more than one tile reads them
  const cached = extra(node, 3) != 0 && nTiles > 1;
  let cK2 = -1;
  let cK3 = -1;
  let cV2 = -1;
  let cV3 = -1;
  let conv = 0;
  const qs = <usize>D4 << 2;

  // units in (ne3, head chunk, token tile) order, dealt round-robin: neighbouring tiles
  // (the causal mask makes later ones longer) alternate between threads
  for (let u = ith; u < units; u += nth) {
    const kc = u % nKC;
    const tile = (u / nKC) % nTiles;
    const rest = u / nKC / nTiles;
    const h0 = (rest % nChunks) * G;
    const iq3 = rest / nChunks;
    const t0 = tile * Tt;
    const tn = min(Tt, nQ - t0);
    const R = tn * G;
    const ik2 = h0 / rk2;
    const ik3 = iq3 / rk3;
    const iv2 = h0 / rv2;
    const iv3 = iq3 / rv3;
    const kBase = tAddr(node, 2) + <usize>ik2 * tNb(node, 2, 2) + <usize>ik3 * tNb(node, 2, 3);
    if (cached && (ik2 != cK2 || ik3 != cK3 || iv2 != cV2 || iv3 != cV3)) {
      cK2 = ik2;
      cK3 = ik3;
      cV2 = iv2;
      cV3 = iv3;
      conv = 0;
    }
    for (let r = 0; r < R; r++) {
      const q = qt + <usize>r * qs;
      readRow(node, 1, t0 + r / G, h0 + (r % G), iq3, q);
      for (let d = D; d < D4; d++) store<f32>(q + (<usize>d << 2), 0);
      if (qRound == ROUND_F16) {
        for (let d = 0; d < D4; d += 4) v128.store(q + (<usize>d << 2), roundF16x4(v128.load(q + (<usize>d << 2))));
      } else {
        roundActRow(qRound, q, D);
      }
      const s = st + (<usize>r << 4);
      store<f32>(s, -Infinity);
      store<f32>(s, 0, 4);
      // the row's mask row
      store<u32>(
        rpm + (<usize>r << 2),
        tm >= 0
          ? tAddr(node, 4) + <usize>(t0 + r / G) * tNb(node, 4, 1) +
              <usize>((h0 + (r % G)) % tNe(node, 4, 2)) * tNb(node, 4, 2) + <usize>(iq3 % tNe(node, 4, 3)) * tNb(node, 4, 3)
          : 0,
      );
    }
    memory.fill(acc, 0, (<usize>R * V4) << 2);
    const jbEnd = min(nBlk, (kc + 1) * kcb);
    for (let jb = kc * kcb; jb < jbEnd; jb++) {
      const j0 = jb * B;
      const j1 = min(j0 + B, nKV);
      // rows with a visible key in this block (rows of one token share a mask row when
      // the mask is broadcast over heads)
      let any = false;
      let lastPm: usize = usize.MAX_VALUE;
      let lastKind = 0;
      for (let r = 0; r < R; r++) {
        let kind = 1;
        if (tm >= 0) {
          const pm = <usize>load<u32>(rpm + (<usize>r << 2));
          if (pm != lastPm) {
            lastPm = pm;
            lastKind = maskKind(pm, mnb0, tm, j0, j1);
          }
          kind = lastKind;
        }
        store<f32>(st + (<usize>r << 4), <f32>kind, 12);
        any = any || kind != 0;
      }
      if (!any) continue;
      let blk = kvBase;
      if (cached) {
        blk = kvBase + <usize>jb * blkBytes;
        for (; conv <= jb; conv++) convertBlock(node, conv * B, nKV, ik2, ik3, iv2, iv3, D4, V4, tmp, kvBase + <usize>conv * blkBytes);
      } else {
        convertBlock(node, j0, nKV, ik2, ik3, iv2, iv3, D4, V4, tmp, blk, !kDirect);
      }
      const vb = blk + ((<usize>D4 * B) << 2);
      let r = 0;
      if (kDirect) {
        scoresF16(qt, qs, R, kBase + <usize>j0 * tNb(node, 2, 1), tNb(node, 2, 1), j1 - j0, D, sp);
      } else {
        for (; r + 4 <= R; r += 4) scores4(qt + <usize>r * qs, qs, blk, D, sp + ((<usize>r * B) << 2));
        for (; r + 2 <= R; r += 2) scores2(qt + <usize>r * qs, qs, blk, D, sp + ((<usize>r * B) << 2));
        for (; r < R; r++) scores1(qt + <usize>r * qs, blk, D, sp + ((<usize>r * B) << 2));
      }
      // scale, softcap, mask; online softmax over the block
      for (r = 0; r < R; r++) {
        const s = st + (<usize>r << 4);
        const ps = sp + ((<usize>r * B) << 2);
        const kind = load<f32>(s, 12);
        let active = kind != 0;
        if (active) {
          const sc = f32x4.splat(scale);
          let mv = f32x4.splat(-Infinity);
          const pm = <usize>load<u32>(rpm + (<usize>r << 2));
          if (softcap == 0 && j1 - j0 == B && kind == 1) {
            // a whole block, no mask to add: scale and max in one pass
            for (let k = 0; k < B; k += 8) {
              const p = ps + (<usize>k << 2);
              const x0 = f32x4.mul(v128.load(p), sc);
              const x1 = f32x4.mul(v128.load(p, 16), sc);
              v128.store(p, x0);
              v128.store(p, x1, 16);
              mv = f32x4.max(mv, f32x4.max(x0, x1));
            }
          } else if (softcap == 0 && j1 - j0 == B && tm == T_F16 && mnb0 == 2) {
            for (let k = 0; k < B; k += 4) {
              const p = ps + (<usize>k << 2);
              const x = f32x4.add(f32x4.mul(v128.load(p), sc), f16x4(v128.load16x4_u(pm + (<usize>(j0 + k) << 1))));
              v128.store(p, x);
              mv = f32x4.max(mv, x);
            }
          } else {
            for (let k = 0; k < B; k += 4) v128.store(ps + (<usize>k << 2), f32x4.mul(v128.load(ps + (<usize>k << 2)), sc));
            if (softcap != 0) {
              for (let k = 0; k < B; k++) {
                const p = ps + (<usize>k << 2);
                store<f32>(p, <f32>(<f64>softcap * tanh64(<f64>load<f32>(p))));
              }
            }
            if (kind == 2) {
              for (let k = 0; k < j1 - j0; k++) {
                const p = ps + (<usize>k << 2);
                store<f32>(p, load<f32>(p) + ldf(pm + <usize>(j0 + k) * mnb0, tm));
              }
            }
            for (let k = j1 - j0; k < B; k++) store<f32>(ps + (<usize>k << 2), -Infinity);
            for (let k = 0; k < B; k += 4) mv = f32x4.max(mv, v128.load(ps + (<usize>k << 2)));
          }
          const mx = hmax(mv);
          if (mx == -Infinity) {
            active = false;
          } else {
            const M = load<f32>(s);
            const Mn = max(M, mx);
            const ms = f32x4.extract_lane(expNeg4(f32x4.splat(M - Mn)), 0);
            const m4 = f32x4.splat(Mn);
            let sum = f32x4.splat(0);
            for (let k = 0; k < B; k += 8) {
              const p = ps + (<usize>k << 2);
              const e0 = expNeg4(f32x4.sub(v128.load(p), m4));
              const e1 = expNeg4(f32x4.sub(v128.load(p, 16), m4));
              v128.store(p, e0);
              v128.store(p, e1, 16);
              sum = f32x4.add(f32x4.add(sum, e0), e1);
            }
            const bs = f32x4.extract_lane(sum, 0) + f32x4.extract_lane(sum, 1) + (f32x4.extract_lane(sum, 2) + f32x4.extract_lane(sum, 3));
            store<f32>(s, Mn);
            store<f32>(s, load<f32>(s, 4) * ms + bs, 4);
            store<f32>(s, ms, 8);
          }
        }
        if (!active) {
          // nothing visible: the row is left as it is (scale 1, weights 0)
          memory.fill(ps, 0, <usize>B << 2);
          store<f32>(s, 1, 8);
        }
      }
      r = 0;
      for (; r + 4 <= R; r += 4) accum4(sp + ((<usize>r * B) << 2), acc + ((<usize>r * V4) << 2), st + (<usize>r << 4), vb, V4);
      for (; r + 2 <= R; r += 2) accum2(sp + ((<usize>r * B) << 2), acc + ((<usize>r * V4) << 2), st + (<usize>r << 4), vb, V4);
      for (; r < R; r++) accum1From(sp + ((<usize>r * B) << 2), acc + ((<usize>r * V4) << 2), st + (<usize>r << 4), vb, V4, 0);
    }
    // the heads' sinks join the softmax after the last key (as ggml-cpu adds them); split:
    // with the first key chunk only, so that each row counts its sink once
    if (tType(node, 5) >= 0 && kc == 0) {
      for (let r = 0; r < R; r++) addSink(node, h0 + (r % G), st + (<usize>r << 4), acc + ((<usize>r * V4) << 2), V4);
    }
    if (part != 0) {
      // the chunk's partial per row (head h0 + r: nQ = ne3 = 1)
      for (let r = 0; r < R; r++) {
        const pp = part + <usize>((h0 + r) * nKC + kc) * partBytes(V4);
        store<f32>(pp, load<f32>(st + (<usize>r << 4)));
        store<f32>(pp, load<f32>(st + (<usize>r << 4), 4), 4);
        memory.copy(pp + 16, acc + ((<usize>r * V4) << 2), <usize>V4 << 2);
      }
      continue;
    }
    for (let r = 0; r < R; r++) {
      const S = load<f32>(st + (<usize>r << 4), 4);
      const pa = acc + ((<usize>r * V4) << 2);
      const inv: f32 = S > 0 ? <f32>1 / S : 0;
      const pd = tAddr(node, 0) + <usize>(h0 + (r % G)) * tNb(node, 0, 1) + <usize>(t0 + r / G) * tNb(node, 0, 2) + <usize>iq3 * tNb(node, 0, 3);
      const nb0 = tNb(node, 0, 0);
      for (let d = 0; d < Dv; d++) store<f32>(pd + <usize>d * nb0, load<f32>(pa + (<usize>d << 2)) * inv);
    }
  }
}

/**
 * The split case's second step: per head, its chunks' partials folded in chunk order (a
 * chunk with nothing visible, S = 0, skipped), then divided by the sum.
 */
export function k_flash_attn_merge(node: usize, ith: i32, nth: i32): void {
  const nHead = tNe(node, 1, 2);
  const nKV = tNe(node, 2, 1);
  const Dv = tNe(node, 3, 0);
  const V4 = ceil4(Dv);
  const nBlk = (nKV + B - 1) / B;
  const part = <usize>extra(node, 4);
  const kcb = extra(node, 5);
  const nKC = (nBlk + kcb - 1) / kcb;
  const nb0 = tNb(node, 0, 0);
  for (let h = ith; h < nHead; h += nth) {
    const acc = part + <usize>(h * nKC) * partBytes(V4);
    // the first chunk with something visible is the start (scale 0 for nothing, exactly)
    let M: f32 = -Infinity;
    let S: f32 = 0;
    let first = true;
    for (let kc = 0; kc < nKC; kc++) {
      const pp = part + <usize>(h * nKC + kc) * partBytes(V4);
      const Mc = load<f32>(pp);
      const Sc = load<f32>(pp, 4);
      if (Sc == 0) continue;
      const Mn = max(M, Mc);
      const so = f32x4.extract_lane(expNeg4(f32x4.splat(M - Mn)), 0);
      const sn = f32x4.extract_lane(expNeg4(f32x4.splat(Mc - Mn)), 0);
      const o4 = f32x4.splat(so);
      const n4 = f32x4.splat(sn);
      for (let d = 0; d < V4; d += 4) {
        const pa = acc + 16 + (<usize>d << 2);
        const pc = pp + 16 + (<usize>d << 2);
        const prev = first ? f32x4.splat(0) : v128.load(pa);
        v128.store(pa, f32x4.add(f32x4.mul(prev, o4), f32x4.mul(v128.load(pc), n4)));
      }
      S = S * so + Sc * sn;
      M = Mn;
      first = false;
    }
    const inv: f32 = S > 0 ? <f32>1 / S : 0;
    const pd = tAddr(node, 0) + <usize>h * tNb(node, 0, 1);
    for (let d = 0; d < Dv; d++) store<f32>(pd + <usize>d * nb0, first ? 0 : load<f32>(acc + 16 + (<usize>d << 2)) * inv);
  }
}
