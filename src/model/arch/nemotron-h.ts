// nemotron_h: NVIDIA Nemotron-H / Nemotron Nano 2 (dense). Every layer is one of three
// kinds, after an RMSNorm and with a residual: a Mamba-2 mixer (`attention.head_count_kv`
// and `feed_forward_length` entries 0; see GraphBuilder.mamba2), attention without
// positional encoding (no RoPE: the Mamba layers carry position), or a feed-forward
// block with a squared ReLU and no gate.
//   x = embd(tokens)
//   per layer: x = x + block(rmsnorm(x)·attn_norm)
//              block: Mamba-2 | Wo·attn(Wq·a, Wk·a, Wv·a) | Wdown·relu(Wup·a)²
//   logits = Woutput·(rmsnorm(x)·output_norm)
// nemotron_h_moe (Nemotron 3 Nano 30B-A3B), or any file with `expert_count`: the
// feed-forward layers are experts of squared-ReLU up/down projections (no gate), chosen by
// sigmoid scores plus a selection bias (`exp_probs_b`), weighted by the unbiased scores
// (renormalised when `expert_weights_norm`, times `expert_weights_scale`), plus a shared
// squared-ReLU expert:  block = Σ_{e ∈ topk(σ + b)} w_e · down_e·relu(up_e·a)² + down_s·relu(up_s·a)².
// Expert sizes and counts may differ per layer (Nemotron 3 Puzzle); experts may work in a
// latent space (`moe_latent_size`, Nemotron 3 Super) entered and left through
// `ffn_latent_down/up`, the router still reading the layer input.

import * as ops from '../../ggml/ops.js';
import { ModelError } from '../errors.js';
import type { ExpertParams } from '../experts.js';
import { mamba2Tensors, nextnTensors } from '../graph.js';
import { ffLength, type HParams, headCount, headCountKv, isRecurrent } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

/**
 * Rows of layer il's experts: `expert_feed_forward_length` (one value, or one per layer in
 * Nemotron 3 Puzzle's files), else the layer's feed_forward_length over its experts used.
 */
function expertRows(hp: HParams, moe: ExpertParams, il: number): number {
  return moe.nFfExpArr[il] || ffLength(hp, il) / moe.nExpertUsedArr[il];
}

