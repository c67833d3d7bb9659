// llama-quantize's per-tensor type choice (llama_tensor_get_type in llama.cpp's
// src/llama-quant.cpp), restated: which tensors are quantized at all, the type each gets
// for a file type (the output tensor and low-bit mixes get more bits, attn_v / ffn_down
// more in some layers, ...), the user's overrides, and the fallback when a row length is
// not a multiple of the chosen type's block. Both `llama-ts quantize` and the test-model
// generator use it.

import { GGMLType, traitsOf, typeName } from '../ggml/types.js';
import { FILE_TYPES, type FileTypeName } from './ftypes.js';

/** What the choice needs to know of the model (llama.cpp's hparams). */
export interface TypeChoiceModel {
  /** general.architecture */
  arch: string;
  /** {arch}.block_count */
  nLayer: number;
  /** Attention heads and KV heads of the first layer. */
  nHead: number;
  nHeadKv: number;
  /** {arch}.expert_count (0 without experts). */
  nExpert?: number;
}

export interface TensorShapeInfo {
  name: string;
  dims: readonly number[];
  /** The tensor's type in the source file (default F32). */
  type?: number;
}

export interface TypeChoiceOptions {
  /** llama-quantize's --output-tensor-type. */
  outputTensorType?: GGMLType;
  /** --token-embedding-type. */
  tokenEmbeddingType?: GGMLType;
  /** --tensor-type NAME=TYPE: the first pattern (a regular expression searched in the name) that matches wins. */
  overrides?: ReadonlyArray<readonly [RegExp, GGMLType]>;
  /** --pure: no per-tensor mixes (overrides and fallbacks still apply). */
  pure?: boolean;
  /** False for --leave-output-tensor. */
  quantizeOutputTensor?: boolean;
  /** COPY: every tensor keeps its type. */
  onlyCopy?: boolean;
  /** An importance matrix is given (some mixes differ with one). */
  hasImatrix?: boolean;
}

export interface TensorTypeChoice {
  type: GGMLType;
  /** Whether llama-quantize refuses this tensor's quantization without an importance matrix. */
  requiresImatrix: boolean;
  /** The type chosen before a row-length fallback replaced it. */
  fellBackFrom?: GGMLType;
}

type Category =
  | 'token_embd'
  | 'attn_q'
  | 'attn_k'
  | 'attn_v'
  | 'attn_qkv'
  | 'attn_kv_b'
  | 'attn_output'
  | 'ffn_up'
  | 'ffn_gate'
  | 'ffn_down'
  | 'output'
  | 'other';

function categoryOf(name: string): Category {
  if (name === 'output.weight') return 'output';
  if (name === 'token_embd.weight' || name === 'per_layer_token_embd.weight') return 'token_embd';
  if (name.includes('attn_qkv.weight')) return 'attn_qkv';
  if (name.includes('attn_kv_b.weight')) return 'attn_kv_b';
  if (name.includes('attn_v.weight')) return 'attn_v';
  if (name.includes('attn_k.weight')) return 'attn_k';
  if (name.includes('attn_q.weight')) return 'attn_q';
  if (name.includes('attn_output.weight')) return 'attn_output';
  if (name.includes('ffn_up')) return 'ffn_up';
  if (name.includes('ffn_gate')) return 'ffn_gate';
  if (name.includes('ffn_down')) return 'ffn_down';
  return 'other';
}

/** File types whose attn_output gets Q5_K in 8-expert models. */
const MOE8_ATTN_OUTPUT_Q5_K: readonly string[] = [
  'Q2_K',
  'IQ3_XS',
  'IQ3_XXS',
  'Q3_K_S',
  'Q3_K_M',
  'IQ4_NL',
  'Q4_K_S',
  'Q4_K_M',
  'IQ3_S',
  'IQ3_M',
  'IQ4_XS',
];

const isAttnV = (c: Category) => c === 'attn_v' || c === 'attn_qkv' || c === 'attn_kv_b';

