// GBNF text to a Grammar, with llama.cpp's syntax and semantics:
//
//   name ::= alternatives            one rule per line; a rule ends at a newline
//   "lit\n"  [a-z0-9_]  [^"\\]  .    literals, classes, negated classes, any char
//   ( ... )  a | b  x* x+ x?         groups (newlines allowed inside), alternatives
//   x{m}  x{m,}  x{m,n}              bounded repetition
//   <[123]>  <|im_end|>  !<[7]>      a token by id or text, or any token but one
//   # comment                        to the end of the line
//
// Escapes: \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH. Groups and repetitions become
// generated rules named `<rule>_<id>` exactly as llama.cpp numbers them, so printed
// grammars line up. Every error is a GrammarError with the line and column.
import { checkGrammar, El, type Element, Grammar, GrammarError } from './rules.js';

/** Repetitions (and their product when nested) are capped, as in llama.cpp. */
const MAX_REPETITION = 2000;
/** Groups nested deeper than this are refused (the parser recurses once per level). */
export const MAX_GROUP_NESTING = 1000;

/** What the parser needs to turn `<token text>` into an id. */
export interface TokenResolver {
  encode(text: string, opts: { addSpecial: boolean; parseSpecial: boolean }): number[];
}

export interface ParseOptions {
  /** The start rule. Default 'root'. */
  root?: string;
  /** Resolves `<text>` token references (by tokenizing the text; it must be one token). */
  vocab?: TokenResolver;
}

/** A `<text>` token reference left for later (parseGrammarDeferred): where it was written. */
export interface TokenRef {
  text: string;
  line: number;
  column: number;
}

/** Parse GBNF text. Throws GrammarError (line:column: reason) on bad syntax, an undefined rule, a missing root or left recursion. */
export function parseGrammar(text: string, opts: ParseOptions = {}): Grammar {
  return new Parser(text, opts.vocab).parse(opts.root ?? 'root');
}

/**
 * Parse GBNF text without a vocabulary: each `<text>` token element gets the value -1 - k,
 * k indexing `tokens`, for `resolveTokenRefs` to replace where the vocabulary is.
 */
export function parseGrammarDeferred(text: string, root = 'root'): { grammar: Grammar; tokens: TokenRef[] } {
  const p = new Parser(text, undefined, []);
  return { grammar: p.parse(root), tokens: p.deferred! };
}

