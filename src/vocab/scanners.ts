// Hand-written pre-tokenizer stages. llama.cpp replaces some regexes by scanners
// (unicode.cpp: GPT-2, LLaMA-3, Qwen2, Qwen3.5, Kimi-K2, AFMoE digits, newline runs); the
// others here stand in for regexes llama.cpp runs through std::regex, because the regex
// engine is slow on them, and must cut text exactly as that regex does (the tests check
// both against llama.cpp and against the regex).
//
// A stage maps word lengths (in codepoints) to finer word lengths. Most scanners are
// written as "where does the word that starts at `pos` end", given the piece [pos, end).
import {
  RE_AFMOE_DIGITS,
  RE_AFMOE_WORDS,
  RE_DEEPSEEK3_WORDS,
  RE_GPT2,
  RE_KIMI_K2,
  RE_LLAMA3,
  RE_LLAMA3_ORIGINAL,
  RE_MINICPM5,
  RE_NEWLINES,
  RE_QWEN2,
  RE_QWEN35,
  RE_SUPERBPE_DIGITS,
  RE_TINY_AYA_DIGITS,
} from './pretypes.js';
import {
  cptToLower,
  FLAG_ACCENT_MARK,
  FLAG_LETTER,
  FLAG_NUMBER,
  FLAG_PUNCTUATION,
  FLAG_SYMBOL,
  FLAG_WHITESPACE,
} from './unicode.js';

/** What every stage of one split sees: the codepoints and their category flags. */
export interface SplitContext {
  cpts: Uint32Array;
  flags: Uint16Array;
  collapsed?: string;
  wide?: { text: string; cptToUnit: Int32Array; unitToCpt: Int32Array | null };
}

/** One stage of splitting: word lengths (in codepoints) in, finer word lengths out. */
export type Stage = (ctx: SplitContext, lengths: number[]) => number[];

/** End of the word starting at `pos` inside the piece ending at `end` (always > pos). */
type WordEnd = (cpts: Uint32Array, flags: Uint16Array, pos: number, end: number) => number;

function wordStage(next: WordEnd): Stage {
  return (ctx, lengths) => {
    const { cpts, flags } = ctx;
    const out: number[] = [];
    let end = 0;
    for (let k = 0; k < lengths.length; k++) {
      let pos = end;
      end += lengths[k]!;
      while (pos < end) {
        const e = next(cpts, flags, pos, end);
        out.push(e - pos);
        pos = e;
      }
    }
    return out;
  };
}

const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const APOS = 0x27;
const WLN = FLAG_WHITESPACE | FLAG_LETTER | FLAG_NUMBER;

/** Length of a contraction ('s 't 'm 'd 're 've 'll) at `pos`, or 0; `fold` lowercases the letters first. */
function contraction(cpts: Uint32Array, pos: number, end: number, fold: boolean): number {
  if (cpts[pos] !== APOS || pos + 1 >= end) return 0;
  const a = fold ? cptToLower(cpts[pos + 1]!) : cpts[pos + 1]!;
  if (a === 0x73 || a === 0x74 || a === 0x6d || a === 0x64) return 2;
  if (pos + 2 >= end) return 0;
  const b = fold ? cptToLower(cpts[pos + 2]!) : cpts[pos + 2]!;
  if ((a === 0x72 && b === 0x65) || (a === 0x76 && b === 0x65) || (a === 0x6c && b === 0x6c)) return 3;
  return 0;
}

/** Whitespace at `pos`: \s*[\r\n]+, else \s+(?!\S), else \s+; a lone other char otherwise. */
function spaceEnd(cpts: Uint32Array, flags: Uint16Array, pos: number, end: number, newlines: boolean): number {
  let p = pos;
  let lastNl = -1;
  while (p < end && flags[p]! & FLAG_WHITESPACE) {
    if (newlines && (cpts[p] === CR || cpts[p] === LF)) lastNl = p + 1;
    p++;
  }
  if (lastNl > 0) return lastNl;
  const ws = p - pos;
  if (ws > 1 && p < end) return p - 1;
  return ws > 0 ? p : pos + 1;
}

