// A KV cache (llama.cpp's llama_kv_cache): `size` cells shared by the layers it holds. Per
// layer one K and one V tensor of `size` rows, each row one token's keys (values) for all
// KV heads [nEmbdK(il), size]. Each cell records the position of the token stored there
// and the sequences it belongs to (a bit per sequence id). Writes go to free cells (SET_ROWS
// by index); the attention mask decides what each token sees.
//
// With a sliding window W (the cache of a model's sliding-window layers), a cell whose
// position has left the window of its sequence's next token counts as free, so the cache
// needs only W + ubatch cells: the cells form a ring. Overwriting a cell drops every older
// position of that sequence too, so each sequence always holds one run of consecutive
// positions [posMin, posMax]. Masks hide cells outside a query's window.
//
// Sequence operations: remove a position range, copy cells to another sequence, keep one
// sequence, add a delta to positions (context shift: shifted cells' keys are re-rotated
// before the next decode). Layers may also read another layer's K/V (shared KV).
//
// Streams (llama.cpp's non-unified KV cache, `setStreams(n)`): the cells are cut into n
// equal regions and sequence s places its tokens only in region s mod n, each region with
// its own search head; a ubatch attends from the start of the lowest region its sequences
// hold cells in, over as many cells as their highest cell needs (padded, within the
// region). A sequence's cells then sit at the same offsets and are attended over the
// same count whatever its region and whatever the other sequences hold, so its logits
// have the same bits on every slot (the attention kernels group keys by their index in
// the attended range: the split-KV chunks, the tiled kernel's blocks). With one stream
// (default) every sequence shares all cells and attends [0, padded extent).

import { tensorGet, tensorGetNow, tensorSet } from '../../backends/api.js';
import type { BufferType, Buffer as DeviceBuffer } from '../../backends/index.js';
import { allocTensors } from '../../ggml/alloc.js';
import { newTensor, type Tensor, view } from '../../ggml/tensor.js';
import { ContextError } from '../errors.js';
import { type HParams, maskedBySwa, nEmbdK, nEmbdV, type SwaType } from '../hparams.js';
import {
  CACHE_TYPES,
  type CacheType,
  type LayerKV,
  MAX_SEQ,
  type Memory,
  type StateCheck,
  type StateSink,
  type StateSource,
  type UbatchSeqs,
} from './memory.js';

/** A memory made of KV caches: what the graph's attention reads and writes. */
export interface AttentionMemory extends Memory {
  readonly caches: readonly KVCache[];
  /** The cache and tensors of layer il (undefined: the memory does not hold it). */
  layer(il: number): LayerKV | undefined;
}

export interface KVCacheOptions {
  /** Layers whose K/V this cache holds. */
  layers: readonly number[];
  /** Layers that read another layer's K/V here: reader → the layer it reads. */
  reuse?: ReadonlyMap<number, number>;
  size: number;
  typeK: CacheType;
  typeV: CacheType;
  /** Buffer type of each layer's cache (the layer's device), by layer index. */
  layerBufts: readonly BufferType[];
  /** A sliding window: cells out of it are reused and masked. */
  swa?: { type: SwaType; window: number };
  /** For logs: 'full', 'swa'. */
  label?: string;
  /**
   * V rows are the first nEmbdV elements of the K rows (DeepSeek's latent attention: the
   * cache holds the compressed latent once, as llama.cpp's K-only cache): each V tensor is
   * a view of its K, nothing is written to it separately, and saved states hold K only.
   */
  vFromK?: boolean;
}

const NEG_INF_F16 = 0xfc00;

