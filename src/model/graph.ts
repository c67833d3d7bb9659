// The shared blocks every architecture's graph is built from (llama.cpp's llm_graph_context):
// the ubatch's inputs (token ids, positions, KQ mask, KV-cache row indices, output rows),
// norms, RoPE, attention over the KV cache, feed-forward blocks, and `cb` naming every
// intermediate as llama.cpp does (`attn_norm-0`, `Qcur-0`, `ffn_out-1`, `result_output`)
// so that a tensor-by-tensor comparison with llama.cpp's dumps is a lookup by name.
//
// Shapes follow ggml: [ne0, ne1, ...], ne0 fastest; a batch of n tokens of width E is
// [E, n].

import * as ops from '../ggml/ops.js';
import { newTensor, permute, reshape, type Tensor, TensorFlag, view } from '../ggml/tensor.js';
import { GGMLType, rowSize } from '../ggml/types.js';
import type { DiskRows } from './disk-rows.js';
import type { ExpertGating } from './experts.js';
import { type HParams, nEmbdK, nEmbdV } from './hparams.js';
import type { KVCache } from './kv-cache.js';
import type { Weights } from './weights.js';

/** What a graph is built for: one ubatch. */
export interface UbatchShape {
  nTokens: number;
  /** Rows to output (after the last layer); null: every token (pooled embeddings). */
  nOutputs: number | null;
  /** KV cells attention reads (cells [0, nKV) of the cache); nTokens without a cache. */
  nKV: number;
}

/** The graph inputs a context fills before compute (only those the graph uses exist). */
export interface GraphInputs {
  tokens?: Tensor;
  pos?: Tensor;
  mask?: Tensor;
  /** The mask of sliding-window layers. */
  maskSwa?: Tensor;
  kvIdxs?: Tensor;
  outIds?: Tensor;
  /**
   * The rows of a token embedding table left on disk that this ubatch uses, in the
   * table's type [nEmbd, n]; `tokens` then holds each token's row in it.
   */
  embdRows?: Tensor;
  /** Where embdRows' rows come from. */
  embdRowsFrom?: DiskRows;
}

type InputKey = Exclude<keyof GraphInputs, 'embdRowsFrom'>;

/** RoPE settings an architecture passes (mode) on top of the hyper-parameters. */
export interface RopeConfig {
  mode: number;
  freqFactors?: Tensor;
  /** ggml's attn_factor (default 1; DeepSeek-2 cancels YaRN's magnitude scaling with it). */
  attnFactor?: number;
}

/** ggml_rope_ext's options for a model (also used to re-rotate shifted cache cells). */
export function ropeOptions(hp: HParams, cfg: RopeConfig): ops.RopeOptions {
  const yarn = hp.ropeScaling === 'yarn';
  return {
    nDims: hp.nRot,
    mode: cfg.mode,
    freqBase: hp.ropeFreqBase,
    freqScale: hp.ropeFreqScale,
    nCtxOrig: hp.nCtxOrig,
    extFactor: yarn ? 1 : 0,
    attnFactor: cfg.attnFactor ?? hp.ropeAttnFactor ?? 1,
    betaFast: 32,
    betaSlow: 1,
    freqFactors: cfg.freqFactors,
  };
}

export class GraphBuilder {
  readonly inputs: GraphInputs = {};
  /** Every named intermediate, in creation order (for dumps and debugging). */
  readonly named: Tensor[] = [];
  readonly nTokens: number;

  constructor(
    readonly hp: HParams,
    readonly w: Weights,
    readonly ub: UbatchShape,
    readonly kv: KVCache | null,
  ) {
    this.nTokens = ub.nTokens;
  }

  /** Names a tensor as llama.cpp's callback does: `name-il`, or `name` for il < 0. */
  cb(t: Tensor, name: string, il = -1): Tensor {
    t.setName(il >= 0 ? `${name}-${il}` : name);
    this.named.push(t);
    return t;
  }

  // ---- inputs ----

  private input(key: InputKey, type: number, ne: number[], name: string): Tensor {
    let t = this.inputs[key];
    if (!t) {
      t = newTensor(type, ne, name).setFlag(TensorFlag.INPUT);
      this.inputs[key] = t;
    }
    return t;
  }

  /** Token ids, I32 [n]. */
  get inpTokens(): Tensor {
    return this.input('tokens', GGMLType.I32, [this.nTokens], 'inp_tokens');
  }

  /** Positions, I32 [n]. */
  get inpPos(): Tensor {
    return this.input('pos', GGMLType.I32, [this.nTokens], 'inp_pos');
  }

  /** KQ mask, F16 [nKV, n]: 0 where token i may attend to cell j, -inf elsewhere. */
  get inpMask(): Tensor {
    return this.input('mask', GGMLType.F16, [this.ub.nKV, this.nTokens], 'attn_inp_kq_mask');
  }

