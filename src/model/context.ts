// A context: the state of evaluating a model (llama_context). It owns the memory (KV
// caches, see memory/) and a scheduler over the model's devices, and evaluates batches of
// tokens: `decode(batch)` splits a batch into ubatches, builds the architecture's graph
// for each (a fresh graph per ubatch: the scheduler rewrites sources), fills the inputs
// (token ids, positions, the KQ masks, the cache rows written) and keeps the logits (or
// embeddings) of the tokens the batch asks for.

import {
  type Backend,
  type BufferType,
  type Device,
  fallbackDevice,
  initDeviceBackend,
  Scheduler,
  tensorGetF32,
  tensorGetInto,
  tensorSet,
} from '../backends/index.js';
import { buildGraph, type Graph, levelNodes } from '../ggml/graph.js';
import * as ops from '../ggml/ops.js';
import { newTensor, Op, type Tensor, TensorFlag, view } from '../ggml/tensor.js';
import { GGMLType, rowSize, traitsOf } from '../ggml/types.js';
import { logger } from '../log.js';
import { platform } from '../platform/index.js';
import { ContextError, KVCacheFullError } from './errors.js';
import { GraphBuilder, type GraphInputs, ropeOptions } from './graph.js';
import { embdInputWidth, headCountKv, headDimK, headDimV, maskedBySwa, type PoolingType, ropeDims } from './hparams.js';
import { type ActiveLora, loraKey } from './lora.js';
import {
  type AttentionMemory,
  CACHE_TYPES,
  type CacheType,
  createMemory,
  type KVCache,
  MAX_SEQ,
  type RecurrentState,
  recurrentState,
  type UbatchSeqs,
} from './memory/index.js';
import type { Model } from './model.js';

const log = logger('context');

export interface ContextParams {
  /** KV cache cells (tokens of context). Default: the training context, at most 4096. */
  nCtx?: number;
  /** Most tokens one decode call takes. Default: min(2048, nCtx). */
  nBatch?: number;
  /** Most tokens per graph evaluation. Default: min(512, nBatch). */
  nUbatch?: number;
  /** Threads for devices that use them. Default: 4, or the number of cores if fewer. */
  nThreads?: number;
  /** KV cache types. Default f16 (llama.cpp's). */
  typeK?: CacheType;
  typeV?: CacheType;
  /** Distinct sequence ids (0 .. nSeqMax-1). Default 1, at most 32. */
  nSeqMax?: number;
  /**
   * Sequences decoded together that a sliding-window cache is sized for (W cells each).
   * Default nSeqMax; `reserveSequences` raises it.
   */
  nSeqWindow?: number;
  /** Output embeddings (hidden states after the final norm) instead of logits. */
  embeddings?: boolean;
  /** Pooling of embeddings per sequence. Default: the model's (`{arch}.pooling_type`). */
  pooling?: PoolingType;
  /**
   * Sliding-window layers keep a full-size cache too (llama.cpp's swa_full): no cell is
   * ever overwritten, so any cached prefix stays reusable. Default false.
   */
  swaFull?: boolean;
  /**
   * Models with recurrent layers: states kept per sequence at known positions, so that a
   * new prompt sharing a prefix with what a sequence has seen can resume there (a state
   * cannot drop a tail). A decode holding several tokens of a sequence saves its state
   * before the last of them. 0: none (a prefix is then kept only when the state stands
   * exactly at its end). Default 4.
   */
  checkpoints?: number;
  /**
   * Attention as flash attention (default true, llama.cpp's choice on CPU) or, false, as
   * llama.cpp runs it with `flash_attn` off: scores and probabilities as matrix products,
   * the probabilities rounded to F16 against the F16 V cache. node-llama-cpp turns flash
   * attention off for Gemma 2 and for models whose K and V heads differ in size (DeepSeek's
   * latent attention): false reproduces its answers there.
   */
  flashAttn?: boolean;
  /**
   * Keep every named intermediate of the last decode (`attn_norm-0`, `Qcur-0`, ...) for
   * `intermediates`: a debugging aid for comparing with llama.cpp's dumps. Slower.
   */
  keepIntermediates?: boolean;
  /**
   * Called after each graph evaluation with the F32 input of every matrix product by a
   * model weight (what llama.cpp's cb_eval shows llama-imatrix): the weight's name, the
   * input's values (rows of ne[0]) and its shape.
   */
  onMatMulInput?: (weight: string, input: Float32Array, ne: readonly number[]) => void;
}

/** A named intermediate tensor of the last decode (keepIntermediates). */
export interface Intermediate {
  name: string;
  op: string;
  ne: number[];
  values: Float32Array;
}

/** Tokens to evaluate, with optional positions, sequence ids and output flags. */
export interface Batch {
  tokens: ArrayLike<number>;
  /** Default: each sequence continues after its last cached position. */
  pos?: ArrayLike<number>;
  /** Default: 0. */
  seqIds?: ArrayLike<number>;
  /** Which tokens' logits (embeddings) to keep. Default: the last token only. */
  logits?: ArrayLike<boolean | number>;
  /**
   * Embedding vectors [n · nEmbd] to evaluate in place of token ids (a projector's image or
   * audio embeddings, llama.cpp's batch.embd); `tokens` is then ignored and may be empty.
   */
  embd?: Float32Array;
  /**
   * Attention within this batch causal (default: the model's `attention.causal`); false
   * lets each of its tokens see the others (llama_set_causal_attn(false), what mtmd does
   * for Gemma 3's image embeddings).
   */
  causal?: boolean;
  /**
   * M-RoPE models: each token's place in an image grid (an image's embeddings; text
   * tokens have none): its position components are (pos, pos + y, pos + x, 0), and tokens
   * at one position attend in raster order.
   */
  grid?: { y: ArrayLike<number>; x: ArrayLike<number> };
}

