// Per-tensor types as llama.cpp's llama-quantize chooses them for a file type
// (llama_tensor_get_type in src/llama-quant.cpp), for the file types the generator writes:
// the output tensor (and token_embd when it is tied to it) gets Q6_K, the _M mixes give
// attn_v / ffn_down more bits in some layers (by layer number from the name when the model
// has experts), 8-expert models keep attn_k / attn_v in Q8_0, MXFP4_MOE writes expert
// stacks in MXFP4 and every other matrix in Q8_0, 1-D tensors stay F32, and a row length
// that is not a multiple of the chosen type's block falls back to a type with 32-element
// blocks.
import { GGMLType, traitsOf, typeName } from '../ggml/types.js';
import { FILE_TYPES, type FileTypeName, type GenArch } from './spec.js';

export interface TypeChoiceModel {
  arch: GenArch;
  nLayer: number;
  nHead: number;
  nHeadKv: number;
  /** Experts per MoE layer (0 or absent: a dense model). */
  nExpert?: number;
}

export interface TensorShapeInfo {
  name: string;
  dims: readonly number[];
}

type Category =
  | 'token_embd'
  | 'attn_q'
  | 'attn_k'
  | 'attn_v'
  | 'attn_qkv'
  | 'attn_output'
  | 'ffn_up'
  | 'ffn_gate'
  | 'ffn_down'
  | 'output'
  | 'other';

function categoryOf(name: string): Category {
  if (name === 'output.weight') return 'output';
  if (name === 'token_embd.weight') return 'token_embd';
  if (name.includes('attn_qkv.weight')) return 'attn_qkv';
  if (name.includes('attn_v.weight')) return 'attn_v';
  if (name.includes('attn_k.weight')) return 'attn_k';
  if (name.includes('attn_q.weight')) return 'attn_q';
  if (name.includes('attn_output.weight')) return 'attn_output';
  if (name.includes('ffn_up')) return 'ffn_up';
  if (name.includes('ffn_gate')) return 'ffn_gate';
  if (name.includes('ffn_down')) return 'ffn_down';
  return 'other';
}

/** Whether llama-quantize converts this tensor at all (else it keeps its source type). */
export function allowsQuantization(name: string, dims: readonly number[]): boolean {
  if (nDims(dims) < 2) return false;
  if (!name.endsWith('weight')) return false;
  if (name.includes('_norm.weight')) return false;
  if (name.includes('ffn_gate_inp.weight')) return false;
  // BERT's position embeddings and token types stay as they are.
  if (name === 'position_embd.weight' || name === 'token_types.weight') return false;
  return true;
}

/** ggml_n_dims-style count (trailing 1s do not count). */
function nDims(dims: readonly number[]): number {
  let n = dims.length;
  while (n > 1 && dims[n - 1] === 1) n--;
  return n;
}

/**
 * The order in which llama.cpp's model loader lists tensors (and llama-quantize writes
 * them): tensors outside blocks first, then block by block, by name within each.
 */
export function quantizeOrder(a: string, b: string): number {
  const la = layerOf(a);
  const lb = layerOf(b);
  if (la !== lb) return la - lb;
  return a < b ? -1 : a > b ? 1 : 0;
}

function layerOf(name: string): number {
  const m = /^blk\.(\d+)\./.exec(name);
  return m ? Number(m[1]) : -1;
}

const Q = GGMLType;

/** Fallback when the row length is not a multiple of `type`'s block size (llama-quant.cpp). */
function fallbackType(name: string, ncols: number, type: GGMLType): GGMLType {
  if (ncols % traitsOf(type).blockSize === 0) return type;
  let to: GGMLType;
  switch (type) {
    case Q.IQ4_XS:
      to = Q.IQ4_NL;
      break;
    case Q.Q2_K:
    case Q.Q3_K:
      to = Q.Q4_0;
      break;
    case Q.Q4_K:
      to = Q.Q5_0;
      break;
    case Q.Q5_K:
      to = Q.Q5_1;
      break;
    case Q.Q6_K:
      to = Q.Q8_0;
      break;
    case Q.MXFP4:
      throw new RangeError(`tensor '${name}': row length ${ncols} is not a multiple of MXFP4's 32-element block`);
    default:
      throw new RangeError(
        `tensor '${name}': row length ${ncols} is not a multiple of ${typeName(type)}'s block and llama-quantize has no fallback for it`,
      );
  }
  // Rows not even a multiple of 32: llama-quantize writes F16.
  return ncols % traitsOf(to).blockSize === 0 ? to : Q.F16;
}

/**
 * Type of every tensor of a model written in `fileType`, as llama-quantize chooses them
 * from an all-F32 source (without an importance matrix). Tensors are visited in
 * llama-quantize's order, since the attn_v rules count them.
 */
