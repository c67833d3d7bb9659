// A chain from checked, complete settings (ResolvedSamplingParams), in llama.cpp's order
// (common_sampler_init):
//
//   logit-bias → penalties → dry → top-n-sigma → top-k → typical → top-p → min-p → xtc
//   → temp-ext → dist            (mirostat 1/2: logit-bias → temp → mirostat[-v2])
//
// The options themselves (names, types, ranges, defaults and their checks) are declared
// once, in src/generation/options.ts, which resolves them into these settings.

import { SamplerChain } from './chain.js';
import { DistSampler } from './dist.js';
import { type DryOptions, DrySampler, type DryVocab, dryBreakersFromStrings } from './dry.js';
import { SamplingError } from './errors.js';
import {
  type CompiledGrammar,
  compileGrammar,
  GrammarSampler,
  type GrammarSource,
  type GrammarVocab,
} from './grammar/index.js';
import { type LogitBias, LogitBiasSampler } from './logit-bias.js';
import { MinPSampler } from './min-p.js';
import { MirostatSampler } from './mirostat.js';
import { MirostatV2Sampler } from './mirostat-v2.js';
import { PenaltiesSampler } from './penalties.js';
import type { SamplingStep } from './step.js';
import { TempExtSampler, TempSampler } from './temp.js';
import { TopKSampler } from './top-k.js';
import { TopNSigmaSampler } from './top-n-sigma.js';
import { TopPSampler } from './top-p.js';
import { TypicalSampler } from './typical.js';
import { XtcSampler } from './xtc.js';

/** What the chain needs from a vocabulary (Vocab provides all of it). */
export interface SamplingVocab extends GrammarVocab, DryVocab {
  /** End-of-generation tokens (else found with isEog). */
  readonly eog?: ReadonlySet<number>;
}

/** The chain steps llama.cpp's `samplers` option may name. */
export type SamplerName =
  | 'penalties'
  | 'dry'
  | 'top_n_sigma'
  | 'top_k'
  | 'typ_p'
  | 'top_p'
  | 'min_p'
  | 'xtc'
  | 'temperature';

/** Every option, checked and with defaults filled in. */
export interface ResolvedSamplingParams {
  temperature: number;
  dynatemp_range: number;
  dynatemp_exponent: number;
  top_k: number;
  top_p: number;
  min_p: number;
  typical_p: number;
  top_n_sigma: number;
  xtc_probability: number;
  xtc_threshold: number;
  penalty_last_n: number;
  penalty_repeat: number;
  penalty_freq: number;
  penalty_present: number;
  dry_multiplier: number;
  dry_base: number;
  dry_allowed_length: number;
  dry_penalty_last_n: number;
  dry_sequence_breakers: string[];
  mirostat: 0 | 1 | 2;
  mirostat_tau: number;
  mirostat_eta: number;
  seed: number;
  logit_bias: LogitBias[];
  ignore_eos: boolean;
  grammar: string;
  json_schema: unknown;
  n_probs: number;
  post_sampling_probs: boolean;
  min_keep: number;
  samplers: SamplerName[];
  n_ctx: number | undefined;
}

export const DEFAULT_SAMPLERS: readonly SamplerName[] = [
  'penalties',
  'dry',
  'top_n_sigma',
  'top_k',
  'typ_p',
  'top_p',
  'min_p',
  'xtc',
  'temperature',
];

/** Names the `samplers` option accepts for each step. */
export const SAMPLER_NAMES: Readonly<Record<string, SamplerName>> = {
  penalties: 'penalties',
  dry: 'dry',
  top_n_sigma: 'top_n_sigma',
  'top-n-sigma': 'top_n_sigma',
  top_k: 'top_k',
  'top-k': 'top_k',
  typ_p: 'typ_p',
  'typ-p': 'typ_p',
  typical_p: 'typ_p',
  'typical-p': 'typ_p',
  typical: 'typ_p',
  typ: 'typ_p',
  top_p: 'top_p',
  'top-p': 'top_p',
  nucleus: 'top_p',
  min_p: 'min_p',
  'min-p': 'min_p',
  xtc: 'xtc',
  temperature: 'temperature',
  temp: 'temperature',
};

/** llama.cpp's one-letter names of the steps. */
export const SAMPLER_LETTERS: Readonly<Record<string, SamplerName>> = {
  e: 'penalties',
  d: 'dry',
  s: 'top_n_sigma',
  k: 'top_k',
  y: 'typ_p',
  p: 'top_p',
  m: 'min_p',
  x: 'xtc',
  t: 'temperature',
};

/** The end-of-generation tokens of a vocabulary, ascending. */
export function eogTokens(vocab: SamplingVocab): number[] {
  if (vocab.eog) return [...vocab.eog].sort((a, b) => a - b);
  const out: number[] = [];
  for (let id = 0; id < vocab.nTokens; id++) if (vocab.isEog(id)) out.push(id);
  return out;
}

