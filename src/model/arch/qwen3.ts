// qwen3: Qwen3 dense models. A llama-style decoder (q/k/v separate or fused, each with an
// optional bias, as llama.cpp's loader takes them) whose queries and keys
// are RMS-normalised per head (q_norm, k_norm, one weight vector of the head size) before
// RoPE in NEOX mode.
//   per layer: q = rope(rmsnorm(Wq·n)·q_norm), k = rope(rmsnorm(Wk·n)·k_norm), v = Wv·n
//              h = x + Wo·attn(q, k, v),                 n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),    m = rmsnorm(h)·ffn_norm

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { Architecture } from './arch.js';
import { decoderOutput, decoderTensors } from './llama.js';

export const qwen3: Architecture = {
  name: 'qwen3',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NEOX,
  // Qwen3-Reranker: the yes/no rows of the output projection, softmaxed, on the last token
  rank: { token: 'last', softmax: true },
  ropeWholeHead: true,
  equalHeadSizes: true,

  tensors(hp, t) {
    decoderTensors(hp, t);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_q_norm.weight', [hp.nEmbdHeadK]);
      t.layer(il, 'attn_k_norm.weight', [hp.nEmbdHeadK]);
    }
    t.opt('cls.output.weight', [hp.nEmbd, hp.nClsOut]);
  },

  build(b) {
    const { hp, w } = b;
    const rope = { mode: RopeMode.NEOX };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const qkv = b.qkv(il, cur);
      let q = b.rmsNorm(qkv.q, L('attn_q_norm.weight'), 'Qcur_normed', il);
      let k = b.rmsNorm(qkv.k, L('attn_k_norm.weight'), 'Kcur_normed', il);
      q = b.cb(b.rope(q, rope, il), 'Qcur', il);
      k = b.cb(b.rope(k, rope, il), 'Kcur', il);
      cur = b.attention(il, q, k, qkv.v, L('attn_output.weight'));

      let res = inpSA;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(inpSA);
      }
      const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
      cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
      cur = b.ffnSwiglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return decoderOutput(b, x);
  },
};
