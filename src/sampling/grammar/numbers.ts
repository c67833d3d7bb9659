// Numeric ranges as GBNF, for JSON Schema's minimum / maximum / exclusive bounds:
//   - integers in [min, max] as JSON writes them (no leading zeros, no "-0"), with bounds
//     up to 64 bits (llama.cpp's converter reads them as int64; Zod's `.int()` writes
//     ±9007199254740991), built digit by digit with BigInt;
//   - decimals ("number") in a range, written without an exponent: sign, integer part
//     and fraction, each constrained digit by digit. The grammar's language is exactly
//     the decimals of the range (up to 16 fraction digits, as llama.cpp's decimal-part),
//     so a bounded number never gets a wider grammar.

/** Integers have at most this many digits when unbounded (as llama.cpp's `integral-part`). */
export const MAX_DIGITS = 16;

/** The largest magnitude of an integer bound (int64, as llama.cpp reads bounds). */
export const INT64_MAX = (1n << 63n) - 1n;

function digitClass(lo: number, hi: number): string {
  return lo === hi ? `[${lo}]` : `[${lo}-${hi}]`;
}

function anyDigits(n: number): string {
  return n === 0 ? '' : n === 1 ? ' [0-9]' : ` [0-9]{${n}}`;
}

/** Digit strings of a's length from a to b (a <= b), leading zeros allowed: GBNF alternatives. */
function sameLength(a: string, b: string): string[] {
  if (a.length === 0) return [];
  if (a === b) return [`"${a}"`];
  if (a[0] === b[0]) {
    const rest = sameLength(a.slice(1), b.slice(1));
    return [`"${a[0]}" ${group(rest)}`];
  }
  const n = a.length - 1;
  const zeros = '0'.repeat(n);
  const nines = '9'.repeat(n);
  const out: string[] = [];
  let lo = Number(a[0]);
  let hi = Number(b[0]);
  if (n > 0 && a.slice(1) !== zeros) {
    out.push(`[${a[0]}] ${group(sameLength(a.slice(1), nines))}`);
    lo++;
  }
  let last: string | undefined;
  if (n > 0 && b.slice(1) !== nines) {
    last = `[${b[0]}] ${group(sameLength(zeros, b.slice(1)))}`;
    hi--;
  }
  if (lo <= hi) out.push(`${digitClass(lo, hi)}${anyDigits(n)}`);
  if (last) out.push(last);
  return out;
}

function group(alts: string[]): string {
  return alts.length === 1 ? alts[0]! : `(${alts.join(' | ')})`;
}

/** Non-negative integers in [lo, hi] (hi undefined: no bound) without leading zeros: alternatives. */
function nonNegative(lo: bigint, hi: bigint | undefined): string[] {
  const out: string[] = [];
  if (hi !== undefined && lo > hi) return out;
  if (lo === 0n) {
    out.push('"0"');
    if (hi === 0n) return out;
    lo = 1n;
  }
  const loLen = String(lo).length;
  const cap = Math.max(MAX_DIGITS, loLen);
  const hiLen = hi !== undefined ? String(hi).length : cap;
  for (let len = loLen; len <= hiLen; len++) {
    const low = 10n ** BigInt(len - 1);
    const first = len === loLen ? lo : low;
    const full = 10n ** BigInt(len) - 1n;
    if (hi === undefined && first === low) {
      // every number from here on: any length from len to the cap
      out.push(`[1-9]${len === cap ? anyDigits(len - 1) : ` [0-9]{${len - 1},${cap - 1}}`}`);
      break;
    }
    const last = hi !== undefined && hi < full ? hi : full;
    if (first > last) continue;
    out.push(...sameLength(String(first), String(last)));
  }
  return out;
}

/** GBNF for the integers in [min, max] (either may be absent), as JSON writes them. */
export function integerRange([min, max]: [number | bigint | undefined, number | bigint | undefined]): string {
  const lo = min === undefined ? undefined : BigInt(min);
  const hi = max === undefined ? undefined : BigInt(max);
  const alts: string[] = [];
  if (lo === undefined || lo < 0n) {
    const nlo = hi !== undefined && hi < 0n ? -hi : 1n;
    const nhi = lo === undefined ? undefined : -lo;
    const neg = nonNegative(nlo, nhi);
    if (neg.length > 0) alts.push(`"-" ${group(neg)}`);
  }
  if (hi === undefined || hi >= 0n) {
    alts.push(...nonNegative(lo !== undefined && lo > 0n ? lo : 0n, hi));
  }
  return alts.join(' | ');
}

// ---- decimals ----

/** A finite number as its exact shortest decimal: sign, integer digits, fraction digits (no trailing zeros). */
export interface Decimal {
  neg: boolean;
  int: bigint;
  frac: string;
}

export function toDecimal(v: number): Decimal {
  const neg = v < 0 || Object.is(v, -0);
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(Math.abs(v)))!;
  let digits = m[1]! + (m[2] ?? '');
  let point = m[1]!.length + Number(m[3] ?? 0);
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += '0'.repeat(point - digits.length);
  const frac = digits.slice(point).replace(/0+$/, '');
  return { neg: neg && digits.replace(/0/g, '') !== '', int: BigInt(digits.slice(0, point) || '0'), frac };
}

/** Fraction digit strings (the digits after ".") satisfying a constraint: whether none at all may be written, and the non-empty forms. */
interface Fractions {
  empty: boolean;
  alts: string[];
}

/** Any tail of fraction digits (llama.cpp's decimal-part: at most 16 in all). */
const ANY_TAIL = '[0-9]{0,15}';

