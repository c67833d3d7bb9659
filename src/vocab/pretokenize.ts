// BPE pre-tokenizers: a `tokenizer.ggml.pre` name (pretypes.ts) gives a list of regexes
// that cut text into words before merging, applied one after the other to the pieces the
// previous one left. As in llama.cpp, some run as hand-written scanners (scanners.ts),
// and the others run as regexes on a "collapsed" text in which every codepoint above 127
// stands as one placeholder char for its Unicode category (so \p{L} matches exactly what
// llama.cpp's tables call a letter), or on codepoints when a pattern has no \p{..}.
import { type SplitContext, type Stage, scannerFor } from './scanners.js';
import {
  cptFlags,
  FLAG_ACCENT_MARK,
  FLAG_LETTER,
  FLAG_NUMBER,
  FLAG_PUNCTUATION,
  FLAG_SYMBOL,
  FLAG_WHITESPACE,
} from './unicode.js';

const UCATS: Record<string, [number, string]> = {
  '\\p{N}': [0xd1, '0-9'],
  '\\p{L}': [0xd2, 'A-Za-z'],
  '\\p{P}': [0xd3, '!-#%-*,-/:-;?-@\\[-\\]_\\{\\}'],
  '\\p{M}': [0xd4, ''],
  '\\p{S}': [0xd5, '\\$\\+<->\\^`\\|\\~'], // '~' as in node-llama-cpp 3.21.1's llama.cpp
  '\\p{Lu}': [0xd2, 'A-Za-z'],
  '\\p{Ll}': [0xd2, 'A-Za-z'],
  '\\p{Lt}': [0xd2, 'A-Za-z'],
  '\\p{Lm}': [0xd2, 'A-Za-z'],
  '\\p{Lo}': [0xd2, 'A-Za-z'],
};

function usesCategories(re: string): boolean {
  return Object.keys(UCATS).some((k) => re.includes(k));
}

/** Rewrite \p{..} into classes over the collapsed alphabet (as llama.cpp does for std::regex). */
function collapseRegex(re: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i]!;
    if (c === '[' && (i === 0 || re[i - 1] !== '\\')) {
      out += c;
      inside = true;
      continue;
    }
    if (inside && c === ']' && re[i - 1] !== '\\') {
      out += c;
      inside = false;
      continue;
    }
    if (c === '\\' && re[i + 1] === 'p' && re[i + 2] === '{') {
      const close = re.indexOf('}', i + 3);
      const cat = close > 0 ? UCATS[re.slice(i, close + 1)] : undefined;
      if (cat) {
        const body = String.fromCharCode(cat[0]) + cat[1];
        out += inside ? body : `[${body}]`;
        i = close;
        continue;
      }
    }
    out += c;
  }
  return out;
}

/** For codepoint-mode patterns: \s and \S mean ASCII whitespace only (as std::wregex in the C locale). */
function asciiSpaces(re: string): string {
  let out = '';
  let inside = false;
  for (let i = 0; i < re.length; i++) {
    const c = re[i]!;
    if (c === '\\') {
      const d = re[i + 1];
      if (d === 's') out += inside ? '\\t\\n\\v\\f\\r ' : '[\\t\\n\\v\\f\\r ]';
      else if (d === 'S' && !inside) out += '[^\\t\\n\\v\\f\\r ]';
      else out += c + (d ?? '');
      i++;
      continue;
    }
    if (c === '[') inside = true;
    else if (c === ']') inside = false;
    out += c;
  }
  return out;
}

function collapsedText(ctx: SplitContext): string {
  if (ctx.collapsed !== undefined) return ctx.collapsed;
  const { cpts, flags } = ctx;
  const codes = new Uint16Array(cpts.length);
  for (let i = 0; i < cpts.length; i++) {
    const c = cpts[i]!;
    if (c < 128) {
      codes[i] = c;
      continue;
    }
    const f = flags[i]!;
    if (f & FLAG_WHITESPACE) codes[i] = 0x0b;
    else if (f & FLAG_NUMBER) codes[i] = 0xd1;
    else if (f & FLAG_LETTER) codes[i] = 0xd2;
    else if (f & FLAG_PUNCTUATION) codes[i] = 0xd3;
    else if (f & FLAG_ACCENT_MARK) codes[i] = 0xd4;
    else if (f & FLAG_SYMBOL) codes[i] = 0xd5;
    else codes[i] = 0xd0;
  }
  ctx.collapsed = utf16ToString(codes);
  return ctx.collapsed;
}

function utf16ToString(codes: Uint16Array): string {
  let s = '';
  for (let i = 0; i < codes.length; i += 8192)
    s += String.fromCharCode.apply(null, codes.subarray(i, i + 8192) as never);
  return s;
}

function wideText(ctx: SplitContext): NonNullable<SplitContext['wide']> {
  if (ctx.wide) return ctx.wide;
  const { cpts, flags } = ctx;
  let units = cpts.length;
  for (let i = 0; i < cpts.length; i++) if (cpts[i]! > 0xffff && cpts[i]! <= 0x10ffff) units++;
  const codes = new Uint16Array(units);
  const cptToUnit = new Int32Array(cpts.length + 1);
  let u = 0;
  for (let i = 0; i < cpts.length; i++) {
    cptToUnit[i] = u;
    let c = cpts[i]!;
    if (c > 0x7f && flags[i]! & FLAG_WHITESPACE) c = 0x0b;
    else if (c > 0x10ffff) c = 0xfffd;
    if (c > 0xffff) {
      c -= 0x10000;
      codes[u++] = 0xd800 | (c >> 10);
      codes[u++] = 0xdc00 | (c & 0x3ff);
    } else {
      codes[u++] = c;
    }
  }
  cptToUnit[cpts.length] = u;
  let unitToCpt: Int32Array | null = null;
  if (units !== cpts.length) {
    unitToCpt = new Int32Array(units + 1);
    for (let i = 0; i <= cpts.length; i++) unitToCpt[cptToUnit[i]!] = i;
  }
  ctx.wide = { text: utf16ToString(codes), cptToUnit, unitToCpt };
  return ctx.wide;
}