/** The nemotron_h architecture under `name` (nemotron_h and nemotron_h_moe share it, as in llama.cpp). */
function nemotronHArch(name: string): Architecture {
  return {
    name,
    requiredKeys: ['attention.layer_norm_rms_epsilon'],
    usesKVCache: true,

    hparams(hp, file) {
      for (const k of [
        'ssm.conv_kernel',
        'ssm.inner_size',
        'ssm.state_size',
        'ssm.time_step_rank',
        'ssm.group_count',
      ]) {
        if (!(file.getNumber(`${name}.${k}`, 0) > 0))
          throw new ModelError(`${file.path}: ${name}.${k} is missing or 0`);
      }
      if (hp.ssmDInner % hp.ssmDtRank !== 0 || hp.ssmDInner % hp.ssmNGroup !== 0 || hp.ssmDtRank % hp.ssmNGroup !== 0) {
        throw new ModelError(
          `${file.path}: Mamba-2 sizes: inner size ${hp.ssmDInner} must divide by the ${hp.ssmDtRank} heads and ${hp.ssmNGroup} groups`,
        );
      }
      let moe: ExpertParams | null = hp.moe;
      if (moe) {
        moe = {
          ...moe,
          gating: 'sigmoid',
          weightsNorm: file.getBool(`${name}.expert_weights_norm`, false),
          weightsScale: file.getNumber(`${name}.expert_weights_scale`, 0),
          nEmbdLatent: file.getNumber(`${name}.moe_latent_size`, 0),
        };
        for (let il = 0; il < hp.nLayer + hp.nLayerNextn; il++) {
          if (hp.nFfArr[il] !== 0 && !(expertRows(hp, moe, il) > 0)) {
            throw new ModelError(`${file.path}: ${name}.expert_feed_forward_length is missing or 0 for layer ${il}`);
          }
        }
        if (!(moe.nFfShexp > 0))
          throw new ModelError(`${file.path}: ${name}.expert_shared_feed_forward_length is missing or 0`);
      }
      return {
        ...hp,
        moe,
        recurrentLayers: hp.nHeadKvArr.map((n, il) => n === 0 && hp.nFfArr[il] === 0),
      };
    },

    tensors(hp, t) {
      const E = hp.nEmbd;
      const hd = hp.nEmbdHeadK;
      // (q/k/v as llama.cpp's create_tensor_qkv takes them: fused or not, biases optional)
      const attentionTensors = (l: TensorList, il: number) => {
        l.qkv(il, E, hd * headCount(hp, il), hd * headCountKv(hp, il), hp.nEmbdHeadV * headCountKv(hp, il));
        l.layer(il, 'attn_output.weight', [hp.nEmbdHeadV * headCount(hp, il), E]);
        l.layer(il, 'attn_output.bias', [E], true);
      };
      const expertTensors = (l: TensorList, il: number, mtp: boolean) => {
        const { nExpert: nE, nFfShexp: Fs } = hp.moe!;
        const Fe = expertRows(hp, hp.moe!, il);
        l.layer(il, 'ffn_gate_inp.weight', [E, nE]);
        l.layer(il, 'exp_probs_b.bias', [nE]);
        // (Nemotron 3 Super: experts in a latent space of moe_latent_size, with optional
        // projections into and out of it; not in the multi-token-prediction blocks)
        const Le = hp.moe!.nEmbdLatent || E;
        if (!mtp) {
          l.layer(il, 'ffn_latent_down.weight', [E, Le], true);
          l.layer(il, 'ffn_latent_up.weight', [Le, E], true);
        }
        l.layer(il, 'ffn_up_exps.weight', [Le, Fe, nE]);
        l.layer(il, 'ffn_down_exps.weight', [Fe, Le, nE]);
        l.layer(il, 'ffn_up_shexp.weight', [E, Fs]);
        l.layer(il, 'ffn_down_shexp.weight', [Fs, E]);
      };
      // multi-token-prediction blocks (an attention and an expert sub-layer with the nextn
      // fusion tensors): accepted, not evaluated
      if (hp.nLayerNextn > 0 && !hp.moe) {
        throw new ModelError(`${name}: nextn_predict_layers = ${hp.nLayerNextn} needs experts (its blocks are MoE)`);
      }
      t.skipped((s) => {
        for (let il = hp.nLayer; il < hp.nLayer + hp.nLayerNextn; il++) {
          s.layer(il, 'attn_norm.weight', [E]);
          attentionTensors(s, il);
          s.layer(il, 'post_attention_norm.weight', [E]);
          expertTensors(s, il, true);
          nextnTensors(hp, s, il);
        }
      });
      t.need('token_embd.weight', [E, hp.nVocab]);
      t.need('output_norm.weight', [E]);
      t.opt('output.weight', [E, hp.nVocab]);
      for (let il = 0; il < hp.nLayer; il++) {
        t.layer(il, 'attn_norm.weight', [E]);
        const F = ffLength(hp, il);
        if (isRecurrent(hp, il)) mamba2Tensors(hp, t, il);
        else if (F === 0) attentionTensors(t, il);
        else if (hp.moe) expertTensors(t, il, false);
        else {
          t.layer(il, 'ffn_up.weight', [E, F]);
          t.layer(il, 'ffn_down.weight', [F, E]);
          t.layer(il, 'ffn_up.bias', [F], true);
          t.layer(il, 'ffn_down.bias', [E], true);
        }
      }
    },

    build(b) {
      const { hp, w } = b;
      let x = b.inpEmbd(w.get('token_embd.weight'));
      for (let il = 0; il < hp.nLayer; il++) {
        const L = (name: string) => w.layer(il, name);
        const Lopt = (name: string) => w.layerOpt(il, name);
        let res = x;
        const a = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);
        let cur: ReturnType<typeof b.mm>;
        if (isRecurrent(hp, il)) cur = b.mamba2(il, a);
        else if (ffLength(hp, il) === 0) {
          const hd = hp.nEmbdHeadK;
          const { q, k, v } = b.qkv(il, a, { hd, nHead: headCount(hp, il), nHeadKv: headCountKv(hp, il) });
          const scale = hp.attentionScale !== 0 ? hp.attentionScale : 1 / Math.sqrt(hd);
          cur = b.attention(il, q, k, v, L('attn_output.weight'), Lopt('attn_output.bias'), scale);
        } else if (hp.moe) {
          // the router reads the layer input; the experts its latent projection when there is one
          const latentDown = Lopt('ffn_latent_down.weight');
          const latentUp = Lopt('ffn_latent_up.weight');
          const logits = b.cb(b.mm(L('ffn_gate_inp.weight'), a), 'ffn_moe_logits', il);
          let routed = b.moeFfn(
            latentDown ? b.mm(latentDown, a) : a,
            {
              logits,
              up: L('ffn_up_exps.weight'),
              down: L('ffn_down_exps.weight'),
              probsBias: L('exp_probs_b.bias'),
              nExpertUsed: hp.moe.nExpertUsedArr[il],
              gating: 'sigmoid',
              normW: hp.moe.weightsNorm,
              wScale: hp.moe.weightsScale,
              act: 'relu_sqr',
            },
            il,
          );
          if (latentUp) routed = b.mm(latentUp, routed);
          const u = b.cb(b.mm(L('ffn_up_shexp.weight'), a), 'ffn_up', il);
          const r = b.cb(ops.sqr(b.cb(ops.relu(u), 'ffn_relu', il)), 'ffn_sqr(relu)', il);
          const shared = b.cb(b.mm(L('ffn_down_shexp.weight'), r), 'ffn_shexp', il);
          cur = b.cb(ops.add(routed, shared), 'ffn_out', il);
        } else {
          const u = b.cb(b.linear(L('ffn_up.weight'), Lopt('ffn_up.bias'), a), 'ffn_up', il);
          const r = b.cb(ops.sqr(b.cb(ops.relu(u), 'ffn_relu', il)), 'ffn_sqr(relu)', il);
          cur = b.cb(b.linear(L('ffn_down.weight'), Lopt('ffn_down.bias'), r), 'ffn_out', il);
        }
        if (il === hp.nLayer - 1) {
          cur = b.selectOutputs(cur);
          res = b.selectOutputs(res);
        }
        x = b.cb(ops.add(cur, res), 'nemotron_h_block_out', il);
      }
      return b.outputHead(x);
    },
  };
}

export const nemotronH = nemotronHArch('nemotron_h');
export const nemotronHMoe = nemotronHArch('nemotron_h_moe');
