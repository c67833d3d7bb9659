// phi3: Phi-3, Phi-3.5 and Phi-4-mini. One fused q/k/v projection and one fused gate+up
// projection per layer; RoPE (NEOX mode) may rotate only part of each head (Phi-4-mini:
// 3/4), and LongRoPE models divide its frequencies by per-dimension factors, the long set
// when the context exceeds the original one (rope.scaling.original_context_length), the
// short set otherwise, scaled by rope.scaling.attn_factor. A sliding window in the file is
// ignored, as llama.cpp does ("Phi SWA is currently disabled").
//   per layer: [q; k; v] = Wqkv·n, n = rmsnorm(x)·attn_norm
//              h = x + Wo·attn(rope(q), rope(k), v)
//              x = h + Wdown·(silu(g) ⊙ u), [g; u] = Wup·(rmsnorm(h)·ffn_norm)
//   logits = Woutput·(rmsnorm(x)·output_norm) (+ output bias)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { logger } from '../../log.js';
import type { RopeConfig } from '../graph.js';
import { ffLength, type HParams, headCount, headCountKv, headDimK } from '../hparams.js';
import type { Weights } from '../weights.js';
import type { Architecture } from './arch.js';

const log = logger('model');

/**
 * LongRoPE's frequency factors for a context of nCtx cells (none in most files): the long
 * set beyond the original context. llama.cpp compares its context size padded to 256.
 */
function rope(hp: HParams, w: Weights, nCtx: number): RopeConfig {
  const long = Math.ceil(nCtx / 256) * 256 > hp.nCtxOrig;
  const factors = long ? w.opt('rope_factors_long.weight') : w.opt('rope_factors_short.weight');
  return { mode: RopeMode.NEOX, freqFactors: factors ?? w.opt('rope_freqs.weight') };
}

export const phi3: Architecture = {
  name: 'phi3',
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,

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
    const E = hp.nEmbd;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, hp.nVocab]);
    t.opt('output.bias', [hp.nVocab]);
    t.opt('rope_factors_long.weight', [hp.nRot / 2]);
    t.opt('rope_factors_short.weight', [hp.nRot / 2]);
    for (let il = 0; il < hp.nLayer; il++) {
      const hk = headDimK(hp, il);
      const q = hk * headCount(hp, il);
      const kv = hk * headCountKv(hp, il);
      const F = ffLength(hp, il);
      t.layer(il, 'attn_norm.weight', [E]);
      t.layer(il, 'attn_qkv.weight', [E, q + 2 * kv]);
      t.layer(il, 'attn_qkv.bias', [q + 2 * kv], true);
      t.layer(il, 'attn_output.weight', [q, E]);
      t.layer(il, 'attn_output.bias', [E], true);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_up.weight', [E, 2 * F]);
      t.layer(il, 'ffn_down.weight', [F, E]);
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

      const { q, k, v } = b.qkvFused(L('attn_qkv.weight'), w.layerOpt(il, 'attn_qkv.bias'), cur, il);
      let qr = b.cb(b.rope(q, cfg, il), 'Qcur', il);
      const kr = b.cb(b.rope(k, cfg, il), 'Kcur', il);
      qr = b.cb(ops.scale(qr, 1 / Math.sqrt(headDimK(hp, il))), 'Qcur', il);
      cur = b.attention(il, qr, kr, v, L('attn_output.weight'), w.layerOpt(il, 'attn_output.bias'), 1);

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
    const out = b.outputHead(x);
    const bias = w.opt('output.bias');
    if (bias && out.logits) out.logits = b.cb(ops.add(out.logits, bias), 'result_output');
    return out;
  },
};
