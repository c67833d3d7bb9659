// Mirostat 1.0 (llama.cpp's `mirostat`): estimate the Zipf exponent ŝ from the m most
// probable tokens, choose k so that the expected surprise is μ, draw from the top k,
// then move μ toward the target surprise τ by η times the error. μ starts at 2τ. It
// chooses the token itself (the chain's last step).
import type { Candidates } from './candidates.js';
import { discreteIndex, Mt19937, resolveSeed } from './rng.js';
import type { SamplingStep } from './step.js';
import { topK } from './top-k.js';

const f = Math.fround;

/** C's (int) of a float as x86 computes it: out of range or NaN gives INT_MIN. */
export function floatToInt(x: number): number {
  return Number.isFinite(x) && x > -2147483649 && x < 2147483648 ? Math.trunc(x) : -2147483648;
}

export class MirostatSampler implements SamplingStep {
  readonly name = 'mirostat';
  readonly tau: number;
  readonly eta: number;
  /** The target surprise state, updated after every choice. */
  mu: number;
  seedCur: number;
  private rng: Mt19937;

  /** nVocab: the vocabulary size (0: the size of each logits row). */
  constructor(
    readonly nVocab: number,
    readonly seed: number,
    tau: number,
    eta: number,
    readonly m = 100,
  ) {
    this.tau = f(tau);
    this.eta = f(eta);
    this.mu = f(2 * this.tau);
    this.seedCur = resolveSeed(seed);
    this.rng = new Mt19937(this.seedCur);
  }

  apply(c: Candidates): void {
    c.softmax(true);
    const p = c.probs;
    let sumTiBi = 0;
    let sumTiSq = 0;
    for (let i = 0; i < this.m - 1 && i < c.size - 1; i++) {
      const t = f(Math.log(f(f(i + 2) / f(i + 1))));
      const b = f(Math.log(f(p[i]! / p[i + 1]!)));
      sumTiBi = f(sumTiBi + f(t * b));
      sumTiSq = f(sumTiSq + f(t * t));
    }
    const sHat = f(sumTiBi / sumTiSq);
    const epsilonHat = f(sHat - 1);
    const nVocab = this.nVocab > 0 ? this.nVocab : c.nVocab;
    const k = f(f(f(epsilonHat * f(2 ** this.mu)) / f(1 - f(f(nVocab) ** -epsilonHat))) ** f(1 / sHat));
    topK(c, Math.max(floatToInt(k), 1));
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

  clone(): MirostatSampler {
    const s = new MirostatSampler(this.nVocab, this.seed, this.tau, this.eta, this.m);
    s.mu = this.mu;
    s.seedCur = this.seedCur;
    s.rng = this.rng.clone();
    return s;
  }
}
