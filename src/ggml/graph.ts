// A computation graph: the tensors reachable from the outputs, in topological order
// (every source before its consumers), split like ggml's cgraph into leafs (op NONE:
// weights, inputs, caches) and nodes (everything computed, views included).

import { isViewOp, Op, type Tensor, TensorFlag } from './tensor.js';

export class Graph {
  readonly nodes: Tensor[] = [];
  readonly leafs: Tensor[] = [];
  /**
   * Set by whoever owns the graph (the scheduler, for the graphs of its splits) when its
   * nodes, their sources and their memory stay as they are for as long as this object is
   * evaluated again: backends may then keep what they derive from it (encoded jobs).
   */
  reusable = false;
  private readonly seen = new Set<Tensor>();

  /** Add `t` and everything it depends on (ggml_build_forward_expand). */
  expand(t: Tensor): this {
    // iterative depth-first post-order, sources in order, so deep graphs do not overflow the stack
    const stack: { t: Tensor; i: number }[] = [{ t, i: 0 }];
    if (this.seen.has(t)) return this;
    this.seen.add(t);
    while (stack.length > 0) {
      const top = stack[stack.length - 1];
      if (top.i < top.t.src.length) {
        const s = top.t.src[top.i++];
        if (!this.seen.has(s)) {
          this.seen.add(s);
          stack.push({ t: s, i: 0 });
        }
        continue;
      }
      stack.pop();
      if (top.t.op === Op.NONE) this.leafs.push(top.t);
      else this.nodes.push(top.t);
    }
    return this;
  }

  has(t: Tensor): boolean {
    return this.seen.has(t);
  }

  /** The node or leaf with this name (first match), for inspection and tests. */
  byName(name: string): Tensor | undefined {
    return this.nodes.find((t) => t.name === name) ?? this.leafs.find((t) => t.name === name);
  }
}

/** Build a graph computing `outputs`, which are flagged OUTPUT so no allocator reuses them. */
export function buildGraph(...outputs: Tensor[]): Graph {
  const g = new Graph();
  for (const t of outputs) {
    t.setFlag(TensorFlag.OUTPUT);
    g.expand(t);
  }
  return g;
}

/**
 * Reorder `g.nodes` so that independent nodes are adjacent: each node moves to the
 * earliest level its inputs allow (one more than its latest computed source), stably.
 * Backends that run a graph as steps with barriers (the cpu device) can then run the
 * nodes of one level together (the q, k and v products of a layer; its gate and up
 * products). Nodes that write into memory they do not own (SET_ROWS into a cache, a
 * view written in place) stay ordered after every earlier node touching that memory,
 * and those after them. Call before allocating: the allocator's reuse follows the order.
 */
export function levelNodes(g: Graph): void {
  const level = new Map<Tensor, number>();
  // per root tensor (leaf or node) whose memory is written in place: the last level writing it, touching it
  const wrote = new Map<Tensor, number>();
  const touched = new Map<Tensor, number>();
  const rootOf = (t: Tensor) => t.viewSrc ?? t;
  const levelOf = (t: Tensor) => level.get(t) ?? 0;
  for (const n of g.nodes) {
    let l = 0;
    if (isViewOp(n.op)) {
      l = levelOf(n.src[0]);
    } else {
      for (const s of n.src) {
        l = Math.max(l, levelOf(s) + (s.op === Op.NONE ? 0 : 1));
        l = Math.max(l, (wrote.get(rootOf(s)) ?? -1) + 1);
      }
      const inPlace = n.viewSrc !== null;
      if (inPlace) l = Math.max(l, (touched.get(rootOf(n)) ?? -1) + 1);
      for (const s of n.src) touched.set(rootOf(s), Math.max(touched.get(rootOf(s)) ?? -1, l));
      if (inPlace) {
        const r = rootOf(n);
        wrote.set(r, Math.max(wrote.get(r) ?? -1, l));
        touched.set(r, Math.max(touched.get(r) ?? -1, l));
      }
    }
    level.set(n, l);
  }
  const order = g.nodes.map((n, i) => ({ n, i, l: levelOf(n) }));
  order.sort((a, b) => a.l - b.l || a.i - b.i);
  for (let i = 0; i < order.length; i++) g.nodes[i] = order[i].n;
}
