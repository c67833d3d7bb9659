// Sampling options (llama.node / llama.cpp server names) → a checked, complete set →
// a chain in llama.cpp's order (common_sampler_init):
//
//   logit-bias → penalties → dry → top-n-sigma → top-k → typical → top-p → min-p → xtc
//   → temp-ext → dist            (mirostat 1/2: logit-bias → temp → mirostat[-v2])
//
// Defaults are llama.cpp's common_params_sampling. Every bad value is a SamplingError
// naming the option and the value.

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

/** [token id or text, bias or false (= ban)] pairs, or { "id" | "text": bias | false }. */
export type LogitBiasOption = [number | string, number | boolean][] | Record<string, number | boolean>;

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

export interface SamplingParams {
  /** ≤ 0: greedy. Default 0.8. */
  temperature?: number;
  /** Dynamic temperature: ± range around `temperature` by entropy. Default 0 (off). */
  dynatemp_range?: number;
  dynatemp_exponent?: number;
  /** ≤ 0 (0 or -1): off. Default 40. */
  top_k?: number;
  /** [0, 1]; 1: off. Default 0.95. */
  top_p?: number;
  /** [0, 1]; 0: off. Default 0.05. */
  min_p?: number;
  /** [0, 1]; 1: off. Default 1. `typ_p` is the same. */
  typical_p?: number;
  typ_p?: number;
  /** ≤ 0: off. Default -1. */
  top_n_sigma?: number;
  /** [0, 1]; 0: off. Default 0. */
  xtc_probability?: number;
  /** [0, 1]; above 0.5: off. Default 0.1. */
  xtc_threshold?: number;
  /** Tokens the penalties look back over; 0: off; -1: the context (n_ctx). Default 64. */
  penalty_last_n?: number;
  /** > 0; 1: off. Default 1. */
  penalty_repeat?: number;
  penalty_freq?: number;
  penalty_present?: number;
  /** llama.cpp server names of the same four. */
  repeat_last_n?: number;
  repeat_penalty?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  /** ≥ 0; 0: off. Default 0. */
  dry_multiplier?: number;
  /** Default 1.75 (values below 1 fall back to it, as llama.cpp's server does). */
  dry_base?: number;
  dry_allowed_length?: number;
  /** 0: off; -1: the context (n_ctx). Default -1. */
  dry_penalty_last_n?: number;
  /** Default ["\n", ":", "\"", "*"]. */
  dry_sequence_breakers?: string[];
  /** 0 (off), 1 or 2. */
  mirostat?: number;
  mirostat_tau?: number;
  mirostat_eta?: number;
  /** Unsigned 32-bit; -1 (or 0xFFFFFFFF, or absent): random. */
  seed?: number;
  logit_bias?: LogitBiasOption;
  /** Ban end-of-generation tokens. */
  ignore_eos?: boolean;
  /** GBNF grammar. */
  grammar?: string;
  grammar_lazy?: boolean;
  /** JSON Schema (object, or its JSON text). */
  json_schema?: unknown;
  /** Top-N probabilities reported per generated token. Default 0. */
  n_probs?: number;
  /** Report probabilities after the chain instead of the raw distribution. Default false. */
  post_sampling_probs?: boolean;
  /** Tokens the truncating samplers always keep. Default 0. */
  min_keep?: number;
  /** Step order (names or llama.cpp's letters "edskypmxt"). */
  samplers?: readonly string[] | string;
  /** Context size: what -1 means for penalty_last_n and dry_penalty_last_n. */
  n_ctx?: number;
}

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

/** llama.cpp's common_params_sampling defaults. */
export const SAMPLING_DEFAULTS: Readonly<ResolvedSamplingParams> = Object.freeze({
  temperature: 0.8,
  dynatemp_range: 0,
  dynatemp_exponent: 1,
  top_k: 40,
  top_p: 0.95,
  min_p: 0.05,
  typical_p: 1,
  top_n_sigma: -1,
  xtc_probability: 0,
  xtc_threshold: 0.1,
  penalty_last_n: 64,
  penalty_repeat: 1,
  penalty_freq: 0,
  penalty_present: 0,
  dry_multiplier: 0,
  dry_base: 1.75,
  dry_allowed_length: 2,
  dry_penalty_last_n: -1,
  dry_sequence_breakers: ['\n', ':', '"', '*'],
  mirostat: 0,
  mirostat_tau: 5,
  mirostat_eta: 0.1,
  seed: -1,
  logit_bias: [],
  ignore_eos: false,
  grammar: '',
  json_schema: undefined,
  n_probs: 0,
  post_sampling_probs: false,
  min_keep: 0,
  samplers: [...DEFAULT_SAMPLERS],
  n_ctx: undefined,
});

