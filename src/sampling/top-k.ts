// Top-k (llama.cpp's `top-k`): keep the k highest logits, sorted; k ≤ 0 keeps all. An
// unsorted list is partially selected (a heap for small k), never fully sorted.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

/** Keep the top k (llama.cpp's top_k_impl; mirostat uses it too). */
export function topK(c: Candidates, k: number): void {
  if (k <= 0) return;
  k = Math.min(k, c.size);
  if (!c.sorted) c.sortTop(k);
  c.size = k;
}

export class TopKSampler implements SamplingStep {
  readonly name = 'top-k';
  constructor(readonly k: number) {}

  apply(c: Candidates): void {
    topK(c, this.k);
  }

  clone(): TopKSampler {
    return new TopKSampler(this.k);
  }
}
