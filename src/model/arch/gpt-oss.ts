// gpt-oss: OpenAI's open-weight mixtures of experts (gpt-oss-20b, gpt-oss-120b).
// Attention with q/k/v/o biases (q/k/v: fused or not, biases optional, as llama.cpp takes them), NEOX RoPE with YaRN, and a learned sink logit per head
// that joins every softmax without a value; layers alternate sliding-window (a ring
// cache of the last W keys, or every key with swa_full) and full attention.
// Feed-forward: a biased router whose top-k logits are softmaxed over the chosen experts
// only, and experts with biases and a clamped SwiGLU
// (x = min(g, 7), y = clamp(u, ±7): x·σ(1.702·x)·(y + 1)).
//   h = x + Wo·attn_sinks(rope(Wq·n + bq), rope(Wk·n + bk), Wv·n + bv) + bo,  n = rmsnorm(x)·attn_norm
//   x = h + Σ_{e ∈ topk(l)} softmax(l_topk)_e · (down_e·swiglu_oai(gate_e·m + bg_e, up_e·m + bu_e) + bd_e),
//       l = Wr·m + br,  m = rmsnorm(h)·post_attention_norm

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { ModelError } from '../errors.js';
import { requireExperts } from '../experts.js';
import { readSwaPattern } from '../hparams.js';
import type { Architecture } from './arch.js';

export const gptOss: Architecture = {
  name: 'gpt-oss',
  requiredKeys: ['attention.layer_norm_rms_epsilon', 'expert_feed_forward_length', 'attention.sliding_window'],
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    // llama.cpp: a standard window on every second layer (period 2: even layers slide; or
    // one bool per layer), the sliding layers' RoPE as the full ones' unless
    // rope.freq_base_swa says otherwise. The memory is the iSWA cache (a ring for the
    // sliding layers unless swa_full), as for Gemma.
    const key = (k: string) => `gpt-oss.${k}`;
    const nSwa = file.getNumber(key('attention.sliding_window'));
    if (!Number.isInteger(nSwa) || nSwa < 1) {
      throw new ModelError(`${file.path}: '${key('attention.sliding_window')}' = ${nSwa} must be a positive integer`);
    }
    return {
      ...hp,
      swaType: 'standard',
      nSwa,
      swaLayers: readSwaPattern(file, key('attention.sliding_window_pattern'), hp.nLayer, 2),
      ropeFreqBaseSwa: file.getNumber(key('rope.freq_base_swa'), hp.ropeFreqBase),
      ropeFreqScaleSwa: hp.ropeFreqScale,
    };
  },

  tensors(hp, t) {
    const moe = requireExperts(hp.moe, 'gpt-oss');
    const { nEmbd: E, nVocab: V, nHead, nHeadKv, nRot } = hp;
    const nE = moe.nExpert;
    const F = moe.nFfExp;
    t.need('token_embd.weight', [E, V]);
    t.need('output_norm.weight', [E]);
    t.need('output.weight', [E, V]);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      t.layer(il, 'post_attention_norm.weight', [E]);
      t.qkv(il, E, nHead * nRot, nHeadKv * nRot, nHeadKv * nRot);
      t.layer(il, 'attn_output.weight', [nHead * nRot, E]);
      t.layer(il, 'attn_output.bias', [E]);
      t.layer(il, 'attn_sinks.weight', [nHead]);
      t.layer(il, 'ffn_gate_inp.weight', [E, nE]);
      t.layer(il, 'ffn_gate_inp.bias', [nE]);
      t.layer(il, 'ffn_gate_exps.weight', [E, F, nE]);
      t.layer(il, 'ffn_down_exps.weight', [F, E, nE]);
      t.layer(il, 'ffn_up_exps.weight', [E, F, nE]);
      t.layer(il, 'ffn_gate_exps.bias', [F, nE]);
      t.layer(il, 'ffn_down_exps.bias', [E, nE]);
      t.layer(il, 'ffn_up_exps.bias', [F, nE]);
    }
  },

  build(b) {
    const { hp, w } = b;
    const moe = requireExperts(hp.moe, 'gpt-oss');
    const rope = { mode: RopeMode.NEOX };
    const hd = hp.nRot;
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const qkv = b.qkv(il, cur, { hd, nHead: hp.nHead, nHeadKv: hp.nHeadKv });
      const q = b.cb(b.rope(qkv.q, rope, il), 'Qcur', il);
      const k = b.cb(b.rope(qkv.k, rope, il), 'Kcur', il);
      cur = b.attention(il, q, k, qkv.v, L('attn_output.weight'), L('attn_output.bias'), 1 / Math.sqrt(hd), {
        sinks: L('attn_sinks.weight'),
      });

      let res = inpSA;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(inpSA);
      }
      const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
      cur = b.rmsNorm(ffnInp, L('post_attention_norm.weight'), 'attn_post_norm', il);
      cur = b.moeFfn(
        cur,
        {
          gateInp: L('ffn_gate_inp.weight'),
          gateInpB: L('ffn_gate_inp.bias'),
          up: L('ffn_up_exps.weight'),
          upB: L('ffn_up_exps.bias'),
          gate: L('ffn_gate_exps.weight'),
          gateB: L('ffn_gate_exps.bias'),
          down: L('ffn_down_exps.weight'),
          downB: L('ffn_down_exps.bias'),
          nExpertUsed: moe.nExpertUsed,
          gating: 'softmax_weight',
          normW: false,
          wScale: 0,
          act: 'swiglu_oai',
        },
        il,
      );
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return b.output(x);
  },
};