  /** KQ mask of sliding-window layers (keys nSwa or more positions back hidden too). */
  get inpMaskSwa(): Tensor {
    return this.input('maskSwa', GGMLType.F16, [this.ub.nKV, this.nTokens], 'attn_inp_kq_mask_swa');
  }

  /** The KV-cache rows this ubatch's tokens are written to, I32 [n]. */
  get inpKvIdxs(): Tensor {
    return this.input('kvIdxs', GGMLType.I32, [this.nTokens], 'inp_kv_idxs');
  }

  /** Token embeddings of the ubatch: F32 [nEmbd, n]. */
  inpEmbd(tokEmbd: Tensor): Tensor {
    // a table left on disk: GET_ROWS from the ubatch's rows, read into an input (same bits)
    const disk = this.w.rowsOnDisk(tokEmbd);
    if (disk) this.inputs.embdRowsFrom = disk;
    const table = disk ? this.input('embdRows', tokEmbd.type, [tokEmbd.ne[0], this.nTokens], 'inp_embd_rows') : tokEmbd;
    return this.cb(ops.getRows(table, this.inpTokens), 'embd');
  }

  /**
   * Keeps only the rows that are output (llama.cpp does this before the last layer's
   * feed-forward, so the rest of the graph runs on those rows alone).
   */
  selectOutputs(x: Tensor): Tensor {
    if (this.ub.nOutputs === null || this.ub.nOutputs === this.nTokens) return x;
    const ids = this.input('outIds', GGMLType.I32, [this.ub.nOutputs], 'inp_out_ids');
    return ops.getRows(x, ids);
  }

  // ---- blocks ----

  mm(w: Tensor, x: Tensor): Tensor {
    return ops.mulMat(w, x);
  }

  /** w·x + b when there is a bias. */
  linear(w: Tensor, b: Tensor | undefined, x: Tensor): Tensor {
    const y = ops.mulMat(w, x);
    return b ? ops.add(y, b) : y;
  }

  /** RMSNorm then scale: x / rms(x) · w. Names `norm-il`, then `name-il`. */
  rmsNorm(x: Tensor, w: Tensor, name: string, il = -1): Tensor {
    const n = this.cb(ops.rmsNorm(x, this.hp.normRmsEps), 'norm', il);
    return this.cb(ops.mul(n, w), name, il);
  }

  /** LayerNorm: (x - mean) / std · w + b. */
  layerNorm(x: Tensor, w: Tensor, b: Tensor, name: string, il = -1): Tensor {
    const n = this.cb(ops.norm(x, this.hp.normEps), 'norm', il);
    const s = this.cb(ops.mul(n, w), 'norm_w', il);
    return this.cb(ops.add(s, b), name, il);
  }

  /** Rotary embedding of x [headDim, nHeads, n] at the ubatch positions. */
  rope(x: Tensor, cfg: RopeConfig): Tensor {
    return ops.rope(x, this.inpPos, ropeOptions(this.hp, cfg));
  }

