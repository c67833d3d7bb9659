// The KV cache: per layer, one K and one V tensor of `size` rows (cells), each row one
// token's keys (values) for all KV heads, [nEmbdK, size]. Each cell records the position
// of the token stored there and the sequences it belongs to (a bit per sequence id), as
// llama.cpp's unified cache does. Writes go to any free cells (SET_ROWS by index); the
// attention mask decides what each token sees.
//
// Sequence operations (llama_memory_seq_*): remove a position range, copy cells to
// another sequence, keep one sequence, add a delta to positions (context shift). Shifted
// cells' keys are re-rotated (RoPE by the delta) before the next decode.

import type { BufferType, Buffer as DeviceBuffer } from '../backends/index.js';
import { allocTensors } from '../ggml/alloc.js';
import { newTensor, type Tensor } from '../ggml/tensor.js';
import { GGMLType } from '../ggml/types.js';
import { type HParams, nEmbdK, nEmbdV } from './hparams.js';

/** Cache element types: F16 (llama.cpp's default), F32, Q8_0. */
export type CacheType = 'f16' | 'f32' | 'q8_0';

export const CACHE_TYPES: Record<CacheType, number> = {
  f16: GGMLType.F16,
  f32: GGMLType.F32,
  q8_0: GGMLType.Q8_0,
};

/** Sequence ids are bits of a 32-bit mask. */
export const MAX_SEQ = 32;

export class KVCache {
  readonly k: Tensor[] = [];
  readonly v: Tensor[] = [];
  readonly buffers: DeviceBuffer[] = [];
  /** Position of each cell's token, -1 for a free cell. */
  readonly pos: Int32Array;
  /** Sequences each cell belongs to (bit s = sequence s). */
  readonly seqs: Uint32Array;
  /** Pending position deltas of shifted cells (applied to K before the next decode). */
  readonly shift: Int32Array;
  hasShift = false;
  /** Where the next free-cell search starts. */
  private head = 0;

  constructor(
    readonly hp: HParams,
    readonly size: number,
    readonly typeK: CacheType,
    readonly typeV: CacheType,
    /** Buffer type of each layer's cache (the layer's device). */
    layerBufts: readonly BufferType[],
  ) {
    this.pos = new Int32Array(size).fill(-1);
    this.seqs = new Uint32Array(size);
    this.shift = new Int32Array(size);
    const byBuft = new Map<BufferType, Tensor[]>();
    for (let il = 0; il < hp.nLayer; il++) {
      const k = newTensor(CACHE_TYPES[typeK], [nEmbdK(hp), size], `cache_k_l${il}`);
      const v = newTensor(CACHE_TYPES[typeV], [nEmbdV(hp), size], `cache_v_l${il}`);
      this.k.push(k);
      this.v.push(v);
      const buft = layerBufts[il];
      if (!byBuft.has(buft)) byBuft.set(buft, []);
      byBuft.get(buft)!.push(k, v);
    }
    for (const [buft, ts] of byBuft) {
      for (const b of allocTensors(ts, buft, 'any')) {
        b.clear(0);
        this.buffers.push(b);
      }
    }
  }

  /** Bytes of K and V over all layers. */
  get bytes(): number {
    return this.k.reduce((s, t) => s + t.nbytes, 0) + this.v.reduce((s, t) => s + t.nbytes, 0);
  }

  /** Cells in use. */
  get used(): number {
    let n = 0;
    for (let i = 0; i < this.size; i++) if (this.pos[i] >= 0) n++;
    return n;
  }

  /** One past the highest cell in use: attention reads cells [0, extent). */
  get extent(): number {
    for (let i = this.size - 1; i >= 0; i--) if (this.pos[i] >= 0) return i + 1;
    return 0;
  }

  /** `n` free cells (searching from the last write on), or null when the cache is full. */
  findSlots(n: number): number[] | null {
    const out: number[] = [];
    for (let k = 0; k < this.size && out.length < n; k++) {
      const i = (this.head + k) % this.size;
      if (this.pos[i] < 0) out.push(i);
    }
    if (out.length < n) return null;
    return out.sort((a, b) => a - b);
  }

