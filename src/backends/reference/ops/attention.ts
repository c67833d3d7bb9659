// FLASH_ATTN_EXT: for query token iq1 of head iq2, softmax over the KV positions of
// q·k·scale (+ mask), then the weighted sum of V rows. K/V head = iq2 / (nHead / nHeadKV)
// (grouped-query attention). Output [Dv, nHead, nQ, ne3]. Optional sinks (src[4], F32
// [nHead]): one more logit per head in every row's softmax, with no value (gpt-oss).
//
// Default arithmetic: double precision throughout. With ggml-cpu numerics, ggml-cpu's two
// paths (the choice: flashAttnTiled in ../../ggml-cpu.ts), each as the cpu device computes
// it; the one-chunk kernel (and the split case's chunks) first converts the query row to K's
// vec_dot_type (F16 for an F16 cache), the tiled kernel keeps it in f32:
// - fewer than 64 query rows (decoding, short ubatches): ggml-cpu's one-chunk kernel
//   (assembly/attention-row.ts): keys in order, hidden ones skipped, an online softmax
//   updated per key, and with an F16 V the weighted V sum kept in f16 (every update
//   rounded, as ggml_vec_mad_f16 / ggml_vec_scale_f16); otherwise in f32;
// - longer ubatches: the cpu device's tiled kernel (assembly/attention.ts), ggml-cpu's f32
//   online softmax run per block of FA_BLOCK keys (block j covers keys [jB, jB+B): one max
//   and one rescale per block; a block with no visible key is skipped) with V summed in
//   f32; the result is divided by the sum at the end;
// - one query token against 512 keys or more (flashAttnSplit, ggml-cpu's split-KV case):
//   the tiled arithmetic over each chunk of FA_SPLIT_KEYS keys from an empty state, then
//   the chunks folded in order (M = max, each side scaled by exp(M_side - M), chunks
//   with a zero sum skipped) and divided by the sum.
// A sink joins each row's softmax once, as ggml-cpu adds it: after the last key (one-row,
// tiled), or in the split case after the first chunk's keys, before the chunks are folded.
// The kernels' exp differs from this one by a few ulp and their sums may use fused
// multiply-adds: a few ulp apart, not bit-equal (NMSE ~1e-14; rarely an f16 rounding of
// the V sum goes the other way).

import { f16ToF32, f32ToF16 } from '../../../ggml/fp16.js';
import type { Tensor } from '../../../ggml/tensor.js';
import { GGMLType } from '../../../ggml/types.js';
import { FA_SPLIT_KEYS, flashAttnSplit, flashAttnTiled } from '../../ggml-cpu.js';
import { HostView } from '../access.js';
import { canRoundFor, roundToVecDotType, vecDotType } from '../vec-dot.js';
import type { KernelOptions } from './options.js';

const fround = Math.fround;

/** Keys per softmax block (assembly/attention.ts B). */
const FA_BLOCK = 32;

/** Rows [*, j, i2, i3] for j < n of a tensor, as floats. */
function readRows(v: HostView, n: number, width: number, i2: number, i3: number): Float32Array[] {
  const rows: Float32Array[] = [];
  for (let j = 0; j < n; j++) rows.push(v.readRow(new Float32Array(width), j, i2, i3));
  return rows;
}

export function flashAttnExt(dst: Tensor, o: KernelOptions = {}): void {
  if (o.ggmlCpu) ggmlFlashAttnExt(dst);
  else exactFlashAttnExt(dst);
}

