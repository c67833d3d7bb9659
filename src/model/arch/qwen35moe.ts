// qwen35moe: Qwen3.5 / Qwen3.6 mixtures of experts (35B-A3B, 122B-A10B, 397B-A17B). The
// qwen35 hybrid (Gated DeltaNet and gated attention layers, see qwen35.ts) with every
// feed-forward replaced by routed experts (softmax router, top-k, weights renormalised)
// plus one shared expert gated per token by sigmoid(ffn_gate_inp_shexp · m):
//   x = h + Σ_{e ∈ topk(p)} (p_e / Σp) · FFN_e(m) + σ(w_s·m) · FFN_shared(m),  p = softmax(Wr·m)
// Expert gate and up stacks are two tensors or one fused `ffn_gate_up_exps` (gate rows
// first), as llama.cpp accepts both.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { ModelError } from '../errors.js';
import { requireExperts } from '../experts.js';
import type { Architecture } from './arch.js';
import { buildQwen35, qwen35Hparams, qwen35Tensors } from './qwen35.js';

export const qwen35moe: Architecture = {
  name: 'qwen35moe',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,
  hparams: qwen35Hparams('qwen35moe'),

  tensors(hp, t) {
    const moe = requireExperts(hp.moe, 'qwen35moe');
    const E = hp.nEmbd;
    const nE = moe.nExpert;
    const F = moe.nFfExp || hp.nFf / moe.nExpertUsed;
    const Fs = moe.nFfShexp || hp.nFf;
    qwen35Tensors(hp, t, (l, il) => {
      l.layer(il, 'ffn_gate_inp.weight', [E, nE]);
      l.layer(il, 'ffn_gate_up_exps.weight', [E, 2 * F, nE], true);
      l.layer(il, 'ffn_gate_exps.weight', [E, F, nE], true);
      l.layer(il, 'ffn_up_exps.weight', [E, F, nE], true);
      l.layer(il, 'ffn_down_exps.weight', [F, E, nE]);
      // llama.cpp's loader requires the shared expert in every trunk layer (only its
      // multi-token-prediction graph runs without one)
      l.layer(il, 'ffn_gate_inp_shexp.weight', [E]);
      l.layer(il, 'ffn_gate_shexp.weight', [E, Fs]);
      l.layer(il, 'ffn_up_shexp.weight', [E, Fs]);
      l.layer(il, 'ffn_down_shexp.weight', [Fs, E]);
    });
  },

  build(b) {
    const { w } = b;
    const moe = requireExperts(b.hp.moe, 'qwen35moe');
    return buildQwen35(b, (m, il) => {
      const L = (name: string) => w.layer(il, name);
      const Lopt = (name: string) => w.layerOpt(il, name);
      const need = (name: string, why: string) => {
        const t = Lopt(name);
        if (!t) throw new ModelError(`qwen35moe: layer ${il} needs 'blk.${il}.${name}' (${why})`);
        return t;
      };
      const gateUp = Lopt('ffn_gate_up_exps.weight');
      const routed = b.moeFfn(
        m,
        {
          gateInp: L('ffn_gate_inp.weight'),
          gateUp,
          gate: gateUp ? undefined : need('ffn_gate_exps.weight', 'it has no ffn_gate_up_exps'),
          up: gateUp ? undefined : need('ffn_up_exps.weight', 'it has no ffn_gate_up_exps'),
          down: L('ffn_down_exps.weight'),
          nExpertUsed: moe.nExpertUsed,
          gating: 'softmax',
          normW: true,
          wScale: 0,
          act: 'silu',
        },
        il,
      );
      const shared = b.cb(
        b.ffnSwiglu(m, L('ffn_gate_shexp.weight'), L('ffn_up_shexp.weight'), L('ffn_down_shexp.weight'), il),
        'ffn_shexp',
        il,
      );
      const g = b.cb(b.mm(L('ffn_gate_inp_shexp.weight'), m), 'shared_expert_gate', il);
      const gate = b.cb(ops.sigmoid(g), 'shared_expert_gate_sigmoid', il);
      const gated = b.cb(ops.mul(shared, gate), 'ffn_shexp_gated', il);
      return b.cb(ops.add(routed, gated), 'ffn_out', il);
    });
  },
};
