// The pushdown matcher, llama.cpp's algorithm over code points: a parse position is a
// stack of rule positions whose top is a terminal (a character class or a token); the
// matcher state is the set of such stacks still alive. Accepting a character keeps the
// stacks whose top matches it, pops that terminal, pushes what follows it and expands
// rule references at the top ("advance") until a terminal (or the empty stack, meaning
// the grammar may end) is on top.
//
// What differs from a direct port is bookkeeping, for speed: stacks are interned as
// linked nodes (pos, parent), so a stack is one integer and the expansion of a stack is
// computed once; the set of stacks is interned too, and each set caches its transition
// for each code point seen. Walking a token trie then costs one table look-up per trie
// edge in the common case (see token-index.ts). A state with many stacks finds the ones
// a code point matches through a CodePointDispatch (dispatch.ts) instead of testing each.
//
// Stacks and states are interned for the life of the engine (one per request): past
// `maxStackEntries` of them a step throws a GrammarError rather than letting a
// pathological grammar take the thread's memory. The caches on top (expansions of stacks,
// dispatches of large states) are dropped when they pass `maxCacheEntries`, and rebuilt.

import { bytesArrayToBinary } from '../../vocab/unicode.js';
import { CodePointDispatch } from './dispatch.js';
import { intersectRanges, normalizeRanges, subtractRanges, UNICODE_SCALARS } from './ranges.js';
import { checkFlatGrammar, checkGrammar, El, type FlatGrammar, Grammar, GrammarError } from './rules.js';
import { decodeUtf8, NO_PARTIAL, type PartialUtf8, partialRange } from './utf8.js';

/** No stack left: the input so far is not a prefix of anything the grammar accepts. */
export const DEAD = -1;
const UNKNOWN = -2;
/** The empty stack: the grammar has matched completely along this path. */
const EMPTY = 0;
/** States with at most this many stacks test each one (a bitmask of matches); larger ones dispatch. */
const SMALL = 30;
/** Default bound on stack entries interned by one engine (states × their stacks, stack nodes). */
export const MAX_STACK_ENTRIES = 16_000_000;
/** Default bound on cached entries (stack expansions, dispatch ranges) before they are dropped. */
export const MAX_CACHE_ENTRIES = 8_000_000;

/**
 * A grammar compiled for matching, with the caches every matcher of it shares (they only
 * grow; they hold no per-generation state). Build one with `GrammarEngine.for(grammar)`.
 */
export class GrammarEngine {
  private static readonly cache = new WeakMap<Grammar | FlatGrammar, GrammarEngine>();

  /** The grammar run (flat). */
  readonly grammar: FlatGrammar;
  /** Element types and values of all rules, one flat array; positions index these. */
  readonly types: Uint8Array;
  readonly values: Int32Array;
  /** First position of each alternative of each rule. */
  private readonly alts: Int32Array[];
  /** For a terminal at pos: the position after its class elements. */
  private readonly termNext: Int32Array;
  /** For a character terminal at pos: its class (an index into the two tables below), else -1. */
  private readonly termClass: Int32Array;
  /** Per class: sorted disjoint code-point ranges [lo, hi, lo, hi, ...]. Identical classes are shared. */
  private readonly classRanges: Int32Array[] = [];
  /** Per class: ASCII membership, 4 words each. */
  private classAscii: Uint32Array;

  private readonly stackPos: number[] = [-1];
  private readonly stackParent: number[] = [-1];
  private readonly stackIds = new Map<number, number>();
  private readonly advanced: (Int32Array | undefined)[] = [];

  private readonly setStacks: Int32Array[] = [];
  private readonly setCanEnd: boolean[] = [];
  private readonly setHasTokens: boolean[] = [];
  private readonly setAscii: Int32Array[] = [];
  private readonly setDispatch: (CodePointDispatch | undefined)[] = [];
  private readonly setByMatch: (Map<number, number> | undefined)[] = [];
  /** Hash of a sorted stack list → the states with that hash. */
  private readonly setIds = new Map<number, number | number[]>();

  /** Entries interned or cached so far, all told (a measure of the work done; never decreases). */
  entries = 0;
  /** Stack nodes and state entries interned (kept for the engine's life). */
  retained = 0;
  /** Cached entries now held (expansions, dispatches). */
  cached = 0;
  /** Bound on `retained`; beyond it a step throws GrammarError. */
  maxStackEntries = MAX_STACK_ENTRIES;
  /** Bound on `cached`; beyond it the caches are dropped. */
  maxCacheEntries = MAX_CACHE_ENTRIES;

