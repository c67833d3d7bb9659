// Speculative decoding: drafters propose tokens, the target evaluates them in one batch,
// the verifier keeps what the target agrees with (verify.ts). The generation unit calls
// these per step; generate.ts runs the whole loop for one sequence (tests, benchmarks).
export { checkDraftCompatible, DraftModelDrafter, type DraftModelOptions } from './draft-model.js';
export { type SpeculativeRun, speculativeGenerate } from './generate.js';
export { lookup, NgramDrafter, type NgramOptions } from './ngram.js';
export { ReplayDrafter, type ReplayOptions } from './replay.js';
export {
  acceptanceRate,
  type Draft,
  type Drafter,
  type DraftRequest,
  newStats,
  SpeculativeError,
  type SpeculativeStats,
} from './types.js';
export { type VerifyOptions, type VerifyResult, verifyDraft } from './verify.js';