const SAMPLER_NAMES: Record<string, SamplerName> = {
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

const SAMPLER_LETTERS: Record<string, SamplerName> = {
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

type Check = { min?: number; max?: number; int?: boolean; above?: number; allowNegInf?: boolean };

function number(name: string, value: unknown, def: number, check: Check = {}): number {
  if (value === undefined || value === null) return def;
  if (typeof value !== 'number' || Number.isNaN(value)) throw new SamplingError(name, value, 'must be a number');
  if (!Number.isFinite(value)) throw new SamplingError(name, value, 'must be finite');
  if (check.int && !Number.isInteger(value)) throw new SamplingError(name, value, 'must be an integer');
  if (check.min !== undefined && value < check.min)
    throw new SamplingError(name, value, `must be at least ${check.min}`);
  if (check.max !== undefined && value > check.max)
    throw new SamplingError(name, value, `must be at most ${check.max}`);
  if (check.above !== undefined && !(value > check.above)) {
    throw new SamplingError(name, value, `must be greater than ${check.above}`);
  }
  return value;
}

function boolean(name: string, value: unknown, def: boolean): boolean {
  if (value === undefined || value === null) return def;
  if (typeof value !== 'boolean') throw new SamplingError(name, value, 'must be true or false');
  return value;
}

/** The first of several names for one option that is set (llama.node name first). */
function either(p: Record<string, unknown>, ...names: string[]): [string, unknown] {
  for (const n of names) if (p[n] !== undefined && p[n] !== null) return [n, p[n]];
  return [names[0]!, undefined];
}

function samplerOrder(value: unknown): SamplerName[] {
  if (value === undefined || value === null) return [...DEFAULT_SAMPLERS];
  const out: SamplerName[] = [];
  if (typeof value === 'string') {
    for (const ch of value) {
      const s = SAMPLER_LETTERS[ch];
      if (!s) throw new SamplingError('samplers', value, `unknown sampler letter '${ch}' (known: edskypmxt)`);
      out.push(s);
    }
    return out;
  }
  if (!Array.isArray(value))
    throw new SamplingError('samplers', value, 'must be an array of sampler names or a string of letters');
  for (const name of value) {
    const s = typeof name === 'string' ? SAMPLER_NAMES[name] : undefined;
    if (!s) {
      throw new SamplingError(
        'samplers',
        value,
        `unknown sampler ${JSON.stringify(name)} (known: ${DEFAULT_SAMPLERS.join(', ')})`,
      );
    }
    out.push(s);
  }
  return out;
}

function biasValue(value: unknown, option: unknown): number {
  if (value === false) return -Infinity;
  if (typeof value === 'number' && (Number.isFinite(value) || value === -Infinity)) return value;
  throw new SamplingError('logit_bias', option, `bias ${String(value)} must be a finite number, -Infinity or false`);
}

function biasTokens(key: number | string, option: unknown, vocab: SamplingVocab | undefined): number[] {
  if (typeof key === 'number') {
    if (!Number.isInteger(key) || key < 0 || (vocab && key >= vocab.nTokens)) {
      throw new SamplingError(
        'logit_bias',
        option,
        `token ${key} is not a token id${vocab ? ` (0..${vocab.nTokens - 1})` : ''}`,
      );
    }
    return [key];
  }
  if (!vocab) throw new SamplingError('logit_bias', option, 'biasing text needs a vocabulary');
  return vocab.encode(key, { addSpecial: false, parseSpecial: false });
}

function logitBias(value: unknown, vocab: SamplingVocab | undefined): LogitBias[] {
  if (value === undefined || value === null) return [];
  const out: LogitBias[] = [];
  if (Array.isArray(value)) {
    for (const el of value) {
      if (!Array.isArray(el) || el.length !== 2 || (typeof el[0] !== 'number' && typeof el[0] !== 'string')) {
        throw new SamplingError('logit_bias', value, 'entries must be [token id or text, bias] pairs');
      }
      const bias = biasValue(el[1], value);
      for (const token of biasTokens(el[0], value, vocab)) out.push({ token, bias });
    }
    return out;
  }
  if (typeof value === 'object') {
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      const bias = biasValue(v, value);
      const id = /^\s*[+-]?\d+$/.test(key) ? Number(key) : key;
      for (const token of biasTokens(id, value, vocab)) out.push({ token, bias });
    }
    return out;
  }
  throw new SamplingError('logit_bias', value, 'must be an array of [token, bias] pairs or an object');
}

function eogTokens(vocab: SamplingVocab): number[] {
  if (vocab.eog) return [...vocab.eog].sort((a, b) => a - b);
  const out: number[] = [];
  for (let id = 0; id < vocab.nTokens; id++) if (vocab.isEog(id)) out.push(id);
  return out;
}

/** Check options and fill in llama.cpp's defaults. Throws SamplingError. */
export function resolveSamplingParams(params: SamplingParams = {}, vocab?: SamplingVocab): ResolvedSamplingParams {
  if (typeof params !== 'object' || params === null) throw new SamplingError('params', params, 'must be an object');
  const p = params as Record<string, unknown>;
  const d = SAMPLING_DEFAULTS;
  const n_ctx = p.n_ctx === undefined ? undefined : number('n_ctx', p.n_ctx, 0, { int: true, min: 1 });

  const topK = number('top_k', p.top_k, d.top_k, { int: true, min: -1 });
  const [typName, typValue] = either(p, 'typical_p', 'typ_p');
  const [lastNName, lastNValue] = either(p, 'penalty_last_n', 'repeat_last_n');
  const [repName, repValue] = either(p, 'penalty_repeat', 'repeat_penalty');
  const [freqName, freqValue] = either(p, 'penalty_freq', 'frequency_penalty');
  const [presName, presValue] = either(p, 'penalty_present', 'presence_penalty');

  const mirostat = number('mirostat', p.mirostat, d.mirostat, { int: true });
  if (mirostat !== 0 && mirostat !== 1 && mirostat !== 2) {
    throw new SamplingError('mirostat', p.mirostat, 'must be 0 (off), 1 or 2');
  }

  let seed = d.seed;
  if (p.seed !== undefined && p.seed !== null) {
    seed = number('seed', p.seed, d.seed, { int: true, min: -1, max: 0xffffffff });
  }

  let breakers = d.dry_sequence_breakers;
  if (p.dry_sequence_breakers !== undefined && p.dry_sequence_breakers !== null) {
    const b = p.dry_sequence_breakers;
    if (!Array.isArray(b) || b.length === 0 || !b.every((s) => typeof s === 'string')) {
      throw new SamplingError('dry_sequence_breakers', b, 'must be a non-empty array of strings');
    }
    breakers = [...b];
  }

  let dryBase = number('dry_base', p.dry_base, d.dry_base);
  if (dryBase < 1) dryBase = d.dry_base;

  const { grammar, schema } = grammarOptions(p);

  const bias = logitBias(p.logit_bias, vocab);
  const ignoreEos = boolean('ignore_eos', p.ignore_eos, d.ignore_eos);
  if (ignoreEos) {
    if (!vocab)
      throw new SamplingError('ignore_eos', true, 'needs a vocabulary (to know the end-of-generation tokens)');
    for (const token of eogTokens(vocab)) bias.push({ token, bias: -Infinity });
  }

  return {
    temperature: number('temperature', p.temperature, d.temperature),
    dynatemp_range: number('dynatemp_range', p.dynatemp_range, d.dynatemp_range, { min: 0 }),
    dynatemp_exponent: number('dynatemp_exponent', p.dynatemp_exponent, d.dynatemp_exponent),
    top_k: topK,
    top_p: number('top_p', p.top_p, d.top_p, { min: 0, max: 1 }),
    min_p: number('min_p', p.min_p, d.min_p, { min: 0, max: 1 }),
    typical_p: number(typName, typValue, d.typical_p, { min: 0, max: 1 }),
    top_n_sigma: number('top_n_sigma', p.top_n_sigma, d.top_n_sigma),
    xtc_probability: number('xtc_probability', p.xtc_probability, d.xtc_probability, { min: 0, max: 1 }),
    xtc_threshold: number('xtc_threshold', p.xtc_threshold, d.xtc_threshold, { min: 0, max: 1 }),
    penalty_last_n: number(lastNName, lastNValue, d.penalty_last_n, { int: true, min: -1 }),
    penalty_repeat: number(repName, repValue, d.penalty_repeat, { above: 0 }),
    penalty_freq: number(freqName, freqValue, d.penalty_freq),
    penalty_present: number(presName, presValue, d.penalty_present),
    dry_multiplier: number('dry_multiplier', p.dry_multiplier, d.dry_multiplier, { min: 0 }),
    dry_base: dryBase,
    dry_allowed_length: number('dry_allowed_length', p.dry_allowed_length, d.dry_allowed_length, { int: true, min: 0 }),
    dry_penalty_last_n: number('dry_penalty_last_n', p.dry_penalty_last_n, d.dry_penalty_last_n, {
      int: true,
      min: -1,
    }),
    dry_sequence_breakers: breakers,
    mirostat: mirostat as 0 | 1 | 2,
    mirostat_tau: number('mirostat_tau', p.mirostat_tau, d.mirostat_tau, { min: 0 }),
    mirostat_eta: number('mirostat_eta', p.mirostat_eta, d.mirostat_eta, { min: 0 }),
    seed: seed >>> 0,
    logit_bias: bias,
    ignore_eos: ignoreEos,
    grammar,
    json_schema: schema,
    n_probs: number('n_probs', p.n_probs, d.n_probs, { int: true, min: 0 }),
    post_sampling_probs: boolean('post_sampling_probs', p.post_sampling_probs, d.post_sampling_probs),
    min_keep: number('min_keep', p.min_keep, d.min_keep, { int: true, min: 0 }),
    samplers: samplerOrder(p.samplers),
    n_ctx,
  };
}

function grammarOptions(p: SamplingParams): { grammar: string; schema: unknown } {
  const grammar = p.grammar ?? '';
  if (typeof grammar !== 'string') throw new SamplingError('grammar', grammar, 'must be GBNF text');
  const schema = p.json_schema ?? undefined;
  if (schema !== undefined && grammar !== '') {
    throw new SamplingError('json_schema', schema, 'either json_schema or grammar can be given, not both');
  }
  if (boolean('grammar_lazy', p.grammar_lazy, false)) {
    throw new SamplingError(
      'grammar_lazy',
      p.grammar_lazy,
      'lazy grammars (triggered by words or tokens) are not supported',
    );
  }
  return { grammar, schema };
}

/**
 * The grammar or JSON schema options ask for, as compileGrammar takes it (undefined:
 * none). Throws SamplingError for bad grammar options; checks nothing else.
 */
export function grammarSource(p: SamplingParams | ResolvedSamplingParams): GrammarSource | undefined {
  const { grammar, schema } = grammarOptions(p as SamplingParams);
  if (grammar !== '') return { grammar };
  if (schema !== undefined) return { jsonSchema: schema };
  return undefined;
}

function grammarSampler(
  r: ResolvedSamplingParams,
  vocab: SamplingVocab | undefined,
  compiled: CompiledGrammar | undefined,
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

/**
 * A sampling chain from llama.node-style options, with llama.cpp's defaults and order.
 * `vocab` is needed for grammars, JSON schemas, DRY, ignore_eos and text in logit_bias.
 * `compiled`: the options' grammar or JSON schema already compiled (compileGrammar on the
 * untrusted-work worker, see grammarSource); without it they are compiled here, on this
 * thread. Throws SamplingError for a bad option (a grammar no token sequence can satisfy
 * included).
 */
export function createSamplingChain(
  params: SamplingParams = {},
  vocab?: SamplingVocab,
  compiled?: CompiledGrammar,
): SamplingChain {
  const r = resolveSamplingParams(params, vocab);
  const grammar = grammarSampler(r, vocab, compiled);
  return new SamplingChain(r, buildSteps(r, vocab), grammar);
}
