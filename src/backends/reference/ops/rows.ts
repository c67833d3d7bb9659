// GET_ROWS and SET_ROWS: gather rows by index into F32, scatter F32 rows into any type
// (the KV cache write).

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';

/** dst[:, i10, i11, i12] = a[:, b[i10, i11, i12], i11, i12] as F32. */
export function getRows(dst: Tensor): void {
  const [a, b] = dst.src;
  const va = new HostView(a);
  const vb = new HostView(b);
  const vd = new HostView(dst);
  const row = new Float32Array(a.ne[0]);
  for (let i12 = 0; i12 < b.ne[2]; i12++) {
    for (let i11 = 0; i11 < b.ne[1]; i11++) {
      for (let i10 = 0; i10 < b.ne[0]; i10++) {
        const r = vb.get(i10, i11, i12);
        if (r < 0 || r >= a.ne[1]) throw new RangeError(`get_rows: index ${r} outside ${a.ne[1]} rows`);
        va.readRow(row, r, i11, i12);
        vd.writeRow(row, i10, i11, i12);
      }
    }
  }
}

/** Node = view of a; a[:, c[i, i12 % c.ne1, i13 % c.ne2], i12, i13] = b[:, i, i12, i13]. */
export function setRows(dst: Tensor): void {
  const [b, c] = dst.src;
  const vb = new HostView(b);
  const vc = new HostView(c);
  const vd = new HostView(dst);
  const row = new Float32Array(b.ne[0]);
  forEachRow(b.ne, (i, i12, i13) => {
    const r = vc.get(i, i12 % c.ne[1], i13 % c.ne[2]);
    if (r < 0 || r >= dst.ne[1]) throw new RangeError(`set_rows: index ${r} outside ${dst.ne[1]} rows`);
    vd.writeRow(vb.readRow(row, i, i12, i13), r, i12, i13);
  });
}