  /** The state before any input. */
  readonly initial: number;

  /** The engine of a grammar (one per grammar object, cached). */
  static for(grammar: Grammar | FlatGrammar): GrammarEngine {
    let e = GrammarEngine.cache.get(grammar);
    if (!e) {
      e = new GrammarEngine(grammar);
      GrammarEngine.cache.set(grammar, e);
    }
    return e;
  }

  private constructor(grammar: Grammar | FlatGrammar) {
    if (!(grammar instanceof Grammar)) checkFlatGrammar(grammar);
    checkGrammar(grammar);
    const flat = grammar instanceof Grammar ? grammar.flat() : grammar;
    this.grammar = flat;
    const { types, values, ruleStart } = flat;
    const total = types.length;
    this.types = types;
    this.values = values;
    const nRules = ruleStart.length - 1;
    this.alts = new Array(nRules);
    for (let r = 0; r < nRules; r++) {
      const starts = [ruleStart[r]!];
      for (let p = ruleStart[r]!; p < ruleStart[r + 1]! - 1; p++) if (types[p] === El.ALT) starts.push(p + 1);
      this.alts[r] = Int32Array.from(starts);
    }
    this.termNext = new Int32Array(total).fill(-1);
    this.termClass = new Int32Array(total).fill(-1);
    // classes are shared by their element text: a grammar of 100,000 literals has a few
    // dozen distinct characters, not a million classes
    const classIds = new Map<string | number, number>();
    const ascii: number[] = [];
    for (let pos = 0; pos < total; pos++) {
      const t = types[pos]!;
      if (t === El.TOKEN || t === El.TOKEN_NOT) this.termNext[pos] = pos + 1;
      if (t !== El.CHAR && t !== El.CHAR_NOT && t !== El.CHAR_ANY) continue;
      let q = pos;
      do q += types[q] !== El.CHAR_ANY && types[q + 1] === El.CHAR_RNG_UPPER ? 2 : 1;
      while (types[q] === El.CHAR_ALT);
      this.termNext[pos] = q;
      // one plain character (most of a literal) is keyed by its code point alone
      let key: string | number;
      if (t === El.CHAR && q === pos + 1) key = values[pos]!;
      else {
        key = String(t);
        for (let k = pos; k < q; k++) key += `,${types[k]}:${values[k]}`;
      }
      let id = classIds.get(key);
      if (id === undefined) {
        id = this.classRanges.length;
        classIds.set(key, id);
        const flatRanges = classRangesAt(types, values, pos, q);
        this.classRanges.push(flatRanges);
        const words = [0, 0, 0, 0];
        for (let k = 0; k < flatRanges.length; k += 2) {
          for (let c = flatRanges[k]!; c <= Math.min(flatRanges[k + 1]!, 127); c++) words[c >> 5]! |= 1 << (c & 31);
        }
        ascii.push(...words);
      }
      this.termClass[pos] = id;
    }
    this.classAscii = Uint32Array.from(ascii);
    const start: number[] = [];
    for (const a of this.alts[flat.root]!) {
      const s = this.isEnd(a) ? EMPTY : this.push(EMPTY, a);
      this.advanceInto(s, start);
    }
    this.initial = this.intern(start);
  }

  private isEnd(pos: number): boolean {
    const t = this.types[pos]!;
    return t === El.END || t === El.ALT;
  }

  private push(parent: number, pos: number): number {
    const key = parent * this.types.length + pos;
    let id = this.stackIds.get(key);
    if (id === undefined) {
      id = this.stackPos.length;
      this.stackPos.push(pos);
      this.stackParent.push(parent);
      this.stackIds.set(key, id);
      this.retain(1);
    }
    return id;
  }

