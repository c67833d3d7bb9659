// Repetition penalties (llama.cpp's `penalties`) over the last `lastN` accepted tokens:
// a token seen c > 0 times has its logit divided by `repeat` when positive, multiplied
// by it when ≤ 0, then lowered by c·freq + present. lastN 0 (or a neutral setting) does
// nothing.
import type { Candidates } from './candidates.js';
import { TokenHistory } from './history.js';
import type { SamplingStep } from './step.js';

export class PenaltiesSampler implements SamplingStep {
  readonly name = 'penalties';
  readonly lastN: number;
  readonly repeat: number;
  readonly freq: number;
  readonly present: number;
  private history: TokenHistory;
  private counts = new Map<number, number>();

  /** lastN: a count (negative = 0), or Infinity for every accepted token. */
  constructor(lastN: number, repeat: number, freq: number, present: number) {
    this.lastN = Math.max(lastN, 0);
    this.repeat = Math.fround(repeat);
    this.freq = Math.fround(freq);
    this.present = Math.fround(present);
    this.history = new TokenHistory(this.lastN);
  }

  accept(token: number): void {
    if (this.lastN === 0) return;
    this.counts.set(token, (this.counts.get(token) ?? 0) + 1);
    const old = this.history.push(token);
    if (old >= 0) this.forget(old);
  }

  private forget(token: number): void {
    const n = (this.counts.get(token) ?? 0) - 1;
    if (n <= 0) this.counts.delete(token);
    else this.counts.set(token, n);
  }

  private penalize(c: Candidates, i: number, count: number): void {
    let l = c.logits[i]!;
    l = l <= 0 ? Math.fround(l * this.repeat) : Math.fround(l / this.repeat);
    c.logits[i] = l - Math.fround(Math.fround(count * this.freq) + (count > 0 ? this.present : 0));
  }

  apply(c: Candidates): void {
    if (this.lastN === 0 || (this.repeat === 1 && this.freq === 0 && this.present === 0)) return;
    if (c.identity) {
      for (const [token, count] of this.counts) if (token < c.size) this.penalize(c, token, count);
    } else {
      for (let i = 0; i < c.size; i++) {
        const count = this.counts.get(c.ids[i]!);
        if (count !== undefined) this.penalize(c, i, count);
      }
    }
    c.sorted = false;
  }

  reset(): void {
    this.history.clear();
    this.counts.clear();
  }

  /** Tokens in the window, oldest first. */
  get window(): number[] {
    return this.history.toArray();
  }

  clone(): PenaltiesSampler {
    const s = new PenaltiesSampler(this.lastN, this.repeat, this.freq, this.present);
    s.history = this.history.clone();
    s.counts = new Map(this.counts);
    return s;
  }
}
