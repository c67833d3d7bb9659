// Memory for tensors: weights in one or more buffers of a buffer type (split where the
// type's maxSize is smaller than the model, as ggml does by get_max_size), and a graph
// allocator (ggml's gallocr) that packs the intermediates of a graph into compute
// buffers, reusing memory once its last consumer has run, and computing in place
// where the op allows and the source is dead.

import { logger } from '../log.js';
import type { Graph } from './graph.js';
import { Op, sameLayout, type Tensor, type TensorBuffer, TensorFlag } from './tensor.js';

/** Buffer roles (ggml_backend_buffer_usage). */
export type BufferUsage = 'any' | 'weights' | 'compute';

/** What the allocators need of a buffer: the backend layer's buffers have it. */
export interface AllocBuffer extends TensorBuffer {
  usage: BufferUsage;
  /** Called once a tensor (or view) is placed in this buffer. */
  initTensor(t: Tensor): void;
  free(): void;
}

/** What the allocators need of a buffer type (the backend layer's buffer types have it). */
export interface AllocBufferType<B extends AllocBuffer = AllocBuffer> {
  readonly name: string;
  /** Every tensor's offset in a buffer of this type is a multiple of this. */
  readonly alignment: number;
  /** Largest single buffer this type can allocate. */
  readonly maxSize: number;
  alloc(size: number, usage?: BufferUsage): B;
  /** Bytes a tensor takes in this buffer type (≥ tensor.nbytes; some layouts pad). */
  allocSize(t: Tensor): number;
}

const log = logger('alloc');

function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

/**
 * Place `tensors` (none allocated yet) in buffers of `buft`: one buffer when they fit in
 * `maxSize`, else consecutive groups each under it. Returns the buffers; throws when one
 * tensor alone exceeds the limit.
 */
export function allocTensors<B extends AllocBuffer>(
  tensors: readonly Tensor[],
  buft: AllocBufferType<B>,
  usage: BufferUsage = 'weights',
): B[] {
  const groups: { ts: Tensor[]; offs: number[]; size: number }[] = [];
  let cur: { ts: Tensor[]; offs: number[]; size: number } = { ts: [], offs: [], size: 0 };
  for (const t of tensors) {
    if (t.buffer || t.viewSrc) throw new Error(`allocTensors: ${t} is already placed or is a view`);
    const size = alignUp(buft.allocSize(t), buft.alignment);
    if (size > buft.maxSize) {
      throw new RangeError(`tensor ${t} needs ${size} bytes, more than ${buft.name}'s buffer limit ${buft.maxSize}`);
    }
    if (cur.size + size > buft.maxSize && cur.ts.length > 0) {
      groups.push(cur);
      cur = { ts: [], offs: [], size: 0 };
    }
    cur.ts.push(t);
    cur.offs.push(cur.size);
    cur.size += size;
  }
  if (cur.ts.length > 0) groups.push(cur);
  const buffers = groups.map((g) => {
    const buf = buft.alloc(g.size, usage);
    g.ts.forEach((t, i) => {
      t.place(buf, g.offs[i]);
      buf.initTensor(t);
    });
    return buf;
  });
  if (buffers.length > 1) log.info(`${tensors.length} tensors split over ${buffers.length} ${buft.name} buffers`);
  return buffers;
}

/** Best-fit allocator over one address range; tracks the high-water mark. */
class DynAllocator {
  /** Free blocks, sorted by offset; the last one runs to infinity. */
  private free: { offset: number; size: number }[] = [{ offset: 0, size: Number.POSITIVE_INFINITY }];
  maxSize = 0;

  constructor(readonly alignment: number) {}

  alloc(size: number): number {
    size = alignUp(Math.max(size, 1), this.alignment);
    let best = -1;
    for (let i = 0; i < this.free.length; i++) {
      const b = this.free[i];
      if (b.size >= size && (best < 0 || b.size < this.free[best].size)) best = i;
    }
    const b = this.free[best];
    const offset = b.offset;
    b.offset += size;
    b.size -= size;
    if (b.size === 0) this.free.splice(best, 1);
    this.maxSize = Math.max(this.maxSize, offset + size);
    return offset;
  }

  release(offset: number, size: number): void {
    size = alignUp(Math.max(size, 1), this.alignment);
    let i = 0;
    while (i < this.free.length && this.free[i].offset < offset) i++;
    this.free.splice(i, 0, { offset, size });
    // merge with the next block, then with the previous one
    const next = this.free[i + 1];
    if (next && offset + size === next.offset) {
      this.free[i].size += next.size;
      this.free.splice(i + 1, 1);
    }
    const prev = this.free[i - 1];
    if (prev && prev.offset + prev.size === offset) {
      prev.size += this.free[i].size;
      this.free.splice(i, 1);
    }
  }
}

/** Ops that may write their result over their first source (ggml_op_can_inplace). */
const INPLACE = new Set<Op>([Op.ADD, Op.MUL, Op.SCALE, Op.SILU, Op.GELU, Op.ROPE, Op.SOFT_MAX, Op.RMS_NORM, Op.NORM]);

interface Slot {
  buf: number;
  offset: number;
  size: number;
}

/** Where every tensor of a graph goes: buffer index and offset, and each buffer's size. */
export interface AllocPlan {
  slots: Map<Tensor, Slot>;
  sizes: number[];
  inplace: number;
}

