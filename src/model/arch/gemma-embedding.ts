// gemma-embedding: EmbeddingGemma (300M), a Gemma 3 body turned encoder: attention is
// bidirectional, its sliding-window layers see the tokens within W/2 on either side
// (symmetric window), every 6th layer sees the whole text; the per-token outputs are pooled
// (mean) and, when the converter kept them, passed through two dense projections
// (sentence-transformers' modules 2 and 3: n_embd → dense_2_feat_out → n_embd).
//   x = embd(tokens)·√n_embd
//   per layer (as gemma3): q = rope(rmsnorm(Wq·a)·q_norm)·s, k = rope(rmsnorm(Wk·a)·k_norm), v = Wv·a
//              h = x + rmsnorm(Wo·attn(q, k, v))·post_attention_norm
//              x = h + rmsnorm(Wdown·(gelu(Wgate·m) ⊙ Wup·m))·post_ffw_norm
//   e = dense_3·(dense_2·pool(rmsnorm(x)·output_norm))

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { reshape } from '../../ggml/tensor.js';
import { ffLength, headCount, headCountKv, headDimK, headDimV, readSwaPattern } from '../hparams.js';
import type { Architecture } from './arch.js';

export const gemmaEmbedding: Architecture = {
  name: 'gemma-embedding',
  usesKVCache: false,

  hparams(hp, file) {
    const key = (k: string) => `gemma-embedding.${k}`;
    return {
      ...hp,
      causal: false,
      swaType: 'symmetric',
      nSwa: file.getNumber(key('attention.sliding_window')),
      swaLayers: readSwaPattern(file, key('attention.sliding_window_pattern'), hp.nLayer, 6),
      ropeFreqBaseSwa: file.getNumber(key('rope.freq_base_swa'), hp.ropeFreqBaseSwa),
    };
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    t.opt('dense_2.weight', [E, -1]);
    t.opt('dense_3.weight', [-1, E]);
    for (let il = 0; il < hp.nLayer; il++) {
      const hk = headDimK(hp, il);
      const q = hk * headCount(hp, il);
      const F = ffLength(hp, il);
      t.layer(il, 'attn_norm.weight', [E]);
      t.layer(il, 'attn_q.weight', [E, q]);
      t.layer(il, 'attn_k.weight', [E, hk * headCountKv(hp, il)]);
      t.layer(il, 'attn_v.weight', [E, headDimV(hp, il) * headCountKv(hp, il)]);
      t.layer(il, 'attn_output.weight', [q, E]);
      t.layer(il, 'attn_q_norm.weight', [hk]);
      t.layer(il, 'attn_k_norm.weight', [hk]);
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
    const n = b.nTokens;
    const rope = { mode: RopeMode.NEOX };
    const qScale = 1 / Math.sqrt(hp.nEmbdHeadK);
    let x = b.cb(ops.scale(b.inpEmbd(w.get('token_embd.weight')), Math.sqrt(hp.nEmbd)), 'inp_scaled');
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const hd = headDimK(hp, il);
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      let q = b.cb(b.mm(L('attn_q.weight'), cur), 'Qcur', il);
      let k = b.cb(b.mm(L('attn_k.weight'), cur), 'Kcur', il);
      const v = b.cb(b.mm(L('attn_v.weight'), cur), 'Vcur', il);
      q = b.rmsNorm(reshape(q, [hd, headCount(hp, il), n]), L('attn_q_norm.weight'), 'Qcur_normed', il);
      q = b.cb(b.rope(q, rope, il), 'Qcur', il);
      k = b.rmsNorm(reshape(k, [hd, headCountKv(hp, il), n]), L('attn_k_norm.weight'), 'Kcur_normed', il);
      k = b.cb(b.rope(k, rope, il), 'Kcur', il);
      q = ops.scale(q, qScale);
      const v3 = reshape(v, [headDimV(hp, il), headCountKv(hp, il), n]);
      cur = b.attention(il, q, k, v3, L('attn_output.weight'), undefined, 1);

      let res = x;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(x);
      }
      cur = b.rmsNorm(cur, L('post_attention_norm.weight'), 'attn_post_norm', il);
      const saOut = b.cb(ops.add(cur, res), 'sa_out', il);
      cur = b.rmsNorm(saOut, L('ffn_norm.weight'), 'ffn_norm', il);
      cur = b.ffnGeglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      cur = b.rmsNorm(cur, L('post_ffw_norm.weight'), 'ffn_post_norm', il);
      x = b.cb(ops.add(cur, saOut), 'l_out', il);
    }
    return { embd: b.rmsNorm(x, w.get('output_norm.weight'), 'result_norm') };
  },

  pooledHead(w, pooled) {
    const d2 = w.opt('dense_2.weight');
    const d3 = w.opt('dense_3.weight');
    if (!d2 && !d3) return null;
    let cur = pooled;
    if (d2) cur = ops.mulMat(d2, cur);
    if (d3) cur = ops.mulMat(d3, cur);
    return cur.setName('result_embd_pooled');
  },
};