/**
 * Where layer il's KV cache lives: its device's memory when the device can write the cache
 * types there (SET_ROWS of rows as wide as the layer's K and V rows), else the host's (e.g.
 * a q8_0 cache whose rows WebGPU's quantizing writer does not take): the host then writes
 * the cache and the scheduler copies what the attention on the layer's device reads.
 */
function cacheBufferType(model: Model, d: Device, il: number, typeK?: CacheType, typeV?: CacheType): BufferType {
  const host = model.devices[model.devices.length - 1];
  if (d === host) return d.bufferType();
  const hp = model.hp;
  const kv = headCountKv(hp, il);
  for (const [type, width] of [
    [typeK ?? 'f16', headDimK(hp, il) * kv],
    [typeV ?? 'f16', headDimV(hp, il) * kv],
  ] as const) {
    if (width === 0) continue;
    const probe = ops.setRows(
      newTensor(CACHE_TYPES[type], [width, 2]),
      newTensor(GGMLType.F32, [width, 1]),
      newTensor(GGMLType.I64, [1]),
    );
    if (!d.supportsOp(probe)) {
      log.info(
        `${d.name} cannot write a ${type} KV cache of rows of ${width}: layer ${il}'s cache is in ${host.name} memory`,
      );
      return host.bufferType();
    }
  }
  return d.bufferType();
}

/** Output rows kept allocated between decodes up to this size (a few rows of logits). */
const OUT_KEEP_BYTES = 16 << 20;

export class Context {
  readonly nCtx: number;
  readonly nBatch: number;
  readonly nUbatch: number;
  readonly nThreads: number;
  readonly nSeqMax: number;
  readonly embeddings: boolean;
  readonly pooling: PoolingType;
  /** The KV caches; null for encoders (no cache: each batch attends within itself). */
  readonly memory: AttentionMemory | null;
  private readonly backends: Backend[];
  private readonly sched: Scheduler;
  /**
   * The last decode's output rows, all in one reused array (a fresh array per token and
   * decode would leave ~0.6 MB of garbage per generated token on a 150k vocabulary, which
   * the runtime collects late); `outputs` copies a row out when it is first asked for.
   */
  private outBuf = new Float32Array(0);
  private readonly outRow = new Map<number, number>();
  private outWidth = 0;
  private readonly outputs = new Map<number, Float32Array>();
  private readonly pooled = new Map<number, Float32Array>();
  private nLastBatch = 0;
  private readonly keep: boolean;
  private readonly flashAttn: boolean;
  /**
   * The graph of the last ubatch, evaluated again (inputs refilled) when the next ubatch
   * has the same shape and the scheduler still holds its allocation: generating token by
   * token rebuilds nothing while the attended cells stay within the same 256-cell block.
   */
  private keepNamed: Tensor[] = [];
  private last: {
    key: string;
    graph: Graph;
    inputs: GraphInputs;
    result: Tensor;
    /** (weight, its matrix product's input) pairs for onMatMulInput. */
    observed: [Tensor, Tensor][];
  } | null = null;
  private readonly onMatMulInput: ContextParams['onMatMulInput'];
  /** The embedding vectors of the batch being decoded (Batch.embd), and its causality. */
  private batchEmbd: Float32Array | null = null;
  private batchCausal = true;
  private batchGrid: { y: Int32Array; x: Int32Array } | null = null;
  /** The 2-D places of the ubatch being evaluated (UbatchSeqs.ext), for its masks. */
  private ubExt: Int32Array | null = null;
  /** Named intermediates of the last decode, in graph order (with keepIntermediates). */
  readonly intermediates: Intermediate[] = [];
  /** LoRA adapters this context applies (setLoras), and their graph cache key. */
  private activeLoras: readonly ActiveLora[] = [];
  private activeLoraKey = '';

