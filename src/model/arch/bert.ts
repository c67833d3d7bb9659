// bert: BERT-style encoders (bge, all-MiniLM, ...) for embeddings. Bidirectional
// attention within each sequence, absolute position embeddings, post-norm LayerNorms:
//   x = LN(tok_embd[t] + type_embd[0] + pos_embd[p])
//   per layer: h = LN(x + Wo·attn(Wq·x + bq, Wk·x + bk, Wv·x + bv) + bo)
//              x = LN(h + Wdown·gelu(Wup·h + bup) + bdown)
// The per-token outputs are pooled (pooling_type: mean, cls, ...) by the context.

import * as ops from '../../ggml/ops.js';
import { reshape, view } from '../../ggml/tensor.js';
import type { Architecture } from './arch.js';

export const bert: Architecture = {
  name: 'bert',
  usesKVCache: false,
  rank: { token: 'first', softmax: false },

  hparams(hp) {
    return { ...hp, causal: false };
  },

  tensors(hp, t) {
    const { nEmbd: E, nVocab: V, nFf: F, nHead, nHeadKv, nEmbdHeadK: hk, nEmbdHeadV: hv } = hp;
    t.need('token_embd.weight', [E, V]);
    t.opt('token_types.weight', [E, -1]);
    t.need('position_embd.weight', [E, -1]);
    t.need('token_embd_norm.weight', [E]);
    t.need('token_embd_norm.bias', [E]);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_q.weight', [E, hk * nHead]);
      t.layer(il, 'attn_q.bias', [hk * nHead]);
      t.layer(il, 'attn_k.weight', [E, hk * nHeadKv]);
      t.layer(il, 'attn_k.bias', [hk * nHeadKv]);
      t.layer(il, 'attn_v.weight', [E, hv * nHeadKv]);
      t.layer(il, 'attn_v.bias', [hv * nHeadKv]);
      t.layer(il, 'attn_output.weight', [hv * nHead, E]);
      t.layer(il, 'attn_output.bias', [E]);
      t.layer(il, 'attn_output_norm.weight', [E]);
      t.layer(il, 'attn_output_norm.bias', [E]);
      t.layer(il, 'ffn_up.weight', [E, F]);
      t.layer(il, 'ffn_up.bias', [F]);
      t.layer(il, 'ffn_down.weight', [F, E]);
      t.layer(il, 'ffn_down.bias', [E]);
      t.layer(il, 'layer_output_norm.weight', [E]);
      t.layer(il, 'layer_output_norm.bias', [E]);
    }
    // a reranker's classification head (pooling_type rank)
    t.opt('cls.weight', [E, E]);
    t.opt('cls.bias', [E]);
    t.opt('cls.output.weight', [E, hp.nClsOut]);
    t.opt('cls.output.bias', [hp.nClsOut]);
  },

  build(b) {
    const { hp, w } = b;
    const n = b.nTokens;
    let x = b.inpEmbd(w.get('token_embd.weight'));
    const types = w.opt('token_types.weight');
    if (types) x = ops.add(x, view(types, [hp.nEmbd], [], 0));
    x = b.cb(ops.add(x, ops.getRows(w.get('position_embd.weight'), b.inpPos)), 'inp_embd');
    // llama.cpp names this norm as part of layer 0 (inp_norm-0)
    x = b.layerNorm(x, w.get('token_embd_norm.weight'), w.get('token_embd_norm.bias'), 'inp_norm', 0);

    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const q = b.cb(b.linear(L('attn_q.weight'), L('attn_q.bias'), x), 'Qcur', il);
      const k = b.cb(b.linear(L('attn_k.weight'), L('attn_k.bias'), x), 'Kcur', il);
      const v = b.cb(b.linear(L('attn_v.weight'), L('attn_v.bias'), x), 'Vcur', il);
      let cur = b.attention(
        il,
        reshape(q, [hp.nEmbdHeadK, hp.nHead, n]),
        reshape(k, [hp.nEmbdHeadK, hp.nHeadKv, n]),
        reshape(v, [hp.nEmbdHeadV, hp.nHeadKv, n]),
        L('attn_output.weight'),
        L('attn_output.bias'),
      );
      let res = x;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(x);
      }
      cur = ops.add(cur, res);
      const ffnInp = b.layerNorm(cur, L('attn_output_norm.weight'), L('attn_output_norm.bias'), 'ffn_inp', il);
      cur = b.ffnGelu(ffnInp, L('ffn_up.weight'), L('ffn_up.bias'), L('ffn_down.weight'), L('ffn_down.bias'), il);
      cur = ops.add(cur, ffnInp);
      x = b.layerNorm(cur, L('layer_output_norm.weight'), L('layer_output_norm.bias'), 'l_out', il);
    }
    return { embd: b.cb(x, 'result_embd') };
  },
};