export class KVCache implements AttentionMemory {
  readonly kind = 'kv';
  readonly size: number;
  readonly typeK: CacheType;
  readonly typeV: CacheType;
  readonly swaType: SwaType;
  /** Window size, 0 without. */
  readonly nSwa: number;
  readonly label: string;
  /** Layers with their own K/V here, in order. */
  readonly layerIds: readonly number[];
  readonly buffers: DeviceBuffer[] = [];
  /** Position of each cell's token, -1 for a free cell. */
  readonly pos: Int32Array;
  /** Sequences each cell belongs to (bit s = sequence s). */
  readonly seqs: Uint32Array;
  /** Pending position deltas of shifted cells (applied to K before the next decode). */
  readonly shift: Int32Array;
  /**
   * Each cell's 2-D place within an M-RoPE image (y << 16 | x), -1 for none: it orders
   * cells at one position while the image's ubatches are decoded (later tokens are at
   * later positions and never compare it; snapshots and copies leave it out).
   */
  readonly ext: Int32Array;
  hasShift = false;
  /** Regions of cells, one per stream (see setStreams), and each region's size. */
  private streams = 1;
  private regionSize: number;
  /** Where the next free-cell search starts, per region (relative to its first cell). */
  private heads = [0];
  /** Per region: the lowest cell a sequence operation freed below the head. */
  private freedBelow = [Number.POSITIVE_INFINITY];
  private readonly kOf = new Map<number, Tensor>();
  private readonly vOf = new Map<number, Tensor>();
  private readonly reuse: ReadonlyMap<number, number>;
  readonly vFromK: boolean;

  constructor(
    readonly hp: HParams,
    o: KVCacheOptions,
  ) {
    this.size = o.size;
    this.typeK = o.typeK;
    this.typeV = o.typeV;
    this.swaType = o.swa?.type ?? 'none';
    this.nSwa = o.swa?.window ?? 0;
    this.label = o.label ?? 'kv';
    this.layerIds = [...o.layers];
    this.reuse = o.reuse ?? new Map();
    this.vFromK = o.vFromK ?? false;
    this.regionSize = this.size;
    this.pos = new Int32Array(this.size).fill(-1);
    this.seqs = new Uint32Array(this.size);
    this.shift = new Int32Array(this.size);
    this.ext = new Int32Array(this.size).fill(-1);
    const byBuft = new Map<BufferType, Tensor[]>();
    for (const il of this.layerIds) {
      const k = newTensor(CACHE_TYPES[o.typeK], [nEmbdK(hp, il), this.size], `cache_k_l${il}`);
      const v = this.vFromK
        ? view(k, [nEmbdV(hp, il), this.size], [k.nb[1]], 0).setName(`cache_v_l${il}`)
        : newTensor(CACHE_TYPES[o.typeV], [nEmbdV(hp, il), this.size], `cache_v_l${il}`);
      this.kOf.set(il, k);
      this.vOf.set(il, v);
      const buft = o.layerBufts[il];
      if (!byBuft.has(buft)) byBuft.set(buft, []);
      byBuft.get(buft)!.push(k);
      if (!this.vFromK) byBuft.get(buft)!.push(v);
    }
    for (const [reader, source] of this.reuse) {
      if (!this.kOf.has(source))
        throw new ContextError(`KV cache: layer ${reader} reuses layer ${source}, not held here`);
    }
    for (const [buft, ts] of byBuft) {
      for (const b of allocTensors(ts, buft, 'any')) {
        b.clear(0);
        this.buffers.push(b);
      }
    }
  }

  // ---- what attention reads ----

  get caches(): readonly KVCache[] {
    return [this];
  }

  /** Whether layer il reads this cache (its own K/V or a shared one). */
  holds(il: number): boolean {
    return this.kOf.has(il) || this.reuse.has(il);
  }

  layer(il: number): LayerKV | undefined {
    const src = this.reuse.get(il) ?? il;
    const k = this.kOf.get(src);
    if (!k) return undefined;
    return { cache: 0, k, v: this.vOf.get(src)!, writes: src === il };
  }

  /** K and V of a layer with its own cache here. */
  k(il: number): Tensor {
    return this.kOf.get(il)!;
  }

  v(il: number): Tensor {
    return this.vOf.get(il)!;
  }

