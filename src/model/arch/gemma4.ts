// gemma4: Gemma 4 (E2B, E4B, 31B dense; 26B-A4B a mixture of experts). Sliding-window and full layers differ in
// head size, KV heads and RoPE: a per-layer bool pattern says which is which, full layers
// rotate proportionally (frequencies divided by `rope_freqs`), queries and keys are
// RMS-normalised per head and values without a weight, no query scaling (the norms do
// it), final logits soft-capped. Full layers may lack `attn_v` (V is then K's projection).
// E2B/E4B add per-layer embeddings (a small vector per token and layer, gated into the
// residual stream after the FFN) and share KV: the last `shared_kv_layers` layers read the
// cache of the last earlier layer of their kind. An optional per-layer output scale.
// A layer with a router (`ffn_gate_inp`, 26B-A4B: every layer) runs routed GeGLU experts
// beside the dense FFN, each branch between its own norms (below).
//   x = embd(tokens)·√n_embd
//   per layer: a = rmsnorm(x)·attn_norm
//              q = rope(rmsnorm(Wq·a)·q_norm), k = rope(rmsnorm(Wk·a)·k_norm), v = rmsnorm(Wv·a or Wk·a)
//              h = x + rmsnorm(Wo·attn(q, k, v))·post_attention_norm
//              y = h + rmsnorm(Wdown·(gelu(Wgate·m) ⊙ Wup·m))·post_ffw_norm, m = rmsnorm(h)·ffn_norm
//   with experts: y = h + rmsnorm(f₁ + f₂)·post_ffw_norm
//              f₁ = rmsnorm(Wdown·(gelu(Wgate·m) ⊙ Wup·m))·post_ffw_norm_1 (the dense FFN)
//              f₂ = rmsnorm(Σ_{e ∈ topk(p)} p̂_e·s_e·E_e(m₂))·post_ffw_norm_2, m₂ = rmsnorm(h)·pre_ffw_norm_2
//              p = softmax(Wr·(rmsnorm(h)/√n_embd ⊙ ffn_gate_inp.scale)), p̂ renormalised over the top k,
//              E_e a GeGLU expert (gate and up as one stack), s_e its optional ffn_down_exps.scale
//              y = y + rmsnorm(Wproj·(gelu(Wgate_pl·y) ⊙ p_l))·post_norm     (per-layer input p_l)
//              x = y·layer_output_scale
//   logits = c·tanh(Woutput·(rmsnorm(x)·output_norm) / c)
// p_l = (rmsnorm(Wpl·x₀/√n_embd)·per_layer_proj_norm + per_layer_token_embd[t]_l·√n_pl)/√2.

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { permute, reshape, type Tensor, view } from '../../ggml/tensor.js';
import { ModelError } from '../errors.js';
import { type ExpertParams, requireExperts } from '../experts.js';
import type { GraphBuilder } from '../graph.js';
import { ffLength, headCount, headCountKv, headDimK, isSwa, readLayerFlags } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

