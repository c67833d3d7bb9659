// Locally typical sampling (llama.cpp's `typical`): order tokens by how far their
// surprise (-ln p) is from the distribution's entropy and keep the closest ones until
// their probabilities add up to more than p (at least minKeep). p ≥ 1 keeps all. The
// result is in that order, so no longer sorted by logit.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

export class TypicalSampler implements SamplingStep {
  readonly name = 'typical';
  readonly p: number;
  private shifted = new Float32Array(0);
  private order = new Int32Array(0);

  constructor(
    p: number,
    readonly minKeep = 0,
  ) {
    this.p = Math.fround(p);
  }

  apply(c: Candidates): void {
    if (this.p >= 1) return;
    c.softmax(true);
    const n = c.size;
    const probs = c.probs;
    let entropy = 0;
    for (let i = 0; i < n; i++) {
      const p = probs[i]!;
      if (p > 0) entropy = Math.fround(entropy - Math.fround(p * Math.fround(Math.log(p))));
    }
    if (this.shifted.length < n) {
      this.shifted = new Float32Array(c.capacity);
      this.order = new Int32Array(c.capacity);
    }
    const shifted = this.shifted;
    for (let i = 0; i < n; i++) shifted[i] = Math.abs(Math.fround(-Math.fround(Math.log(probs[i]!)) - entropy));
    c.sortPositions(shifted, n, false, this.order);
    let sum = 0;
    let last = n;
    for (let i = 0; i < n; i++) {
      sum = Math.fround(sum + probs[this.order[i]!]!);
      if (sum > this.p && (this.minKeep === 0 || i >= this.minKeep - 1)) {
        last = i + 1;
        break;
      }
    }
    c.gather(this.order, last);
    c.sorted = false;
  }

  clone(): TypicalSampler {
    return new TypicalSampler(this.p, this.minKeep);
  }
}
