// Tensors and hyper-parameter keys of the architectures with recurrent layers (qwen35,
// lfm2, granitehybrid, nemotron_h, and their mixtures of experts qwen35moe, lfm2moe,
// granitehybrid with experts, nemotron_h_moe), named and shaped as llama.cpp's converters
// write them. A layer's kind ('R' recurrent, 'A' attention, 'F' feed-forward only) decides its
// tensors; llama.cpp reads the kinds back from `full_attention_interval` (qwen35), zeros
// in the per-layer `attention.head_count_kv` (lfm2, granitehybrid) and, for nemotron_h,
// zeros in both that and the per-layer `feed_forward_length`.

import { GGUFValueType } from '../gguf/index.js';
import { type GenArch, type ResolvedShape, recurrentFamily } from './spec.js';
import type { VocabKV } from './vocab.js';

/** normal(mean, std), as layout.ts draws tensors. */
interface TensorInit {
  mean: number;
  std: number;
}

interface PlannedTensor {
  name: string;
  dims: number[];
  init: TensorInit;
}

const NORM: TensorInit = { mean: 1, std: 0.1 };
const BIAS: TensorInit = { mean: 0, std: 0.1 };
const linear = (fanIn: number): TensorInit => ({ mean: 0, std: 1 / Math.sqrt(fanIn) });
/** Decays A = -exp(A_log) (ssm_a as converters store it): negative, around -1. */
const DECAY: TensorInit = { mean: -1, std: 0.3 };
/** Time-step biases: softplus(dt + bias) around 0.3. */
const DT_BIAS: TensorInit = { mean: -1, std: 0.5 };

/** Each layer's kind: 'R' recurrent, 'A' attention, 'F' feed-forward only. */
export function layerKindsOf(arch: GenArch, s: ResolvedShape): string {
  if (recurrentFamily(arch) !== 'qwen35') return s.layerKinds;
  let k = '';
  for (let il = 0; il < s.nLayer; il++) k += (il + 1) % s.fullAttentionInterval === 0 ? 'A' : 'R';
  return k;
}

