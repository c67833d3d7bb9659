// Grammar-constrained sampling: GBNF grammars (llama.cpp's syntax), the pushdown matcher,
// the token filter over a vocabulary, the grammar sampler, JSON Schema to GBNF.
export { JSON_ARRAY_GBNF, JSON_GBNF, JSON_VALUE_GBNF } from './builtin.js';
export {
  gbnfLiteral,
  integerRange,
  type JsonSchemaOptions,
  jsonSchemaToGrammar,
  SchemaError,
  SPACE_RULE,
} from './json-schema.js';
export { DEAD, GrammarEngine, GrammarMatcher } from './matcher.js';
export { type ParseOptions, parseGrammar, type TokenResolver } from './parser.js';
export type { Ranges } from './ranges.js';
export { RegexError, regexToGbnf } from './regex.js';
export { checkGrammar, El, type Element, Grammar, GrammarError } from './rules.js';
export { GrammarSampler, type GrammarSamplerOptions, MaskCache, type TokenCandidates } from './sampler.js';
export { acceptToken, allowedTokens, type GrammarVocab, isTokenAllowed, TokenIndex } from './token-index.js';
export { type Decoded, decodeUtf8, NO_PARTIAL, type PartialUtf8, partialRange, stringToBytes } from './utf8.js';
