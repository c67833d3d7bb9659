// BPE pre-tokenizers: each `tokenizer.ggml.pre` names a list of regexes that cut text
// into words before merging, applied one after the other to the pieces the previous one
// left. As in llama.cpp, the GPT-2 and LLaMA-3 patterns run as hand-written scanners,
// and the others run as regexes on a "collapsed" text in which every codepoint above
// 127 stands as one placeholder char for its Unicode category (so \p{L} matches exactly
// what llama.cpp's tables call a letter), or on codepoints when a pattern has no \p{..}.
import {
  cptFlags,
  cptToLower,
  FLAG_ACCENT_MARK,
  FLAG_LETTER,
  FLAG_NUMBER,
  FLAG_PUNCTUATION,
  FLAG_SYMBOL,
  FLAG_WHITESPACE,
} from './unicode.js';

// Regexes, as llama.cpp's llm_tokenizer_bpe lists them per pre-tokenizer type.
const RE_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const RE_LLAMA3 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const RE_QWEN2 =
  "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const RE_GPT4O =
  "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The letter class is written with escapes: several of its codepoints (U+1F7D, U+1FBE,
// U+2126, U+212A, ...) have canonical equivalents and must not be normalized away.
const RE_DEEPSEEK_LLM = [
  '[\r\n]',
  '\\s?[A-Za-z\u{B5}\u{C0}-\u{D6}\u{D8}-\u{F6}\u{F8}-\u{1BA}\u{1BC}-\u{1BF}\u{1C4}-\u{293}\u{295}-\u{2AF}\u{370}-\u{373}\u{376}\u{377}\u{37B}-\u{37D}\u{37F}\u{386}\u{388}-\u{38A}\u{38C}\u{38E}-\u{3A1}\u{3A3}-\u{3F5}\u{3F7}-\u{481}\u{48A}-\u{52F}\u{531}-\u{556}\u{10A0}-\u{10C5}\u{13A0}-\u{13F5}\u{13F8}-\u{13FD}\u{1C90}-\u{1CBA}\u{1CBD}-\u{1CBF}\u{1D00}-\u{1D2B}\u{1D6B}-\u{1D77}\u{1D79}-\u{1D9A}\u{1E00}-\u{1F15}\u{1F18}-\u{1F1D}\u{1F20}-\u{1F45}\u{1F48}-\u{1F4D}\u{1F50}-\u{1F57}\u{1F59}\u{1F5B}\u{1F5D}\u{1F5F}-\u{1F7D}\u{1F80}-\u{1FB4}\u{1FB6}-\u{1FBC}\u{1FBE}\u{1FC2}-\u{1FC4}\u{1FC6}-\u{1FCC}\u{1FD0}-\u{1FD3}\u{1FD6}-\u{1FDB}\u{1FE0}-\u{1FEC}\u{1FF2}-\u{1FF4}\u{1FF6}-\u{1FFC}\u{2102}\u{2107}\u{210A}-\u{2113}\u{2115}\u{2119}-\u{211D}\u{2124}\u{2126}\u{2128}\u{212A}-\u{212D}\u{212F}-\u{2134}\u{2139}\u{213C}-\u{213F}\u{2145}-\u{2149}\u{214E}\u{2183}\u{2184}\u{2C00}-\u{2C7B}\u{2C7E}-\u{2CE4}\u{2CEB}-\u{2CEE}\u{2CF2}\u{2CF3}\u{A640}-\u{A66D}\u{A680}-\u{A69B}\u{A722}-\u{A76F}\u{A771}-\u{A787}\u{A78B}-\u{A78E}\u{AB70}-\u{ABBF}\u{FB00}-\u{FB06}\u{FB13}-\u{FB17}\u{FF21}-\u{FF3A}\u{FF41}-\u{FF5A}\u{10400}-\u{1044F}\u{104B0}-\u{104D3}\u{104D8}-\u{104FB}\u{10C80}-\u{10CB2}\u{10CC0}-\u{10CF2}\u{118A0}-\u{118DF}\u{1E900}-\u{1E943}]+',
  '\\s?[!-/:-~！-／：-～‘-‟　-。]+',
  '\\s+$',
  '[一-龥ࠀ-一가-퟿]+',
  '\\p{N}+',
];