const isDigit = (c: number) => c >= 0x30 && c <= 0x39;
const isWordChar = (c: number) =>
  (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x2d || (c >= 0x30 && c <= 0x39);

class Parser {
  private readonly ids = new Map<string, number>();
  private readonly names: string[] = [];
  private readonly rules: (Element[] | undefined)[] = [];
  private readonly defined: number[] = []; // text index of each rule's definition
  private readonly firstRef: number[] = []; // text index of each symbol's first reference
  private nGenerated = 0; // rules made by groups and repetitions (see `sequence`)
  private depth = 0; // groups open
  private lastPos = { at: 0, line: 1, col: 1 }; // lineCol's memo
  private readonly n: number;

  constructor(
    private readonly src: string,
    private readonly vocab: TokenResolver | undefined,
    /** Token references kept as text (see parseGrammarDeferred). */
    readonly deferred?: TokenRef[],
  ) {
    this.n = src.length;
  }

  parse(rootName: string): Grammar {
    let i = this.space(0, true);
    while (i < this.n) i = this.rule(i);
    for (let id = 0; id < this.names.length; id++) {
      if (this.rules[id] === undefined) {
        throw this.error(`undefined rule '${this.names[id]}'`, this.firstRef[id] ?? 0);
      }
    }
    const root = this.ids.get(rootName);
    if (root === undefined) throw new GrammarError(`grammar does not contain a '${rootName}' rule`, 1, 1);
    // positions are worked out only for a message (one scan each): computing every rule's
    // up front made parsing quadratic in the number of rules
    const g = new Grammar(this.rules as Element[][], this.names, root, (r) => this.lineCol(this.defined[r] ?? 0));
    checkGrammar(g);
    return g;
  }

  // ---- errors and positions ----

  /** [line, column] of text index `at`, scanning on from the last position asked when it is before `at`. */
  private lineCol(at: number): [number, number] {
    at = Math.min(at, this.n);
    let { at: k, line, col } = this.lastPos;
    if (at < k) [k, line, col] = [0, 1, 1];
    const s = this.src;
    for (; k < at; k++) {
      const c = s.charCodeAt(k);
      if (c === 0x0a || (c === 0x0d && s.charCodeAt(k + 1) !== 0x0a)) {
        line++;
        col = 1;
      } else if (c < 0xdc00 || c > 0xdfff || col === 1) col++; // count code points, not UTF-16 units
    }
    this.lastPos = { at, line, col };
    return [line, col];
  }

  private error(reason: string, at: number): GrammarError {
    const [line, col] = this.lineCol(at);
    return new GrammarError(reason, line, col);
  }

  private describe(at: number): string {
    if (at >= this.n) return 'end of input';
    const cp = this.src.codePointAt(at)!;
    if (cp === 0x0a) return "'\\n'";
    if (cp === 0x0d) return "'\\r'";
    return `'${String.fromCodePoint(cp)}'`;
  }

  // ---- symbols ----

  private symbol(name: string, at: number): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      id = this.names.length;
      this.ids.set(name, id);
      this.names.push(name);
      this.rules.push(undefined);
      this.firstRef[id] = at;
    }
    return id;
  }

  private generated(base: string, at: number): number {
    const id = this.names.length;
    this.nGenerated++;
    const name = `${base}_${id}`;
    this.ids.set(name, id);
    this.names.push(name);
    this.rules.push(undefined);
    this.firstRef[id] = at;
    this.defined[id] = at;
    return id;
  }

  // ---- lexical helpers ----

  private space(i: number, newlineOk: boolean): number {
    const s = this.src;
    while (i < this.n) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x09) i++;
      else if (c === 0x23) {
        while (i < this.n && s.charCodeAt(i) !== 0x0a && s.charCodeAt(i) !== 0x0d) i++;
      } else if (newlineOk && (c === 0x0a || c === 0x0d)) i++;
      else break;
    }
    return i;
  }

  private name(i: number): number {
    let j = i;
    while (j < this.n && isWordChar(this.src.charCodeAt(j))) j++;
    if (j === i) throw this.error(`expecting a rule name, found ${this.describe(i)}`, i);
    return j;
  }

  private int(i: number): [number, number] {
    let j = i;
    while (j < this.n && isDigit(this.src.charCodeAt(j))) j++;
    if (j === i) throw this.error(`expecting an integer, found ${this.describe(i)}`, i);
    return [Number(this.src.slice(i, j)), j];
  }

  private hex(i: number, size: number, at: number): [number, number] {
    let v = 0;
    for (let k = 0; k < size; k++) {
      const c = i + k < this.n ? this.src.charCodeAt(i + k) : -1;
      let d: number;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x61 + 10;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x41 + 10;
      else throw this.error(`expecting ${size} hex digits in escape`, at);
      v = v * 16 + d;
    }
    return [v, i + size];
  }

  /** One character of a literal or class (escapes decoded): [code point, next index]. */
  private char(i: number): [number, number] {
    if (i >= this.n) throw this.error('unexpected end of input', i);
    const s = this.src;
    if (s.charCodeAt(i) === 0x5c) {
      const e = i + 1 < this.n ? s[i + 1] : '';
      switch (e) {
        case 'x':
          return this.hex(i + 2, 2, i);
        case 'u':
          return this.hex(i + 2, 4, i);
        case 'U':
          return this.hex(i + 2, 8, i);
        case 't':
          return [0x09, i + 2];
        case 'r':
          return [0x0d, i + 2];
        case 'n':
          return [0x0a, i + 2];
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
          return [e.charCodeAt(0), i + 2];
        default:
          throw this.error(e === '' ? 'unexpected end of input' : `unknown escape '\\${e}'`, i);
      }
    }
    const cp = s.codePointAt(i)!;
    return [cp, i + (cp > 0xffff ? 2 : 1)];
  }

  private token(i: number): [number, number] {
    const start = i; // at '<'
    const s = this.src;
    i++;
    if (s.charCodeAt(i) === 0x5b) {
      const [id, j] = this.int(i + 1);
      if (s.charCodeAt(j) !== 0x5d) throw this.error(`expecting ']' in token id, found ${this.describe(j)}`, j);
      if (s.charCodeAt(j + 1) !== 0x3e)
        throw this.error(`expecting '>' after token id, found ${this.describe(j + 1)}`, j + 1);
      return [id, j + 2];
    }
    while (i < this.n && s.charCodeAt(i) !== 0x3e) i++;
    if (i >= this.n) throw this.error("expecting '>' to close the token", start);
    i++;
    const text = s.slice(start, i);
    if (this.deferred) {
      const [line, column] = this.lineCol(start);
      this.deferred.push({ text, line, column });
      return [-this.deferred.length, i];
    }
    if (!this.vocab) throw this.error(`token ${text} needs a vocabulary to resolve (or use <[id]>)`, start);
    const ids = this.vocab.encode(text, { addSpecial: false, parseSpecial: true });
    if (ids.length !== 1) throw this.error(`${text} is not a single token (it tokenizes to ${ids.length})`, start);
    return [ids[0]!, i];
  }

  // ---- grammar structure ----

  private rule(i: number): number {
    const start = i;
    const end = this.name(i);
    const name = this.src.slice(i, end);
    const id = this.symbol(name, start);
    this.defined[id] = start;
    i = this.space(end, false);
    if (this.src.slice(i, i + 3) !== '::=')
      throw this.error(`expecting '::=' after '${name}', found ${this.describe(i)}`, i);
    i = this.space(i + 3, true);
    i = this.alternates(i, name, id, false);
    const c = i < this.n ? this.src.charCodeAt(i) : -1;
    if (c === 0x0d) i += this.src.charCodeAt(i + 1) === 0x0a ? 2 : 1;
    else if (c === 0x0a) i++;
    else if (c !== -1) throw this.error(`expecting end of rule (a newline), found ${this.describe(i)}`, i);
    return this.space(i, true);
  }

  private alternates(i: number, ruleName: string, id: number, nested: boolean): number {
    const rule: Element[] = [];
    i = this.sequence(i, ruleName, rule, nested);
    while (i < this.n && this.src.charCodeAt(i) === 0x7c) {
      rule.push({ type: El.ALT, value: 0 });
      i = this.space(i + 1, true);
      i = this.sequence(i, ruleName, rule, nested);
    }
    rule.push({ type: El.END, value: 0 });
    this.rules[id] = rule;
    return i;
  }

  private sequence(i: number, ruleName: string, rule: Element[], nested: boolean): number {
    const s = this.src;
    let lastSymStart = rule.length;
    let nPrevRules = 1;

    // S{m,n} -> S repeated m times, then n-m nested optional rules: S'(k) ::= S S'(k-1) | ;
    // S{m,} -> S m times then S' ::= S S' | . (* + ? are {0,} {1,} {0,1}.)
    const repeat = (min: number, max: number, at: number) => {
      const unbounded = max < 0;
      if (lastSymStart === rule.length) {
        throw this.error(`expecting an item before ${this.describe(at)} to repeat`, at);
      }
      if (!unbounded && min > max) throw this.error(`repetition minimum ${min} exceeds maximum ${max}`, at);
      const prev = rule.slice(lastSymStart);
      const total = !unbounded && max > 0 ? max : min > 0 ? min : 1;
      if (nPrevRules * total >= MAX_REPETITION) {
        throw this.error(`repetition too large: ${nPrevRules * total} copies (limit ${MAX_REPETITION})`, at);
      }
      if (min === 0) rule.length = lastSymStart;
      else for (let k = 1; k < min; k++) rule.push(...prev);
      const nOpt = unbounded ? 1 : max - min;
      let lastRec = 0;
      for (let k = 0; k < nOpt; k++) {
        const recId = this.generated(ruleName, at);
        const rec = prev.slice();
        if (k > 0 || unbounded) rec.push({ type: El.RULE_REF, value: unbounded ? recId : lastRec });
        rec.push({ type: El.ALT, value: 0 }, { type: El.END, value: 0 });
        this.rules[recId] = rec;
        lastRec = recId;
      }
      if (nOpt > 0) rule.push({ type: El.RULE_REF, value: lastRec });
      nPrevRules *= total;
    };

    while (i < this.n) {
      const c = s.charCodeAt(i);
      const at = i;
      if (c === 0x22) {
        // "literal"
        i++;
        lastSymStart = rule.length;
        nPrevRules = 1;
        while (true) {
          if (i >= this.n) throw this.error("unterminated literal (missing '\"')", at);
          if (s.charCodeAt(i) === 0x22) break;
          const [cp, j] = this.char(i);
          rule.push({ type: El.CHAR, value: cp });
          i = j;
        }
        i = this.space(i + 1, nested);
      } else if (c === 0x5b) {
        // [class]
        i++;
        let startType: El = El.CHAR;
        if (s.charCodeAt(i) === 0x5e) {
          i++;
          startType = El.CHAR_NOT;
        }
        lastSymStart = rule.length;
        nPrevRules = 1;
        while (true) {
          if (i >= this.n) throw this.error("unterminated character class (missing ']')", at);
          if (s.charCodeAt(i) === 0x5d) break;
          const [cp, j] = this.char(i);
          i = j;
          rule.push({ type: lastSymStart < rule.length ? El.CHAR_ALT : startType, value: cp });
          if (s.charCodeAt(i) === 0x2d && i + 1 < this.n && s.charCodeAt(i + 1) !== 0x5d) {
            const [hi, k] = this.char(i + 1);
            rule.push({ type: El.CHAR_RNG_UPPER, value: hi });
            i = k;
          }
        }
        if (lastSymStart === rule.length) throw this.error('empty character class', at);
        i = this.space(i + 1, nested);
      } else if (c === 0x3c || (c === 0x21 && s.charCodeAt(i + 1) === 0x3c)) {
        // <token>, !<token>
        const type = c === 0x21 ? El.TOKEN_NOT : El.TOKEN;
        const [id, j] = this.token(c === 0x21 ? i + 1 : i);
        lastSymStart = rule.length;
        nPrevRules = 1;
        rule.push({ type, value: id });
        i = this.space(j, nested);
      } else if (isWordChar(c)) {
        const end = this.name(i);
        const id = this.symbol(s.slice(i, end), i);
        i = this.space(end, nested);
        lastSymStart = rule.length;
        nPrevRules = 1;
        rule.push({ type: El.RULE_REF, value: id });
      } else if (c === 0x28) {
        // ( group )
        i = this.space(i + 1, true);
        // llama.cpp counts every symbol first seen inside the group, referenced ones too,
        // so whether a grammar parses depends on the order its rules are written in (a
        // group of 1,000 alternatives referring to rules defined below it was refused);
        // only the rules the group generates are counted here
        const before = this.nGenerated;
        const sub = this.generated(ruleName, at);
        if (++this.depth > MAX_GROUP_NESTING) {
          throw this.error(`groups nested more than ${MAX_GROUP_NESTING} levels deep`, at);
        }
        i = this.alternates(i, ruleName, sub, true);
        this.depth--;
        nPrevRules = Math.max(1, this.nGenerated - before);
        lastSymStart = rule.length;
        rule.push({ type: El.RULE_REF, value: sub });
        if (s.charCodeAt(i) !== 0x29)
          throw this.error(`expecting ')' to close the group, found ${this.describe(i)}`, i);
        i = this.space(i + 1, nested);
      } else if (c === 0x2e) {
        lastSymStart = rule.length;
        nPrevRules = 1;
        rule.push({ type: El.CHAR_ANY, value: 0 });
        i = this.space(i + 1, nested);
      } else if (c === 0x2a) {
        i = this.space(i + 1, nested);
        repeat(0, -1, at);
      } else if (c === 0x2b) {
        i = this.space(i + 1, nested);
        repeat(1, -1, at);
      } else if (c === 0x3f) {
        i = this.space(i + 1, nested);
        repeat(0, 1, at);
      } else if (c === 0x7b) {
        i = this.space(i + 1, nested);
        if (!isDigit(s.charCodeAt(i))) throw this.error(`expecting an integer after '{', found ${this.describe(i)}`, i);
        const [min, j] = this.int(i);
        i = this.space(j, nested);
        let max = -1;
        if (s.charCodeAt(i) === 0x7d) {
          max = min;
          i = this.space(i + 1, nested);
        } else if (s.charCodeAt(i) === 0x2c) {
          i = this.space(i + 1, nested);
          if (isDigit(s.charCodeAt(i))) {
            const [m, k] = this.int(i);
            max = m;
            i = this.space(k, nested);
          }
          if (s.charCodeAt(i) !== 0x7d)
            throw this.error(`expecting '}' to close the repetition, found ${this.describe(i)}`, i);
          i = this.space(i + 1, nested);
        } else {
          throw this.error(`expecting ',' or '}' in the repetition, found ${this.describe(i)}`, i);
        }
        if (min > MAX_REPETITION)
          throw this.error(`repetition minimum ${min} exceeds the limit of ${MAX_REPETITION}`, at);
        if (max > MAX_REPETITION) max = -1;
        repeat(min, max, at);
      } else {
        break;
      }
    }
    return i;
  }
}
