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
    return out;
  }

  // Decoder-only (llama, qwen2, qwen3 and the mixtures of experts). A tied embedding doubles
  // as the output projection, so it gets a scale that keeps logits moderate (std ~
  // nEmbd^0.25) instead of std 1.
  add('token_embd.weight', [E, nVocab], { mean: 0, std: s.tiedEmbeddings ? E ** -0.25 : 1 });
  const ex = s.experts;
  const hasBias = arch === 'qwen2' || arch === 'qwen2moe' || arch === 'gpt-oss';
  for (let l = 0; l < s.nLayer; l++) {
    const b = `blk.${l}.`;
    add(`${b}attn_norm.weight`, [E], NORM);
    if (arch === 'deepseek2') {
      const m = s.mla!;
      const nope = m.headK - s.ropeDim;
      if (m.qLoraRank > 0) {
        add(`${b}attn_q_a.weight`, [E, m.qLoraRank], linear(E));
        add(`${b}attn_q_a_norm.weight`, [m.qLoraRank], NORM);
        add(`${b}attn_q_b.weight`, [m.qLoraRank, s.nHead * m.headK], linear(m.qLoraRank));
      } else add(`${b}attn_q.weight`, [E, s.nHead * m.headK], linear(E));
      add(`${b}attn_kv_a_mqa.weight`, [E, m.kvLoraRank + s.ropeDim], linear(E));
      add(`${b}attn_kv_a_norm.weight`, [m.kvLoraRank], NORM);
      add(`${b}attn_k_b.weight`, [nope, m.kvLoraRank, s.nHead], linear(nope));
      add(`${b}attn_v_b.weight`, [m.kvLoraRank, m.headV, s.nHead], linear(m.kvLoraRank));
      add(`${b}attn_output.weight`, [s.nHead * m.headV, E], linear(s.nHead * m.headV));
    } else {
      add(`${b}attn_q.weight`, [E, qDim], linear(E));
      if (hasBias) add(`${b}attn_q.bias`, [qDim], BIAS);
      add(`${b}attn_k.weight`, [E, kvDim], linear(E));
      if (hasBias) add(`${b}attn_k.bias`, [kvDim], BIAS);
      add(`${b}attn_v.weight`, [E, kvDim], linear(E));
      if (hasBias) add(`${b}attn_v.bias`, [kvDim], BIAS);
      if (arch === 'qwen3' || arch === 'qwen3moe') {
        add(`${b}attn_q_norm.weight`, [s.headDim], NORM);
        add(`${b}attn_k_norm.weight`, [s.headDim], NORM);
      }
      add(`${b}attn_output.weight`, [qDim, E], linear(qDim));
      if (arch === 'gpt-oss') {
        add(`${b}attn_output.bias`, [E], BIAS);
        add(`${b}attn_sinks.weight`, [s.nHead], { mean: 0, std: 1 });
      }
    }
    add(`${b}${arch === 'gpt-oss' ? 'post_attention_norm' : 'ffn_norm'}.weight`, [E], NORM);
    if (!ex || (arch === 'deepseek2' && l < (ex.nDenseLead ?? 0))) {
      add(`${b}ffn_gate.weight`, [E, s.nFf], linear(E));
      add(`${b}ffn_up.weight`, [E, s.nFf], linear(E));
      add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
      continue;
    }
    const nE = ex.nExpert;
    const F = ex.nFf;
    add(`${b}ffn_gate_inp.weight`, [E, nE], { mean: 0, std: ex.routerStd ?? 1 / Math.sqrt(E) });
    if (arch === 'gpt-oss') add(`${b}ffn_gate_inp.bias`, [nE], BIAS);
    if (arch === 'deepseek2' && ex.probsBias) add(`${b}exp_probs_b.bias`, [nE], { mean: 0, std: 0.05 });
    add(`${b}ffn_gate_exps.weight`, [E, F, nE], linear(E));
    add(`${b}ffn_up_exps.weight`, [E, F, nE], linear(E));
    add(`${b}ffn_down_exps.weight`, [F, E, nE], linear(F));
    if (arch === 'gpt-oss') {
      add(`${b}ffn_gate_exps.bias`, [F, nE], BIAS);
      add(`${b}ffn_up_exps.bias`, [F, nE], BIAS);
      add(`${b}ffn_down_exps.bias`, [E, nE], BIAS);
    }
    const shared = ex.nShared ?? 0;
    if (arch === 'qwen2moe' && shared > 0) {
      add(`${b}ffn_gate_inp_shexp.weight`, [E], linear(E));
      add(`${b}ffn_gate_shexp.weight`, [E, shared], linear(E));
      add(`${b}ffn_up_shexp.weight`, [E, shared], linear(E));
      add(`${b}ffn_down_shexp.weight`, [shared, E], linear(shared));
    }
    if (arch === 'deepseek2' && shared > 0) {
      add(`${b}ffn_gate_shexp.weight`, [E, F * shared], linear(E));
      add(`${b}ffn_up_shexp.weight`, [E, F * shared], linear(E));
      add(`${b}ffn_down_shexp.weight`, [F * shared, E], linear(F * shared));
    }
  }
  add('output_norm.weight', [E], NORM);
  if (!s.tiedEmbeddings) add('output.weight', [E, nVocab], linear(E));
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
  kv.push(f32('attention.layer_norm_rms_epsilon', s.normEps));
  kv.push(f32('rope.freq_base', s.ropeFreqBase));
  kv.push(u32('rope.dimension_count', s.ropeDim));
  if (s.yarn) {
    kv.push({ key: `${arch}.rope.scaling.type`, type: GGUFValueType.STRING, value: 'yarn' });
    kv.push(f32('rope.scaling.factor', s.yarn.factor));
    kv.push(u32('rope.scaling.original_context_length', s.yarn.originalContext));
    if (s.yarn.logMultiplier !== undefined) kv.push(f32('rope.scaling.yarn_log_multiplier', s.yarn.logMultiplier));
  }
  if (arch === 'deepseek2') {
    // the latent cache's row: [kv_lora_rank | rope dims] for keys, the latent for values
    const m = s.mla!;
    kv.push(u32('attention.key_length', m.kvLoraRank + s.ropeDim));
    kv.push(u32('attention.value_length', m.kvLoraRank));
    kv.push(u32('attention.key_length_mla', m.headK));
    kv.push(u32('attention.value_length_mla', m.headV));
    if (m.qLoraRank > 0) kv.push(u32('attention.q_lora_rank', m.qLoraRank));
    kv.push(u32('attention.kv_lora_rank', m.kvLoraRank));
  } else if (arch === 'qwen3' || arch === 'qwen3moe' || arch === 'gpt-oss' || s.headDim !== s.nEmbd / s.nHead) {
    // Qwen3 and gpt-oss configs give head_dim explicitly (and the converters write it);
    // other models need it only when it is not n_embd / n_head.
    kv.push(u32('attention.key_length', s.headDim));
    kv.push(u32('attention.value_length', s.headDim));
  }
  const ex = s.experts;
  if (ex) {
    if (arch === 'deepseek2') kv.push(u32('leading_dense_block_count', ex.nDenseLead ?? 0));
    kv.push(u32('expert_count', ex.nExpert));
    kv.push(u32('expert_used_count', ex.nUsed));
    if (arch !== 'llama') kv.push(u32('expert_feed_forward_length', ex.nFf));
    if (arch === 'qwen2moe') kv.push(u32('expert_shared_feed_forward_length', ex.nShared ?? 0));
    if (arch === 'deepseek2') {
      kv.push(u32('expert_shared_count', ex.nShared ?? 0));
      kv.push(f32('expert_weights_scale', ex.weightsScale ?? 1));
      kv.push({ key: `${arch}.expert_weights_norm`, type: GGUFValueType.BOOL, value: ex.weightsNorm ?? false });
      kv.push(u32('expert_gating_func', ex.gating === 'sigmoid' ? 2 : 1));
    }
  }
  if (arch === 'gpt-oss') kv.push(u32('attention.sliding_window', s.slidingWindow));
  return kv;
}
