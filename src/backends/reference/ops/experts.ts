// MUL_MAT_ID and ADD_ID: the per-token expert products of a mixture of experts.
//   MUL_MAT_ID: dst[:, i, t] = as[:, :, ids[i, t]] · b[:, i % nB, t] (a MUL_MAT per slot,
//   with MUL_MAT's numerics: activations rounded to the weights' vec_dot_type under
//   ggml-cpu numerics, dots in double).
//   ADD_ID: dst[:, i, t] = a[:, i, t] + b[:, ids[i, t]].

import type { Tensor } from '../../../ggml/tensor.js';
import { GGMLType } from '../../../ggml/types.js';
import { HostView } from '../access.js';
import { canRoundFor, q8_1SumCorrection, roundToVecDotType, vecDotType } from '../vec-dot.js';
import type { KernelOptions } from './options.js';

function expertOf(vi: HostView, i: number, t: number, nExpert: number): number {
  const e = vi.get(i, t);
  if (!(e >= 0 && e < nExpert)) throw new RangeError(`mul_mat_id: expert id ${e} outside 0..${nExpert - 1}`);
  return e;
}

export function mulMatId(dst: Tensor, o: KernelOptions = {}): void {
  const [as, b, ids] = dst.src;
  const va = new HostView(as);
  const vb = new HostView(b);
  const vi = new HostView(ids);
  const vd = new HostView(dst);
  const K = as.ne[0];
  const M = as.ne[1];
  const nE = as.ne[2];
  const nUsed = ids.ne[0];
  const nB = b.ne[1];
  const vdType = o.ggmlCpu && canRoundFor(as.type, K) ? vecDotType(as.type) : GGMLType.F32;
  const q81 = vdType === GGMLType.Q8_1;
  const arow = new Float32Array(K);
  const raw = new Float32Array(K);
  const bcol = new Float32Array(K);
  for (let t = 0; t < ids.ne[1]; t++) {
    for (let i = 0; i < nUsed; i++) {
      const e = expertOf(vi, i, t, nE);
      vb.readRow(bcol, i % nB, t);
      if (q81) raw.set(bcol);
      roundToVecDotType(vdType, bcol, K);
      for (let m = 0; m < M; m++) {
        va.readRow(arow, m, e);
        let sum = 0;
        for (let k = 0; k < K; k++) sum += arow[k] * bcol[k];
        if (q81) sum += q8_1SumCorrection(as.type, va.bytes, va.pos(0, m, e, 0), raw, K);
        vd.set(sum, m, i, t);
      }
    }
  }
}

export function addId(dst: Tensor): void {
  const [a, b, ids] = dst.src;
  const va = new HostView(a);
  const vb = new HostView(b);
  const vi = new HostView(ids);
  const vd = new HostView(dst);
  for (let t = 0; t < a.ne[2]; t++) {
    for (let i = 0; i < a.ne[1]; i++) {
      const e = vi.get(i, t);
      if (!(e >= 0 && e < b.ne[1])) throw new RangeError(`add_id: expert id ${e} outside 0..${b.ne[1] - 1}`);
      for (let k = 0; k < a.ne[0]; k++) vd.set(va.get(k, i, t) + vb.get(k, e), k, i, t);
    }
  }
}
