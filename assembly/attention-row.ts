// FLASH_ATTN_EXT one query row at a time, as ggml-cpu's one-chunk kernel computes it: what
// llama.cpp runs for ubatches of fewer than 64 tokens (decoding included) and for K/V
// types its tiled kernel does not take. t1 = q, t2 = k, t3 = v, t4 = mask, t5 = sinks (F32
// [nHead]), each type -1 when absent; K/V head iq2 / (nHead / nHeadKV).
//
// For each row, the keys in order: a key the mask hides is skipped; s = q·k·scale (q
// rounded to K's vec_dot_type), soft-capped, plus the mask; an online softmax updated per
// key (a new maximum rescales the sum). With an F16 V the weighted sum of V rows is kept
// in f16, every update rounded to f16 (ggml_vec_scale_f16 / ggml_vec_mad_f16); otherwise
// in f32. After the last key, a head's sink joins as one more score without a value (the
// V sum, now f32, rescaled when it is the new maximum), as ggml-cpu adds it. The f16 rounding is Veltkamp's split (c = x·(2^13+1), c - (c - x)): round to
// nearest even at f16's precision, exact for f16's normal range; values below it keep
// that relative precision and values beyond it stay finite where an f16 would not.
//
// A unit is one token and some heads that share a K/V head: each K and V row is widened
// once for all of them. A row's arithmetic is the same in any unit, so any grouping, any
// split over threads and any batch give the same bits. The reference device's ggml-cpu
// numerics (src/backends/reference/ops/attention.ts) describe the same arithmetic.
//
// Per-thread scratch (encode.ts faRowScratchBytes mirrors it), for up to GMAX heads:
// q GMAX x D4 f32, acc GMAX x V4 f32, state GMAX x 4 f32 (M, S, mask, q·k then the key's
// weight), k D4 f32, v V4 f32.

import { ldf } from './access';
import { C_8193, f16x4, roundF16x4, widenF16Row } from './consts';
import { extra, param, tAddr, tNb, tNe, tType } from './desc';
import { expf, tanh64 } from './math';
import { readRow } from './rows';
import { T_F16 } from './types';
import { ROUND_F16, roundActRow } from './vecdot';

/** Most heads in a unit (the scratch is sized for it). */
const GMAX: i32 = 32;

@inline function ceil4(n: i32): i32 {
  return (n + 3) & ~3;
}

/** a*b + c: fused with relaxed SIMD, else a product and a sum (each build always the same). */
@inline function madd(a: v128, b: v128, c: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(f32x4.mul(a, b), c);
}

/** Four f32 rounded to f16 precision (Veltkamp's split at 13 bits: round to nearest even). */
@inline function toF16Precision(x: v128): v128 {
  const c = f32x4.mul(x, C_8193());
  return f32x4.sub(c, f32x4.sub(c, x));
}

/** The four partial sums of a dot (lanes 0-3) added as (0 + 1) + (2 + 3). */
@inline function hsum4(a: v128): f32 {
  return f32x4.extract_lane(a, 0) + f32x4.extract_lane(a, 1) + (f32x4.extract_lane(a, 2) + f32x4.extract_lane(a, 3));
}

/**
 * Σ q[d]·k[d] over D4 (a multiple of 4) f32 lanes, four partial sums, for the query rows
 * of four heads at q (stride qs) against one key k; each head's dot to st + 12 (state
 * stride 16). The four dots run side by side: one dot alone is a chain of dependent
 * multiply-adds (its latency, not the machine's throughput, set the pace). Each head's
 * arithmetic is the one-row dot's.
 */
function dots4(q: usize, qs: usize, k: usize, D4: i32, st: usize): void {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let a2 = f32x4.splat(0);
  let a3 = f32x4.splat(0);
  for (let d = 0; d < D4; d += 4) {
    const o = <usize>d << 2;
    const kv = v128.load(k + o);
    a0 = madd(v128.load(q + o), kv, a0);
    a1 = madd(v128.load(q + qs + o), kv, a1);
    a2 = madd(v128.load(q + 2 * qs + o), kv, a2);
    a3 = madd(v128.load(q + 3 * qs + o), kv, a3);
  }
  store<f32>(st, hsum4(a0), 12);
  store<f32>(st, hsum4(a1), 28);
  store<f32>(st, hsum4(a2), 44);
  store<f32>(st, hsum4(a3), 60);
}

