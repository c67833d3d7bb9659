// The final draw (llama.cpp's `dist`): softmax over the candidates left and one seeded
// draw from it; the probabilities are left normalized for n_probs. Seed -1 draws a
// random seed (again on reset); the same seed gives the same choices.
import type { Candidates } from './candidates.js';
import { SamplingError } from './errors.js';
import { Mt19937, resolveSeed } from './rng.js';
import type { SamplingStep } from './step.js';

export class DistSampler implements SamplingStep {
  readonly name = 'dist';
  /** The seed actually in use (random when `seed` is -1). */
  seedCur: number;
  private rng: Mt19937;

  constructor(readonly seed = -1) {
    this.seedCur = resolveSeed(seed);
    this.rng = new Mt19937(this.seedCur);
  }

  apply(c: Candidates): void {
    const n = c.size;
    if (n === 0) {
      c.selected = -1;
      return;
    }
    c.selected = 0;
    if (n === 1) {
      c.probs[0] = 1;
      return;
    }
    const max = c.maxLogit();
    if (max === -Infinity || Number.isNaN(max)) {
      throw new SamplingError('candidates', max, 'no token is left to sample (every logit is -Infinity or NaN)');
    }
    const l = c.logits;
    const p = c.probs;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const e = Math.fround(Math.exp(Math.fround(l[i]! - max)));
      p[i] = e;
      sum += e;
    }
    const target = sum * this.rng.nextDouble();
    let run = 0;
    let found = false;
    for (let i = 0; i < n; i++) {
      if (!found) {
        run += p[i]!;
        // a zero-probability token is never chosen, even on a draw of exactly 0
        if (run >= target && p[i]! > 0) {
          c.selected = i;
          found = true;
        }
      }
      p[i] = p[i]! / sum;
    }
    if (!found) c.selected = n - 1;
  }

  reset(): void {
    this.seedCur = resolveSeed(this.seed);
    this.rng.seed(this.seedCur);
  }

  clone(): DistSampler {
    const s = new DistSampler(this.seed);
    s.seedCur = this.seedCur;
    s.rng = this.rng.clone();
    return s;
  }
}