export const gemma4: Architecture = {
  name: 'gemma4',
  usesKVCache: true,
  requiredKeys: [
    'attention.layer_norm_rms_epsilon',
    'attention.sliding_window',
    'attention.sliding_window_pattern',
    'attention.key_length_swa',
    'attention.value_length_swa',
    'embedding_length_per_layer_input',
  ],
  ropeMode: RopeMode.NEOX,

  hparams(hp, file) {
    const key = (k: string) => `gemma4.${k}`;
    const shared = file.getNumber(key('attention.shared_kv_layers'), 0);
    const nLayerKv = hp.nLayer - shared;
    if (shared > 0 && nLayerKv < 2) {
      throw new ModelError(`${file.path}: ${shared} shared-KV layers leave fewer than 2 layers with their own KV`);
    }
    // one flag per layer; one number is every layer's flag (llama.cpp's get_key_or_arr), not a period
    const swaLayers = readLayerFlags(file, key('attention.sliding_window_pattern'), hp.nLayer);
    // shared layers read layer nLayerKv-2 (sliding window) or nLayerKv-1 (full), as llama.cpp
    if (shared > 0 && !(swaLayers[nLayerKv - 2] && !swaLayers[nLayerKv - 1])) {
      throw new ModelError(
        `${file.path}: with ${shared} shared-KV layers, layer ${nLayerKv - 2} must be a sliding-window layer and layer ${nLayerKv - 1} a full one`,
      );
    }
    if (hp.nEmbdHeadK !== hp.nEmbdHeadV || hp.nEmbdHeadKSwa !== hp.nEmbdHeadVSwa) {
      throw new ModelError(`${file.path}: Gemma 4 needs equal key and value head sizes`);
    }
    if (hp.moe && hp.moe.nFfExp <= 0) {
      throw new ModelError(
        `${file.path}: gemma4.expert_feed_forward_length must be > 0 with ${hp.moe.nExpert} experts`,
      );
    }
    return {
      ...hp,
      swaType: 'standard',
      nSwa: file.getNumber(key('attention.sliding_window')),
      swaLayers,
      ropeFreqBaseSwa: file.getNumber(key('rope.freq_base_swa'), hp.ropeFreqBaseSwa),
      // absent: llama.cpp's hparams default, 30 (its gemma4 loader, unlike gemma3's, keeps it)
      finalSoftcap: file.getNumber(key('final_logit_softcapping'), 30),
      nLayerKv,
    };
  },

  keyRope(hp, w, il) {
    return { mode: RopeMode.NEOX, freqFactors: isSwa(hp, il) ? undefined : w.opt('rope_freqs.weight') };
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    const nPL = hp.nEmbdPerLayer;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, hp.nVocab]);
    if (nPL > 0) {
      t.need('per_layer_token_embd.weight', [nPL * hp.nLayer, hp.nVocab]);
      t.need('per_layer_model_proj.weight', [E, nPL * hp.nLayer]);
      t.need('per_layer_proj_norm.weight', [nPL]);
    }
    if (hp.swaLayers.some((s) => !s)) t.need('rope_freqs.weight', [hp.nEmbdHeadK / 2]);
    for (let il = 0; il < hp.nLayer; il++) {
      const hd = headDimK(hp, il);
      const q = hd * headCount(hp, il);
      const kv = hd * headCountKv(hp, il);
      const ownKv = il < hp.nLayerKv;
      const F = ffLength(hp, il);
      t.layer(il, 'attn_norm.weight', [E]);
      t.layer(il, 'attn_q.weight', [E, q]);
      t.layer(il, 'attn_k.weight', [E, kv], !ownKv);
      t.layer(il, 'attn_v.weight', [E, kv], true);
      t.layer(il, 'attn_output.weight', [q, E]);
      t.layer(il, 'attn_q_norm.weight', [hd]);
      t.layer(il, 'attn_k_norm.weight', [hd], !ownKv);
      t.layer(il, 'post_attention_norm.weight', [E]);
      t.layer(il, 'layer_output_scale.weight', [1], true);
      t.layer(il, 'ffn_norm.weight', [E]);
      t.layer(il, 'ffn_gate.weight', [E, F]);
      t.layer(il, 'ffn_up.weight', [E, F]);
      t.layer(il, 'ffn_down.weight', [F, E]);
      t.layer(il, 'post_ffw_norm.weight', [E]);
      if (hp.moe) expertTensors(t, il, E, hp.moe);
      if (nPL > 0) {
        t.layer(il, 'inp_gate.weight', [E, nPL]);
        t.layer(il, 'proj.weight', [nPL, E]);
        t.layer(il, 'post_norm.weight', [E]);
      }
    }
  },

  build(b) {
    const { hp, w } = b;
    const n = b.nTokens;
    const E = hp.nEmbd;
    // embedding rows (images) are used as given, not scaled by √n_embd (llama.cpp)
    const inp = b.inpEmbd(w.get('token_embd.weight'));
    let x = b.embdInput ? inp : b.cb(ops.scale(inp, Math.sqrt(E)), 'inp_scaled');

    // per-layer inputs [nPL, n, nLayer]
    let perLayer: Tensor | undefined;
    const plTable = w.opt('per_layer_token_embd.weight');
    if (plTable) {
      const nPL = plTable.ne[0] / hp.nLayer;
      // embedding rows read row 0 (the padding token's), as llama.cpp does: their ubatch
      // token ids are all 0
      let sel = b.tokenRows(plTable);
      sel = b.cb(ops.scale(reshape(sel, [nPL, hp.nLayer, n]), Math.sqrt(nPL)), 'inp_per_layer_selected');
      let proj = ops.scale(b.mm(w.get('per_layer_model_proj.weight'), x), 1 / Math.sqrt(E));
      proj = b.rmsNorm(reshape(proj, [nPL, hp.nLayer, n]), w.get('per_layer_proj_norm.weight'), 'per_layer_proj');
      const sum = b.cb(ops.scale(ops.add(proj, sel), 1 / Math.SQRT2), 'inp_per_layer');
      perLayer = ops.cont(permute(sum, [0, 2, 1, 3]));
    }

    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const Lopt = (name: string) => w.layerOpt(il, name);
      const hd = headDimK(hp, il);
      const nKv = headCountKv(hp, il);
      const rope = { mode: RopeMode.NEOX, freqFactors: isSwa(hp, il) ? undefined : w.get('rope_freqs.weight') };
      const last = il === hp.nLayer - 1;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      let q = b.cb(b.mm(L('attn_q.weight'), cur), 'Qcur', il);
      q = b.rmsNorm(reshape(q, [hd, headCount(hp, il), n]), L('attn_q_norm.weight'), 'Qcur_normed', il);
      q = b.cb(b.rope(q, rope, il), 'Qcur_pos', il);
      if (il < hp.nLayerKv) {
        const kProj = b.cb(b.mm(L('attn_k.weight'), cur), 'Kcur', il);
        const wv = Lopt('attn_v.weight');
        // without attn_v, V is K's projection (before K's norm)
        const vProj = b.cb(wv ? b.mm(wv, cur) : kProj, 'Vcur', il);
        let k = b.rmsNorm(reshape(kProj, [hd, nKv, n]), L('attn_k_norm.weight'), 'Kcur_normed', il);
        const v = b.cb(ops.rmsNorm(reshape(vProj, [hd, nKv, n]), hp.normRmsEps), 'Vcur_normed', il);
        k = b.cb(b.rope(k, rope, il), 'Kcur_pos', il);
        cur = b.attention(il, q, k, v, L('attn_output.weight'), undefined, 1);
      } else {
        // reads the cache of an earlier layer of the same kind
        cur = b.attention(il, q, null, null, L('attn_output.weight'), undefined, 1);
      }

      let res = x;
      if (last) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(x);
      }
      cur = b.rmsNorm(cur, L('post_attention_norm.weight'), 'attn_post_norm', il);
      const attnOut = b.cb(ops.add(cur, res), 'attn_out', il);
      if (Lopt('ffn_gate_inp.weight')) cur = moeBlock(b, attnOut, il);
      else {
        cur = b.rmsNorm(attnOut, L('ffn_norm.weight'), 'ffn_norm', il);
        cur = b.ffnGeglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      }
      cur = b.rmsNorm(cur, L('post_ffw_norm.weight'), 'ffn_post_norm', il);
      cur = ops.add(cur, attnOut);

      if (perLayer) {
        const peIn = b.cb(cur, 'pe_in', il);
        const nPL = perLayer.ne[0];
        let g = ops.gelu(b.mm(L('inp_gate.weight'), cur));
        let inpThis = view(perLayer, [nPL, n], [perLayer.nb[1]], il * perLayer.nb[2]);
        if (last) inpThis = b.selectOutputs(inpThis);
        g = b.mm(L('proj.weight'), ops.mul(g, inpThis));
        g = b.rmsNorm(g, L('post_norm.weight'), 'per_layer_embd_out', il);
        cur = ops.add(peIn, g);
      }
      const scale = Lopt('layer_output_scale.weight');
      if (scale) cur = b.cb(ops.mul(cur, scale), 'out_scaled', il);
      x = b.cb(cur, 'l_out', il);
    }
    return b.outputHead(x);
  },
};

