// A JSON Schema `pattern` (an anchored regular expression, ^...$, as llama.cpp requires)
// to a GBNF expression for the inside of a JSON string. Supported: literals, escapes
// (\d \w \s and their negations, \n \t \r \f \v \0 \xHH \uHHHH \u{...}, escaped
// punctuation), classes and negated classes, `.`, groups (plain and (?:...)),
// alternation, and the quantifiers * + ? {m} {m,} {m,n} (a trailing lazy `?` is ignored).
// Lookaround, backreferences, word boundaries and inner anchors are rejected.
//
// The expression produces JSON text: `"` and `\` come out escaped (\" and \\); control
// characters, which JSON would need escaped, are left out of classes and `.` (the
// grammar then generates a subset of the pattern's strings, which is safe).
import { normalizeRanges, type Ranges, subtractRanges, UNICODE_SCALARS } from './ranges.js';

export class RegexError extends Error {
  override name = 'RegexError';
  constructor(
    readonly reason: string,
    readonly index: number,
  ) {
    super(`${reason} (at index ${index})`);
  }
}

const MAX_REPEAT = 2000;

const DIGIT: Ranges = [[0x30, 0x39]];
const WORD: Ranges = [
  [0x30, 0x39],
  [0x41, 0x5a],
  [0x5f, 0x5f],
  [0x61, 0x7a],
];
const SPACE: Ranges = normalizeRanges([
  [0x09, 0x0d],
  [0x20, 0x20],
  [0xa0, 0xa0],
  [0x1680, 0x1680],
  [0x2000, 0x200a],
  [0x2028, 0x2029],
  [0x202f, 0x202f],
  [0x205f, 0x205f],
  [0x3000, 0x3000],
  [0xfeff, 0xfeff],
]);
/** Characters JSON text cannot hold raw. */
const JSON_UNSAFE: Ranges = [
  [0x00, 0x1f],
  [0x22, 0x22],
  [0x5c, 0x5c],
  [0x7f, 0x7f],
];

/** GBNF for the JSON-string contents matching `pattern` (which must be ^...$). */
export function regexToGbnf(pattern: string, dotall = false): string {
  if (!pattern.startsWith('^') || !pattern.endsWith('$') || pattern.endsWith('\\$') || pattern.length < 2) {
    throw new RegexError("a pattern must start with '^' and end with '$'", 0);
  }
  const p = new RegexParser(pattern.slice(0, -1), dotall);
  p.i = 1;
  const out = p.alternation();
  if (p.i < p.src.length) throw new RegexError(`unexpected '${p.src[p.i]}'`, p.i);
  return out;
}

class RegexParser {
  i = 0;
  constructor(
    readonly src: string,
    private readonly dotall: boolean,
  ) {}

  private peek(): string {
    return this.src[this.i] ?? '';
  }

  alternation(): string {
    const alts = [this.sequence()];
    while (this.peek() === '|') {
      this.i++;
      alts.push(this.sequence());
    }
    return alts.length === 1 ? alts[0]! : alts.join(' | ');
  }

  private sequence(): string {
    const items: string[] = [];
    while (this.i < this.src.length && this.peek() !== '|' && this.peek() !== ')') {
      const atom = this.atom();
      items.push(this.quantifier(atom));
    }
    return items.length === 0 ? '""' : items.join(' ');
  }

  private atom(): string {
    const at = this.i;
    const c = this.src.codePointAt(this.i)!;
    const ch = String.fromCodePoint(c);
    this.i += ch.length;
    switch (ch) {
      case '(': {
        if (this.peek() === '?') {
          if (this.src[this.i + 1] !== ':') throw new RegexError('lookaround and named groups are not supported', at);
          this.i += 2;
        }
        const inner = this.alternation();
        if (this.peek() !== ')') throw new RegexError("missing ')'", at);
        this.i++;
        return `(${inner})`;
      }
      case '[':
        return this.charClass(at);
      case '.':
        return classGbnf(
          this.dotall
            ? UNICODE_SCALARS
            : subtractRanges(UNICODE_SCALARS, [
                [0x0a, 0x0a],
                [0x0d, 0x0d],
              ]),
          at,
        );
      case '\\': {
        const e = this.escape(at, false);
        return typeof e === 'number' ? charGbnf(e) : classGbnf(e, at);
      }
      case '^':
      case '$':
        throw new RegexError('anchors are only supported at the ends of the pattern', at);
      case '*':
      case '+':
      case '?':
        throw new RegexError(`nothing to repeat before '${ch}'`, at);
      case ')':
        throw new RegexError("unbalanced ')'", at);
      default:
        return charGbnf(c);
    }
  }

  private quantifier(atom: string): string {
    const at = this.i;
    const c = this.peek();
    let q = '';
    if (c === '*' || c === '+' || c === '?') {
      this.i++;
      q = c;
    } else if (c === '{') {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
      if (!m) return atom; // a literal '{' follows
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === '' ? -1 : Number(m[3]);
      if (max >= 0 && max < min) throw new RegexError(`repetition {${min},${max}} has min > max`, at);
      if (min > MAX_REPEAT || max > MAX_REPEAT) throw new RegexError(`repetition bound above ${MAX_REPEAT}`, at);
      this.i += m[0].length;
      q = max === min ? `{${min}}` : max < 0 ? `{${min},}` : `{${min},${max}}`;
    } else {
      return atom;
    }
    if (this.peek() === '?')
      this.i++; // lazy: the same language
    else if (this.peek() === '+') throw new RegexError('possessive quantifiers are not supported', this.i);
    if (['*', '+', '?', '{'].includes(this.peek())) throw new RegexError('nested quantifier', this.i);
    // (a GBNF literal such as "\\\"" repeats as a unit, like the one JSON character it stands for)
    return `${atom}${q}`;
  }