/**
 * Plans offsets for the unallocated tensors of `graph` (nodes and leafs with no buffer,
 * views excepted: they use their source's memory). `bufferOf(t)` picks which of the
 * buffer types a tensor goes in (default: the first). Leafs (graph inputs) and tensors
 * flagged OUTPUT keep their memory for the whole graph; other nodes are freed after
 * their last consumer. A leaf that is only ever a copy's destination (`cpy(x, newTensor(…))`,
 * a cast) holds nothing before the copy: it is placed at its first use and freed after its
 * last, as a node (as ggml-alloc places non-input leafs), so a cast per layer does not keep
 * one buffer per layer alive.
 */
export function planGraph(
  graph: Graph,
  bufts: readonly AllocBufferType[],
  bufferOf: (t: Tensor) => number = () => 0,
): AllocPlan {
  const allocs = bufts.map((b) => new DynAllocator(b.alignment));
  const slots = new Map<Tensor, Slot>();
  const children = new Map<Tensor, number>();
  const views = new Map<Tensor, number>();
  const persistent = new Set<Tensor>();
  let inplace = 0;

  for (const n of graph.nodes) {
    for (const s of n.src) children.set(s, (children.get(s) ?? 0) + 1);
    if (n.viewSrc) views.set(n.viewSrc, (views.get(n.viewSrc) ?? 0) + 1);
  }
  const needs = (t: Tensor) => !t.buffer && !t.viewSrc && !slots.has(t);
  const allocate = (t: Tensor) => {
    const buf = bufferOf(t);
    const size = bufts[buf].allocSize(t);
    slots.set(t, { buf, offset: allocs[buf].alloc(size), size });
  };
  const release = (t: Tensor) => {
    const s = slots.get(t);
    if (!s || persistent.has(t) || t.hasFlag(TensorFlag.OUTPUT)) return;
    allocs[s.buf].release(s.offset, s.size);
    persistent.add(t); // never released twice
  };

  // leafs written only by copies (never read as a source of anything else)
  const scratch = new Set(graph.leafs.filter((l) => needs(l) && !l.hasFlag(TensorFlag.INPUT)));
  for (const n of graph.nodes) {
    n.src.forEach((s, i) => {
      if (scratch.has(s) && !(n.op === Op.CPY && i === 1)) scratch.delete(s);
    });
  }
  for (const leaf of graph.leafs) {
    if (needs(leaf) && !scratch.has(leaf)) {
      allocate(leaf);
      persistent.add(leaf);
    }
  }

  for (const n of graph.nodes) {
    for (const s of n.src) if (scratch.has(s) && needs(s)) allocate(s);
    if (needs(n)) {
      let done = false;
      if (INPLACE.has(n.op)) {
        const p = n.src[0];
        const ps = slots.get(p);
        if (
          ps &&
          !persistent.has(p) &&
          !p.hasFlag(TensorFlag.OUTPUT) &&
          !p.viewSrc &&
          (children.get(p) ?? 0) === 1 &&
          (views.get(p) ?? 0) === 0 &&
          sameLayout(p, n) &&
          ps.buf === bufferOf(n)
        ) {
          // take over the dying source's memory; it must not be released on its own
          slots.set(n, { ...ps });
          persistent.add(p);
          inplace++;
          done = true;
        }
      }
      if (!done) allocate(n);
    }
    for (const p of n.src) {
      const c = (children.get(p) ?? 0) - 1;
      children.set(p, c);
      if (c !== 0 || (views.get(p) ?? 0) !== 0) continue;
      if (p.viewSrc) {
        const root = p.viewSrc;
        const v = (views.get(root) ?? 0) - 1;
        views.set(root, v);
        if (v === 0 && (children.get(root) ?? 0) === 0) release(root);
      } else {
        release(p);
      }
    }
  }
  return { slots, sizes: allocs.map((a) => a.maxSize), inplace };
}

/**
 * ggml's gallocr: owns one compute buffer per buffer type, grows it when a graph needs
 * more, and places a graph's intermediates in it.
 */
export class GraphAllocator<B extends AllocBuffer = AllocBuffer> {
  readonly buffers: (B | null)[];

  constructor(readonly bufts: readonly AllocBufferType<B>[]) {
    this.buffers = bufts.map(() => null);
  }

  /** Make the buffers big enough for `graph` without placing anything; returns the sizes. */
  reserve(graph: Graph, bufferOf?: (t: Tensor) => number): number[] {
    const plan = planGraph(graph, this.bufts, bufferOf);
    this.ensure(plan.sizes);
    return plan.sizes;
  }

  /** Place every unallocated tensor of `graph` in the compute buffers. */
  allocGraph(graph: Graph, bufferOf?: (t: Tensor) => number): AllocPlan {
    const plan = planGraph(graph, this.bufts, bufferOf);
    this.ensure(plan.sizes);
    for (const [t, s] of plan.slots) {
      const buf = this.buffers[s.buf]!;
      t.place(buf, s.offset);
      buf.initTensor(t);
    }
    return plan;
  }

  /** Bytes of compute buffer `i` (0 before the first reserve/alloc). */
  bufferSize(i = 0): number {
    return this.buffers[i]?.size ?? 0;
  }

  private ensure(sizes: number[]): void {
    sizes.forEach((size, i) => {
      const cur = this.buffers[i];
      if (size === 0 || (cur && cur.size >= size)) return;
      cur?.free();
      log.debug(`${this.bufts[i].name} compute buffer: ${(size / 1048576).toFixed(2)} MiB`);
      this.buffers[i] = this.bufts[i].alloc(size, 'compute');
    });
  }

  free(): void {
    this.buffers.forEach((b, i) => {
      b?.free();
      this.buffers[i] = null;
    });
  }
}