/**
 * The expert tensors of layer il, as llama.cpp's loader takes them: a layer without a router
 * is dense (and holds none of them); with one, its scale, the three norms, the down stack
 * and either one fused gate+up stack or separate gate and up stacks are required.
 */
function expertTensors(t: TensorList, il: number, E: number, moe: ExpertParams): void {
  const nE = moe.nExpert;
  const F = moe.nFfExp;
  const router = 'ffn_gate_inp.weight';
  const fused = 'ffn_gate_up_exps.weight';
  const withRouter = { ifPresent: router };
  t.layer(il, router, [E, nE], true);
  t.layer(il, 'ffn_gate_inp.scale', [E], withRouter);
  t.layer(il, 'pre_ffw_norm_2.weight', [E], withRouter);
  t.layer(il, 'post_ffw_norm_1.weight', [E], withRouter);
  t.layer(il, 'post_ffw_norm_2.weight', [E], withRouter);
  t.layer(il, fused, [E, 2 * F, nE], { optional: true, ifPresent: router });
  t.layer(il, 'ffn_gate_exps.weight', [E, F, nE], { ifPresent: router, ifAbsent: fused });
  t.layer(il, 'ffn_up_exps.weight', [E, F, nE], { ifPresent: router, ifAbsent: fused });
  t.layer(il, 'ffn_down_exps.weight', [F, E, nE], withRouter);
  for (const s of ['ffn_gate_exps.scale', 'ffn_up_exps.scale', 'ffn_down_exps.scale']) {
    t.layer(il, s, [nE], { optional: true, ifPresent: router });
  }
}

