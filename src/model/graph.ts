// The shared blocks every architecture's graph is built from (llama.cpp's llm_graph_context):
// the ubatch's inputs (token ids, positions, KQ masks, KV-cache row indices, output rows),
// norms, RoPE, attention over the KV cache, feed-forward blocks, and `cb` naming every
// intermediate as llama.cpp does (`attn_norm-0`, `Qcur-0`, `ffn_out-1`, `result_output`)
// so that a tensor-by-tensor comparison with llama.cpp's dumps is a lookup by name.
// With sliding-window layers there are two masks and two sets of cache rows (full and
// sliding window); each layer's attention picks its own.
//
// Shapes follow ggml: [ne0, ne1, ...], ne0 fastest; a batch of n tokens of width E is
// [E, n].

import * as ops from '../ggml/ops.js';
import { newTensor, permute, reshape, type Tensor, TensorFlag, transpose, view } from '../ggml/tensor.js';
import { GGMLType, rowSize } from '../ggml/types.js';
import type { DiskRows } from './disk-rows.js';
import type { ExpertGating } from './experts.js';
import {
  embdInputWidth,
  type HParams,
  headCount,
  headCountKv,
  headDimK,
  headDimV,
  isSwa,
  ropeDims,
  ropeFreqBase,
  ropeFreqScale,
} from './hparams.js';
import type { ActiveLora } from './lora.js';
import { type AttentionMemory, recurrentState } from './memory/index.js';
import type { TensorList, Weights } from './weights.js';

/** What a graph is built for: one ubatch. */
export interface UbatchShape {
  nTokens: number;
  /** Rows to output (after the last layer); null: every token (pooled embeddings). */
  nOutputs: number | null;
  /**
   * KV cells attention reads per cache of the memory (from kvStart[c]);
   * without a memory, per mask group (0 full, 1 sliding window): nTokens.
   */
  nKV: readonly number[];
  /** Per cache, the first cell attention reads (cells [kvStart[c], kvStart[c] + nKV[c])); default 0. */
  kvStart?: readonly number[];
  /** Cells of context per sequence (picks Phi-3's LongRoPE factors). */
  nCtx: number;
  /**
   * Attention as one FLASH_ATTN_EXT (default, llama.cpp's choice on CPU) or, false, as
   * llama.cpp's unfused path with flash attention off (see `attention`).
   */
  flashAttn?: boolean;
  /**
   * Sequences in the ubatch when the memory has recurrent layers: the tokens are then
   * grouped by sequence, nTokens / nSeqs consecutive tokens each. Default 1.
   */
  nSeqs?: number;
  /**
   * The ubatch is embedding vectors (a projector's image or audio embeddings), not token
   * ids: `inpEmbd` is then an F32 input [nEmbd, n] (llama.cpp's batch.embd).
   */
  embd?: boolean;
}

/** The graph inputs a context fills before compute (only those the graph uses exist). */
export interface GraphInputs {
  tokens?: Tensor;
  /** Input embedding vectors F32 [nEmbd, n] (UbatchShape.embd). */
  embd?: Tensor;
  /** M-RoPE positions I32 [4n]: the t, h, w and e components, each n long. */
  mrope?: Tensor;
  pos?: Tensor;
  /** KQ masks by cache (or by mask group without a memory). */
  masks?: Tensor[];
  /** Cache rows each cache's new K/V go to. */
  kvIdxs?: Tensor[];
  outIds?: Tensor;
  /**
   * Per table left on disk (a token embedding table), the rows this ubatch uses, in the
   * table's type [ne0, n], and where they come from: the ubatch's distinct token ids in
   * first-seen order, which `rowIds` indexes.
   */
  diskRows?: { t: Tensor; from: DiskRows }[];
  /** Each token's row in the diskRows inputs, I32 [n]. */
  rowIds?: Tensor;
  /** The recurrent-state row of each of the ubatch's sequences (its id), I32 [nSeqs]. */
  stateIds?: Tensor;
  /** F32 inputs whose values follow from the hyper-parameters alone, set on every ubatch. */
  constants?: { t: Tensor; data: Float32Array }[];
  /**
   * Per-token query scales of attention temperature tuning, F32 [1, 1, n]:
   * log(floor(pos / floor) + 1) · scale + 1 (llama.cpp's llm_graph_input_attn_temp).
   */
  attnTemp?: { t: Tensor; scale: number; floor: number };
}

type InputKey = Exclude<keyof GraphInputs, 'diskRows' | 'masks' | 'kvIdxs' | 'constants' | 'attnTemp'>;

/** RoPE settings an architecture passes (mode) on top of the hyper-parameters. */
export interface RopeConfig {
  mode: number;
  freqFactors?: Tensor;
  /** ggml's attn_factor (default 1; DeepSeek-2 cancels YaRN's magnitude scaling with it). */
  attnFactor?: number;
}

/** Optional biases of a feed-forward's projections. */
export interface FfnBiases {
  gate?: Tensor;
  up?: Tensor;
  down?: Tensor;
}

/**
 * The frequency factors RoPE divides by (llama.cpp's get_rope_factors): `rope_freqs`
 * (Llama 3.1+) when the model has it, else LongRoPE's long set when a sequence's context
 * exceeds the original one (rope.scaling.original_context_length; llama.cpp compares its
 * context padded to 256), its short set otherwise; none in most models.
 */
export function ropeFactors(hp: HParams, w: Weights, nCtx: number): Tensor | undefined {
  const freqs = w.opt('rope_freqs.weight');
  if (freqs) return freqs;
  const long = Math.ceil(nCtx / 256) * 256 > hp.nCtxOrig;
  return w.opt(long ? 'rope_factors_long.weight' : 'rope_factors_short.weight');
}