export function planRecurrent(arch: GenArch, s: ResolvedShape, nVocab: number): PlannedTensor[] {
  const out: PlannedTensor[] = [];
  const add = (name: string, dims: number[], init: TensorInit) => out.push({ name, dims, init });
  const family = recurrentFamily(arch);
  const E = s.nEmbd;
  const hd = s.headDim;
  const kinds = layerKindsOf(arch, s);
  const m = s.ssm;
  const ex = s.experts;
  const tied = s.tiedEmbeddings;
  add('token_embd.weight', [E, nVocab], { mean: 0, std: tied ? E ** -0.25 : 1 });
  if (family !== 'lfm2') {
    add('output_norm.weight', [E], NORM);
    if (!tied) add('output.weight', [E, nVocab], linear(E));
  }
  for (let l = 0; l < s.nLayer + s.nextnLayers; l++) {
    const b = `blk.${l}.`;
    if (l >= s.nLayer) {
      // multi-token-prediction blocks after the others: qwen35's an attention layer,
      // nemotron_h_moe's an attention and an expert sub-layer
      planNextn(add, b, E);
      if (family === 'nemotron_h') {
        add(`${b}attn_norm.weight`, [E], NORM);
        planQkv(add, arch, b, E, hd * s.nHead, hd * s.nHeadKv);
        add(`${b}attn_output.weight`, [hd * s.nHead, E], linear(hd * s.nHead));
        add(`${b}post_attention_norm.weight`, [E], NORM);
        planExperts(add, family, b, E, ex!, true);
        continue;
      }
    }
    const kind = l < s.nLayer ? kinds[l] : 'A';
    add(`${b}attn_norm.weight`, [E], NORM);
    if (family === 'qwen35') add(`${b}post_attention_norm.weight`, [E], NORM);
    if (kind === 'R') {
      if (family === 'qwen35') {
        const channels = m.dInner + 2 * m.nGroup * m.dState;
        add(`${b}attn_qkv.weight`, [E, channels], linear(E));
        add(`${b}attn_gate.weight`, [E, m.dInner], linear(E));
        add(`${b}ssm_conv1d.weight`, [m.dConv, channels], linear(m.dConv));
        add(`${b}ssm_dt.bias`, [m.nHead], DT_BIAS);
        add(`${b}ssm_a`, [m.nHead], DECAY);
        add(`${b}ssm_beta.weight`, [E, m.nHead], linear(E));
        add(`${b}ssm_alpha.weight`, [E, m.nHead], linear(E));
        add(`${b}ssm_norm.weight`, [m.dState], NORM);
        add(`${b}ssm_out.weight`, [m.dInner, E], linear(m.dInner));
      } else if (family === 'lfm2') {
        add(`${b}shortconv.conv.weight`, [s.shortConvL, E], linear(s.shortConvL));
        add(`${b}shortconv.in_proj.weight`, [E, 3 * E], linear(E));
        add(`${b}shortconv.out_proj.weight`, [E, E], linear(E));
      } else {
        const xbc = m.dInner + 2 * m.nGroup * m.dState;
        add(`${b}ssm_in.weight`, [E, m.dInner + xbc + m.nHead], linear(E));
        add(`${b}ssm_conv1d.weight`, [m.dConv, xbc], linear(m.dConv));
        add(`${b}ssm_conv1d.bias`, [xbc], BIAS);
        add(`${b}ssm_dt.bias`, [m.nHead], DT_BIAS);
        add(`${b}ssm_a`, [1, m.nHead], DECAY);
        add(`${b}ssm_d`, [1, m.nHead], NORM);
        add(`${b}ssm_norm.weight`, [m.dInner / m.nGroup, m.nGroup], NORM);
        add(`${b}ssm_out.weight`, [m.dInner, E], linear(m.dInner));
      }
    } else if (kind === 'A') {
      const q = hd * s.nHead;
      planQkv(add, arch, b, E, family === 'qwen35' ? 2 * q : q, hd * s.nHeadKv);
      add(`${b}attn_output.weight`, [q, E], linear(q));
      if (family === 'qwen35' || family === 'lfm2') {
        add(`${b}attn_q_norm.weight`, [hd], NORM);
        add(`${b}attn_k_norm.weight`, [hd], NORM);
      }
    }
    if (family === 'nemotron_h') {
      if (kind !== 'F') continue;
      if (!ex) {
        add(`${b}ffn_up.weight`, [E, s.nFf], linear(E));
        add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
        continue;
      }
    } else if (family !== 'qwen35') add(`${b}ffn_norm.weight`, [E], NORM);
    if (!ex || l < (ex.nDenseLead ?? 0)) {
      add(`${b}ffn_gate.weight`, [E, s.nFf], linear(E));
      add(`${b}ffn_up.weight`, [E, s.nFf], linear(E));
      add(`${b}ffn_down.weight`, [s.nFf, E], linear(s.nFf));
      continue;
    }
    planExperts(add, family, b, E, { ...ex, nFf: ex.nFfPerLayer?.[l] ?? ex.nFf });
  }
  // LFM2 keeps its final norm as token_embd_norm
  if (family === 'lfm2') {
    add('token_embd_norm.weight', [E], NORM);
    if (!tied) add('output.weight', [E, nVocab], linear(E));
  }
  return out;
}

/**
 * Attention's q, k, v projections (nq, nkv, nkv rows) as the converters write them, each with
 * a bias for the architectures whose converters give them one (qwen2, qwen2moe, gpt-oss).
 * Other layouts (fused, biases added or left out) are `ModelShape.projections`, applied to
 * the whole plan afterwards.
 */
export function planQkv(
  add: (name: string, dims: number[], init: TensorInit) => void,
  arch: GenArch,
  b: string,
  E: number,
  nq: number,
  nkv: number,
): void {
  const bias = arch === 'qwen2' || arch === 'qwen2vl' || arch === 'qwen2moe' || arch === 'gpt-oss';
  for (const [p, rows] of [
    ['q', nq],
    ['k', nkv],
    ['v', nkv],
  ] as const) {
    add(`${b}attn_${p}.weight`, [E, rows], linear(E));
    if (bias) add(`${b}attn_${p}.bias`, [rows], BIAS);
  }
}

/** A multi-token-prediction block's fusion tensors (the rest of it is an ordinary layer's). */
export function planNextn(add: (name: string, dims: number[], init: TensorInit) => void, b: string, E: number): void {
  add(`${b}nextn.eh_proj.weight`, [2 * E, E], linear(2 * E));
  add(`${b}nextn.enorm.weight`, [E], NORM);
  add(`${b}nextn.hnorm.weight`, [E], NORM);
  add(`${b}nextn.shared_head_norm.weight`, [E], NORM);
}