interface PreSpec {
  regexes: string[];
  /** decode() tidies " ?", " !", " 's" ... (llama.cpp's clean_spaces). */
  cleanSpaces: boolean;
  /** A word that is already a token skips the merges. */
  ignoreMerges: boolean;
  /** Default for add_bos_token when the file does not say. */
  addBos: boolean;
  addSep: boolean;
}

function spec(regexes: string[], o: Partial<PreSpec> = {}): PreSpec {
  return { regexes, cleanSpaces: true, ignoreMerges: false, addBos: false, addSep: false, ...o };
}

const DEFAULT = spec(['[\\p{P}\\$\\+<=>\\^~\\|]+', RE_GPT2, '\\p{N}+', '[0-9][0-9][0-9]']);
const LLAMA3 = spec([RE_LLAMA3], { ignoreMerges: true, addBos: true });
const GPT2 = spec([RE_GPT2]);
const STARCODER = spec(['\\p{N}', RE_GPT2]);
const QWEN2 = spec([RE_QWEN2], { cleanSpaces: false });
const GPT4O = spec([RE_GPT4O], { cleanSpaces: false });
const BLOOM = spec([' ?[^(\\s|.,!?…。，、।۔،)]+']);

/** Pre-tokenizers by the name in `tokenizer.ggml.pre` (aliases as llama.cpp accepts them). */
const PRE: Record<string, PreSpec> = {
  default: DEFAULT,
  llama3: LLAMA3,
  'llama-v3': LLAMA3,
  'llama-bpe': LLAMA3,
  falcon3: LLAMA3,
  'falcon-h1': LLAMA3,
  pixtral: LLAMA3,
  'midm-2.0': LLAMA3,
  lfm2: LLAMA3,
  dbrx: spec([RE_LLAMA3]),
  'smaug-bpe': spec([RE_LLAMA3]),
  'deepseek-llm': spec(RE_DEEPSEEK_LLM, { cleanSpaces: false }),
  'deepseek-coder': spec(['[\r\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', '[一-龥ࠀ-一가-퟿]+', '\\p{N}'], {
    cleanSpaces: false,
  }),
  falcon: spec(['[\\p{P}\\$\\+<=>\\^~\\|`]+', RE_GPT2, '[0-9][0-9][0-9]']),
  mpt: GPT2,
  olmo: GPT2,
  jais: GPT2,
  'gpt-2': GPT2,
  'phi-2': GPT2,
  'jina-es': GPT2,
  'jina-de': GPT2,
  'jina-v2-es': GPT2,
  'jina-v2-de': GPT2,
  gigachat: GPT2,
  'a.x-4.0': GPT2,
  mellum: GPT2,
  'modern-bert': GPT2,
  exaone4: GPT2,
  trillion: spec([RE_GPT2], { cleanSpaces: false }),
  'granite-docling': spec([RE_GPT2], { cleanSpaces: false }),
  'jina-v1-en': spec([RE_GPT2], { addSep: true }),
  'jina-v2-code': spec([RE_GPT2], { addSep: true }),
  'roberta-bpe': spec([RE_GPT2], { addSep: true }),
  starcoder: STARCODER,
  refact: STARCODER,
  codeshell: STARCODER,
  exaone: STARCODER,
  'minerva-7b': STARCODER,
  mellum2: STARCODER,
  'command-r': spec(['\\p{N}', RE_GPT2], { cleanSpaces: false }),
  smollm: spec(['\\p{N}', RE_GPT2], { cleanSpaces: false }),
  qwen2: QWEN2,
  'deepseek-r1-qwen': QWEN2,
  kormo: QWEN2,
  f2llmv2: QWEN2,
  hunyuan: QWEN2,
  'solar-open': QWEN2,
  stablelm2: spec([RE_QWEN2]),
  megrez: spec([RE_QWEN2]),
  'grok-2': QWEN2,
  'poro-chat': spec([' ?[^(\\s|.,!?…。，、।۔،)]+'], { cleanSpaces: false }),
  bloom: BLOOM,
  'gpt3-finnish': BLOOM,
  viking: spec([' ?[^(\\s|.,!?…。，、।۔،)]+', '\\p{N}'], { cleanSpaces: false }),
  'gpt-4o': GPT4O,
  llama4: GPT4O,
  'minimax-m2': GPT4O,
  tekken: spec(
    [
      '[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+',
    ],
    { cleanSpaces: false, ignoreMerges: true, addBos: true },
  ),
  chameleon: spec(
    [
      '<sentinel:[0-9]+>',
      '(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z',
      '([\\t\\n]|    |  )',
      '\\p{N}',
      '[\\p{P}!-/:-@\\[-`{-~]',
      RE_GPT2,
    ],
    { cleanSpaces: false, addBos: true },
  ),
  'seed-coder': spec(
    [
      "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
    ],
    { cleanSpaces: false },
  ),
  glm4: spec([RE_LLAMA3]),
  'chatglm-bpe': spec([RE_LLAMA3]),
};

