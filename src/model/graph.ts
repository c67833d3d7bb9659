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
import { type HParams, nEmbdK, nEmbdV } from './hparams.js';
import type { KVCache } from './kv-cache.js';
import type { ActiveLora } from './lora.js';
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
  kvIdxs?: Tensor;
  outIds?: Tensor;
  /**
   * The rows of a token embedding table left on disk that this ubatch uses, in the
   * table's type [nEmbd, n]; `tokens` then holds each token's row in it.
   */
  embdRows?: Tensor;
  /** Where embdRows' rows come from. */
  embdRowsFrom?: DiskRows;
  /** Token ids, I32 [n], for a token-embedding LoRA when `tokens` indexes embdRows. */
  loraTokens?: Tensor;
}

type InputKey = Exclude<keyof GraphInputs, 'embdRowsFrom'>;

/** RoPE settings an architecture passes (mode) on top of the hyper-parameters. */
export interface RopeConfig {
  mode: number;
  freqFactors?: Tensor;
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
    attnFactor: 1,
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
    /** LoRA adapters applied to every product with a weight they adapt (lora.ts). */
    readonly loras: readonly ActiveLora[] = [],
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
    let cur = ops.getRows(table, this.inpTokens);
    // token-embedding adapters: + s·B·A[:, token] (A is read by rows, B is not transposed)
    for (const l of this.loras) {
      const lw = l.adapter.weightFor(tokEmbd.name);
      if (!lw) continue;
      const ids = disk ? this.input('loraTokens', GGMLType.I32, [this.nTokens], 'inp_tokens_lora') : this.inpTokens;
      const delta = ops.mulMat(lw.b, ops.getRows(lw.a, ids));
      cur = ops.add(cur, ops.scale(delta, l.adapter.scaleOf(lw, l.scale)));
    }
    return this.cb(cur, 'embd');
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

  /** w·x, plus s·B·(A·x) for each active adapter of w (llama.cpp's build_lora_mm). */
  mm(w: Tensor, x: Tensor): Tensor {
    let y = ops.mulMat(w, x);
    // (a token-embedding pair is laid out for reading by rows: it adapts the input only,
    // also when the output projection reuses the table)
    if (this.loras.length === 0 || w.name === 'token_embd.weight') return y;
    for (const l of this.loras) {
      const lw = l.adapter.weightFor(w.name);
      if (!lw) continue;
      const ab = ops.mulMat(lw.b, ops.mulMat(lw.a, x));
      y = ops.add(y, ops.scale(ab, l.adapter.scaleOf(lw, l.scale)));
    }
    return y;
  }

