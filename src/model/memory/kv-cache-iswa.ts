// The memory of a model with sliding-window layers (llama.cpp's llama_kv_cache_iswa): two
// KV caches with the same cells' bookkeeping rules. The full-attention layers keep every
// cell (`base`, nCtx cells); the sliding-window layers keep a ring of W·nSeqMax + nUbatch
// cells (`swa`, padded to 256), where cells that left every query's window are reused:
// for Gemma 3 1B at a 32k context that is 1,024 cells instead of 32,768 for 22 of its 26
// layers. With `swaFull` the sliding-window cache is as large as the base one (what
// llama.cpp's swa_full does), so nothing is ever overwritten.
//
// Every sequence operation applies to both. The window decides how much of a cached
// prefix a continuation can reuse (see KVCache.reusablePrefix).

import { type AttentionMemory, KVCache, type KVCacheOptions } from './kv-cache.js';
import type { LayerKV, StateCheck, StateSink, StateSource, UbatchSeqs } from './memory.js';

export interface KVCacheISWAOptions extends Omit<KVCacheOptions, 'layers' | 'size' | 'swa' | 'label' | 'reuse'> {
  /** Layers of each kind with their own K/V. */
  fullLayers: readonly number[];
  swaLayers: readonly number[];
  /** Layers reading another layer's K/V: reader → source (both of one kind). */
  reuse?: ReadonlyMap<number, number>;
  swa: NonNullable<KVCacheOptions['swa']>;
  nCtx: number;
  nSeqMax: number;
  nUbatch: number;
  /** Full-size cache for the sliding-window layers too (llama.cpp's swa_full). */
  swaFull: boolean;
}

/**
 * Cells of the sliding-window cache: W per sequence plus a ubatch, padded to 256 (at most
 * nCtx); with streams (one per sequence), each stream W plus a ubatch (at most its share
 * of nCtx), as llama.cpp sizes a non-unified iSWA cache.
 */
export function swaCacheSize(o: {
  nCtx: number;
  window: number;
  nSeqMax: number;
  nUbatch: number;
  streams?: number;
}): number {
  const streams = o.streams ?? 1;
  if (streams > 1) return streams * Math.min(Math.floor(o.nCtx / streams), o.window + o.nUbatch);
  return Math.ceil(Math.min(o.nCtx, o.window * o.nSeqMax + o.nUbatch) / 256) * 256;
}

export class KVCacheISWA implements AttentionMemory {
  readonly kind = 'kv-iswa';
  readonly base: KVCache;
  private swaCache: KVCache;
  private nSeqSized: number;
  private streams = 1;

  constructor(
    private readonly hp: ConstructorParameters<typeof KVCache>[0],
    private readonly o: KVCacheISWAOptions,
  ) {
    this.base = new KVCache(hp, {
      ...this.common(),
      layers: o.fullLayers,
      reuse: this.reuseOf(o.fullLayers),
      size: o.nCtx,
      label: 'full',
    });
    this.nSeqSized = o.nSeqMax;
    this.swaCache = this.makeSwa(o.nSeqMax);
  }

  private common() {
    return { typeK: this.o.typeK, typeV: this.o.typeV, layerBufts: this.o.layerBufts };
  }

  private reuseOf(layers: readonly number[]): Map<number, number> {
    return new Map([...(this.o.reuse ?? new Map<number, number>())].filter(([, src]) => layers.includes(src)));
  }

  private swaSize(nSeq: number, streams = this.streams): number {
    const o = this.o;
    return o.swaFull
      ? o.nCtx
      : swaCacheSize({ nCtx: o.nCtx, window: o.swa.window, nSeqMax: nSeq, nUbatch: o.nUbatch, streams });
  }

  private makeSwa(nSeq: number): KVCache {
    return new KVCache(this.hp, {
      ...this.common(),
      layers: this.o.swaLayers,
      reuse: this.reuseOf(this.o.swaLayers),
      size: this.swaSize(nSeq),
      swa: this.o.swa,
      label: 'swa',
    });
  }

  get swa(): KVCache {
    return this.swaCache;
  }

  get caches(): readonly KVCache[] {
    return [this.base, this.swaCache];
  }

