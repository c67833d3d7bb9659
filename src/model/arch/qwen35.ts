// qwen35: Qwen3.5 / Qwen3.6 dense models. Three of every four layers are Gated DeltaNet
// linear attention (a recurrent state per sequence, see GraphBuilder.gatedDeltaNet); every
// `full_attention_interval`-th layer is gated attention (a doubled q projection whose
// second half gates the heads' output, q/k RMS-normed per head, partial rotary RoPE).
//   x = embd(tokens)
//   per layer: h = x + mixer(rmsnorm(x)·attn_norm)        mixer: gated DeltaNet or gated attention
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),     m = rmsnorm(h)·post_attention_norm
//   logits = Woutput·(rmsnorm(x)·output_norm)           (Woutput = token_embd when absent)
// RoPE is ggml's interleaved multi-section kind (IMROPE). For text the first three position
// components are the token's position and the fourth is 0, so a pair rotates as in NEOX
// mode unless its section is the fourth one, where its angle is 0 (imropeTextFactors).
// The multi-token-prediction blocks (`nextn_predict_layers`) are accepted, not evaluated.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { Tensor } from '../../ggml/tensor.js';
import type { GGUFFile } from '../../gguf/index.js';
import { isArrayValue } from '../../gguf/index.js';
import { ModelError } from '../errors.js';
import type { GraphBuilder, GraphOutputs } from '../graph.js';
import { gatedDeltaNetTensors, nextnTensors } from '../graph.js';
import type { HParams } from '../hparams.js';
import { ffLength, headCount, headCountKv, isRecurrent } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

/**
 * ggml's IMROPE over text positions (t = h = w = the token's position, e = 0) as NEOX
 * RoPE with per-pair frequency divisors: pair i lies in sector i mod Σsections (the
 * sections wrap when they cover fewer pairs than nRot / 2); sectors are dealt round-robin
 * to t, h, w while each has sections left (t: sector ≡ 0 mod 3 and < 3·s0, h: ≡ 1 and
 * < 3·s1, w: ≡ 2 and < 3·s2), and every other sector reads e, whose angle is 0 for text.
 * A divisor of +∞ gives that angle exactly (θ/∞ = 0, so cos = 1 and sin = 0 times
 * attn_factor, as ggml computes for θ = 0); the others are 1. Null when every pair rotates
 * (the plain NEOX graph).
 */
export function imropeTextFactors(sections: readonly number[], nRot: number): Float32Array | null {
  const [s0, s1, s2, s3] = [sections[0] ?? 0, sections[1] ?? 0, sections[2] ?? 0, sections[3] ?? 0];
  const total = s0 + s1 + s2 + s3;
  const f = new Float32Array(nRot / 2).fill(1);
  let fixed = false;
  for (let pair = 0; pair < nRot / 2; pair++) {
    const sector = pair % total;
    const t = sector % 3 === 0 && sector < 3 * s0;
    const h = sector % 3 === 1 && sector < 3 * s1;
    const w = sector % 3 === 2 && sector < 3 * s2;
    if (!(t || h || w)) {
      f[pair] = Number.POSITIVE_INFINITY;
      fixed = true;
    }
  }
  return fixed ? f : null;
}

/**
 * `rope.dimension_sections` as llama.cpp takes it: required (four values, or one for all
 * four), none negative, some pair in the first three (ggml asserts it), and at most the
 * head size in all (ggml asserts that too).
 */
function checkSections(hp: HParams, path: string, key: string): void {
  const s = hp.ropeSections;
  if (s.length !== 4) throw new ModelError(`${path}: ${key} is missing (llama.cpp requires it for ${hp.arch})`);
  const total = s.reduce((a, b) => a + b, 0);
  if (s.some((x) => !Number.isInteger(x) || x < 0) || s[0] + s[1] + s[2] === 0 || total > hp.nEmbdHeadK) {
    throw new ModelError(
      `${path}: ${key} = [${s}] must be counts of pairs with some in the first three sections and at most the head size ${hp.nEmbdHeadK} in all (ggml asserts both)`,
    );
  }
}

