// bert: BERT-style encoders (bge, all-MiniLM, ...) for embeddings. Bidirectional
// attention within each sequence, absolute position embeddings, post-norm LayerNorms:
//   x = LN(tok_embd[t] + type_embd[0] + pos_embd[p])
//   per layer: h = LN(x + Wo·attn(Wq·x + bq, Wk·x + bk, Wv·x + bv) + bo)
//              x = LN(h + Wdown·gelu(Wup·h + bup) + bdown)
// q/k/v come separate or fused, and every bias is optional (as llama.cpp's loader takes
// them). The per-token outputs are pooled (pooling_type: mean, cls, ...) by the context.

import * as ops from '../../ggml/ops.js';
import { view } from '../../ggml/tensor.js';
import { ModelError } from '../errors.js';
import type { HParams } from '../hparams.js';
import type { Architecture } from './arch.js';

/** `tokenizer.ggml.token_type_count` of a loaded bert model (the rows of token_types). */
const TOKEN_TYPES = new WeakMap<HParams, number>();

export const bert: Architecture = {
  name: 'bert',
  usesKVCache: false,
  requiredKeys: ['attention.layer_norm_epsilon'],
  equalHeadSizes: true,
  rank: { token: 'first', softmax: false },

  hparams(hp, file) {
    // llama.cpp's bert loader: "model needs to define token type count"
    const nTypes = file.getNumber('tokenizer.ggml.token_type_count', 0);
    if (!Number.isInteger(nTypes) || nTypes <= 0) {
      throw new ModelError(
        `${file.path}: tokenizer.ggml.token_type_count = ${nTypes}; a bert model needs a token type count (as llama.cpp)`,
      );
    }
    const out = { ...hp, causal: false };
    TOKEN_TYPES.set(out, nTypes);
    return out;
  },

  tensors(hp, t) {
    const { nEmbd: E, nVocab: V, nFf: F, nHeadKv, nEmbdHeadV: hv } = hp;
    t.need('token_embd.weight', [E, V]);
    t.opt('token_types.weight', [E, TOKEN_TYPES.get(hp) ?? -1]);
    t.need('position_embd.weight', [E, hp.nCtxTrain]);
    t.need('token_embd_norm.weight', [E]);
    t.need('token_embd_norm.bias', [E]);
    for (let il = 0; il < hp.nLayer; il++) {
      // (llama.cpp's shapes: n_embd-wide queries; every bias optional)
      t.qkv(il, E, E, hv * nHeadKv, hv * nHeadKv);
      t.layer(il, 'attn_output.weight', [E, E]);
      t.layer(il, 'attn_output.bias', [E], true);
      t.layer(il, 'attn_output_norm.weight', [E]);
      t.layer(il, 'attn_output_norm.bias', [E]);
      t.layer(il, 'ffn_up.weight', [E, F]);
      t.layer(il, 'ffn_up.bias', [F], true);
      t.layer(il, 'ffn_down.weight', [F, E]);
      t.layer(il, 'ffn_down.bias', [E], true);
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
    let x = b.inpEmbd(w.get('token_embd.weight'));
    const types = w.opt('token_types.weight');
    if (types) x = ops.add(x, view(types, [hp.nEmbd], [], 0));
    x = b.cb(ops.add(x, ops.getRows(w.get('position_embd.weight'), b.inpPos)), 'inp_embd');
    // llama.cpp names this norm as part of layer 0 (inp_norm-0)
    x = b.layerNorm(x, w.get('token_embd_norm.weight'), w.get('token_embd_norm.bias'), 'inp_norm', 0);

    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const { q, k, v } = b.qkv(il, x);
      let cur = b.attention(il, q, k, v, L('attn_output.weight'), w.layerOpt(il, 'attn_output.bias'));
      let res = x;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(x);
      }
      cur = ops.add(cur, res);
      const ffnInp = b.layerNorm(cur, L('attn_output_norm.weight'), L('attn_output_norm.bias'), 'ffn_inp', il);
      const upB = w.layerOpt(il, 'ffn_up.bias');
      cur = b.ffnGelu(ffnInp, L('ffn_up.weight'), upB, L('ffn_down.weight'), w.layerOpt(il, 'ffn_down.bias'), il);
      cur = ops.add(cur, ffnInp);
      x = b.layerNorm(cur, L('layer_output_norm.weight'), L('layer_output_norm.bias'), 'l_out', il);
    }
    return { embd: b.cb(x, 'result_embd') };
  },
};