/**
 * One layer's experts, in converter order: the router, the selection bias (lfm2moe,
 * nemotron_h_moe), the expert stacks (nemotron_h_moe: up and down only, squared ReLU), and
 * the shared expert (qwen35moe: sigmoid-gated; granitehybrid, nemotron_h_moe: plain).
 */
function planExperts(
  add: (name: string, dims: number[], init: TensorInit) => void,
  family: string,
  b: string,
  E: number,
  ex: NonNullable<ResolvedShape['experts']>,
  mtp = false,
): void {
  const nE = ex.nExpert;
  const F = ex.nFf;
  add(`${b}ffn_gate_inp.weight`, [E, nE], { mean: 0, std: ex.routerStd ?? 1 / Math.sqrt(E) });
  if (family === 'lfm2' || family === 'nemotron_h') add(`${b}exp_probs_b.bias`, [nE], { mean: 0, std: 0.05 });
  // nemotron_h_moe's latent experts: the stacks are `latent` wide, entered and left through
  // projections (none in a multi-token-prediction block)
  const Ex = ex.latent ?? E;
  if (ex.latent && !mtp) {
    add(`${b}ffn_latent_down.weight`, [E, Ex], linear(E));
    add(`${b}ffn_latent_up.weight`, [Ex, E], linear(Ex));
  }
  if (ex.gateUpFused) add(`${b}ffn_gate_up_exps.weight`, [Ex, 2 * F, nE], linear(Ex));
  else {
    if (family !== 'nemotron_h') add(`${b}ffn_gate_exps.weight`, [Ex, F, nE], linear(Ex));
    add(`${b}ffn_up_exps.weight`, [Ex, F, nE], linear(Ex));
  }
  add(`${b}ffn_down_exps.weight`, [F, Ex, nE], linear(F));
  const Fs = ex.nShared ?? 0;
  if (Fs === 0 || family === 'lfm2') return;
  if (family === 'qwen35') add(`${b}ffn_gate_inp_shexp.weight`, [E], linear(E));
  if (family !== 'nemotron_h') add(`${b}ffn_gate_shexp.weight`, [E, Fs], linear(E));
  add(`${b}ffn_up_shexp.weight`, [E, Fs], linear(E));
  add(`${b}ffn_down_shexp.weight`, [Fs, E], linear(Fs));
}

/** The YaRN keys (`rope.scaling.*`) when the shape has YaRN, as the converters write them. */
export function yarnKeys(arch: GenArch, s: ResolvedShape): VocabKV[] {
  if (!s.yarn) return [];
  const kv: VocabKV[] = [
    { key: `${arch}.rope.scaling.type`, type: GGUFValueType.STRING, value: 'yarn' },
    { key: `${arch}.rope.scaling.factor`, type: GGUFValueType.FLOAT32, value: s.yarn.factor },
    { key: `${arch}.rope.scaling.original_context_length`, type: GGUFValueType.UINT32, value: s.yarn.originalContext },
  ];
  if (s.yarn.logMultiplier !== undefined) {
    kv.push({
      key: `${arch}.rope.scaling.yarn_log_multiplier`,
      type: GGUFValueType.FLOAT32,
      value: s.yarn.logMultiplier,
    });
  }
  return kv;
}