// GPT-2: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
const gpt2End: WordEnd = (cpts, flags, pos, end) => {
  const c = contraction(cpts, pos, end, false);
  if (c) return pos + c;
  const sp = cpts[pos] === SPACE ? 1 : 0;
  const f2 = sp ? (pos + 1 < end ? flags[pos + 1]! : 0) : flags[pos]!;
  let p = pos + sp;
  if (f2 & FLAG_LETTER) {
    while (p < end && flags[p]! & FLAG_LETTER) p++;
    return p;
  }
  if (f2 & FLAG_NUMBER) {
    while (p < end && flags[p]! & FLAG_NUMBER) p++;
    return p;
  }
  if (f2 && !(f2 & WLN)) {
    while (p < end && flags[p]! && !(flags[p]! & WLN)) p++;
    return p;
  }
  return spaceEnd(cpts, flags, pos, end, false);
};

interface Llama3Like {
  /** Longest digit group: 3 (LLaMA-3), 1 (Qwen2), unbounded (MiniCPM5's second stage). */
  digits: number;
  /** Letter runs take combining marks (Qwen3.5). */
  marks: boolean;
}

// LLaMA-3 and kin: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//   ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
function llama3Like({ digits, marks }: Llama3Like): WordEnd {
  const word = marks ? FLAG_LETTER | FLAG_ACCENT_MARK : FLAG_LETTER;
  const notPunct = marks ? WLN | FLAG_ACCENT_MARK : WLN;
  return (cpts, flags, pos, end) => {
    const c = contraction(cpts, pos, end, true);
    if (c) return pos + c;
    const cpt = cpts[pos]!;
    const f = flags[pos]!;
    if (!(cpt === CR || cpt === LF || f & FLAG_NUMBER)) {
      if (f & word || (pos + 1 < end && flags[pos + 1]! & word)) {
        let p = pos + 1;
        while (p < end && flags[p]! & word) p++;
        return p;
      }
    }
    if (f & FLAG_NUMBER) {
      let p = pos + 1;
      while (p < end && p - pos < digits && flags[p]! & FLAG_NUMBER) p++;
      return p;
    }
    const sp = cpt === SPACE ? 1 : 0;
    const f2 = sp ? (pos + 1 < end ? flags[pos + 1]! : 0) : f;
    if (!(f2 & notPunct) && f) {
      let p = pos + sp;
      while (p < end && flags[p]! && !(flags[p]! & notPunct)) p++;
      while (p < end && (cpts[p] === CR || cpts[p] === LF)) p++;
      return p;
    }
    return spaceEnd(cpts, flags, pos, end, true);
  };
}

/** Han characters as llama.cpp's unicode_cpt_is_han counts them. */
function isHan(c: number): boolean {
  return (
    (c >= 0x4e00 && c <= 0x9fff) ||
    (c >= 0x3400 && c <= 0x4dbf) ||
    (c >= 0x20000 && c <= 0x2a6df) ||
    (c >= 0x2a700 && c <= 0x2b73f) ||
    (c >= 0x2b740 && c <= 0x2b81f) ||
    (c >= 0x2b820 && c <= 0x2ceaf) ||
    (c >= 0x2ceb0 && c <= 0x2ebef) ||
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0x2f800 && c <= 0x2fa1f)
  );
}

// Kimi-K2: [\p{Han}]+ | [^\r\n\p{L}\p{N}]? non-Han letters (?i:'s|'t|'re|'ve|'m|'ll|'d)? |
//   \p{N}{1,3} | ?[^\s\p{L}\p{N}]+[\r\n]* | \s*[\r\n]+ | \s+(?!\S) | \s+
const kimiK2End: WordEnd = (cpts, flags, pos, end) => {
  const cpt = cpts[pos]!;
  const f = flags[pos]!;
  if (isHan(cpt)) {
    let p = pos + 1;
    while (p < end && isHan(cpts[p]!)) p++;
    return p;
  }
  const letter = (p: number) => p < end && flags[p]! & FLAG_LETTER && !isHan(cpts[p]!);
  const lead = !(cpt === CR || cpt === LF || f & (FLAG_LETTER | FLAG_NUMBER));
  if ((f & FLAG_LETTER && !isHan(cpt)) || (lead && letter(pos + 1))) {
    let p = lead ? pos + 1 : pos;
    while (letter(p)) p++;
    if (p < end && cpts[p] === APOS) p += contraction(cpts, p, end, true);
    return p;
  }
  if (f & FLAG_NUMBER) {
    let p = pos + 1;
    while (p < end && p - pos < 3 && flags[p]! & FLAG_NUMBER) p++;
    return p;
  }
  const sp = cpt === SPACE ? 1 : 0;
  const f2 = sp ? (pos + 1 < end ? flags[pos + 1]! : 0) : f;
  if (f2 && !(f2 & WLN)) {
    let p = pos + sp;
    while (p < end && flags[p]! && !(flags[p]! & WLN)) p++;
    while (p < end && (cpts[p] === CR || cpts[p] === LF)) p++;
    return p;
  }
  return spaceEnd(cpts, flags, pos, end, true);
};

