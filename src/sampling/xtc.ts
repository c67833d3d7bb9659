// XTC, "exclude top choices" (llama.cpp's `xtc`): with the given probability (a seeded
// draw per step), remove every token at least as probable as `threshold` except the
// least probable of them, so a less obvious choice is made. Off when probability ≤ 0 or
// threshold > 0.5; keeps at least minKeep tokens.
import type { Candidates } from './candidates.js';
import { Mt19937, resolveSeed } from './rng.js';
import type { SamplingStep } from './step.js';

export class XtcSampler implements SamplingStep {
  readonly name = 'xtc';
  readonly probability: number;
  readonly threshold: number;
  /** The seed actually in use (random when `seed` is -1). */
  seedCur: number;
  private rng: Mt19937;

  constructor(
    probability: number,
    threshold: number,
    readonly minKeep = 0,
    readonly seed = -1,
  ) {
    this.probability = Math.fround(probability);
    this.threshold = Math.fround(threshold);
    this.seedCur = resolveSeed(seed);
    this.rng = new Mt19937(this.seedCur);
  }

  apply(c: Candidates): void {
    if (this.probability <= 0 || this.threshold > 0.5 || c.size < 2) return;
    if (this.rng.nextFloat() > this.probability) return;
    c.softmax(true);
    let last = 0;
    for (let i = 0; i < c.size; i++) {
      if (c.probs[i]! >= this.threshold) last = i;
      else break;
    }
    if (c.size - last >= this.minKeep && last > 0) c.dropFront(last);
  }

  reset(): void {
    this.seedCur = resolveSeed(this.seed);
    this.rng.seed(this.seedCur);
  }

  clone(): XtcSampler {
    const s = new XtcSampler(this.probability, this.threshold, this.minKeep, this.seed);
    s.seedCur = this.seedCur;
    s.rng = this.rng.clone();
    return s;
  }
}
