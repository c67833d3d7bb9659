// MUL_MAT: dst[m, n, i2, i3] = Σ_k a[k, m, i2 / r2, i3 / r3] · b[k, n, i2, i3], with
// r2 = ne12 / ne02 and r3 = ne13 / ne03 (a broadcast over b's dims 2-3). Rows of `a` are
// dequantized to F32 and the dot is accumulated in double precision. With ggml-cpu
// numerics, rows of `b` are first rounded as ggml-cpu converts them to the weights'
// vec_dot_type (F16, BF16, Q8_0, Q8_1, Q8_K: see vec-dot.ts).

import type { Tensor } from '../../../ggml/tensor.js';
import { GGMLType } from '../../../ggml/types.js';
import { HostView } from '../access.js';
import { canRoundFor, q8_1SumCorrection, roundToVecDotType, vecDotType } from '../vec-dot.js';
import type { KernelOptions } from './options.js';

export function mulMat(dst: Tensor, o: KernelOptions = {}): void {
  const [a, b] = dst.src;
  const va = new HostView(a);
  const vb = new HostView(b);
  const vd = new HostView(dst);
  const K = a.ne[0];
  const M = a.ne[1];
  const N = b.ne[1];
  const r2 = b.ne[2] / a.ne[2];
  const r3 = b.ne[3] / a.ne[3];
  const vdType = o.ggmlCpu && canRoundFor(a.type, K) ? vecDotType(a.type) : GGMLType.F32;
  const q81 = vdType === GGMLType.Q8_1;
  const arow = new Float32Array(K);
  const bcols: Float32Array[] = [];
  const raw: Float32Array[] = [];
  for (let n = 0; n < N; n++) {
    bcols.push(new Float32Array(K));
    if (q81) raw.push(new Float32Array(K));
  }
  for (let i3 = 0; i3 < b.ne[3]; i3++) {
    for (let i2 = 0; i2 < b.ne[2]; i2++) {
      for (let n = 0; n < N; n++) {
        vb.readRow(bcols[n], n, i2, i3);
        if (q81) raw[n].set(bcols[n]);
        roundToVecDotType(vdType, bcols[n], K);
      }
      const a2 = Math.floor(i2 / r2);
      const a3 = Math.floor(i3 / r3);
      for (let m = 0; m < M; m++) {
        va.readRow(arow, m, a2, a3);
        for (let n = 0; n < N; n++) {
          const bc = bcols[n];
          let sum = 0;
          for (let k = 0; k < K; k++) sum += arow[k] * bc[k];
          if (q81) sum += q8_1SumCorrection(a.type, va.bytes, va.pos(0, m, a2, a3), raw[n], K);
          vd.set(sum, m, n, i2, i3);
        }
      }
    }
  }
}
