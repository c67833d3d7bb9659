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
import { ModelError } from '../errors.js';
import { type HParams, readSwaPattern } from '../hparams.js';
import type { Architecture } from './arch.js';
import { gemma3Layers, gemma3LayerTensors } from './gemma3.js';

/** `dense_2_feat_out` and `dense_3_feat_in` (0 when absent: then llama.cpp takes no dense layers). */
const DENSE = new WeakMap<HParams, { out2: number; in3: number }>();

export const gemmaEmbedding: Architecture = {
  name: 'gemma-embedding',
  usesKVCache: false,
  requiredKeys: ['attention.layer_norm_rms_epsilon', 'attention.sliding_window'],

  hparams(hp, file) {
    const key = (k: string) => `gemma-embedding.${k}`;
    // the projections go n_embd → dense_2_feat_out → n_embd (llama.cpp asserts both ends)
    for (const k of ['dense_2_feat_in', 'dense_3_feat_out']) {
      const v = file.getNumber(key(k), 0);
      if (v !== 0 && v !== hp.nEmbd) {
        throw new ModelError(`${file.path}: ${key(k)} = ${v} must be the embedding length ${hp.nEmbd}`);
      }
    }
    const dense = { out2: file.getNumber(key('dense_2_feat_out'), 0), in3: file.getNumber(key('dense_3_feat_in'), 0) };
    const out: HParams = {
      ...hp,
      causal: false,
      swaType: 'symmetric',
      nSwa: file.getNumber(key('attention.sliding_window')),
      swaLayers: readSwaPattern(file, key('attention.sliding_window_pattern'), hp.nLayer, 6, false),
      ropeFreqBaseSwa: file.getNumber(key('rope.freq_base_swa'), hp.ropeFreqBaseSwa),
    };
    DENSE.set(out, dense);
    return out;
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    // (an output projection llama.cpp's loader takes and an embedding model never uses)
    t.opt('output.weight', [E, hp.nVocab]);
    // (without the feature keys llama.cpp expects dense layers of width 0: a file with them is refused)
    const dense = DENSE.get(hp) ?? { out2: -1, in3: -1 };
    t.opt('dense_2.weight', [E, dense.out2]);
    t.opt('dense_3.weight', [dense.in3, E]);
    gemma3LayerTensors(hp, t);
  },

  build(b) {
    const x = gemma3Layers(b, 1 / Math.sqrt(b.hp.nEmbdHeadK));
    return { embd: b.rmsNorm(x, b.w.get('output_norm.weight'), 'result_norm') };
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
