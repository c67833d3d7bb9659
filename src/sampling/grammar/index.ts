// Grammar-constrained sampling: GBNF grammars (llama.cpp's syntax), the pushdown matcher,
// the token filter over a vocabulary, the grammar sampler, JSON Schema to GBNF.
export { JSON_ARRAY_GBNF, JSON_GBNF, JSON_VALUE_GBNF } from './builtin.js';
export {
  type CompiledGrammar,
  compileGrammar,
  DEFAULT_GRAMMAR_LIMITS,
  type GrammarLimits,
  type GrammarSource,
  resolveTokenRefs,
} from './compile.js';
export {
  convertJsonSchema,
  convertJsonSchemaRules,
  gbnfLiteral,
  type JsonSchemaOptions,
  jsonSchemaToGrammar,
  SchemaError,
  SPACE_RULE,
} from './json-schema.js';
export { DEAD, GrammarEngine, GrammarMatcher, MAX_STACK_ENTRIES } from './matcher.js';
export { type Bound, decimalRange, integerRange } from './numbers.js';
export {
  MAX_GROUP_NESTING,
  type ParseOptions,
  parseGrammar,
  parseGrammarDeferred,
  type TokenRef,
  type TokenResolver,
} from './parser.js';
export type { Ranges } from './ranges.js';
export { RegexError, regexToGbnf } from './regex.js';
export { checkFlatGrammar, checkGrammar, El, type Element, type FlatGrammar, Grammar, GrammarError } from './rules.js';
export {
  GrammarSampler,
  type GrammarSamplerOptions,
  type LazyTriggers,
  MaskCache,
  type TokenCandidates,
} from './sampler.js';
export { checkSatisfiable } from './satisfiable.js';
export { acceptToken, allowedTokens, type GrammarVocab, isTokenAllowed, TokenIndex } from './token-index.js';
export { type Decoded, decodeUtf8, NO_PARTIAL, type PartialUtf8, partialRange, stringToBytes } from './utf8.js';