  constructor(
    readonly model: Model,
    params: ContextParams = {},
  ) {
    const hp = model.hp;
    this.nCtx = params.nCtx ?? Math.min(hp.nCtxTrain || 4096, 4096);
    this.nBatch = Math.min(params.nBatch ?? 2048, this.nCtx);
    this.nUbatch = Math.min(params.nUbatch ?? 512, this.nBatch);
    this.nThreads = params.nThreads ?? Math.min(4, platform.cores());
    this.nSeqMax = params.nSeqMax ?? 1;
    if (!(this.nCtx > 0 && this.nUbatch > 0)) throw new ContextError(`bad context size ${this.nCtx}`);
    if (!(this.nSeqMax >= 1 && this.nSeqMax <= MAX_SEQ)) {
      throw new ContextError(`nSeqMax must be 1..${MAX_SEQ}, got ${this.nSeqMax}`);
    }
    this.embeddings = params.embeddings ?? !model.arch.usesKVCache;
    this.pooling = params.pooling ?? model.hp.pooling;
    this.keep = params.keepIntermediates ?? false;
    this.flashAttn = params.flashAttn ?? true;
    this.onMatMulInput = params.onMatMulInput;
    if (this.embeddings && this.pooling === 'rank') {
      if (!model.arch.rank) throw new ContextError(`${model.arch.name} models cannot rank (pooling_type rank)`);
      if (!model.weights.opt('cls.weight') && !model.weights.opt('cls.output.weight')) {
        throw new ContextError(
          `${model.path} has no classification head (cls.weight or cls.output.weight): it cannot rank`,
        );
      }
    }
    if (!this.embeddings && !model.arch.usesKVCache) {
      throw new ContextError(`${model.arch.name} is an embedding model: create the context with embeddings: true`);
    }
    // the unfused path multiplies by V transposed, which a block-quantized V cannot be (llama.cpp refuses it too)
    const vType = model.arch.vFromK ? params.typeK : params.typeV;
    if (params.flashAttn === false && traitsOf(CACHE_TYPES[vType ?? 'f16']).quantized) {
      throw new ContextError(`a ${vType} V cache needs flash attention (flashAttn: false was asked)`);
    }
    for (let il = 0; il < hp.nLayer; il++) {
      for (const [what, type, width] of [
        ['K', params.typeK, headDimK(hp, il)],
        ['V', model.arch.vFromK ? undefined : params.typeV, headDimV(hp, il)],
      ] as const) {
        const block = traitsOf(CACHE_TYPES[type ?? 'f16']).blockSize;
        if (width % block !== 0) {
          throw new ContextError(
            `a ${type} ${what} cache needs a head size divisible by ${block}; the head size is ${width}`,
          );
        }
      }
    }
    this.memory = model.arch.usesKVCache
      ? createMemory(hp, {
          nCtx: this.nCtx,
          nSeqMax: Math.min(this.nSeqMax, Math.max(1, params.nSeqWindow ?? this.nSeqMax)),
          nUbatch: this.nUbatch,
          typeK: params.typeK ?? 'f16',
          typeV: params.typeV ?? 'f16',
          layerBufts: model.layerDevices.map((d, il) => cacheBufferType(model, d, il, params.typeK, params.typeV)),
          swaFull: params.swaFull ?? false,
          checkpoints: params.checkpoints ?? 4,
          vFromK: model.arch.vFromK ?? false,
        })
      : null;
    // the model's devices, then the reference kernels for any op none of them has
    const devices = [...model.devices, fallbackDevice()].filter((d, i, all) => all.indexOf(d) === i);
    this.backends = devices.map((d) => initDeviceBackend(d, this.nThreads));
    this.sched = new Scheduler(this.backends);
    if (this.memory) log.info(`KV cache: ${this.memory.describe()}`);
    this.reserveCompute();
  }

  /** Bytes of the compute buffers (every backend's), as reserved or grown so far. */
  get computeBytes(): number {
    return this.sched.bufferSizes().reduce((a, b) => a + b, 0);
  }

  /**
   * Size the compute buffers for a full ubatch (one output) now, as llama.cpp reserves its
   * worst-case graph: grown later (a short prompt first, a long one next), a buffer is
   * freed and placed anew, and the old range's pages stay resident in the arena (which
   * never shrinks) behind whatever was placed after it: 17 MiB of qwen3.5-0.8b's RSS.
   * Graphs with more outputs or more attended cells still grow the buffers when they come.
   */
  private reserveCompute(): void {
    if (this.embeddings) return;
    const m = this.nUbatch;
    const hp = this.model.hp;
    const nKV = this.memory ? this.memory.caches.map((c) => c.attended(m)) : hp.swaLayers.some((x) => x) ? [m, m] : [m];
    const b = new GraphBuilder(
      hp,
      this.model.weights,
      { nTokens: m, nOutputs: 1, nKV, nCtx: this.nCtx, nSeqs: 1, flashAttn: this.flashAttn },
      this.memory,
      this.activeLoras,
    );
    const logits = this.model.arch.build(b).logits;
    if (!logits) return;
    const graph = buildGraph(logits, ...b.sideEffects);
    levelNodes(graph);
    this.sched.reserve(graph);
  }

  // ---- evaluation ----

