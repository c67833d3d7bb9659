// Recurrent state (llama.cpp's llama_memory_recurrent): what the recurrent layers of a
// model (Mamba-2, Gated DeltaNet, LFM2's short convolutions) keep between decodes. Per
// layer and sequence a fixed-size state whatever the context length: the convolution's
// last inputs (`r`, [nEmbdR] per sequence) and the scan's or delta rule's state (`s`,
// [nEmbdS]). Row q of each layer's tensors belongs to sequence q (one row per sequence
// id, nSeqMax rows: the sequences the context was sized for; `resized` makes room for more).
//
// A state summarises every token it has seen and cannot forget a tail, so:
// - a sequence continues only at its next position; removing positions from the end is
//   possible only back to a checkpoint (a copy of the state taken at a known position,
//   as llama-server's context checkpoints) or to nothing; `reusablePrefix` says which;
// - copying a sequence (seqCp, a fork) copies its state; positions cannot be shifted.
// Checkpoints live in host memory, a bounded number per sequence (the newest kept).

import {
  type BufferType,
  type Buffer as DeviceBuffer,
  tensorGet,
  tensorGetNow,
  tensorMemset,
  tensorSet,
} from '../../backends/index.js';
import { allocTensors } from '../../ggml/alloc.js';
import { newTensor, type Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { ContextError } from '../errors.js';
import type { StateSink, StateSource } from './memory.js';

export interface RecurrentOptions {
  /** The recurrent layers. */
  layers: readonly number[];
  /** Convolution state width (nEmbdR) and scan state width (nEmbdS, 0: none) per sequence. */
  widthR: number;
  widthS: number;
  nSeqMax: number;
  /** Buffer type of each layer's state (the layer's device), by layer index. */
  layerBufts: readonly BufferType[];
  /** Checkpoints kept per sequence (0: none). */
  checkpoints: number;
}

/** A sequence's state at a known position: the bytes of its rows, per layer. */
interface Checkpoint {
  /** Tokens the state has seen: evaluation resumes at this position. */
  n: number;
  rows: Uint8Array[];
}

export class RecurrentState {
  readonly kind = 'recurrent';
  readonly layerIds: readonly number[];
  readonly widthR: number;
  readonly widthS: number;
  readonly nSeqMax: number;
  readonly maxCheckpoints: number;
  readonly buffers: DeviceBuffer[] = [];
  private readonly options: RecurrentOptions;
  /** Last position each sequence's state has seen (-1: empty). */
  private readonly last: Int32Array;
  private readonly rOf = new Map<number, Tensor>();
  private readonly sOf = new Map<number, Tensor>();
  private readonly checkpoints: Checkpoint[][];

  constructor(o: RecurrentOptions) {
    this.options = { ...o };
    this.layerIds = [...o.layers];
    this.widthR = o.widthR;
    this.widthS = o.widthS;
    this.nSeqMax = o.nSeqMax;
    this.maxCheckpoints = o.checkpoints;
    this.last = new Int32Array(o.nSeqMax).fill(-1);
    this.checkpoints = Array.from({ length: o.nSeqMax }, () => []);
    const byBuft = new Map<BufferType, Tensor[]>();
    for (const il of this.layerIds) {
      const ts: Tensor[] = [];
      if (o.widthR > 0) {
        const r = newTensor(GGMLType.F32, [o.widthR, o.nSeqMax], `cache_r_l${il}`);
        this.rOf.set(il, r);
        ts.push(r);
      }
      if (o.widthS > 0) {
        const s = newTensor(GGMLType.F32, [o.widthS, o.nSeqMax], `cache_s_l${il}`);
        this.sOf.set(il, s);
        ts.push(s);
      }
      const buft = o.layerBufts[il];
      if (!byBuft.has(buft)) byBuft.set(buft, []);
      byBuft.get(buft)!.push(...ts);
    }
    for (const [buft, ts] of byBuft) {
      if (ts.length === 0) continue;
      for (const b of allocTensors(ts, buft, 'any')) {
        b.clear(0);
        this.buffers.push(b);
      }
    }
  }

  /** An empty state like this one with rows for n sequences (this one is left as it is). */
  resized(n: number): RecurrentState {
    return new RecurrentState({ ...this.options, nSeqMax: n });
  }

  /** Throws unless sequence q has rows here. */
  private checkRow(q: number): void {
    if (!(q >= 0 && q < this.nSeqMax)) {
      throw new ContextError(
        `sequence ${q}: the recurrent state has rows for sequences 0..${this.nSeqMax - 1} (reserve more sequences first)`,
      );
    }
  }

  /** Layer il's convolution state [widthR, nSeqMax] (undefined: not a recurrent layer). */
  r(il: number): Tensor | undefined {
    return this.rOf.get(il);
  }

  /** Layer il's scan state [widthS, nSeqMax] (undefined: none). */
  s(il: number): Tensor | undefined {
    return this.sOf.get(il);
  }

  holds(il: number): boolean {
    return this.rOf.has(il) || this.sOf.has(il);
  }

  /** Every state tensor, in layer order (r then s). */
  private tensors(): Tensor[] {
    const out: Tensor[] = [];
    for (const il of this.layerIds) {
      const r = this.rOf.get(il);
      const s = this.sOf.get(il);
      if (r) out.push(r);
      if (s) out.push(s);
    }
    return out;
  }

  get bytes(): number {
    let n = 0;
    for (const t of this.tensors()) n += t.nbytes;
    return n;
  }

  /** Bytes of one sequence's state (constant in context length). */
  get bytesPerSequence(): number {
    return this.bytes / this.nSeqMax;
  }

  describe(): string {
    return `recurrent: ${this.layerIds.length} layers, ${this.nSeqMax} sequences, ${(this.bytesPerSequence / 1048576).toFixed(2)} MiB per sequence (r ${this.widthR}, s ${this.widthS} f32), ${this.maxCheckpoints} checkpoints per sequence`;
  }

  // ---- positions ----

  seqPosMax(seq: number): number {
    return seq >= 0 && seq < this.nSeqMax ? this.last[seq] : -1;
  }

  /** The state stands for positions 0..last. */
  seqPosMin(seq: number): number {
    return this.seqPosMax(seq) < 0 ? -1 : 0;
  }

  /** After a ubatch: the sequences it held now stand at these positions. */
  advance(seq: number, pos: number): void {
    this.last[seq] = pos;
  }

  /**
   * Checks that a ubatch's tokens of `seq` continue its state: positions next, next+1, …
   * (a state cannot take a token at a position it has already seen).
   */
  checkContinues(seq: number, first: number, count: number, batchPos: ArrayLike<number>): void {
    this.checkRow(seq);
    const next = this.last[seq] + 1;
    if (first !== next) {
      throw new ContextError(
        `decode: sequence ${seq}'s recurrent state is at position ${next}; the batch gives position ${first} (remove the positions after a checkpoint first, or clear the sequence)`,
      );
    }
    for (let i = 1; i < count; i++) {
      if (batchPos[i] !== first + i) {
        throw new ContextError(`decode: sequence ${seq}'s positions must be consecutive for its recurrent state`);
      }
    }
  }

  // ---- sequence operations ----

  /** Zeroes sequence q's rows and forgets its position (and, unless kept, its checkpoints). */
  private reset(q: number, keepCheckpoints = false): void {
    for (const t of this.tensors()) tensorMemset(t, 0, q * t.nb[1], t.nb[1]);
    this.last[q] = -1;
    if (!keepCheckpoints) this.checkpoints[q] = [];
  }

  clear(): void {
    for (const b of this.buffers) b.clear(0);
    this.last.fill(-1);
    for (let q = 0; q < this.nSeqMax; q++) this.checkpoints[q] = [];
  }

  private static range(p0: number, p1: number): [number, number] {
    return [Math.max(p0, 0), p1 < 0 ? Number.POSITIVE_INFINITY : p1];
  }

  /**
   * Removes positions [p0, p1) of `seq` (every sequence when seq < 0). A state can lose
   * everything, or a tail back to one of its checkpoints (restored here); anything else
   * throws, before anything changes (never continue from a wrong state).
   */
  seqRm(seq: number, p0 = -1, p1 = -1): void {
    const [a, b] = RecurrentState.range(p0, p1);
    const seqs = seq < 0 ? Array.from({ length: this.nSeqMax }, (_, q) => q) : [seq];
    const plans = seqs.map((q) => this.planRemove(q, a, b));
    plans.forEach((plan, i) => {
      const q = seqs[i];
      if (plan === 'all') this.reset(q);
      else if (plan !== null) this.restore(q, plan);
      // checkpoints past the removed start go (they stand for removed positions)
      else if (b > a) this.checkpoints[q] = this.checkpoints[q].filter((c) => c.n <= a);
    });
  }

  /** What removing [a, b) from q takes: nothing (null), everything, or a checkpoint to restore. */
  private planRemove(q: number, a: number, b: number): null | 'all' | Checkpoint {
    const last = this.seqPosMax(q);
    if (last < 0 || a > last || b <= a) return null;
    if (b <= last) {
      throw new ContextError(
        `sequence ${q}: a recurrent state cannot drop positions ${a}..${b - 1} and keep later ones (it holds 0..${last})`,
      );
    }
    if (a === 0) return 'all';
    const c = this.checkpoints[q].find((x) => x.n === a);
    if (!c) {
      const have = this.checkpoints[q].map((x) => x.n).join(', ') || 'none';
      throw new ContextError(
        `sequence ${q}: the recurrent state cannot go back to position ${a} (checkpoints at: ${have}); ask reusablePrefix() which prefix can be kept`,
      );
    }
    return c;
  }

  private restore(q: number, c: Checkpoint): void {
    this.tensors().forEach((t, i) => {
      tensorSet(t, c.rows[i], q * t.nb[1]);
    });
    this.last[q] = c.n - 1;
    this.checkpoints[q] = this.checkpoints[q].filter((x) => x.n <= c.n);
  }

  /**
   * Makes `dst` a copy of `src` (a fork): its state, position and checkpoints. A state
   * copies whole: the range must cover all of src.
   */
  seqCp(src: number, dst: number, p0 = -1, p1 = -1): void {
    if (src === dst) return;
    const [a, b] = RecurrentState.range(p0, p1);
    const last = this.seqPosMax(src);
    if (last < 0) return;
    this.checkRow(dst);
    if (a > 0 || b <= last) {
      throw new ContextError(
        `seqCp ${src} → ${dst}: a recurrent state is copied whole (positions 0..${last}), not ${a}..${b - 1}`,
      );
    }
    // read at once: a later op on either sequence must see the copy made (a device whose
    // reads complete later cannot fork a state in place)
    for (const t of this.tensors()) tensorSet(t, tensorGetNow(t, src * t.nb[1], t.nb[1]), dst * t.nb[1]);
    this.last[dst] = last;
    // checkpoints are immutable copies: sharing them is safe
    this.checkpoints[dst] = [...this.checkpoints[src]];
  }

  seqKeep(seq: number): void {
    for (let q = 0; q < this.nSeqMax; q++) if (q !== seq && this.last[q] >= 0) this.reset(q);
    for (let q = 0; q < this.nSeqMax; q++) if (q !== seq) this.checkpoints[q] = [];
  }

  /** A state has no positions to move. */
  seqAdd(seq: number, _p0: number, _p1: number, delta: number): void {
    if (delta === 0 || this.seqPosMax(seq) < 0) return;
    throw new ContextError(`sequence ${seq}: a recurrent state's positions cannot be shifted (no context shift)`);
  }

  get canShift(): boolean {
    return false;
  }

  /**
   * The longest prefix of the first n positions a continuation can keep: all the state
   * holds when it stands exactly there (or has seen fewer), else the newest checkpoint at
   * or before n, else 0.
   */
  reusablePrefix(seq: number, n: number): number {
    const held = this.seqPosMax(seq) + 1;
    if (held <= n) return held;
    let best = 0;
    for (const c of this.checkpoints[seq] ?? []) if (c.n <= n && c.n > best) best = c.n;
    return best;
  }

  // ---- checkpoints ----

  /** Checkpoint positions of `seq` (tokens seen), oldest first. */
  checkpointsOf(seq: number): number[] {
    return (this.checkpoints[seq] ?? []).map((c) => c.n);
  }

  /** Copies `seq`'s state as it stands (its position known) to host memory. */
  async checkpoint(seq: number): Promise<void> {
    if (this.maxCheckpoints <= 0) return;
    const n = this.seqPosMax(seq) + 1;
    if (n <= 0) return;
    const rows: Uint8Array[] = [];
    for (const t of this.tensors()) rows.push(await tensorGet(t, seq * t.nb[1], t.nb[1]));
    const list = this.checkpoints[seq].filter((c) => c.n !== n);
    list.push({ n, rows });
    list.sort((x, y) => x.n - y.n);
    while (list.length > this.maxCheckpoints) list.shift();
    this.checkpoints[seq] = list;
  }

  // ---- saved state ----

  stateLayout(): unknown {
    return { kind: this.kind, layers: this.layerIds, r: this.widthR, s: this.widthS };
  }

  /** i32 last position, then per layer the r row and the s row. */
  async stateWrite(seq: number, sink: StateSink): Promise<void> {
    const last = this.seqPosMax(seq);
    await sink(new Uint8Array(Int32Array.of(last).buffer));
    for (const t of this.tensors()) {
      // a sequence without rows here has an empty (zero) state
      await sink(last < 0 ? new Uint8Array(t.nb[1]) : await tensorGet(t, seq * t.nb[1], t.nb[1]));
    }
  }

  /** Clears `seq`, then restores what stateWrite wrote; `check` sees the last position first. */
  async stateRead(seq: number, source: StateSource, check?: (last: number) => void): Promise<void> {
    const last = new Int32Array((await source(4)).slice().buffer)[0];
    if (!(Number.isSafeInteger(last) && last >= -1))
      throw new ContextError(`saved recurrent state: bad position ${last}`);
    check?.(last);
    this.checkRow(seq);
    this.reset(seq);
    for (const t of this.tensors()) tensorSet(t, (await source(t.nb[1])).slice(), seq * t.nb[1]);
    this.last[seq] = last;
  }

  dispose(): void {
    for (const b of this.buffers) b.free();
    this.buffers.length = 0;
  }
}