// name fragments llama-quantize never quantizes (small or special 2-D tensors)
const KEEP_FRAGMENTS = [
  '_norm.weight',
  'ffn_gate_inp.weight',
  'ffn_gate_tid2eid.weight',
  'altup',
  'laurel',
  'per_layer_model_proj',
  'ssm_conv1d',
  'shortconv.conv.weight',
  'indexer.k_proj.weight',
  'indexer.q_proj.weight',
  'time_mix_first.weight',
  'time_mix_w0.weight',
  'time_mix_w1.weight',
  'time_mix_w2.weight',
  'time_mix_v0.weight',
  'time_mix_v1.weight',
  'time_mix_v2.weight',
  'time_mix_a0.weight',
  'time_mix_a1.weight',
  'time_mix_a2.weight',
  'time_mix_g1.weight',
  'time_mix_g2.weight',
  'time_mix_decay_w1.weight',
  'time_mix_decay_w2.weight',
  'time_mix_lerp_fused.weight',
  'attn_rel_b.weight',
  '.position_embd',
  'sam.pos_embd',
  'sam.neck.',
  'sam.net_',
  '.rel_pos',
  '.patch_embd',
  '.patch_merger',
  'a.rvq.codebook',
  'mm.a.code_embd',
];

/** ggml_n_dims: trailing 1s do not count. */
function nDims(dims: readonly number[]): number {
  let n = dims.length;
  while (n > 1 && dims[n - 1] === 1) n--;
  return n;
}