  /**
   * Evaluate a batch. Afterwards `getLogits(i)` (or `getEmbeddings(i)`,
   * `getEmbeddingsSeq(seq)`) return the outputs of the tokens the batch asked for.
   * Throws ContextError when the batch is invalid or the KV cache has no room.
   */
  async decode(batch: Batch): Promise<void> {
    const hp = this.model.hp;
    const embd = batch.embd;
    const width = embdInputWidth(hp);
    if (embd && embd.length % width !== 0) {
      throw new ContextError(`decode: ${embd.length} embedding values are not rows of the input width (${width})`);
    }
    const n = embd ? embd.length / width : batch.tokens.length;
    if (n === 0) throw new ContextError('decode: empty batch');
    if (n > this.nBatch) throw new ContextError(`decode: ${n} tokens exceed n_batch (${this.nBatch})`);
    const tokens = embd ? new Int32Array(n) : Int32Array.from(batch.tokens);
    if (!embd) {
      for (const t of tokens) {
        if (!(t >= 0 && t < hp.nVocab))
          throw new ContextError(`decode: token id ${t} outside the vocabulary (${hp.nVocab})`);
      }
    }
    this.batchEmbd = embd ?? null;
    this.batchGrid = batch.grid ? { y: Int32Array.from(batch.grid.y), x: Int32Array.from(batch.grid.x) } : null;
    this.batchCausal = batch.causal ?? hp.causal;
    const seqIds = batch.seqIds ? Int32Array.from(batch.seqIds) : new Int32Array(n);
    for (const s of seqIds) {
      if (!(s >= 0 && s < this.nSeqMax))
        throw new ContextError(`decode: sequence id ${s} outside 0..${this.nSeqMax - 1}`);
    }
    const pos = batch.pos ? Int32Array.from(batch.pos) : this.defaultPositions(seqIds);
    const rank = this.embeddings && this.pooling === 'rank';
    const pooledAll = this.embeddings && this.pooling !== 'none' && !rank;
    const wanted = new Uint8Array(n);
    // rank: the one token per sequence the head reads (its first or last position)
    const ranked = rank ? this.rankTokens(seqIds, pos) : null;
    if (pooledAll) wanted.fill(1);
    else if (ranked) for (const i of ranked.values()) wanted[i] = 1;
    else if (batch.logits) for (let i = 0; i < n; i++) wanted[i] = batch.logits[i] ? 1 : 0;
    else wanted[n - 1] = 1;
    if (!this.memory && n > this.nUbatch) {
      throw new ContextError(`decode: an encoder's batch must fit in one ubatch (${n} > n_ubatch ${this.nUbatch})`);
    }
    const rec = recurrentState(this.memory);
    const plan = rec ? this.splitRecurrent(seqIds, pos, rec) : splitPlain(n, this.nUbatch);
    if (this.memory) {
      const ubs: UbatchSeqs[] = plan.map((u) => ({ pos: pick(pos, u.idx), seq: pick(seqIds, u.idx) }));
      if (!this.memory.fits(ubs)) {
        const caches = this.memory.caches.map((c) => `${c.label} ${c.size - c.used}/${c.size}`).join(', ');
        throw new KVCacheFullError(`decode: the KV cache is full (${n} tokens; free cells: ${caches})`);
      }
      for (const c of this.memory.caches) if (c.hasShift) await this.applyShift(c);
    }

    this.outputs.clear();
    this.outRow.clear();
    this.pooled.clear();
    // a large output (every token's logits) is not kept beyond the next decode
    if (this.outBuf.byteLength > OUT_KEEP_BYTES) this.outBuf = new Float32Array(0);
    let nRows = 0;
    this.intermediates.length = 0;
    this.nLastBatch = n;
    for (const u of plan) {
      nRows = await this.decodeUbatch(u.idx, u.seqs, tokens, pos, seqIds, wanted, nRows, n);
      if (rec) for (const q of u.checkpoints) await rec.checkpoint(q);
    }
    if (pooledAll) await this.pool(seqIds);
    if (ranked) for (const [s, i] of ranked) this.pooled.set(s, this.rowView(i)!.slice());
  }

  /** For each sequence of the batch, the batch index of the token a rank head reads. */
  private rankTokens(seqIds: Int32Array, pos: Int32Array): Map<number, number> {
    const last = this.model.arch.rank?.token === 'last';
    const pick = new Map<number, number>();
    seqIds.forEach((s, i) => {
      const j = pick.get(s);
      if (j === undefined || (last ? pos[i] >= pos[j] : pos[i] < pos[j])) pick.set(s, i);
    });
    return pick;
  }

  /**
   * Ubatches for a memory with recurrent layers (llama.cpp's split_equal): each holds the
   * same number of consecutive tokens of each of its sequences, sequence by sequence, as
   * the recurrent ops read them. A sequence with several tokens in the batch has all but
   * its last evaluated first, its state saved (a checkpoint at a known position), then the
   * last with the single tokens of the other sequences.
   */
  private splitRecurrent(seqIds: Int32Array, pos: Int32Array, rec: RecurrentState): UbatchPlan[] {
    const bySeq = new Map<number, number[]>();
    seqIds.forEach((q, i) => {
      const list = bySeq.get(q);
      if (list) list.push(i);
      else bySeq.set(q, [i]);
    });
    for (const [q, idx] of bySeq) {
      rec.checkContinues(
        q,
        pos[idx[0]],
        idx.length,
        idx.map((i) => pos[i]),
      );
    }
    const checkpoint = rec.maxCheckpoints > 0;
    const first: [number, number[]][] = [];
    const last: [number, number[]][] = [];
    for (const [q, idx] of bySeq) {
      if (idx.length === 1) last.push([q, idx]);
      else if (checkpoint) {
        first.push([q, idx.slice(0, -1)]);
        last.push([q, idx.slice(-1)]);
      } else first.push([q, idx]);
    }
    const plan: UbatchPlan[] = [];
    for (const phase of [first, last]) {
      const at = new Map(phase.map(([q]) => [q, 0]));
      for (;;) {
        const active = phase.filter(([q, idx]) => at.get(q)! < idx.length).slice(0, this.nUbatch);
        if (active.length === 0) break;
        let nT = Math.floor(this.nUbatch / active.length);
        for (const [q, idx] of active) nT = Math.min(nT, idx.length - at.get(q)!);
        const idx: number[] = [];
        const seqs: number[] = [];
        const done: number[] = [];
        for (const [q, list] of active) {
          const a = at.get(q)!;
          idx.push(...list.slice(a, a + nT));
          seqs.push(q);
          at.set(q, a + nT);
          if (phase === first && checkpoint && a + nT === list.length) done.push(q);
        }
        plan.push({ idx: Int32Array.from(idx), seqs, checkpoints: done });
      }
    }
    return plan;
  }

  private defaultPositions(seqIds: Int32Array): Int32Array {
    const next = new Map<number, number>();
    const pos = new Int32Array(seqIds.length);
    seqIds.forEach((s, i) => {
      const p = next.get(s) ?? (this.memory ? this.memory.seqPosMax(s) + 1 : 0);
      pos[i] = p;
      next.set(s, p + 1);
    });
    return pos;
  }

