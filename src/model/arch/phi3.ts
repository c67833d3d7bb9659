// phi3: Phi-3, Phi-3.5 and Phi-4-mini. One fused q/k/v projection (or, as llama.cpp's
// loader also takes, separate q/k/v; either with optional biases) and one fused gate+up
// projection per layer; RoPE (NEOX mode) may rotate only part of each head (Phi-4-mini:
// 3/4), and LongRoPE models divide its frequencies by per-dimension factors, the long set
// when the context exceeds the original one (rope.scaling.original_context_length), the
// short set otherwise, scaled by rope.scaling.attn_factor. A sliding window in the file is
// ignored, as llama.cpp does ("Phi SWA is currently disabled").
//   per layer: [q; k; v] = Wqkv·n, n = rmsnorm(x)·attn_norm
//              h = x + Wo·attn(rope(q), rope(k), v)
//              x = h + Wdown·(silu(g) ⊙ u), [g; u] = Wup·(rmsnorm(h)·ffn_norm)
//   logits = Woutput·(rmsnorm(x)·output_norm)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { logger } from '../../log.js';
import { type RopeConfig, ropeFactors } from '../graph.js';
import { type HParams, headDimK } from '../hparams.js';
import type { Weights } from '../weights.js';
import type { Architecture } from './arch.js';
import { ropeFactorTensors } from './llama.js';

const log = logger('model');

function rope(hp: HParams, w: Weights, nCtx: number): RopeConfig {
  return { mode: RopeMode.NEOX, freqFactors: ropeFactors(hp, w, nCtx) };
}

export const phi3: Architecture = {
  name: 'phi3',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NEOX,
  equalHeadSizes: true,

  hparams(hp, file) {
    if (file.getNumber('phi3.attention.sliding_window', 0) > 0) {
      log.warn(`${file.path}: Phi's sliding window is ignored, as llama.cpp does (full attention in every layer)`);
    }
    return hp;
  },

  keyRope(hp, w, _il, nCtx) {
    return rope(hp, w, nCtx);
  },

  tensors(hp, t) {
    // (llama.cpp's shapes: queries and the output projection n_embd wide)
    const E = hp.nEmbd;
    const kv = hp.nEmbdHeadV * hp.nHeadKv;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, hp.nVocab]);
    ropeFactorTensors(hp, t, true);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      t.qkv(il, E, E, kv, kv);
      t.layer(il, 'attn_output.weight', [E, E]);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_down.weight', [hp.nFf, E]);
      t.layer(il, 'ffn_up.weight', [E, 2 * hp.nFf]);
    }
  },

  build(b) {
    const { hp, w } = b;
    const cfg = rope(hp, w, b.ub.nCtx);
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const residual = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      const { q, k, v } = b.qkv(il, cur);
      let qr = b.cb(b.rope(q, cfg, il), 'Qcur', il);
      const kr = b.cb(b.rope(k, cfg, il), 'Kcur', il);
      qr = b.cb(ops.scale(qr, 1 / Math.sqrt(headDimK(hp, il))), 'Qcur', il);
      cur = b.attention(il, qr, kr, v, L('attn_output.weight'), undefined, 1);

      let res = residual;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(residual);
      }
      const ffnInp = ops.add(cur, res);
      cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
      cur = b.ffnSwigluFused(cur, L('ffn_up.weight'), L('ffn_down.weight'), il);
      x = b.cb(ops.add(ffnInp, cur), 'l_out', il);
    }
    return b.outputHead(x);
  },
};