  /** What a saved state holds of layer il: K and V rows (K alone for a latent cache). */
  private rowTensors(il: number): Tensor[] {
    return this.vFromK ? [this.k(il)] : [this.k(il), this.v(il)];
  }

  /** Bytes of K and V over all layers. */
  get bytes(): number {
    let n = 0;
    for (const t of this.kOf.values()) n += t.nbytes;
    if (!this.vFromK) for (const t of this.vOf.values()) n += t.nbytes;
    return n;
  }

  describe(): string {
    const w = this.nSwa > 0 ? `, window ${this.nSwa} (${this.swaType})` : '';
    return `${this.label}: ${this.size} cells, ${this.layerIds.length} layers${w}, K ${this.typeK}, V ${this.typeV}, ${(this.bytes / 1048576).toFixed(2)} MiB`;
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

  /**
   * Cells attention reads this ubatch: the extent rounded up to a multiple of 256 (and at
   * least 256, at most the size), as llama.cpp pads it, so the graph's shape stays the
   * same from one token to the next. `extent` (default: the cells in use now) asks what
   * it would be for another.
   */
  attended(extent = this.extent): number {
    return Math.min(this.size, Math.max(256, Math.ceil(extent / 256) * 256));
  }

  /**
   * The cells a ubatch attends, [start, start + n), its cells already stored: with one
   * stream [0, attended()); with streams, from the first cell of the lowest region holding
   * a cell of the ubatch's sequences, up to their highest cell padded to 256 (at least
   * 256, at most the end of that cell's region), as llama.cpp sizes a stream's view.
   */
  window(ub: UbatchSeqs): { start: number; n: number } {
    if (this.streams === 1) return { start: 0, n: this.attended() };
    let bits = 0;
    for (const s of ub.seq) bits |= 1 << s;
    let lo = -1;
    let hi = 0;
    for (let i = 0; i < this.size; i++) {
      if (this.pos[i] < 0 || (this.seqs[i] & bits) === 0) continue;
      if (lo < 0) lo = i;
      hi = i + 1;
    }
    const R = this.regionSize;
    const start = Math.floor(Math.max(lo, 0) / R) * R;
    const end = (Math.floor(Math.max(hi - 1, 0) / R) + 1) * R;
    return { start, n: Math.min(end - start, Math.max(256, Math.ceil((hi - start) / 256) * 256)) };
  }

  /**
   * One stream of cells per sequence id mod n (llama.cpp's kv_unified = false gives each
   * of n_seq_max sequences its own stream; n = 1: all cells shared). Changing the count
   * empties the cache; true when cells were dropped.
   */
  setStreams(n: number): boolean {
    if (!(Number.isInteger(n) && n >= 1 && n <= MAX_SEQ && n <= this.size)) {
      throw new ContextError(`${this.label} KV cache: ${n} streams for ${this.size} cells`);
    }
    if (n === this.streams) return false;
    const dropped = this.used > 0;
    this.clear();
    this.streams = n;
    this.regionSize = Math.floor(this.size / n);
    this.heads = new Array(n).fill(0);
    this.freedBelow = new Array(n).fill(Number.POSITIVE_INFINITY);
    return dropped;
  }

  /** The region (stream) where sequence `seq` places its cells. */
  private regionOf(seq: number): number {
    return seq % this.streams;
  }

  // ---- placing a ubatch ----

  /** Highest position of every sequence (-1: none). */
  private posMaxAll(): Int32Array {
    const m = new Int32Array(MAX_SEQ).fill(-1);
    for (let i = 0; i < this.size; i++) {
      const p = this.pos[i];
      if (p < 0) continue;
      let bits = this.seqs[i];
      while (bits !== 0) {
        const s = 31 - Math.clz32(bits);
        if (p > m[s]) m[s] = p;
        bits &= ~(1 << s);
      }
    }
    return m;
  }

  /**
   * Cells for the ubatch's tokens (llama.cpp's find_slot, tokens one by one from the head):
   * free cells, or, with a window, cells of a single sequence whose position is out of the
   * window of that sequence's next token. Null when there is no room.
   */
  findSlots(ub: UbatchSeqs): number[] | null {
    const n = ub.pos.length;
    const posMax = this.nSwa > 0 ? this.posMaxAll() : null;
    const R = this.regionSize;
    // the ubatch's tokens by region, in order
    const byRegion = new Map<number, number[]>();
    for (let t = 0; t < n; t++) {
      const r = this.regionOf(ub.seq[t]);
      const list = byRegion.get(r);
      if (list) list.push(t);
      else byRegion.set(r, [t]);
    }
    const out = new Array<number>(n);
    for (const [r, tokens] of byRegion) {
      const first = r * R;
      if (tokens.length > R) return null;
      let head = this.heads[r];
      let used = 0;
      for (let i = first; i < first + R; i++) if (this.pos[i] >= 0) used++;
      // plenty of unused cells before the head: search from the start, to fill the region
      if (head > used + 2 * tokens.length) head = 0;
      let k = 0;
      for (let tested = 0; tested < R && k < tokens.length; tested++) {
        const i = first + ((head + tested) % R);
        let free = this.pos[i] < 0;
        if (!free && posMax) {
          const bits = this.seqs[i];
          if (bits !== 0 && (bits & (bits - 1)) === 0) {
            const s = 31 - Math.clz32(bits);
            free = maskedBySwa(this.swaType, this.nSwa, this.pos[i], posMax[s] + 1);
          }
        }
        if (free) out[tokens[k++]] = i;
      }
      if (k < tokens.length) return null;
    }
    return out;
  }

  /**
   * Claim cells for tokens (position, sequence). Overwriting a cell of a sequence first
   * drops that sequence's positions up to the one overwritten (llama.cpp's apply_ubatch),
   * so each sequence keeps one run of consecutive positions.
   */
  store(cells: readonly number[], ub: UbatchSeqs): void {
    const rmMax = new Int32Array(MAX_SEQ).fill(-1);
    cells.forEach((c, i) => {
      if (this.pos[c] >= 0) {
        const bits = this.seqs[c];
        const s = 31 - Math.clz32(bits);
        if (this.pos[c] > rmMax[s]) rmMax[s] = this.pos[c];
      }
      this.pos[c] = ub.pos[i];
      this.seqs[c] = 1 << ub.seq[i];
      this.shift[c] = 0;
      this.ext[c] = ub.ext ? ub.ext[i] : -1;
    });
    for (let s = 0; s < MAX_SEQ; s++) {
      if (rmMax[s] < 0) continue;
      const lo = this.seqPosMin(s);
      if (lo >= 0 && lo <= rmMax[s]) this.seqRm(s, lo, rmMax[s] + 1);
    }
    // each region's head: after the last cell it gave this ubatch
    for (const c of cells) {
      const r = Math.floor(c / this.regionSize);
      this.heads[r] = (c - r * this.regionSize + 1) % this.regionSize;
    }
  }

  fits(ubatches: readonly UbatchSeqs[]): boolean {
    const saved = this.snapshot();
    try {
      for (const ub of ubatches) {
        const cells = this.findSlots(ub);
        if (!cells) return false;
        this.store(cells, ub);
      }
      return true;
    } finally {
      this.restore(saved);
    }
  }

  private snapshot(): {
    pos: Int32Array;
    seqs: Uint32Array;
    shift: Int32Array;
    ext: Int32Array;
    heads: number[];
    hasShift: boolean;
  } {
    return {
      pos: this.pos.slice(),
      ext: this.ext.slice(),
      seqs: this.seqs.slice(),
      shift: this.shift.slice(),
      heads: this.heads.slice(),
      hasShift: this.hasShift,
    };
  }

  private restore(s: ReturnType<KVCache['snapshot']>): void {
    this.pos.set(s.pos);
    this.ext.set(s.ext);
    this.seqs.set(s.seqs);
    this.shift.set(s.shift);
    this.heads = s.heads;
    this.hasShift = s.hasShift;
  }

  /**
   * The KQ mask of a ubatch over cells [start, start + nKV) (F16 bits, row i for token i,
   * column j for cell start + j): 0 where token i (sequence seq[i], position pos[i]) may
   * read that cell, -inf elsewhere.
   */
  fillMask(mask: Uint16Array, start: number, nKV: number, ub: UbatchSeqs, causal: boolean): void {
    mask.fill(NEG_INF_F16);
    const swa = this.nSwa > 0;
    for (let i = 0; i < ub.pos.length; i++) {
      const bit = 1 << ub.seq[i];
      const p1 = ub.pos[i];
      const row = i * nKV;
      for (let j = 0; j < nKV; j++) {
        if ((this.seqs[start + j] & bit) === 0) continue;
        const p0 = this.pos[start + j];
        if (causal && p0 > p1) continue;
        // an M-RoPE image's tokens share a position: raster order among them
        if (causal && p0 === p1 && ub.ext && ub.ext[i] >= 0 && this.ext[start + j] > ub.ext[i]) continue;
        if (swa && maskedBySwa(this.swaType, this.nSwa, p0, p1)) continue;
        mask[row + j] = 0;
      }
    }
  }

  // ---- sequences (llama_memory_seq_*) ----

  clear(): void {
    this.pos.fill(-1);
    this.seqs.fill(0);
    this.shift.fill(0);
    this.hasShift = false;
    this.heads.fill(0);
  }

  /** Frees cell i; the next search starts at the lowest freed cell before the head (as llama.cpp). */
  private free(i: number): void {
    this.pos[i] = -1;
    this.seqs[i] = 0;
    this.shift[i] = 0;
    const r = Math.floor(i / this.regionSize);
    const rel = i - r * this.regionSize;
    if (rel < this.heads[r]) this.freedBelow[r] = Math.min(this.freedBelow[r], rel);
  }

  /** After a sequence operation: move each head back to the first cell it freed below it. */
  private settleHead(): void {
    for (let r = 0; r < this.streams; r++) {
      if (this.freedBelow[r] < this.heads[r]) this.heads[r] = this.freedBelow[r];
      this.freedBelow[r] = Number.POSITIVE_INFINITY;
    }
  }

  private static range(p0: number, p1: number): [number, number] {
    return [Math.max(p0, 0), p1 < 0 ? Number.POSITIVE_INFINITY : p1];
  }

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
    this.settleHead();
  }

