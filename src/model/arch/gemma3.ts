// gemma3: Gemma 3 (270M, 1B, 4B, 12B, 27B) text models. Five sliding-window layers
// (window 512 or 1024, RoPE base 10k) to each global one (RoPE base 1M, linear scaling on
// the larger models); queries and keys RMS-normalised per head; sandwich norms; GeGLU;
// tied output. Without `attention.sliding_window` every layer is global.
//   x = embd(tokens)·√n_embd
//   per layer: a = rmsnorm(x)·attn_norm
//              q = rope(rmsnorm(Wq·a)·q_norm)·s, k = rope(rmsnorm(Wk·a)·k_norm), v = Wv·a
//              h = x + rmsnorm(Wo·attn(q, k, v))·post_attention_norm
//              x = h + rmsnorm(Wdown·(gelu(Wgate·m) ⊙ Wup·m))·post_ffw_norm, m = rmsnorm(h)·ffn_norm
//   logits = Woutput·(rmsnorm(x)·output_norm)   (soft-capped when final_logit_softcapping is set)
// s = 1/√head_size (27B: 1/√(n_embd/n_head)); RoPE in NEOX mode.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { Tensor } from '../../ggml/tensor.js';
import type { GraphBuilder } from '../graph.js';
import { ffLength, type HParams, headCount, headCountKv, headDimK, headDimV, readSwaPattern } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

export const gemma3: Architecture = {
  name: 'gemma3',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    const key = (k: string) => `gemma3.${k}`;
    const nSwa = file.getNumber(key('attention.sliding_window'), 0);
    const swa = nSwa > 0;
    return {
      ...hp,
      swaType: swa ? 'standard' : 'none',
      nSwa: swa ? nSwa : 0,
      swaLayers: swa
        ? readSwaPattern(file, key('attention.sliding_window_pattern'), hp.nLayer, 6, false)
        : new Array<boolean>(hp.nLayer).fill(false),
      ropeFreqBaseSwa: file.getNumber(key('rope.freq_base_swa'), hp.ropeFreqBaseSwa),
      finalSoftcap: file.getNumber(key('final_logit_softcapping'), 0),
    };
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, hp.nVocab]);
    gemma3LayerTensors(hp, t);
  },

  build(b) {
    const { hp } = b;
    // the 27B model (62 layers) scales queries by 1/√(n_embd/n_head)
    const qScale = hp.nLayer === 62 ? 1 / Math.sqrt(hp.nEmbd / hp.nHead) : 1 / Math.sqrt(hp.nEmbdHeadK);
    return b.outputHead(gemma3Layers(b, qScale));
  },
};

/** The tensors of Gemma 3's layers (EmbeddingGemma's too). */
export function gemma3LayerTensors(hp: HParams, t: TensorList): void {
  const E = hp.nEmbd;
  // every layer sized as layer 0, as llama.cpp's loader does (other sizes are refused)
  const hk = headDimK(hp, 0);
  const q = hk * headCount(hp, 0);
  const F = ffLength(hp, 0);
  for (let il = 0; il < hp.nLayer; il++) {
    t.layer(il, 'attn_norm.weight', [E]);
    t.qkv(il, E, q, hk * headCountKv(hp, 0), headDimV(hp, 0) * headCountKv(hp, 0));
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
}

/** The scaled embeddings through every Gemma 3 layer (EmbeddingGemma's too); queries scaled by qScale. */
export function gemma3Layers(b: GraphBuilder, qScale: number): Tensor {
  const { hp, w } = b;
  const rope = { mode: RopeMode.NEOX };
  // embedding vectors from a projector come already scaled (llama.cpp scales token rows only)
  const inp = b.inpEmbd(w.get('token_embd.weight'));
  let x = b.embdInput ? inp : b.cb(ops.scale(inp, Math.sqrt(hp.nEmbd)), 'inp_scaled');
  for (let il = 0; il < hp.nLayer; il++) {
    const L = (name: string) => w.layer(il, name);
    let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

    const qkv = b.qkv(il, cur);
    let q = b.rmsNorm(qkv.q, L('attn_q_norm.weight'), 'Qcur_normed', il);
    q = b.cb(b.rope(q, rope, il), 'Qcur', il);
    let k = b.rmsNorm(qkv.k, L('attn_k_norm.weight'), 'Kcur_normed', il);
    k = b.cb(b.rope(k, rope, il), 'Kcur', il);
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
    cur = b.rmsNorm(cur, L('post_ffw_norm.weight'), 'ffn_post_norm', il);
    x = b.cb(ops.add(cur, saOut), 'l_out', il);
  }
  return x;
}
