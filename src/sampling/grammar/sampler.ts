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
//
// A lazy grammar (llama.cpp's grammar_lazy) constrains nothing until a trigger appears in
// the generated text (a word, a regular expression, or a token): from then on the grammar
// holds, fed first with the text from the trigger's start (a pattern's first group, when
// it has one). Tool-call grammars for tool_choice 'auto' are lazy: the model writes text
// freely until it begins a call, and the call itself follows the tools' schemas.

import { binaryToText } from '../../vocab/unicode.js';
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

/** What starts a lazy grammar: regular expressions over the generated text, and token ids. */
export interface LazyTriggers {
  patterns: readonly RegExp[];
  tokens: readonly number[];
}

/** Text kept while waiting for a trigger: the last characters are enough for any trigger (a regular expression sees them all). */
const MAX_TRIGGER_BUFFER = 1 << 20;

export class GrammarSampler {
  readonly name = 'grammar';
  readonly grammar: Grammar | FlatGrammar;
  readonly vocab: GrammarVocab;
  readonly matcher: GrammarMatcher;
  /** Whole-vocabulary filters of recent states (shared by clones). */
  readonly masks: MaskCache;
  /** Lazy: the triggers, and whether the grammar still waits for one. */
  private lazy: LazyTriggers | undefined;
  private waiting = false;
  /** The generated text (bytes) while waiting. */
  private buffer = '';

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

  /** Makes the grammar lazy: it holds only once a trigger appears in the generated text. */
  setLazy(triggers: LazyTriggers): this {
    this.lazy = { patterns: [...triggers.patterns], tokens: [...triggers.tokens] };
    this.waiting = true;
    this.buffer = '';
    return this;
  }

  /** Whether the grammar waits for its trigger (lazy, not triggered yet): it constrains nothing. */
  get awaitingTrigger(): boolean {
    return this.waiting;
  }

  /**
   * Generated text the grammar did not see as tokens (UTF-8 bytes as a byte string): while
   * waiting it is searched for triggers; an active grammar must accept it. Throws
   * GrammarError when the grammar does not allow it.
   */
  acceptText(bytes: string): void {
    if (this.waiting) {
      this.watch(bytes);
      return;
    }
    if (!this.matcher.acceptBytes(bytes)) {
      throw new GrammarError(`the text ${JSON.stringify(binaryToText(bytes))} is not allowed by the grammar here`);
    }
  }

  /** While waiting: adds text and starts the grammar at a trigger found in it. */
  private watch(bytes: string): void {
    this.buffer += bytes;
    if (this.buffer.length > MAX_TRIGGER_BUFFER) this.buffer = this.buffer.slice(-MAX_TRIGGER_BUFFER);
    // (a byte that is no UTF-8 stands for one U+FFFD, so a match's offset maps back to
    // its byte exactly: re-encoding the text would count 3 bytes for it)
    const { text, offsets } = decodeWithOffsets(this.buffer);
    let best: number | undefined;
    for (const re of this.lazy!.patterns) {
      re.lastIndex = 0;
      const m = re.exec(text);
      if (!m) continue;
      // the first group's start, when the pattern has one (llama.cpp's), else the match's
      let at = m.index;
      if (m.length > 1 && m[1] !== undefined) {
        const i = text.indexOf(m[1], m.index);
        if (i >= 0) at = i;
      }
      if (best === undefined || at < best) best = at;
    }
    if (best === undefined) return;
    const rest = this.buffer.slice(offsets[best]);
    this.waiting = false;
    this.buffer = '';
    this.acceptText(rest);
  }

  /** Set the logit of every candidate the grammar does not allow next to -Infinity. */
  apply(c: TokenCandidates): void {
    if (this.waiting) return;
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
    if (this.waiting) return true;
    return isTokenAllowed(this.matcher, this.index, id);
  }

  /** Advance past the chosen token. Throws GrammarError when the grammar does not allow it. */
  accept(id: number): void {
    if (this.waiting) {
      if (this.index.isEog(id)) return;
      if (this.lazy!.tokens.includes(id)) {
        this.waiting = false;
        this.buffer = '';
      } else {
        this.watch(this.index.pieces[id] ?? '');
        return;
      }
    }
    if (!acceptToken(this.matcher, this.index, id)) {
      const piece = JSON.stringify(binaryToText(this.index.pieces[id] ?? ''));
      throw new GrammarError(`token ${id} (${piece}) is not allowed by the grammar here`);
    }
  }

  /** True when the text so far is a complete match (end-of-generation is allowed). */
  isComplete(): boolean {
    return this.waiting || this.matcher.isComplete();
  }

  reset(): void {
    this.matcher.reset();
    this.waiting = this.lazy !== undefined;
    this.buffer = '';
  }

  /** An independent copy at the same position (for speculative decoding); caches are shared. */
  clone(): GrammarSampler {
    const g = new GrammarSampler(this.grammar, this.vocab, {}, this.masks);
    g.matcher.state = this.matcher.state;
    g.matcher.partial = this.matcher.partial;
    g.lazy = this.lazy;
    g.waiting = this.waiting;
    g.buffer = this.buffer;
    return g;
  }
}

/**
 * A byte string (one char per byte) as text, with the byte offset of each UTF-16 unit
 * (offsets[text.length] = the byte length): well-formed UTF-8 sequences become their
 * character, any other byte one U+FFFD.
 */
function decodeWithOffsets(bytes: string): { text: string; offsets: number[] } {
  let text = '';
  const offsets: number[] = [];
  const b = (i: number) => bytes.charCodeAt(i);
  const cont = (i: number) => i < bytes.length && (b(i) & 0xc0) === 0x80;
  for (let i = 0; i < bytes.length; ) {
    const c = b(i);
    let n = 0;
    let cp = 0;
    if (c < 0x80) [n, cp] = [1, c];
    else if (c >= 0xc2 && c < 0xe0 && cont(i + 1)) [n, cp] = [2, ((c & 0x1f) << 6) | (b(i + 1) & 0x3f)];
    else if (c >= 0xe0 && c < 0xf0 && cont(i + 1) && cont(i + 2)) {
      cp = ((c & 0x0f) << 12) | ((b(i + 1) & 0x3f) << 6) | (b(i + 2) & 0x3f);
      if (cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff)) n = 3;
    } else if (c >= 0xf0 && c < 0xf5 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
      cp = ((c & 0x07) << 18) | ((b(i + 1) & 0x3f) << 12) | ((b(i + 2) & 0x3f) << 6) | (b(i + 3) & 0x3f);
      if (cp >= 0x10000 && cp <= 0x10ffff) n = 4;
    }
    const ch = n === 0 ? '\ufffd' : String.fromCodePoint(cp);
    for (let k = 0; k < ch.length; k++) offsets.push(i);
    text += ch;
    i += n === 0 ? 1 : n;
  }
  offsets.push(bytes.length);
  return { text, offsets };
}