/**
 * AFMoE's digit splitter (llama.cpp's, also run for tiny_aya's digit regex): a run of
 * numbers is cut into groups of three from the right. As in llama.cpp, the first group
 * of a run also takes whatever non-digits precede it in the piece.
 */
const afmoeDigitsStage: Stage = (ctx, lengths) => {
  const { flags } = ctx;
  const out: number[] = [];
  let end = 0;
  for (let k = 0; k < lengths.length; k++) {
    let pos = end;
    end += lengths[k]!;
    let prevEnd = pos;
    while (pos < end) {
      if (!(flags[pos]! & FLAG_NUMBER)) {
        pos++;
        continue;
      }
      const start = pos;
      while (pos < end && flags[pos]! & FLAG_NUMBER) pos++;
      let cur = start + ((pos - start) % 3);
      if (cur > start) {
        out.push(cur - prevEnd);
        prevEnd = cur;
      }
      for (; cur < pos; cur += 3) {
        out.push(cur + 3 - prevEnd);
        prevEnd = cur + 3;
      }
    }
    if (prevEnd < end) out.push(end - prevEnd);
  }
  return out;
};

// [^\n]+|[\n]+
const newlinesEnd: WordEnd = (cpts, _flags, pos, end) => {
  const nl = cpts[pos] === LF;
  let p = pos + 1;
  while (p < end && (cpts[p] === LF) === nl) p++;
  return p;
};

const PS = FLAG_PUNCTUATION | FLAG_SYMBOL;

/** ASCII punctuation and symbols: [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~]. */
function isAsciiPunct(c: number): boolean {
  return (c >= 0x21 && c <= 0x2f) || (c >= 0x3a && c <= 0x40) || (c >= 0x5b && c <= 0x60) || (c >= 0x7b && c <= 0x7e);
}

function isAsciiLetter(c: number): boolean {
  return (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a);
}

// DeepSeek-V3's (and AFMoE's) word regex, as std::regex runs it on the collapsed text:
// [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+|
//  ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Unmatched characters (numbers, controls) are runs of their own between matches.
const deepseek3WordsStage: Stage = (ctx, lengths) => {
  const { cpts, flags } = ctx;
  const LM = FLAG_LETTER | FLAG_ACCENT_MARK;
  const out: number[] = [];
  let end = 0;
  for (let k = 0; k < lengths.length; k++) {
    let pos = end;
    end += lengths[k]!;
    let unmatched = pos; // start of the stretch no alternative matched
    while (pos < end) {
      const cpt = cpts[pos]!;
      const f = flags[pos]!;
      let e = -1;
      if (isAsciiPunct(cpt) && pos + 1 < end && isAsciiLetter(cpts[pos + 1]!)) {
        e = pos + 2;
        while (e < end && isAsciiLetter(cpts[e]!)) e++;
      } else if (
        f & LM ||
        (!(cpt === CR || cpt === LF || f & FLAG_LETTER || f & PS) && pos + 1 < end && flags[pos + 1]! & LM)
      ) {
        e = pos + 1;
        while (e < end && flags[e]! & LM) e++;
      } else if (f & PS || (cpt === SPACE && pos + 1 < end && flags[pos + 1]! & PS)) {
        e = cpt === SPACE ? pos + 1 : pos;
        while (e < end && flags[e]! & PS) e++;
        while (e < end && (cpts[e] === CR || cpts[e] === LF)) e++;
      } else if (f & FLAG_WHITESPACE) {
        e = spaceEnd(cpts, flags, pos, end, true);
      }
      if (e < 0) {
        pos++;
        continue;
      }
      if (pos > unmatched) out.push(pos - unmatched);
      out.push(e - pos);
      pos = e;
      unmatched = e;
    }
    if (end > unmatched) out.push(end - unmatched);
  }
  return out;
};