/**
 * acc = acc + v·w for the V sums of four heads (at acc, stride as) and one V row, each
 * head's weight w at st + 12 (state stride 16); with f16 sums each result rounded to f16
 * precision. One V load serves four heads; each head's arithmetic is addV1's.
 */
@inline function addV4(acc: usize, as: usize, v: usize, V4: i32, st: usize, f16: bool): void {
  const w0 = v128.load32_splat(st + 12);
  const w1 = v128.load32_splat(st + 28);
  const w2 = v128.load32_splat(st + 44);
  const w3 = v128.load32_splat(st + 60);
  for (let d = 0; d < V4; d += 4) {
    const o = <usize>d << 2;
    const x = v128.load(v + o);
    const p0 = acc + o;
    const p1 = p0 + as;
    const p2 = p1 + as;
    const p3 = p2 + as;
    const y0 = madd(x, w0, v128.load(p0));
    const y1 = madd(x, w1, v128.load(p1));
    const y2 = madd(x, w2, v128.load(p2));
    const y3 = madd(x, w3, v128.load(p3));
    v128.store(p0, f16 ? toF16Precision(y0) : y0);
    v128.store(p1, f16 ? toF16Precision(y1) : y1);
    v128.store(p2, f16 ? toF16Precision(y2) : y2);
    v128.store(p3, f16 ? toF16Precision(y3) : y3);
  }
}

/** addV4 for one head. */
function addV1(acc: usize, v: usize, V4: i32, st: usize, f16: bool): void {
  const w = v128.load32_splat(st + 12);
  if (f16) {
    for (let d = 0; d < V4; d += 4) v128.store(acc + (<usize>d << 2), toF16Precision(madd(v128.load(v + (<usize>d << 2)), w, v128.load(acc + (<usize>d << 2)))));
  } else {
    for (let d = 0; d < V4; d += 4) v128.store(acc + (<usize>d << 2), madd(v128.load(v + (<usize>d << 2)), w, v128.load(acc + (<usize>d << 2))));
  }
}

/** dots4 for one head. */
function dot1(q: usize, k: usize, D4: i32, st: usize): void {
  let a = f32x4.splat(0);
  for (let d = 0; d < D4; d += 4) a = madd(v128.load(q + (<usize>d << 2)), v128.load(k + (<usize>d << 2)), a);
  store<f32>(st, hsum4(a), 12);
}

/** Heads per unit: a GQA group, split further when there are fewer units than threads. */
export function rowUnitHeads(nQ: i32, nHead: i32, rk2: i32, ne3: i32, nth: i32): i32 {
  let g = min(rk2, GMAX);
  const groups = nQ * ne3 * ((nHead + g - 1) / g);
  if (groups < nth) g = max(1, (g * groups + nth - 1) / nth);
  return g;
}

/** The mask row of token iq1, head h. */
@inline function maskRow(node: usize, iq1: i32, h: i32, iq3: i32): usize {
  return (
    tAddr(node, 4) +
    <usize>iq1 * tNb(node, 4, 1) +
    <usize>(h % tNe(node, 4, 2)) * tNb(node, 4, 2) +
    <usize>(iq3 % tNe(node, 4, 3)) * tNb(node, 4, 3)
  );
}

/** Mask value j of a mask row (-inf: hidden). */
@inline function maskAt(pm: usize, j: i32, nb0: usize, tm: i32): f32 {
  if (tm == T_F16 && nb0 == 2) {
    const h = load<u16>(pm + (<usize>j << 1));
    return h == 0xfc00 ? -Infinity : ldf(pm + (<usize>j << 1), tm);
  }
  return ldf(pm + <usize>j * nb0, tm);
}