  /**
   * `dst` gets the cells of `src` in [p0, p1): shared (a bit more on each cell) within a
   * stream; into another stream the rows are copied into dst's region (its cells in the
   * range dropped first), as llama.cpp copies between streams, so dst's cells stay in its
   * own region. Rows that cannot be read at once (a device that reads asynchronously), or
   * a region without room, leave the cells shared instead.
   */
  seqCp(src: number, dst: number, p0 = -1, p1 = -1): void {
    if (src === dst) return;
    const [a, b] = KVCache.range(p0, p1);
    if (this.regionOf(src) !== this.regionOf(dst) && this.copyAcross(src, dst, a, b)) return;
    for (let i = 0; i < this.size; i++) {
      const p = this.pos[i];
      if (p >= a && p < b && this.seqs[i] & (1 << src)) this.seqs[i] |= 1 << dst;
    }
  }

  /** seqCp into another stream: false (nothing changed) when it cannot be done now. */
  private copyAcross(src: number, dst: number, a: number, b: number): boolean {
    const from = this.cellsOf(src).filter((c) => this.pos[c] >= a && this.pos[c] < b);
    const saved = this.snapshot();
    this.seqRm(dst, a, b);
    const ub: UbatchSeqs = {
      pos: Int32Array.from(from, (c) => this.pos[c]),
      seq: new Int32Array(from.length).fill(dst),
    };
    const to = this.findSlots(ub);
    const rows: [Tensor, number, Uint8Array][] = [];
    try {
      if (!to) throw new Error('no room');
      for (const il of this.layerIds) {
        for (const t of this.rowTensors(il)) {
          const w = t.nb[1];
          for (let i = 0; i < from.length; i++) rows.push([t, to[i] * w, tensorGetNow(t, from[i] * w, w)]);
        }
      }
    } catch {
      this.restore(saved);
      return false;
    }
    this.store(to, ub);
    from.forEach((c, i) => {
      this.shift[to[i]] = this.shift[c];
      if (this.shift[c] !== 0) this.hasShift = true;
    });
    for (const [t, at, bytes] of rows) tensorSet(t, bytes, at);
    return true;
  }