  private async decodeUbatch(
    idx: Int32Array,
    seqList: readonly number[] | null,
    batchTokens: Int32Array,
    batchPos: Int32Array,
    batchSeq: Int32Array,
    batchWanted: Uint8Array,
    nRows: number,
    nBatch: number,
  ): Promise<number> {
    const tokens = pick(batchTokens, idx);
    const pos = pick(batchPos, idx);
    const seq = pick(batchSeq, idx);
    const wanted = Uint8Array.from(idx, (i) => batchWanted[i]);
    const m = tokens.length;
    const hp = this.model.hp;
    const grid = this.batchGrid;
    this.ubExt = grid ? Int32Array.from(idx, (i) => ((grid.y[i] & 0x7fff) << 16) | (grid.x[i] & 0xffff)) : null;
    const ub: UbatchSeqs = this.ubExt ? { pos, seq, ext: this.ubExt } : { pos, seq };
    // per cache: the cells written and the cells attended (a multiple of 256, masked beyond
    // the extent, so the graph's shape, and with it the graph, stays the same from one
    // token to the next); encoders: per mask group (full, sliding window), the ubatch
    const cells: number[][] = [];
    let nKV: number[] = hp.swaLayers.some((x) => x) ? [m, m] : [m];
    const kvStart: number[] = nKV.map(() => 0);
    if (this.memory) {
      nKV = [];
      kvStart.length = 0;
      for (const c of this.memory.caches) {
        const slots = c.findSlots(ub);
        if (!slots) throw new ContextError(`decode: no room in the ${c.label} KV cache for ${m} tokens`);
        c.store(slots, ub);
        cells.push(slots);
      }
      for (const c of this.memory.caches) {
        const w = c.window(ub);
        kvStart.push(w.start);
        nKV.push(w.n);
      }
    }
    const outIdx: number[] = [];
    for (let i = 0; i < m; i++) if (wanted[i]) outIdx.push(i);
    const allRows = this.embeddings && this.pooling !== 'none' && this.pooling !== 'rank';
    const nOutputs = allRows ? null : Math.max(1, outIdx.length);

    const nSeqs = seqList ? seqList.length : 1;
    const embd = this.batchEmbd !== null;
    const key = `${m}:${nOutputs}:${nKV.join(',')}@${kvStart.join(',')}:${nSeqs}:${this.activeLoraKey}${embd ? ':embd' : ''}`;
    let last = this.last;
    if (!last || last.key !== key || this.keep || this.sched.currentGraph !== last.graph) {
      const b = new GraphBuilder(
        hp,
        this.model.weights,
        { nTokens: m, nOutputs, nKV, kvStart, nCtx: this.nCtx, nSeqs, flashAttn: this.flashAttn, embd },
        this.memory,
        this.activeLoras,
      );
      const out = this.model.arch.build(b);
      const rankHead = this.embeddings && this.pooling === 'rank';
      const result = rankHead
        ? b.rankHead(out.embd, this.model.arch.rank!.softmax)
        : this.embeddings
          ? out.embd
          : out.logits;
      if (!result) throw new ContextError(`${hp.arch} has no logits output`);
      if (this.keep) for (const t of b.named) t.setFlag(TensorFlag.OUTPUT);
      // the recurrent states' writes are read by nothing in the graph: outputs too
      const graph = buildGraph(result, ...b.sideEffects);
      levelNodes(graph);
      // the inputs of the weights' products are kept (not reused) until read after compute
      const observed: [Tensor, Tensor][] = [];
      if (this.onMatMulInput) {
        const weights = new Set(this.model.weights.all());
        for (const t of graph.nodes) {
          if (t.op !== Op.MUL_MAT || !weights.has(t.src[0]!) || t.src[1]!.type !== GGMLType.F32) continue;
          // a view (the attention output reshaped) owns no memory: keep what it views too
          for (let v: Tensor | null | undefined = t.src[1]; v; v = v.viewSrc) v.setFlag(TensorFlag.OUTPUT);
          observed.push([t.src[0]!, t.src[1]!]);
        }
      }
      for (const t of this.model.weights.diskTensors()) {
        if (graph.leafs.includes(t)) throw new ContextError(`'${t.name}' is left on disk but the graph reads it whole`);
      }
      this.sched.allocGraph(graph);
      last = this.last = { key, graph, inputs: b.inputs, result, observed };
      if (this.keep) this.keepNamed = b.named;
    }
    const { graph, result } = last;
    this.setInputs(last.inputs, tokens, pos, seq, cells, kvStart, outIdx.length > 0 ? outIdx : [m - 1]);
    if (last.inputs.mrope) {
      const all = new Int32Array(4 * m);
      for (let i = 0; i < m; i++) {
        all[i] = pos[i];
        all[m + i] = pos[i] + (grid ? grid.y[idx[i]] : 0);
        all[2 * m + i] = pos[i] + (grid ? grid.x[idx[i]] : 0);
      }
      tensorSet(last.inputs.mrope, all);
    }
    if (last.inputs.embd && this.batchEmbd) {
      const w = embdInputWidth(hp);
      const rows = new Float32Array(m * w);
      for (let i = 0; i < m; i++) rows.set(this.batchEmbd.subarray(idx[i] * w, (idx[i] + 1) * w), i * w);
      tensorSet(last.inputs.embd, rows);
    }
    if (last.inputs.stateIds && seqList) tensorSet(last.inputs.stateIds, Int32Array.from(seqList));
    await this.sched.graphCompute(graph);
    const rec = recurrentState(this.memory);
    if (rec && seqList) {
      // tokens are grouped by sequence, nT each: the last of each group is where its state stands
      const nT = m / seqList.length;
      seqList.forEach((q, j) => {
        rec.advance(q, pos[(j + 1) * nT - 1]);
      });
    }
    if (this.onMatMulInput && last.observed.length) {
      const read = new Map<Tensor, Float32Array>(); // q, k and v share their input
      for (const [w, x] of last.observed) {
        let v = read.get(x);
        if (!v) {
          v = await tensorGetF32(x);
          read.set(x, v);
        }
        this.onMatMulInput(w.name, v, x.ne);
      }
    }

    if (this.keep) {
      const order = new Map(graph.nodes.map((t, i) => [t, i]));
      const named = this.keepNamed.filter((t) => order.has(t) && t.type === GGMLType.F32);
      named.sort((x, y) => order.get(x)! - order.get(y)!);
      for (const t of named) {
        this.intermediates.push({ name: t.name, op: t.op, ne: [...t.ne], values: await tensorGetF32(t) });
      }
    }
    const width = result.ne[0];
    const rows = result.ne[1];
    const rowToken = rows === m ? (r: number) => r : (r: number) => outIdx[r];
    // room for this ubatch's rows and, when the batch is split, a guess at the rest
    const need = (nRows + rows) * width;
    if (this.outBuf.length < need) {
      const grown = new Float32Array(Math.max(need, Math.min(nBatch, (nRows + rows) * 2) * width));
      grown.set(this.outBuf.subarray(0, nRows * width));
      this.outBuf = grown;
    }
    this.outWidth = width;
    const dst = this.outBuf.subarray(nRows * width, (nRows + rows) * width);
    // contiguous F32 rows are read straight into the output array
    if (result.type === GGMLType.F32 && result.nb[1] === width * 4) {
      await tensorGetInto(result, dst);
    } else dst.set(await tensorGetF32(result));
    for (let r = 0; r < rows; r++) {
      const i = rowToken(r);
      if (i === undefined || !wanted[i]) continue;
      this.outRow.set(idx[i], nRows + r);
    }
    return nRows + rows;
  }

