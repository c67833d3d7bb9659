// deepseek2: DeepSeek-V2/V2.5/V3 and models on its architecture (GLM-4.7-Flash, Kimi,
// GigaChat3, ...). Multi-head latent attention (MLA) in llama.cpp's absorbed form: keys
// and values are one compressed latent per token (kv_lora_rank wide, RMS-normalised) plus
// a decoupled RoPE part shared by all heads; the cache holds [latent | rope] once per token
// (V reads the latent back from K), and the per-head up-projections are folded into the
// query (attn_k_b) and the output (attn_v_b). Queries go through an optional low-rank
// bottleneck (q_lora_rank; absent in the -Lite models). Feed-forward: the first
// leading_dense_block_count layers dense, the rest routed experts (softmax or sigmoid
// scores, an optional selection bias, renormalised and scaled weights; gate and up stacks
// split or fused) plus shared experts. Optional attention temperature tuning (Mistral
// Large 3): queries scaled by position. Multi-token-prediction blocks are accepted, not evaluated.
//   q      = Wq_b·rmsnorm(Wq_a·n)            (or Wq·n)      → per head [q_nope | q_pe]
//   [c|kpe]= Wkv_a·n,  c = rmsnorm(c),  q_pe, kpe = rope(·)  (NORMAL mode, YaRN)
//   scores = ([Wk_b·q_nope | q_pe] · [c | kpe]) · mscale²/sqrt(dk)
//   out    = Wo · Wv_b·(softmax(scores) · c)

import * as ops from '../../ggml/ops.js';
import { RopeMode } from '../../ggml/ops.js';
import { permute, reshape, type Tensor, view } from '../../ggml/tensor.js';
import { rowSize } from '../../ggml/types.js';
import type { GGUFFile } from '../../gguf/index.js';
import { ModelError } from '../errors.js';
import { GATING_BY_ID, requireExperts } from '../experts.js';
import { nextnTensors } from '../graph.js';
import type { HParams } from '../hparams.js';
import type { TensorList } from '../weights.js';
import type { Architecture } from './arch.js';

/** The latent-attention sizes, from the `attention.*` keys. */
interface Mla {
  qLoraRank: number;
  kvLoraRank: number;
  /** Per-head query/key size before absorption (nope + rope) and value size after. */
  headK: number;
  headV: number;
  /** `rope.scaling.yarn_log_multiplier` / 0.1 (the converter stores 0.1·mscale_all_dim). */
  yarnLogMul: number;
  /**
   * Attention temperature tuning (Mistral Large 3): queries scaled by
   * log(floor(pos / tempLength) + 1) · tempScale + 1; tempScale 0: none.
   */
  tempScale: number;
  tempLength: number;
}

const MLA = new WeakMap<HParams, Mla>();

function mlaOf(hp: HParams): Mla {
  const m = MLA.get(hp);
  if (!m) throw new Error('deepseek2: hyper-parameters were not read through its hparams hook');
  return m;
}