  seqKeep(seq: number): void {
    for (let i = 0; i < this.size; i++) {
      if (this.pos[i] < 0) continue;
      if (this.seqs[i] & (1 << seq)) this.seqs[i] = 1 << seq;
      else this.free(i);
    }
    this.settleHead();
  }

  /**
   * Add `delta` to positions [p0, p1) of `seq`. Cells whose position becomes negative are
   * freed; the others' keys are re-rotated before the next decode.
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
    this.settleHead();
  }

  seqPosMax(seq: number): number {
    let m = -1;
    for (let i = 0; i < this.size; i++) if (this.seqs[i] & (1 << seq) && this.pos[i] > m) m = this.pos[i];
    return m;
  }

  seqPosMin(seq: number): number {
    let m = -1;
    for (let i = 0; i < this.size; i++) {
      if (this.seqs[i] & (1 << seq) && (m < 0 || this.pos[i] < m)) m = this.pos[i];
    }
    return m;
  }

  get canShift(): boolean {
    return true;
  }

  /** The lowest position a query at `p` reads (0 without a window). */
  private windowStart(p: number): number {
    if (this.nSwa === 0) return 0;
    let lo = p;
    // the window's start, found from the mask rule itself (any window kind)
    if (this.swaType === 'standard') lo = Math.max(0, p - this.nSwa + 1);
    else if (this.swaType === 'chunked') lo = Math.floor(p / this.nSwa) * this.nSwa;
    else lo = Math.max(0, p - Math.floor(this.nSwa / 2));
    while (lo > 0 && !maskedBySwa(this.swaType, this.nSwa, lo - 1, p)) lo--;
    return lo;
  }

