// qwen2: Qwen1.5 / Qwen2 / Qwen2.5. A llama-style decoder with biases on q, k and v, and
// RoPE rotating the two halves of each head (NEOX mode).
//   per layer: h = x + Wo·attn(rope(Wq·n + bq), rope(Wk·n + bk), Wv·n + bv), n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),                      m = rmsnorm(h)·ffn_norm

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { reshape } from '../../ggml/tensor.js';
import type { Architecture } from './arch.js';
import { decoderOutput, decoderTensors } from './llama.js';

export const qwen2: Architecture = {
  name: 'qwen2',
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,

  tensors(hp, t) {
    decoderTensors(hp, t, 'qkv');
  },

  build(b) {
    const { hp, w } = b;
    const n = b.nTokens;
    const rope = { mode: RopeMode.NEOX };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      let q = b.cb(b.linear(L('attn_q.weight'), L('attn_q.bias'), cur), 'Qcur', il);
      let k = b.cb(b.linear(L('attn_k.weight'), L('attn_k.bias'), cur), 'Kcur', il);
      const v = b.cb(b.linear(L('attn_v.weight'), L('attn_v.bias'), cur), 'Vcur', il);
      q = b.cb(b.rope(reshape(q, [hp.nEmbdHeadK, hp.nHead, n]), rope, il), 'Qcur', il);
      k = b.cb(b.rope(reshape(k, [hp.nEmbdHeadK, hp.nHeadKv, n]), rope, il), 'Kcur', il);
      const v3 = reshape(v, [hp.nEmbdHeadV, hp.nHeadKv, n]);
      cur = b.attention(il, q, k, v3, L('attn_output.weight'), w.layerOpt(il, 'attn_output.bias'));

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
