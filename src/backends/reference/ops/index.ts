// The reference backend's op table: which op/type combinations it computes, and how.

import { isViewOp, Op, type Tensor } from '../../../ggml/tensor.js';
import { GGMLType, traitsOf } from '../../../ggml/types.js';
import { readable, writable } from '../access.js';
import { flashAttnExt } from './attention.js';
import { concat, cont, cpy } from './copy.js';
import { add, clamp, div, gelu, mul, scale, sigmoid, silu, sumRows, swigluOai, tanh } from './elementwise.js';
import { addId, mulMatId } from './experts.js';
import { mulMat } from './matmul.js';
import { norm, rmsNorm } from './norm.js';
import type { KernelOptions } from './options.js';
import { rope } from './rope.js';
import { getRows, setRows } from './rows.js';
import { softMax } from './softmax.js';
import { argsort } from './sort.js';
import { gatedDeltaNet, l2Norm, relu, softplus, sqr, ssmConv, ssmScan } from './ssm.js';

export type { KernelOptions } from './options.js';

type Kernel = (dst: Tensor, o: KernelOptions) => void;

const KERNELS: Partial<Record<Op, Kernel>> = {
  [Op.GET_ROWS]: getRows,
  [Op.SET_ROWS]: setRows,
  [Op.MUL_MAT]: mulMat,
  [Op.ADD]: add,
  [Op.MUL]: mul,
  [Op.SCALE]: scale,
  [Op.RMS_NORM]: rmsNorm,
  [Op.NORM]: norm,
  [Op.ROPE]: rope,
  [Op.SOFT_MAX]: softMax,
  [Op.SILU]: silu,
  [Op.GELU]: gelu,
  [Op.TANH]: tanh,
  [Op.CPY]: cpy,
  [Op.CONT]: cont,
  [Op.FLASH_ATTN_EXT]: flashAttnExt,
  [Op.SSM_CONV]: ssmConv,
  [Op.SSM_SCAN]: ssmScan,
  [Op.GATED_DELTA_NET]: gatedDeltaNet,
  [Op.L2_NORM]: l2Norm,
  [Op.SOFTPLUS]: softplus,
  [Op.RELU]: relu,
  [Op.SQR]: sqr,
  [Op.MUL_MAT_ID]: mulMatId,
  [Op.ADD_ID]: addId,
  [Op.ARGSORT]: argsort,
  [Op.SUM_ROWS]: sumRows,
  [Op.DIV]: div,
  [Op.SIGMOID]: sigmoid,
  [Op.CLAMP]: clamp,
  [Op.SWIGLU_OAI]: swigluOai,
  [Op.CONCAT]: concat,
};

const FLOAT = new Set<number>([GGMLType.F32, GGMLType.F16, GGMLType.BF16]);

function isFloat(t: Tensor | undefined): boolean {
  return t !== undefined && FLOAT.has(t.type);
}

/** Plain element types (elementwise access works on any layout). */
function isPlain(t: Tensor): boolean {
  return !traitsOf(t.type).quantized;
}

export function referenceSupportsOp(t: Tensor): boolean {
  const [a, b] = t.src;
  switch (t.op) {
    case Op.NONE:
    case Op.VIEW:
    case Op.RESHAPE:
    case Op.PERMUTE:
    case Op.TRANSPOSE:
      return true;
    case Op.GET_ROWS:
      return readable(a.type) && t.type === GGMLType.F32 && (a.hasContiguousRows() || isPlain(a));
    case Op.SET_ROWS:
      return writable(t.type) && (isPlain(t) || t.hasContiguousRows());
    case Op.MUL_MAT:
      return readable(a.type) && isFloat(b) && (isPlain(a) || a.hasContiguousRows());
    case Op.ADD:
    case Op.MUL:
    case Op.DIV:
      return isFloat(a) && isFloat(b) && isFloat(t);
    case Op.MUL_MAT_ID:
      return readable(a.type) && isFloat(b) && t.src[2].type === GGMLType.I32 && (isPlain(a) || a.hasContiguousRows());
    case Op.ADD_ID:
    case Op.SWIGLU_OAI:
      return true;
    case Op.ARGSORT:
      return a.type === GGMLType.F32;
    case Op.CONCAT:
      return isPlain(a) && isPlain(t);
    case Op.SUM_ROWS:
    case Op.SIGMOID:
    case Op.CLAMP:
    case Op.SCALE:
    case Op.RMS_NORM:
    case Op.NORM:
    case Op.SILU:
    case Op.GELU:
    case Op.TANH:
      return isFloat(a) && isFloat(t);
    case Op.ROPE:
      return isFloat(a) && isFloat(t);
    case Op.SOFT_MAX:
      return isFloat(a);
    case Op.CPY:
    case Op.CONT: {
      const srcOk = isPlain(a) || a.hasContiguousRows();
      const dstOk = isPlain(t) || (t.hasContiguousRows() && t.ne[0] === a.ne[0]);
      return readable(a.type) && writable(t.type) && srcOk && dstOk;
    }
    case Op.FLASH_ATTN_EXT:
      return t.params.maxBias === 0 && [t.src[0], t.src[1], t.src[2]].every((x) => readable(x.type));
    case Op.L2_NORM:
    case Op.SOFTPLUS:
    case Op.RELU:
    case Op.SQR:
      return isFloat(a) && isFloat(t);
    case Op.SSM_CONV:
    case Op.SSM_SCAN:
    case Op.GATED_DELTA_NET:
      return t.src.every((x) => x.type === GGMLType.F32);
    default:
      return false;
  }
}

/** Compute one node into its (already allocated) memory; view ops compute nothing. */
export function referenceCompute(t: Tensor, o: KernelOptions = {}): void {
  if (t.op === Op.NONE || isViewOp(t.op)) return;
  const k = KERNELS[t.op];
  if (!k) throw new Error(`reference backend: no kernel for ${t.op}`);
  k(t, o);
}