  /** Whether every position in [lo, hi) of `seq` has a cell. */
  holdsRange(seq: number, lo: number, hi: number): boolean {
    if (hi <= lo) return true;
    const seen = new Uint8Array(hi - lo);
    let n = 0;
    for (let i = 0; i < this.size; i++) {
      const p = this.pos[i];
      if (p < 0 || !(this.seqs[i] & (1 << seq))) continue;
      // an M-RoPE image's cells sit at its first position and stand for the positions it
      // spans: up to max(y, x) further
      const e = this.ext[i];
      const end = e >= 0 ? p + Math.max(e >> 16, e & 0xffff) : p;
      for (let q = Math.max(p, lo); q <= end && q < hi; q++) {
        if (seen[q - lo] === 0) {
          seen[q - lo] = 1;
          n++;
        }
      }
    }
    return n === hi - lo;
  }

  /** Cells are shared by every sequence: nothing to reserve. */
  reserveSequences(_n: number): boolean {
    return false;
  }

  reusablePrefix(seq: number, n: number): number {
    const c = Math.min(n, this.seqPosMax(seq) + 1);
    if (c <= 0) return 0;
    return this.holdsRange(seq, this.windowStart(c), c) ? c : 0;
  }

  /** Cells of `seq` in position order. */
  private cellsOf(seq: number): number[] {
    const cells: number[] = [];
    for (let i = 0; i < this.size; i++) if (this.pos[i] >= 0 && this.seqs[i] & (1 << seq)) cells.push(i);
    return cells.sort((a, b) => this.pos[a] - this.pos[b]);
  }

