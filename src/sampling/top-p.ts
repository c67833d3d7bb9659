// Top-p, nucleus sampling (llama.cpp's `top-p`): keep the smallest set of most probable
// tokens whose probabilities add up to at least p (and at least minKeep tokens). p ≥ 1
// keeps all. An unsorted long list is first searched among its 256 best tokens, and
// sorted in full only when those do not reach p.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

const FIRST_GUESS = 256;

export class TopPSampler implements SamplingStep {
  readonly name = 'top-p';
  readonly p: number;

  constructor(
    p: number,
    readonly minKeep = 0,
  ) {
    this.p = Math.fround(p);
  }

  apply(c: Candidates): void {
    if (this.p >= 1) return;
    c.softmax(false);
    if (c.sorted) {
      c.size = this.cutoff(c.probs, null, c.size, c.size);
      return;
    }
    let k = c.size > 1024 ? FIRST_GUESS : c.size;
    let order = c.topPositions(k);
    let last = this.cutoff(c.probs, order, k, c.size);
    if (last < 0) {
      k = c.size;
      order = c.topPositions(k);
      last = this.cutoff(c.probs, order, k, c.size);
    }
    c.gather(order, last);
    c.sorted = true;
  }

  /**
   * How many of the best entries (in `order`, or in place) to keep; -1 when the first
   * `available` entries do not reach p but more exist.
   */
  private cutoff(probs: Float32Array, order: Int32Array | null, available: number, size: number): number {
    let sum = 0;
    for (let i = 0; i < available; i++) {
      sum = Math.fround(sum + probs[order ? order[i]! : i]!);
      if (sum >= this.p && i + 1 >= this.minKeep) return i + 1;
    }
    return available < size ? -1 : size;
  }

  clone(): TopPSampler {
    return new TopPSampler(this.p, this.minKeep);
  }
}