/** The grammar options of sampling settings (checked by the option table already). */
export interface GrammarOptions {
  grammar?: string;
  json_schema?: unknown;
}

/** The grammar or JSON schema the options ask for, as compileGrammar takes it (undefined: none). */
export function grammarSource(p: GrammarOptions): GrammarSource | undefined {
  if (p.grammar !== undefined && p.grammar !== null && p.grammar !== '') return { grammar: p.grammar };
  if (p.json_schema !== undefined && p.json_schema !== null) return { jsonSchema: p.json_schema };
  return undefined;
}

/**
 * The grammar constraint the settings ask for (GBNF or JSON Schema) for a vocabulary,
 * from `compiled` (compiled on the untrusted-work worker) or compiled here; undefined
 * when there is none. Throws SamplingError naming the option (a grammar no token
 * sequence can satisfy included).
 */
export function grammarConstraint(
  r: GrammarOptions,
  vocab: SamplingVocab | undefined,
  compiled?: CompiledGrammar,
): GrammarSampler | undefined {
  const source = grammarSource(r);
  if (!source) return undefined;
  const option = 'grammar' in source ? 'grammar' : 'json_schema';
  const value = 'grammar' in source ? source.grammar : source.jsonSchema;
  if (!vocab) throw new SamplingError(option, value, 'a grammar needs a vocabulary');
  try {
    return GrammarSampler.fromCompiled(compiled ?? compileGrammar(source), vocab);
  } catch (e) {
    throw new SamplingError(option, value, (e as Error).message, { cause: e });
  }
}

function step(name: SamplerName, r: ResolvedSamplingParams, vocab: SamplingVocab | undefined): SamplingStep {
  const context = r.n_ctx ?? Infinity;
  switch (name) {
    case 'penalties':
      return new PenaltiesSampler(
        r.penalty_last_n === -1 ? context : r.penalty_last_n,
        r.penalty_repeat,
        r.penalty_freq,
        r.penalty_present,
      );
    case 'dry': {
      const o: DryOptions = {
        multiplier: r.dry_multiplier,
        base: r.dry_base,
        allowedLength: r.dry_allowed_length,
        penaltyLastN: r.dry_penalty_last_n,
        contextSize: context,
        breakers: new Map(),
      };
      const s = new DrySampler(o);
      if (!s.enabled) return s;
      if (!vocab)
        throw new SamplingError(
          'dry_multiplier',
          r.dry_multiplier,
          'DRY needs a vocabulary (for its sequence breakers)',
        );
      return new DrySampler({ ...o, breakers: dryBreakersFromStrings(vocab, r.dry_sequence_breakers) });
    }
    case 'top_n_sigma':
      return new TopNSigmaSampler(r.top_n_sigma);
    case 'top_k':
      return new TopKSampler(r.top_k);
    case 'typ_p':
      return new TypicalSampler(r.typical_p, r.min_keep);
    case 'top_p':
      return new TopPSampler(r.top_p, r.min_keep);
    case 'min_p':
      return new MinPSampler(r.min_p, r.min_keep);
    case 'xtc':
      return new XtcSampler(r.xtc_probability, r.xtc_threshold, r.min_keep, r.seed);
    case 'temperature':
      return new TempExtSampler(r.temperature, r.dynatemp_range, r.dynatemp_exponent);
  }
}

/** The steps of a chain for checked options, in llama.cpp's order. */
export function buildSteps(r: ResolvedSamplingParams, vocab?: SamplingVocab): SamplingStep[] {
  const steps: SamplingStep[] = [];
  if (r.logit_bias.length > 0) steps.push(new LogitBiasSampler(r.logit_bias));
  if (r.mirostat === 0) {
    for (const name of r.samplers) steps.push(step(name, r, vocab));
    steps.push(new DistSampler(r.seed));
  } else if (r.mirostat === 1) {
    steps.push(new TempSampler(r.temperature));
    steps.push(new MirostatSampler(vocab?.nTokens ?? 0, r.seed, r.mirostat_tau, r.mirostat_eta, 100));
  } else {
    steps.push(new TempSampler(r.temperature));
    steps.push(new MirostatV2Sampler(r.seed, r.mirostat_tau, r.mirostat_eta));
  }
  return steps;
}

/** A chain whose options are known (`params`): what createSamplingChain returns. */
export class SamplingChain extends SamplerChain {
  constructor(
    readonly params: ResolvedSamplingParams,
    steps: SamplingStep[],
    grammar: GrammarSampler | undefined,
  ) {
    super(steps, { grammar });
  }

  override clone(): SamplingChain {
    return new SamplingChain(
      this.params,
      this.steps.map((s) => s.clone()),
      this.grammar?.clone(),
    );
  }
}

/** A chain for checked settings, with its grammar constraint (grammarConstraint) if any. */
export function buildSamplingChain(
  r: ResolvedSamplingParams,
  vocab?: SamplingVocab,
  grammar?: GrammarSampler,
): SamplingChain {
  return new SamplingChain(r, buildSteps(r, vocab), grammar);
}