  /** Appends the stacks with a terminal (or nothing) on top that a stack expands to. */
  private advanceInto(stack: number, out: number[]): void {
    // a terminal on top (the common case inside literals) expands to itself: no cache entry
    if (stack === EMPTY || this.types[this.stackPos[stack]!] !== El.RULE_REF) {
      out.push(stack);
      return;
    }
    let cached = this.advanced[stack];
    if (!cached) {
      const found: number[] = [];
      const seen = new Set<number>();
      const todo = [stack];
      while (todo.length > 0) {
        const s = todo.pop()!;
        if (seen.has(s)) continue;
        seen.add(s);
        if (s === EMPTY) {
          found.push(s);
          continue;
        }
        const pos = this.stackPos[s]!;
        if (this.types[pos] !== El.RULE_REF) {
          found.push(s);
          continue;
        }
        const parent = this.stackParent[s]!;
        const base = this.isEnd(pos + 1) ? parent : this.push(parent, pos + 1);
        for (const a of this.alts[this.values[pos]!]!) todo.push(this.isEnd(a) ? base : this.push(base, a));
      }
      cached = Int32Array.from(found);
      this.cache(seen.size + cached.length);
      this.advanced[stack] = cached;
    }
    for (let k = 0; k < cached.length; k++) out.push(cached[k]!);
  }

  /** Appends the stacks after the terminal on top of `stack` has been matched. */
  private afterInto(stack: number, out: number[]): void {
    const next = this.termNext[this.stackPos[stack]!]!;
    const parent = this.stackParent[stack]!;
    this.advanceInto(this.isEnd(next) ? parent : this.push(parent, next), out);
  }

  private retain(n: number): void {
    this.entries += n;
    this.retained += n;
    if (this.retained > this.maxStackEntries) {
      throw new GrammarError(
        `the grammar needs more than ${this.maxStackEntries} parse-stack entries to follow this text (too ambiguous)`,
      );
    }
  }

  /** Accounts for n cached entries about to be stored, dropping every cache first when they would pass the bound. */
  private cache(n: number): void {
    this.entries += n;
    if (this.cached + n > this.maxCacheEntries) {
      this.advanced.length = 0;
      this.setDispatch.fill(undefined);
      this.cached = 0;
    }
    this.cached += n;
  }

  /** Intern a list of stacks (duplicates allowed) as a state; DEAD when empty. */
  intern(stacks: number[]): number {
    if (stacks.length === 0) return DEAD;
    const sorted = Int32Array.from(stacks).sort();
    let n = 1;
    for (let i = 1; i < sorted.length; i++) if (sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i]!;
    const uniq = sorted.subarray(0, n);
    let h = n | 0;
    for (let i = 0; i < n; i++) h = Math.imul(h ^ uniq[i]!, 0x9e3779b1) ^ (h >>> 15);
    const bucket = this.setIds.get(h);
    if (bucket !== undefined) {
      if (typeof bucket === 'number') {
        if (sameStacks(this.setStacks[bucket]!, uniq)) return bucket;
      } else {
        for (const id of bucket) if (sameStacks(this.setStacks[id]!, uniq)) return id;
      }
    }
    const id = this.setStacks.length;
    const own = uniq.slice();
    this.retain(n);
    this.setStacks.push(own);
    let canEnd = false;
    let hasTokens = false;
    for (const s of own) {
      if (s === EMPTY) canEnd = true;
      else if (this.types[this.stackPos[s]!]! >= El.TOKEN) hasTokens = true;
    }
    this.setCanEnd.push(canEnd);
    this.setHasTokens.push(hasTokens);
    this.setAscii.push(new Int32Array(128).fill(UNKNOWN));
    this.setDispatch.push(undefined);
    this.setByMatch.push(undefined);
    if (bucket === undefined) this.setIds.set(h, id);
    else if (typeof bucket === 'number') this.setIds.set(h, [bucket, id]);
    else bucket.push(id);
    return id;
  }

  /** The dispatch over a large state's stacks (built on first use). */
  private dispatch(state: number): CodePointDispatch {
    let d = this.setDispatch[state];
    if (!d) {
      const stacks = this.setStacks[state]!;
      const ranges: (Int32Array | undefined)[] = [];
      let size = 0;
      for (const s of stacks) {
        const c = s === EMPTY ? -1 : this.termClass[this.stackPos[s]!]!;
        const r = c < 0 ? undefined : this.classRanges[c];
        ranges.push(r);
        if (r) size += r.length;
      }
      this.cache(size + stacks.length);
      d = new CodePointDispatch(ranges, UNKNOWN);
      this.setDispatch[state] = d;
    }
    return d;
  }

  /** The character class of the terminal at `pos` (shared by equal classes), or -1. */
  terminalClass(pos: number): number {
    return this.termClass[pos]!;
  }

  /** A class's code points as sorted disjoint ranges [lo, hi, …]. */
  classRangesOf(c: number): Int32Array {
    return this.classRanges[c]!;
  }