  /** w·x (+ adapters) + b when there is a bias. */
  linear(w: Tensor, b: Tensor | undefined, x: Tensor): Tensor {
    const y = this.mm(w, x);
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
   * llama.cpp does. Returns the output projection wo·attn (+ bo), [nEmbd, n].
   */
  attention(il: number, q: Tensor, k: Tensor, v: Tensor, wo: Tensor, bo?: Tensor): Tensor {
    const hp = this.hp;
    const n = this.nTokens;
    let kAll: Tensor;
    let vAll: Tensor;
    if (this.kv) {
      const kc = this.kv.k[il];
      const vc = this.kv.v[il];
      const kStore = ops.setRows(kc, reshape(k, [nEmbdK(hp), n]), this.inpKvIdxs).setName(`${kc.name} (view)`);
      const vStore = ops.setRows(vc, reshape(v, [nEmbdV(hp), n]), this.inpKvIdxs).setName(`${vc.name} (view)`);
      const nKV = this.ub.nKV;
      kAll = view(
        kStore,
        [hp.nEmbdHeadK, hp.nHeadKv, nKV],
        [rowSize(kc.type, hp.nEmbdHeadK), rowSize(kc.type, nEmbdK(hp))],
        0,
      );
      vAll = view(
        vStore,
        [hp.nEmbdHeadV, hp.nHeadKv, nKV],
        [rowSize(vc.type, hp.nEmbdHeadV), rowSize(vc.type, nEmbdV(hp))],
        0,
      );
      kAll = permute(kAll, [0, 2, 1, 3]);
      vAll = permute(vAll, [0, 2, 1, 3]);
    } else {
      const kp = permute(k, [0, 2, 1, 3]);
      const vp = permute(v, [0, 2, 1, 3]);
      kAll = ops.cpy(kp, newTensor(GGMLType.F16, [kp.ne[0], kp.ne[1], kp.ne[2]]));
      vAll = ops.cpy(vp, newTensor(GGMLType.F16, [vp.ne[0], vp.ne[1], vp.ne[2]]));
    }
    const qp = permute(q, [0, 2, 1, 3]);
    const scale = 1 / Math.sqrt(hp.nEmbdHeadK);
    const fa = this.cb(ops.flashAttnExt(qp, kAll, vAll, this.inpMask, scale), '__fattn__', il);
    const cur = this.cb(reshape(fa, [hp.nEmbdHeadV * hp.nHead, n]), 'kqv_out', il);
    return this.cb(this.linear(wo, bo, cur), 'attn_out', il);
  }

  /**
   * A reranker's classification head on pooled rows x [nEmbd, nSeq] (llama.cpp's rank
   * pooling): tanh(cls·x + b) when the model has `cls.weight`, then cls.output·(…) + b
   * when it has `cls.output.weight`, then an optional softmax. [nClsOut, nSeq].
   */
  rankHead(x: Tensor, softmax: boolean): Tensor {
    const w = this.w;
    let cur = x;
    const cls = w.opt('cls.weight');
    if (cls) {
      cur = ops.mulMat(cls, cur);
      const b = w.opt('cls.bias');
      if (b) cur = ops.add(cur, b);
      cur = ops.tanh(cur);
    }
    const out = w.opt('cls.output.weight');
    if (out) {
      cur = ops.mulMat(out, cur);
      const b = w.opt('cls.output.bias');
      if (b) cur = ops.add(cur, b);
    }
    if (softmax) cur = ops.softMax(cur);
    return this.cb(cur, 'result_embd_pooled');
  }

  /** SwiGLU feed-forward: down · (silu(gate · x) ⊙ (up · x)). */
  ffnSwiglu(x: Tensor, gate: Tensor, up: Tensor, down: Tensor, il: number): Tensor {
    const g = this.cb(this.mm(gate, x), 'ffn_gate', il);
    const u = this.cb(this.mm(up, x), 'ffn_up', il);
    const s = this.cb(ops.mul(ops.silu(g), u), 'ffn_swiglu', il);
    return this.cb(this.mm(down, s), 'ffn_out', il);
  }

  /** GELU feed-forward with biases: down · gelu(up · x + bu) + bd. */
  ffnGelu(x: Tensor, up: Tensor, upB: Tensor | undefined, down: Tensor, downB: Tensor | undefined, il: number): Tensor {
    const u = this.cb(this.linear(up, upB, x), 'ffn_up_b', il);
    const g = this.cb(ops.gelu(u), 'ffn_gelu', il);
    return this.cb(this.linear(down, downB, g), 'ffn_out', il);
  }
}

/** The classification head a reranker runs on its pooled rows. */
export interface RankHead {
  /** Which token of a sequence it reads: the first (BERT's [CLS]) or the last (Qwen3). */
  token: 'first' | 'last';
  /** Softmax over the outputs (Qwen3's yes/no), as llama.cpp's build_pooling. */
  softmax: boolean;
}

/** What an architecture's graph produces: hidden states after the final norm, and logits. */
export interface GraphOutputs {
  /** [nEmbd, nOut]: per-token embeddings (result_norm / result_embd). */
  embd: Tensor;
  /** [nVocab, nOut], for generative models. */
  logits?: Tensor;
}
