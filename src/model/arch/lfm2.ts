// lfm2: Liquid AI's LFM2 (350M … 2.6B). Most layers are gated short convolutions (a
// carried state of the last `shortconv.l_cache` - 1 inputs per sequence, see
// GraphBuilder.shortConv); the others are attention with q/k RMS-normed per head. A layer
// is a convolution one when its `attention.head_count_kv` entry is 0. The final norm is
// stored as `token_embd_norm`; the output is tied to the token embeddings.
//   x = embd(tokens)
//   per layer: h = x + mixer(rmsnorm(x)·attn_norm)
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),  m = rmsnorm(h)·ffn_norm
//   logits = Woutput·(rmsnorm(x)·token_embd_norm)
// q/k/v fused or not, with optional biases (llama.cpp's create_tensor_qkv). RoPE in NEOX
// mode. A sliding window (`attention.sliding_window`) applies to the
// attention layers.
// lfm2moe (LFM2-8B-A1B, LFM2-24B-A2B): the same layers with the feed-forward of every layer
// past `leading_dense_block_count` replaced by experts: router scores by
// `expert_gating_func` (sigmoid in the released models), the top-k chosen after adding a
// per-expert selection bias (`exp_probs_b`), their unbiased scores renormalised; no shared
// expert, no sliding window.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { Tensor } from '../../ggml/tensor.js';
import { ModelError } from '../errors.js';
import { GATING_BY_ID, requireExperts } from '../experts.js';
import type { GraphBuilder, GraphOutputs } from '../graph.js';
import { shortConvTensors } from '../graph.js';
import type { HParams } from '../hparams.js';
import { ffLength, headCount, headCountKv, isRecurrent } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

/** Token embeddings, final norm, output and each layer's norms and mixer (short convolution or attention). */
function lfm2MixerTensors(hp: HParams, t: TensorList): void {
  const E = hp.nEmbd;
  const hd = hp.nEmbdHeadK;
  t.need('token_embd.weight', [E, hp.nVocab]);
  t.need('token_embd_norm.weight', [E]);
  t.opt('output.weight', [E, hp.nVocab]);
  if (t.has('dense_2_out.weight') || t.has('dense_2_out.bias')) {
    throw new ModelError(
      `${hp.arch}: 'dense_2_out' (LFM2-ColBert's projection of the output embeddings) is not supported`,
    );
  }
  for (let il = 0; il < hp.nLayer; il++) {
    t.layer(il, 'attn_norm.weight', [E]);
    t.layer(il, 'ffn_norm.weight', [E]);
    if (isRecurrent(hp, il)) shortConvTensors(hp, t, il);
    else {
      // llama.cpp's loader sizes the queries and attn_output by n_embd, and its graph splits
      // them into heads of key_length: both must hold n_embd = head size × heads
      const nHead = headCount(hp, il);
      if (hd * nHead !== E || hp.nEmbdHeadV * nHead !== E) {
        throw new ModelError(
          `${hp.arch}: layer ${il}: attention.key_length ${hd} / value_length ${hp.nEmbdHeadV} × head_count ${nHead} ≠ embedding_length ${E} (llama.cpp sizes 'blk.${il}.attn_q.weight' and 'blk.${il}.attn_output.weight' by embedding_length)`,
        );
      }
      t.qkv(il, E, E, hd * headCountKv(hp, il), hp.nEmbdHeadV * headCountKv(hp, il));
      t.layer(il, 'attn_output.weight', [E, E]);
      t.layer(il, 'attn_q_norm.weight', [hd]);
      t.layer(il, 'attn_k_norm.weight', [hd]);
    }
  }
}

/** Layer il's dense SwiGLU feed-forward tensors of n_ff rows. */
function denseFfnTensors(hp: HParams, t: TensorList, il: number): void {
  const F = ffLength(hp, il);
  t.layer(il, 'ffn_gate.weight', [hp.nEmbd, F]);
  t.layer(il, 'ffn_up.weight', [hp.nEmbd, F]);
  t.layer(il, 'ffn_down.weight', [F, hp.nEmbd]);
}

/** The lfm2 graph with `ffn` as each layer's feed-forward of m = rmsnorm(h)·ffn_norm. */
function buildLfm2(b: GraphBuilder, ffn: (m: Tensor, il: number) => Tensor): GraphOutputs {
  const { hp, w } = b;
  const rope = { mode: RopeMode.NEOX };
  let x = b.inpEmbd(w.get('token_embd.weight'));
  for (let il = 0; il < hp.nLayer; il++) {
    const L = (name: string) => w.layer(il, name);
    let res = x;
    const a = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);
    let cur: Tensor;
    if (isRecurrent(hp, il)) cur = b.shortConv(il, a);
    else {
      const qkv = b.qkv(il, a, { hd: hp.nEmbdHeadK, nHead: headCount(hp, il), nHeadKv: headCountKv(hp, il) });
      let { q, k } = qkv;
      const v = qkv.v;
      q = b.cb(b.rope(b.rmsNorm(q, L('attn_q_norm.weight'), 'Qcur_normed', il), rope, il), 'Qcur', il);
      k = b.cb(b.rope(b.rmsNorm(k, L('attn_k_norm.weight'), 'Kcur_normed', il), rope, il), 'Kcur', il);
      cur = b.attention(il, q, k, v, L('attn_output.weight'));
    }
    if (il === hp.nLayer - 1) {
      cur = b.selectOutputs(cur);
      res = b.selectOutputs(res);
    }
    const h = b.cb(ops.add(res, cur), 'ffn_inp', il);
    const m = b.rmsNorm(h, L('ffn_norm.weight'), 'ffn_norm', il);
    cur = ffn(m, il);
    x = b.cb(ops.add(h, cur), 'l_out', il);
  }
  const embd = b.rmsNorm(x, w.get('token_embd_norm.weight'), 'result_norm');
  const out = w.opt('output.weight') ?? w.get('token_embd.weight');
  return { embd, logits: b.cb(b.mm(out, embd), 'result_output') };
}

