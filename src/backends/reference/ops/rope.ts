// ROPE (ggml_rope_ext). For a token at position p, pair i (0 ≤ i < nDims/2) rotates by
// θ = p · freqBase^(-2i/nDims) / freqFactor[i], scaled by freqScale; YaRN mixes in the
// unscaled angle for high-frequency pairs when extFactor ≠ 0. NORMAL pairs adjacent
// elements (2i, 2i+1); NEOX pairs the halves (i, i + nDims/2). Elements past nDims pass
// through unchanged.

import { RopeMode } from '../../../ggml/ops.js';
import type { Tensor } from '../../../ggml/tensor.js';
import { HostView } from '../access.js';

/** Dimension at which pair rotation count over nCtxOrig positions equals nRot (YaRN). */
function corrDim(nDims: number, nCtxOrig: number, nRot: number, base: number): number {
  return (nDims * Math.log(nCtxOrig / (nRot * 2 * Math.PI))) / (2 * Math.log(base));
}

export function yarnCorrDims(nDims: number, nCtxOrig: number, base: number, betaFast: number, betaSlow: number) {
  const start = Math.floor(corrDim(nDims, nCtxOrig, betaFast, base));
  const end = Math.ceil(corrDim(nDims, nCtxOrig, betaSlow, base));
  return [Math.max(0, start), Math.min(nDims - 1, end)];
}

function ramp(low: number, high: number, i: number): number {
  const y = (i - low) / Math.max(0.001, high - low);
  return 1 - Math.min(1, Math.max(0, y));
}

export function rope(dst: Tensor): void {
  const [a, pos, ff] = dst.src;
  const p = dst.params;
  const va = new HostView(a);
  const vp = new HostView(pos);
  const vf = ff ? new HostView(ff) : null;
  const vd = new HostView(dst);
  const half = p.nDims / 2;
  const neox = (p.mode & RopeMode.NEOX) !== 0;
  const corr = yarnCorrDims(p.nDims, p.nCtxOrig, p.freqBase, p.betaFast, p.betaSlow);
  for (let i3 = 0; i3 < a.ne[3]; i3++) {
    for (let i2 = 0; i2 < a.ne[2]; i2++) {
      const position = vp.get(i2);
      for (let i1 = 0; i1 < a.ne[1]; i1++) {
        for (let i = 0; i < half; i++) {
          const extrap = (position * p.freqBase ** ((-2 * i) / p.nDims)) / (vf ? vf.get(i) : 1);
          const interp = p.freqScale * extrap;
          let theta = interp;
          let mscale = p.attnFactor;
          if (p.extFactor !== 0) {
            const mix = ramp(corr[0], corr[1], i) * p.extFactor;
            theta = interp * (1 - mix) + extrap * mix;
            mscale *= 1 + 0.1 * Math.log(1 / p.freqScale);
          }
          const c = Math.cos(theta) * mscale;
          const s = Math.sin(theta) * mscale;
          const j0 = neox ? i : 2 * i;
          const j1 = neox ? i + half : 2 * i + 1;
          const x0 = va.get(j0, i1, i2, i3);
          const x1 = va.get(j1, i1, i2, i3);
          vd.set(x0 * c - x1 * s, j0, i1, i2, i3);
          vd.set(x0 * s + x1 * c, j1, i1, i2, i3);
        }
        for (let i0 = p.nDims; i0 < a.ne[0]; i0++) vd.set(va.get(i0, i1, i2, i3), i0, i1, i2, i3);
      }
    }
  }
}