  /** Number of distinct character classes. */
  get classCount(): number {
    return this.classRanges.length;
  }

  /** Number of interned states (grows as new parse states are met). */
  get stateCount(): number {
    return this.setStacks.length;
  }

  /** Whether the grammar may end in this state. */
  canEnd(state: number): boolean {
    return state >= 0 && this.setCanEnd[state]!;
  }

  /** Whether some stack of this state expects a token element (<...>). */
  hasTokenStacks(state: number): boolean {
    return state >= 0 && this.setHasTokens[state]!;
  }

  private matches(pos: number, cp: number): boolean {
    if (cp < 128) {
      const c = this.termClass[pos]!;
      return c >= 0 && (this.classAscii[4 * c + (cp >> 5)]! & (1 << (cp & 31))) !== 0;
    }
    const c = this.termClass[pos]!;
    if (c < 0) return false;
    const r = this.classRanges[c]!;
    let lo = 0;
    let hi = (r.length >> 1) - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      if (cp < r[2 * mid]!) hi = mid - 1;
      else if (cp > r[2 * mid + 1]!) lo = mid + 1;
      else return true;
    }
    return false;
  }

  /** The state after code point `cp`, or DEAD. */
  step(state: number, cp: number): number {
    if (state < 0) return DEAD;
    let next: number;
    const stacks = this.setStacks[state]!;
    if (cp < 128) {
      next = this.setAscii[state]![cp]!;
      if (next !== UNKNOWN) return next;
    }
    if (stacks.length <= SMALL) {
      // the next state depends only on which stacks match: many code points share it
      let matched = 0;
      for (let k = 0; k < stacks.length; k++) {
        const s = stacks[k]!;
        if (s !== EMPTY && this.matches(this.stackPos[s]!, cp)) matched |= 1 << k;
      }
      if (matched === 0) next = DEAD;
      else {
        let byMatch = this.setByMatch[state];
        if (!byMatch) {
          byMatch = new Map();
          this.setByMatch[state] = byMatch;
        }
        const known = byMatch.get(matched);
        if (known === undefined) {
          const acc: number[] = [];
          for (let k = 0; k < stacks.length; k++) if (matched & (1 << k)) this.afterInto(stacks[k]!, acc);
          next = this.intern(acc);
          byMatch.set(matched, next);
        } else next = known;
      }
    } else {
      // every code point of an elementary interval leads to the same state
      const d = this.dispatch(state);
      const i = d.interval(cp);
      next = d.next[i]!;
      if (next === UNKNOWN) {
        if (!d.covered(i)) next = DEAD;
        else {
          const ks: number[] = [];
          d.matching(i, ks);
          const acc: number[] = [];
          for (const k of ks) this.afterInto(stacks[k]!, acc);
          next = this.intern(acc);
        }
        d.next[i] = next;
      }
    }
    if (cp < 128) this.setAscii[state]![cp] = next;
    return next;
  }

  /** Whether an incomplete character (code points lo..hi still possible) can continue this state. */
  partialFits(state: number, lo: number, hi: number): boolean {
    if (state < 0) return false;
    if (this.setStacks[state]!.length > SMALL) return this.dispatch(state).coversAny(lo, hi);
    for (const s of this.setStacks[state]!) {
      if (s === EMPTY) continue;
      const c = this.termClass[this.stackPos[s]!]!;
      if (c < 0) continue;
      const r = this.classRanges[c]!;
      for (let k = 0; k < r.length; k += 2) if (r[k]! <= hi && lo <= r[k + 1]!) return true;
    }
    return false;
  }

  /** Stacks of `state` continued by matching token `id` against token elements (<[id]>, !<[id]>). */
  tokenStacks(state: number, id: number, out: number[]): void {
    if (!this.hasTokenStacks(state)) return;
    for (const s of this.setStacks[state]!) {
      if (s === EMPTY) continue;
      const pos = this.stackPos[s]!;
      const t = this.types[pos]!;
      if ((t === El.TOKEN && this.values[pos] === id) || (t === El.TOKEN_NOT && this.values[pos] !== id)) {
        this.afterInto(s, out);
      }
    }
  }

  /** Token elements on top of this state's stacks: [type, value] pairs (flat). */
  tokenTops(state: number): number[] {
    const out: number[] = [];
    if (!this.hasTokenStacks(state)) return out;
    for (const s of this.setStacks[state]!) {
      if (s === EMPTY) continue;
      const pos = this.stackPos[s]!;
      if (this.types[pos]! >= El.TOKEN) out.push(this.types[pos]!, this.values[pos]!);
    }
    return out;
  }

  /** The stacks of a state (ids), for unions. */
  stacksOf(state: number): Int32Array {
    return state < 0 ? new Int32Array(0) : this.setStacks[state]!;
  }
}