/**
 * SuperBPE's (?=(\d{3})+(?!\d)): a lookahead only, so every match is empty, and an empty
 * match still cuts the piece (std::regex_iterator reports it). It matches where the ASCII
 * digits from there to the end of their run (within the piece) are a positive multiple
 * of three: "1234567" becomes 1 | 234 | 567.
 */
const superbpeDigitsStage: Stage = (ctx, lengths) => {
  const { cpts } = ctx;
  const out: number[] = [];
  const digit = (c: number) => c >= 0x30 && c <= 0x39;
  let end = 0;
  for (let k = 0; k < lengths.length; k++) {
    const start = end;
    end += lengths[k]!;
    let prev = start;
    for (let p = start; p < end; ) {
      if (!digit(cpts[p]!)) {
        p++;
        continue;
      }
      let q = p;
      while (q < end && digit(cpts[q]!)) q++;
      for (let cut = p + ((q - p) % 3); cut < q; cut += 3) {
        if (cut > prev) {
          out.push(cut - prev);
          prev = cut;
        }
      }
      p = q;
    }
    if (end > prev) out.push(end - prev);
  }
  return out;
};

// ---- simple patterns: (\s?)CLASS(+)?, \s+$ ----

/**
 * One character class as the regex engine applies it: a category bit (\p{L} … on the
 * collapsed text, where whitespace above 127 takes precedence), or a table of literal
 * characters (std::wregex on llama.cpp's wide text, where whitespace above 127 reads as
 * \v): the BMP as a byte table, the rest as sorted ranges.
 */
interface CharClass {
  bit: number;
  bmp: Uint8Array | null;
  astral: [number, number][];
}

function inClass(k: CharClass, cpt: number, flags: number): boolean {
  const wide = cpt > 127 && (flags & FLAG_WHITESPACE) !== 0;
  if (k.bmp === null) return (flags & k.bit) !== 0 && !wide;
  if (cpt < 0x10000) return k.bmp[wide ? 0x0b : cpt] === 1;
  const r = k.astral;
  let lo = 0;
  let hi = r.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cpt < r[mid]![0]) hi = mid - 1;
    else if (cpt > r[mid]![1]) lo = mid + 1;
    else return true;
  }
  return false;
}

/** A bracket class of literal characters and ranges (`[A-Za-zµÀ-Ö…]`, `[\r\n]`); undefined for anything else. */
function literalClass(body: string): CharClass | undefined {
  if (body.startsWith('^') || body.includes('\\') || body.includes('[')) return undefined;
  const cps = [...body].map((c) => c.codePointAt(0)!);
  const bmp = new Uint8Array(0x10000);
  const astral: [number, number][] = [];
  for (let i = 0; i < cps.length; i++) {
    let [a, b] = [cps[i]!, cps[i]!];
    if (i + 2 < cps.length && cps[i + 1] === 0x2d) {
      b = cps[i + 2]!;
      i += 2;
    }
    bmp.fill(1, a, Math.min(b, 0xffff) + 1);
    if (b > 0xffff) astral.push([Math.max(a, 0x10000), b]);
  }
  astral.sort((x, y) => x[0] - y[0]);
  return { bit: 0, bmp, astral };
}

/** \p{L}, \p{N}, \p{P}, \p{S}, \p{M}. */
function categoryClass(name: string): CharClass | undefined {
  const bit = { L: FLAG_LETTER, N: FLAG_NUMBER, P: FLAG_PUNCTUATION, S: FLAG_SYMBOL, M: FLAG_ACCENT_MARK }[name];
  return bit === undefined ? undefined : { bit, bmp: null, astral: [] };
}

