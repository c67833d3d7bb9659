// The tensors and hyper-parameter keys of each architecture, named and shaped as
// llama.cpp's converters write them (and its model loader expects them).
import { GGUFValueType } from '../gguf/index.js';
import { swaPattern } from '../model/hparams.js';
import { planNextn, planQkv, planRecurrent, recurrentKeys, yarnKeys } from './layout-recurrent.js';
import { type GenArch, isGemma, isRecurrentArch, type ProjectionLayout, type ResolvedShape } from './spec.js';
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
  return withProjections(planUsual(arch, s, nVocab), s.projections);
}

/** The layout the converters write. */
function planUsual(arch: GenArch, s: ResolvedShape, nVocab: number): PlannedTensor[] {
  if (isGemma(arch)) return planGemma(arch, s, nVocab);
  if (arch === 'phi3') return planPhi3(s, nVocab);
  if (isRecurrentArch(arch)) return planRecurrent(arch, s, nVocab);
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

  // Decoder-only (llama, qwen2, qwen3, smollm3 and the mixtures of experts). A tied embedding
  // doubles as the output projection, so it gets a scale that keeps logits moderate (std ~
  // nEmbd^0.25) instead of std 1.
  add('token_embd.weight', [E, nVocab], { mean: 0, std: s.tiedEmbeddings ? E ** -0.25 : 1 });
  if (arch === 'llama') longRopeFactors(s, add);
  // Llama 3.1's factors run from 1 (high frequencies) to 8 (low ones)
  if (arch === 'llama' && s.ropeFreqs) add('rope_freqs.weight', [s.ropeDim / 2], { mean: 3, std: 1 });
  const ex = s.experts;
  // (deepseek2's multi-token-prediction blocks after the others: ordinary layers plus fusion tensors)
  for (let l = 0; l < s.nLayer + s.nextnLayers; l++) {
    const b = `blk.${l}.`;
    if (l >= s.nLayer) planNextn(add, b, E);
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
      planQkv(add, arch, b, E, qDim, kvDim);
      if (arch === 'qwen3' || arch === 'qwen3vl' || arch === 'qwen3moe') {
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
    if (ex.gateUpFused) add(`${b}ffn_gate_up_exps.weight`, [E, 2 * F, nE], linear(E));
    else {
      add(`${b}ffn_gate_exps.weight`, [E, F, nE], linear(E));
      add(`${b}ffn_up_exps.weight`, [E, F, nE], linear(E));
    }
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
  // Qwen3-Reranker: the converter copies the output rows of "yes" and "no" here
  if (arch === 'qwen3' && s.poolingType === 4) add('cls.output.weight', [E, 2], linear(E));
  return out;
}

/** The `{arch}.*` hyper-parameter keys, in converter order. */
export function hparamKeys(arch: GenArch, s: ResolvedShape): VocabKV[] {
  if (isRecurrentArch(arch)) return recurrentKeys(arch, s);
  const u32 = (k: string, value: number): VocabKV => ({ key: `${arch}.${k}`, type: GGUFValueType.UINT32, value });
  const f32 = (k: string, value: number): VocabKV => ({ key: `${arch}.${k}`, type: GGUFValueType.FLOAT32, value });
  const kv: VocabKV[] = [
    u32('context_length', s.nCtxTrain),
    u32('embedding_length', s.nEmbd),
    u32('block_count', s.nLayer + s.nextnLayers),
    u32('feed_forward_length', s.nFf),
    u32('attention.head_count', s.nHead),
  ];
  if (s.nextnLayers > 0) kv.push(u32('nextn_predict_layers', s.nextnLayers));
  if (arch === 'gemma4') {
    // one KV head count per layer (sliding-window and full layers differ)
    const swa = swaLayersOf(arch, s);
    kv.push({
      key: `${arch}.attention.head_count_kv`,
      type: GGUFValueType.ARRAY,
      value: { itemType: GGUFValueType.UINT32, items: Uint32Array.from(swa, (w) => (w ? s.nHeadKvSwa : s.nHeadKv)) },
    });
  } else {
    kv.push(u32('attention.head_count_kv', s.nHeadKv));
  }
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
  kv.push(...yarnKeys(arch, s));
  if (arch === 'qwen2vl' || arch === 'qwen3vl') {
    const items = Int32Array.from(s.ropeSections);
    if (arch === 'qwen3vl' && s.deepstackLayers > 0) kv.push(u32('n_deepstack_layers', s.deepstackLayers));
    kv.push({
      key: `${arch}.rope.dimension_sections`,
      type: GGUFValueType.ARRAY,
      value: { itemType: GGUFValueType.INT32, items },
    });
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
    if (s.attnTemp.scale !== 0) {
      kv.push(f32('attention.temperature_scale', s.attnTemp.scale));
      kv.push(u32('attention.temperature_length', s.attnTemp.length));
    }
  } else if (
    arch === 'qwen3' ||
    arch === 'qwen3vl' ||
    arch === 'qwen3moe' ||
    arch === 'gpt-oss' ||
    isGemma(arch) ||
    s.headDim !== s.nEmbd / s.nHead
  ) {
    // Qwen3, Gemma and gpt-oss configs give head_dim explicitly (and the converters write
    // it); other models need it only when it is not n_embd / n_head.
    kv.push(u32('attention.key_length', s.headDim));
    kv.push(u32('attention.value_length', s.headDim));
  }
  const ex = s.experts;
  if (ex) {
    if (arch === 'deepseek2') kv.push(u32('leading_dense_block_count', ex.nDenseLead ?? 0));
    kv.push(u32('expert_count', ex.nExpert));
    kv.push(u32('expert_used_count', ex.nUsed));
    if (arch !== 'llama') kv.push(u32('expert_feed_forward_length', ex.nFf));
    if (ex.groups) {
      kv.push(u32('expert_group_count', ex.groups.n));
      kv.push(u32('expert_group_used_count', ex.groups.used));
    }
    if (arch === 'qwen2moe') kv.push(u32('expert_shared_feed_forward_length', ex.nShared ?? 0));
    if (arch === 'deepseek2') {
      kv.push(u32('expert_shared_count', ex.nShared ?? 0));
      kv.push(f32('expert_weights_scale', ex.weightsScale ?? 1));
      kv.push({ key: `${arch}.expert_weights_norm`, type: GGUFValueType.BOOL, value: ex.weightsNorm ?? false });
      kv.push(u32('expert_gating_func', ex.gating === 'sigmoid' ? 2 : 1));
    }
  }
  if (arch === 'gpt-oss') kv.push(u32('attention.sliding_window', s.slidingWindow || 128));
  if (isGemma(arch)) kv.push(...gemmaKeys(arch, s, u32, f32));
  if (arch === 'llama' && s.longRope.nCtxOrig > 0) {
    kv.push({ key: 'llama.rope.scaling.type', type: GGUFValueType.STRING, value: 'longrope' });
    kv.push(u32('rope.scaling.original_context_length', s.longRope.nCtxOrig));
    kv.push(f32('rope.scaling.attn_factor', s.longRope.attnFactor));
  }
  if (arch === 'phi3') {
    if (s.longRope.nCtxOrig > 0) {
      kv.push(u32('rope.scaling.original_context_length', s.longRope.nCtxOrig));
      kv.push(f32('rope.scaling.attn_factor', s.longRope.attnFactor));
    }
    if (s.slidingWindow > 0) kv.push(u32('attention.sliding_window', s.slidingWindow));
  }
  return kv;
}

// ---- gemma2 / gemma3 / gemma-embedding / gemma4 ----------------------------------

/** Which layers slide (the `attention.sliding_window_pattern` the file gets). */
export function swaLayersOf(arch: GenArch, s: ResolvedShape): boolean[] {
  if (Array.isArray(s.swaPattern)) return s.swaPattern;
  const period = s.swaPattern || (arch === 'gemma2' ? 2 : 6);
  return swaPattern(s.nLayer, period);
}

function gemmaKeys(
  arch: GenArch,
  s: ResolvedShape,
  u32: (k: string, v: number) => VocabKV,
  f32: (k: string, v: number) => VocabKV,
): VocabKV[] {
  const kv: VocabKV[] = [];
  if (s.slidingWindow > 0) kv.push(u32('attention.sliding_window', s.slidingWindow));
  if (arch === 'gemma4') {
    kv.push(u32('attention.key_length_swa', s.headDimSwa));
    kv.push(u32('attention.value_length_swa', s.headDimSwa));
    kv.push(u32('rope.dimension_count_swa', s.ropeDimSwa));
    kv.push({
      key: `${arch}.attention.sliding_window_pattern`,
      type: GGUFValueType.ARRAY,
      value: { itemType: GGUFValueType.BOOL, items: swaLayersOf(arch, s) },
    });
    kv.push(f32('rope.freq_base_swa', s.ropeFreqBaseSwa));
    kv.push(u32('attention.shared_kv_layers', s.sharedKvLayers));
    kv.push(u32('embedding_length_per_layer_input', s.embdPerLayer));
  } else if (arch !== 'gemma2' && s.slidingWindow > 0) {
    // (an array here is what llama.cpp's gemma3 / gemma-embedding loaders pass over: test/refs/variants)
    kv.push(
      Array.isArray(s.swaPattern)
        ? {
            key: `${arch}.attention.sliding_window_pattern`,
            type: GGUFValueType.ARRAY,
            value: { itemType: GGUFValueType.BOOL, items: s.swaPattern },
          }
        : u32(
            'attention.sliding_window_pattern',
            typeof s.swaPattern === 'number' && s.swaPattern > 0 ? s.swaPattern : 6,
          ),
    );
    kv.push(f32('rope.freq_base_swa', s.ropeFreqBaseSwa));
  }
  if (arch === 'gemma2') kv.push(f32('attn_logit_softcapping', s.attnSoftcap || 50));
  if (arch === 'gemma2' || s.finalSoftcap > 0) kv.push(f32('final_logit_softcapping', s.finalSoftcap || 30));
  // without the key llama.cpp caps Gemma 4 at 30: no cap is an explicit 0
  else if (arch === 'gemma4') kv.push(f32('final_logit_softcapping', 0));
  if (arch === 'gemma-embedding') {
    kv.push({ key: `${arch}.attention.causal`, type: GGUFValueType.BOOL, value: false });
    kv.push(u32('pooling_type', s.poolingType));
    if (s.denseDim > 0) {
      kv.push(u32('dense_2_feat_in', s.nEmbd));
      kv.push(u32('dense_2_feat_out', s.denseDim));
      kv.push(u32('dense_3_feat_in', s.denseDim));
      kv.push(u32('dense_3_feat_out', s.nEmbd));
    }
  }
  return kv;
}

function planGemma(arch: GenArch, s: ResolvedShape, nVocab: number): PlannedTensor[] {
  const out: PlannedTensor[] = [];
  const add = (name: string, dims: number[], init: TensorInit) => out.push({ name, dims, init });
  const E = s.nEmbd;
  const L = s.nLayer;
  const swa = swaLayersOf(arch, s);
  const nPL = arch === 'gemma4' ? s.embdPerLayer : 0;
  const tied = s.tiedEmbeddings;
  // embeddings are scaled by √n_embd (the norms absorb it); a tied table of std n_embd^-0.25
  // gives logits of std ~n_embd^0.25, as for the llama family
  add('token_embd.weight', [E, nVocab], { mean: 0, std: s.embdStd || (tied ? E ** -0.25 : 1 / Math.sqrt(E)) });
  if (nPL > 0) {
    add('per_layer_token_embd.weight', [nPL * L, nVocab], { mean: 0, std: 1 / Math.sqrt(nPL) });
    add('per_layer_model_proj.weight', [E, nPL * L], linear(E));
    add('per_layer_proj_norm.weight', [nPL], NORM);
  }
  if (arch === 'gemma4' && swa.some((w) => !w)) add('rope_freqs.weight', [s.headDim / 2], { mean: 1, std: 0.1 });
  for (let l = 0; l < L; l++) {
    const b = `blk.${l}.`;
    const g4 = arch === 'gemma4';
    const hd = g4 && swa[l] ? s.headDimSwa : s.headDim;
    const nKv = g4 && swa[l] ? s.nHeadKvSwa : s.nHeadKv;
    const ownKv = !g4 || l < L - s.sharedKvLayers;
    add(`${b}attn_norm.weight`, [E], NORM);
    add(`${b}attn_q.weight`, [E, hd * s.nHead], linear(E));
    if (ownKv) add(`${b}attn_k.weight`, [E, hd * nKv], linear(E));
    if (ownKv && !(g4 && !swa[l] && s.fullLayersWithoutV)) add(`${b}attn_v.weight`, [E, hd * nKv], linear(E));
    add(`${b}attn_output.weight`, [hd * s.nHead, E], linear(hd * s.nHead));
    if (arch !== 'gemma2') {
      const qk = { mean: s.qkNormScale, std: 0.1 * s.qkNormScale };
      add(`${b}attn_q_norm.weight`, [hd], qk);
      if (ownKv) add(`${b}attn_k_norm.weight`, [hd], qk);
    }
    add(`${b}post_attention_norm.weight`, [E], NORM);
    if (g4 && s.layerOutputScale) add(`${b}layer_output_scale.weight`, [1], { mean: 0.8, std: 0.1 });
    add(`${b}ffn_norm.weight`, [E], NORM);
    add(`${b}ffn_gate.weight`, [E, s.nFf], linear(E));
    add(`${b}ffn_up.weight`, [E, s.nFf], linear(E));
    add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
    add(`${b}post_ffw_norm.weight`, [E], NORM);
    const ex = g4 ? s.experts : undefined;
    if (ex) {
      // the router reads rmsnorm(x)/√E·scale, so weights of std 1 give logits of std ~1
      add(`${b}ffn_gate_inp.weight`, [E, ex.nExpert], { mean: 0, std: ex.routerStd ?? 1 });
      add(`${b}ffn_gate_inp.scale`, [E], NORM);
      if (ex.gateUpFused) add(`${b}ffn_gate_up_exps.weight`, [E, 2 * ex.nFf, ex.nExpert], linear(E));
      else {
        add(`${b}ffn_gate_exps.weight`, [E, ex.nFf, ex.nExpert], linear(E));
        add(`${b}ffn_up_exps.weight`, [E, ex.nFf, ex.nExpert], linear(E));
      }
      add(`${b}ffn_down_exps.weight`, [ex.nFf, E, ex.nExpert], linear(ex.nFf));
      if (ex.downScale) add(`${b}ffn_down_exps.scale`, [ex.nExpert], NORM);
      add(`${b}pre_ffw_norm_2.weight`, [E], NORM);
      add(`${b}post_ffw_norm_1.weight`, [E], NORM);
      add(`${b}post_ffw_norm_2.weight`, [E], NORM);
    }
    if (nPL > 0) {
      add(`${b}inp_gate.weight`, [E, nPL], linear(E));
      add(`${b}proj.weight`, [nPL, E], linear(nPL));
      add(`${b}post_norm.weight`, [E], NORM);
    }
  }
  add('output_norm.weight', [E], NORM);
  if (arch === 'gemma-embedding' && s.denseDim > 0) {
    add('dense_2.weight', [E, s.denseDim], linear(E));
    add('dense_3.weight', [s.denseDim, E], linear(s.denseDim));
  }
  if (!tied) add('output.weight', [E, nVocab], linear(E));
  return out;
}

// ---- phi3 --------------------------------------------------------------------------

function planPhi3(s: ResolvedShape, nVocab: number): PlannedTensor[] {
  const out: PlannedTensor[] = [];
  const add = (name: string, dims: number[], init: TensorInit) => out.push({ name, dims, init });
  const E = s.nEmbd;
  const q = s.nHead * s.headDim;
  const kv = s.nHeadKv * s.headDim;
  add('token_embd.weight', [E, nVocab], { mean: 0, std: s.tiedEmbeddings ? E ** -0.25 : 1 });
  longRopeFactors(s, add);
  for (let l = 0; l < s.nLayer; l++) {
    const b = `blk.${l}.`;
    add(`${b}attn_norm.weight`, [E], NORM);
    add(`${b}attn_qkv.weight`, [E, q + 2 * kv], linear(E));
    add(`${b}attn_output.weight`, [q, E], linear(q));
    add(`${b}ffn_norm.weight`, [E], NORM);
    add(`${b}ffn_up.weight`, [E, 2 * s.nFf], linear(E));
    add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
  }
  add('output_norm.weight', [E], NORM);
  if (!s.tiedEmbeddings) add('output.weight', [E, nVocab], linear(E));
  return out;
}

/** LongRoPE's factor sets (phi3, llama), when the shape has them. */
function longRopeFactors(s: ResolvedShape, add: (name: string, dims: number[], init: TensorInit) => void): void {
  if (s.longRope.nCtxOrig <= 0) return;
  // LongRoPE divides each pair's frequency by a factor: near 1 for the short set, up to tens for the long one
  add('rope_factors_long.weight', [s.ropeDim / 2], { mean: 8, std: 3 });
  add('rope_factors_short.weight', [s.ropeDim / 2], { mean: 1.05, std: 0.03 });
}

/**
 * The converters' layout rewritten to a projection layout llama.cpp's loaders also take,
 * for every architecture: the biases named in `noBiases` left out, those in `biases` added
 * (after their weights), then q/k/v fused into attn_qkv (rows q, k, v; one bias when any
 * had one, in q's place) or attn_qkv split into attn_q/k/v (its bias likewise). The order
 * and names are those a layout written directly would have, so the bytes are too.
 */
function withProjections(plan: PlannedTensor[], p: ProjectionLayout): PlannedTensor[] {
  const projection = (name: string) => /^(?:blk\.\d+\.)?([a-z_]+)\.(?:weight|bias)$/.exec(name)?.[1];
  const drop = new Set(p.noBiases ?? []);
  let out = drop.size > 0 ? plan.filter((t) => !(t.name.endsWith('.bias') && drop.has(projection(t.name)!))) : plan;
  const biases = new Set(p.biases ?? []);
  if (biases.size > 0) {
    const has = new Set(out.map((t) => t.name));
    out = out.flatMap((t) => {
      const bias = t.name.replace(/\.weight$/, '.bias');
      const m = projection(t.name);
      return t.name.endsWith('.weight') && m && biases.has(m) && !has.has(bias)
        ? [t, { name: bias, dims: [t.dims[1]], init: BIAS }]
        : [t];
    });
  }
  if (p.qkv === 'fused') out = fuseQkv(out);
  if (p.qkv === 'split') out = splitQkv(out);
  return out;
}

const QKV = ['attn_q', 'attn_k', 'attn_v'] as const;

function fuseQkv(plan: PlannedTensor[]): PlannedTensor[] {
  const byName = new Map(plan.map((t) => [t.name, t]));
  const out: PlannedTensor[] = [];
  for (const t of plan) {
    const m = /^(blk\.\d+\.)attn_([qkv])\.(weight|bias)$/.exec(t.name);
    if (!m) {
      out.push(t);
      continue;
    }
    const [, b, which, kind] = m;
    if (kind === 'weight' && which === 'q') {
      const parts = QKV.map((x) => byName.get(`${b}${x}.weight`)!);
      const rows = parts.reduce((n, x) => n + x.dims[1], 0);
      out.push({ name: `${b}attn_qkv.weight`, dims: [t.dims[0], rows], init: t.init });
      if (QKV.some((x) => byName.has(`${b}${x}.bias`)))
        out.push({ name: `${b}attn_qkv.bias`, dims: [rows], init: BIAS });
    }
  }
  return out;
}

function splitQkv(plan: PlannedTensor[]): PlannedTensor[] {
  const out: PlannedTensor[] = [];
  const weights = new Map<string, number[]>();
  for (const t of plan) {
    const m = /^(blk\.\d+\.)attn_qkv\.(weight|bias)$/.exec(t.name);
    if (!m) {
      out.push(t);
      continue;
    }
    const [, b, kind] = m;
    // the attn_output that follows tells the query width (n_head · head size); a block
    // without one (qwen35's Gated DeltaNet layers) keeps its attn_qkv
    const output = plan.find((x) => x.name === `${b}attn_output.weight`);
    if (!output) {
      out.push(t);
      continue;
    }
    if (kind === 'weight') {
      const q = output.dims[0];
      const kv = (t.dims[1] - q) / 2;
      const rows = [q, kv, kv];
      weights.set(b, rows);
      QKV.forEach((x, i) => {
        out.push({ name: `${b}${x}.weight`, dims: [t.dims[0], rows[i]], init: t.init });
      });
    } else {
      const rows = weights.get(b)!;
      QKV.forEach((x, i) => {
        out.push({ name: `${b}${x}.bias`, dims: [rows[i]], init: BIAS });
      });
    }
  }
  return out;
}
