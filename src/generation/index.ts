// The generation layer: the one loop that turns options into text. A unit (unit.ts) owns
// one request on one sequence; the batcher (batcher.ts) advances N units with one decode
// per step; the option table (options.ts) declares every completion and sampling option
// once; memory.ts is what a unit asks of a context's memory; prefix-key.ts names a
// prompt's start for load balancers. The library (src/api), the
// server (through the library) and the CLI (through the library) all generate here.
import { buildSamplingChain, grammarConstraint, type SamplingChain, type SamplingVocab } from '../sampling/index.js';
import { OptionError } from './errors.js';
import { checkOptions, resolveSampling } from './options.js';
import type { LlamaCompletionOptions } from './types.js';

export { tokenAccumulator } from './accumulate.js';
export {
  Batcher,
  type BatcherOptions,
  type BatcherStats,
  type BatcherStatus,
  type PromptMedia,
  type RequestStatus,
  SlotBusyError,
  type SlotStatus,
} from './batcher.js';
export { OptionError, showValue } from './errors.js';
export { commonPrefix, contextMemory, type SequenceMemory } from './memory.js';
export {
  type CompletionOptionValues,
  type CompletionResponseFormat,
  checkOptions,
  checkValue,
  type GrammarTrigger,
  type LogitBiasOption,
  type LoraScale,
  MAX_DRAFT,
  MAX_LOOKBACK,
  MAX_LORA,
  namedTool,
  OPTION_BY_NAME,
  OPTIONS,
  type OptionGroup,
  type OptionKind,
  type OptionName,
  type OptionSpec,
  optionsFromRequest,
  optionsMarkdown,
  optionValue,
  resolveSampling,
  responseFormatSchema,
  type ToolChoice,
} from './options.js';
export {
  isPrefixKey,
  PREFIX_KEY_HEADER,
  PREFIX_KEY_MAX_LENGTH,
  PREFIX_KEY_TOKENS,
  prefixKey,
} from './prefix-key.js';
export type * from './types.js';
export {
  type ContextLimits,
  compileConstraint,
  formatChat,
  GenerationUnit,
  interruptedResult,
  type Placement,
  type PreparedRequest,
  type PromptInfo,
  prepareRequest,
  type Sequence,
  topLogits,
  type UnitEnvironment,
  type UnitHooks,
  type UnitSettings,
  type UnitState,
} from './unit.js';

/** Sampling options (the table's sampling rows, plus the context size -1 look-backs mean). */
export type SamplingParams = LlamaCompletionOptions & { n_ctx?: number };

/**
 * A sampling chain from llama.node-style options, with llama.cpp's defaults and order.
 * `vocab` is needed for grammars, JSON schemas, DRY, ignore_eos and text in logit_bias.
 * A grammar compiles on this thread (the generation loop compiles on the untrusted-work
 * worker instead). Throws OptionError (a bad option) or SamplingError (a grammar that
 * does not compile, or that no token can satisfy).
 */
export function createSamplingChain(params: SamplingParams = {}, vocab?: SamplingVocab): SamplingChain {
  const { n_ctx, ...o } = params;
  if (n_ctx !== undefined && !(Number.isInteger(n_ctx) && n_ctx >= 1)) {
    throw new OptionError('n_ctx', n_ctx, 'must be an integer ≥ 1');
  }
  checkOptions(o);
  const r = resolveSampling(o, vocab, n_ctx);
  return buildSamplingChain(r, vocab, grammarConstraint(r, vocab));
}
