// The tensors and hyper-parameter keys of each architecture, named and shaped as
// llama.cpp's converters write them (and its model loader expects them).
import { GGUFValueType } from '../gguf/index.js';
import type { GenArch, ResolvedShape } from './spec.js';
import type { VocabKV } from './vocab.js';

/** How a tensor's values are drawn: normal(mean, std). */
export interface TensorInit {
  mean: number;
  std: number;
}

export interface PlannedTensor {
  name: string;
  /** ggml order: dims[0] is the row length. */
  dims: number[];
  init: TensorInit;
}

const NORM: TensorInit = { mean: 1, std: 0.1 };
const BIAS: TensorInit = { mean: 0, std: 0.1 };
/** Linear layers: std 1/sqrt(fan_in), so outputs of normalized inputs have unit scale. */
const linear = (fanIn: number): TensorInit => ({ mean: 0, std: 1 / Math.sqrt(fanIn) });

/** Tensors of a model in converter order (token embeddings, blocks in module order, head). */
export function planTensors(arch: GenArch, s: ResolvedShape, nVocab: number): PlannedTensor[] {
  const out: PlannedTensor[] = [];
  const add = (name: string, dims: number[], init: TensorInit) => out.push({ name, dims, init });
  const E = s.nEmbd;
  const qDim = s.nHead * s.headDim;
  const kvDim = s.nHeadKv * s.headDim;

  if (arch === 'bert') {
    add('token_embd.weight', [E, nVocab], { mean: 0, std: 1 });
    add('token_types.weight', [E, s.nTypeVocab], { mean: 0, std: 1 });
    add('position_embd.weight', [E, s.nCtxTrain], { mean: 0, std: 1 });
    add('token_embd_norm.weight', [E], NORM);
    add('token_embd_norm.bias', [E], BIAS);
    for (let l = 0; l < s.nLayer; l++) {
      const b = `blk.${l}.`;
      add(`${b}attn_q.weight`, [E, qDim], linear(E));
      add(`${b}attn_q.bias`, [qDim], BIAS);
      add(`${b}attn_k.weight`, [E, kvDim], linear(E));
      add(`${b}attn_k.bias`, [kvDim], BIAS);
      add(`${b}attn_v.weight`, [E, kvDim], linear(E));
      add(`${b}attn_v.bias`, [kvDim], BIAS);
      add(`${b}attn_output.weight`, [qDim, E], linear(qDim));
      add(`${b}attn_output.bias`, [E], BIAS);
      add(`${b}attn_output_norm.weight`, [E], NORM);
      add(`${b}attn_output_norm.bias`, [E], BIAS);
      add(`${b}ffn_up.weight`, [E, s.nFf], linear(E));
      add(`${b}ffn_up.bias`, [s.nFf], BIAS);
      add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
      add(`${b}ffn_down.bias`, [E], BIAS);
      add(`${b}layer_output_norm.weight`, [E], NORM);
      add(`${b}layer_output_norm.bias`, [E], BIAS);
    }
    if (s.poolingType === 4) {
      add('cls.weight', [E, E], linear(E));
      add('cls.bias', [E], BIAS);
      add('cls.output.weight', [E, 1], linear(E));
      add('cls.output.bias', [1], BIAS);
    }
    return out;
  }

  // Decoder-only (llama, qwen2, qwen3). A tied embedding doubles as the output projection,
  // so it gets a scale that keeps logits moderate (std ~ nEmbd^0.25) instead of std 1.
  add('token_embd.weight', [E, nVocab], { mean: 0, std: s.tiedEmbeddings ? E ** -0.25 : 1 });
  for (let l = 0; l < s.nLayer; l++) {
    const b = `blk.${l}.`;
    add(`${b}attn_norm.weight`, [E], NORM);
    add(`${b}attn_q.weight`, [E, qDim], linear(E));
    if (arch === 'qwen2') add(`${b}attn_q.bias`, [qDim], BIAS);
    add(`${b}attn_k.weight`, [E, kvDim], linear(E));
    if (arch === 'qwen2') add(`${b}attn_k.bias`, [kvDim], BIAS);
    add(`${b}attn_v.weight`, [E, kvDim], linear(E));
    if (arch === 'qwen2') add(`${b}attn_v.bias`, [kvDim], BIAS);
    if (arch === 'qwen3') {
      add(`${b}attn_q_norm.weight`, [s.headDim], NORM);
      add(`${b}attn_k_norm.weight`, [s.headDim], NORM);
    }
    add(`${b}attn_output.weight`, [qDim, E], linear(qDim));
    add(`${b}ffn_norm.weight`, [E], NORM);
    add(`${b}ffn_gate.weight`, [E, s.nFf], linear(E));
    add(`${b}ffn_up.weight`, [E, s.nFf], linear(E));
    add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
  }
  add('output_norm.weight', [E], NORM);
  if (!s.tiedEmbeddings) add('output.weight', [E, nVocab], linear(E));
  // Qwen3-Reranker: the converter copies the output rows of "yes" and "no" here
  if (arch === 'qwen3' && s.poolingType === 4) add('cls.output.weight', [E, 2], linear(E));
  return out;
}

/** The `{arch}.*` hyper-parameter keys, in converter order. */
export function hparamKeys(arch: GenArch, s: ResolvedShape): VocabKV[] {
  const u32 = (k: string, value: number): VocabKV => ({ key: `${arch}.${k}`, type: GGUFValueType.UINT32, value });
  const f32 = (k: string, value: number): VocabKV => ({ key: `${arch}.${k}`, type: GGUFValueType.FLOAT32, value });
  const kv: VocabKV[] = [
    u32('context_length', s.nCtxTrain),
    u32('embedding_length', s.nEmbd),
    u32('block_count', s.nLayer),
    u32('feed_forward_length', s.nFf),
    u32('attention.head_count', s.nHead),
    u32('attention.head_count_kv', s.nHeadKv),
  ];
  if (arch === 'bert') {
    kv.push(f32('attention.layer_norm_epsilon', s.normEps));
    kv.push({ key: 'bert.attention.causal', type: GGUFValueType.BOOL, value: false });
    kv.push(u32('pooling_type', s.poolingType));
    return kv;
  }
  if (arch === 'qwen3' && s.poolingType === 4) {
    kv.push(u32('pooling_type', 4));
    kv.push({
      key: 'qwen3.classifier.output_labels',
      type: GGUFValueType.ARRAY,
      value: { itemType: GGUFValueType.STRING, items: ['yes', 'no'] },
    });
  }
  kv.push(f32('attention.layer_norm_rms_epsilon', s.normEps));
  kv.push(f32('rope.freq_base', s.ropeFreqBase));
  kv.push(u32('rope.dimension_count', s.ropeDim));
  // Qwen3 configs give head_dim explicitly (and the converter writes it); other models
  // need it only when it is not n_embd / n_head.
  if (arch === 'qwen3' || s.headDim !== s.nEmbd / s.nHead) {
    kv.push(u32('attention.key_length', s.headDim));
    kv.push(u32('attention.value_length', s.headDim));
  }
  return kv;
}