/** `\s?CLASS+`, `CLASS+`, `CLASS` (leftmost matches; the rest of each piece left as runs of its own). */
function classStage(k: CharClass, spacePrefix: boolean, repeat: boolean): Stage {
  return (ctx, lengths) => {
    const { cpts, flags } = ctx;
    const out: number[] = [];
    let end = 0;
    for (let j = 0; j < lengths.length; j++) {
      let pos = end;
      end += lengths[j]!;
      let unmatched = pos;
      while (pos < end) {
        let start = pos;
        if (
          spacePrefix &&
          flags[pos]! & FLAG_WHITESPACE &&
          pos + 1 < end &&
          inClass(k, cpts[pos + 1]!, flags[pos + 1]!)
        )
          start = pos + 1;
        else if (!inClass(k, cpts[pos]!, flags[pos]!)) {
          pos++;
          continue;
        }
        let e = start + 1;
        if (repeat) while (e < end && inClass(k, cpts[e]!, flags[e]!)) e++;
        if (pos > unmatched) out.push(pos - unmatched);
        out.push(e - pos);
        pos = e;
        unmatched = e;
      }
      if (end > unmatched) out.push(end - unmatched);
    }
    return out;
  };
}

/** `\s+$`: the trailing whitespace of each piece becomes a piece. */
const trailingSpaceStage: Stage = (ctx, lengths) => {
  const { flags } = ctx;
  const out: number[] = [];
  let end = 0;
  for (let k = 0; k < lengths.length; k++) {
    const start = end;
    end += lengths[k]!;
    let p = end;
    while (p > start && flags[p - 1]! & FLAG_WHITESPACE) p--;
    if (p > start) out.push(p - start);
    if (end > p) out.push(end - p);
  }
  return out;
};

/** A scanner for the simple shapes above, or undefined. */
function simpleStage(source: string): Stage | undefined {
  if (source === '\\s+$') return trailingSpaceStage;
  const m = /^(\\s\?)?(?:\[([^\]]+)\]|\\p\{([LNPSM])\})(\+)?$/su.exec(source);
  if (!m) return undefined;
  const k = m[2] !== undefined ? literalClass(m[2]) : categoryClass(m[3]!);
  return k && classStage(k, m[1] !== undefined, m[4] !== undefined);
}

/** Regexes that run as scanners, by their source (besides the simple shapes). */
const SCANNERS: ReadonlyMap<string, Stage> = new Map<string, Stage>([
  [RE_GPT2, wordStage(gpt2End)],
  [RE_LLAMA3, wordStage(llama3Like({ digits: 3, marks: false }))],
  [RE_LLAMA3_ORIGINAL, wordStage(llama3Like({ digits: 3, marks: false }))],
  [RE_QWEN2, wordStage(llama3Like({ digits: 1, marks: false }))],
  [RE_QWEN35, wordStage(llama3Like({ digits: 1, marks: true }))],
  [RE_MINICPM5, wordStage(llama3Like({ digits: Number.POSITIVE_INFINITY, marks: false }))],
  [RE_KIMI_K2, wordStage(kimiK2End)],
  [RE_AFMOE_DIGITS, afmoeDigitsStage],
  [RE_TINY_AYA_DIGITS, afmoeDigitsStage],
  [RE_NEWLINES, wordStage(newlinesEnd)],
  [RE_DEEPSEEK3_WORDS, deepseek3WordsStage],
  [RE_AFMOE_WORDS, deepseek3WordsStage], // the same pattern, with \r\n escaped
  [RE_SUPERBPE_DIGITS, superbpeDigitsStage],
]);

/** Regexes llama.cpp itself replaces by scanners; the others here only stand in for std::regex. */
const LLAMA_CPP_SCANNERS: ReadonlySet<string> = new Set([
  RE_GPT2,
  RE_LLAMA3,
  RE_LLAMA3_ORIGINAL,
  RE_QWEN2,
  RE_QWEN35,
  RE_KIMI_K2,
  RE_AFMOE_DIGITS,
  RE_TINY_AYA_DIGITS,
  RE_NEWLINES,
]);

/**
 * The scanner for a regex source, if there is one; `native` when llama.cpp itself runs a
 * scanner for it (a stand-in must cut exactly as the regex engine would).
 */
export function scannerFor(source: string): { stage: Stage; native: boolean } | undefined {
  const stage = SCANNERS.get(source) ?? simpleStage(source);
  return stage && { stage, native: LLAMA_CPP_SCANNERS.has(source) };
}