  /** Claim cells for tokens (position, sequence). */
  store(cells: readonly number[], pos: ArrayLike<number>, seq: ArrayLike<number>): void {
    cells.forEach((c, i) => {
      this.pos[c] = pos[i];
      this.seqs[c] = 1 << seq[i];
      this.shift[c] = 0;
    });
    if (cells.length > 0) this.head = (cells[cells.length - 1] + 1) % this.size;
  }

  clear(): void {
    this.pos.fill(-1);
    this.seqs.fill(0);
    this.shift.fill(0);
    this.hasShift = false;
    this.head = 0;
  }

  private free(i: number): void {
    this.pos[i] = -1;
    this.seqs[i] = 0;
    this.shift[i] = 0;
  }

  private static range(p0: number, p1: number): [number, number] {
    return [Math.max(p0, 0), p1 < 0 ? Number.POSITIVE_INFINITY : p1];
  }

  /** Remove positions [p0, p1) of sequence `seq` (every sequence when seq < 0). */
  seqRm(seq: number, p0 = -1, p1 = -1): void {
    const [a, b] = KVCache.range(p0, p1);
    for (let i = 0; i < this.size; i++) {
      const p = this.pos[i];
      if (p < 0 || p < a || p >= b) continue;
      if (seq < 0) this.free(i);
      else if (this.seqs[i] & (1 << seq)) {
        this.seqs[i] &= ~(1 << seq);
        if (this.seqs[i] === 0) this.free(i);
      }
    }
  }

  /** Make positions [p0, p1) of `src` also belong to `dst` (prefix sharing). */
  seqCp(src: number, dst: number, p0 = -1, p1 = -1): void {
    if (src === dst) return;
    const [a, b] = KVCache.range(p0, p1);
    for (let i = 0; i < this.size; i++) {
      const p = this.pos[i];
      if (p >= a && p < b && this.seqs[i] & (1 << src)) this.seqs[i] |= 1 << dst;
    }
  }

  /** Drop every sequence but `seq`. */
  seqKeep(seq: number): void {
    for (let i = 0; i < this.size; i++) {
      if (this.pos[i] < 0) continue;
      if (this.seqs[i] & (1 << seq)) this.seqs[i] = 1 << seq;
      else this.free(i);
    }
  }

  /**
   * Add `delta` to positions [p0, p1) of `seq` (context shift). Cells whose position
   * becomes negative are freed; the others' keys are re-rotated before the next decode.
   */
  seqAdd(seq: number, p0: number, p1: number, delta: number): void {
    if (delta === 0) return;
    const [a, b] = KVCache.range(p0, p1);
    for (let i = 0; i < this.size; i++) {
      const p = this.pos[i];
      if (p < 0 || p < a || p >= b || !(this.seqs[i] & (1 << seq))) continue;
      this.pos[i] = p + delta;
      if (this.pos[i] < 0) {
        this.free(i);
        continue;
      }
      this.shift[i] += delta;
      this.hasShift = true;
    }
  }

  /** Highest position of `seq`, -1 when it has none. */
  seqPosMax(seq: number): number {
    let m = -1;
    for (let i = 0; i < this.size; i++) if (this.seqs[i] & (1 << seq) && this.pos[i] > m) m = this.pos[i];
    return m;
  }

  /** Lowest position of `seq`, -1 when it has none. */
  seqPosMin(seq: number): number {
    let m = -1;
    for (let i = 0; i < this.size; i++) {
      if (this.seqs[i] & (1 << seq) && (m < 0 || this.pos[i] < m)) m = this.pos[i];
    }
    return m;
  }

  /** Whether cell j is visible to a token of sequence `seq` at position `pos`. */
  visible(j: number, seq: number, pos: number, causal: boolean): boolean {
    return (this.seqs[j] & (1 << seq)) !== 0 && (!causal || this.pos[j] <= pos);
  }

  dispose(): void {
    for (const b of this.buffers) b.free();
    this.buffers.length = 0;
  }
}
