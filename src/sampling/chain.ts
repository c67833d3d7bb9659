// The sampling chain (llama.cpp's common_sampler): steps applied in order to the
// candidates of one logits row, the last of which chooses; an optional grammar checked
// the way llama.cpp does it: sample first, and only if the grammar rejects the chosen
// token, filter the whole row by the grammar and sample again. Same distribution as
// filtering first, but the costly whole-vocabulary filter runs only on rejections.
//
//   const chain = createSamplingChain({ temperature: 0.7, seed: 42 }, vocab);
//   const id = chain.choose(logits);   // pick
//   chain.accept(id);                  // then tell every step (penalties, DRY, grammar…)
//
// `sample(logits)` does both.
import { Candidates } from './candidates.js';
import { SamplingError } from './errors.js';
import type { GrammarSampler } from './grammar/index.js';
import { DEFAULT_SEED } from './rng.js';
import type { SamplingStep } from './step.js';

export interface SamplerChainOptions {
  /** Grammar constraint (checked after sampling, or applied first with grammarFirst). */
  grammar?: GrammarSampler;
  /** Filter by the grammar before the steps every time (llama.cpp's grammar_first). */
  grammarFirst?: boolean;
}

export class SamplerChain {
  readonly name = 'chain';
  readonly steps: SamplingStep[];
  grammar: GrammarSampler | undefined;
  grammarFirst: boolean;
  /** The candidates of the last choice (after the steps; probabilities from the final draw). */
  readonly candidates = new Candidates();
  /** Steps run on the last choice (grammar rejections make it 2). */
  passes = 0;

  constructor(steps: SamplingStep[], opts: SamplerChainOptions = {}) {
    this.steps = steps;
    this.grammar = opts.grammar;
    this.grammarFirst = opts.grammarFirst ?? false;
  }

  /** Step names in order, e.g. "logits -> penalties -> dry -> … -> dist" (common_sampler_print). */
  describe(): string {
    return ['logits', ...this.steps.map((s) => s.name)].join(' -> ');
  }

  private run(logits: ArrayLike<number>, withGrammar: boolean): number {
    const c = this.candidates;
    c.fill(logits);
    if (withGrammar) this.grammar!.apply(c);
    for (const step of this.steps) step.apply(c);
    this.passes++;
    if (c.selected < 0 || c.selected >= c.size) {
      throw new SamplingError(
        'samplers',
        this.describe(),
        'the chain chose no token (it needs a final dist, greedy or mirostat step)',
      );
    }
    return c.ids[c.selected]!;
  }

  /** Choose the next token from a logits row [nVocab]; does not accept it. */
  choose(logits: ArrayLike<number>): number {
    this.passes = 0;
    const g = this.grammar;
    if (!g) return this.run(logits, false);
    if (this.grammarFirst) return this.run(logits, true);
    const id = this.run(logits, false);
    if (g.allows(id)) return id;
    return this.run(logits, true);
  }

  /**
   * A token joins the context: penalties, DRY and the grammar follow it. Prompt tokens
   * may be accepted too (llama.cpp's server does, without the grammar).
   */
  accept(token: number, acceptGrammar = true): void {
    if (acceptGrammar) this.grammar?.accept(token);
    for (const step of this.steps) step.accept?.(token);
  }

  /** Choose and accept (llama_sampler_sample). */
  sample(logits: Float32Array): number {
    const id = this.choose(logits);
    this.accept(id);
    return id;
  }

  /** Forget the history (penalties, DRY, mirostat μ, grammar position) and reseed. */
  reset(): void {
    this.grammar?.reset();
    for (const step of this.steps) step.reset?.();
  }

  /** An independent copy in the same state. */
  clone(): SamplerChain {
    return new SamplerChain(
      this.steps.map((s) => s.clone()),
      { grammar: this.grammar?.clone(), grammarFirst: this.grammarFirst },
    );
  }

  /** The seed in use (the last seeded step's, as llama_sampler_get_seed), or DEFAULT_SEED. */
  get seed(): number {
    for (let i = this.steps.length - 1; i >= 0; i--) {
      const s = this.steps[i] as SamplingStep & { seedCur?: number };
      if (s.seedCur !== undefined && s.name !== 'xtc') return s.seedCur;
    }
    return DEFAULT_SEED;
  }

  /** The step of a given name (`chain.step('penalties')`). */
  step<T extends SamplingStep = SamplingStep>(name: string): T | undefined {
    return this.steps.find((s) => s.name === name) as T | undefined;
  }
}
