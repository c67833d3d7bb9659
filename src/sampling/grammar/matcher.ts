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
// edge in the common case (see token-index.ts).
import { intersectRanges, normalizeRanges, subtractRanges, UNICODE_SCALARS } from './ranges.js';
import { checkGrammar, El, type Grammar } from './rules.js';
import { decodeUtf8, NO_PARTIAL, type PartialUtf8, partialRange } from './utf8.js';

/** No stack left: the input so far is not a prefix of anything the grammar accepts. */
export const DEAD = -1;
const UNKNOWN = -2;
/** The empty stack: the grammar has matched completely along this path. */
const EMPTY = 0;

/**
 * A grammar compiled for matching, with the caches every matcher of it shares (they only
 * grow; they hold no per-generation state). Build one with `GrammarEngine.for(grammar)`.
 */
export class GrammarEngine {
  private static readonly cache = new WeakMap<Grammar, GrammarEngine>();

  /** Element types and values of all rules, one flat array; positions index these. */
  readonly types: Uint8Array;
  readonly values: Int32Array;
  /** First position of each alternative of each rule. */
  private readonly alts: Int32Array[];
  /** For a terminal at pos: the position after its class elements. */
  private readonly termNext: Int32Array;
  /** For a character terminal at pos: sorted disjoint ranges [lo, hi, lo, hi, ...] it matches. */
  private readonly termRanges: (Int32Array | undefined)[];
  /** ASCII membership bitmap (4 words) per character terminal. */
  private readonly termAscii: (Uint32Array | undefined)[];

  private readonly stackPos: number[] = [-1];
  private readonly stackParent: number[] = [-1];
  private readonly stackIds = new Map<number, number>();
  private readonly advanced: (Int32Array | undefined)[] = [];
  private readonly afterTop: (Int32Array | undefined)[] = [];

  private readonly setStacks: Int32Array[] = [];
  private readonly setCanEnd: boolean[] = [];
  private readonly setHasTokens: boolean[] = [];
  private readonly setAscii: Int32Array[] = [];
  private readonly setOther: Map<number, number>[] = [];
  private readonly setByMatch: (Map<number, number> | undefined)[] = [];
  private readonly setIds = new Map<string, number>();

  /** The state before any input. */
  readonly initial: number;

  static for(grammar: Grammar): GrammarEngine {
    let e = GrammarEngine.cache.get(grammar);
    if (!e) {
      e = new GrammarEngine(grammar);
      GrammarEngine.cache.set(grammar, e);
    }
    return e;
  }

  private constructor(readonly grammar: Grammar) {
    checkGrammar(grammar);
    let total = 0;
    for (const r of grammar.rules) total += r.length;
    this.types = new Uint8Array(total);
    this.values = new Int32Array(total);
    const ruleStart = new Int32Array(grammar.rules.length);
    let p = 0;
    for (let r = 0; r < grammar.rules.length; r++) {
      ruleStart[r] = p;
      for (const e of grammar.rules[r]!) {
        this.types[p] = e.type;
        this.values[p] = e.value;
        p++;
      }
    }
    this.alts = grammar.rules.map((rule, r) => {
      const starts = [ruleStart[r]!];
      for (let i = 0; i < rule.length - 1; i++) if (rule[i]!.type === El.ALT) starts.push(ruleStart[r]! + i + 1);
      return Int32Array.from(starts);
    });
    this.termNext = new Int32Array(total).fill(-1);
    this.termRanges = new Array(total);
    this.termAscii = new Array(total);
    for (let pos = 0; pos < total; pos++) {
      const t = this.types[pos]!;
      if (t === El.TOKEN || t === El.TOKEN_NOT) this.termNext[pos] = pos + 1;
      if (t !== El.CHAR && t !== El.CHAR_NOT && t !== El.CHAR_ANY) continue;
      const raw: [number, number][] = [];
      let q = pos;
      do {
        if (this.types[q] === El.CHAR_ANY) {
          raw.push([0, 0x10ffff]);
          q++;
        } else if (this.types[q + 1] === El.CHAR_RNG_UPPER) {
          raw.push([this.values[q]!, this.values[q + 1]!]);
          q += 2;
        } else {
          raw.push([this.values[q]!, this.values[q]!]);
          q++;
        }
      } while (this.types[q] === El.CHAR_ALT);
      this.termNext[pos] = q;
      const set =
        t === El.CHAR_NOT
          ? subtractRanges(UNICODE_SCALARS, normalizeRanges(raw))
          : intersectRanges(normalizeRanges(raw), UNICODE_SCALARS);
      const flat = new Int32Array(set.length * 2);
      const ascii = new Uint32Array(4);
      set.forEach(([lo, hi], k) => {
        flat[2 * k] = lo;
        flat[2 * k + 1] = hi;
        for (let c = lo; c <= Math.min(hi, 127); c++) ascii[c >> 5]! |= 1 << (c & 31);
      });
      this.termRanges[pos] = flat;
      this.termAscii[pos] = ascii;
    }
    const start: number[] = [];
    for (const a of this.alts[grammar.root]!) {
      const s = this.isEnd(a) ? EMPTY : this.push(EMPTY, a);
      for (const x of this.advance(s)) start.push(x);
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
    }
    return id;
  }

