// llama: Llama 1/2/3/3.x, TinyLlama, Mistral (without sliding window), SmolLM, and
// Mixtral-style mixtures of experts (ffn_*_exps: softmax router, top-k, renormalised).
//   x = embd(tokens)
//   per layer: h = x + Wo·attn(rope(Wq·n), rope(Wk·n), Wv·n), n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),        m = rmsnorm(h)·ffn_norm
//   logits = Woutput·(rmsnorm(x)·output_norm)   (Woutput = token_embd when absent)
// RoPE pairs adjacent dimensions (NORMAL mode); Llama 3.1+ divides frequencies by
// rope_freqs.weight. Biases on q/k/v/o are accepted when present. With expert_count > 0
// the feed-forward is a mixture of experts of n_ff rows each:
//   x = h + Σ_{e ∈ topk(softmax(Wr·m))} w_e · down_e·(silu(gate_e·m) ⊙ up_e·m)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { reshape, type Tensor } from '../../ggml/tensor.js';
import type { GraphBuilder, GraphOutputs } from '../graph.js';
import type { HParams } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

/** The tensors of a llama-style decoder (shared by qwen2 and qwen3, which add to them). */
export function decoderTensors(hp: HParams, t: TensorList, biases: 'optional' | 'qkv' = 'optional'): void {
  const { nEmbd: E, nVocab: V, nFf: F, nHead, nHeadKv, nEmbdHeadK: hk, nEmbdHeadV: hv } = hp;
  t.need('token_embd.weight', [E, V]);
  t.need('output_norm.weight', [E]);
  t.opt('output.weight', [E, V]);
  t.opt('rope_freqs.weight', [hp.nRot / 2]);
  for (let il = 0; il < hp.nLayer; il++) {
    t.layer(il, 'attn_norm.weight', [E]);
    t.layer(il, 'attn_q.weight', [E, hk * nHead]);
    t.layer(il, 'attn_k.weight', [E, hk * nHeadKv]);
    t.layer(il, 'attn_v.weight', [E, hv * nHeadKv]);
    t.layer(il, 'attn_output.weight', [hv * nHead, E]);
    const qkvOptional = biases === 'optional';
    t.layer(il, 'attn_q.bias', [hk * nHead], qkvOptional);
    t.layer(il, 'attn_k.bias', [hk * nHeadKv], qkvOptional);
    t.layer(il, 'attn_v.bias', [hv * nHeadKv], qkvOptional);
    t.layer(il, 'attn_output.bias', [E], true);
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
  }
}

/** The output head: final RMSNorm, then logits (tied to token_embd without output.weight). */
export function decoderOutput(b: GraphBuilder, x: Tensor): GraphOutputs {
  return b.output(x);
}

export const llama: Architecture = {
  name: 'llama',
  usesKVCache: true,
  ropeMode: RopeMode.NORMAL,
  ropeWholeHead: true,

  tensors(hp, t) {
    decoderTensors(hp, t);
  },

  build(b) {
    const { hp, w } = b;
    const n = b.nTokens;
    const rope = { mode: RopeMode.NORMAL, freqFactors: w.opt('rope_freqs.weight') };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const Lopt = (name: string) => w.layerOpt(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      let q = b.cb(b.linear(L('attn_q.weight'), Lopt('attn_q.bias'), cur), 'Qcur', il);
      let k = b.cb(b.linear(L('attn_k.weight'), Lopt('attn_k.bias'), cur), 'Kcur', il);
      const v = b.cb(b.linear(L('attn_v.weight'), Lopt('attn_v.bias'), cur), 'Vcur', il);
      q = b.cb(b.rope(reshape(q, [hp.nEmbdHeadK, hp.nHead, n]), rope, il), 'Qcur', il);
      k = b.cb(b.rope(reshape(k, [hp.nEmbdHeadK, hp.nHeadKv, n]), rope, il), 'Kcur', il);
      const v3 = reshape(v, [hp.nEmbdHeadV, hp.nHeadKv, n]);
      cur = b.attention(il, q, k, v3, L('attn_output.weight'), Lopt('attn_output.bias'));

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
      } else cur = b.ffnSwiglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return decoderOutput(b, x);
  },
};