const isZeros = (s: string) => /^0*$/.test(s);

/** Fractions F with F ≥ s (or > s when strict), digit strings compared as if padded with zeros. */
function fracGe(s: string, strict: boolean): Fractions {
  if (isZeros(s)) {
    if (!strict) return { empty: true, alts: [`[0-9] ${ANY_TAIL}`] };
    // some digit is not zero
    return { empty: false, alts: [`"0"* [1-9] ${ANY_TAIL}`] };
  }
  const c = Number(s[0]);
  const alts: string[] = [];
  if (c < 9) alts.push(`${digitClass(c + 1, 9)} ${ANY_TAIL}`);
  const rest = fracGe(s.slice(1), strict);
  alts.push(...withDigit(c, rest));
  return { empty: false, alts };
}

/** Fractions F with F ≤ s (or < s when strict). */
function fracLe(s: string, strict: boolean): Fractions {
  if (isZeros(s)) {
    if (strict) return { empty: false, alts: [] };
    return { empty: true, alts: ['"0"+'] };
  }
  const c = Number(s[0]);
  const alts: string[] = [];
  if (c > 0) alts.push(`${digitClass(0, c - 1)} ${ANY_TAIL}`);
  alts.push(...withDigit(c, fracLe(s.slice(1), strict)));
  return { empty: true, alts };
}

/** Fractions between lo and hi (lo ≤ hi as fractions). */
function fracBetween(lo: string, hi: string, strictLo: boolean, strictHi: boolean): Fractions {
  if (isZeros(lo) && !strictLo) return fracLe(hi, strictHi);
  if (isZeros(hi)) return { empty: false, alts: [] }; // lo > 0 = hi
  const a = Number(lo[0] ?? '0');
  const b = Number(hi[0]!);
  if (a === b) return { empty: false, alts: withDigit(a, fracBetween(lo.slice(1), hi.slice(1), strictLo, strictHi)) };
  const alts = [...withDigit(a, fracGe(lo.slice(1), strictLo))];
  if (a + 1 <= b - 1) alts.push(`${digitClass(a + 1, b - 1)} ${ANY_TAIL}`);
  alts.push(...withDigit(b, fracLe(hi.slice(1), strictHi)));
  return { empty: false, alts };
}

/** Digit `d` followed by fractions `f` (an empty f: the digit alone). */
function withDigit(d: number, f: Fractions): string[] {
  const out: string[] = [];
  if (f.empty) out.push(`"${d}"`);
  for (const a of f.alts) out.push(`"${d}" (${a})`);
  return out;
}

/** The fraction part as GBNF (with its "."), or undefined when no fraction satisfies. */
function fractionRule(f: Fractions): string | undefined {
  if (f.alts.length === 0) return f.empty ? '' : undefined;
  const dot = `"." ${group(f.alts)}`;
  return f.empty ? ` (${dot})?` : ` ${dot}`;
}

const ANY_FRACTION = ` ("." [0-9]{1,16})?`;

/** Non-negative decimals in a range (lo ≥ 0; hi undefined: none), as alternatives. */
function nonNegativeDecimals(lo: Decimal, strictLo: boolean, hi: Decimal | undefined, strictHi: boolean): string[] {
  const out: string[] = [];
  const intLit = (n: bigint) => `"${n}"`;
  if (hi !== undefined && hi.int === lo.int) {
    const f = fractionRule(fracBetween(lo.frac, hi.frac, strictLo, strictHi));
    if (f !== undefined) out.push(`${intLit(lo.int)}${f}`);
    return out;
  }
  const first = fractionRule(fracGe(lo.frac, strictLo));
  if (first !== undefined) out.push(`${intLit(lo.int)}${first}`);
  const mid = nonNegative(lo.int + 1n, hi === undefined ? undefined : hi.int - 1n);
  if (mid.length > 0) out.push(`${group(mid)}${ANY_FRACTION}`);
  if (hi !== undefined) {
    const last = fractionRule(fracLe(hi.frac, strictHi));
    if (last !== undefined) out.push(`${intLit(hi.int)}${last}`);
  }
  return out;
}

/** A bound: its value and whether it is exclusive. */
export interface Bound {
  value: number;
  exclusive: boolean;
}

const ZERO: Decimal = { neg: false, int: 0n, frac: '' };

/**
 * GBNF for the decimals in a range (either bound may be absent), written without an
 * exponent; empty when no number lies in it.
 */
export function decimalRange(min: Bound | undefined, max: Bound | undefined): string {
  const alts: string[] = [];
  const lo = min && toDecimal(min.value);
  const hi = max && toDecimal(max.value);
  // x ≥ 0
  if (max === undefined || max.value > 0 || (max.value === 0 && !max.exclusive)) {
    const from = min !== undefined && min.value >= 0 ? lo! : ZERO;
    const strictFrom = min !== undefined && min.value >= 0 ? min.exclusive : false;
    alts.push(...nonNegativeDecimals(from, strictFrom, hi, max?.exclusive ?? false));
  }
  // x < 0, as "-" y with y = -x > 0
  if (min === undefined || min.value < 0) {
    const yLo = max !== undefined && max.value <= 0 ? { ...hi!, neg: false } : ZERO;
    const yLoStrict = max !== undefined && max.value <= 0 ? max.exclusive || max.value === 0 : true;
    const yHi = min === undefined ? undefined : { ...lo!, neg: false };
    const neg = nonNegativeDecimals(yLo, yLoStrict, yHi, min?.exclusive ?? false);
    if (neg.length > 0) alts.push(`"-" ${group(neg)}`);
  }
  return alts.join(' | ');
}