/** The `{arch}.*` keys of a recurrent architecture, in converter order. */
export function recurrentKeys(arch: GenArch, s: ResolvedShape): VocabKV[] {
  const u32 = (k: string, value: number): VocabKV => ({ key: `${arch}.${k}`, type: GGUFValueType.UINT32, value });
  const f32 = (k: string, value: number): VocabKV => ({ key: `${arch}.${k}`, type: GGUFValueType.FLOAT32, value });
  const arr = (k: string, itemType: number, items: Uint32Array | Int32Array): VocabKV => ({
    key: `${arch}.${k}`,
    type: GGUFValueType.ARRAY,
    value: { itemType, items },
  });
  const family = recurrentFamily(arch);
  // (nemotron_h_moe's multi-token-prediction blocks: attention heads and experts, 'M')
  const kinds = layerKindsOf(arch, s) + 'M'.repeat(s.nextnLayers);
  const ex = s.experts;
  const kv: VocabKV[] = [
    u32('context_length', s.nCtxTrain),
    u32('embedding_length', s.nEmbd),
    u32('block_count', s.nLayer + s.nextnLayers),
  ];
  if (s.nextnLayers > 0) kv.push(u32('nextn_predict_layers', s.nextnLayers));
  if (family === 'nemotron_h') {
    kv.push(
      arr(
        'feed_forward_length',
        GGUFValueType.UINT32,
        Uint32Array.from(kinds, (k) => (k === 'F' || k === 'M' ? s.nFf : 0)),
      ),
    );
  } else kv.push(u32('feed_forward_length', s.nFf));
  kv.push(u32('attention.head_count', s.nHead));
  if (family === 'qwen35') kv.push(u32('attention.head_count_kv', s.nHeadKv));
  else
    kv.push(
      arr(
        'attention.head_count_kv',
        GGUFValueType.UINT32,
        Uint32Array.from(kinds, (k) => (k === 'A' || k === 'M' ? s.nHeadKv : 0)),
      ),
    );
  kv.push(f32('attention.layer_norm_rms_epsilon', s.normEps));
  // nemotron_h: llama.cpp also requires the layer-norm epsilon (its MTP head's)
  if (family === 'nemotron_h') kv.push(f32('attention.layer_norm_epsilon', s.normEps));
  kv.push(f32('rope.freq_base', s.ropeFreqBase));
  kv.push(u32('rope.dimension_count', s.ropeDim));
  if (family === 'qwen35' || s.headDim !== s.nEmbd / s.nHead) {
    kv.push(u32('attention.key_length', s.headDim));
    kv.push(u32('attention.value_length', s.headDim));
  }
  kv.push(...yarnKeys(arch, s));
  if (family === 'qwen35')
    kv.push(arr('rope.dimension_sections', GGUFValueType.INT32, Int32Array.from(s.ropeSections)));
  if (family === 'lfm2') kv.push(u32('shortconv.l_cache', s.shortConvL));
  else {
    kv.push(u32('ssm.conv_kernel', s.ssm.dConv));
    kv.push(u32('ssm.inner_size', s.ssm.dInner));
    kv.push(u32('ssm.state_size', s.ssm.dState));
    kv.push(u32('ssm.time_step_rank', s.ssm.nHead));
    kv.push(u32('ssm.group_count', s.ssm.nGroup));
  }
  if (family === 'qwen35') kv.push(u32('full_attention_interval', s.fullAttentionInterval));
  if (arch === 'granitehybrid') {
    const g = s.granite;
    if (g.logitScale !== 0) kv.push(f32('logit_scale', g.logitScale));
    if (g.residualScale !== 0) kv.push(f32('residual_scale', g.residualScale));
    if (g.embeddingScale !== 0) kv.push(f32('embedding_scale', g.embeddingScale));
    if (g.attentionScale !== 0) kv.push(f32('attention.scale', g.attentionScale));
  }
  if (ex) {
    if (arch === 'lfm2moe') kv.push(u32('leading_dense_block_count', ex.nDenseLead ?? 0));
    kv.push(u32('expert_count', ex.nExpert));
    // (Nemotron 3 Puzzle: per-layer counts and sizes, as arrays over every block)
    if (ex.nUsedPerLayer) kv.push(arr('expert_used_count', GGUFValueType.UINT32, Uint32Array.from(ex.nUsedPerLayer)));
    else kv.push(u32('expert_used_count', ex.nUsed));
    // Granite's experts have feed_forward_length rows
    if (ex.nFfPerLayer)
      kv.push(arr('expert_feed_forward_length', GGUFValueType.UINT32, Uint32Array.from(ex.nFfPerLayer)));
    else if (arch !== 'granitehybrid') kv.push(u32('expert_feed_forward_length', ex.nFf));
    if ((ex.nShared ?? 0) > 0) kv.push(u32('expert_shared_feed_forward_length', ex.nShared ?? 0));
    if (arch === 'lfm2moe') kv.push(u32('expert_gating_func', ex.gating === 'softmax' ? 1 : 2));
    if (ex.latent) kv.push(u32('moe_latent_size', ex.latent));
    if (arch === 'nemotron_h_moe') {
      kv.push({ key: `${arch}.expert_weights_norm`, type: GGUFValueType.BOOL, value: ex.weightsNorm ?? false });
      kv.push(f32('expert_weights_scale', ex.weightsScale ?? 1));
    }
  }
  return kv;
}
