// Mirostat 2.0 (llama.cpp's `mirostat-v2`): drop the tokens whose surprise (-log2 p)
// exceeds μ (keeping at least one), renormalize, draw, then move μ toward the target
// surprise τ by η times the error. μ starts at 2τ. It chooses the token itself.
import type { Candidates } from './candidates.js';
import { discreteIndex, Mt19937, resolveSeed } from './rng.js';
import type { SamplingStep } from './step.js';

const f = Math.fround;

export class MirostatV2Sampler implements SamplingStep {
  readonly name = 'mirostat-v2';
  readonly tau: number;
  readonly eta: number;
  mu: number;
  seedCur: number;
  private rng: Mt19937;

  constructor(
    readonly seed: number,
    tau: number,
    eta: number,
  ) {
    this.tau = f(tau);
    this.eta = f(eta);
    this.mu = f(2 * this.tau);
    this.seedCur = resolveSeed(seed);
    this.rng = new Mt19937(this.seedCur);
  }

  apply(c: Candidates): void {
    c.softmax(true);
    let keep = 0;
    while (keep < c.size && !(f(-f(Math.log2(c.probs[keep]!))) > this.mu)) keep++;
    c.size = Math.max(keep, 1);
    c.softmax(true);
    const idx = discreteIndex(c.probs, c.size, this.rng);
    c.selected = idx;
    const surprise = f(-f(Math.log2(c.probs[idx]!)));
    this.mu = f(this.mu - f(this.eta * f(surprise - this.tau)));
  }

  reset(): void {
    this.mu = f(2 * this.tau);
    this.seedCur = resolveSeed(this.seed);
    this.rng.seed(this.seedCur);
  }

  clone(): MirostatV2Sampler {
    const s = new MirostatV2Sampler(this.seed, this.tau, this.eta);
    s.mu = this.mu;
    s.seedCur = this.seedCur;
    s.rng = this.rng.clone();
    return s;
  }
}