/**
 * A layer's feed-forward with experts (llama.cpp's gemma4 graph, with its names): the dense
 * FFN and the routed experts, each normalised before and after, summed. The router reads
 * the unweighted RMS norm of h scaled by 1/√n_embd and by `ffn_gate_inp.scale`; its
 * softmax weights are renormalised over the chosen experts.
 */
function moeBlock(b: GraphBuilder, attnOut: Tensor, il: number): Tensor {
  const { hp, w } = b;
  const moe = requireExperts(hp.moe, 'gemma4');
  const name = (n: string) => `blk.${il}.${n}`;
  // once a layer has a router, the rest of its expert tensors are required
  const need = (n: string) => {
    const t = w.layerOpt(il, n);
    if (!t) throw new ModelError(`gemma4: layer ${il} has a router but no '${name(n)}'`);
    return t;
  };
  const L = (n: string) => w.layer(il, n);
  const Lopt = (n: string) => w.layerOpt(il, n);

  let mlp = b.rmsNorm(attnOut, L('ffn_norm.weight'), 'ffn_norm_1', il);
  mlp = b.ffnGeglu(mlp, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
  mlp = b.rmsNorm(mlp, need('post_ffw_norm_1.weight'), 'ffn_mlp', il);

  const x2 = b.rmsNorm(attnOut, need('pre_ffw_norm_2.weight'), 'ffn_norm_2', il);
  let r = ops.scale(ops.rmsNorm(attnOut, hp.normRmsEps), 1 / Math.sqrt(hp.nEmbd));
  r = ops.mul(r, need('ffn_gate_inp.scale'));
  const logits = b.cb(b.mm(L('ffn_gate_inp.weight'), r), 'ffn_moe_logits', il);
  const gateUp = Lopt('ffn_gate_up_exps.weight');
  let experts = b.moeFfn(
    x2,
    {
      logits,
      gateUp,
      gate: gateUp ? undefined : need('ffn_gate_exps.weight'),
      up: gateUp ? undefined : need('ffn_up_exps.weight'),
      down: need('ffn_down_exps.weight'),
      upS: gateUp ? undefined : Lopt('ffn_up_exps.scale'),
      gateS: gateUp ? undefined : Lopt('ffn_gate_exps.scale'),
      downS: Lopt('ffn_down_exps.scale'),
      nExpertUsed: moe.nExpertUsed,
      gating: 'softmax',
      normW: true,
      wScale: 1,
      act: 'gelu',
    },
    il,
  );
  experts = b.rmsNorm(experts, need('post_ffw_norm_2.weight'), 'ffn_moe', il);
  return b.cb(ops.add(mlp, experts), 'ffn_moe_combined', il);
}
