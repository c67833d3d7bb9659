// FLASH_ATTN_EXT: for each query row (token iq1, head iq2), an online softmax over the
// KV positions of q·k·scale (softcap, + mask), accumulating the V rows. K/V head is
// iq2 / (nHead / nHeadKV). t1 = q, t2 = k, t3 = v, t4 = mask (type -1 when absent).
// Numerics follow ggml-cpu (see k_flash_attn), so results stay llama.cpp's.

import { ldf } from './access';
import { extra, param, share0, tAddr, tNb, tNe, tType } from './desc';
import { f16x4, roundF16x4 } from './consts';
import { exp64, f16ToF32, f32ToF16, tanh64 } from './math';
import { roundActRow } from './vecdot';
import { readRow } from './rows';
import { T_F16, T_F32 } from './types';

@inline function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + (f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3));
}

function dotF32Row(x: usize, y: usize, n: i32): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const o = <usize>i << 2;
    a0 = f32x4.add(a0, f32x4.mul(v128.load(x + o), v128.load(y + o)));
    a1 = f32x4.add(a1, f32x4.mul(v128.load(x + o, 16), v128.load(y + o, 16)));
  }
  let s = hsum(f32x4.add(a0, a1));
  for (; i < n; i++) s += load<f32>(x + (<usize>i << 2)) * load<f32>(y + (<usize>i << 2));
  return s;
}

function dotF16Row(x: usize, h: usize, n: i32): f32 {
  let a0 = f32x4.splat(0);
  let a1 = f32x4.splat(0);
  let i = 0;
  for (; i + 8 <= n; i += 8) {
    const k0 = f16x4(v128.load16x4_u(h + (<usize>i << 1)));
    const k1 = f16x4(v128.load16x4_u(h + (<usize>i << 1), 8));
    a0 = f32x4.add(a0, f32x4.mul(v128.load(x + (<usize>i << 2)), k0));
    a1 = f32x4.add(a1, f32x4.mul(v128.load(x + (<usize>i << 2), 16), k1));
  }
  let s = hsum(f32x4.add(a0, a1));
  for (; i < n; i++) s += load<f32>(x + (<usize>i << 2)) * ldf(h + (<usize>i << 1), T_F16);
  return s;
}

/** acc[0..n) *= ms, rounded to f16 after the product when f16 is set. */
function scaleAcc(acc: usize, n: i32, ms: f32, f16: bool): void {
  const m4 = f32x4.splat(ms);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    const x = f32x4.mul(v128.load(acc + o), m4);
    v128.store(acc + o, f16 ? roundF16x4(x) : x);
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const x = load<f32>(acc + o) * ms;
    store<f32>(acc + o, f16 ? f16ToF32(f32ToF16(x)) : x);
  }
}

/**
 * acc[0..n) += v * vs with one rounding (fused), v an F16 row (accumulator kept at f16
 * precision, as ggml-cpu's F16 VKQ accumulator) or f32.
 */
function accumulate(acc: usize, v: usize, vType: i32, n: i32, vs: f32): void {
  const v4 = f32x4.splat(vs);
  let i = 0;
  if (vType == T_F16) {
    for (; i + 4 <= n; i += 4) {
      const o = <usize>i << 2;
      const x = f16x4(v128.load16x4_u(v + (<usize>i << 1)));
      v128.store(acc + o, roundF16x4(fma4(x, v4, v128.load(acc + o))));
    }
    for (; i < n; i++) {
      const o = <usize>i << 2;
      const x = <f64>ldf(v + (<usize>i << 1), T_F16) * <f64>vs + <f64>load<f32>(acc + o);
      store<f32>(acc + o, f16ToF32(f32ToF16(<f32>x)));
    }
    return;
  }
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(acc + o, fma4(v128.load(v + o), v4, v128.load(acc + o)));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    store<f32>(acc + o, <f32>(<f64>load<f32>(v + o) * <f64>vs + <f64>load<f32>(acc + o)));
  }
}

