// A computation graph: the tensors reachable from the outputs, in topological order
// (every source before its consumers), split like ggml's cgraph into leafs (op NONE:
// weights, inputs, caches) and nodes (everything computed, views included).

import { Op, type Tensor, TensorFlag } from './tensor.js';

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