/** The pre-tokenizer names this build knows. */
export const PRE_TOKENIZER_NAMES: readonly string[] = Object.keys(PRE);

export function preTokenizerSpec(name: string): PreSpec | undefined {
  return Object.hasOwn(PRE, name) ? PRE[name] : undefined;
}

// ---- splitting ----

/** One stage of splitting: word lengths (in codepoints) in, finer word lengths out. */
type Stage = (ctx: SplitContext, lengths: number[]) => number[];

interface SplitContext {
  cpts: Uint32Array;
  flags: Uint16Array;
  collapsed?: string;
  wide?: { text: string; cptToUnit: Int32Array; unitToCpt: Int32Array | null };
}

const UCATS: Record<string, [number, string]> = {
  '\\p{N}': [0xd1, '0-9'],
  '\\p{L}': [0xd2, 'A-Za-z'],
  '\\p{P}': [0xd3, '!-#%-*,-/:-;?-@\\[-\\]_\\{\\}'],
  '\\p{M}': [0xd4, ''],
  '\\p{S}': [0xd5, '\\$\\+<->\\^`\\|'],
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
        if (mlen === 0) {
          re.lastIndex++;
          continue;
        }
        const a = prev + m.index;
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

const WLN = FLAG_WHITESPACE | FLAG_LETTER | FLAG_NUMBER;

/** The GPT-2 pattern as a scanner (llama.cpp's unicode_regex_split_custom_gpt2). */
const gpt2Stage: Stage = (ctx, lengths) => {
  const { cpts, flags } = ctx;
  const out: number[] = [];
  let end = 0;
  for (let k = 0; k < lengths.length; k++) {
    const ini = end;
    end += lengths[k]!;
    // positions only move forward, so "in range" means "before end"
    let prevEnd = ini;
    let pos = ini;
    while (pos < end) {
      const cpt = cpts[pos]!;
      const f = flags[pos]!;
      if (cpt === 0x27 && pos + 1 < end) {
        const next = cpts[pos + 1]!;
        if (next === 0x73 || next === 0x74 || next === 0x6d || next === 0x64) {
          pos += 2;
          out.push(pos - prevEnd);
          prevEnd = pos;
          continue;
        }
        if (pos + 2 < end) {
          const next2 = cpts[pos + 2]!;
          if (
            (next === 0x72 && next2 === 0x65) ||
            (next === 0x76 && next2 === 0x65) ||
            (next === 0x6c && next2 === 0x6c)
          ) {
            pos += 3;
            out.push(pos - prevEnd);
            prevEnd = pos;
            continue;
          }
        }
      }
      let f2 = cpt === 0x20 ? (pos + 1 < end ? flags[pos + 1]! : 0) : f;
      let cls = 0;
      if (f2 & FLAG_LETTER) cls = FLAG_LETTER;
      else if (f2 & FLAG_NUMBER) cls = FLAG_NUMBER;
      else if (!(f2 & WLN) && f2) cls = -1;
      if (cls !== 0) {
        // <space>?\p{L}+ | <space>?\p{N}+ | <space>?[^\s\p{L}\p{N}]+
        if (cpt === 0x20) pos++;
        if (cls > 0) {
          while (f2 & cls) f2 = ++pos < end ? flags[pos]! : 0;
        } else {
          while (!(f2 & WLN) && f2) f2 = ++pos < end ? flags[pos]! : 0;
        }
        out.push(pos - prevEnd);
        prevEnd = pos;
        continue;
      }
      let ws = 0;
      while (pos + ws < end && flags[pos + ws]! & FLAG_WHITESPACE) ws++;
      if (ws > 1 && pos + ws < end) {
        // \s+(?!\S): leave the last space to the word that follows
        pos += ws - 1;
      } else if (ws > 0) {
        pos += ws;
      } else {
        pos++;
      }
      if (pos > prevEnd) out.push(pos - prevEnd);
      prevEnd = pos;
    }
  }
  return out;
};

/** The LLaMA-3 pattern as a scanner (llama.cpp's unicode_regex_split_custom_llama3). */
const llama3Stage: Stage = (ctx, lengths) => {
  const { cpts, flags } = ctx;
  const out: number[] = [];
  let end = 0;
  for (let k = 0; k < lengths.length; k++) {
    const ini = end;
    end += lengths[k]!;
    let prevEnd = ini;
    let pos = ini;
    while (pos < end) {
      const cpt = cpts[pos]!;
      const f = flags[pos]!;
      if (cpt === 0x27 && pos + 1 < end) {
        const next = cptToLower(cpts[pos + 1]!);
        if (next === 0x73 || next === 0x74 || next === 0x6d || next === 0x64) {
          pos += 2;
          out.push(pos - prevEnd);
          prevEnd = pos;
          continue;
        }
        if (pos + 2 < end) {
          const next2 = cptToLower(cpts[pos + 2]!);
          if (
            (next === 0x72 && next2 === 0x65) ||
            (next === 0x76 && next2 === 0x65) ||
            (next === 0x6c && next2 === 0x6c)
          ) {
            pos += 3;
            out.push(pos - prevEnd);
            prevEnd = pos;
            continue;
          }
        }
      }
      // [^\r\n\p{L}\p{N}]?\p{L}+
      if (!(cpt === 0x0d || cpt === 0x0a || f & FLAG_NUMBER)) {
        if (f & FLAG_LETTER || (pos + 1 < end && flags[pos + 1]! & FLAG_LETTER)) {
          pos++;
          while (pos < end && flags[pos]! & FLAG_LETTER) pos++;
          out.push(pos - prevEnd);
          prevEnd = pos;
          continue;
        }
      }
      // \p{N}{1,3}
      if (f & FLAG_NUMBER) {
        let first = pos;
        while (pos < end && flags[pos]! & FLAG_NUMBER) {
          if (++pos - first >= 3) {
            out.push(pos - prevEnd);
            prevEnd = pos;
            first = pos;
          }
        }
        if (pos > prevEnd) out.push(pos - prevEnd);
        prevEnd = pos;
        continue;
      }
      // <space>?[^\s\p{L}\p{N}]+[\r\n]*
      let f2 = cpt === 0x20 ? (pos + 1 < end ? flags[pos + 1]! : 0) : f;
      if (!(f2 & WLN) && f) {
        if (cpt === 0x20) pos++;
        while (!(f2 & WLN) && f2) f2 = ++pos < end ? flags[pos]! : 0;
        while (pos < end && (cpts[pos] === 0x0d || cpts[pos] === 0x0a)) pos++;
        out.push(pos - prevEnd);
        prevEnd = pos;
        continue;
      }
      let ws = 0;
      let lastNl = 0;
      while (pos + ws < end && flags[pos + ws]! & FLAG_WHITESPACE) {
        const c2 = cpts[pos + ws]!;
        if (c2 === 0x0d || c2 === 0x0a) lastNl = pos + ws + 1;
        ws++;
      }
      if (lastNl > 0)
        pos = lastNl; // \s*[\r\n]+
      else if (ws > 1 && pos + ws < end)
        pos += ws - 1; // \s+(?!\S)
      else if (ws > 0)
        pos += ws; // \s+
      else pos++;
      if (pos > prevEnd) out.push(pos - prevEnd);
      prevEnd = pos;
    }
  }
  return out;
};

const GPT2_SOURCES = new Set([RE_GPT2]);
const LLAMA3_SOURCES = new Set([
  RE_LLAMA3,
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
]);

/** A compiled pre-tokenizer: codepoints in, word lengths (in codepoints) out. */
export class PreTokenizer {
  private readonly stages: Stage[];

  constructor(readonly regexes: readonly string[]) {
    this.stages = regexes.map((r) =>
      GPT2_SOURCES.has(r) ? gpt2Stage : LLAMA3_SOURCES.has(r) ? llama3Stage : regexStage(r),
    );
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
