// CONCAT joins two tensors along one dimension.
// CPY and CONT: element k of the source (in ne0-fastest order) goes to element k of the
// destination, whatever either layout; types convert on the way (F32↔F16/BF16, and
// F32→quantized row by row).

import type { Tensor } from '../../../ggml/tensor.js';
import { traitsOf } from '../../../ggml/types.js';
import { forEachRow, HostView } from '../access.js';

function readAll(t: Tensor): Float64Array {
  const v = new HostView(t);
  const out = new Float64Array(t.nelements);
  const row = new Float32Array(t.ne[0]);
  let k = 0;
  forEachRow(t.ne, (i1, i2, i3) => {
    if (v.quantized) {
      v.readRow(row, i1, i2, i3);
      for (let i0 = 0; i0 < t.ne[0]; i0++) out[k++] = row[i0];
    } else {
      for (let i0 = 0; i0 < t.ne[0]; i0++) out[k++] = v.get(i0, i1, i2, i3);
    }
  });
  return out;
}

function writeAll(t: Tensor, values: Float64Array): void {
  const v = new HostView(t);
  let k = 0;
  if (traitsOf(t.type).quantized) {
    const row = new Float32Array(t.ne[0]);
    forEachRow(t.ne, (i1, i2, i3) => {
      for (let i0 = 0; i0 < t.ne[0]; i0++) row[i0] = values[k++];
      v.writeRow(row, i1, i2, i3);
    });
    return;
  }
  forEachRow(t.ne, (i1, i2, i3) => {
    for (let i0 = 0; i0 < t.ne[0]; i0++) v.set(values[k++], i0, i1, i2, i3);
  });
}

/** Node is a view of src[1]; it receives src[0]'s values. */
export function cpy(dst: Tensor): void {
  writeAll(dst, readAll(dst.src[0]));
}

export function cont(dst: Tensor): void {
  writeAll(dst, readAll(dst.src[0]));
}

/** dst = a and b joined along params.dim (every layout and plain type). */
export function concat(dst: Tensor): void {
  const [a, b] = dst.src;
  const va = new HostView(a);
  const vb = new HostView(b);
  const vd = new HostView(dst);
  const dim = dst.params.dim;
  const cut = a.ne[dim];
  const i = [0, 0, 0, 0];
  forEachRow(dst.ne, (i1, i2, i3) => {
    for (let i0 = 0; i0 < dst.ne[0]; i0++) {
      i[0] = i0;
      i[1] = i1;
      i[2] = i2;
      i[3] = i3;
      let x: number;
      if (i[dim] < cut) x = va.get(i[0], i[1], i[2], i[3]);
      else {
        i[dim] -= cut;
        x = vb.get(i[0], i[1], i[2], i[3]);
      }
      vd.set(x, i0, i1, i2, i3);
    }
  });
}