  /**
   * Multi-head attention of layer il (llama.cpp's build_attn with flash attention):
   * q [hdK, nHead, n], k [hdK, nHeadKv, n], v [hdV, nHeadKv, n]. With a KV cache, k and v
   * are first written to the cache rows of this ubatch and attention reads cells
   * [0, nKV); without one (encoders) it reads this ubatch's k and v, cast to F16 as
   * llama.cpp does. v null: V is the first hdV elements of each K row (a latent cache,
   * KVCache.vFromK). Scores are scaled by kqScale; options: per-head sinks, and vMla
   * [hdV, hdOut, nHead], which maps each head's output back from the latent (DeepSeek's
   * absorbed MLA). Returns the output projection wo·attn (+ bo), [nEmbd, n].
   */
  attention(
    il: number,
    q: Tensor,
    k: Tensor,
    v: Tensor | null,
    wo: Tensor,
    bo?: Tensor,
    kqScale = 1 / Math.sqrt(this.hp.nEmbdHeadK),
    o: { sinks?: Tensor; vMla?: Tensor } = {},
  ): Tensor {
    const hp = this.hp;
    const n = this.nTokens;
    let kAll: Tensor;
    let vAll: Tensor;
    if (this.kv) {
      const kc = this.kv.k[il];
      const vc = this.kv.v[il];
      const kStore = ops.setRows(kc, reshape(k, [nEmbdK(hp), n]), this.inpKvIdxs).setName(`${kc.name} (view)`);
      const nKV = this.ub.nKV;
      kAll = view(
        kStore,
        [hp.nEmbdHeadK, hp.nHeadKv, nKV],
        [rowSize(kc.type, hp.nEmbdHeadK), rowSize(kc.type, nEmbdK(hp))],
        0,
      );
      if (v) {
        const vStore = ops.setRows(vc, reshape(v, [nEmbdV(hp), n]), this.inpKvIdxs).setName(`${vc.name} (view)`);
        vAll = view(
          vStore,
          [hp.nEmbdHeadV, hp.nHeadKv, nKV],
          [rowSize(vc.type, hp.nEmbdHeadV), rowSize(vc.type, nEmbdV(hp))],
          0,
        );
      } else {
        // the latent: the leading hdV elements of the K rows just stored
        vAll = view(kStore, [hp.nEmbdHeadV, hp.nHeadKv, nKV], [kAll.nb[1], kAll.nb[2]], 0);
      }
      kAll = permute(kAll, [0, 2, 1, 3]);
      vAll = permute(vAll, [0, 2, 1, 3]);
    } else {
      if (!v) throw new Error('attention without a cache needs v');
      const kp = permute(k, [0, 2, 1, 3]);
      const vp = permute(v, [0, 2, 1, 3]);
      kAll = ops.cpy(kp, newTensor(GGMLType.F16, [kp.ne[0], kp.ne[1], kp.ne[2]]));
      vAll = ops.cpy(vp, newTensor(GGMLType.F16, [vp.ne[0], vp.ne[1], vp.ne[2]]));
    }
    const qp = permute(q, [0, 2, 1, 3]);
    const mask = hp.swaLayers[il] ? this.inpMaskSwa : this.inpMask;
    let fa = ops.flashAttnExt(qp, kAll, vAll, mask, kqScale);
    if (o.sinks) fa = ops.flashAttnExtAddSinks(fa, o.sinks);
    this.cb(fa, '__fattn__', il);
    let cur = fa; // [hdV, nHead, n]
    if (o.vMla) {
      // per head: [hdV, n] → [hdOut, n] (the permutes only reinterpret the layout)
      const ph = this.cb(ops.mulMat(o.vMla, permute(fa, [0, 2, 1, 3])), 'fattn_mla', il);
      cur = ops.cont(permute(ph, [0, 2, 1, 3]));
    }
    cur = this.cb(reshape(cur, [cur.ne[0] * cur.ne[1], n]), 'kqv_out', il);
    return this.cb(this.linear(wo, bo, cur), 'attn_out', il);
  }

  /**
   * The decoder's head: final RMSNorm (`result_norm`), then logits (`result_output`)
   * through output.weight, or token_embd when the output is tied to it.
   */
  output(x: Tensor): GraphOutputs {
    const w = this.w;
    const embd = this.rmsNorm(x, w.get('output_norm.weight'), 'result_norm');
    const out = w.opt('output.weight') ?? w.get('token_embd.weight');
    const logits = this.cb(this.mm(out, embd), 'result_output');
    return { embd, logits };
  }

  /** SwiGLU feed-forward: down · (silu(gate · x) ⊙ (up · x)). */
  ffnSwiglu(x: Tensor, gate: Tensor, up: Tensor, down: Tensor, il: number): Tensor {
    const g = this.cb(this.mm(gate, x), 'ffn_gate', il);
    const u = this.cb(this.mm(up, x), 'ffn_up', il);
    const s = this.cb(ops.mul(ops.silu(g), u), 'ffn_swiglu', il);
    return this.cb(this.mm(down, s), 'ffn_out', il);
  }