/**
 * Whether a match never depends on text after its end: no lookaround, anchors or word
 * boundaries. Such a regex may search the whole text instead of each piece, because a
 * match that lies inside a piece is then exactly the match the piece alone would give.
 */
function isContextFree(source: string): boolean {
  if (/\\[bB]/.test(source)) return false;
  const bare = source.replace(/\\./gs, '').replace(/\[[^\]]*\]/g, '');
  return !/\(\?|\$|\^/.test(bare);
}

function regexStage(source: string): Stage {
  const contextFree = isContextFree(source);
  if (usesCategories(source)) {
    const re = new RegExp(collapseRegex(source), 'g');
    return (ctx, lengths) => splitByRegex(re, lengths, collapsedText(ctx), null, contextFree);
  }
  const re = new RegExp(asciiSpaces(source), 'gu');
  return (ctx, lengths) => {
    const w = wideText(ctx);
    return splitByRegex(re, lengths, w.text, w.unitToCpt ? w : null, contextFree);
  };
}

type Wide = NonNullable<SplitContext['wide']>;

/** Apply one regex inside each piece; unmatched stretches become pieces of their own (as llama.cpp splits with std::regex_iterator). */
function splitByRegex(re: RegExp, lengths: number[], text: string, wide: Wide | null, contextFree: boolean): number[] {
  const out: number[] = [];
  const c2u = wide?.cptToUnit;
  const u2c = wide?.unitToCpt ?? undefined;
  const global = contextFree && lengths.length > 1;
  // next match of a whole-text search (context-free regexes only); gEnd -1: empty match
  let gStart = -1;
  let gEnd = -1;
  let start = 0;
  for (let k = 0; k < lengths.length; k++) {
    const len = lengths[k]!;
    const u1 = c2u ? c2u[start + len]! : start + len;
    let prev = c2u ? c2u[start]! : start; // in code units
    let local = !global;
    if (global) {
      if (gStart < prev) {
        re.lastIndex = prev;
        const m = re.exec(text);
        gStart = m === null ? text.length + 1 : m.index;
        gEnd = m === null ? gStart : m[0].length === 0 ? -1 : m.index + m[0].length;
      }
      while (gStart < u1) {
        if (gEnd < 0 || gEnd > u1) {
          local = true; // straddles the piece's end: search the piece alone from here
          break;
        }
        if (gStart > prev) out.push(u2c ? u2c[gStart]! - u2c[prev]! : gStart - prev);
        out.push(u2c ? u2c[gEnd]! - u2c[gStart]! : gEnd - gStart);
        prev = gEnd;
        re.lastIndex = prev;
        const m = re.exec(text);
        gStart = m === null ? text.length + 1 : m.index;
        gEnd = m === null ? gStart : m[0].length === 0 ? -1 : m.index + m[0].length;
      }
    }
    if (local) {
      const s = text.slice(prev, u1);
      re.lastIndex = 0;
      let p = 0;
      for (let m = re.exec(s); m !== null; m = re.exec(s)) {
        const mlen = m[0].length;
        const a = prev + m.index;
        if (mlen === 0) {
          // an empty match still cuts the piece there (superbpe's lookahead-only regex);
          // the search then moves on by one codepoint, as std::regex_iterator does
          if (a > prev + p) {
            out.push(u2c ? u2c[a]! - u2c[prev + p]! : a - prev - p);
            p = a - prev;
          }
          const u = s.charCodeAt(m.index);
          re.lastIndex = m.index + (u >= 0xd800 && u < 0xdc00 && wide ? 2 : 1);
          continue;
        }
        const b = a + mlen;
        if (a > prev + p) out.push(u2c ? u2c[a]! - u2c[prev + p]! : a - prev - p);
        out.push(u2c ? u2c[b]! - u2c[a]! : mlen);
        p = b - prev;
      }
      prev += p;
      gStart = -1;
    }
    if (prev < u1) out.push(u2c ? u2c[u1]! - u2c[prev]! : u1 - prev);
    start += len;
  }
  return out;
}

export interface PreTokenizerOptions {
  /**
   * Run the regexes that have stand-in scanners through the regex engine instead (those
   * llama.cpp itself scans stay scanners). For tests that check a scanner against its regex.
   */
  regexOnly?: boolean;
}

/** A compiled pre-tokenizer: codepoints in, word lengths (in codepoints) out. */
export class PreTokenizer {
  private readonly stages: Stage[];

  constructor(
    readonly regexes: readonly string[],
    opts: PreTokenizerOptions = {},
  ) {
    this.stages = regexes.map((r) => {
      const scanner = scannerFor(r);
      if (scanner && (!opts.regexOnly || scanner.native)) return scanner.stage;
      return regexStage(r);
    });
  }

  split(cpts: Uint32Array): number[] {
    if (cpts.length === 0) return [];
    const flags = new Uint16Array(cpts.length);
    for (let i = 0; i < cpts.length; i++) flags[i] = cptFlags(cpts[i]!);
    const ctx: SplitContext = { cpts, flags };
    let lengths = [cpts.length];
    for (const stage of this.stages) lengths = stage(ctx, lengths);
    return lengths;
  }
}
