// ROPE (ggml_rope_ext): pairs rotate by θ = p · base^(-2i/nDims) / ff[i] (scaled, YaRN).
// Threads split the tokens; each computes its tokens' cos/sin once and applies them to
// every head. Angles, cos and sin are computed in double precision.

import { ldf, stf } from './access';
import { extra, param, share0, tAddr, tNb, tNe, tType } from './desc';
import { cosOut, exp64, sincos64, sinOut } from './math';

export function k_rope(node: usize, ith: i32, nth: i32): void {
  const ne0 = tNe(node, 1, 0);
  const ne1 = tNe(node, 1, 1);
  const ne2 = tNe(node, 1, 2);
  const ne3 = tNe(node, 1, 3);
  const nDims = <i32>param(node, 0);
  const neox = (<i32>param(node, 1) & 2) != 0;
  const lnBase = param(node, 2);
  const freqScale = param(node, 3);
  const extFactor = param(node, 4);
  const mscale = param(node, 5);
  const corr0 = param(node, 6);
  const corr1 = param(node, 7);
  const half = nDims >> 1;
  const hasFF = tType(node, 3) >= 0;
  const ffp = tAddr(node, 3);
  const ffType = tType(node, 3);
  const ta = tType(node, 1);
  const td = tType(node, 0);
  const posp = tAddr(node, 2);
  const cache = <usize>extra(node, 0) + <usize>ith * <usize>extra(node, 1);
  const nt = ne2 * ne3;
  const t0 = share0(nt, ith, nth);
  const t1 = share0(nt, ith + 1, nth);
  const na0 = tNb(node, 1, 0);
  const nd0 = tNb(node, 0, 0);
  for (let t = t0; t < t1; t++) {
    const i2 = t % ne2;
    const i3 = t / ne2;
    const position = <f64>load<i32>(posp + ((<usize>i2) << 2));
    for (let i = 0; i < half; i++) {
      let extrap = position * exp64(((-2.0 * i) / nDims) * lnBase);
      if (hasFF) extrap /= <f64>ldf(ffp + <usize>i * tNb(node, 3, 0), ffType);
      const interp = freqScale * extrap;
      let theta = interp;
      if (extFactor != 0) {
        const y = (<f64>i - corr0) / Math.max(0.001, corr1 - corr0);
        const mix = (1 - Math.min(1, Math.max(0, y))) * extFactor;
        theta = interp * (1 - mix) + extrap * mix;
      }
      sincos64(theta);
      store<f64>(cache + ((<usize>i) << 4), cosOut * mscale);
      store<f64>(cache + ((<usize>i) << 4), sinOut * mscale, 8);
    }
    for (let i1 = 0; i1 < ne1; i1++) {
      const pa =
        tAddr(node, 1) + <usize>i1 * tNb(node, 1, 1) + <usize>i2 * tNb(node, 1, 2) + <usize>i3 * tNb(node, 1, 3);
      const pd =
        tAddr(node, 0) + <usize>i1 * tNb(node, 0, 1) + <usize>i2 * tNb(node, 0, 2) + <usize>i3 * tNb(node, 0, 3);
      for (let i = 0; i < half; i++) {
        const c = load<f64>(cache + ((<usize>i) << 4));
        const s = load<f64>(cache + ((<usize>i) << 4), 8);
        const j0 = neox ? i : 2 * i;
        const j1 = neox ? i + half : 2 * i + 1;
        const x0 = <f64>ldf(pa + <usize>j0 * na0, ta);
        const x1 = <f64>ldf(pa + <usize>j1 * na0, ta);
        stf(pd + <usize>j0 * nd0, td, <f32>(x0 * c - x1 * s));
        stf(pd + <usize>j1 * nd0, td, <f32>(x0 * s + x1 * c));
      }
      for (let i0 = nDims; i0 < ne0; i0++) stf(pd + <usize>i0 * nd0, td, ldf(pa + <usize>i0 * na0, ta));
    }
  }
}
