// Grammar compilation as a unit of work that can run anywhere: GBNF text or a JSON Schema
// in, a CompiledGrammar out (flat arrays and strings only, so it crosses threads by
// structured clone). Requests bring their own grammars, so compilation runs in the
// untrusted-work worker (src/untrusted), under size limits checked here and a time limit
// the worker's owner enforces; the sampler is then built from the result on the thread
// that has the vocabulary (GrammarSampler.fromCompiled), where `<text>` token references
// are resolved and the grammar is checked against the vocabulary.
import { convertJsonSchema, unusableGrammar } from './json-schema.js';
import { parseGrammarDeferred, type TokenRef, type TokenResolver } from './parser.js';
import { El, type FlatGrammar, GrammarError } from './rules.js';

/** Bounds on one compilation; beyond one, a GrammarError (or SchemaError) names it. */
export interface GrammarLimits {
  /** GBNF text, as given or as converted from a JSON Schema, in characters. Default 8 Mi. */
  maxGrammarChars?: number;
  /** A JSON Schema, as JSON text, in characters. Default 4 Mi. */
  maxSchemaChars?: number;
  /** Rules, generated ones included. Default 500,000. */
  maxRules?: number;
  /** Grammar elements (characters, references, …). Default 8,000,000. */
  maxElements?: number;
}

export const DEFAULT_GRAMMAR_LIMITS = {
  maxGrammarChars: 8 * 1024 * 1024,
  maxSchemaChars: 4 * 1024 * 1024,
  maxRules: 500_000,
  maxElements: 8_000_000,
} as const;

/** What to compile: GBNF text, or a JSON Schema (an object, or its JSON text). */
export type GrammarSource = { grammar: string } | { jsonSchema: unknown };

/** A checked grammar, ready to cross threads; `<text>` token elements still unresolved. */
export interface CompiledGrammar extends FlatGrammar {
  /** TOKEN / TOKEN_NOT elements with value -1 - k stand for `tokens[k]` (resolved by the vocabulary). */
  readonly tokens: readonly TokenRef[];
}

/** Compile GBNF text or a JSON Schema. Throws GrammarError / SchemaError. */
export function compileGrammar(source: GrammarSource, limits: GrammarLimits = {}): CompiledGrammar {
  const maxChars = limits.maxGrammarChars ?? DEFAULT_GRAMMAR_LIMITS.maxGrammarChars;
  let gbnf: string;
  if ('grammar' in source) {
    if (typeof source.grammar !== 'string') throw new GrammarError('a grammar must be GBNF text');
    gbnf = source.grammar;
    if (gbnf.length > maxChars) {
      throw new GrammarError(`the grammar is ${gbnf.length} characters; the limit is ${maxChars} (maxGrammarChars)`);
    }
  } else {
    const maxSchema = limits.maxSchemaChars ?? DEFAULT_GRAMMAR_LIMITS.maxSchemaChars;
    const size = typeof source.jsonSchema === 'string' ? source.jsonSchema.length : jsonLength(source.jsonSchema);
    if (size > maxSchema) {
      throw new GrammarError(
        `the JSON schema is ${size} characters of JSON; the limit is ${maxSchema} (maxSchemaChars)`,
      );
    }
    gbnf = convertJsonSchema(source.jsonSchema);
    if (gbnf.length > maxChars) {
      throw new GrammarError(
        `the JSON schema converts to ${gbnf.length} characters of grammar; the limit is ${maxChars} (maxGrammarChars)`,
      );
    }
  }
  let parsed: ReturnType<typeof parseGrammarDeferred>;
  try {
    parsed = parseGrammarDeferred(gbnf);
  } catch (e) {
    throw 'grammar' in source ? e : unusableGrammar(e);
  }
  const { grammar, tokens } = parsed;
  const flat = grammar.flat();
  const maxRules = limits.maxRules ?? DEFAULT_GRAMMAR_LIMITS.maxRules;
  const maxElements = limits.maxElements ?? DEFAULT_GRAMMAR_LIMITS.maxElements;
  const nRules = flat.ruleStart.length - 1;
  if (nRules > maxRules) throw new GrammarError(`the grammar has ${nRules} rules; the limit is ${maxRules} (maxRules)`);
  if (flat.types.length > maxElements) {
    throw new GrammarError(`the grammar has ${flat.types.length} elements; the limit is ${maxElements} (maxElements)`);
  }
  return { ...flat, names: [...flat.names], tokens };
}

/** JSON.stringify's length, or an error for values JSON cannot hold (cycles, BigInt). */
function jsonLength(v: unknown): number {
  try {
    return JSON.stringify(v)?.length ?? 0;
  } catch (e) {
    throw new GrammarError(`the JSON schema is not JSON data: ${(e as Error).message}`);
  }
}

/** The grammar with its `<text>` tokens replaced by ids from `vocab` (each must be one token). */
export function resolveTokenRefs(c: CompiledGrammar, vocab: TokenResolver | undefined): FlatGrammar {
  if (c.tokens.length === 0) return c;
  const ids = c.tokens.map((t) => {
    if (!vocab)
      throw new GrammarError(`token ${t.text} needs a vocabulary to resolve (or use <[id]>)`, t.line, t.column);
    const r = vocab.encode(t.text, { addSpecial: false, parseSpecial: true });
    if (r.length !== 1) {
      throw new GrammarError(`${t.text} is not a single token (it tokenizes to ${r.length})`, t.line, t.column);
    }
    return r[0]!;
  });
  const values = c.values.slice();
  for (let p = 0; p < values.length; p++) {
    const t = c.types[p];
    if ((t === El.TOKEN || t === El.TOKEN_NOT) && values[p]! < 0) {
      const k = -1 - values[p]!;
      if (k >= ids.length) throw new GrammarError(`malformed compiled grammar: token reference ${k}`);
      values[p] = ids[k]!;
    }
  }
  return { types: c.types, values, ruleStart: c.ruleStart, names: c.names, root: c.root };
}