  /** Batch token k's output row in place (valid until the next decode), or undefined. */
  private rowView(k: number): Float32Array | undefined {
    const r = this.outRow.get(k);
    return r === undefined ? undefined : this.outBuf.subarray(r * this.outWidth, (r + 1) * this.outWidth);
  }

  private setInputs(
    inp: GraphInputs,
    tokens: Int32Array,
    pos: Int32Array,
    seq: Int32Array,
    cells: number[][],
    kvStart: readonly number[],
    outIds: number[],
  ): void {
    const m = tokens.length;
    const hp = this.model.hp;
    const causal = this.batchCausal;
    if (inp.diskRows && inp.rowIds) {
      // distinct ids, in first-seen order, read from the file; rowIds index them
      const first = new Map<number, number>();
      const local = new Int32Array(m);
      for (let i = 0; i < m; i++) {
        let k = first.get(tokens[i]);
        if (k === undefined) {
          k = first.size;
          first.set(tokens[i], k);
        }
        local[i] = k;
      }
      const ids = [...first.keys()];
      for (const { t, from } of inp.diskRows) {
        const bytes = new Uint8Array(first.size * from.rowBytes);
        from.read(ids, bytes);
        tensorSet(t, bytes, 0);
      }
      tensorSet(inp.rowIds, local);
    }
    if (inp.tokens) tensorSet(inp.tokens, tokens);
    if (inp.pos) tensorSet(inp.pos, pos);
    inp.kvIdxs?.forEach((t, c) => {
      if (t) tensorSet(t, Int32Array.from(cells[c]));
    });
    if (inp.outIds) tensorSet(inp.outIds, Int32Array.from(outIds));
    for (const c of inp.constants ?? []) tensorSet(c.t, c.data);
    if (inp.attnTemp) {
      const { t, scale, floor } = inp.attnTemp;
      tensorSet(
        t,
        Float32Array.from(pos, (p) => Math.log(Math.floor(p / floor) + 1) * scale + 1),
      );
    }
    inp.masks?.forEach((t, c) => {
      if (!t) return;
      const nKV = t.ne[0];
      const mask = new Uint16Array(nKV * m);
      if (this.memory)
        this.memory.caches[c].fillMask(
          mask,
          kvStart[c],
          nKV,
          { pos, seq, ...(this.ubExt ? { ext: this.ubExt } : {}) },
          causal,
        );
      else {
        // within the ubatch; group 1 is the sliding-window layers'
        mask.fill(0xfc00); // f16 -inf
        for (let i = 0; i < m; i++) {
          for (let j = 0; j < m; j++) {
            if (seq[j] !== seq[i] || (causal && pos[j] > pos[i])) continue;
            if (c === 1 && maskedBySwa(hp.swaType, hp.nSwa, pos[j], pos[i])) continue;
            mask[i * nKV + j] = 0;
          }
        }
      }
      tensorSet(t, mask);
    });
  }

