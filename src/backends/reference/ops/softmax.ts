// SOFT_MAX (ggml_soft_max_ext): softmax(x·scale + mask) along each row; the mask row is
// [*, i1, i2 % mask.ne2, i3 % mask.ne3].

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';

export function softMax(dst: Tensor): void {
  const [a, mask] = dst.src;
  const va = new HostView(a);
  const vm = mask ? new HostView(mask) : null;
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const s = dst.params.scale;
  const row = new Float64Array(n);
  forEachRow(dst.ne, (i1, i2, i3) => {
    let max = Number.NEGATIVE_INFINITY;
    for (let i0 = 0; i0 < n; i0++) {
      let x = va.get(i0, i1, i2, i3) * s;
      if (vm && mask) x += vm.get(i0, i1, i2 % mask.ne[2], i3 % mask.ne[3]);
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