/** The code points the class at [pos, end) matches, as sorted disjoint ranges. */
function classRangesAt(types: Uint8Array, values: Int32Array, pos: number, end: number): Int32Array {
  const raw: [number, number][] = [];
  for (let q = pos; q < end; ) {
    if (types[q] === El.CHAR_ANY) {
      raw.push([0, 0x10ffff]);
      q++;
    } else if (types[q + 1] === El.CHAR_RNG_UPPER) {
      raw.push([values[q]!, values[q + 1]!]);
      q += 2;
    } else {
      raw.push([values[q]!, values[q]!]);
      q++;
    }
  }
  const set =
    types[pos] === El.CHAR_NOT
      ? subtractRanges(UNICODE_SCALARS, normalizeRanges(raw))
      : intersectRanges(normalizeRanges(raw), UNICODE_SCALARS);
  const flat = new Int32Array(set.length * 2);
  set.forEach(([lo, hi], k) => {
    flat[2 * k] = lo;
    flat[2 * k + 1] = hi;
  });
  return flat;
}

function sameStacks(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * A position in a grammar: feed it code points, strings or bytes; ask whether the input so
 * far is a complete match. Cheap to clone (a state id and a partial UTF-8 character).
 */
export class GrammarMatcher {
  readonly engine: GrammarEngine;
  /** Current state id (DEAD never stays: a rejected input leaves the state unchanged). */
  state: number;
  /** An incomplete UTF-8 character carried from the last bytes accepted. */
  partial: PartialUtf8 = NO_PARTIAL;

  constructor(grammar: Grammar | FlatGrammar | GrammarEngine) {
    this.engine = grammar instanceof GrammarEngine ? grammar : GrammarEngine.for(grammar);
    this.state = this.engine.initial;
  }

  reset(): void {
    this.state = this.engine.initial;
    this.partial = NO_PARTIAL;
  }

  clone(): GrammarMatcher {
    const m = new GrammarMatcher(this.engine);
    m.state = this.state;
    m.partial = this.partial;
    return m;
  }

  /** Accept one code point; false (state unchanged) when the grammar does not allow it here. */
  acceptCodepoint(cp: number): boolean {
    if (this.partial.remain > 0) return false;
    const next = this.engine.step(this.state, cp);
    if (next === DEAD) return false;
    this.state = next;
    return true;
  }

  /** Accept a whole string, or nothing: false (state unchanged) when some character is not allowed. */
  acceptString(text: string): boolean {
    if (this.partial.remain > 0) return false;
    let s = this.state;
    for (const ch of text) {
      s = this.engine.step(s, ch.codePointAt(0)!);
      if (s === DEAD) return false;
    }
    this.state = s;
    return true;
  }

  /**
   * Accept raw UTF-8 bytes (a byte string or Uint8Array), which may end or start inside a
   * character; all or nothing. Invalid UTF-8, or a cut character no allowed code point can
   * complete, is rejected.
   */
  acceptBytes(bytes: string | Uint8Array): boolean {
    const str = typeof bytes === 'string' ? bytes : bytesArrayToBinary(bytes);
    const d = decodeUtf8(str, this.partial);
    if (!d) return false;
    let s = this.state;
    for (const cp of d.cps) {
      s = this.engine.step(s, cp);
      if (s === DEAD) return false;
    }
    if (d.partial.remain > 0) {
      const r = partialRange(d.partial);
      if (!r || !this.engine.partialFits(s, r[0], r[1])) return false;
    }
    this.state = s;
    this.partial = d.partial;
    return true;
  }

  /** True when the input so far is a complete match (the grammar may end here). */
  isComplete(): boolean {
    return this.partial.remain === 0 && this.engine.canEnd(this.state);
  }

  /** True when nothing more can be accepted (complete, and no path continues). */
  isFinished(): boolean {
    const stacks = this.engine.stacksOf(this.state);
    return this.isComplete() && stacks.length === 1;
  }
}