  /**
   * Re-rotate the keys of a cache's shifted cells by their position deltas (llama.cpp's
   * K-shift), each layer with its own RoPE (base, dimensions, factors); layers without
   * RoPE (SmolLM3's NoPE layers) keep their keys.
   */
  private async applyShift(kv: KVCache): Promise<void> {
    const hp = this.model.hp;
    const arch = this.model.arch;
    const deltas = newTensor(GGMLType.I32, [kv.size], 'inp_k_shift').setFlag(TensorFlag.INPUT);
    const outs: Tensor[] = [];
    for (const il of kv.layerIds) {
      const cfg = arch.keyRope
        ? arch.keyRope(hp, this.model.weights, il, this.nCtx)
        : arch.ropeMode === undefined
          ? null
          : { mode: arch.ropeMode, freqFactors: this.model.weights.opt('rope_freqs.weight') };
      if (!cfg) continue;
      const k = kv.k(il);
      const hd = headDimK(hp, il);
      const nh = headCountKv(hp, il);
      // the rotated dimensions only; the rest of each head passes through (a latent key
      // keeps them after the latent: keyRopeOffset)
      const nRot = ropeDims(hp, il);
      const off = arch.keyRopeOffset?.(hp) ?? 0;
      const k3 = view(k, [nRot, nh, kv.size], [rowSize(k.type, hd), k.nb[1]], rowSize(k.type, off));
      const f = ops.cpy(k3, newTensor(GGMLType.F32, [nRot, nh, kv.size]));
      // a pure rotation: no magnitude correction (LongRoPE's attn factor, YaRN's mscale),
      // which the keys already carry (llama.cpp applies it again on every shift)
      const o = ropeOptions(hp, cfg, il);
      const yarnScale = o.extFactor ? 1 + 0.1 * Math.log(1 / (o.freqScale ?? 1)) : 1;
      outs.push(ops.cpy(ops.rope(f, deltas, { ...o, attnFactor: 1 / yarnScale }), k3));
    }
    if (outs.length > 0) {
      const graph = buildGraph(...outs);
      this.sched.allocGraph(graph);
      tensorSet(deltas, kv.shift);
      await this.sched.graphCompute(graph);
    }
    kv.shift.fill(0);
    kv.hasShift = false;
  }

  private async pool(seqIds: Int32Array): Promise<void> {
    const groups = new Map<number, number[]>();
    seqIds.forEach((s, i) => {
      if (!groups.has(s)) groups.set(s, []);
      groups.get(s)!.push(i);
    });
    for (const [s, idx] of groups) {
      const rows = idx.map((i) => this.rowView(i)!);
      const width = rows[0].length;
      let v: Float32Array;
      if (this.pooling === 'cls') v = rows[0].slice();
      else if (this.pooling === 'last') v = rows[rows.length - 1].slice();
      else {
        const acc = new Float64Array(width);
        for (const r of rows) for (let d = 0; d < width; d++) acc[d] += r[d];
        v = Float32Array.from(acc, (x) => x / rows.length);
      }
      this.pooled.set(s, v);
    }
    await this.poolHead();
  }

  /** The architecture's layers after pooling (EmbeddingGemma's dense projections), on every pooled vector. */
  private async poolHead(): Promise<void> {
    const head = this.model.arch.pooledHead;
    if (!head || this.pooled.size === 0) return;
    const seqs = [...this.pooled.keys()];
    const width = this.model.hp.nEmbd;
    const inp = newTensor(GGMLType.F32, [width, seqs.length], 'inp_embd_pooled').setFlag(TensorFlag.INPUT);
    const out = head(this.model.weights, inp);
    if (!out) return;
    const graph = buildGraph(out);
    this.sched.allocGraph(graph);
    const data = new Float32Array(width * seqs.length);
    seqs.forEach((s, i) => {
      data.set(this.pooled.get(s)!, i * width);
    });
    tensorSet(inp, data);
    await this.sched.graphCompute(graph);
    const res = await tensorGetF32(out);
    const w = out.ne[0];
    seqs.forEach((s, i) => {
      this.pooled.set(s, res.slice(i * w, (i + 1) * w));
    });
  }

  // ---- outputs ----

  private output(i: number, what: string): Float32Array {
    const k = i < 0 ? this.nLastBatch + i : i;
    let v = this.outputs.get(k);
    if (!v) {
      v = this.rowView(k)?.slice();
      if (!v) throw new ContextError(`no ${what} for batch token ${i}: the batch did not ask for it`);
      this.outputs.set(k, v);
    }
    return v;
  }

  /** Logits [nVocab] of batch token i of the last decode (negative: from the end). */
  getLogits(i = -1): Float32Array {
    if (this.embeddings) throw new ContextError('this context outputs embeddings, not logits');
    return this.output(i, 'logits');
  }

  /** Per-token embedding [nEmbd] of batch token i (pooling 'none'). */
  getEmbeddings(i = -1): Float32Array {
    if (!this.embeddings) throw new ContextError('this context outputs logits; create it with embeddings: true');
    return this.output(i, 'embeddings');
  }

  /**
   * Pooled embedding [nEmbd] of sequence `seq` in the last decode; with pooling 'rank',
   * the classification head's outputs [nClsOut] (a reranker's score first).
   */
  getEmbeddingsSeq(seq = 0): Float32Array {
    const v = this.pooled.get(seq);
    if (!v) throw new ContextError(`no pooled embedding for sequence ${seq} (pooling ${this.pooling})`);
    return v;
  }

  // ---- adapters ----

