// granitehybrid: IBM Granite 4.0 (H-Micro, H-Tiny, H-Small). Mamba-2 layers (see
// GraphBuilder.mamba2) with a few attention layers (those whose `attention.head_count_kv`
// entry is not 0), and Granite's multipliers: embeddings times `embedding_scale`, each
// block's output times `residual_scale` before it joins the residual stream, attention
// scores times `attention.scale`, logits divided by `logit_scale`.
//   x = embd(tokens)·embedding_scale
//   per layer: h = x + mixer(rmsnorm(x)·attn_norm)·residual_scale      mixer: Mamba-2 or attention
//              x = h + Wdown·(silu(Wgate·m) ⊙ Wup·m)·residual_scale,   m = rmsnorm(h)·ffn_norm
//   logits = Woutput·(rmsnorm(x)·output_norm) / logit_scale
// RoPE in NORMAL mode unless `rope.scaling.finetuned` is false (no RoPE).
// With `expert_count` (Granite 4.0-H-Tiny, H-Small) every layer's feed-forward is experts of
// `feed_forward_length` rows (softmax router, top-k renormalised; an expert without gate rows
// applies SiLU to its up rows) plus, with `expert_shared_feed_forward_length`, an ungated
// shared SwiGLU expert:  f = Σ_{e ∈ topk(p)} (p_e / Σp) · FFN_e(m) + FFN_shared(m).

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { ModelError } from '../errors.js';
import { mamba2Tensors } from '../graph.js';
import { ffLength, headCount, headCountKv, isRecurrent } from '../hparams.js';
import type { Architecture } from './arch.js';