function exactFlashAttnExt(dst: Tensor): void {
  const [q, k, v, mask, sinks] = dst.src;
  const vs = sinks ? new HostView(sinks) : null;
  const vq = new HostView(q);
  const vk = new HostView(k);
  const vv = new HostView(v);
  const vm = mask ? new HostView(mask) : null;
  const vd = new HostView(dst);
  const { scale, logitSoftcap } = dst.params;
  const D = q.ne[0];
  const Dv = v.ne[0];
  const nKV = k.ne[1];
  const rh = q.ne[2] / k.ne[2];
  const r3 = q.ne[3] / k.ne[3];
  const qrow = new Float32Array(D);
  const krow = new Float32Array(D);
  const vrow = new Float32Array(Dv);
  const s = new Float64Array(nKV);
  const out = new Float64Array(Dv);
  for (let iq3 = 0; iq3 < q.ne[3]; iq3++) {
    for (let iq2 = 0; iq2 < q.ne[2]; iq2++) {
      const ik2 = Math.floor(iq2 / rh);
      const ik3 = Math.floor(iq3 / r3);
      for (let iq1 = 0; iq1 < q.ne[1]; iq1++) {
        vq.readRow(qrow, iq1, iq2, iq3);
        let max = Number.NEGATIVE_INFINITY;
        for (let j = 0; j < nKV; j++) {
          vk.readRow(krow, j, ik2, ik3);
          let dot = 0;
          for (let d = 0; d < D; d++) dot += qrow[d] * krow[d];
          let x = dot * scale;
          if (logitSoftcap !== 0) x = logitSoftcap * Math.tanh(x / logitSoftcap);
          if (vm && mask) x += vm.get(j, iq1, iq2 % mask.ne[2], iq3 % mask.ne[3]);
          s[j] = x;
          if (x > max) max = x;
        }
        const sink = vs ? vs.get(iq2) : Number.NEGATIVE_INFINITY;
        if (sink > max) max = sink;
        out.fill(0);
        let sum = max === Number.NEGATIVE_INFINITY ? 0 : Math.exp(sink - max);
        for (let j = 0; j < nKV; j++) {
          const w = max === Number.NEGATIVE_INFINITY ? 0 : Math.exp(s[j] - max);
          if (w === 0) continue;
          sum += w;
          vv.readRow(vrow, j, ik2, ik3);
          for (let d = 0; d < Dv; d++) out[d] += w * vrow[d];
        }
        for (let d = 0; d < Dv; d++) vd.set(sum > 0 ? out[d] / sum : 0, d, iq2, iq1, iq3);
      }
    }
  }
}

/**
 * ggml-cpu's sink step: the head's sink logit sk joins a row's online softmax state
 * (max M, sum S, V sum acc in f32) as one more score with no value. Returns [M, S].
 */
function addSink(sk: number, M: number, S: number, acc: Float32Array): [number, number] {
  if (sk > M) {
    const ms = fround(Math.exp(M - sk));
    for (let d = 0; d < acc.length; d++) acc[d] = fround(acc[d] * ms);
    return [sk, fround(fround(S * ms) + 1)];
  }
  return [M, fround(S + fround(Math.exp(sk - M)))];
}

