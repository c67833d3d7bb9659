// lfm2: Liquid AI's LFM2 (350M … 2.6B). Most layers are gated short convolutions (a
// carried state of the last `shortconv.l_cache` - 1 inputs per sequence, see
// GraphBuilder.shortConv); the others are attention with q/k RMS-normed per head. A layer
// is a convolution one when its `attention.head_count_kv` entry is 0. The final norm is
// stored as `token_embd_norm`; the output is tied to the token embeddings.
//   x = embd(tokens)
//   per layer: h = x + mixer(rmsnorm(x)·attn_norm)
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),  m = rmsnorm(h)·ffn_norm
//   logits = Woutput·(rmsnorm(x)·token_embd_norm)
// RoPE in NEOX mode. A sliding window (`attention.sliding_window`) applies to the
// attention layers.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { reshape } from '../../ggml/tensor.js';
import { ModelError } from '../errors.js';
import { shortConvTensors } from '../graph.js';
import { ffLength, headCount, headCountKv, isRecurrent } from '../hparams.js';
import type { Architecture } from './arch.js';

export const lfm2: Architecture = {
  name: 'lfm2',
  usesKVCache: true,
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    if (hp.shortConvL < 2) {
      throw new ModelError(`${file.path}: lfm2.shortconv.l_cache = ${hp.shortConvL} must be at least 2`);
    }
    const recurrentLayers = hp.nHeadKvArr.map((n) => n === 0);
    const nSwa = file.getNumber('lfm2.attention.sliding_window', 0);
    return {
      ...hp,
      recurrentLayers,
      swaType: nSwa > 0 ? 'standard' : 'none',
      nSwa,
      swaLayers: recurrentLayers.map((r) => nSwa > 0 && !r),
    };
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    const hd = hp.nEmbdHeadK;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('token_embd_norm.weight', [E]);
    t.opt('output.weight', [E, hp.nVocab]);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      if (isRecurrent(hp, il)) shortConvTensors(hp, t, il);
      else {
        t.layer(il, 'attn_q.weight', [E, hd * headCount(hp, il)]);
        t.layer(il, 'attn_k.weight', [E, hd * headCountKv(hp, il)]);
        t.layer(il, 'attn_v.weight', [E, hp.nEmbdHeadV * headCountKv(hp, il)]);
        t.layer(il, 'attn_output.weight', [hp.nEmbdHeadV * headCount(hp, il), E]);
        t.layer(il, 'attn_q_norm.weight', [hd]);
        t.layer(il, 'attn_k_norm.weight', [hd]);
      }
      const F = ffLength(hp, il);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_gate.weight', [E, F]);
      t.layer(il, 'ffn_up.weight', [E, F]);
      t.layer(il, 'ffn_down.weight', [F, E]);
    }
  },

  build(b) {
    const { hp, w } = b;
    const n = b.nTokens;
    const rope = { mode: RopeMode.NEOX };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      let res = x;
      const a = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);
      let cur: ReturnType<typeof b.mm>;
      if (isRecurrent(hp, il)) cur = b.shortConv(il, a);
      else {
        const hd = hp.nEmbdHeadK;
        const nKv = headCountKv(hp, il);
        let q = reshape(b.cb(b.mm(L('attn_q.weight'), a), 'Qcur', il), [hd, headCount(hp, il), n]);
        let k = reshape(b.cb(b.mm(L('attn_k.weight'), a), 'Kcur', il), [hd, nKv, n]);
        const v = reshape(b.cb(b.mm(L('attn_v.weight'), a), 'Vcur', il), [hp.nEmbdHeadV, nKv, n]);
        q = b.cb(b.rope(b.rmsNorm(q, L('attn_q_norm.weight'), 'Qcur_normed', il), rope, il), 'Qcur', il);
        k = b.cb(b.rope(b.rmsNorm(k, L('attn_k_norm.weight'), 'Kcur_normed', il), rope, il), 'Kcur', il);
        cur = b.attention(il, q, k, v, L('attn_output.weight'));
      }
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(res);
      }
      const h = b.cb(ops.add(res, cur), 'ffn_inp', il);
      const m = b.rmsNorm(h, L('ffn_norm.weight'), 'ffn_norm', il);
      cur = b.ffnSwiglu(m, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      x = b.cb(ops.add(h, cur), 'l_out', il);
    }
    const embd = b.rmsNorm(x, w.get('token_embd_norm.weight'), 'result_norm');
    const out = w.opt('output.weight') ?? w.get('token_embd.weight');
    return { embd, logits: b.cb(b.mm(out, embd), 'result_output') };
  },
};