/** acc[0..n) += v * vs as accumulate's F16 path, for a V row already converted to f32 (exactly). */
function accumulateF16f32(acc: usize, v: usize, n: i32, vs: f32): void {
  const v4 = f32x4.splat(vs);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const o = <usize>i << 2;
    v128.store(acc + o, roundF16x4(fma4(v128.load(v + o), v4, v128.load(acc + o))));
  }
  for (; i < n; i++) {
    const o = <usize>i << 2;
    const x = <f64>load<f32>(v + o) * <f64>vs + <f64>load<f32>(acc + o);
    store<f32>(acc + o, f16ToF32(f32ToF16(<f32>x)));
  }
}

/** n f16 values at h to f32 at x (exact). */
function widenF16(h: usize, x: usize, n: i32): void {
  let i = 0;
  for (; i + 4 <= n; i += 4) v128.store(x + (<usize>i << 2), f16x4(v128.load16x4_u(h + (<usize>i << 1))));
  for (; i < n; i++) store<f32>(x + (<usize>i << 2), ldf(h + (<usize>i << 1), T_F16));
}

/** a + x*y rounded once: exact with relaxed SIMD (fma), else through f64. */
@inline function fma4(x: v128, y: v128, a: v128): v128 {
  if (ASC_FEATURE_RELAXED_SIMD) return f32x4.relaxed_madd(x, y, a);
  const lo = f64x2.add(f64x2.mul(f64x2.promote_low_f32x4(x), f64x2.promote_low_f32x4(y)), f64x2.promote_low_f32x4(a));
  const xh = v128.shuffle<f32>(x, x, 2, 3, 0, 1);
  const yh = v128.shuffle<f32>(y, y, 2, 3, 0, 1);
  const ah = v128.shuffle<f32>(a, a, 2, 3, 0, 1);
  const hi = f64x2.add(f64x2.mul(f64x2.promote_low_f32x4(xh), f64x2.promote_low_f32x4(yh)), f64x2.promote_low_f32x4(ah));
  return v128.shuffle<f32>(f32x4.demote_f64x2_zero(lo), f32x4.demote_f64x2_zero(hi), 0, 1, 4, 5);
}