  /**
   * A ring sized for fewer sequences than `n` is rebuilt larger (W·n + nUbatch cells):
   * everything cached is dropped, in both caches.
   */
  reserveSequences(n: number): boolean {
    if (n <= this.nSeqSized) return false;
    this.nSeqSized = n;
    if (this.swaSize(n) <= this.swaCache.size) return false;
    this.swaCache.dispose();
    this.swaCache = this.makeSwa(n);
    this.swaCache.setStreams(this.streams);
    this.base.clear();
    return true;
  }

  /** Both caches' streams; the ring is rebuilt at the size its streams need. */
  setStreams(n: number): boolean {
    if (n === this.streams) return false;
    const dropped = this.base.used > 0 || this.swaCache.used > 0;
    this.streams = n;
    this.base.setStreams(n);
    const size = this.swaSize(this.nSeqSized, n);
    if (size !== this.swaCache.size) {
      this.swaCache.dispose();
      this.swaCache = this.makeSwa(this.nSeqSized);
    }
    this.swaCache.setStreams(n);
    return dropped;
  }

  layer(il: number): LayerKV | undefined {
    const b = this.base.layer(il);
    if (b) return b;
    const s = this.swa.layer(il);
    return s ? { ...s, cache: 1 } : undefined;
  }

  get bytes(): number {
    return this.base.bytes + this.swa.bytes;
  }

  describe(): string {
    return `${this.base.describe()}; ${this.swa.describe()}`;
  }

  clear(): void {
    this.base.clear();
    this.swa.clear();
  }

  seqRm(seq: number, p0 = -1, p1 = -1): void {
    this.base.seqRm(seq, p0, p1);
    this.swa.seqRm(seq, p0, p1);
  }

  seqCp(src: number, dst: number, p0 = -1, p1 = -1): void {
    this.base.seqCp(src, dst, p0, p1);
    this.swa.seqCp(src, dst, p0, p1);
  }

  seqKeep(seq: number): void {
    this.base.seqKeep(seq);
    this.swa.seqKeep(seq);
  }

  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    this.base.seqAdd(seq, p0, p1, delta);
    this.swa.seqAdd(seq, p0, p1, delta);
  }

  /** As llama.cpp: the sliding-window cache's (the base cache holds a superset). */
  seqPosMin(seq: number): number {
    return this.swa.seqPosMin(seq);
  }

  seqPosMax(seq: number): number {
    return this.swa.seqPosMax(seq);
  }

  /**
   * Shifting re-rotates what each cache holds; the window's cells stay the newest ones of
   * each sequence, so a shifted sequence reads the same tokens in both kinds of layers.
   * (llama.cpp refuses to shift unless both caches have the same size.)
   */
  get canShift(): boolean {
    return true;
  }

  reusablePrefix(seq: number, n: number): number {
    const c = Math.min(n, this.base.seqPosMax(seq) + 1);
    if (c <= 0) return 0;
    return this.base.reusablePrefix(seq, c) === c && this.swa.reusablePrefix(seq, c) === c ? c : 0;
  }

  fits(ubatches: readonly UbatchSeqs[]): boolean {
    return this.base.fits(ubatches) && this.swa.fits(ubatches);
  }

  stateLayout(): unknown {
    return { kind: this.kind, base: this.base.stateLayout(), swa: this.swa.stateLayout() };
  }

  stateCells(seq: number): number[] {
    return [...this.base.stateCells(seq), ...this.swa.stateCells(seq)];
  }

  async stateWrite(seq: number, sink: StateSink): Promise<void> {
    await this.base.stateWrite(seq, sink);
    await this.swa.stateWrite(seq, sink);
  }

  async stateRead(seq: number, source: StateSource, cells: readonly number[], check?: StateCheck): Promise<void> {
    await this.base.readCells(seq, source, cells[0] ?? 0, (pos, shift) => check?.(0, pos, shift));
    await this.swa.readCells(seq, source, cells[1] ?? 0, (pos, shift) => check?.(1, pos, shift));
  }

  dispose(): void {
    this.base.dispose();
    this.swa.dispose();
  }
}
