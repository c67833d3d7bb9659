// llama: Llama 1/2/3/3.x, TinyLlama, Mistral (without sliding window), SmolLM, and
// Mixtral-style mixtures of experts (ffn_*_exps: softmax router, top-k, renormalised).
//   x = embd(tokens)
//   per layer: h = x + Wo·attn(rope(Wq·n), rope(Wk·n), Wv·n), n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),        m = rmsnorm(h)·ffn_norm
//   logits = Woutput·(rmsnorm(x)·output_norm)   (Woutput = token_embd when absent)
// RoPE pairs adjacent dimensions (NORMAL mode); Llama 3.1+ divides frequencies by
// rope_freqs.weight (LongRoPE files: by the long or short factors, as phi3). q/k/v come
// fused (attn_qkv) or separate; every projection may carry a bias. With expert_count > 0
// the feed-forward is a mixture of experts of n_ff rows each:
//   x = h + Σ_{e ∈ topk(softmax(Wr·m))} w_e · down_e·(silu(gate_e·m) ⊙ up_e·m)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { Tensor } from '../../ggml/tensor.js';
import { type GraphBuilder, type GraphOutputs, ropeFactors } from '../graph.js';
import type { HParams } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

/** What a llama-style decoder's loader takes beyond the common tensors (llama.cpp's per-architecture lists). */
export interface DecoderExtras {
  /** attn_output.bias (llama). */
  attnOutBias?: boolean;
  /** ffn_gate/up/down.bias of a dense feed-forward (llama). */
  ffnBias?: boolean;
  /** output.bias (qwen2). */
  outputBias?: boolean;
  /** Query width and attn_output's input: n_head·head size, or n_embd (qwen2, as llama.cpp's loader). */
  qWidth?: 'heads' | 'embd';
}

/**
 * The tensors of a llama-style decoder (shared by qwen2, qwen3 and smollm3, which add to
 * them): q/k/v fused or separate, each with an optional bias (llama.cpp's create_tensor_qkv);
 * the extras the architecture's loader takes; rope_freqs, or LongRoPE's two factor sets
 * when rope.scaling.type is longrope (llama).
 */
export function decoderTensors(hp: HParams, t: TensorList, x: DecoderExtras = {}): void {
  const { nEmbd: E, nVocab: V, nFf: F, nHead, nHeadKv, nEmbdHeadK: hk, nEmbdHeadV: hv } = hp;
  t.need('token_embd.weight', [E, V]);
  t.need('output_norm.weight', [E]);
  t.opt('output.weight', [E, V]);
  if (x.outputBias) t.opt('output.bias', [V]);
  if (hp.arch === 'llama') ropeFactorTensors(hp, t, hp.ropeScaling === 'longrope');
  const q = x.qWidth === 'embd' ? E : hk * nHead;
  for (let il = 0; il < hp.nLayer; il++) {
    t.layer(il, 'attn_norm.weight', [E]);
    t.qkv(il, E, q, hk * nHeadKv, hv * nHeadKv);
    t.layer(il, 'attn_output.weight', [q, E]);
    if (x.attnOutBias) t.layer(il, 'attn_output.bias', [E], true);
    t.layer(il, 'ffn_norm.weight', [E]);
    if (hp.moe && hp.arch === 'llama') {
      const nE = hp.moe.nExpert;
      t.layer(il, 'ffn_gate_inp.weight', [E, nE]);
      t.layer(il, 'ffn_gate_exps.weight', [E, F, nE], true);
      t.layer(il, 'ffn_down_exps.weight', [F, E, nE]);
      t.layer(il, 'ffn_up_exps.weight', [E, F, nE]);
      continue;
    }
    t.layer(il, 'ffn_gate.weight', [E, F]);
    t.layer(il, 'ffn_down.weight', [F, E]);
    t.layer(il, 'ffn_up.weight', [E, F]);
    if (x.ffnBias) {
      t.layer(il, 'ffn_gate.bias', [F], true);
      t.layer(il, 'ffn_down.bias', [E], true);
      t.layer(il, 'ffn_up.bias', [F], true);
    }
  }
}

/** RoPE's optional frequency factors: LongRoPE's long and short sets, or rope_freqs (llama.cpp's loaders take one kind). */
export function ropeFactorTensors(hp: HParams, t: TensorList, longRope: boolean): void {
  if (longRope) {
    t.opt('rope_factors_long.weight', [hp.nRot / 2]);
    t.opt('rope_factors_short.weight', [hp.nRot / 2]);
  } else t.opt('rope_freqs.weight', [hp.nRot / 2]);
}

/** A dense layer's SwiGLU feed-forward with the biases the model has. */
export function denseFfn(b: GraphBuilder, il: number, x: Tensor): Tensor {
  const w = b.w;
  const L = (name: string) => w.layer(il, name);
  const bias = {
    gate: w.layerOpt(il, 'ffn_gate.bias'),
    up: w.layerOpt(il, 'ffn_up.bias'),
    down: w.layerOpt(il, 'ffn_down.bias'),
  };
  return b.ffnSwiglu(x, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il, bias);
}

/** The output head: final RMSNorm, then logits (tied to token_embd without output.weight). */
export function decoderOutput(b: GraphBuilder, x: Tensor): GraphOutputs {
  return b.output(x);
}

export const llama: Architecture = {
  name: 'llama',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NORMAL,
  ropeWholeHead: true,

  keyRope(hp, w, _il, nCtx) {
    return { mode: RopeMode.NORMAL, freqFactors: ropeFactors(hp, w, nCtx) };
  },

  tensors(hp, t) {
    decoderTensors(hp, t, { attnOutBias: true, ffnBias: true });
  },

  build(b) {
    const { hp, w } = b;
    const rope = { mode: RopeMode.NORMAL, freqFactors: ropeFactors(hp, w, b.ub.nCtx) };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const Lopt = (name: string) => w.layerOpt(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const { q, k, v } = b.qkv(il, cur);
      const qr = b.cb(b.rope(q, rope, il), 'Qcur', il);
      const kr = b.cb(b.rope(k, rope, il), 'Kcur', il);
      cur = b.attention(il, qr, kr, v, L('attn_output.weight'), Lopt('attn_output.bias'));

      let res = inpSA;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(inpSA);
      }
      const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
      cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
      const router = Lopt('ffn_gate_inp.weight');
      if (router && hp.moe) {
        cur = b.moeFfn(
          cur,
          {
            gateInp: router,
            up: L('ffn_up_exps.weight'),
            gate: Lopt('ffn_gate_exps.weight'),
            down: L('ffn_down_exps.weight'),
            nExpertUsed: hp.moe.nExpertUsed,
            gating: 'softmax',
            normW: true,
            wScale: 0,
            act: 'silu',
          },
          il,
        );
      } else cur = denseFfn(b, il, cur);
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return decoderOutput(b, x);
  },
};