export const graniteHybrid: Architecture = {
  name: 'granitehybrid',
  requiredKeys: ['attention.layer_norm_rms_epsilon'],
  usesKVCache: true,
  ropeMode: RopeMode.NORMAL,

  hparams(hp, file) {
    for (const k of ['ssm.conv_kernel', 'ssm.inner_size', 'ssm.state_size', 'ssm.time_step_rank', 'ssm.group_count']) {
      if (!(file.getNumber(`granitehybrid.${k}`, 0) > 0)) {
        throw new ModelError(`${file.path}: granitehybrid.${k} is missing or 0`);
      }
    }
    if (hp.ssmDInner % hp.ssmDtRank !== 0 || hp.ssmDInner % hp.ssmNGroup !== 0 || hp.ssmDtRank % hp.ssmNGroup !== 0) {
      throw new ModelError(
        `${file.path}: Mamba-2 sizes: inner size ${hp.ssmDInner} must divide by the ${hp.ssmDtRank} heads and ${hp.ssmNGroup} groups`,
      );
    }
    if (hp.ssmDInner !== 2 * hp.nEmbd) {
      throw new ModelError(
        `${file.path}: granitehybrid.ssm.inner_size = ${hp.ssmDInner} must be twice embedding_length ${hp.nEmbd} (llama.cpp asserts it)`,
      );
    }
    return { ...hp, recurrentLayers: hp.nHeadKvArr.map((n) => n === 0) };
  },

  tensors(hp, t) {
    const E = hp.nEmbd;
    const hd = hp.nEmbdHeadK;
    t.need('token_embd.weight', [E, hp.nVocab]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, hp.nVocab]);
    t.opt('rope_freqs.weight', [hp.nRot / 2]);
    for (let il = 0; il < hp.nLayer; il++) {
      t.layer(il, 'attn_norm.weight', [E]);
      if (isRecurrent(hp, il)) mamba2Tensors(hp, t, il);
      else {
        t.qkv(il, E, hd * headCount(hp, il), hd * headCountKv(hp, il), hp.nEmbdHeadV * headCountKv(hp, il));
        t.layer(il, 'attn_output.weight', [hp.nEmbdHeadV * headCount(hp, il), E]);
        t.layer(il, 'attn_output.bias', [E], true);
      }
      const F = ffLength(hp, il);
      t.layer(il, 'ffn_norm.weight', [E]);
      if (hp.moe) {
        const nE = hp.moe.nExpert;
        const Fs = hp.moe.nFfShexp;
        t.layer(il, 'ffn_gate_inp.weight', [E, nE]);
        t.layer(il, 'ffn_gate_exps.weight', [E, F, nE], true);
        t.layer(il, 'ffn_up_exps.weight', [E, F, nE]);
        t.layer(il, 'ffn_down_exps.weight', [F, E, nE]);
        if (Fs > 0) {
          t.layer(il, 'ffn_gate_shexp.weight', [E, Fs]);
          t.layer(il, 'ffn_up_shexp.weight', [E, Fs]);
          t.layer(il, 'ffn_down_shexp.weight', [Fs, E]);
        }
        continue;
      }
      t.layer(il, 'ffn_gate.weight', [E, F]);
      t.layer(il, 'ffn_up.weight', [E, F]);
      t.layer(il, 'ffn_down.weight', [F, E]);
      t.layer(il, 'ffn_gate.bias', [F], true);
      t.layer(il, 'ffn_up.bias', [F], true);
      t.layer(il, 'ffn_down.bias', [E], true);
    }
  },

  build(b) {
    const { hp, w } = b;
    const useRope = hp.ropeFinetuned;
    const rope = { mode: RopeMode.NORMAL, freqFactors: w.opt('rope_freqs.weight') };
    const scaled = (t: ReturnType<typeof b.mm>, s: number) => (s !== 0 ? ops.scale(t, s) : t);
    let x = b.inpEmbd(w.get('token_embd.weight'));
    if (hp.embeddingScale !== 0) x = b.cb(ops.scale(x, hp.embeddingScale), 'inp_scaled');
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const Lopt = (name: string) => w.layerOpt(il, name);
      let res = x;
      const a = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);
      let cur: ReturnType<typeof b.mm>;
      if (isRecurrent(hp, il)) cur = b.mamba2(il, a);
      else {
        const hd = hp.nEmbdHeadK;
        let { q, k, v } = b.qkv(il, a, { hd, nHead: headCount(hp, il), nHeadKv: headCountKv(hp, il) });
        if (useRope) {
          q = b.cb(b.rope(q, rope, il), 'Qcur', il);
          k = b.cb(b.rope(k, rope, il), 'Kcur', il);
        }
        const scale = hp.attentionScale !== 0 ? hp.attentionScale : 1 / Math.sqrt(hd);
        cur = b.attention(il, q, k, v, L('attn_output.weight'), Lopt('attn_output.bias'), scale);
      }
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(res);
      }
      const h = b.cb(ops.add(scaled(cur, hp.residualScale), res), 'ffn_inp', il);
      const m = b.rmsNorm(h, L('ffn_norm.weight'), 'ffn_norm', il);
      let f: ReturnType<typeof b.mm>;
      if (hp.moe) {
        f = b.moeFfn(
          m,
          {
            gateInp: L('ffn_gate_inp.weight'),
            gate: Lopt('ffn_gate_exps.weight'),
            up: L('ffn_up_exps.weight'),
            down: L('ffn_down_exps.weight'),
            nExpertUsed: hp.moe.nExpertUsed,
            gating: 'softmax',
            normW: true,
            wScale: 0,
            act: 'silu',
          },
          il,
        );
        if (hp.moe.nFfShexp > 0) {
          const shared = b.cb(
            b.ffnSwiglu(m, L('ffn_gate_shexp.weight'), L('ffn_up_shexp.weight'), L('ffn_down_shexp.weight'), il),
            'ffn_shexp',
            il,
          );
          f = b.cb(ops.add(f, shared), 'ffn_out', il);
        }
      } else {
        const g = b.cb(b.linear(L('ffn_gate.weight'), Lopt('ffn_gate.bias'), m), 'ffn_gate', il);
        const u = b.cb(b.linear(L('ffn_up.weight'), Lopt('ffn_up.bias'), m), 'ffn_up', il);
        f = b.cb(b.linear(L('ffn_down.weight'), Lopt('ffn_down.bias'), ops.mul(ops.silu(g), u)), 'ffn_out', il);
      }
      x = b.cb(ops.add(scaled(f, hp.residualScale), h), 'l_out', il);
    }
    const embd = b.rmsNorm(x, w.get('output_norm.weight'), 'result_norm');
    const out = w.opt('output.weight') ?? w.get('token_embd.weight');
    const logits = scaled(b.mm(out, embd), hp.logitScale !== 0 ? 1 / hp.logitScale : 0);
    return { embd, logits: b.cb(logits, 'result_output') };
  },
};
