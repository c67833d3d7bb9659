// SOFT_MAX (ggml_soft_max_ext): softmax(x·scale + slope·mask) along each row; the mask row
// is [*, i1, i2 % mask.ne2, i3 % mask.ne3]. slope is 1, or with ALiBi (maxBias > 0) head
// i2's geometric slope as ggml computes it (alibiSlope).

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';

/**
 * ggml's ALiBi slope bases for nHead heads: m0 for the first nHeadLog2 (the largest power
 * of two ≤ nHead) heads, m1 for the rest. Shared by every device's SOFT_MAX.
 */
export function alibiBases(nHead: number, maxBias: number): { m0: number; m1: number; nHeadLog2: number } {
  const nHeadLog2 = 2 ** Math.floor(Math.log2(nHead));
  return { m0: 2 ** (-maxBias / nHeadLog2), m1: 2 ** (-(maxBias / 2) / nHeadLog2), nHeadLog2 };
}

/** Head h's ALiBi slope (1 without ALiBi). */
export function alibiSlope(h: number, nHead: number, maxBias: number): number {
  if (maxBias <= 0) return 1;
  const { m0, m1, nHeadLog2 } = alibiBases(nHead, maxBias);
  return h < nHeadLog2 ? m0 ** (h + 1) : m1 ** (2 * (h - nHeadLog2) + 1);
}

export function softMax(dst: Tensor): void {
  const [a, mask] = dst.src;
  const va = new HostView(a);
  const vm = mask ? new HostView(mask) : null;
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const s = dst.params.scale;
  const row = new Float64Array(n);
  forEachRow(dst.ne, (i1, i2, i3) => {
    const slope = alibiSlope(i2, dst.ne[2], dst.params.maxBias ?? 0);
    let max = Number.NEGATIVE_INFINITY;
    for (let i0 = 0; i0 < n; i0++) {
      let x = va.get(i0, i1, i2, i3) * s;
      if (vm && mask) x += slope * vm.get(i0, i1, i2 % mask.ne[2], i3 % mask.ne[3]);
      row[i0] = x;
      if (x > max) max = x;
    }
    let sum = 0;
    for (let i0 = 0; i0 < n; i0++) {
      row[i0] = Math.exp(row[i0] - max);
      sum += row[i0];
    }
    for (let i0 = 0; i0 < n; i0++) vd.set(row[i0] / sum, i0, i1, i2, i3);
  });
}
