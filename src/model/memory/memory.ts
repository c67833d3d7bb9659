// What a context's memory is to the rest of the engine (llama.cpp's llama_memory_i): the
// state a model keeps between decodes, per sequence. Kinds, one file each:
//   kv-cache.ts       one set of K/V cells shared by the layers it holds (optionally with a
//                     sliding-window rule that lets out-of-window cells be reused)
//   kv-cache-iswa.ts  two such sets: full-attention layers and sliding-window layers
// A recurrent memory (one state per sequence) would implement the same interface.
//
// Above the model, the generation loop asks it three questions before it reuses what a
// sequence has cached: can the cache be shifted (context shift), how much of a cached
// prefix can be kept (`reusablePrefix`; a sliding window may already have dropped cells a
// continuation needs), and how to save and restore one sequence (`stateWrite`/`stateRead`).

import type { Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';

/** Cache element types: F16 (llama.cpp's default), F32, Q8_0. */
export type CacheType = 'f16' | 'f32' | 'q8_0';

export const CACHE_TYPES: Record<CacheType, number> = {
  f16: GGMLType.F16,
  f32: GGMLType.F32,
  q8_0: GGMLType.Q8_0,
};

/** Sequence ids are bits of a 32-bit mask. */
export const MAX_SEQ = 32;

/** The tokens of one ubatch as the memory sees them: positions and sequence ids. */
export interface UbatchSeqs {
  pos: Int32Array;
  seq: Int32Array;
  /**
   * M-RoPE images: each token's 2-D place (y << 16 | x), -1 for none. Tokens at one
   * position (an image's) see each other in raster order (llama.cpp's is_2d_gt).
   */
  ext?: Int32Array;
}

/** Writes one piece of a saved state (called in order). */
export type StateSink = (bytes: Uint8Array) => Promise<void>;
/** Reads the next `n` bytes of a saved state. */
export type StateSource = (n: number) => Promise<Uint8Array>;
/**
 * Checks the cells of cache `cache` read from a saved state (positions and pending shifts,
 * in position order) before anything is written; throws to refuse them.
 */
export type StateCheck = (cache: number, pos: Int32Array, shift: Int32Array) => void;

export interface Memory {
  /** 'kv', 'kv-iswa' (a recurrent memory would say 'recurrent'). */
  readonly kind: string;
  /** Bytes of state over all layers. */
  readonly bytes: number;
  /** One line for logs: cells, types, sizes. */
  describe(): string;

  clear(): void;
  /** Remove positions [p0, p1) of `seq` (every sequence when seq < 0; p < 0: open end). */
  seqRm(seq: number, p0?: number, p1?: number): void;
  /** Make positions [p0, p1) of `src` also belong to `dst`. */
  seqCp(src: number, dst: number, p0?: number, p1?: number): void;
  /** Drop every sequence but `seq`. */
  seqKeep(seq: number): void;
  /** Add `delta` to positions [p0, p1) of `seq` (context shift). */
  seqAdd(seq: number, p0: number, p1: number, delta: number): void;
  /** Lowest position of `seq` still held (-1: none). With a window, that of the window's cells. */
  seqPosMin(seq: number): number;
  seqPosMax(seq: number): number;

  /** Whether positions can be shifted (seqAdd) by re-rotating cached keys. */
  readonly canShift: boolean;
  /**
   * How many of the first `n` positions of `seq` a continuation can keep: evaluation then
   * resumes at the returned position, which is `n` (or less, when fewer are cached) if
   * the memory still holds everything later tokens will read, else 0 (the window has
   * moved past the prefix: evaluate it again rather than read stale cells).
   */
  reusablePrefix(seq: number, n: number): number;

  /** Whether every ubatch finds room, in order (nothing is kept). */
  fits(ubatches: readonly UbatchSeqs[]): boolean;

  /**
   * Makes room for `n` sequences decoded together (a sliding-window cache holds W cells per
   * sequence). True when the memory had to be rebuilt larger: everything cached is gone.
   */
  reserveSequences(n: number): boolean;

  /**
   * One stream of KV cells per sequence id mod n (llama.cpp's non-unified KV cache: a
   * sequence's logits then do not depend on where other sequences' cells are); 1: all
   * cells shared. Changing it empties the memory; true when something was dropped.
   */
  setStreams(n: number): boolean;

  /** A description of the state's layout: a saved state loads only where this is equal. */
  stateLayout(): unknown;
  /** How many cells of `seq` each part of the state holds (what stateWrite writes; saved beside it). */
  stateCells(seq: number): number[];
  /**
   * Writes the cells of `seq`, per cache: i32 positions, i32 pending shifts (in position
   * order), then per layer its K rows and V rows.
   */
  stateWrite(seq: number, sink: StateSink): Promise<void>;
  /**
   * Clears `seq`, then restores what stateWrite wrote (as `seq`), `cells` being what
   * stateCells said; throws if it cannot fit or `check` refuses it.
   */
  stateRead(seq: number, source: StateSource, cells: readonly number[], check?: StateCheck): Promise<void>;

  dispose(): void;
}

/** A layer's K/V as attention reads them, and which of the memory's caches holds it. */
export interface LayerKV {
  /** Index into `caches` (its mask, row indices and attended-cell count). */
  cache: number;
  k: Tensor;
  v: Tensor;
  /** False for a layer reading another layer's K/V (shared KV): it writes nothing. */
  writes: boolean;
}
