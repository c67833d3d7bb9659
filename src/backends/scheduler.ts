// The scheduler (ggml_backend_sched): runs one graph over several backends. It assigns
// each node to a backend, cuts the node list into splits of consecutive nodes on the
// same backend, inserts a copy wherever a split reads a tensor that lives elsewhere,
// allocates intermediates and copies in each backend's compute buffer, and runs the
// splits in order.
//
// Assignment, in order of precedence (as ggml's, simplified):
//  1. a backend set by hand (setTensorBackend);
//  2. a node whose result is a view of existing memory (CPY / SET_ROWS into a KV cache)
//     runs where that memory is;
//  3. a node reading weights runs where the weights are, unless they are on the host
//     (last) backend and a higher-priority backend supports the op and wants it (offloadOp);
//  4. otherwise the backend of its first source that supports the op;
//  5. otherwise the highest-priority backend that supports the op.
// Graph inputs without memory go to the backend of their first consumer. Backends are
// given in priority order; put the host (CPU or reference) backend last.
//
// Like ggml's, the scheduler rewrites the sources of the graph's nodes to point at the
// copies: build a fresh graph for every evaluation.

import { GraphAllocator } from '../ggml/alloc.js';
import { Graph } from '../ggml/graph.js';
import { dupTensor, isViewOp, type Tensor, TensorFlag } from '../ggml/tensor.js';
import { logger } from '../log.js';
import { type Backend as PublicBackend, tensorCopy } from './api.js';
import { type Backend, type Buffer, bufferOf } from './impl.js';

const log = logger('sched');

export interface SplitInput {
  /** The tensor where it lives. */
  src: Tensor;
  /** Its copy in the split's backend memory. */
  copy: Tensor;
}

export interface Split {
  backend: number;
  /** Computed nodes (views excluded: they compute nothing). */
  nodes: Tensor[];
  /** The nodes as a graph for the backend, the same object for every evaluation. */
  graph?: Graph;
  /** Copies to make before the split runs. */
  inputs: SplitInput[];
}

export class Scheduler {
  private readonly allocator: GraphAllocator<Buffer>;
  /** The backends, in priority order (the host last). */
  readonly backends: readonly Backend[];
  private readonly manual = new Map<Tensor, number>();
  private assigned = new Map<Tensor, number>();
  private current: { graph: Graph; splits: Split[] } | null = null;

  /** Backends in priority order, the host's last (public handles: every backend is a full one). */
  constructor(backends: readonly PublicBackend[]) {
    if (backends.length === 0) throw new Error('scheduler: no backends');
    this.backends = backends as readonly Backend[];
    this.allocator = new GraphAllocator(this.backends.map((b) => b.device.bufferType()));
  }

  /** Pin a node (or input) to a backend (ggml_backend_sched_set_tensor_backend). */
  setTensorBackend(t: Tensor, backend: PublicBackend): void {
    this.manual.set(t, this.indexOf(backend));
  }

  /** The backend a tensor was assigned to in the last allocated graph. */
  tensorBackend(t: Tensor): Backend | undefined {
    const i = this.locate(t);
    return i === undefined ? undefined : this.backends[i];
  }

  /** The graph last allocated (evaluating it again needs no new allocation). */
  get currentGraph(): Graph | null {
    return this.current?.graph ?? null;
  }

  get splits(): readonly Split[] {
    return this.current?.splits ?? [];
  }

  get nCopies(): number {
    return this.splits.reduce((n, s) => n + s.inputs.length, 0);
  }

  /** Compute buffer bytes per backend (after reserve or allocGraph). */
  bufferSizes(): number[] {
    return this.backends.map((_, i) => this.allocator.bufferSize(i));
  }

  /** Size the compute buffers for a worst-case graph (the graph is consumed). */
  reserve(graph: Graph): number[] {
    const { order } = this.split(graph);
    return this.allocator.reserve(order, (t) => this.bufferIndex(t));
  }

  /** Assign, split and allocate `graph`; then set its inputs and call graphCompute. */
  allocGraph(graph: Graph): void {
    const { order, splits } = this.split(graph);
    this.allocator.allocGraph(order, (t) => this.bufferIndex(t));
    this.current = { graph, splits };
    log.debug(`graph of ${graph.nodes.length} nodes: ${splits.length} splits, ${this.nCopies} copies`);
  }

  /** Run the splits of the graph last passed to allocGraph (allocating it if needed). */
  async graphCompute(graph: Graph): Promise<void> {
    if (this.current?.graph !== graph) this.allocGraph(graph);
    for (const split of this.current!.splits) {
      for (const { src, copy } of split.inputs) await tensorCopy(src, copy);
      let g = split.graph;
      if (!g) {
        g = split.graph = new Graph();
        g.nodes.push(...split.nodes);
        // allocations change only through allocGraph, which makes new splits
        g.reusable = true;
      }
      const backend = this.backends[split.backend];
      await backend.graphCompute(g);
      await backend.synchronize();
    }
  }

  free(): void {
    this.allocator.free();
  }