/** ggml_rope_ext's options for layer il (also used to re-rotate shifted cache cells). */
export function ropeOptions(hp: HParams, cfg: RopeConfig, il: number): ops.RopeOptions {
  const yarn = hp.ropeScaling === 'yarn';
  return {
    nDims: ropeDims(hp, il),
    mode: cfg.mode,
    freqBase: ropeFreqBase(hp, il),
    freqScale: ropeFreqScale(hp, il),
    nCtxOrig: hp.nCtxOrig,
    extFactor: yarn ? 1 : 0,
    attnFactor: cfg.attnFactor ?? hp.ropeAttnFactor,
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
  /** The last write into each cache tensor, so a layer reading another's K/V runs after it. */
  private readonly stored = new Map<Tensor, Tensor>();
  /** Nodes nothing in the graph reads (recurrent states written back): graph outputs too. */
  readonly sideEffects: Tensor[] = [];
  /** Sequences of the ubatch (recurrent memories) and tokens of each. */
  readonly nSeqs: number;
  readonly nSeqTokens: number;

  constructor(
    readonly hp: HParams,
    readonly w: Weights,
    readonly ub: UbatchShape,
    readonly memory: AttentionMemory | null,
    /** LoRA adapters applied to every product with a weight they adapt (lora.ts). */
    readonly loras: readonly ActiveLora[] = [],
  ) {
    this.nTokens = ub.nTokens;
    this.nSeqs = ub.nSeqs ?? 1;
    this.nSeqTokens = ub.nTokens / this.nSeqs;
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

  /**
   * An F32 input holding `data` (values computed from the hyper-parameters, e.g. RoPE
   * frequency divisors); one tensor per name.
   */
  constant(name: string, data: Float32Array): Tensor {
    this.inputs.constants ??= [];
    const list = this.inputs.constants;
    const found = list.find((c) => c.t.name === name);
    if (found) return found.t;
    const t = newTensor(GGMLType.F32, [data.length], name).setFlag(TensorFlag.INPUT);
    list.push({ t, data });
    return t;
  }

  /** The query scales of attention temperature tuning (GraphInputs.attnTemp), F32 [1, 1, n]. */
  inpAttnTemp(scale: number, floor: number): Tensor {
    if (!this.inputs.attnTemp) {
      const t = newTensor(GGMLType.F32, [1, 1, this.nTokens], 'attn_scale').setFlag(TensorFlag.INPUT);
      this.inputs.attnTemp = { t, scale, floor };
    }
    return this.inputs.attnTemp.t;
  }

  /** Token ids, I32 [n]. */
  get inpTokens(): Tensor {
    return this.input('tokens', GGMLType.I32, [this.nTokens], 'inp_tokens');
  }

  /** Positions, I32 [n]. */
  get inpPos(): Tensor {
    return this.input('pos', GGMLType.I32, [this.nTokens], 'inp_pos');
  }

  /**
   * Multi-section RoPE (ggml_rope_multi, MROPE mode: Qwen2-VL) of layer il's x [hd, nHead, n]:
   * pair i of the rotated dims takes its angle from the position component its sector
   * (i mod Σsections) falls in (t, h, w, e). With one frequency schedule for all, this is
   * one NEOX rotation per component used, each kept on its sectors (0/1 masks: exact).
   * `interleaved` (IMROPE: Qwen3-VL): sector s takes h where s mod 3 = 1 and s < 3·sections[1],
   * w where s mod 3 = 2 and s < 3·sections[2], t where s mod 3 = 0 and s < 3·sections[0], else e.
   */
  ropeMulti(x: Tensor, cfg: RopeConfig, il: number, interleaved = false): Tensor {
    const sections = this.hp.ropeSections;
    const n = this.nTokens;
    const all = this.input('mrope', GGMLType.I32, [4 * n], 'inp_pos_mrope');
    const o = ropeOptions(this.hp, cfg, il);
    const hd = x.ne[0];
    const half = o.nDims / 2;
    const total = sections.reduce((a, b) => a + b, 0);
    const component = (j: number): number => {
      if (j >= o.nDims) return 0; // passed through alike by every rotation
      const sector = (j < half ? j : j - half) % total;
      if (interleaved) {
        const k = sector % 3;
        return sector < 3 * (sections[k] ?? 0) ? k : 3;
      }
      let end = 0;
      for (let k = 0; k < 4; k++) {
        end += sections[k] ?? 0;
        if (sector < end) return k;
      }
      return 3;
    };
    let out: Tensor | undefined;
    for (let k = 0; k < 4; k++) {
      const mask = Float32Array.from({ length: hd }, (_, j) => (component(j) === k ? 1 : 0));
      if (!mask.some((v) => v !== 0)) continue;
      const pos = view(all, [n], [], k * n * 4);
      const part = ops.mul(
        ops.rope(x, pos, o),
        this.constant(`mrope_mask_${hd}_${o.nDims}_${interleaved ? 'i' : ''}${k}`, mask),
      );
      out = out ? ops.add(out, part) : part;
    }
    return out!;
  }

  /**
   * KQ mask of cache c (without a memory: mask group c, 0 full, 1 sliding window), F16
   * [nKV, n]: 0 where token i may attend to cell j, -inf elsewhere.
   */
  inpMask(c: number): Tensor {
    this.inputs.masks ??= [];
    const masks = this.inputs.masks;
    const name = c === 0 ? 'attn_inp_kq_mask' : 'attn_inp_kq_mask_swa';
    masks[c] ??= newTensor(GGMLType.F16, [this.ub.nKV[c], this.nTokens], name).setFlag(TensorFlag.INPUT);
    return masks[c];
  }

  /** The rows of cache c this ubatch's tokens are written to, I32 [n]. */
  inpKvIdxs(c: number): Tensor {
    this.inputs.kvIdxs ??= [];
    const idxs = this.inputs.kvIdxs;
    const name = c === 0 ? 'inp_kv_idxs' : 'inp_kv_idxs_swa';
    idxs[c] ??= newTensor(GGMLType.I32, [this.nTokens], name).setFlag(TensorFlag.INPUT);
    return idxs[c];
  }

  /** Whether the ubatch is embedding vectors, not token ids (UbatchShape.embd). */
  get embdInput(): boolean {
    return this.ub.embd === true;
  }

  /** Token embeddings of the ubatch (or the embedding vectors it was given): F32 [nEmbd, n]. */
  inpEmbd(tokEmbd: Tensor): Tensor {
    if (this.ub.embd) {
      const all = this.input('embd', GGMLType.F32, [embdInputWidth(this.hp), this.nTokens], 'inp_embd');
      return this.cb(this.hp.nDeepstack > 0 ? this.embdSlice(all, 0) : all, 'embd');
    }
    let cur = this.tokenRows(tokEmbd);
    // token-embedding adapters: + s·B·A[:, token] (A is read by rows, B is not transposed)
    for (const l of this.loras) {
      const lw = l.adapter.weightFor(tokEmbd.name);
      if (!lw) continue;
      const delta = ops.mulMat(lw.b, ops.getRows(lw.a, this.inpTokens));
      cur = ops.add(cur, ops.scale(delta, l.adapter.scaleOf(lw, l.scale)));
    }
    return this.cb(cur, 'embd');
  }

  /**
   * The rows of a table indexed by token id (an embedding table) for the ubatch's tokens,
   * F32 [ne0, n]. A table left on disk: GET_ROWS from the ubatch's rows, read into an
   * input (the same bits).
   */
  tokenRows(table: Tensor): Tensor {
    const disk = this.w.rowsOnDisk(table);
    if (!disk) return ops.getRows(table, this.inpTokens);
    this.inputs.diskRows ??= [];
    const list = this.inputs.diskRows;
    let e = list.find((x) => x.from === disk);
    if (!e) {
      const name = list.length === 0 ? 'inp_embd_rows' : `inp_embd_rows_${list.length}`;
      e = { t: newTensor(table.type, [table.ne[0], this.nTokens], name).setFlag(TensorFlag.INPUT), from: disk };
      list.push(e);
    }
    return ops.getRows(e.t, this.input('rowIds', GGMLType.I32, [this.nTokens], 'inp_row_ids'));
  }

  /**
   * Qwen3-VL's deepstack input for layer il's output (slice il + 1 of the embedding rows), or
   * null: a token ubatch (llama.cpp pads token rows with zeros) or a layer without one.
   */
  deepstack(il: number): Tensor | null {
    if (!this.ub.embd || il >= this.hp.nDeepstack) return null;
    return this.embdSlice(
      this.input('embd', GGMLType.F32, [embdInputWidth(this.hp), this.nTokens], 'inp_embd'),
      il + 1,
    );
  }

  private embdSlice(all: Tensor, k: number): Tensor {
    return view(all, [this.hp.nEmbd, this.nTokens], [all.nb[1]], k * this.hp.nEmbd * all.nb[0]);
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

  /** RMSNorm then scale: x / rms(x) · w (no w: the norm alone). Names `norm-il`, then `name-il`. */
  rmsNorm(x: Tensor, w: Tensor | undefined, name: string, il = -1): Tensor {
    const n = this.cb(ops.rmsNorm(x, this.hp.normRmsEps), w ? 'norm' : name, il);
    return w ? this.cb(ops.mul(n, w), name, il) : n;
  }

  /** c·tanh(x/c): soft-capping (Gemma's final logits). */
  softcap(x: Tensor, c: number): Tensor {
    return ops.scale(ops.tanh(ops.scale(x, 1 / c)), c);
  }

  /** LayerNorm: (x - mean) / std · w + b. */
  layerNorm(x: Tensor, w: Tensor, b: Tensor, name: string, il = -1): Tensor {
    const n = this.cb(ops.norm(x, this.hp.normEps), 'norm', il);
    const s = this.cb(ops.mul(n, w), 'norm_w', il);
    return this.cb(ops.add(s, b), name, il);
  }

  /** Rotary embedding of layer il's x [headDim, nHeads, n] at the ubatch positions. */
  rope(x: Tensor, cfg: RopeConfig, il: number): Tensor {
    return ops.rope(x, this.inpPos, ropeOptions(this.hp, cfg, il));
  }

  /**
   * Multi-head attention of layer il (llama.cpp's build_attn with flash attention):
   * q [hdK, nHead, n], k [hdK, nHeadKv, n], v [hdV, nHeadKv, n] (dims 0-1 of v may be a
   * view with a row stride). With a memory, k and v are first written to the layer's cache
   * rows for this ubatch and attention reads cells [kvStart, kvStart + nKV) of its cache; a layer that
   * shares another's K/V passes k = v = null and reads that cache. Without a memory
   * (encoders) it reads this ubatch's k and v. Flash attention reads F32 K/V (those, or an F32
   * cache) cast to F16, as llama.cpp does. Scores are
   * q·k·kqScale (default 1/√hdK), soft-capped when the model says so; sliding-window
   * layers use the sliding-window mask. A layer of a latent cache (KVCache's vFromK,
   * DeepSeek's MLA) passes v = null: V is the leading hdV elements of the K rows just
   * stored. Options: per-head sinks (gpt-oss), and vMla [hdV, hdOut, nHead], which maps
   * each head's output back from the latent. Returns wo·attn (+ bo), [nEmbd, n] (wo null:
   * the heads' outputs, [hdV·nHead, n], for a gate before the projection).
   */
  attention(
    il: number,
    q: Tensor,
    k: Tensor | null,
    v: Tensor | null,
    wo: Tensor | null,
    bo?: Tensor,
    kqScale = 1 / Math.sqrt(headDimK(this.hp, il)),
    o: { sinks?: Tensor; vMla?: Tensor } = {},
  ): Tensor {
    const hp = this.hp;
    const hdK = headDimK(hp, il);
    const hdV = headDimV(hp, il);
    const nHeadKv = headCountKv(hp, il);
    let kAll: Tensor;
    let vAll: Tensor;
    let mask: Tensor;
    if (this.memory) {
      const lk = this.memory.layer(il);
      if (!lk) throw new Error(`graph: layer ${il} has no KV cache`);
      let kc = this.stored.get(lk.k) ?? lk.k;
      let vc = this.stored.get(lk.v) ?? lk.v;
      const latent = lk.v.viewSrc === lk.k;
      if (lk.writes) {
        if (!k || (!v && !latent)) throw new Error(`graph: layer ${il} keeps its own K/V but got none`);
        const idxs = this.inpKvIdxs(lk.cache);
        kc = ops.setRows(kc, rows2d(k), idxs).setName(`${lk.k.name} (view)`);
        this.stored.set(lk.k, kc);
        if (v && !latent) {
          vc = ops.setRows(vc, rows2d(v), idxs).setName(`${lk.v.name} (view)`);
          this.stored.set(lk.v, vc);
        }
      }
      // the latent: the leading hdV elements of the K rows (after this ubatch's write)
      if (latent) vc = view(kc, [lk.v.ne[0], lk.v.ne[1]], [kc.nb[1]], 0);
      const nKV = this.ub.nKV[lk.cache];
      const start = this.ub.kvStart?.[lk.cache] ?? 0;
      kAll = view(kc, [hdK, nHeadKv, nKV], [rowSize(kc.type, hdK), kc.nb[1]], start * kc.nb[1]);
      vAll = view(vc, [hdV, nHeadKv, nKV], [rowSize(vc.type, hdV), vc.nb[1]], start * vc.nb[1]);
      kAll = permute(kAll, [0, 2, 1, 3]);
      vAll = permute(vAll, [0, 2, 1, 3]);
      mask = this.inpMask(lk.cache);
    } else {
      if (!k || !v) throw new Error(`graph: layer ${il} needs K and V without a cache`);
      kAll = permute(k, [0, 2, 1, 3]);
      vAll = permute(v, [0, 2, 1, 3]);
      mask = this.inpMask(isSwa(hp, il) ? 1 : 0);
    }
    const qp = permute(q, [0, 2, 1, 3]);
    if (this.ub.flashAttn === false) return this.attentionUnfused(il, qp, kAll, vAll, mask, wo, bo, kqScale, o);
    // flash attention takes F32 K/V (an F32 cache, or this ubatch's without one) cast to
    // F16, as llama.cpp's build_attn_mha does; the unfused path multiplies the F32 ones
    const toF16 = (t: Tensor) =>
      t.type === GGMLType.F32 ? ops.cpy(t, newTensor(GGMLType.F16, [t.ne[0], t.ne[1], t.ne[2]])) : t;
    kAll = toF16(kAll);
    vAll = toF16(vAll);
    let fa = ops.flashAttnExt(qp, kAll, vAll, mask, kqScale, 0, hp.attnSoftcap);
    if (o.sinks) fa = ops.flashAttnExtAddSinks(fa, o.sinks);
    this.cb(fa, '__fattn__', il);
    let cur = fa; // [hdV, nHead, n]
    if (o.vMla) {
      // per head: [hdV, n] → [hdOut, n] (the permutes only reinterpret the layout)
      const ph = this.cb(ops.mulMat(o.vMla, permute(fa, [0, 2, 1, 3])), 'fattn_mla', il);
      cur = ops.cont(permute(ph, [0, 2, 1, 3]));
    }
    return this.attentionOutput(il, cur, wo, bo);
  }

  /**
   * llama.cpp's attention with flash attention off (what node-llama-cpp runs for Gemma 2 and
   * for models whose K and V heads differ in size, DeepSeek's MLA among them): scores
   * k·q as a matrix product (q rounded to F16 against the F16 cache), soft-capped, then
   * softmax(scores·kqScale + mask) in F32, and the probabilities times V as a second
   * product (the probabilities rounded to F16 against the F16 cache: the rounding flash
   * attention skips, and the difference that matters on quantized files). qp [hdK, n, nHead],
   * kAll [hdK, nKV, nHeadKv], vAll [hdV, nKV, nHeadKv] (permuted views).
   */
  private attentionUnfused(
    il: number,
    qp: Tensor,
    kAll: Tensor,
    vAll: Tensor,
    mask: Tensor,
    wo: Tensor | null,
    bo: Tensor | undefined,
    kqScale: number,
    o: { sinks?: Tensor; vMla?: Tensor },
  ): Tensor {
    if (o.sinks) throw new Error(`graph: layer ${il}: attention sinks need flash attention`);
    let kq = this.cb(ops.mulMat(kAll, qp), 'kq', il); // [nKV, n, nHead]
    if (this.hp.attnSoftcap) kq = this.cb(this.softcap(kq, this.hp.attnSoftcap), 'kq_scaled_2', il);
    kq = this.cb(ops.softMax(kq, mask, kqScale), 'kq_soft_max', il);
    // llama.cpp's unfused cache keeps V transposed: the same values, rows of nKV
    const vt = this.cb(ops.cont(transpose(vAll)), 'v_cont', il); // [nKV, hdV, nHeadKv]
    let kqv = this.cb(ops.mulMat(vt, kq), 'kqv', il); // [hdV, n, nHead]
    if (o.vMla) kqv = this.cb(ops.mulMat(o.vMla, kqv), 'kqv_mla', il);
    return this.attentionOutput(il, ops.cont(permute(kqv, [0, 2, 1, 3])), wo, bo);
  }

  /** The heads' outputs cur [hdV, nHead, n] as rows, then wo·rows (+ bo) when there is wo. */
  private attentionOutput(il: number, cur: Tensor, wo: Tensor | null, bo: Tensor | undefined): Tensor {
    cur = this.cb(reshape(cur, [cur.ne[0] * cur.ne[1], cur.ne[2]]), 'kqv_out', il);
    if (!wo) return cur;
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

  /**
   * SwiGLU feed-forward: down · (silu(gate · x + bg) ⊙ (up · x + bu)) + bd, each bias only
   * when the model has it (llama's optional MLP biases).
   */
  ffnSwiglu(x: Tensor, gate: Tensor, up: Tensor, down: Tensor, il: number, bias: FfnBiases = {}): Tensor {
    const g = this.cb(this.linear(gate, bias.gate, x), 'ffn_gate', il);
    const u = this.cb(this.linear(up, bias.up, x), 'ffn_up', il);
    const s = this.cb(ops.mul(ops.silu(g), u), 'ffn_swiglu', il);
    return this.cb(this.linear(down, bias.down, s), 'ffn_out', il);
  }

  /**
   * Mixture-of-experts feed-forward of x [nEmbd, n] (llama.cpp's build_moe_ffn, with its
   * names): router probabilities (from the router's logits, or from logits the architecture
   * computed), the top nExpertUsed experts per token (ties ordered as ggml's argsort), their
   * weights (normalised and scaled as the architecture says), each token's expert FFNs
   * through MUL_MAT_ID (gate and up as two stacks or one fused stack, each optionally scaled
   * per expert), weighted and summed. Returns [nEmbd, n].
   */
  moeFfn(x: Tensor, f: MoeFfn, il: number): Tensor {
    const nEmbd = x.ne[0];
    const n = x.ne[1];
    const k = f.nExpertUsed;
    let logits: Tensor;
    if (f.logits) logits = f.logits;
    else if (f.gateInp) logits = this.cb(this.mm(f.gateInp, x), 'ffn_moe_logits', il);
    else throw new Error('moe: neither a router nor router logits');
    const nExpert = logits.ne[0];
    if (f.gateInpB) logits = this.cb(ops.add(logits, f.gateInpB), 'ffn_moe_logits_biased', il);
    let probs = logits;
    if (f.gating === 'softmax') probs = ops.softMax(logits);
    else if (f.gating === 'sigmoid') probs = ops.sigmoid(logits);
    this.cb(probs, 'ffn_moe_probs', il);
    // the selection bias picks experts; the weights come from the unbiased probabilities
    let selection = f.probsBias ? this.cb(ops.add(probs, f.probsBias), 'ffn_moe_probs_biased', il) : probs;
    const groups = this.hp.moe?.nExpertGroups ?? 0;
    if (groups > 1) selection = this.expertGroupMask(selection, groups, this.hp.moe!.nGroupUsed, il);
    const selected = ops.argsortTopK(selection, k); // [k, n]
    this.cb(selected.src[0], 'ffn_moe_argsort', il);
    this.cb(selected, 'ffn_moe_topk', il);
    const probs3 = reshape(probs, [1, nExpert, n]);
    let weights = this.cb(ops.getRows(probs3, selected), 'ffn_moe_weights', il);
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

    // a per-expert scale [nExpert] of a MUL_MAT_ID result [rows, k, n]: llama.cpp repeats it
    // over the tokens and picks each token's experts' entries; here the repeat is 0·p + s
    // over the probabilities' shape (finite, so exactly s)
    let perToken: Tensor | undefined;
    const scaled = (t: Tensor, s: Tensor | undefined, name: string) => {
      if (!s) return t;
      perToken ??= ops.scale(probs3, 0);
      const picked = ops.getRows(ops.add(perToken, reshape(s, [1, nExpert, 1])), selected); // [1, k, n]
      return this.cb(ops.mul(t, picked), name, il);
    };

    const cur = reshape(x, [nEmbd, 1, n]);
    let up: Tensor;
    let gate: Tensor | undefined;
    if (f.gateUp) {
      // one stack of [gate rows | up rows] per expert: one MUL_MAT_ID, then two views
      const gu = scaled(
        this.cb(ops.mulMatId(f.gateUp, cur, selected), 'ffn_moe_gate_up', il),
        f.upS,
        'ffn_moe_gate_up_scaled',
      );
      const nFf = gu.ne[0] / 2;
      gate = this.cb(view(gu, [nFf, k, n], [gu.nb[1], gu.nb[2]], 0), 'ffn_moe_gate', il);
      up = this.cb(view(gu, [nFf, k, n], [gu.nb[1], gu.nb[2]], nFf * gu.nb[0]), 'ffn_moe_up', il);
    } else {
      if (!f.up) throw new Error('moe: no up experts');
      up = scaled(this.cb(ops.mulMatId(f.up, cur, selected), 'ffn_moe_up', il), f.upS, 'ffn_moe_up_scaled');
      if (f.upB) up = this.cb(ops.addId(up, f.upB, selected), 'ffn_moe_up_biased', il);
      if (f.gate) {
        gate = scaled(this.cb(ops.mulMatId(f.gate, cur, selected), 'ffn_moe_gate', il), f.gateS, 'ffn_moe_gate_scaled');
        if (f.gateB) gate = this.cb(ops.addId(gate, f.gateB, selected), 'ffn_moe_gate_biased', il);
      }
    }
    let act: Tensor;
    if (gate) {
      if (f.act === 'relu_sqr') throw new Error('moe: a gated squared ReLU is not defined (llama.cpp aborts)');
      if (f.act === 'swiglu_oai') act = this.cb(ops.swigluOai(gate, up, 1.702, 7), 'ffn_moe_swiglu_oai', il);
      else if (f.act === 'gelu') act = this.cb(ops.mul(ops.gelu(gate), up), 'ffn_moe_geglu', il);
      else act = this.cb(ops.mul(ops.silu(gate), up), 'ffn_moe_swiglu', il);
    } else if (f.act === 'relu_sqr') act = this.cb(ops.sqr(ops.relu(up)), 'ffn_moe_relu_sqr', il);
    else {
      if (f.act !== 'silu') throw new Error(`moe: ${f.act} needs gate experts`);
      act = this.cb(ops.silu(up), 'ffn_moe_silu', il);
    }
    let experts = scaled(
      this.cb(ops.mulMatId(f.down, act, selected), 'ffn_moe_down', il),
      f.downS,
      'ffn_moe_down_scaled',
    ); // [nEmbd, k, n]
    if (f.downB) experts = this.cb(ops.addId(experts, f.downB, selected), 'ffn_moe_down_biased', il);
    experts = this.cb(ops.mul(experts, weights), 'ffn_moe_weighted', il);
    // the experts' outputs summed in slot order
    const slot = (i: number) => view(experts, [nEmbd, n], [experts.nb[2]], i * experts.nb[1]);
    let out = slot(0);
    for (let i = 1; i < k; i++) out = ops.add(out, slot(i));
    if (k === 1) out = ops.cont(out);
    return this.cb(out, 'ffn_moe_out', il);
  }

  /**
   * GeGLU feed-forward (llama.cpp's LLM_FFN_GELU with a parallel gate, ggml_geglu_split):
   * down · (gelu(gate · x) ⊙ (up · x)).
   */
  /**
   * Grouped expert selection (DeepSeek-V3, as llama.cpp's build_moe_ffn): the selection
   * scores [nExpert, n] in `groups` equal groups, each scored by the sum of its two best;
   * the experts of all but the `used` best groups set to -inf.
   */
  private expertGroupMask(selection: Tensor, groups: number, used: number, il: number): Tensor {
    const [nExpert, n] = selection.ne;
    const per = nExpert / groups;
    const byGroup = reshape(selection, [per, groups, n]);
    const best2 = ops.getRows(reshape(byGroup, [1, per, groups, n]), ops.argsortTopK(byGroup, 2)); // [1, 2, groups, n]
    const scores = reshape(ops.sumRows(reshape(best2, [2, groups, n])), [groups, n]);
    const chosen = this.cb(ops.argsortTopK(scores, used), 'ffn_moe_group_topk', il); // [used, n]
    // (-inf everywhere as 0·s - inf: the scores are finite) then the chosen groups' rows back
    const masked = ops.setRows(ops.scale(byGroup, 0, Number.NEGATIVE_INFINITY), ops.getRows(byGroup, chosen), chosen);
    return this.cb(ops.cont(masked, [nExpert, n]), 'ffn_moe_probs_masked', il);
  }

  ffnGeglu(x: Tensor, gate: Tensor, up: Tensor, down: Tensor, il: number): Tensor {
    const g = this.cb(this.mm(gate, x), 'ffn_gate', il);
    const u = this.cb(this.mm(up, x), 'ffn_up', il);
    const s = this.cb(ops.mul(ops.gelu(g), u), 'ffn_geglu', il);
    return this.cb(this.mm(down, s), 'ffn_out', il);
  }

  /**
   * SwiGLU with one fused gate+up projection (Phi-3's `ffn_up` of 2·n_ff rows): the first
   * half of each row is the gate, the second the up part (ggml_swiglu of one tensor).
   */
  ffnSwigluFused(x: Tensor, gateUp: Tensor, down: Tensor, il: number): Tensor {
    const gu = this.cb(this.mm(gateUp, x), 'ffn_up', il);
    const nFf = gu.ne[0] / 2;
    const g = view(gu, [nFf, gu.ne[1]], [gu.nb[1]], 0);
    const u = view(gu, [nFf, gu.ne[1]], [gu.nb[1]], nFf * gu.nb[0]);
    const s = this.cb(ops.mul(ops.silu(g), u), 'ffn_swiglu', il);
    return this.cb(this.mm(down, s), 'ffn_out', il);
  }

  /**
   * Layer il's q/k/v projections of x as llama.cpp's build_qkv takes them from the file
   * (TensorList.qkv): one fused attn_qkv (+ bias), q [hd, nHead, n] and k, v [hd, nHeadKv, n]
   * as views of its rows; or attn_q/k/v, each + its bias when the model has one. `dims`
   * overrides the layer's head size (then V's too) and head counts.
   */
  qkv(
    il: number,
    x: Tensor,
    dims?: { hd: number; nHead: number; nHeadKv: number },
  ): { q: Tensor; k: Tensor; v: Tensor } {
    const { hp, w } = this;
    const hd = dims?.hd ?? headDimK(hp, il);
    const hdV = dims?.hd ?? headDimV(hp, il);
    const nh = dims?.nHead ?? headCount(hp, il);
    const nkv = dims?.nHeadKv ?? headCountKv(hp, il);
    const n = x.ne[1];
    const fused = w.layerOpt(il, 'attn_qkv.weight');
    if (fused) {
      const qkv = this.cb(this.linear(fused, w.layerOpt(il, 'attn_qkv.bias'), x), 'wqkv', il);
      const e = qkv.nb[0];
      const part = (heads: number, at: number) => view(qkv, [hd, heads, n], [hd * e, qkv.nb[1]], at * e);
      return { q: part(nh, 0), k: part(nkv, nh * hd), v: part(nkv, (nh + nkv) * hd) };
    }
    const proj = (p: string, name: string) =>
      this.cb(this.linear(w.layer(il, `attn_${p}.weight`), w.layerOpt(il, `attn_${p}.bias`), x), name, il);
    return {
      q: reshape(proj('q', 'Qcur'), [hd, nh, n]),
      k: reshape(proj('k', 'Kcur'), [hd, nkv, n]),
      v: reshape(proj('v', 'Vcur'), [hdV, nkv, n]),
    };
  }

  /**
   * The output head: final RMSNorm (`result_norm`), the output projection (`output.weight`,
   * or the token embeddings when tied; + `output.bias` when the architecture takes one) and,
   * when the model says so, soft-capped logits
   * (`result_output`).
   */
  outputHead(x: Tensor): GraphOutputs {
    const w = this.w;
    const embd = this.rmsNorm(x, w.get('output_norm.weight'), 'result_norm');
    const out = w.opt('output.weight') ?? w.get('token_embd.weight');
    let logits = this.linear(out, w.opt('output.bias'), embd);
    if (this.hp.finalSoftcap) logits = this.softcap(logits, this.hp.finalSoftcap);
    return { embd, logits: this.cb(logits, 'result_output') };
  }

  // ---- recurrent layers ----
  // A recurrent layer reads its state rows for the ubatch's sequences (GET_ROWS by sequence
  // id), computes, and writes the new rows back (SET_ROWS, graph outputs of their own).
  // Tokens come grouped by sequence: x [width, nSeqTokens · nSeqs].

  /** The ubatch's sequence ids: the rows of the recurrent states it reads and writes, I32 [nSeqs]. */
  get inpStateIds(): Tensor {
    return this.input('stateIds', GGMLType.I32, [this.nSeqs], 'inp_s_ids');
  }

  private stateTensor(il: number, which: 'r' | 's'): Tensor {
    const rec = recurrentState(this.memory);
    const t = rec ? (which === 'r' ? rec.r(il) : rec.s(il)) : undefined;
    if (!t) throw new Error(`graph: layer ${il} keeps no recurrent ${which === 'r' ? 'convolution' : 'scan'} state`);
    return t;
  }

  /** Layer il's state of each of the ubatch's sequences, F32 [width, nSeqs] ('r': convolution, 's': scan). */
  readState(il: number, which: 'r' | 's'): Tensor {
    return ops.getRows(this.stateTensor(il, which), this.inpStateIds);
  }

  /** Writes the ubatch's sequences' new states (rows [width, nSeqs]) back. */
  writeState(il: number, which: 'r' | 's', rows: Tensor): void {
    this.sideEffects.push(ops.setRows(this.stateTensor(il, which), rows, this.inpStateIds));
  }

  /**
   * The input of layer il's causal convolution of kernel width dConv over x [channels,
   * nSeqTokens, nSeqs] (ggml_ssm_conv's sx, [dConv - 1 + nSeqTokens, channels, nSeqs]): each
   * channel's carried inputs (the state) followed by the ubatch's. The last dConv - 1
   * inputs become the new state.
   */
  convInput(il: number, x: Tensor, dConv: number): Tensor {
    const ch = x.ne[0];
    const nS = this.nSeqs;
    const state = reshape(this.readState(il, 'r'), [dConv - 1, ch, nS]);
    const sx = this.cb(ops.concat(state, transpose(x), 0), 'conv_input', il);
    const tail = view(sx, [dConv - 1, ch, nS], [sx.nb[1], sx.nb[2]], this.nSeqTokens * sx.nb[0]);
    this.writeState(il, 'r', reshape(ops.cont(tail), [(dConv - 1) * ch, nS]));
    return sx;
  }

  /**
   * A Gated DeltaNet layer (Qwen3.5's linear attention; llama.cpp's build_layer_attn_linear):
   * q, k, v from one projection through a causal convolution and SiLU, q and k L2-normed;
   * per value head a decay g = softplus(Wα·x + dt_bias)·A and a write strength
   * β = sigmoid(Wβ·x); the delta rule over the state; the output RMS-normed per head and
   * gated by silu(Wz·x); then projected. Returns [nEmbd, n].
   */
  gatedDeltaNet(il: number, x: Tensor): Tensor {
    const { hp, w } = this;
    const L = (name: string) => w.layer(il, name);
    const S = hp.ssmDState;
    const Hk = hp.ssmNGroup;
    const Hv = hp.ssmDtRank;
    const nT = this.nSeqTokens;
    const nS = this.nSeqs;
    const e = 4;
    const channels = hp.ssmDInner + 2 * Hk * S;
    const qkv = this.cb(reshape(this.mm(L('attn_qkv.weight'), x), [channels, nT, nS]), 'linear_attn_qkv_mixed', il);
    const z = this.cb(this.mm(L('attn_gate.weight'), x), 'z', il);
    const beta = this.cb(ops.sigmoid(reshape(this.mm(L('ssm_beta.weight'), x), [1, Hv, nT, nS])), 'beta_sigmoid', il);
    const alpha = reshape(this.mm(L('ssm_alpha.weight'), x), [Hv, nT, nS]);
    const aSp = this.cb(ops.softplus(ops.add(alpha, L('ssm_dt.bias'))), 'a_softplus', il);
    const gate = reshape(this.cb(ops.mul(aSp, L('ssm_a')), 'gate', il), [1, Hv, nT, nS]);

    const kernel = L('ssm_conv1d.weight');
    const sx = this.convInput(il, qkv, kernel.ne[0]);
    const conv = this.cb(ops.silu(this.cb(ops.ssmConv(sx, kernel), 'conv_output_raw', il)), 'conv_output_silu', il);
    const part = (heads: number, at: number) => view(conv, [S, heads, nT, nS], [S * e, conv.nb[1], conv.nb[2]], at * e);
    const q = this.cb(ops.l2Norm(part(Hk, 0), hp.normRmsEps), 'q_conv_predelta', il);
    const k = this.cb(ops.l2Norm(part(Hk, S * Hk), hp.normRmsEps), 'k_conv_predelta', il);
    const v = part(Hv, 2 * S * Hk);

    const state = reshape(this.readState(il, 's'), [S, S, Hv, nS]);
    const out = ops.gatedDeltaNet(q, k, v, gate, beta, state);
    const o = this.cb(view(out, [S, Hv, nT, nS], [S * e, S * Hv * e, S * Hv * nT * e], 0), 'attn_output', il);
    this.writeState(il, 's', view(out, [S * S * Hv, nS], [S * S * Hv * e], S * Hv * nT * nS * e));

    const normed = this.rmsNorm(o, L('ssm_norm.weight'), 'attn_out_normed', il);
    const gated = ops.mul(normed, ops.silu(reshape(z, [S, Hv, nT, nS])));
    const flat = this.cb(reshape(gated, [S * Hv, nT * nS]), 'final_output', il);
    return this.cb(this.mm(L('ssm_out.weight'), flat), 'linear_attn_out', il);
  }

  /**
   * Attention with a gated output (Qwen3.5's full-attention layers): the q projection
   * yields per head the query and a gate ([q | gate] per head), q and k RMS-normed per head
   * then roped, and the heads' output multiplied by sigmoid(gate) before the projection.
   */
  gatedAttention(il: number, x: Tensor, rope: RopeConfig): Tensor {
    const { hp, w } = this;
    const L = (name: string) => w.layer(il, name);
    const hd = headDimK(hp, il);
    const nH = headCount(hp, il);
    const nKv = headCountKv(hp, il);
    const n = this.nTokens;
    const e = 4;
    const qFull = this.cb(this.mm(L('attn_q.weight'), x), 'Qcur_full', il);
    const half = (at: number) => view(qFull, [hd, nH, n], [2 * hd * e, 2 * hd * nH * e], at);
    let q = this.rmsNorm(half(0), L('attn_q_norm.weight'), 'Qcur_normed', il);
    const gate = this.cb(ops.cont(half(hd * e), [hd * nH, n]), 'gate_reshaped', il);
    let k = this.cb(this.mm(L('attn_k.weight'), x), 'Kcur', il);
    const v = this.cb(this.mm(L('attn_v.weight'), x), 'Vcur', il);
    k = this.rmsNorm(reshape(k, [hd, nKv, n]), L('attn_k_norm.weight'), 'Kcur_normed', il);
    q = this.cb(this.rope(q, rope, il), 'Qcur', il);
    k = this.cb(this.rope(k, rope, il), 'Kcur', il);
    const scale = hp.attentionScale !== 0 ? hp.attentionScale : 1 / Math.sqrt(hd);
    const pre = this.cb(this.attention(il, q, k, reshape(v, [hd, nKv, n]), null, undefined, scale), 'attn_pregate', il);
    const gated = this.cb(ops.mul(pre, ops.sigmoid(gate)), 'attn_gated', il);
    return this.cb(this.mm(L('attn_output.weight'), gated), 'attn_output', il);
  }

  /**
   * LFM2's gated short convolution: [b | c | x] = W_in·h; y = c ⊙ conv(b ⊙ x) over the
   * carried inputs; W_out·y. Returns [nEmbd, n].
   */
  shortConv(il: number, h: Tensor): Tensor {
    const { hp, w } = this;
    const L = (name: string) => w.layer(il, name);
    const E = hp.nEmbd;
    const nT = this.nSeqTokens;
    const nS = this.nSeqs;
    const bcx = this.cb(reshape(this.mm(L('shortconv.in_proj.weight'), h), [3 * E, nT, nS]), 'conv.in_proj', il);
    const part = (i: number) => view(bcx, [E, nT, nS], [bcx.nb[1], bcx.nb[2]], i * E * 4);
    const bx = ops.mul(part(0), part(2));
    const kernel = L('shortconv.conv.weight');
    const conv = this.cb(ops.ssmConv(this.convInput(il, bx, kernel.ne[0]), kernel), 'conv.conv', il);
    const y = this.mm(L('shortconv.out_proj.weight'), ops.mul(part(1), conv));
    return this.cb(reshape(y, [E, nT * nS]), 'conv.out_proj', il);
  }

  /**
   * A Mamba-2 mixer (llama.cpp's build_mamba2_layer): [z | xBC | dt] = W_in·h; xBC through
   * the causal convolution (+ bias) and SiLU, split into x, B, C; the selective scan with
   * per-head decays A and steps softplus(dt + dt_bias); y + D·x, gated by silu(z), RMS-normed
   * per group; W_out·y. Returns [nEmbd, n].
   */
  mamba2(il: number, h: Tensor): Tensor {
    const { hp, w } = this;
    const L = (name: string) => w.layer(il, name);
    const dInner = hp.ssmDInner;
    const dState = hp.ssmDState;
    const nHead = hp.ssmDtRank;
    const nGroup = hp.ssmNGroup;
    const headDim = dInner / nHead;
    const nT = this.nSeqTokens;
    const nS = this.nSeqs;
    const e = 4;
    const xbcWidth = dInner + 2 * nGroup * dState;
    const zx = this.mm(L('ssm_in.weight'), h);
    const zxBCdt = reshape(zx, [zx.ne[0], nT, nS]);
    const z = view(zxBCdt, [headDim, nHead, nT, nS], [headDim * e, zxBCdt.nb[1], zxBCdt.nb[2]], 0);
    const xBC = view(zxBCdt, [xbcWidth, nT, nS], [zxBCdt.nb[1], zxBCdt.nb[2]], dInner * e);
    const dt = view(zxBCdt, [nHead, nT, nS], [zxBCdt.nb[1], zxBCdt.nb[2]], (dInner + xbcWidth) * e);

    const kernel = L('ssm_conv1d.weight');
    let xbc = ops.ssmConv(this.convInput(il, xBC, kernel.ne[0]), kernel);
    const bias = w.layerOpt(il, 'ssm_conv1d.bias');
    if (bias) xbc = ops.add(xbc, bias);
    xbc = ops.silu(xbc);
    const x = view(xbc, [headDim, nHead, nT, nS], [headDim * e, xbc.nb[1], xbc.nb[2]], 0);
    const group = (at: number) => view(xbc, [dState, nGroup, nT, nS], [dState * e, xbc.nb[1], xbc.nb[2]], at * e);
    const B = group(dInner);
    const C = group(dInner + nGroup * dState);
    const dtb = ops.add(ops.cont(dt), L('ssm_dt.bias'));

    const s0 = reshape(this.readState(il, 's'), [dState, headDim, nHead, nS]);
    const scan = ops.ssmScan(s0, x, dtb, L('ssm_a'), B, C);
    const yCount = headDim * nHead * nT * nS;
    this.writeState(il, 's', view(scan, [dState * dInner, nS], [dState * dInner * e], yCount * e));
    let y = view(scan, [headDim, nHead, nT, nS], [headDim * e, headDim * nHead * e, headDim * nHead * nT * e], 0);
    y = this.cb(ops.add(y, ops.mul(x, L('ssm_d'))), 'mamba2_y_add_d', il);
    y = ops.mul(ops.silu(ops.cont(z)), y);
    y = this.rmsNorm(reshape(y, [dInner / nGroup, nGroup, nT, nS]), L('ssm_norm.weight'), 'ssm_norm', il);
    y = reshape(y, [dInner, nT * nS]);
    return this.cb(this.mm(L('ssm_out.weight'), y), 'mamba_out', il);
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
  gateInp?: Tensor;
  gateInpB?: Tensor;
  /** Router logits [nExpert, n] the architecture computed (Gemma 4's), instead of gateInp·x. */
  logits?: Tensor;
  /** Expert stacks [nEmbd, nFf, nExpert] (down: [nFf, nEmbd, nExpert]) and per-expert biases [nFf or nEmbd, nExpert]. */
  up?: Tensor;
  upB?: Tensor;
  /** Absent: the activation applies to up alone (llama.cpp's has_gate false). */
  gate?: Tensor;
  gateB?: Tensor;
  /** One stack of gate then up rows [nEmbd, 2·nFf, nExpert], instead of gate and up. */
  gateUp?: Tensor;
  down: Tensor;
  downB?: Tensor;
  /** Per-expert output scales [nExpert] of the up (or fused gate_up), gate and down products. */
  upS?: Tensor;
  gateS?: Tensor;
  downS?: Tensor;
  /** Selection bias added to the probabilities for choosing only (DeepSeek-V3's exp_probs_b). */
  probsBias?: Tensor;
  nExpertUsed: number;
  gating: ExpertGating;
  /** Divide the chosen weights by their sum. */
  normW: boolean;
  /** Multiply the chosen weights (0 or 1: not). */
  wScale: number;
  /**
   * 'silu': SwiGLU (without gate experts: SiLU of up); 'gelu': GeGLU; 'swiglu_oai': gpt-oss's
   * clamped SwiGLU (alpha 1.702, limit 7); 'relu_sqr': relu(up)² without gate experts (Nemotron-H).
   */
  act: 'silu' | 'gelu' | 'swiglu_oai' | 'relu_sqr';
}

/**
 * A [hd, heads, n] tensor as rows of hd·heads (a reshape, or a 2-D view when the token
 * rows have a stride, as a fused qkv projection's V).
 */
function rows2d(t: Tensor): Tensor {
  const w = t.ne[0] * t.ne[1];
  if (t.isContiguous()) return reshape(t, [w, t.ne[2]]);
  if (t.nb[1] !== t.ne[0] * t.nb[0]) throw new Error(`graph: cannot merge the first two dims of ${t}`);
  return view(t, [w, t.ne[2]], [t.nb[2]], 0);
}

/** The tensors of a Mamba-2 layer (GraphBuilder.mamba2): Granite 4, Nemotron-H. */
export function mamba2Tensors(hp: HParams, t: TensorList, il: number): void {
  const E = hp.nEmbd;
  const nHead = hp.ssmDtRank;
  const xbc = hp.ssmDInner + 2 * hp.ssmNGroup * hp.ssmDState;
  t.layer(il, 'ssm_in.weight', [E, hp.ssmDInner + xbc + nHead]);
  t.layer(il, 'ssm_conv1d.weight', [hp.ssmDConv, xbc]);
  t.layer(il, 'ssm_conv1d.bias', [xbc], true);
  t.layer(il, 'ssm_dt.bias', [nHead]);
  t.layer(il, 'ssm_a', [1, nHead]);
  t.layer(il, 'ssm_d', [1, nHead]);
  t.layer(il, 'ssm_norm.weight', [hp.ssmDInner / hp.ssmNGroup, hp.ssmNGroup]);
  t.layer(il, 'ssm_out.weight', [hp.ssmDInner, E]);
}

/**
 * The fusion tensors of multi-token-prediction block il (llama.cpp's `nextn.*`): the
 * [embedding | hidden] projection and its two norms, and the optional own embedding,
 * output head and head norm.
 */
export function nextnTensors(hp: HParams, t: TensorList, il: number): void {
  const E = hp.nEmbd;
  t.layer(il, 'nextn.eh_proj.weight', [2 * E, E]);
  t.layer(il, 'nextn.enorm.weight', [E]);
  t.layer(il, 'nextn.hnorm.weight', [E]);
  t.layer(il, 'nextn.embed_tokens.weight', [E, hp.nVocab], true);
  t.layer(il, 'nextn.shared_head_head.weight', [E, hp.nVocab], true);
  t.layer(il, 'nextn.shared_head_norm.weight', [E], true);
}

/** The tensors of a Gated DeltaNet layer (GraphBuilder.gatedDeltaNet): Qwen3.5. */
export function gatedDeltaNetTensors(hp: HParams, t: TensorList, il: number): void {
  const E = hp.nEmbd;
  const channels = hp.ssmDInner + 2 * hp.ssmNGroup * hp.ssmDState;
  t.layer(il, 'attn_qkv.weight', [E, channels]);
  t.layer(il, 'attn_gate.weight', [E, hp.ssmDInner]);
  t.layer(il, 'ssm_conv1d.weight', [hp.ssmDConv, channels]);
  t.layer(il, 'ssm_dt.bias', [hp.ssmDtRank]);
  t.layer(il, 'ssm_a', [hp.ssmDtRank]);
  t.layer(il, 'ssm_beta.weight', [E, hp.ssmDtRank]);
  t.layer(il, 'ssm_alpha.weight', [E, hp.ssmDtRank]);
  t.layer(il, 'ssm_norm.weight', [hp.ssmDState]);
  t.layer(il, 'ssm_out.weight', [hp.ssmDInner, E]);
}

/** The tensors of a gated short convolution (GraphBuilder.shortConv): LFM2. */
export function shortConvTensors(hp: HParams, t: TensorList, il: number): void {
  const E = hp.nEmbd;
  t.layer(il, 'shortconv.conv.weight', [hp.shortConvL, E]);
  t.layer(il, 'shortconv.in_proj.weight', [E, 3 * E]);
  t.layer(il, 'shortconv.out_proj.weight', [E, E]);
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