  /** All stacks with a terminal (or nothing) on top that a stack expands to. */
  private advance(stack: number): Int32Array {
    const cached = this.advanced[stack];
    if (cached) return cached;
    const out: number[] = [];
    const seen = new Set<number>();
    const todo = [stack];
    while (todo.length > 0) {
      const s = todo.pop()!;
      if (seen.has(s)) continue;
      seen.add(s);
      if (s === EMPTY) {
        out.push(s);
        continue;
      }
      const pos = this.stackPos[s]!;
      if (this.types[pos] !== El.RULE_REF) {
        out.push(s);
        continue;
      }
      const parent = this.stackParent[s]!;
      const base = this.isEnd(pos + 1) ? parent : this.push(parent, pos + 1);
      for (const a of this.alts[this.values[pos]!]!) todo.push(this.isEnd(a) ? base : this.push(base, a));
    }
    const result = Int32Array.from(out);
    this.advanced[stack] = result;
    return result;
  }

  /** The stacks after the terminal on top of `stack` has been matched. */
  private after(stack: number): Int32Array {
    let r = this.afterTop[stack];
    if (!r) {
      const next = this.termNext[this.stackPos[stack]!]!;
      const parent = this.stackParent[stack]!;
      r = this.advance(this.isEnd(next) ? parent : this.push(parent, next));
      this.afterTop[stack] = r;
    }
    return r;
  }

  /** Intern a list of stacks (duplicates allowed) as a state; DEAD when empty. */
  intern(stacks: number[]): number {
    if (stacks.length === 0) return DEAD;
    const sorted = Int32Array.from(stacks).sort();
    let n = 1;
    for (let i = 1; i < sorted.length; i++) if (sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i]!;
    const uniq = sorted.subarray(0, n);
    const key = uniq.join(',');
    let id = this.setIds.get(key);
    if (id === undefined) {
      id = this.setStacks.length;
      const own = uniq.slice();
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
      this.setOther.push(new Map());
      this.setByMatch.push(undefined);
      this.setIds.set(key, id);
    }
    return id;
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
      const a = this.termAscii[pos];
      return a !== undefined && (a[cp >> 5]! & (1 << (cp & 31))) !== 0;
    }
    const r = this.termRanges[pos];
    if (!r) return false;
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
    let next: number | undefined;
    const stacks = this.setStacks[state]!;
    const small = stacks.length <= 30;
    if (cp < 128) {
      next = this.setAscii[state]![cp]!;
      if (next !== UNKNOWN) return next;
    } else if (!small) {
      next = this.setOther[state]!.get(cp);
      if (next !== undefined) return next;
    }
    // Other code points are not cached one by one (a vocabulary has tens of thousands):
    // which stacks match is computed each time, the resulting state is cached per match set.
    if (small) {
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
        next = byMatch.get(matched);
        if (next === undefined) {
          const acc: number[] = [];
          for (let k = 0; k < stacks.length; k++)
            if (matched & (1 << k)) for (const t of this.after(stacks[k]!)) acc.push(t);
          next = this.intern(acc);
          byMatch.set(matched, next);
        }
      }
    } else {
      const acc: number[] = [];
      for (const s of stacks) {
        if (s !== EMPTY && this.matches(this.stackPos[s]!, cp)) for (const t of this.after(s)) acc.push(t);
      }
      next = this.intern(acc);
    }
    if (cp < 128) this.setAscii[state]![cp] = next;
    else if (!small) this.setOther[state]!.set(cp, next);
    return next;
  }

  /** Whether an incomplete character (code points lo..hi still possible) can continue this state. */
  partialFits(state: number, lo: number, hi: number): boolean {
    if (state < 0) return false;
    for (const s of this.setStacks[state]!) {
      if (s === EMPTY) continue;
      const r = this.termRanges[this.stackPos[s]!];
      if (!r) continue;
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
        for (const x of this.after(s)) out.push(x);
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

  constructor(grammar: Grammar | GrammarEngine) {
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
    const str = typeof bytes === 'string' ? bytes : Buffer.from(bytes).toString('latin1');
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