/** A per-layer bool array key (null when absent); another length is an error naming it. */
function layerFlags(file: GGUFFile, key: string, nLayer: number): boolean[] | null {
  const kv = file.get(key);
  if (!kv) return null;
  const items = isArrayValue(kv.value) ? Array.from(kv.value.items as ArrayLike<unknown>) : [];
  if (items.length !== nLayer) {
    throw new ModelError(`${file.path}: '${key}' must hold one value per layer (${nLayer}), got ${items.length}`);
  }
  return items.map((x) => x === true || x === 1);
}

/**
 * The hyper-parameter hook of qwen35 and qwen35moe (`{arch}.` keys): which layers are
 * Gated DeltaNet, checked sizes and RoPE sections, the MTP block left out of the stack.
 */
export function qwen35Hparams(arch: string): NonNullable<Architecture['hparams']> {
  return (hp, file) => {
    const key = (k: string) => `${arch}.${k}`;
    const interval = file.getNumber(key('full_attention_interval'), 4);
    if (!(Number.isInteger(interval) && interval >= 1)) {
      throw new ModelError(`${file.path}: ${key('full_attention_interval')} = ${interval} is not a positive integer`);
    }
    for (const k of ['ssm.conv_kernel', 'ssm.inner_size', 'ssm.state_size', 'ssm.time_step_rank', 'ssm.group_count']) {
      if (!(file.getNumber(key(k), 0) > 0)) throw new ModelError(`${file.path}: ${key(k)} is missing or 0`);
    }
    if (hp.ssmDInner / hp.ssmDtRank !== hp.ssmDState || hp.ssmDtRank % hp.ssmNGroup !== 0) {
      throw new ModelError(
        `${file.path}: Gated DeltaNet heads need value head size ${hp.ssmDInner}/${hp.ssmDtRank} = key head size ${hp.ssmDState} and value heads a multiple of key heads (${hp.ssmNGroup})`,
      );
    }
    checkSections(hp, file.path, key('rope.dimension_sections'));
    const nLayer = hp.nLayer;
    const nLayerAll = nLayer + hp.nLayerNextn;
    // `attention.recurrent_layers` (one bool per block) when present, else the interval;
    // the multi-token-prediction blocks after the trunk are attention blocks
    const listed = layerFlags(file, key('attention.recurrent_layers'), nLayerAll);
    return {
      ...hp,
      recurrentLayers: Array.from(
        { length: nLayerAll },
        (_, il) => il < nLayer && (listed ? listed[il] : (il + 1) % interval !== 0),
      ),
    };
  };
}

/**
 * The gated attention block's projections as llama.cpp's create_tensor_qkv takes them.
 * In the trunk its graph reads attn_q/k/v alone: their biases are accepted and left
 * unused, as llama.cpp leaves them, and a fused attn_qkv (which its graph cannot read) is
 * refused. In a multi-token-prediction block (`mtp`) every form is accepted.
 */
function gatedAttentionTensors(hp: HParams, t: TensorList, il: number, mtp: boolean): void {
  const E = hp.nEmbd;
  const hd = hp.nEmbdHeadK;
  const nq = 2 * hd * headCount(hp, il);
  const nk = hd * headCountKv(hp, il);
  const nv = hp.nEmbdHeadV * headCountKv(hp, il);
  if (mtp) t.qkv(il, E, nq, nk, nv);
  else if (t.has(`blk.${il}.attn_qkv.weight`)) {
    throw new ModelError(
      `${hp.arch}: layer ${il} is an attention layer with a fused 'blk.${il}.attn_qkv.weight'; llama.cpp's graph reads separate attn_q/k/v there`,
    );
  } else {
    t.layer(il, 'attn_q.weight', [E, nq]);
    t.layer(il, 'attn_k.weight', [E, nk]);
    t.layer(il, 'attn_v.weight', [E, nv]);
    t.skipped((s) => {
      s.layer(il, 'attn_q.bias', [nq], true);
      s.layer(il, 'attn_k.bias', [nk], true);
      s.layer(il, 'attn_v.bias', [nv], true);
    });
  }
  t.layer(il, 'attn_output.weight', [hp.nEmbdHeadV * headCount(hp, il), E]);
  t.layer(il, 'attn_q_norm.weight', [hd]);
  t.layer(il, 'attn_k_norm.weight', [hd]);
}

