// FLASH_ATTN_EXT: for query token iq1 of head iq2, softmax over the KV positions of
// q·k·scale (+ mask), then the weighted sum of V rows. K/V head = iq2 / (nHead / nHeadKV)
// (grouped-query attention). Output [Dv, nHead, nQ, ne3].

import type { Tensor } from '../../../ggml/tensor.js';
import { HostView } from '../access.js';

export function flashAttnExt(dst: Tensor): void {
  const [q, k, v, mask] = dst.src;
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
        out.fill(0);
        let sum = 0;
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