/**
 * Arithmetic as ggml-cpu's one-row kernel (flash_attn_ext_f16_one_chunk): the query row
 * rounded to K's vec_dot_type (extra 2), scores in f32, online softmax, V summed with one
 * rounding per step (at f16 precision for an F16 V), divided by the sum at the end.
 */
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
  const tk = tType(node, 2);
  const tv = tType(node, 3);
  const tm = tType(node, 4);
  const qRound = extra(node, 2);
  const kDirect = (tk == T_F16 || tk == T_F32) && tNb(node, 2, 0) == (tk == T_F16 ? 2 : 4);
  const vDirect = (tv == T_F16 || tv == T_F32) && tNb(node, 3, 0) == (tv == T_F16 ? 2 : 4);
  const vF16 = tv == T_F16;
  const base = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const qrow = base;
  const acc = qrow + ((<usize>D * 4 + 15) & ~15);
  const krow = acc + ((<usize>Dv * 4 + 15) & ~15);
  const vrow = krow + ((<usize>D * 4 + 15) & ~15);
  // with extra 3: the K and V rows of the current KV head in f32, converted once per head
  // (the dots and sums are the same operations on the same values, so the same bits)
  const cached = extra(node, 3) != 0 && kDirect && vDirect && tk == T_F16 && vF16;
  const kc = (vrow + ((<usize>Dv * 4 + 15) & ~15) + 63) & ~63;
  const vc = kc + <usize>nKV * <usize>D * 4;
  let cK2 = -1;
  let cK3 = -1;
  const nr = nQ * nHead * ne3;
  const r0 = share0(nr, ith, nth);
  const r1 = share0(nr, ith + 1, nth);
  for (let r = r0; r < r1; r++) {
    const iq1 = r % nQ;
    const q = r / nQ;
    const iq2 = q % nHead;
    const iq3 = q / nHead;
    const ik2 = iq2 / rk2;
    const ik3 = iq3 / rk3;
    const iv2 = iq2 / rv2;
    const iv3 = iq3 / rv3;
    readRow(node, 1, iq1, iq2, iq3, qrow);
    roundActRow(qRound, qrow, D);
    memory.fill(acc, 0, <usize>Dv << 2);
    if (cached && (ik2 != cK2 || ik3 != cK3)) {
      cK2 = ik2;
      cK3 = ik3;
      for (let j = 0; j < nKV; j++) {
        const pk = tAddr(node, 2) + <usize>j * tNb(node, 2, 1) + <usize>ik2 * tNb(node, 2, 2) + <usize>ik3 * tNb(node, 2, 3);
        widenF16(pk, kc + <usize>j * <usize>D * 4, D);
        const pv = tAddr(node, 3) + <usize>j * tNb(node, 3, 1) + <usize>iv2 * tNb(node, 3, 2) + <usize>iv3 * tNb(node, 3, 3);
        widenF16(pv, vc + <usize>j * <usize>Dv * 4, Dv);
      }
    }
    let M: f32 = -Infinity;
    let S: f32 = 0;
    const pm = tm >= 0
      ? tAddr(node, 4) + <usize>iq1 * tNb(node, 4, 1) + <usize>(iq2 % tNe(node, 4, 2)) * tNb(node, 4, 2) +
        <usize>(iq3 % tNe(node, 4, 3)) * tNb(node, 4, 3)
      : 0;
    for (let j = 0; j < nKV; j++) {
      let mv: f32 = 0;
      if (tm >= 0) {
        mv = ldf(pm + <usize>j * tNb(node, 4, 0), tm);
        if (mv == -Infinity) continue;
      }
      let s: f32;
      if (cached) {
        s = dotF32Row(qrow, kc + <usize>j * <usize>D * 4, D);
      } else if (kDirect) {
        const pk = tAddr(node, 2) + <usize>j * tNb(node, 2, 1) + <usize>ik2 * tNb(node, 2, 2) + <usize>ik3 * tNb(node, 2, 3);
        s = tk == T_F16 ? dotF16Row(qrow, pk, D) : dotF32Row(qrow, pk, D);
      } else {
        readRow(node, 2, j, ik2, ik3, krow);
        s = dotF32Row(qrow, krow, D);
      }
      s *= scale;
      if (softcap != 0) s = <f32>(<f64>softcap * tanh64(<f64>s));
      s += mv;
      let ms: f32 = 1;
      let vs: f32 = 1;
      if (s > M) {
        const old = M;
        M = s;
        ms = <f32>exp64(<f64>(old - M));
        scaleAcc(acc, Dv, ms, vF16);
      } else {
        vs = <f32>exp64(<f64>(s - M));
      }
      if (cached) {
        accumulateF16f32(acc, vc + <usize>j * <usize>Dv * 4, Dv, vs);
      } else if (vDirect) {
        const pv = tAddr(node, 3) + <usize>j * tNb(node, 3, 1) + <usize>iv2 * tNb(node, 3, 2) + <usize>iv3 * tNb(node, 3, 3);
        accumulate(acc, pv, tv, Dv, vs);
      } else {
        readRow(node, 3, j, iv2, iv3, vrow);
        accumulate(acc, vrow, T_F32, Dv, vs);
      }
      S = <f32>(<f64>S * <f64>ms + <f64>vs);
    }
    const inv: f32 = S > 0 ? <f32>1 / S : 0;
    const pd = tAddr(node, 0) + <usize>iq2 * tNb(node, 0, 1) + <usize>iq1 * tNb(node, 0, 2) + <usize>iq3 * tNb(node, 0, 3);
    for (let d = 0; d < Dv; d++) store<f32>(pd + <usize>d * tNb(node, 0, 0), load<f32>(acc + (<usize>d << 2)) * inv);
  }
}