  /**
   * The LoRA adapters this context applies from the next decode on (replacing the previous
   * set; [] for none), each at its scale; a scale of 0 leaves the adapter out. Adapters
   * must have been loaded for this context's model. The KV cache is kept: tokens already
   * evaluated keep what the earlier adapters made of them.
   */
  setLoras(loras: readonly ActiveLora[]): void {
    for (const l of loras) {
      if (l.adapter.model !== this.model) {
        throw new ContextError(`LoRA adapter ${l.adapter.path} was loaded for another model than ${this.model.path}`);
      }
      if (l.adapter.released) throw new ContextError(`LoRA adapter ${l.adapter.path} has been freed`);
      if (!Number.isFinite(l.scale)) throw new ContextError(`LoRA scale ${l.scale} is not a finite number`);
    }
    this.activeLoras = loras.filter((l) => l.scale !== 0).map((l) => ({ adapter: l.adapter, scale: l.scale }));
    this.activeLoraKey = loraKey(this.activeLoras);
  }

  /** The adapters set by setLoras (scale 0 ones left out). */
  get loras(): readonly ActiveLora[] {
    return this.activeLoras;
  }

  // ---- memory (llama_memory_seq_*) ----

  private cache(): AttentionMemory {
    if (!this.memory) throw new ContextError(`${this.model.hp.arch} has no KV cache`);
    return this.memory;
  }

  /** Remove positions [p0, p1) of `seq` (all sequences for seq < 0; p < 0: open end). */
  seqRm(seq: number, p0 = -1, p1 = -1): void {
    this.cache().seqRm(seq, p0, p1);
  }

  seqCp(src: number, dst: number, p0 = -1, p1 = -1): void {
    this.cache().seqCp(src, dst, p0, p1);
  }

  seqKeep(seq: number): void {
    this.cache().seqKeep(seq);
  }

  /** Shift positions [p0, p1) of `seq` by delta (context shift; keys re-rotated lazily). */
  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    this.cache().seqAdd(seq, p0, p1, delta);
  }

  seqPosMax(seq = 0): number {
    return this.memory ? this.memory.seqPosMax(seq) : -1;
  }

  seqPosMin(seq = 0): number {
    return this.memory ? this.memory.seqPosMin(seq) : -1;
  }

  /** Whether the memory can shift positions (context shift). */
  get canShift(): boolean {
    return this.memory?.canShift ?? false;
  }

  /**
   * Whether the memory may reuse a sequence's cells once they leave its window (it has
   * sliding-window layers; a full-size cache only does when it wraps). Tokens decoded in one ubatch never push out cells a
   * query at their first position reads, so dropping them again (rejected drafts) keeps the
   * window; tokens decoded in several ubatches or decodes may have pushed out cells the
   * positions before them need (`reusablePrefix` then says so).
   */
  get slidingWindow(): boolean {
    return this.memory?.caches.some((c) => c.nSwa > 0) ?? false;
  }

  /**
   * How many of the first `n` cached positions of `seq` a continuation can keep (see
   * Memory.reusablePrefix): n, fewer when fewer are cached, or 0 when a sliding window
   * has already dropped cells the continuation would read.
   */
  reusablePrefix(seq: number, n: number): number {
    return this.memory ? this.memory.reusablePrefix(seq, n) : 0;
  }

  clearMemory(): void {
    this.memory?.clear();
  }

  /**
   * Makes the memory ready for `n` sequences decoded together (a sliding-window cache
   * holds W cells per sequence). True when it was rebuilt larger and everything cached is
   * gone.
   */
  reserveSequences(n: number): boolean {
    if (!this.memory?.reserveSequences(n)) return false;
    this.last = null;
    return true;
  }

  /**
   * One stream of KV cells per sequence id mod n (llama.cpp's kv_unified = false, n_seq_max
   * streams): each sequence's tokens stay in its own region of the cache, so its logits
   * have the same bits whatever region it uses and whatever the other sequences hold;
   * 1 (the default): every sequence shares all cells (kv_unified). Changing it empties the
   * memory; true when something cached was dropped.
   */
  setKvStreams(n: number): boolean {
    if (!this.memory) return false;
    const dropped = this.memory.setStreams(n);
    this.last = null;
    return dropped;
  }

  free(): void {
    this.outBuf = new Float32Array(0);
    this.outRow.clear();
    this.outputs.clear();
    this.sched.free();
    this.memory?.dispose();
    for (const b of this.backends) b.free();
  }
}

/** The tokens of one ubatch (indices into the batch), and, for recurrent memories, its sequences. */
interface UbatchPlan {
  idx: Int32Array;
  /** Sequences in order, each with idx.length / seqs.length consecutive tokens (null: any layout). */
  seqs: number[] | null;
  /** Sequences whose state is saved after this ubatch. */
  checkpoints: number[];
}

/** Consecutive runs of n_ubatch tokens. */
function splitPlain(n: number, nUbatch: number): UbatchPlan[] {
  const plan: UbatchPlan[] = [];
  for (let s = 0; s < n; s += nUbatch) {
    const e = Math.min(n, s + nUbatch);
    plan.push({ idx: Int32Array.from({ length: e - s }, (_, i) => s + i), seqs: null, checkpoints: [] });
  }
  return plan;
}

function pick(a: Int32Array, idx: Int32Array): Int32Array {
  return Int32Array.from(idx, (i) => a[i]);
}

/** Scale `v` to unit Euclidean length (llama.cpp's embd_normalize = 2); a zero vector stays. */
export function l2Normalize(v: Float32Array): Float32Array {
  let s = 0;
  for (const x of v) s += x * x;
  const norm = Math.sqrt(s);
  return norm > 0 ? v.map((x) => x / norm) : v.slice();
}