/** Whether llama-quantize converts this tensor at all (else it keeps its source type). */
export function allowsQuantization(name: string, dims: readonly number[], quantizeOutputTensor = true): boolean {
  if (nDims(dims) < 2) return false;
  if (!name.endsWith('weight')) return false;
  if (!quantizeOutputTensor && name === 'output.weight') return false;
  if (KEEP_FRAGMENTS.some((f) => name.includes(f))) return false;
  // BERT's position embeddings and token types stay as they are
  return name !== 'position_embd.weight' && name !== 'token_types.weight';
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

/** tensor_type_fallback: a type whose block divides the row length `ncols`. */
function fallbackType(name: string, ncols: number, type: GGMLType): GGMLType {
  const bs = traitsOf(type).blockSize;
  if (ncols % bs === 0) return type;
  let to: GGMLType;
  switch (type) {
    case Q.IQ1_S:
    case Q.IQ1_M:
    case Q.IQ2_XXS:
    case Q.IQ2_XS:
    case Q.IQ2_S:
    case Q.IQ3_XXS:
    case Q.IQ3_S:
    case Q.IQ4_XS:
      to = Q.IQ4_NL;
      break;
    case Q.Q2_K:
    case Q.Q3_K:
    case Q.TQ1_0:
    case Q.TQ2_0:
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
      if (bs > 32) {
        throw new RangeError(`tensor '${name}': no fallback type for ${typeName(type)} (row length ${ncols})`);
      }
      to = type;
  }
  // rows not even a multiple of 32: llama-quantize writes F16
  return ncols % traitsOf(to).blockSize === 0 ? to : Q.F16;
}

/** tensor_requires_imatrix: the very low-bit types (and Q2_K in a Q2_K_S file), except token_embd and output. */
function requiresImatrix(name: string, type: GGMLType, ft: FileTypeName): boolean {
  const cat = categoryOf(name);
  if (cat === 'token_embd' || cat === 'output') return false;
  switch (type) {
    case Q.IQ3_XXS:
    case Q.IQ2_XXS:
    case Q.IQ2_XS:
    case Q.IQ2_S:
    case Q.IQ1_M:
    case Q.IQ1_S:
      return true;
    case Q.Q2_K:
      return ft === 'Q2_K_S';
    default:
      return false;
  }
}

/**
 * Type of every tensor of a model quantized to file type `ft`, as llama-quantize chooses
 * them. Tensors are visited in llama-quantize's order, since the attn_v / ffn_* rules
 * count them.
 */
export function chooseTensorTypes(
  model: TypeChoiceModel,
  tensors: readonly TensorShapeInfo[],
  ft: FileTypeName,
  opts: TypeChoiceOptions = {},
): Map<string, TensorTypeChoice> {
  const base: GGMLType = FILE_TYPES[ft].base;
  const quantizedBase = traitsOf(base).quantized;
  const sorted = [...tensors].sort((a, b) => quantizeOrder(a.name, b.name));
  const tied = !tensors.some((t) => t.name === 'output.weight');
  const nAttnV = tensors.filter((t) => isAttnV(categoryOf(t.name))).length;
  const nExpert = Math.max(1, model.nExpert ?? 0);
  const nExpertRaw = model.nExpert ?? 0;
  const nGqa = model.nHeadKv > 0 ? Math.floor(model.nHead / model.nHeadKv) : 0;
  // LLM_TYPE_70B (LLaMA-2 70B: 80 layers with GQA): its attn_v gets Q5_K instead of Q3_K/Q4_K
  const is70B = model.arch === 'llama' && model.nLayer === 80 && model.nHead !== model.nHeadKv;
  const falcon = model.arch === 'falcon';
  const nLayer = model.nLayer;
  const useMoreBits = (i: number, n: number) =>
    i < Math.trunc(n / 8) || i >= Math.trunc((7 * n) / 8) || (i - Math.trunc(n / 8)) % 3 === 2;
  // with experts, a tensor's layer comes from its name (expert tensors are not consecutive)
  const layerInfo = (i: number, name: string): number => {
    if (nExpert <= 1) return i;
    const m = /^blk\.(\d+)\./.exec(name);
    if (!m) throw new RangeError(`tensor '${name}': no layer number in its name`);
    const l = Number(m[1]);
    if (l >= nLayer) throw new RangeError(`tensor '${name}': layer ${l} is not below ${nLayer}`);
    return l;
  };
  const lowBit = ['IQ2_XXS', 'IQ2_XS', 'IQ1_S', 'IQ2_S', 'IQ2_M', 'IQ1_M'].includes(ft);
  let iAttnV = 0;
  let iFfnDown = 0;
  let iFfnGate = 0;
  let iFfnUp = 0;

  /** llama_tensor_get_type_impl: the mix's choice for one tensor (updates the counters). */
  const mixType = (name: string, nx: number, nz: number, cat: Category): GGMLType => {
    let t: GGMLType = base;
    if (cat === 'output' || (tied && cat === 'token_embd')) {
      if (opts.outputTensorType !== undefined) return opts.outputTensorType;
      if (ft === 'MXFP4_MOE' || falcon || nx % traitsOf(t).blockSize !== 0) t = Q.Q8_0;
      else if (['IQ2_XXS', 'IQ2_XS', 'IQ3_XXS', 'IQ1_S', 'IQ2_S', 'IQ2_M', 'IQ1_M'].includes(ft)) t = Q.Q5_K;
      else if (t !== Q.Q8_0) t = Q.Q6_K;
    } else if (ft === 'MXFP4_MOE') {
      // expert stacks (3-D) MXFP4, every other matrix Q8_0
      t = nz > 1 ? Q.MXFP4 : Q.Q8_0;
    } else if (cat === 'token_embd') {
      if (opts.tokenEmbeddingType !== undefined) return opts.tokenEmbeddingType;
      if (ft === 'IQ2_XXS' || ft === 'IQ2_XS' || ft === 'IQ1_S' || ft === 'IQ1_M') t = Q.Q2_K;
      else if (ft === 'IQ2_S' || ft === 'IQ2_M' || ft === 'IQ3_XXS') t = Q.IQ3_S;
      else if (ft === 'TQ1_0' || ft === 'TQ2_0') t = Q.Q4_K;
    } else if (lowBit) {
      const s2m = ft === 'IQ2_S' || ft === 'IQ2_M';
      if (isAttnV(cat)) {
        if (nGqa >= 4 || nExpertRaw >= 4) t = Q.Q4_K;
        else t = s2m ? Q.IQ3_S : Q.Q2_K;
        iAttnV++;
      } else if (nExpertRaw === 8 && cat === 'attn_k') {
        t = Q.Q4_K;
      } else if (cat === 'ffn_down') {
        if (iFfnDown < Math.trunc(nLayer / 8)) t = s2m ? Q.IQ3_S : Q.Q2_K;
        iFfnDown++;
      } else if (cat === 'attn_output') {
        if (nExpertRaw === 8) t = Q.Q5_K;
        else if (ft === 'IQ1_S' || ft === 'IQ1_M') t = Q.IQ2_XXS;
        else if (s2m) t = Q.IQ3_S;
      }
    } else if (isAttnV(cat)) {
      if (ft === 'Q2_K') t = nGqa >= 4 ? Q.Q4_K : Q.Q3_K;
      else if (ft === 'Q2_K_S' && nGqa >= 4) t = Q.Q4_K;
      else if (ft === 'IQ3_XXS') t = nGqa >= 4 ? Q.Q4_K : !opts.hasImatrix ? Q.IQ3_S : Q.IQ3_XXS;
      else if ((ft === 'IQ3_XS' || ft === 'IQ3_S') && nGqa >= 4) t = Q.Q4_K;
      else if (ft === 'IQ3_M') t = Q.Q4_K;
      else if (ft === 'Q3_K_M') t = iAttnV < 2 ? Q.Q5_K : Q.Q4_K;
      else if (ft === 'Q3_K_L') t = Q.Q5_K;
      else if ((ft === 'IQ4_NL' || ft === 'IQ4_XS') && nGqa >= 4) t = Q.Q5_K;
      else if ((ft === 'Q4_K_M' || ft === 'Q5_K_M') && useMoreBits(iAttnV, nAttnV)) t = Q.Q6_K;
      else if (ft === 'Q4_K_S' && iAttnV < 4) t = Q.Q5_K;
      if (is70B && (t === Q.Q3_K || t === Q.Q4_K)) t = Q.Q5_K;
      if (nExpertRaw === 8) t = Q.Q8_0;
      iAttnV++;
    } else if (cat === 'attn_k') {
      if (nExpertRaw === 8) t = Q.Q8_0;
      else if (ft === 'IQ3_XS') t = Q.IQ3_XXS;
      else if (ft === 'IQ3_XXS') t = Q.IQ2_S;
    } else if (cat === 'attn_q') {
      if (ft === 'IQ3_XS') t = Q.IQ3_XXS;
      else if (ft === 'IQ3_XXS') t = Q.IQ2_S;
    } else if (cat === 'ffn_down') {
      const i = layerInfo(iFfnDown, name);
      const n = nLayer;
      if (ft === 'Q2_K') t = Q.Q3_K;
      else if (ft === 'Q2_K_S') {
        if (i < Math.trunc(n / 8)) t = Q.Q4_K;
      } else if (ft === 'IQ3_XXS' && !opts.hasImatrix) t = i < Math.trunc(n / 8) ? Q.Q4_K : Q.Q3_K;
      else if (ft === 'Q3_K_M') {
        t = i < Math.trunc(n / 16) ? Q.Q5_K : !falcon || useMoreBits(i, n) ? Q.Q4_K : Q.Q3_K;
      } else if (ft === 'IQ3_M' && (i < Math.trunc(n / 8) || (nExpertRaw === 8 && useMoreBits(i, n)))) t = Q.Q4_K;
      else if (ft === 'Q3_K_L') t = falcon ? Q.Q4_K : Q.Q5_K;
      else if (ft === 'Q4_K_M') {
        if (falcon) t = i < Math.trunc(n / 16) ? Q.Q6_K : useMoreBits(i, n) ? Q.Q5_K : Q.Q4_K;
        else if (useMoreBits(i, n)) t = Q.Q6_K;
      } else if (i < Math.trunc(n / 8) && (ft === 'IQ4_NL' || ft === 'IQ4_XS') && !opts.hasImatrix) t = Q.Q5_K;
      else if (ft === 'Q5_K_M' && useMoreBits(i, n)) t = Q.Q6_K;
      else if (ft === 'Q4_K_S' && !falcon && i < Math.trunc(n / 8)) t = Q.Q5_K;
      else if ((ft === 'Q4_0' || ft === 'Q5_0') && opts.hasImatrix && i < Math.trunc(n / 8)) {
        // llama.cpp guards the first ffn_down layers of these with an imatrix only
        t = ft === 'Q4_0' ? Q.Q4_1 : Q.Q5_1;
      }
      iFfnDown++;
    } else if (cat === 'attn_output') {
      if (!falcon) {
        if (nExpertRaw === 8) {
          if (MOE8_ATTN_OUTPUT_Q5_K.includes(ft)) t = Q.Q5_K;
        } else if (ft === 'Q2_K') t = Q.Q3_K;
        else if (ft === 'IQ3_XXS') t = Q.IQ3_S;
        else if (ft === 'Q3_K_M') t = Q.Q4_K;
        else if (ft === 'Q3_K_L') t = Q.Q5_K;
        else if (ft === 'IQ3_M') t = Q.Q4_K;
      } else if (ft === 'Q3_K_L') t = Q.Q4_K;
    } else if (cat === 'ffn_gate') {
      // (a fused attn_qkv took the attn_v branch above: llama.cpp's own attn_qkv rules sit
      // behind that branch in the same chain and never run)
      const i = layerInfo(iFfnGate, name);
      if (ft === 'IQ3_XS' && i >= Math.trunc(nLayer / 8) && i < Math.trunc((7 * nLayer) / 8)) t = Q.IQ3_XXS;
      iFfnGate++;
    } else if (cat === 'ffn_up') {
      const i = layerInfo(iFfnUp, name);
      if (ft === 'IQ3_XS' && i >= Math.trunc(nLayer / 8) && i < Math.trunc((7 * nLayer) / 8)) t = Q.IQ3_XXS;
      iFfnUp++;
    }
    return t;
  };

  const out = new Map<string, TensorTypeChoice>();
  for (const t of sorted) {
    const src = (t.type ?? Q.F32) as GGMLType;
    const allowed = !opts.onlyCopy && allowsQuantization(t.name, t.dims, opts.quantizeOutputTensor ?? true);
    if (!allowed) {
      out.set(t.name, { type: src, requiresImatrix: false });
      continue;
    }
    const cat = categoryOf(t.name);
    let type: GGMLType;
    if (opts.tokenEmbeddingType !== undefined && cat === 'token_embd' && !namedPerLayerEmbd(t.name, opts)) {
      type = opts.tokenEmbeddingType;
    } else if (opts.outputTensorType !== undefined && cat === 'output') {
      type = opts.outputTensorType;
    } else if (!quantizedBase) {
      type = base;
    } else {
      type = base;
      const manual = opts.overrides?.find(([re]) => re.test(t.name));
      if (manual) type = manual[1];
      else if (!opts.pure) type = mixType(t.name, t.dims[0] ?? 0, t.dims[2] ?? 1, cat);
      const chosen = type;
      type = fallbackType(t.name, t.dims[0] ?? 0, type);
      if (type !== chosen) {
        out.set(t.name, { type, requiresImatrix: requiresImatrix(t.name, type, ft), fellBackFrom: chosen });
        continue;
      }
    }
    out.set(t.name, { type, requiresImatrix: requiresImatrix(t.name, type, ft) });
  }
  return out;
}

/** per_layer_token_embd follows --token-embedding-type unless a --tensor-type names it. */
function namedPerLayerEmbd(name: string, opts: TypeChoiceOptions): boolean {
  return name === 'per_layer_token_embd.weight' && (opts.overrides?.some(([re]) => re.test(name)) ?? false);
}
