// Row normalisations: RMS_NORM (x / rms) and NORM (centred, unit variance).

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';

export function rmsNorm(dst: Tensor): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const eps = dst.params.eps;
  forEachRow(dst.ne, (i1, i2, i3) => {
    let sum = 0;
    for (let i0 = 0; i0 < n; i0++) sum += va.get(i0, i1, i2, i3) ** 2;
    const s = 1 / Math.sqrt(sum / n + eps);
    for (let i0 = 0; i0 < n; i0++) vd.set(va.get(i0, i1, i2, i3) * s, i0, i1, i2, i3);
  });
}

export function norm(dst: Tensor): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const eps = dst.params.eps;
  forEachRow(dst.ne, (i1, i2, i3) => {
    let mean = 0;
    for (let i0 = 0; i0 < n; i0++) mean += va.get(i0, i1, i2, i3);
    mean /= n;
    let variance = 0;
    for (let i0 = 0; i0 < n; i0++) variance += (va.get(i0, i1, i2, i3) - mean) ** 2;
    variance /= n;
    const s = 1 / Math.sqrt(variance + eps);
    for (let i0 = 0; i0 < n; i0++) vd.set((va.get(i0, i1, i2, i3) - mean) * s, i0, i1, i2, i3);
  });
}