  // ---- saved state ----

  stateLayout(): unknown {
    return {
      kind: this.kind,
      typeK: this.typeK,
      typeV: this.typeV,
      window: this.nSwa,
      swaType: this.swaType,
      layers: this.layerIds.map((il) => [il, this.k(il).nb[1], this.vFromK ? 0 : this.v(il).nb[1]]),
    };
  }

  stateCells(seq: number): number[] {
    return [this.cellsOf(seq).length];
  }

  /** i32 positions | i32 pending shifts | per layer: K rows, V rows. */
  async stateWrite(seq: number, sink: StateSink): Promise<void> {
    const cells = this.cellsOf(seq);
    const n = cells.length;
    const ints = new Int32Array(2 * n);
    cells.forEach((c, i) => {
      ints[i] = this.pos[c];
      ints[n + i] = this.shift[c];
    });
    await sink(new Uint8Array(ints.buffer));
    const parts = runs(cells);
    for (const il of this.layerIds) {
      for (const t of this.rowTensors(il)) {
        const rowBytes = t.nb[1];
        for (const [first, count] of parts) await sink(await tensorGet(t, first * rowBytes, count * rowBytes));
      }
    }
  }

  async stateRead(seq: number, source: StateSource, cells: readonly number[], check?: StateCheck): Promise<void> {
    await this.readCells(seq, source, cells[0] ?? 0, (pos, shift) => check?.(0, pos, shift));
  }

  /** One cache's part of a saved state: n cells (a window cache keeps only its newest). */
  async readCells(
    seq: number,
    source: StateSource,
    n: number,
    check: (pos: Int32Array, shift: Int32Array) => void,
  ): Promise<void> {
    if (!(Number.isSafeInteger(n) && n >= 0 && n <= 1 << 30))
      throw new ContextError(`saved KV state: bad cell count ${n}`);
    const ints = new Int32Array((await source(8 * n)).slice().buffer);
    const pos = ints.subarray(0, n);
    const shift = ints.subarray(n, 2 * n);
    check(pos, shift);
    const skip = Math.max(0, n - this.size);
    if (skip > 0 && (this.nSwa === 0 || n - skip < this.nSwa)) {
      throw new ContextError(`saved KV state: ${n} cells do not fit the ${this.label} cache (${this.size} cells)`);
    }
    const m = n - skip;
    this.seqRm(seq, -1, -1);
    const ub: UbatchSeqs = { pos: pos.slice(skip), seq: new Int32Array(m).fill(seq) };
    const slots = this.findSlots(ub);
    if (!slots) throw new ContextError(`saved KV state: no room for ${m} cells in the ${this.label} cache`);
    this.store(slots, ub);
    for (let i = 0; i < m; i++) {
      if (shift[skip + i] !== 0) {
        this.shift[slots[i]] = shift[skip + i];
        this.hasShift = true;
      }
    }
    const parts = runs(slots);
    for (const il of this.layerIds) {
      for (const t of this.rowTensors(il)) {
        const rowBytes = t.nb[1];
        const bytes = (await source(n * rowBytes)).subarray(skip * rowBytes);
        let at = 0;
        for (const [first, count] of parts) {
          tensorSet(t, bytes.subarray(at, at + count * rowBytes), first * rowBytes);
          at += count * rowBytes;
        }
      }
    }
  }

  dispose(): void {
    for (const b of this.buffers) b.free();
    this.buffers.length = 0;
  }
}

/** Runs of consecutive cell indices: [first, count]. */
function runs(cells: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const c of cells) {
    const last = out[out.length - 1];
    if (last && last[0] + last[1] === c) last[1]++;
    else out.push([c, 1]);
  }
  return out;
}