  private indexOf(b: PublicBackend): number {
    const i = this.backends.indexOf(b as Backend);
    if (i < 0) throw new Error(`scheduler: backend ${b.name} is not one of this scheduler's`);
    return i;
  }

  /** Which backend's memory a buffer is: its own device's, else the first that accepts it. */
  private backendOfBuffer(buf: Buffer): number {
    const buft = buf.bufferType;
    let i = this.backends.findIndex((b) => b.device === buft.device);
    if (i < 0) i = this.backends.findIndex((b) => b.device.supportsBufferType(buft));
    if (i < 0) throw new Error(`scheduler: no backend can use buffers of type ${buft.name}`);
    return i;
  }

  /** Where a tensor's memory is (or will be); undefined for an input not yet assigned. */
  private locate(t: Tensor): number | undefined {
    if (t.viewSrc) return this.locate(t.viewSrc);
    const buf = bufferOf(t);
    if (buf) return this.backendOfBuffer(buf);
    return this.assigned.get(t);
  }

  private bufferIndex(t: Tensor): number {
    const i = this.locate(t);
    if (i === undefined) throw new Error(`scheduler: tensor ${t} has no backend`);
    return i;
  }

  private supports(i: number, n: Tensor): boolean {
    return this.backends[i].device.supportsOp(n);
  }

  private choose(n: Tensor): number {
    const pinned = this.manual.get(n);
    if (pinned !== undefined) return pinned;
    if (n.viewSrc) {
      const at = this.locate(n.viewSrc);
      if (at !== undefined) {
        if (!this.supports(at, n)) {
          throw new Error(`scheduler: ${n.op} writes into ${this.backends[at].name} memory, which cannot run it`);
        }
        return at;
      }
    }
    for (const s of n.src) {
      const buf = bufferOf(s);
      const isWeight = buf !== null && (buf.usage === 'weights' || s.hasFlag(TensorFlag.WEIGHT));
      if (!isWeight) continue;
      const w = this.locate(s)!;
      // as ggml_backend_sched: only weights on the host (the last backend) are offered to
      // the others; one GPU's weights never move to another for an op
      for (let i = 0; w === this.backends.length - 1 && i < w; i++) {
        if (this.supports(i, n) && this.backends[i].device.offloadOp(n)) return i;
      }
      if (this.supports(w, n)) return w;
    }
    for (const s of n.src) {
      const at = this.locate(s);
      if (at !== undefined && this.supports(at, n)) return at;
    }
    const i = this.backends.findIndex((b) => b.device.supportsOp(n));
    if (i < 0) throw new Error(`scheduler: no backend supports ${n.op} on ${n}`);
    return i;
  }

  private split(graph: Graph): { order: Graph; splits: Split[] } {
    this.assigned = new Map();
    for (const [t, i] of this.manual) this.assigned.set(t, i);
    // assign every computed node; inputs follow their first consumer
    for (const n of graph.nodes) {
      if (isViewOp(n.op)) continue;
      const b = this.choose(n);
      this.assigned.set(n, b);
      for (const s of [...n.src, ...(n.viewSrc ? [n.viewSrc] : [])]) {
        const root = s.viewSrc ?? s;
        if (!root.buffer && !this.assigned.has(root)) this.assigned.set(root, b);
      }
    }
    // cut into splits, inserting copies; a split's copies are made before any of its
    // nodes run, so in the allocation order they come first in their split too
    const splits: Split[] = [];
    const entries: Tensor[][] = [];
    const prelude: Tensor[] = [];
    const copies = new Map<string, Tensor>();
    let cur: Split | null = null;
    for (const n of graph.nodes) {
      if (isViewOp(n.op)) {
        (cur ? entries[entries.length - 1] : prelude).push(n);
        continue;
      }
      const b = this.assigned.get(n)!;
      if (!cur || cur.backend !== b) {
        cur = { backend: b, nodes: [], inputs: [] };
        splits.push(cur);
        entries.push([]);
      }
      n.src.forEach((s, j) => {
        const at = this.locate(s);
        const buf = bufferOf(s);
        const usable = at === b && (!buf || this.backends[b].device.supportsBufferType(buf.bufferType));
        // CPY's and SET_ROWS' destination is a source only by name: its memory is the result's
        const isOwnDestination = n.viewSrc !== null && (s.viewSrc ?? s) === n.viewSrc;
        if (usable || isOwnDestination) return;
        const key = `${s.id}:${b}`;
        let copy = copies.get(key);
        if (!copy) {
          copy = dupTensor(s, `${s.name || `#${s.id}`}#${this.backends[b].name}`);
          copy.src = [s]; // for the allocator: the copy keeps its source alive until made
          this.assigned.set(copy, b);
          copies.set(key, copy);
          cur!.inputs.push({ src: s, copy });
        }
        n.src[j] = copy;
      });
      cur.nodes.push(n);
      entries[entries.length - 1].push(n);
    }
    const order = new Graph();
    order.leafs.push(...graph.leafs);
    order.nodes.push(...prelude);
    splits.forEach((split, i) => {
      for (const { copy } of split.inputs) order.nodes.push(copy);
      order.nodes.push(...entries[i]);
    });
    return { order, splits };
  }
}
