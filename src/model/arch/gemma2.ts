// gemma2: Gemma 2 (2B, 9B, 27B). Sliding-window layers (window 4096) alternate with
// global ones; attention scores and logits are soft-capped (c·tanh(s/c)); every block is
// sandwiched between RMS norms; the FFN is GeGLU; tied output.
//   x = embd(tokens)·√n_embd
//   per layer: a = rmsnorm(x)·attn_norm
//              h = x + rmsnorm(Wo·attn(rope(Wq·a)·s, rope(Wk·a), Wv·a))·post_attention_norm
//              m = rmsnorm(h)·ffn_norm
//              x = h + rmsnorm(Wdown·(gelu(Wgate·m) ⊙ Wup·m))·post_ffw_norm
//   logits = c·tanh(token_embdᵀ·(rmsnorm(x)·output_norm) / c)
// s = 1/√head_size (27B: 1/√(n_embd/n_head)); RoPE in NEOX mode.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { ffLength, headCount, headCountKv, headDimK, headDimV, readSwaPattern } from '../hparams.js';
import type { Architecture } from './arch.js';

export const gemma2: Architecture = {
  name: 'gemma2',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    const key = (k: string) => `gemma2.${k}`;
    return {
      ...hp,
      swaType: 'standard',
      nSwa: file.getNumber(key('attention.sliding_window'), 4096),
      swaLayers: readSwaPattern(file, key('attention.sliding_window_pattern'), hp.nLayer, 2, false),
      ropeFreqBaseSwa: file.getNumber(key('rope.freq_base_swa'), hp.ropeFreqBase),
      ropeFreqScaleSwa: hp.ropeFreqScale,
      attnSoftcap: file.getNumber(key('attn_logit_softcapping'), 50),
      finalSoftcap: file.getNumber(key('final_logit_softcapping'), 30),
    };
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    // every layer sized as layer 0, as llama.cpp's loader does (other sizes are refused)
    const hk = headDimK(hp, 0);
    const q = hk * headCount(hp, 0);
    const F = ffLength(hp, 0);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      t.qkv(il, E, q, hk * headCountKv(hp, 0), headDimV(hp, 0) * headCountKv(hp, 0));
      t.layer(il, 'attn_output.weight', [q, E]);
      t.layer(il, 'post_attention_norm.weight', [E]);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_gate.weight', [E, F]);
      t.layer(il, 'ffn_up.weight', [E, F]);
      t.layer(il, 'ffn_down.weight', [F, E]);
      t.layer(il, 'post_ffw_norm.weight', [E]);
    }
  },

  build(b) {
    const { hp, w } = b;
    const rope = { mode: RopeMode.NEOX };
    // the 27B model (46 layers) scales queries by 1/√(n_embd/n_head)
    const qScale = hp.nLayer === 46 ? 1 / Math.sqrt(hp.nEmbd / hp.nHead) : 1 / Math.sqrt(hp.nEmbdHeadK);
    let x = b.cb(ops.scale(b.inpEmbd(w.get('token_embd.weight')), Math.sqrt(hp.nEmbd)), 'inp_scaled');
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const qkv = b.qkv(il, cur);
      let q = b.cb(b.rope(qkv.q, rope, il), 'Qcur', il);
      const k = b.cb(b.rope(qkv.k, rope, il), 'Kcur', il);
      q = ops.scale(q, qScale);
      cur = b.attention(il, q, k, qkv.v, L('attn_output.weight'), undefined, 1);

      let res = x;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(x);
      }
      cur = b.rmsNorm(cur, L('post_attention_norm.weight'), 'attn_post_norm', il);
      const saOut = b.cb(ops.add(cur, res), 'sa_out', il);
      cur = b.rmsNorm(saOut, L('ffn_norm.weight'), 'ffn_norm', il);
      cur = b.ffnGeglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      cur = b.rmsNorm(cur, L('post_ffw_norm.weight'), 'ffn_post_norm');
      x = b.cb(ops.add(cur, saOut), 'l_out', il);
    }
    return b.outputHead(x);
  },
};
