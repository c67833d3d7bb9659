// qwen3: Qwen3 dense models. A llama-style decoder (q/k/v separate or fused, each with an
// optional bias, as llama.cpp's loader takes them) whose queries and keys
// are RMS-normalised per head (q_norm, k_norm, one weight vector of the head size) before
// RoPE in NEOX mode.
//   per layer: q = rope(rmsnorm(Wq·n)·q_norm), k = rope(rmsnorm(Wk·n)·k_norm), v = Wv·n
//              h = x + Wo·attn(q, k, v),                 n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),    m = rmsnorm(h)·ffn_norm

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { GraphBuilder } from '../graph.js';
import type { Architecture } from './arch.js';
import { decoderOutput, decoderTensors } from './llama.js';

export const qwen3: Architecture = {
  name: 'qwen3',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NEOX,
  // Qwen3-Reranker: the yes/no rows of the output projection, softmaxed, on the last token
  rank: { token: 'last', softmax: true },
  ropeWholeHead: true,
  equalHeadSizes: true,

  tensors(hp, t) {
    decoderTensors(hp, t);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_q_norm.weight', [hp.nEmbdHeadK]);
      t.layer(il, 'attn_k_norm.weight', [hp.nEmbdHeadK]);
    }
    t.opt('cls.output.weight', [hp.nEmbd, hp.nClsOut]);
  },

  build: (b) => buildQwen3(b, false),
};

/**
 * qwen3vl: Qwen3-VL's text model, qwen3 with interleaved multi-section RoPE (IMROPE, sections
 * `rope.dimension_sections`) and deepstack: an image's embedding rows carry `n_deepstack_layers` more
 * slices, added to the outputs of the first layers.
 */
export const qwen3vl: Architecture = { ...qwen3, name: 'qwen3vl', rank: undefined, build: (b) => buildQwen3(b, true) };

function buildQwen3(b: GraphBuilder, mrope: boolean) {
  const { hp, w } = b;
  const rope = { mode: RopeMode.NEOX };
  let x = b.inpEmbd(w.get('token_embd.weight'));
  for (let il = 0; il < hp.nLayer; il++) {
    const L = (name: string) => w.layer(il, name);
    const inpSA = x;
    let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

    const qkv = b.qkv(il, cur);
    let q = b.rmsNorm(qkv.q, L('attn_q_norm.weight'), 'Qcur_normed', il);
    let k = b.rmsNorm(qkv.k, L('attn_k_norm.weight'), 'Kcur_normed', il);
    const rot = (t: typeof q) => (mrope ? b.ropeMulti(t, rope, il, true) : b.rope(t, rope, il));
    q = b.cb(rot(q), 'Qcur', il);
    k = b.cb(rot(k), 'Kcur', il);
    cur = b.attention(il, q, k, qkv.v, L('attn_output.weight'));

    let res = inpSA;
    if (il === hp.nLayer - 1) {
      cur = b.selectOutputs(cur);
      res = b.selectOutputs(inpSA);
    }
    const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
    cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
    cur = b.ffnSwiglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
    x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    const ds = b.deepstack(il);
    if (ds) x = b.cb(ops.add(x, il === hp.nLayer - 1 ? b.selectOutputs(ds) : ds), 'deepstack_out', il);
  }
  return decoderOutput(b, x);
}
