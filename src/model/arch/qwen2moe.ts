// qwen2moe: Qwen1.5-MoE-A2.7B and Qwen2-57B-A14B. Qwen2's attention (q/k/v biases, optional
// as in llama.cpp, q/k/v fused or not; NEOX RoPE over the whole head) with a feed-forward
// of routed experts (softmax router, top-k, weights not renormalised) plus one shared expert whose output is gated per token by
// sigmoid(ffn_gate_inp_shexp · m), computed as llama.cpp does: silu(g) / g.
//   x = h + Σ_{e ∈ topk(p)} p_e · FFN_e(m) + σ(w_s·m) · FFN_shared(m),  p = softmax(Wr·m)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { requireExperts } from '../experts.js';
import type { Architecture } from './arch.js';

export const qwen2moe: Architecture = {
  name: 'qwen2moe',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,
  ropeWholeHead: true,

  tensors(hp, t) {
    const moe = requireExperts(hp.moe, 'qwen2moe');
    const { nEmbd: E, nVocab: V, nHeadKv, nEmbdHeadK: hk, nEmbdHeadV: hv } = hp;
    const nE = moe.nExpert;
    const F = moe.nFfExp || hp.nFf / moe.nExpertUsed;
    const Fs = moe.nFfShexp || hp.nFf;
    t.need('token_embd.weight', [E, V]);
    t.need('output_norm.weight', [E]);
    t.need('output.weight', [E, V]);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      // (llama.cpp's shapes: the query and output n_embd wide)
      t.qkv(il, E, E, hk * nHeadKv, hv * nHeadKv);
      t.layer(il, 'attn_output.weight', [E, E]);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_gate_inp.weight', [E, nE]);
      t.layer(il, 'ffn_gate_exps.weight', [E, F, nE]);
      t.layer(il, 'ffn_down_exps.weight', [F, E, nE]);
      t.layer(il, 'ffn_up_exps.weight', [E, F, nE]);
      t.layer(il, 'ffn_gate_inp_shexp.weight', [E]);
      t.layer(il, 'ffn_gate_shexp.weight', [E, Fs]);
      t.layer(il, 'ffn_down_shexp.weight', [Fs, E]);
      t.layer(il, 'ffn_up_shexp.weight', [E, Fs]);
    }
  },

  build(b) {
    const { hp, w } = b;
    const moe = requireExperts(hp.moe, 'qwen2moe');
    const rope = { mode: RopeMode.NEOX };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const qkv = b.qkv(il, cur, { hd: hp.nEmbdHeadK, nHead: hp.nHead, nHeadKv: hp.nHeadKv });
      const q = b.cb(b.rope(qkv.q, rope, il), 'Qcur', il);
      const k = b.cb(b.rope(qkv.k, rope, il), 'Kcur', il);
      cur = b.attention(il, q, k, qkv.v, L('attn_output.weight'));

      let res = inpSA;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(inpSA);
      }
      const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
      cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
      const routed = b.moeFfn(
        cur,
        {
          gateInp: L('ffn_gate_inp.weight'),
          up: L('ffn_up_exps.weight'),
          gate: L('ffn_gate_exps.weight'),
          down: L('ffn_down_exps.weight'),
          nExpertUsed: moe.nExpertUsed,
          gating: 'softmax',
          normW: false,
          wScale: 0,
          act: 'silu',
        },
        il,
      );
      // the shared expert, gated per token: sigmoid as silu(g) / g, as llama.cpp computes it
      const g = b.cb(b.mm(L('ffn_gate_inp_shexp.weight'), cur), 'ffn_shexp_gate_inp', il);
      const gate = b.cb(ops.div(ops.silu(g), g), 'ffn_shexp_gate', il);
      const shared = b.ffnSwiglu(
        cur,
        L('ffn_gate_shexp.weight'),
        L('ffn_up_shexp.weight'),
        L('ffn_down_shexp.weight'),
        il,
      );
      b.cb(shared, 'ffn_shexp', il);
      cur = b.cb(ops.add(routed, b.cb(ops.mul(shared, gate), 'ffn_shexp_out', il)), 'ffn_out', il);
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return b.output(x);
  },
};