export function chooseTensorTypes(
  model: TypeChoiceModel,
  tensors: readonly TensorShapeInfo[],
  fileType: FileTypeName,
): Map<string, GGMLType> {
  const ft = fileType;
  const base = FILE_TYPES[ft].base;
  const quantized = traitsOf(base).quantized;
  const sorted = [...tensors].sort((a, b) => quantizeOrder(a.name, b.name));
  const tied = !tensors.some((t) => t.name === 'output.weight');
  const nAttnV = tensors.filter((t) => {
    const c = categoryOf(t.name);
    return c === 'attn_v' || c === 'attn_qkv';
  }).length;
  const nGqa = Math.floor(model.nHead / model.nHeadKv);
  // LLM_TYPE_70B: LLaMA-2 70B (80 layers) — its attn_v gets Q5_K instead of Q3_K/Q4_K.
  const is70B = model.arch === 'llama' && model.nLayer === 80;
  const nLayer = model.nLayer;
  const nExpert = Math.max(1, model.nExpert ?? 0);
  const useMoreBits = (i: number, n: number) =>
    i < Math.trunc(n / 8) || i >= Math.trunc((7 * n) / 8) || (i - Math.trunc(n / 8)) % 3 === 2;
  let iAttnV = 0;
  let iFfnDown = 0;

  const out = new Map<string, GGMLType>();
  for (const t of sorted) {
    if (!allowsQuantization(t.name, t.dims)) {
      out.set(t.name, Q.F32);
      continue;
    }
    if (!quantized) {
      out.set(t.name, base);
      continue;
    }
    const cat = categoryOf(t.name);
    let type: GGMLType = base;
    if (cat === 'output' || (tied && cat === 'token_embd')) {
      const nx = t.dims[0] ?? 0;
      if (ft === 'MXFP4_MOE' || nx % traitsOf(type).blockSize !== 0) type = Q.Q8_0;
      else if (type !== Q.Q8_0) type = Q.Q6_K;
    } else if (ft === 'MXFP4_MOE') {
      type = (t.dims[2] ?? 1) > 1 ? Q.MXFP4 : Q.Q8_0;
    } else if (cat === 'token_embd') {
      // no rule for these file types
    } else if (cat === 'attn_v' || cat === 'attn_qkv') {
      if (ft === 'Q2_K') type = nGqa >= 4 ? Q.Q4_K : Q.Q3_K;
      else if (ft === 'Q3_K_M') type = iAttnV < 2 ? Q.Q5_K : Q.Q4_K;
      else if (ft === 'Q3_K_L') type = Q.Q5_K;
      else if ((ft === 'IQ4_NL' || ft === 'IQ4_XS') && nGqa >= 4) type = Q.Q5_K;
      else if ((ft === 'Q4_K_M' || ft === 'Q5_K_M') && useMoreBits(iAttnV, nAttnV)) type = Q.Q6_K;
      else if (ft === 'Q4_K_S' && iAttnV < 4) type = Q.Q5_K;
      if (is70B && (type === Q.Q3_K || type === Q.Q4_K)) type = Q.Q5_K;
      // 8 experts (Mixtral): attn_v costs little and gets Q8_0
      if (nExpert === 8) type = Q.Q8_0;
      // A fused attn_qkv takes this branch too (llama.cpp's separate attn_qkv rules sit
      // behind it in the same else-if chain and never run).
      iAttnV++;
    } else if (cat === 'attn_k') {
      if (nExpert === 8) type = Q.Q8_0;
    } else if (cat === 'ffn_down') {
      // with experts the layer comes from the name (ffn_down_exps and _shexp share it)
      const i = nExpert > 1 ? layerOf(t.name) : iFfnDown;
      const n = nLayer;
      if (ft === 'Q2_K') type = Q.Q3_K;
      else if (ft === 'Q3_K_M') type = i < Math.trunc(n / 16) ? Q.Q5_K : Q.Q4_K;
      else if (ft === 'Q3_K_L') type = Q.Q5_K;
      else if (ft === 'Q4_K_M') {
        if (useMoreBits(i, n)) type = Q.Q6_K;
      } else if (i < Math.trunc(n / 8) && (ft === 'IQ4_NL' || ft === 'IQ4_XS')) type = Q.Q5_K;
      else if (ft === 'Q5_K_M' && useMoreBits(i, n)) type = Q.Q6_K;
      else if (ft === 'Q4_K_S' && i < Math.trunc(n / 8)) type = Q.Q5_K;
      iFfnDown++;
    } else if (cat === 'attn_output') {
      if (nExpert === 8) {
        if (
          ft === 'Q2_K' ||
          ft === 'Q3_K_S' ||
          ft === 'Q3_K_M' ||
          ft === 'IQ4_NL' ||
          ft === 'Q4_K_S' ||
          ft === 'Q4_K_M' ||
          ft === 'IQ4_XS'
        ) {
          type = Q.Q5_K;
        }
      } else if (ft === 'Q2_K') type = Q.Q3_K;
      else if (ft === 'Q3_K_M') type = Q.Q4_K;
      else if (ft === 'Q3_K_L') type = Q.Q5_K;
    }
    out.set(t.name, fallbackType(t.name, t.dims[0] ?? 0, type));
  }
  return out;
}