function ggmlFlashAttnExt(dst: Tensor): void {
  const [q, k, v, mask, sinks] = dst.src;
  const vsink = sinks ? new HostView(sinks) : null;
  const vq = new HostView(q);
  const vk = new HostView(k);
  const vv = new HostView(v);
  const vm = mask ? new HostView(mask) : null;
  const vd = new HostView(dst);
  const scale0 = fround(dst.params.scale);
  const softcap = fround(dst.params.logitSoftcap ?? 0);
  const scale = softcap !== 0 ? fround(scale0 / softcap) : scale0;
  const D = q.ne[0];
  const Dv = v.ne[0];
  const nKV = k.ne[1];
  const rk2 = q.ne[2] / k.ne[2];
  const rk3 = q.ne[3] / k.ne[3];
  const rv2 = q.ne[2] / v.ne[2];
  const rv3 = q.ne[3] / v.ne[3];
  const qrow = new Float32Array(D);
  const acc = new Float32Array(Dv);
  const s = new Float32Array(FA_BLOCK);
  const split = flashAttnSplit(q, k.type, v.type, nKV);
  const tiled = split || flashAttnTiled(q, k.type, v.type);
  // the query in K's vec_dot_type but in the tiled kernel (f32 there)
  const qType = canRoundFor(k.type, D) && (split || !tiled) ? vecDotType(k.type) : GGMLType.F32;
  const chunk = split ? FA_SPLIT_KEYS : nKV;
  const fin = new Float32Array(Dv);
  // the one-chunk kernel keeps an F16 V's sum in f16
  const h16 = v.type === GGMLType.F16 ? (x: number) => f16ToF32(f32ToF16(x)) : fround;
  const cacheK = new Map<string, Float32Array[]>();
  const cacheV = new Map<string, Float32Array[]>();
  for (let iq3 = 0; iq3 < q.ne[3]; iq3++) {
    for (let iq2 = 0; iq2 < q.ne[2]; iq2++) {
      const ik2 = Math.floor(iq2 / rk2);
      const ik3 = Math.floor(iq3 / rk3);
      const iv2 = Math.floor(iq2 / rv2);
      const iv3 = Math.floor(iq3 / rv3);
      const kKey = `${ik2}:${ik3}`;
      const vKey = `${iv2}:${iv3}`;
      if (!cacheK.has(kKey)) cacheK.set(kKey, readRows(vk, nKV, D, ik2, ik3));
      if (!cacheV.has(vKey)) cacheV.set(vKey, readRows(vv, nKV, Dv, iv2, iv3));
      const krows = cacheK.get(kKey)!;
      const vrows = cacheV.get(vKey)!;
      for (let iq1 = 0; iq1 < q.ne[1]; iq1++) {
        vq.readRow(qrow, iq1, iq2, iq3);
        roundToVecDotType(qType, qrow, D);
        if (!tiled) {
          // ggml-cpu's one-chunk kernel
          acc.fill(0);
          let S = 0;
          let M = Number.NEGATIVE_INFINITY;
          for (let j = 0; j < nKV; j++) {
            const mv = vm && mask ? vm.get(j, iq1, iq2 % mask.ne[2], iq3 % mask.ne[3]) : 0;
            if (mv === Number.NEGATIVE_INFINITY) continue;
            const kr = krows[j];
            let dot = 0;
            for (let d = 0; d < D; d++) dot = fround(dot + qrow[d] * kr[d]);
            let x = fround(dot * scale);
            if (softcap !== 0) x = fround(softcap * Math.tanh(x));
            x = fround(x + mv);
            let ms = 1;
            let vs = 1;
            if (x > M) {
              ms = fround(Math.exp(M - x));
              M = x;
              for (let d = 0; d < Dv; d++) acc[d] = h16(acc[d] * ms);
            } else {
              vs = fround(Math.exp(x - M));
            }
            const vr = vrows[j];
            for (let d = 0; d < Dv; d++) acc[d] = h16(fround(acc[d] + vr[d] * vs));
            S = fround(fround(S * ms) + vs);
          }
          if (vsink) [M, S] = addSink(fround(vsink.get(iq2)), M, S, acc);
          const inv = S === 0 ? 0 : fround(1 / S);
          for (let d = 0; d < Dv; d++) vd.set(fround(acc[d] * inv), d, iq2, iq1, iq3);
          continue;
        }
        // tiled (split: per chunk, folded into fin / Sf / Mf)
        fin.fill(0);
        let Sf = 0;
        let Mf = Number.NEGATIVE_INFINITY;
        for (let c0 = 0; c0 < nKV; c0 += chunk) {
          acc.fill(0);
          let S = 0;
          let M = Number.NEGATIVE_INFINITY;
          for (let j0 = c0; j0 < Math.min(c0 + chunk, nKV); j0 += FA_BLOCK) {
            const j1 = Math.min(j0 + FA_BLOCK, nKV);
            let mx = Number.NEGATIVE_INFINITY;
            for (let j = j0; j < j1; j++) {
              const mv = vm && mask ? vm.get(j, iq1, iq2 % mask.ne[2], iq3 % mask.ne[3]) : 0;
              let x = Number.NEGATIVE_INFINITY;
              if (mv !== Number.NEGATIVE_INFINITY) {
                const kr = krows[j];
                let dot = 0;
                for (let d = 0; d < D; d++) dot = fround(dot + qrow[d] * kr[d]);
                x = fround(dot * scale);
                if (softcap !== 0) x = fround(softcap * Math.tanh(x));
                x = fround(x + mv);
              }
              s[j - j0] = x;
              if (x > mx) mx = x;
            }
            // a block with nothing visible leaves the row as it is
            if (mx === Number.NEGATIVE_INFINITY) continue;
            const Mn = Math.max(M, mx);
            const ms = fround(Math.exp(M - Mn));
            let bs = 0;
            for (let j = j0; j < j1; j++) {
              s[j - j0] = fround(Math.exp(s[j - j0] - Mn));
              bs = fround(bs + s[j - j0]);
            }
            S = fround(fround(S * ms) + bs);
            M = Mn;
            for (let d = 0; d < Dv; d++) {
              let a = fround(acc[d] * ms);
              for (let j = j0; j < j1; j++) a = fround(a + s[j - j0] * vrows[j][d]);
              acc[d] = a;
            }
          }
          // the sink: after the last key, or (split) with the first chunk only
          if (vsink && c0 === 0) [M, S] = addSink(fround(vsink.get(iq2)), M, S, acc);
          if (!split) {
            fin.set(acc);
            Sf = S;
            continue;
          }
          if (S === 0) continue;
          const Mn = Math.max(Mf, M);
          const so = fround(Math.exp(Mf - Mn));
          const sn = fround(Math.exp(M - Mn));
          for (let d = 0; d < Dv; d++) fin[d] = fround(fround(fin[d] * so) + fround(acc[d] * sn));
          Sf = fround(fround(Sf * so) + fround(S * sn));
          Mf = Mn;
        }
        const inv = Sf === 0 ? 0 : fround(1 / Sf);
        for (let d = 0; d < Dv; d++) vd.set(fin[d] * inv, d, iq2, iq1, iq3);
      }
    }
  }
}
