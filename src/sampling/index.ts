// Sampling: one sampler per file behind small shared interfaces. `Sampler` turns a
// logits row into a token; `SamplingStep`s work on `Candidates` and make up a
// `SamplerChain` in llama.cpp's order (`createSamplingChain` from llama.node options).
import { GreedySampler } from './greedy.js';
import type { Sampler } from './sampler.js';
import { TemperatureSampler } from './temperature.js';

export { Candidates } from './candidates.js';
export { SamplerChain, type SamplerChainOptions } from './chain.js';
export { DistSampler } from './dist.js';
export {
  DRY_MAX_BREAKER_BYTES,
  DRY_MAX_TAIL_TOKENS,
  type DryBreakers,
  type DryOptions,
  DrySampler,
  type DryVocab,
  dryBreakersFromStrings,
} from './dry.js';
export { SamplingError } from './errors.js';
export { argmax, GreedySampler, GreedyStep } from './greedy.js';
export { TokenHistory } from './history.js';
export { type LogitBias, LogitBiasSampler } from './logit-bias.js';
export { MinPSampler } from './min-p.js';
export { floatToInt, MirostatSampler } from './mirostat.js';
export { MirostatV2Sampler } from './mirostat-v2.js';
export {
  buildSteps,
  createSamplingChain,
  DEFAULT_SAMPLERS,
  grammarSource,
  type LogitBiasOption,
  type ResolvedSamplingParams,
  resolveSamplingParams,
  SAMPLING_DEFAULTS,
  type SamplerName,
  SamplingChain,
  type SamplingParams,
  type SamplingVocab,
} from './params.js';
export { PenaltiesSampler } from './penalties.js';
export {
  type CompletionProbability,
  type CompletionTokenProbability,
  completeUtf8Length,
  completionProbabilities,
  logprob,
  type ProbabilityRow,
  postSamplingProbabilities,
  rawProbabilities,
  type TokenProbability,
} from './probabilities.js';
export { DEFAULT_SEED, discreteIndex, Mt19937, randomSeed, resolveSeed } from './rng.js';
export type { Sampler } from './sampler.js';
export type { SamplingStep } from './step.js';
export { type StopMatch, StopStringMatcher } from './stop-strings.js';
export { applyTemperature, TempExtSampler, TempSampler } from './temp.js';
export { seededRandom, TemperatureSampler } from './temperature.js';
export { TopKSampler, topK } from './top-k.js';
export { TopNSigmaSampler } from './top-n-sigma.js';
export { TopPSampler } from './top-p.js';
export { TypicalSampler } from './typical.js';
export { XtcSampler } from './xtc.js';

/** Greedy at temperature 0 (or below), else temperature sampling with `seed`. */
export function createSampler(o: { temperature: number; seed: number }): Sampler {
  return o.temperature <= 0 ? new GreedySampler() : new TemperatureSampler(o.temperature, o.seed);
}