export function k_flash_attn_row(node: usize, ith: i32, nth: i32): void {
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
  const kF16 = tType(node, 2) == T_F16 && tNb(node, 2, 0) == 2 && (D & 3) == 0;
  const vF16 = tType(node, 3) == T_F16;
  const vF16Rows = vF16 && tNb(node, 3, 0) == 2 && (Dv & 3) == 0;
  // heads sharing a K/V head form a unit (K and V rows are shared only when both agree)
  const share = rk2 == rv2 ? rk2 : 1;
  const G = rowUnitHeads(nQ, nHead, share, ne3, nth);
  const chunks = (share + G - 1) / G;
  const units = nQ * ne3 * (nHead / share) * chunks;

  const base = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const qs = (<usize>D4) << 2;
  const as = (<usize>V4) << 2;
  const qb = base;
  const accb = qb + <usize>GMAX * qs;
  const stb = accb + <usize>GMAX * as;
  const kr = stb + ((<usize>GMAX) << 4);
  const vr = kr + qs;
  memory.fill(kr, 0, qs);
  memory.fill(vr, 0, as);

  for (let u = ith; u < units; u += nth) {
    const ch = u % chunks;
    let rest = u / chunks;
    const grp = rest % (nHead / share);
    rest /= nHead / share;
    const iq1 = rest % nQ;
    const iq3 = rest / nQ;
    const h0 = grp * share + ch * G;
    const gn = min(G, grp * share + share - h0);
    const ik2 = h0 / rk2;
    const ik3 = iq3 / rk3;
    const iv2 = h0 / rv2;
    const iv3 = iq3 / rv3;
    for (let g = 0; g < gn; g++) {
      const q = qb + <usize>g * qs;
      readRow(node, 1, iq1, h0 + g, iq3, q);
      for (let d = D; d < D4; d++) store<f32>(q + (<usize>d << 2), 0);
      if (qRound == ROUND_F16) {
        for (let d = 0; d < D4; d += 4) v128.store(q + (<usize>d << 2), roundF16x4(v128.load(q + (<usize>d << 2))));
      } else {
        roundActRow(qRound, q, D);
      }
      memory.fill(accb + <usize>g * as, 0, as);
      const st = stb + (<usize>g << 4);
      store<f32>(st, -Infinity);
      store<f32>(st, 0, 4);
    }
    // mask rows: one per head, or one for all when the mask is broadcast over heads
    const pm0: usize = tm >= 0 ? maskRow(node, iq1, h0, iq3) : 0;
    const maskPerHead = tm >= 0 && tNe(node, 4, 2) > 1;
    const kBase = tAddr(node, 2) + <usize>ik2 * tNb(node, 2, 2) + <usize>ik3 * tNb(node, 2, 3);
    const vBase = tAddr(node, 3) + <usize>iv2 * tNb(node, 3, 2) + <usize>iv3 * tNb(node, 3, 3);
    for (let j = 0; j < nKV; j++) {
      // the mask value of each head; a key no head sees is skipped
      let any = false;
      if (maskPerHead) {
        for (let g = 0; g < gn; g++) {
          const mv = maskAt(maskRow(node, iq1, h0 + g, iq3), j, mnb0, tm);
          store<f32>(stb + (<usize>g << 4), mv, 8);
          any = any || mv != -Infinity;
        }
      } else {
        const mv: f32 = tm >= 0 ? maskAt(pm0, j, mnb0, tm) : 0;
        any = mv != -Infinity;
        if (any) for (let g = 0; g < gn; g++) store<f32>(stb + (<usize>g << 4), mv, 8);
      }
      if (!any) continue;
      const kp = kr;
      if (kF16) {
        widenF16Row(kBase + <usize>j * tNb(node, 2, 1), kr, D4);
      } else {
        readRow(node, 2, j, ik2, ik3, kr);
      }
      if (vF16Rows) widenF16Row(vBase + <usize>j * tNb(node, 3, 1), vr, V4);
      else readRow(node, 3, j, iv2, iv3, vr);
      // every head's dot first, four at a time (a hidden head's is computed and not used)
      let g4 = 0;
      for (; g4 + 4 <= gn; g4 += 4) dots4(qb + <usize>g4 * qs, qs, kp, D4, stb + (<usize>g4 << 4));
      for (; g4 < gn; g4++) dot1(qb + <usize>g4 * qs, kp, D4, stb + (<usize>g4 << 4));
      // each head's softmax step (a new maximum rescales its V sum), its weight for this
      // key to st + 12 in place of the dot
      for (let g = 0; g < gn; g++) {
        const st = stb + (<usize>g << 4);
        const mv = load<f32>(st, 8);
        if (mv == -Infinity) continue;
        let s = load<f32>(st, 12) * scale;
        if (softcap != 0) s = <f32>(<f64>softcap * tanh64(<f64>s));
        s += mv;
        const M = load<f32>(st);
        let ms: f32 = 1;
        let vs: f32 = 1;
        if (s > M) {
          ms = expf(M - s);
          store<f32>(st, s);
          const acc = accb + <usize>g * as;
          const m4 = f32x4.splat(ms);
          if (vF16) {
            for (let d = 0; d < V4; d += 4) v128.store(acc + (<usize>d << 2), toF16Precision(f32x4.mul(v128.load(acc + (<usize>d << 2)), m4)));
          } else {
            for (let d = 0; d < V4; d += 4) v128.store(acc + (<usize>d << 2), f32x4.mul(v128.load(acc + (<usize>d << 2)), m4));
          }
        } else {
          vs = expf(s - M);
        }
        store<f32>(st, load<f32>(st, 4) * ms + vs, 4);
        store<f32>(st, vs, 12);
      }
      // then the V row into the sums, four heads a pass where all four see the key
      let g = 0;
      for (; g + 4 <= gn; g += 4) {
        const st = stb + (<usize>g << 4);
        if (load<f32>(st, 8) != -Infinity && load<f32>(st, 24) != -Infinity && load<f32>(st, 40) != -Infinity && load<f32>(st, 56) != -Infinity) {
          if (vF16) addV4(accb + <usize>g * as, as, vr, V4, st, true);
          else addV4(accb + <usize>g * as, as, vr, V4, st, false);
        } else {
          for (let k = 0; k < 4; k++) if (load<f32>(st + (<usize>k << 4), 8) != -Infinity) addV1(accb + <usize>(g + k) * as, vr, V4, st + (<usize>k << 4), vF16);
        }
      }
      for (; g < gn; g++) {
        const st = stb + (<usize>g << 4);
        if (load<f32>(st, 8) != -Infinity) addV1(accb + <usize>g * as, vr, V4, st, vF16);
      }
    }
    if (tType(node, 5) >= 0) {
      for (let g = 0; g < gn; g++) {
        const st = stb + (<usize>g << 4);
        const acc = accb + <usize>g * as;
        const sk = ldf(tAddr(node, 5) + <usize>(h0 + g) * tNb(node, 5, 0), tType(node, 5));
        const M = load<f32>(st);
        const S = load<f32>(st, 4);
        if (sk > M) {
          const ms = expf(M - sk);
          const m4 = f32x4.splat(ms);
          for (let d = 0; d < V4; d += 4) v128.store(acc + (<usize>d << 2), f32x4.mul(v128.load(acc + (<usize>d << 2)), m4));
          store<f32>(st, sk);
          store<f32>(st, S * ms + 1, 4);
        } else {
          store<f32>(st, S + expf(sk - M), 4);
        }
      }
    }
    const nb0 = tNb(node, 0, 0);
    for (let g = 0; g < gn; g++) {
      const S = load<f32>(stb + (<usize>g << 4), 4);
      const inv: f32 = S == 0 ? 0 : <f32>1 / S;
      const acc = accb + <usize>g * as;
      const pd = tAddr(node, 0) + <usize>(h0 + g) * tNb(node, 0, 1) + <usize>iq1 * tNb(node, 0, 2) + <usize>iq3 * tNb(node, 0, 3);
      for (let d = 0; d < Dv; d++) store<f32>(pd + <usize>d * nb0, load<f32>(acc + (<usize>d << 2)) * inv);
    }
  }
}
