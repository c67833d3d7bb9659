// qwen3moe: Qwen3 mixture-of-experts models (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B,
// Qwen3-235B-A22B). Qwen3's attention (q/k RMS norms per head, NEOX RoPE over the whole
// head; q/k/v fused or not, biases optional, as llama.cpp takes them) with
// every feed-forward replaced by experts: a softmax router, the top-k experts per token,
// their weights renormalised to sum to one.
//   per layer: h = x + Wo·attn(rope(rmsnorm(Wq·n)·q_norm), rope(rmsnorm(Wk·n)·k_norm), Wv·n)
//              x = h + Σ_{e ∈ topk(softmax(Wr·m))} w_e · down_e·(silu(gate_e·m) ⊙ up_e·m),  m = rmsnorm(h)·ffn_norm

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { requireExperts } from '../experts.js';
import type { Architecture } from './arch.js';

export const qwen3moe: Architecture = {
  name: 'qwen3moe',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,
  ropeWholeHead: true,

  tensors(hp, t) {
    const moe = requireExperts(hp.moe, 'qwen3moe');
    const { nEmbd: E, nVocab: V, nHead, nHeadKv, nEmbdHeadK: hk, nEmbdHeadV: hv } = hp;
    const nFfExp = moe.nFfExp || hp.nFf / moe.nExpertUsed;
    const nE = moe.nExpert;
    t.need('token_embd.weight', [E, V]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, V]);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      t.qkv(il, E, hk * nHead, hk * nHeadKv, hv * nHeadKv);
      t.layer(il, 'attn_output.weight', [hk * nHead, E]);
      t.layer(il, 'attn_q_norm.weight', [hk]);
      t.layer(il, 'attn_k_norm.weight', [hk]);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_gate_inp.weight', [E, nE]);
      t.layer(il, 'ffn_gate_exps.weight', [E, nFfExp, nE]);
      t.layer(il, 'ffn_down_exps.weight', [nFfExp, E, nE]);
      t.layer(il, 'ffn_up_exps.weight', [E, nFfExp, nE]);
    }
  },

  build(b) {
    const { hp, w } = b;
    const moe = requireExperts(hp.moe, 'qwen3moe');
    const rope = { mode: RopeMode.NEOX };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const qkv = b.qkv(il, cur, { hd: hp.nEmbdHeadK, nHead: hp.nHead, nHeadKv: hp.nHeadKv });
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
      cur = b.moeFfn(
        cur,
        {
          gateInp: L('ffn_gate_inp.weight'),
          up: L('ffn_up_exps.weight'),
          gate: L('ffn_gate_exps.weight'),
          down: L('ffn_down_exps.weight'),
          nExpertUsed: moe.nExpertUsed,
          gating: 'softmax',
          normW: true,
          wScale: 0,
          act: 'silu',
        },
        il,
      );
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return b.output(x);
  },
};