  /**
   * Mixture-of-experts feed-forward of x [nEmbd, n] (llama.cpp's build_moe_ffn, with its
   * names): router probabilities, the top nExpertUsed experts per token (ties ordered as
   * ggml's argsort), their weights (normalised and scaled as the architecture says), each
   * token's expert FFNs through MUL_MAT_ID, weighted and summed. Returns [nEmbd, n].
   */
  moeFfn(x: Tensor, f: MoeFfn, il: number): Tensor {
    const nEmbd = x.ne[0];
    const n = x.ne[1];
    const k = f.nExpertUsed;
    const nExpert = f.gateInp.ne[1];
    let logits = this.cb(this.mm(f.gateInp, x), 'ffn_moe_logits', il);
    if (f.gateInpB) logits = this.cb(ops.add(logits, f.gateInpB), 'ffn_moe_logits_biased', il);
    let probs = logits;
    if (f.gating === 'softmax') probs = ops.softMax(logits);
    else if (f.gating === 'sigmoid') probs = ops.sigmoid(logits);
    this.cb(probs, 'ffn_moe_probs', il);
    // the selection bias picks experts; the weights come from the unbiased probabilities
    const selection = f.probsBias ? this.cb(ops.add(probs, f.probsBias), 'ffn_moe_probs_biased', il) : probs;
    const selected = ops.argsortTopK(selection, k); // [k, n]
    this.cb(selected.src[0], 'ffn_moe_argsort', il);
    this.cb(selected, 'ffn_moe_topk', il);
    let weights = this.cb(ops.getRows(reshape(probs, [1, nExpert, n]), selected), 'ffn_moe_weights', il);
    if (f.gating === 'softmax_weight') {
      weights = ops.softMax(reshape(weights, [k, n]));
      weights = this.cb(reshape(weights, [1, k, n]), 'ffn_moe_weights_softmax', il);
    }
    if (f.normW) {
      const w2 = reshape(weights, [k, n]);
      const sum = this.cb(ops.sumRows(w2), 'ffn_moe_weights_sum', il);
      // as llama.cpp: never divide by less than the smallest normal f16
      const clamped = this.cb(
        ops.clamp(sum, 6.103515625e-5, Number.POSITIVE_INFINITY),
        'ffn_moe_weights_sum_clamped',
        il,
      );
      weights = reshape(this.cb(ops.div(w2, clamped), 'ffn_moe_weights_norm', il), [1, k, n]);
    }
    if (f.wScale !== 0 && f.wScale !== 1) weights = this.cb(ops.scale(weights, f.wScale), 'ffn_moe_weights_scaled', il);

    const cur = reshape(x, [nEmbd, 1, n]);
    let up = this.cb(ops.mulMatId(f.up, cur, selected), 'ffn_moe_up', il);
    if (f.upB) up = this.cb(ops.addId(up, f.upB, selected), 'ffn_moe_up_biased', il);
    let act: Tensor;
    if (f.gate) {
      let gate = this.cb(ops.mulMatId(f.gate, cur, selected), 'ffn_moe_gate', il);
      if (f.gateB) gate = this.cb(ops.addId(gate, f.gateB, selected), 'ffn_moe_gate_biased', il);
      act =
        f.act === 'swiglu_oai'
          ? this.cb(ops.swigluOai(gate, up, 1.702, 7), 'ffn_moe_swiglu_oai', il)
          : this.cb(ops.mul(ops.silu(gate), up), 'ffn_moe_swiglu', il);
    } else {
      if (f.act !== 'silu') throw new Error(`moe: ${f.act} needs gate experts`);
      act = this.cb(ops.silu(up), 'ffn_moe_silu', il);
    }
    let experts = this.cb(ops.mulMatId(f.down, act, selected), 'ffn_moe_down', il); // [nEmbd, k, n]
    if (f.downB) experts = this.cb(ops.addId(experts, f.downB, selected), 'ffn_moe_down_biased', il);
    experts = this.cb(ops.mul(experts, weights), 'ffn_moe_weighted', il);
    // the experts' outputs summed in slot order
    const slot = (i: number) => view(experts, [nEmbd, n], [experts.nb[2]], i * experts.nb[1]);
    let out = slot(0);
    for (let i = 1; i < k; i++) out = ops.add(out, slot(i));
    if (k === 1) out = ops.cont(out);
    return this.cb(out, 'ffn_moe_out', il);
  }

  /** GELU feed-forward with biases: down · gelu(up · x + bu) + bd. */
  ffnGelu(x: Tensor, up: Tensor, upB: Tensor | undefined, down: Tensor, downB: Tensor | undefined, il: number): Tensor {
    const u = this.cb(this.linear(up, upB, x), 'ffn_up_b', il);
    const g = this.cb(ops.gelu(u), 'ffn_gelu', il);
    return this.cb(this.linear(down, downB, g), 'ffn_out', il);
  }
}

/** The weights and routing of one mixture-of-experts feed-forward (llama.cpp's build_moe_ffn). */
export interface MoeFfn {
  /** Router [nEmbd, nExpert] and its optional bias. */
  gateInp: Tensor;
  gateInpB?: Tensor;
  /** Expert stacks [nEmbd, nFf, nExpert] (down: [nFf, nEmbd, nExpert]) and per-expert biases [nFf or nEmbd, nExpert]. */
  up: Tensor;
  upB?: Tensor;
  /** Absent: the activation applies to up alone (llama.cpp's has_gate false). */
  gate?: Tensor;
  gateB?: Tensor;
  down: Tensor;
  downB?: Tensor;
  /** Selection bias added to the probabilities for choosing only (DeepSeek-V3's exp_probs_b). */
  probsBias?: Tensor;
  nExpertUsed: number;
  gating: ExpertGating;
  /** Divide the chosen weights by their sum. */
  normW: boolean;
  /** Multiply the chosen weights (0 or 1: not). */
  wScale: number;
  /** 'silu': SwiGLU; 'swiglu_oai': gpt-oss's clamped SwiGLU (alpha 1.702, limit 7). */
  act: 'silu' | 'swiglu_oai';
}

/** What an architecture's graph produces: hidden states after the final norm, and logits. */
export interface GraphOutputs {
  /** [nEmbd, nOut]: per-token embeddings (result_norm / result_embd). */
  embd: Tensor;
  /** [nVocab, nOut], for generative models. */
  logits?: Tensor;
}
