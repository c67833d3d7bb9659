// Sampling: one step per file behind one interface (`SamplingStep`, llama.cpp's
// llama_sampler): steps work on `Candidates` and make up a `SamplerChain` in llama.cpp's
// order (`buildSamplingChain` from checked settings; the options themselves are declared
// in src/generation/options.ts).

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
export { argmax, GreedyStep } from './greedy.js';
export { TokenHistory } from './history.js';
export { type LogitBias, LogitBiasSampler } from './logit-bias.js';
export { MinPSampler } from './min-p.js';
export { floatToInt, MirostatSampler } from './mirostat.js';
export { MirostatV2Sampler } from './mirostat-v2.js';
export {
  buildSamplingChain,
  buildSteps,
  DEFAULT_SAMPLERS,
  eogTokens,
  type GrammarOptions,
  grammarConstraint,
  grammarSource,
  type ResolvedSamplingParams,
  SAMPLER_LETTERS,
  SAMPLER_NAMES,
  type SamplerName,
  SamplingChain,
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
export type { SamplingStep } from './step.js';
export { type StopMatch, StopStringMatcher } from './stop-strings.js';
export { applyTemperature, TempExtSampler, TempSampler } from './temp.js';
export { TopKSampler, topK } from './top-k.js';
export { TopNSigmaSampler } from './top-n-sigma.js';
export { TopPSampler } from './top-p.js';
export { TypicalSampler } from './typical.js';
export { XtcSampler } from './xtc.js';
