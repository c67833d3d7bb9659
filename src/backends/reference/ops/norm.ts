// Row normalisations: RMS_NORM (x / rms) and NORM (centred, unit variance).

import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';
import type { KernelOptions } from './options.js';

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

export function norm(dst: Tensor, o: KernelOptions = {}): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  const n = dst.ne[0];
  const eps = dst.params.eps;
  const row = new Float32Array(n);
  forEachRow(dst.ne, (i1, i2, i3) => {
    va.readRow(row, i1, i2, i3);
    if (o.ggmlCpu) normGgmlCpu(row, eps);
    else {
      let mean = 0;
      for (let i0 = 0; i0 < n; i0++) mean += row[i0];
      mean /= n;
      let variance = 0;
      for (let i0 = 0; i0 < n; i0++) variance += (row[i0] - mean) ** 2;
      variance /= n;
      const s = 1 / Math.sqrt(variance + eps);
      for (let i0 = 0; i0 < n; i0++) row[i0] = (row[i0] - mean) * s;
    }
    for (let i0 = 0; i0 < n; i0++) vd.set(row[i0], i0, i1, i2, i3);
  });
}

const fround = Math.fround;

/**
 * ggml-cpu's NORM of one row in place, every rounding as the x86-64 AVX-512 build makes it
 * (ggml_compute_forward_norm_f32 with ggml_vec_cvar_f32), as the cpu device's k_norm:
 * the mean from a double sum rounded to f32; y = x - mean in f32; the squares of y summed
 * per 16 in _mm512_reduce_add_ps's tree ((j + 8) then (j + 4), then 0 + 2 and 1 + 3), each
 * 16 added to a double (a tail one by one); variance, 1/sqrtf(variance + eps) and y·scale in f32.
 */
function normGgmlCpu(y: Float32Array, eps: number): void {
  const n = y.length;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += y[i]!;
  const mean = fround(fround(sum) / n);
  for (let i = 0; i < n; i++) y[i] = fround(y[i]! - mean);
  const sq = (j: number) => fround(y[j]! * y[j]!);
  let ss = 0;
  let i = 0;
  for (; i + 16 <= n; i += 16) {
    const u = [0, 1, 2, 3].map((j) =>
      fround(fround(sq(i + j) + sq(i + j + 8)) + fround(sq(i + j + 4) + sq(i + j + 12))),
    );
    ss += fround(fround(u[0]! + u[2]!) + fround(u[1]! + u[3]!));
  }
  for (; i < n; i++) ss += sq(i);
  const variance = fround(ss / n);
  const scale = fround(1 / fround(Math.sqrt(fround(variance + fround(eps)))));
  for (let j = 0; j < n; j++) y[j] = fround(y[j]! * scale);
}
