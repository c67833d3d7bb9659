// Temperature (llama.cpp's `temp` and `temp-ext`): logits divided by t; t ≤ 0 keeps only
// the highest logit (the rest become -Infinity), so the final draw is greedy. With a
// range δ > 0 (dynamic temperature), t is chosen per step between max(0, t - δ) and
// t + δ by the normalized entropy of the distribution raised to `exponent`.
import type { Candidates } from './candidates.js';
import type { SamplingStep } from './step.js';

/** Divide by t, or keep only the best for t ≤ 0 (llama.cpp's temp_impl). */
export function applyTemperature(c: Candidates, t: number): void {
  const l = c.logits;
  if (t <= 0) {
    let best = 0;
    let max = l[0]!;
    for (let i = 1; i < c.size; i++) {
      if (l[i]! > max) {
        l[best] = -Infinity;
        best = i;
        max = l[i]!;
      } else {
        l[i] = -Infinity;
      }
    }
    return;
  }
  for (let i = 0; i < c.size; i++) l[i] = l[i]! / t;
}

export class TempSampler implements SamplingStep {
  readonly name = 'temp';
  readonly temp: number;

  constructor(temp: number) {
    this.temp = Math.fround(temp);
  }

  apply(c: Candidates): void {
    applyTemperature(c, this.temp);
  }

  clone(): TempSampler {
    return new TempSampler(this.temp);
  }
}

export class TempExtSampler implements SamplingStep {
  readonly name = 'temp-ext';
  readonly temp: number;
  readonly delta: number;
  readonly exponent: number;

  constructor(temp: number, delta = 0, exponent = 1) {
    this.temp = Math.fround(temp);
    this.delta = Math.fround(delta);
    this.exponent = Math.fround(exponent);
  }

  apply(c: Candidates): void {
    if (!(this.delta > 0)) {
      applyTemperature(c, this.temp);
      return;
    }
    const minTemp = Math.max(0, Math.fround(this.temp - this.delta));
    const maxTemp = Math.fround(this.temp + this.delta);
    const n = c.size;
    if (n <= 1) return;
    const maxEntropy = Math.fround(-Math.fround(Math.log(Math.fround(1 / n))));
    c.softmax(true);
    let entropy = 0;
    for (let i = 0; i < n; i++) {
      const p = c.probs[i]!;
      if (p > 0) entropy = Math.fround(entropy - Math.fround(p * Math.fround(Math.log(p))));
    }
    const normalized = Math.fround(entropy / maxEntropy);
    const dynTemp = Math.fround(
      minTemp + Math.fround((maxTemp - minTemp) * Math.fround(Math.fround(normalized) ** this.exponent)),
    );
    applyTemperature(c, dynTemp);
    // probabilities again, in double precision
    const max = c.logits[0]!;
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const p = Math.exp(c.logits[i]! - max);
      c.probs[i] = p;
      sum += p;
    }
    for (let i = 0; i < n; i++) c.probs[i] = c.probs[i]! / sum;
  }

  clone(): TempExtSampler {
    return new TempExtSampler(this.temp, this.delta, this.exponent);
  }
}
