// Which ops and types the CPU device's kernels compute (mirrors assembly/*.ts).

import { Op, type Tensor } from '../../ggml/tensor.js';
import { GGMLType, traitsOf } from '../../ggml/types.js';

const { F32, F16, BF16, I32, I64 } = GGMLType;

const FLOAT = new Set<number>([F32, F16, BF16]);

/** Types whose rows the kernels can read as f32 (dequantRow). */
export const READABLE = new Set<number>([
  F32,
  F16,
  BF16,
  GGMLType.Q4_0,
  GGMLType.Q4_1,
  GGMLType.Q5_0,
  GGMLType.Q5_1,
  GGMLType.Q8_0,
  GGMLType.Q2_K,
  GGMLType.Q3_K,
  GGMLType.Q4_K,
  GGMLType.Q5_K,
  GGMLType.Q6_K,
  GGMLType.IQ4_NL,
  GGMLType.IQ4_XS,
  GGMLType.MXFP4,
  GGMLType.IQ2_XXS,
  GGMLType.IQ2_XS,
  GGMLType.IQ2_S,
  GGMLType.IQ3_XXS,
  GGMLType.IQ3_S,
  GGMLType.IQ1_S,
  GGMLType.IQ1_M,
  GGMLType.TQ1_0,
  GGMLType.TQ2_0,
]);

/** Types whose rows the kernels can write from f32 (quantRow). */
export const WRITABLE = new Set<number>([
  F32,
  F16,
  BF16,
  GGMLType.Q4_0,
  GGMLType.Q4_1,
  GGMLType.Q5_0,
  GGMLType.Q5_1,
  GGMLType.Q8_0,
]);

function isFloat(t: Tensor | undefined): boolean {
  return t !== undefined && FLOAT.has(t.type);
}

/** Readable, and quantized tensors have contiguous rows. */
function readableRows(t: Tensor): boolean {
  return READABLE.has(t.type) && (!traitsOf(t.type).quantized || t.hasContiguousRows());
}

function writableRows(t: Tensor): boolean {
  return WRITABLE.has(t.type) && (!traitsOf(t.type).quantized || t.hasContiguousRows());
}

export function cpuSupportsOp(t: Tensor): boolean {
  const [a, b] = t.src;
  switch (t.op) {
    case Op.NONE:
    case Op.VIEW:
    case Op.RESHAPE:
    case Op.PERMUTE:
    case Op.TRANSPOSE:
      return true;
    case Op.GET_ROWS:
      return (
        readableRows(a) && (b.type === I32 || b.type === I64) && WRITABLE.has(t.type) && !traitsOf(t.type).quantized
      );
    case Op.SET_ROWS:
      return writableRows(t) && isFloat(a) && (b.type === I32 || b.type === I64);
    case Op.MUL_MAT:
      return readableRows(a) && isFloat(b) && t.type === F32;
    case Op.MUL_MAT_ID:
      return readableRows(a) && isFloat(b) && t.src[2].type === I32 && t.type === F32;
    case Op.ADD_ID:
      return a.type === F32 && b.type === F32 && t.src[2].type === I32 && t.type === F32;
    case Op.ARGSORT:
      return a.type === F32 && a.hasContiguousRows() && t.type === I32 && t.hasContiguousRows();
    case Op.SWIGLU_OAI:
      return a.type === F32 && b.type === F32 && a.hasContiguousRows() && b.hasContiguousRows() && t.type === F32;
    case Op.CONCAT:
      return !traitsOf(a.type).quantized && !traitsOf(b.type).quantized && !traitsOf(t.type).quantized;
    case Op.SUM_ROWS:
    case Op.SIGMOID:
    case Op.CLAMP:
      return isFloat(a) && isFloat(t);
    case Op.DIV:
    case Op.ADD:
    case Op.MUL:
      return isFloat(a) && isFloat(b) && isFloat(t);
    case Op.SCALE:
    case Op.RMS_NORM:
    case Op.NORM:
    case Op.SILU:
    case Op.GELU:
    case Op.TANH:
      return isFloat(a) && isFloat(t);
    case Op.ROPE:
      return isFloat(a) && isFloat(t) && b.type === I32 && (t.src[2] === undefined || isFloat(t.src[2]));
    case Op.SOFT_MAX:
      return isFloat(a) && isFloat(t) && t.params.maxBias === 0 && (b === undefined || isFloat(b));
    case Op.CPY:
    case Op.CONT: {
      if (!readableRows(a) || !WRITABLE.has(t.type)) return false;
      return !traitsOf(t.type).quantized || (t.hasContiguousRows() && t.ne[0] === a.ne[0]);
    }
    case Op.FLASH_ATTN_EXT: {
      const [q, k, v, mask] = t.src;
      return (
        t.params.maxBias === 0 &&
        readableRows(q) &&
        readableRows(k) &&
        readableRows(v) &&
        t.type === F32 &&
        (mask === undefined || isFloat(mask))
      );
    }
    case Op.L2_NORM:
    case Op.SOFTPLUS:
    case Op.RELU:
    case Op.SQR:
      return isFloat(a) && isFloat(t);
    case Op.SSM_CONV:
    case Op.SSM_SCAN:
    case Op.GATED_DELTA_NET:
      return t.src.every((x) => x.type === F32);
    default:
      return false;
  }
}
