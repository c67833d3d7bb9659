// qwen2: Qwen1.5 / Qwen2 / Qwen2.5. A llama-style decoder with biases on q, k and v (as
// llama.cpp, optional; q/k/v may also come fused), RoPE rotating the two halves of each head
// (NEOX mode), and an optional output bias.
//   per layer: h = x + Wo·attn(rope(Wq·n + bq), rope(Wk·n + bk), Wv·n + bv), n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),                      m = rmsnorm(h)·ffn_norm

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { Architecture } from './arch.js';
import { decoderTensors } from './llama.js';

export const qwen2: Architecture = qwen2Like('qwen2', false);

/**
 * qwen2vl: Qwen2-VL's text model, qwen2 with multi-section RoPE (`rope.dimension_sections`):
 * a text token's components are all its position (plain RoPE); an image's embeddings get
 * (t, t + y, t + x) from the multimodal projector's grid.
 */
export const qwen2vl: Architecture = qwen2Like('qwen2vl', true);

function qwen2Like(name: string, mrope: boolean): Architecture {
  return {
    name,
    usesKVCache: true,
    requiredKeys: ['attention.layer_norm_rms_epsilon'],
    ropeMode: RopeMode.NEOX,
    ropeWholeHead: true,
    equalHeadSizes: true,

    tensors(hp, t) {
      decoderTensors(hp, t, { outputBias: true, qWidth: 'embd' });
    },

    build(b) {
      const { hp, w } = b;
      const rope = { mode: RopeMode.NEOX };
      let x = b.inpEmbd(w.get('token_embd.weight'));
      for (let il = 0; il < hp.nLayer; il++) {
        const L = (name: string) => w.layer(il, name);
        const inpSA = x;
        let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

        const { q, k, v } = b.qkv(il, cur);
        const rot = (t: typeof q) => (mrope ? b.ropeMulti(t, rope, il) : b.rope(t, rope, il));
        const qr = b.cb(rot(q), 'Qcur', il);
        const kr = b.cb(rot(k), 'Kcur', il);
        cur = b.attention(il, qr, kr, v, L('attn_output.weight'));

        let res = inpSA;
        if (il === hp.nLayer - 1) {
          cur = b.selectOutputs(cur);
          res = b.selectOutputs(inpSA);
        }
        const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
        cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
        cur = b.ffnSwiglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
        x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
      }
      return b.outputHead(x);
    },
  };
}
