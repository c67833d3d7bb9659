// The grammar sampler: the step of a sampling chain that removes every candidate the
// grammar does not allow (its logit becomes -Infinity), and follows the chosen token.
//
//   const g = new GrammarSampler(JSON_GBNF, vocab);
//   g.apply(candidates);   // before choosing
//   g.accept(token);       // after choosing
//
// Large candidate lists (the whole vocabulary) are filtered by one pass over the token
// trie; short ones (after top-k) token by token. Filters of recent states are kept, as
// many steps revisit a state (the inside of a string, say).
import { type CompiledGrammar, resolveTokenRefs } from './compile.js';
import { type JsonSchemaOptions, jsonSchemaToGrammar } from './json-schema.js';
import { GrammarMatcher } from './matcher.js';
import { type ParseOptions, parseGrammar, type TokenResolver } from './parser.js';
import { type FlatGrammar, type Grammar, GrammarError } from './rules.js';
import { checkSatisfiable } from './satisfiable.js';
import { acceptToken, allowedTokens, type GrammarVocab, isTokenAllowed, TokenIndex } from './token-index.js';

/** Candidate tokens and their logits; the first n entries are used. */
export interface TokenCandidates {
  ids: Int32Array;
  logits: Float32Array;
  n: number;
}

const MASK_CACHE_SIZE = 16;

/** Per (grammar, vocabulary): the token index and recent whole-vocabulary filters by state. */
export class MaskCache {
  private readonly masks = new Map<number, Uint8Array>();
  constructor(readonly index: TokenIndex) {}

  get(m: GrammarMatcher): Uint8Array {
    let mask = this.masks.get(m.state);
    if (mask) {
      this.masks.delete(m.state);
      this.masks.set(m.state, mask);
      return mask;
    }
    if (this.masks.size >= MASK_CACHE_SIZE) {
      const oldest = this.masks.keys().next().value as number;
      mask = this.masks.get(oldest)!;
      this.masks.delete(oldest);
    } else {
      mask = new Uint8Array(this.index.nTokens);
    }
    allowedTokens(m, this.index, mask);
    this.masks.set(m.state, mask);
    return mask;
  }
}

export interface GrammarSamplerOptions extends Omit<ParseOptions, 'vocab'> {}

export class GrammarSampler {
  readonly name = 'grammar';
  readonly grammar: Grammar | FlatGrammar;
  readonly vocab: GrammarVocab;
  readonly matcher: GrammarMatcher;
  /** Whole-vocabulary filters of recent states (shared by clones). */
  readonly masks: MaskCache;

  /** A grammar (parsed, flat, or GBNF text) over a vocabulary. Throws GrammarError for bad GBNF. */
  constructor(
    grammar: Grammar | FlatGrammar | string,
    vocab: GrammarVocab,
    opts: GrammarSamplerOptions = {},
    shared?: MaskCache,
  ) {
    if (typeof grammar === 'string') {
      const resolver = 'encode' in vocab ? (vocab as unknown as TokenResolver) : undefined;
      grammar = parseGrammar(grammar, { ...opts, vocab: resolver });
    }
    this.grammar = grammar;
    this.vocab = vocab;
    this.matcher = new GrammarMatcher(grammar);
    this.masks = shared ?? new MaskCache(TokenIndex.for(vocab));
  }

  /**
   * A sampler for a grammar compiled elsewhere (compile.ts, on the untrusted-work worker):
   * `<text>` tokens resolved with `vocab`, then checked satisfiable with its tokens
   * (satisfiable.ts). Throws GrammarError.
   */
  static fromCompiled(compiled: CompiledGrammar, vocab: GrammarVocab): GrammarSampler {
    const resolver = 'encode' in vocab ? (vocab as unknown as TokenResolver) : undefined;
    const s = new GrammarSampler(resolveTokenRefs(compiled, resolver), vocab);
    checkSatisfiable(s.index, s.matcher, (m) => s.masks.get(m));
    return s;
  }

  /** A sampler for JSON documents valid against a JSON Schema (see json-schema.ts). Throws SchemaError. */
  static fromJsonSchema(schema: unknown, vocab: GrammarVocab, opts: JsonSchemaOptions = {}): GrammarSampler {
    return new GrammarSampler(jsonSchemaToGrammar(schema, opts), vocab);
  }

  get index(): TokenIndex {
    return this.masks.index;
  }

  /** Set the logit of every candidate the grammar does not allow next to -Infinity. */
  apply(c: TokenCandidates): void {
    const { ids, logits, n } = c;
    const m = this.matcher;
    if (m.partial.remain > 0 || n * 8 < this.index.nTokens) {
      for (let i = 0; i < n; i++) if (!isTokenAllowed(m, this.index, ids[i]!)) logits[i] = -Infinity;
      return;
    }
    const mask = this.masks.get(m);
    for (let i = 0; i < n; i++) if (!mask[ids[i]!]) logits[i] = -Infinity;
  }

  /** Whether token `id` is allowed next. */
  allows(id: number): boolean {
    return isTokenAllowed(this.matcher, this.index, id);
  }

  /** Advance past the chosen token. Throws GrammarError when the grammar does not allow it. */
  accept(id: number): void {
    if (!acceptToken(this.matcher, this.index, id)) {
      const piece = JSON.stringify(Buffer.from(this.index.pieces[id] ?? '', 'latin1').toString('utf8'));
      throw new GrammarError(`token ${id} (${piece}) is not allowed by the grammar here`);
    }
  }

  /** True when the text so far is a complete match (end-of-generation is allowed). */
  isComplete(): boolean {
    return this.matcher.isComplete();
  }

  reset(): void {
    this.matcher.reset();
  }

  /** An independent copy at the same position (for speculative decoding); caches are shared. */
  clone(): GrammarSampler {
    const g = new GrammarSampler(this.grammar, this.vocab, {}, this.masks);
    g.matcher.state = this.matcher.state;
    g.matcher.partial = this.matcher.partial;
    return g;
  }
}
