// The memory of a model mixing attention and recurrent layers (llama.cpp's
// llama_memory_hybrid): a KV cache (or a full + sliding-window pair) for the attention
// layers beside a recurrent state for the others. Every sequence operation goes to both,
// the recurrent part first since only it can refuse (it then refuses before anything
// changes); a prefix can be kept only as far as both can keep it, and positions never
// shift (the recurrent state would still carry the dropped tokens).

import { ContextError } from '../errors.js';
import type { AttentionMemory, KVCache } from './kv-cache.js';
import type { LayerKV, StateCheck, StateSink, StateSource, UbatchSeqs } from './memory.js';
import type { RecurrentState } from './recurrent.js';

export class HybridMemory implements AttentionMemory {
  readonly kind = 'hybrid';

  constructor(
    readonly attn: AttentionMemory,
    private rec: RecurrentState,
  ) {}

  get recurrent(): RecurrentState {
    return this.rec;
  }

  get caches(): readonly KVCache[] {
    return this.attn.caches;
  }

  layer(il: number): LayerKV | undefined {
    return this.attn.layer(il);
  }

  get bytes(): number {
    return this.attn.bytes + this.recurrent.bytes;
  }

  describe(): string {
    return `${this.attn.describe()}; ${this.recurrent.describe()}`;
  }

  clear(): void {
    this.recurrent.clear();
    this.attn.clear();
  }

  seqRm(seq: number, p0 = -1, p1 = -1): void {
    this.recurrent.seqRm(seq, p0, p1);
    this.attn.seqRm(seq, p0, p1);
  }

  seqCp(src: number, dst: number, p0 = -1, p1 = -1): void {
    this.recurrent.seqCp(src, dst, p0, p1);
    this.attn.seqCp(src, dst, p0, p1);
  }

  seqKeep(seq: number): void {
    this.recurrent.seqKeep(seq);
    this.attn.seqKeep(seq);
  }

  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    this.recurrent.seqAdd(seq, p0, p1, delta);
    this.attn.seqAdd(seq, p0, p1, delta);
  }

  seqPosMin(seq: number): number {
    return Math.max(this.attn.seqPosMin(seq), this.recurrent.seqPosMin(seq));
  }

  seqPosMax(seq: number): number {
    return Math.min(this.attn.seqPosMax(seq), this.recurrent.seqPosMax(seq));
  }

  get canShift(): boolean {
    return false;
  }

  reusablePrefix(seq: number, n: number): number {
    const r = this.recurrent.reusablePrefix(seq, n);
    if (r === 0) return 0;
    // the attention part keeps any prefix it holds (a window may have moved past it)
    return this.attn.reusablePrefix(seq, r) === r ? r : 0;
  }

  fits(ubatches: readonly UbatchSeqs[]): boolean {
    return this.attn.fits(ubatches);
  }

  /**
   * The recurrent state has a row for every sequence id already; when the attention part
   * is rebuilt larger (its cells gone), the states go too, to stay consistent.
   */
  /**
   * Rows for n sequences: the recurrent state (sized for the sequences the context was made
   * for: a state per sequence costs the same at any context length) is rebuilt larger, and
   * so may the attention part be; whatever was rebuilt, both parts are emptied.
   */
  reserveSequences(n: number): boolean {
    const attnRebuilt = this.attn.reserveSequences(n);
    if (n > this.rec.nSeqMax) {
      const next = this.rec.resized(n);
      this.rec.dispose();
      this.rec = next;
      this.attn.clear();
      return true;
    }
    if (attnRebuilt) this.rec.clear();
    return attnRebuilt;
  }

  /** The attention part's streams (the recurrent state has a row per sequence already). */
  setStreams(n: number): boolean {
    const dropped = this.attn.setStreams(n);
    if (dropped) this.rec.clear();
    return dropped;
  }

  stateLayout(): unknown {
    return { kind: this.kind, attn: this.attn.stateLayout(), recurrent: this.recurrent.stateLayout() };
  }

  stateCells(seq: number): number[] {
    return this.attn.stateCells(seq);
  }

  async stateWrite(seq: number, sink: StateSink): Promise<void> {
    await this.attn.stateWrite(seq, sink);
    await this.recurrent.stateWrite(seq, sink);
  }

  async stateRead(seq: number, source: StateSource, cells: readonly number[], check?: StateCheck): Promise<void> {
    await this.attn.stateRead(seq, source, cells, check);
    // the state must stand where the attention cells end
    const attnLast = this.attn.seqPosMax(seq);
    await this.recurrent.stateRead(seq, source, (last) => {
      if (last !== attnLast) {
        throw new ContextError(
          `saved state: the recurrent state stands at ${last}, the attention cells end at ${attnLast}`,
        );
      }
    });
  }

  dispose(): void {
    this.attn.dispose();
    this.recurrent.dispose();
  }
}