  /** After a backslash: a code point, or ranges for a class escape. */
  private escape(at: number, inClass: boolean): number | Ranges {
    const c = this.src[this.i];
    if (c === undefined) throw new RegexError('pattern ends with a backslash', at);
    this.i++;
    switch (c) {
      case 'd':
        return DIGIT;
      case 'D':
        return subtractRanges(UNICODE_SCALARS, DIGIT);
      case 'w':
        return WORD;
      case 'W':
        return subtractRanges(UNICODE_SCALARS, WORD);
      case 's':
        return SPACE;
      case 'S':
        return subtractRanges(UNICODE_SCALARS, SPACE);
      case 'n':
        return 0x0a;
      case 'r':
        return 0x0d;
      case 't':
        return 0x09;
      case 'f':
        return 0x0c;
      case 'v':
        return 0x0b;
      case '0':
        return 0;
      case 'b':
        if (inClass) return 0x08;
        throw new RegexError('word boundaries are not supported', at);
      case 'B':
        throw new RegexError('word boundaries are not supported', at);
      case 'x':
      case 'u': {
        const m =
          c === 'x'
            ? /^[0-9a-fA-F]{2}/.exec(this.src.slice(this.i))
            : (/^\{([0-9a-fA-F]{1,6})\}/.exec(this.src.slice(this.i)) ??
              /^[0-9a-fA-F]{4}/.exec(this.src.slice(this.i)));
        if (!m) throw new RegexError(`bad \\${c} escape`, at);
        this.i += m[0].length;
        return Number.parseInt(m[1] ?? m[0], 16);
      }
      default:
        if (/[1-9]/.test(c)) throw new RegexError('backreferences are not supported', at);
        if (/[a-zA-Z]/.test(c)) throw new RegexError(`unknown escape '\\${c}'`, at);
        return this.src.codePointAt(this.i - 1)!;
    }
  }

  private charClass(at: number): string {
    let negate = false;
    if (this.peek() === '^') {
      negate = true;
      this.i++;
    }
    const raw: [number, number][] = [];
    let first = true;
    while (true) {
      if (this.i >= this.src.length) throw new RegexError("missing ']'", at);
      if (this.peek() === ']' && !first) break;
      first = false;
      const lo = this.classAtom(at);
      if (
        this.peek() === '-' &&
        this.src[this.i + 1] !== ']' &&
        this.i + 1 < this.src.length &&
        typeof lo === 'number'
      ) {
        this.i++;
        const hi = this.classAtom(at);
        if (typeof hi !== 'number') throw new RegexError('a class escape cannot end a range', at);
        if (hi < lo) throw new RegexError('range out of order', at);
        raw.push([lo, hi]);
      } else if (typeof lo === 'number') raw.push([lo, lo]);
      else raw.push(...lo);
    }
    this.i++;
    const set = normalizeRanges(raw);
    return classGbnf(negate ? subtractRanges(UNICODE_SCALARS, set) : set, at);
  }

  private classAtom(at: number): number | Ranges {
    const c = this.src.codePointAt(this.i)!;
    this.i += c > 0xffff ? 2 : 1;
    return c === 0x5c ? this.escape(at, true) : c;
  }
}

function hex(c: number, width: number): string {
  return c.toString(16).padStart(width, '0');
}

/** A code point inside a GBNF literal or class. */
function gbnfChar(c: number, inClass: boolean): string {
  if (c === 0x22 || c === 0x5c || (inClass && (c === 0x5d || c === 0x5b || c === 0x2d || c === 0x5e))) {
    return `\\${String.fromCharCode(c)}`;
  }
  if (c < 0x20 || c === 0x7f) return `\\x${hex(c, 2)}`;
  if (c > 0xffff) return `\\U${hex(c, 8)}`;
  if (c >= 0x80 && c < 0xa0) return `\\u${hex(c, 4)}`;
  return String.fromCodePoint(c);
}

/** GBNF for one character as it appears in JSON text. */
function charGbnf(c: number): string {
  if (c === 0x22) return '"\\\\\\""'; // \"
  if (c === 0x5c) return '"\\\\\\\\"'; // \\
  if (c < 0x20 || c === 0x7f) {
    const short: Record<number, string> = { 8: 'b', 9: 't', 10: 'n', 12: 'f', 13: 'r' };
    return `"\\\\${short[c] ?? `u${hex(c, 4)}`}"`;
  }
  return `"${gbnfChar(c, false)}"`;
}

/** GBNF for a set of characters as they appear in JSON text (control characters left out). */
function classGbnf(set: readonly (readonly [number, number])[], at: number): string {
  const safe = subtractRanges(set, JSON_UNSAFE);
  const has = (c: number) => set.some(([lo, hi]) => lo <= c && c <= hi);
  const alts: string[] = [];
  if (safe.length > 0) {
    let s = '[';
    for (const [lo, hi] of safe) s += lo === hi ? gbnfChar(lo, true) : `${gbnfChar(lo, true)}-${gbnfChar(hi, true)}`;
    alts.push(`${s}]`);
  }
  if (has(0x22)) alts.push(charGbnf(0x22));
  if (has(0x5c)) alts.push(charGbnf(0x5c));
  if (alts.length === 0) throw new RegexError('character class matches no character that JSON text can hold raw', at);
  return alts.length === 1 ? alts[0]! : `(${alts.join(' | ')})`;
}