/**
 * The tensors of qwen35 and qwen35moe, `ffn` listing layer il's feed-forward: token
 * embedding, output, each layer's norms, mixer (Gated DeltaNet or gated attention) and
 * feed-forward; then the multi-token-prediction blocks (a gated attention block, the
 * feed-forward and the `nextn.*` fusion tensors), accepted and skipped.
 */
export function qwen35Tensors(hp: HParams, t: TensorList, ffn: (t: TensorList, il: number) => void): void {
  const E = hp.nEmbd;
  t.need('token_embd.weight', [E, hp.nVocab]);
  t.need('output_norm.weight', [E]);
  t.opt('output.weight', [E, hp.nVocab]);
  for (let il = 0; il < hp.nLayer; il++) {
    t.layer(il, 'attn_norm.weight', [E]);
    t.layer(il, 'post_attention_norm.weight', [E]);
    if (isRecurrent(hp, il)) gatedDeltaNetTensors(hp, t, il);
    else gatedAttentionTensors(hp, t, il, false);
    ffn(t, il);
  }
  t.skipped((s) => {
    for (let il = hp.nLayer; il < hp.nLayer + hp.nLayerNextn; il++) {
      s.layer(il, 'attn_norm.weight', [E]);
      s.layer(il, 'post_attention_norm.weight', [E]);
      gatedAttentionTensors(hp, s, il, true);
      ffn(s, il);
      nextnTensors(hp, s, il);
    }
  });
}

/**
 * The qwen35 graph with `ffn` as each layer's feed-forward (of m = the post-attention
 * norm's output): dense SwiGLU for qwen35, experts plus a gated shared expert for qwen35moe.
 */
export function buildQwen35(b: GraphBuilder, ffn: (m: Tensor, il: number) => Tensor): GraphOutputs {
  const { hp, w } = b;
  const factors = imropeTextFactors(hp.ropeSections, hp.nRot);
  const rope = { mode: RopeMode.NEOX, freqFactors: factors ? b.constant('rope_imrope_factors', factors) : undefined };
  let x = b.inpEmbd(w.get('token_embd.weight'));
  for (let il = 0; il < hp.nLayer; il++) {
    const L = (name: string) => w.layer(il, name);
    let res = x;
    const n = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);
    let cur = isRecurrent(hp, il) ? b.gatedDeltaNet(il, n) : b.gatedAttention(il, n, rope);
    if (il === hp.nLayer - 1) {
      cur = b.selectOutputs(cur);
      res = b.selectOutputs(res);
    }
    const h = b.cb(ops.add(cur, res), 'attn_residual', il);
    const m = b.rmsNorm(h, L('post_attention_norm.weight'), 'attn_post_norm', il);
    cur = ffn(m, il);
    x = b.cb(ops.add(cur, h), 'l_out', il);
  }
  return b.outputHead(x);
}

export const qwen35: Architecture = {
  name: 'qwen35',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,
  hparams: qwen35Hparams('qwen35'),

  tensors(hp, t) {
    qwen35Tensors(hp, t, (l, il) => {
      const F = ffLength(hp, il);
      l.layer(il, 'ffn_gate.weight', [hp.nEmbd, F]);
      l.layer(il, 'ffn_up.weight', [hp.nEmbd, F]);
      l.layer(il, 'ffn_down.weight', [F, hp.nEmbd]);
    });
  },

  build(b) {
    const { w } = b;
    return buildQwen35(b, (m, il) =>
      b.ffnSwiglu(m, w.layer(il, 'ffn_gate.weight'), w.layer(il, 'ffn_up.weight'), w.layer(il, 'ffn_down.weight'), il),
    );
  },
};
