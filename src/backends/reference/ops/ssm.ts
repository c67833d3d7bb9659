// Recurrent layers: the causal convolution (SSM_CONV), Mamba's selective scan (SSM_SCAN),
// the gated delta rule (GATED_DELTA_NET), and the row norm and activations around them
// (L2_NORM, SOFTPLUS, RELU, SQR). Straight from the definitions, in double precision.

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';

function unary(dst: Tensor, f: (x: number) => number): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  forEachRow(dst.ne, (i1, i2, i3) => {
    for (let i0 = 0; i0 < dst.ne[0]; i0++) vd.set(f(va.get(i0, i1, i2, i3)), i0, i1, i2, i3);
  });
}

/** ggml's softplus: x above 20, else log(1 + eˣ). */
export function softplusOf(x: number): number {
  return x > 20 ? x : Math.log(1 + Math.exp(x));
}

export function softplus(dst: Tensor): void {
  unary(dst, softplusOf);
}

export function relu(dst: Tensor): void {
  unary(dst, (x) => Math.max(x, 0));
}

export function sqr(dst: Tensor): void {
  unary(dst, (x) => x * x);
}

export function l2Norm(dst: Tensor): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const eps = dst.params.eps;
  forEachRow(dst.ne, (i1, i2, i3) => {
    let sum = 0;
    for (let i0 = 0; i0 < n; i0++) sum += va.get(i0, i1, i2, i3) ** 2;
    const s = 1 / Math.max(Math.sqrt(sum), eps);
    for (let i0 = 0; i0 < n; i0++) vd.set(va.get(i0, i1, i2, i3) * s, i0, i1, i2, i3);
  });
}

export function ssmConv(dst: Tensor): void {
  const [sx, c] = dst.src;
  const vs = new HostView(sx);
  const vc = new HostView(c);
  const vd = new HostView(dst);
  const dConv = c.ne[0];
  const [channels, nT, nS] = dst.ne;
  for (let s = 0; s < nS; s++) {
    for (let t = 0; t < nT; t++) {
      for (let ch = 0; ch < channels; ch++) {
        let sum = 0;
        for (let i = 0; i < dConv; i++) sum += vs.get(t + i, ch, s) * vc.get(i, ch);
        vd.set(sum, ch, t, s);
      }
    }
  }
}

export function ssmScan(dst: Tensor): void {
  const [s0, x, dt, A, B, C] = dst.src;
  const [dState, headDim, nHead, nS] = s0.ne;
  const nT = x.ne[2];
  const nGroup = B.ne[1];
  const vs = new HostView(s0);
  const vx = new HostView(x);
  const vdt = new HostView(dt);
  const vA = new HostView(A);
  const vB = new HostView(B);
  const vC = new HostView(C);
  const out = new HostView(dst);
  const yCount = x.nelements;
  const state = new Float64Array(dState);
  for (let s = 0; s < nS; s++) {
    for (let h = 0; h < nHead; h++) {
      const g = Math.floor(h / (nHead / nGroup));
      for (let d = 0; d < headDim; d++) {
        for (let i = 0; i < dState; i++) state[i] = vs.get(i, d, h, s);
        for (let t = 0; t < nT; t++) {
          const dtSp = softplusOf(vdt.get(h, t, s));
          const xdt = vx.get(d, h, t, s) * dtSp;
          let y = 0;
          for (let i = 0; i < dState; i++) {
            const decay = Math.exp(dtSp * vA.get(A.ne[0] === 1 ? 0 : i, h));
            state[i] = state[i] * decay + vB.get(i, g, t, s) * xdt;
            y += state[i] * vC.get(i, g, t, s);
          }
          out.set(y, d + headDim * (h + nHead * (t + nT * s)));
        }
        for (let i = 0; i < dState; i++) out.set(state[i], yCount + i + dState * (d + headDim * (h + nHead * s)));
      }
    }
  }
}

export function gatedDeltaNet(dst: Tensor): void {
  const [q, k, v, g, beta, st] = dst.src;
  const [S, Hv, nT, nS] = v.ne;
  const Hk = q.ne[1];
  const vq = new HostView(q);
  const vk = new HostView(k);
  const vv = new HostView(v);
  const vg = new HostView(g);
  const vb = new HostView(beta);
  const vs = new HostView(st);
  const out = new HostView(dst);
  const perElement = g.ne[0] === S;
  const scale = 1 / Math.sqrt(S);
  const oCount = S * Hv * nT * nS;
  // M[j][i] = S[i][j]: row j of the stored state
  const M = new Float64Array(S * S);
  const delta = new Float64Array(S);
  for (let s = 0; s < nS; s++) {
    for (let h = 0; h < Hv; h++) {
      const hk = h % Hk;
      for (let j = 0; j < S; j++) for (let i = 0; i < S; i++) M[j * S + i] = vs.get(i, j, h, s);
      for (let t = 0; t < nT; t++) {
        for (let j = 0; j < S; j++) {
          for (let i = 0; i < S; i++) M[j * S + i] *= Math.exp(vg.get(perElement ? i : 0, h, t, s));
        }
        const b = vb.get(0, h, t, s);
        for (let j = 0; j < S; j++) {
          let sum = 0;
          for (let i = 0; i < S; i++) sum += M[j * S + i] * vk.get(i, hk, t, s);
          delta[j] = (vv.get(j, h, t, s) - sum) * b;
        }
        for (let j = 0; j < S; j++) for (let i = 0; i < S; i++) M[j * S + i] += delta[j] * vk.get(i, hk, t, s);
        for (let j = 0; j < S; j++) {
          let sum = 0;
          for (let i = 0; i < S; i++) sum += M[j * S + i] * vq.get(i, hk, t, s);
          out.set(sum * scale, j + S * (h + Hv * (t + nT * s)));
        }
      }
      for (let j = 0; j < S; j++)
        for (let i = 0; i < S; i++) out.set(M[j * S + i], oCount + i + S * (j + S * (h + Hv * s)));
    }
  }
}