export const deepseek2: Architecture = {
  name: 'deepseek2',
  // read by llama.cpp's loader without a default (q_lora_rank: see hparams)
  requiredKeys: [
    'attention.layer_norm_rms_epsilon',
    'attention.kv_lora_rank',
    'expert_feed_forward_length',
    'expert_shared_count',
  ],
  usesKVCache: true,
  ropeMode: RopeMode.NORMAL,
  vFromK: true,

  keyRopeOffset(hp) {
    return mlaOf(hp).kvLoraRank;
  },

  hparams(hp, file: GGUFFile) {
    const key = (k: string) => `deepseek2.${k}`;
    const num = (k: string, fallback: number) => file.getNumber(key(k), fallback);
    const moe = requireExperts(hp.moe, 'deepseek2');
    // llama.cpp reads q_lora_rank without a default except for the -Lite shapes (26 or 27
    // blocks, or 48 with Kanana's 128256 tokens), which have no q-LoRA
    const nVocabFile = hp.nVocab || file.getStringArray('tokenizer.ggml.tokens', []).length;
    const lite = hp.nLayer === 26 || hp.nLayer === 27 || (hp.nLayer === 48 && nVocabFile === 128256);
    if (!lite && !file.has(key('attention.q_lora_rank'))) {
      throw new ModelError(
        `${file.path}: missing key '${key('attention.q_lora_rank')}' (llama.cpp's deepseek2 loader requires it unless the block count is a -Lite one: 26, 27, or 48 with 128256 tokens)`,
      );
    }
    const headK = num('attention.key_length_mla', 0);
    const headV = num('attention.value_length_mla', 0);
    if (headK === 0 || headV === 0 || file.tensor('blk.0.attn_kv_b.weight')) {
      throw new ModelError(
        `${file.path}: a DeepSeek-2 file without split attn_k_b/attn_v_b (key_length_mla) predates llama.cpp's MLA; convert it again`,
      );
    }
    const kvLoraRank = num('attention.kv_lora_rank', 0);
    if (
      !(kvLoraRank > 0) ||
      hp.nEmbdHeadK !== kvLoraRank + hp.nRot ||
      hp.nEmbdHeadV !== kvLoraRank ||
      hp.nHeadKv !== 1
    ) {
      throw new ModelError(
        `${file.path}: latent attention needs key_length = kv_lora_rank + rope dims, value_length = kv_lora_rank and one KV head (got ${hp.nEmbdHeadK}, ${hp.nEmbdHeadV}, ${hp.nHeadKv})`,
      );
    }
    let gating = GATING_BY_ID[num('expert_gating_func', 0)];
    if (!gating) {
      // files without the key: DeepSeek-V2/V2.5 (softmax), except GLM-4.7-Flash's shape
      gating = (hp.nLayer === 47 || hp.nLayer === 48) && nVocabFile === 154880 ? 'sigmoid' : 'softmax';
    }
    const yarnLogMul = file.has(key('rope.scaling.yarn_log_multiplier'))
      ? num('rope.scaling.yarn_log_multiplier', 0) / 0.1
      : 0;
    // llama.cpp's yarn_attn_factor with a log multiplier: the rope's own YaRN magnitude
    // cancelled (the scores' scale carries it instead)
    let ropeAttnFactor = hp.ropeAttnFactor ?? 1;
    if (hp.ropeScaling === 'yarn' && yarnLogMul !== 0) ropeAttnFactor /= 1 + 0.1 * Math.log(1 / hp.ropeFreqScale);
    const out: HParams = {
      ...hp,
      ropeAttnFactor,
      moe: {
        ...moe,
        nLayerDenseLead: num('leading_dense_block_count', 0),
        weightsScale: num('expert_weights_scale', 0),
        weightsNorm: file.getBool(key('expert_weights_norm'), false),
        gating,
      },
    };
    const tempScale = num('attention.temperature_scale', 0);
    const tempLength = num('attention.temperature_length', 0);
    if (tempScale !== 0 && !(Number.isInteger(tempLength) && tempLength > 0)) {
      throw new ModelError(
        `${file.path}: ${key('attention.temperature_scale')} = ${tempScale} needs ${key('attention.temperature_length')} > 0 (got ${tempLength}; llama.cpp asserts it)`,
      );
    }
    MLA.set(out, {
      qLoraRank: num('attention.q_lora_rank', 0),
      kvLoraRank,
      headK,
      headV,
      yarnLogMul,
      tempScale,
      tempLength,
    });
    return out;
  },

  tensors(hp, t) {
    const moe = requireExperts(hp.moe, 'deepseek2');
    const m = mlaOf(hp);
    const { nEmbd: E, nVocab: V, nHead, nFf } = hp;
    const rope = hp.nRot;
    const nope = m.headK - rope;
    const nE = moe.nExpert;
    const F = moe.nFfExp;
    const Fs = F * moe.nExpertShared;
    t.need('token_embd.weight', [E, V]);
    t.need('output_norm.weight', [E]);
    t.opt('output.weight', [E, V]);
    /** Block il's tensors (all optional: `opt`). */
    const block = (l: TensorList, il: number, opt: boolean) => {
      const add = (name: string, ne: number[], optional = false) => l.layer(il, name, ne, opt || optional);
      add('attn_norm.weight', [E]);
      if (m.qLoraRank > 0) {
        add('attn_q_a_norm.weight', [m.qLoraRank]);
        add('attn_q_a.weight', [E, m.qLoraRank]);
        add('attn_q_b.weight', [m.qLoraRank, nHead * m.headK]);
      } else add('attn_q.weight', [E, nHead * m.headK]);
      add('attn_kv_a_norm.weight', [m.kvLoraRank]);
      add('attn_kv_a_mqa.weight', [E, m.kvLoraRank + rope]);
      add('attn_k_b.weight', [nope, m.kvLoraRank, nHead]);
      add('attn_v_b.weight', [m.kvLoraRank, m.headV, nHead]);
      add('attn_output.weight', [nHead * m.headV, E]);
      add('ffn_norm.weight', [E]);
      if (il < moe.nLayerDenseLead) {
        add('ffn_gate.weight', [E, nFf]);
        add('ffn_down.weight', [nFf, E]);
        add('ffn_up.weight', [E, nFf]);
        return;
      }
      add('ffn_gate_inp.weight', [E, nE]);
      add('exp_probs_b.bias', [nE], true);
      // expert gate and up as one stack (gate rows first) or two, as llama.cpp accepts
      const fused = l.has(`blk.${il}.ffn_gate_up_exps.weight`);
      if (fused) add('ffn_gate_up_exps.weight', [E, 2 * F, nE]);
      else {
        add('ffn_gate_exps.weight', [E, F, nE]);
        add('ffn_up_exps.weight', [E, F, nE]);
      }
      add('ffn_down_exps.weight', [F, E, nE]);
      if (moe.nExpertShared > 0) {
        add('ffn_gate_shexp.weight', [E, Fs]);
        add('ffn_down_shexp.weight', [Fs, E]);
        add('ffn_up_shexp.weight', [E, Fs]);
      }
    };
    for (let il = 0; il < hp.nLayer; il++) block(t, il, false);
    // multi-token-prediction blocks: accepted, not evaluated; optional all together when
    // the file has none (llama.cpp's trunk-only files)
    const trunkOnly = !t.has(`blk.${hp.nLayer}.nextn.eh_proj.weight`);
    t.skipped((s) => {
      for (let il = hp.nLayer; il < hp.nLayer + hp.nLayerNextn; il++) {
        block(s, il, trunkOnly);
        if (!trunkOnly) nextnTensors(hp, s, il);
      }
    });
  },

  build(b) {
    const { hp, w } = b;
    const moe = requireExperts(hp.moe, 'deepseek2');
    const m = mlaOf(hp);
    const n = b.nTokens;
    const nHead = hp.nHead;
    const nRot = hp.nRot;
    const nope = m.headK - nRot;
    const rope = { mode: RopeMode.NORMAL };
    // YaRN: the scores carry mscale² (llama.cpp's kq_scale, with the rope factor undone)
    const attnFactorOrg = (hp.ropeAttnFactor ?? 1) * (1 + 0.1 * Math.log(1 / hp.ropeFreqScale));
    const ms = attnFactorOrg * (1 + 0.1 * m.yarnLogMul * Math.log(1 / hp.ropeFreqScale));
    const kqScale = (ms * ms) / Math.sqrt(m.headK);
    let x = b.inpEmbd(w.get('token_embd.weight'));
    for (let il = 0; il < hp.nLayer; il++) {
      const L = (name: string) => w.layer(il, name);
      const Lopt = (name: string) => w.layerOpt(il, name);
      const inpSA = x;
      let cur = b.rmsNorm(x, L('attn_norm.weight'), 'attn_norm', il);

      let q: Tensor;
      if (m.qLoraRank > 0) {
        q = b.cb(b.mm(L('attn_q_a.weight'), cur), 'q', il);
        q = b.rmsNorm(q, L('attn_q_a_norm.weight'), 'q', il);
        q = b.cb(b.mm(L('attn_q_b.weight'), q), 'q', il);
      } else q = b.cb(b.mm(L('attn_q.weight'), cur), 'q', il);
      const rs = (k: number) => rowSize(q.type, k);
      const qNope = b.cb(view(q, [nope, nHead, n], [rs(m.headK), rs(m.headK) * nHead], 0), 'q_nope', il);
      let qPe = b.cb(view(q, [nRot, nHead, n], [rs(m.headK), rs(m.headK) * nHead], rs(nope)), 'q_pe', il);
      const kvPe = b.cb(b.mm(L('attn_kv_a_mqa.weight'), cur), 'kv_cmpr_pe', il);
      const rowKv = rowSize(kvPe.type, m.kvLoraRank + nRot);
      let kvCmpr = b.cb(view(kvPe, [m.kvLoraRank, n], [rowKv], 0), 'kv_cmpr', il);
      let kPe = b.cb(view(kvPe, [nRot, 1, n], [rowKv, rowKv], rowSize(kvPe.type, m.kvLoraRank)), 'k_pe', il);
      qPe = b.cb(b.rope(qPe, rope, il), 'q_pe', il);
      kPe = b.cb(b.rope(kPe, rope, il), 'k_pe', il);
      kvCmpr = b.rmsNorm(kvCmpr, L('attn_kv_a_norm.weight'), 'kv_cmpr', il);

      // the absorbed key projection: each head's q_nope mapped into the latent space
      const qAbs = b.cb(b.mm(L('attn_k_b.weight'), permute(qNope, [0, 2, 1, 3])), 'q_nope_absorbed', il);
      let qCur = b.cb(ops.concat(permute(qAbs, [0, 2, 1, 3]), qPe, 0), 'Qcur', il);
      if (m.tempScale !== 0) {
        qCur = b.cb(ops.mul(qCur, b.inpAttnTemp(m.tempScale, m.tempLength)), 'Qcur_attn_temp_scaled', il);
      }
      const kCur = b.cb(ops.concat(reshape(kvCmpr, [m.kvLoraRank, 1, n]), kPe, 0), 'Kcur', il);
      cur = b.attention(il, qCur, kCur, null, L('attn_output.weight'), undefined, kqScale, {
        vMla: L('attn_v_b.weight'),
      });

      let res = inpSA;
      if (il === hp.nLayer - 1) {
        cur = b.selectOutputs(cur);
        res = b.selectOutputs(inpSA);
      }
      const ffnInp = b.cb(ops.add(cur, res), 'ffn_inp', il);
      cur = b.rmsNorm(ffnInp, L('ffn_norm.weight'), 'ffn_norm', il);
      if (il < moe.nLayerDenseLead) {
        cur = b.ffnSwiglu(cur, L('ffn_gate.weight'), L('ffn_up.weight'), L('ffn_down.weight'), il);
      } else {
        const routed = b.moeFfn(
          cur,
          {
            gateInp: L('ffn_gate_inp.weight'),
            gateUp: Lopt('ffn_gate_up_exps.weight'),
            up: Lopt('ffn_up_exps.weight'),
            gate: Lopt('ffn_gate_exps.weight'),
            down: L('ffn_down_exps.weight'),
            probsBias: Lopt('exp_probs_b.bias'),
            nExpertUsed: moe.nExpertUsed,
            gating: moe.gating,
            normW: moe.weightsNorm,
            wScale: moe.weightsScale,
            act: 'silu',
          },
          il,
        );
        if (moe.nExpertShared > 0) {
          const shared = b.ffnSwiglu(
            cur,
            L('ffn_gate_shexp.weight'),
            L('ffn_up_shexp.weight'),
            L('ffn_down_shexp.weight'),
            il,
          );
          b.cb(shared, 'ffn_shexp', il);
          cur = b.cb(ops.add(routed, shared), 'ffn_out', il);
        } else cur = routed;
      }
      x = b.cb(ops.add(cur, ffnInp), 'l_out', il);
    }
    return b.output(x);
  },
};