function denseFfn(b: GraphBuilder, m: Tensor, il: number): Tensor {
  const L = (name: string) => b.w.layer(il, name);
  return b.ffnSwiglu(m, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
}

export const lfm2: Architecture = {
  name: 'lfm2',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    if (hp.shortConvL < 2) {
      throw new ModelError(`${file.path}: lfm2.shortconv.l_cache = ${hp.shortConvL} must be at least 2`);
    }
    const recurrentLayers = hp.nHeadKvArr.map((n) => n === 0);
    const nSwa = file.getNumber('lfm2.attention.sliding_window', 0);
    return {
      ...hp,
      recurrentLayers,
      swaType: nSwa > 0 ? 'standard' : 'none',
      nSwa,
      swaLayers: recurrentLayers.map((r) => nSwa > 0 && !r),
    };
  },

  tensors(hp, t) {
    lfm2MixerTensors(hp, t);
    for (let il = 0; il < hp.nLayer; il++) denseFfnTensors(hp, t, il);
  },

  build(b) {
    return buildLfm2(b, (m, il) => denseFfn(b, m, il));
  },
};

export const lfm2moe: Architecture = {
  name: 'lfm2moe',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    const moe = requireExperts(hp.moe, 'lfm2moe');
    const key = (k: string) => `lfm2moe.${k}`;
    if (hp.shortConvL < 2) {
      throw new ModelError(`${file.path}: ${key('shortconv.l_cache')} = ${hp.shortConvL} must be at least 2`);
    }
    if (!(moe.nFfExp > 0)) throw new ModelError(`${file.path}: ${key('expert_feed_forward_length')} is missing or 0`);
    // llama.cpp requires the key and has no default for it
    const gatingId = file.getNumber(key('expert_gating_func'), 0);
    const gating = GATING_BY_ID[gatingId];
    if (!gating) {
      throw new ModelError(
        `${file.path}: ${key('expert_gating_func')} = ${gatingId} (${file.has(key('expert_gating_func')) ? 'not 1 softmax, 2 sigmoid or 3 softmax over the chosen' : 'missing'})`,
      );
    }
    const nLayerDenseLead = file.getNumber(key('leading_dense_block_count'), 0);
    if (!(Number.isSafeInteger(nLayerDenseLead) && nLayerDenseLead >= 0 && nLayerDenseLead <= hp.nLayer)) {
      throw new ModelError(
        `${file.path}: ${key('leading_dense_block_count')} = ${nLayerDenseLead} is not 0..${hp.nLayer}`,
      );
    }
    return {
      ...hp,
      recurrentLayers: hp.nHeadKvArr.map((n) => n === 0),
      moe: { ...moe, nLayerDenseLead, gating, weightsNorm: true, weightsScale: 0 },
    };
  },

  tensors(hp, t) {
    const moe = requireExperts(hp.moe, 'lfm2moe');
    lfm2MixerTensors(hp, t);
    const E = hp.nEmbd;
    const F = moe.nFfExp;
    const nE = moe.nExpert;
    for (let il = 0; il < hp.nLayer; il++) {
      if (il < moe.nLayerDenseLead) {
        denseFfnTensors(hp, t, il);
        continue;
      }
      t.layer(il, 'ffn_gate_inp.weight', [E, nE]);
      t.layer(il, 'ffn_gate_exps.weight', [E, F, nE]);
      t.layer(il, 'ffn_up_exps.weight', [E, F, nE]);
      t.layer(il, 'ffn_down_exps.weight', [F, E, nE]);
      t.layer(il, 'exp_probs_b.bias', [nE]);
    }
  },

  build(b) {
    const moe = requireExperts(b.hp.moe, 'lfm2moe');
    return buildLfm2(b, (m, il) => {
      if (il < moe.nLayerDenseLead) return denseFfn(b, m, il);
      const L = (name: string) => b.w.layer(il, name);
      return b.moeFfn(
        m,
        {
          gateInp: L('ffn_gate_inp.weight'),
          gate: L('ffn_gate_exps.weight'),
          up: L('ffn_up_exps.weight'),
          down: L('ffn_down_exps.weight'),
          probsBias: L('exp_probs_b.bias'),
          nExpertUsed: moe.nExpertUsed,
          gating: moe.gating,
          normW: moe.weightsNorm,
          wScale: moe.weightsScale,
          act: 'silu',
        },
        il,
      );
    });
  },
};
