// smollm3: SmolLM3 (3B). A llama-style decoder in which every 4th layer (3, 7, ...) uses
// no positional encoding (NoPE): its queries and keys are not rotated. q/k/v come separate
// or fused, each with an optional bias (llama.cpp's create_tensor_qkv).
//   per layer: h = x + Wo·attn(r(Wq·n), r(Wk·n), Wv·n), n = rmsnorm(x)·attn_norm
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m),  m = rmsnorm(h)·ffn_norm
//   r = RoPE (NORMAL mode) except on NoPE layers; logits = Woutput·(rmsnorm(x)·output_norm)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import type { HParams } from '../hparams.js';
import type { Architecture } from './arch.js';
import { decoderTensors } from './llama.js';

/** llama.cpp's n_no_rope_layer_step for SmolLM3 (fixed; not read from the file). */
const NO_ROPE_STEP = 4;

function usesRope(il: number): boolean {
  return (il + 1) % NO_ROPE_STEP !== 0;
}

export const smollm3: Architecture = {
  name: 'smollm3',
  usesKVCache: true,
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  ropeMode: RopeMode.NORMAL,
  ropeWholeHead: true,
  equalHeadSizes: true,

  keyRope(_hp: HParams, _w, il) {
    return usesRope(il) ? { mode: RopeMode.NORMAL } : null;
  },

  tensors(hp, t) {
    decoderTensors(hp, t);
  },

  build(b) {
    const { hp, w } = b;
    const rope = { mode: RopeMode.NORMAL };
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      let { q, k, v } = b.qkv(il, cur);
      if (usesRope(il)) {
        q = b.cb(b.rope(q, rope, il), 'Qcur', il);
        k = b.cb(b.rope(k, rope, il), 'Kcur', il);
      }
      cur = b.attention(il, q, k, v, L('attn_output.weight'));

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
