// Top-nσ (llama.cpp's `top-n-sigma`): drop (to -Infinity) every logit more than n
// standard deviations below the highest, the statistics taken over the finite logits;
// then softmax, sorted. n ≤ 0 does nothing.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

export class TopNSigmaSampler implements SamplingStep {
  readonly name = 'top-n-sigma';
  readonly n: number;

  constructor(n: number) {
    this.n = Math.fround(n);
  }

  apply(c: Candidates): void {
    if (this.n <= 0 || c.size <= 1) return;
    const l = c.logits;
    let max = l[0]!;
    let sum = 0;
    let count = 0;
    for (let i = 0; i < c.size; i++) {
      const v = l[i]!;
      if (v === -Infinity) continue;
      if (v > max) max = v;
      sum = Math.fround(sum + v);
      count++;
    }
    const mean = count > 0 ? Math.fround(sum / count) : 0;
    let acc = 0;
    for (let i = 0; i < c.size; i++) {
      const v = l[i]!;
      if (v === -Infinity) continue;
      const d = Math.fround(v - mean);
      acc = Math.fround(acc + d * d);
    }
    const std = count > 0 ? Math.fround(Math.sqrt(Math.fround(acc / count))) : 0;
    const cut = Math.fround(max - Math.fround(this.n * std));
    for (let i = 0; i < c.size; i++) if (l[i]! < cut) l[i] = -Infinity;
    c.softmax(true);
  }

  clone(): TopNSigmaSampler {
    return new TopNSigmaSampler(this.n);
  }
}
