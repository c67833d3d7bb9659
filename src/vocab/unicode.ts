// Codepoint facts the tokenizers depend on, computed the way llama.cpp's unicode tables
// were generated (Python's `regex` \p{..} categories, \s = Unicode White_Space, lower()
// and NFD taking the first codepoint), plus llama.cpp's lenient UTF-8 decoder.
//
// Text inside the vocab layer travels as "byte strings": one UTF-16 unit per byte
// (latin1), so special-token search and SentencePiece run on bytes exactly as the C++
// does on std::string, and invalid UTF-8 survives until a stage decides what it means.

/** Category bits, as llama.cpp's unicode_cpt_flags. */
export const FLAG_NUMBER = 0x0002;
export const FLAG_LETTER = 0x0004;
export const FLAG_SEPARATOR = 0x0008;
export const FLAG_ACCENT_MARK = 0x0010;
export const FLAG_PUNCTUATION = 0x0020;
export const FLAG_SYMBOL = 0x0040;
export const FLAG_CONTROL = 0x0080;
export const FLAG_WHITESPACE = 0x0100;
const FLAG_KNOWN = 0x8000;

export const MAX_CODEPOINTS = 0x110000;
/** Flags of a position outside the current span: no category at all. */
export const FLAGS_NONE = 0;
/** Flags of an unassigned codepoint or one beyond U+10FFFF (llama.cpp: UNDEFINED, a non-zero category). */
const FLAGS_UNDEFINED = 0x0001;

const table = new Uint16Array(MAX_CODEPOINTS);

const RE_N = /\p{N}/u;
const RE_L = /\p{L}/u;
const RE_Z = /\p{Z}/u;
const RE_M = /\p{M}/u;
const RE_P = /\p{P}/u;
const RE_S = /\p{S}/u;
const RE_CN = /\p{Cn}/u;
const RE_WS = /\p{White_Space}/u;

// Codepoints first assigned in Unicode 16.0 and 17.0, as [first, last] pairs. llama.cpp's
// tables were generated from Unicode 15.1, where these are unassigned: no category, no
// case or NFD mapping. The runtime's ICU (Unicode 17 in Node 20.20) knows them, so they
// are masked here; otherwise a word holding one (say Arabic U+0897, a combining mark since
// 16.0) loses the mark in WordPiece and yields pieces where llama.cpp yields [UNK], and
// BPE pre-tokenizers would split it differently.
// biome-ignore format: [first, last] pairs, six to a line
const ASSIGNED_AFTER_15_1 = new Uint32Array([
  0x88f, 0x88f, 0x897, 0x897, 0xc5c, 0xc5c, 0xcdc, 0xcdc, 0x1acf, 0x1add, 0x1ae0, 0x1aeb,
  0x1b4e, 0x1b4f, 0x1b7f, 0x1b7f, 0x1c89, 0x1c8a, 0x20c1, 0x20c1, 0x2427, 0x2429, 0x2b96, 0x2b96,
  0x31e4, 0x31e5, 0xa7cb, 0xa7cf, 0xa7d2, 0xa7d2, 0xa7d4, 0xa7d4, 0xa7da, 0xa7dc, 0xa7f1, 0xa7f1,
  0xfbc3, 0xfbd2, 0xfd90, 0xfd91, 0xfdc8, 0xfdce, 0x105c0, 0x105f3, 0x10940, 0x10959, 0x10d40, 0x10d65,
  0x10d69, 0x10d85, 0x10d8e, 0x10d8f, 0x10ec2, 0x10ec7, 0x10ed0, 0x10ed8, 0x10efa, 0x10efc, 0x11380, 0x11389,
  0x1138b, 0x1138b, 0x1138e, 0x1138e, 0x11390, 0x113b5, 0x113b7, 0x113c0, 0x113c2, 0x113c2, 0x113c5, 0x113c5,
  0x113c7, 0x113ca, 0x113cc, 0x113d5, 0x113d7, 0x113d8, 0x113e1, 0x113e2, 0x116d0, 0x116e3, 0x11b60, 0x11b67,
  0x11bc0, 0x11be1, 0x11bf0, 0x11bf9, 0x11db0, 0x11ddb, 0x11de0, 0x11de9, 0x11f5a, 0x11f5a, 0x13460, 0x143fa,
  0x16100, 0x16139, 0x16d40, 0x16d79, 0x16ea0, 0x16eb8, 0x16ebb, 0x16ed3, 0x16ff2, 0x16ff6, 0x187f8, 0x187ff,
  0x18cff, 0x18cff, 0x18d09, 0x18d1e, 0x18d80, 0x18df2, 0x1cc00, 0x1ccfc, 0x1cd00, 0x1ceb3, 0x1ceba, 0x1ced0,
  0x1cee0, 0x1cef0, 0x1e5d0, 0x1e5fa, 0x1e5ff, 0x1e5ff, 0x1e6c0, 0x1e6de, 0x1e6e0, 0x1e6f5, 0x1e6fe, 0x1e6ff,
  0x1f6d8, 0x1f6d8, 0x1f777, 0x1f77a, 0x1f8b2, 0x1f8bb, 0x1f8c0, 0x1f8c1, 0x1f8d0, 0x1f8d8, 0x1fa54, 0x1fa57,
  0x1fa89, 0x1fa8a, 0x1fa8e, 0x1fa8f, 0x1fabe, 0x1fabe, 0x1fac6, 0x1fac6, 0x1fac8, 0x1fac8, 0x1facd, 0x1facd,
  0x1fadc, 0x1fadc, 0x1fadf, 0x1fadf, 0x1fae9, 0x1faea, 0x1faef, 0x1faef, 0x1fbcb, 0x1fbef, 0x1fbfa, 0x1fbfa,
  0x2b73a, 0x2b73f, 0x2cea2, 0x2cead, 0x323b0, 0x33479,
]);

/** Whether llama.cpp's Unicode 15.1 tables leave `cpt` unassigned while the runtime may not. */
export function isNewerThanTables(cpt: number): boolean {
  const t = ASSIGNED_AFTER_15_1;
  if (cpt < t[0]! || cpt > t[t.length - 1]!) return false;
  let lo = 0;
  let hi = t.length / 2 - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    if (cpt < t[2 * mid]!) hi = mid - 1;
    else if (cpt > t[2 * mid + 1]!) lo = mid + 1;
    else return true;
  }
  return false;
}

function computeFlags(cpt: number): number {
  if (isNewerThanTables(cpt)) return FLAGS_UNDEFINED;
  const ch = String.fromCodePoint(cpt);
  let f: number;
  if (RE_N.test(ch)) f = FLAG_NUMBER;
  else if (RE_L.test(ch)) f = FLAG_LETTER;
  else if (RE_Z.test(ch)) f = FLAG_SEPARATOR;
  else if (RE_M.test(ch)) f = FLAG_ACCENT_MARK;
  else if (RE_P.test(ch)) f = FLAG_PUNCTUATION;
  else if (RE_S.test(ch)) f = FLAG_SYMBOL;
  else if (RE_CN.test(ch))
    f = FLAGS_UNDEFINED; // unassigned and noncharacters: llama.cpp's table leaves them uncategorized
  else f = FLAG_CONTROL; // Cc, Cf, Co, Cs
  if (RE_WS.test(ch)) f |= FLAG_WHITESPACE;
  return f;
}

/** Category and whitespace flags of a codepoint (memoized). */
export function cptFlags(cpt: number): number {
  if (cpt >= MAX_CODEPOINTS) return FLAGS_UNDEFINED;
  const f = table[cpt]!;
  if (f !== 0) return f & ~FLAG_KNOWN;
  const g = computeFlags(cpt);
  table[cpt] = g | FLAG_KNOWN;
  return g;
}

for (let c = 0; c < 128; c++) cptFlags(c);

const lowerCache = new Map<number, number>();

/** Lowercase mapping, first codepoint of the full mapping (as llama.cpp's table). */
export function cptToLower(cpt: number): number {
  if (cpt < 128) return cpt >= 0x41 && cpt <= 0x5a ? cpt + 32 : cpt;
  if (cpt >= MAX_CODEPOINTS || (cpt >= 0xd800 && cpt <= 0xdfff)) return cpt;
  let r = lowerCache.get(cpt);
  if (r === undefined) {
    r = isNewerThanTables(cpt) ? cpt : String.fromCodePoint(cpt).toLowerCase().codePointAt(0)!;
    lowerCache.set(cpt, r);
  }
  return r;
}

const nfdCache = new Map<number, number>();

/** First codepoint of the NFD decomposition (llama.cpp's unicode_cpts_normalize_nfd). */
export function cptNfdFirst(cpt: number): number {
  if (cpt < 0xc0 || cpt >= MAX_CODEPOINTS || (cpt >= 0xd800 && cpt <= 0xdfff)) return cpt;
  let r = nfdCache.get(cpt);
  if (r === undefined) {
    r = isNewerThanTables(cpt) ? cpt : String.fromCodePoint(cpt).normalize('NFD').codePointAt(0)!;
    nfdCache.set(cpt, r);
  }
  return r;
}

// ---- UTF-8 ----

/** Sequence length announced by a lead byte, as llama.cpp's unicode_len_utf8. */
export function utf8Len(byte: number): number {
  const hi = byte >> 4;
  return hi < 12 ? 1 : hi < 14 ? 2 : hi === 14 ? 3 : 4;
}

export const REPLACEMENT = 0xfffd;

/**
 * Decode a byte string into codepoints with llama.cpp's rules: structurally valid
 * sequences decode as-is (overlong forms and surrogates included); any other byte
 * becomes U+FFFD and decoding resumes at the next byte.
 * `exact` reports whether re-encoding the codepoints gives back the same bytes.
 */
export function decodeBytes(s: string, start = 0, end = s.length): { cpts: Uint32Array; exact: boolean } {
  const out = new Uint32Array(end - start);
  let n = 0;
  let exact = true;
  let i = start;
  while (i < end) {
    const b0 = s.charCodeAt(i);
    if (b0 < 0x80) {
      out[n++] = b0;
      i += 1;
      continue;
    }
    let cpt = -1;
    let len = 0;
    if ((b0 & 0x40) === 0) {
      // stray continuation byte
    } else if ((b0 & 0x20) === 0) {
      if (i + 1 < end && (s.charCodeAt(i + 1) & 0xc0) === 0x80) {
        cpt = ((b0 & 0x1f) << 6) | (s.charCodeAt(i + 1) & 0x3f);
        len = 2;
      }
    } else if ((b0 & 0x10) === 0) {
      if (i + 2 < end && (s.charCodeAt(i + 1) & 0xc0) === 0x80 && (s.charCodeAt(i + 2) & 0xc0) === 0x80) {
        cpt = ((b0 & 0x0f) << 12) | ((s.charCodeAt(i + 1) & 0x3f) << 6) | (s.charCodeAt(i + 2) & 0x3f);
        len = 3;
      }
    } else if ((b0 & 0x08) === 0) {
      if (
        i + 3 < end &&
        (s.charCodeAt(i + 1) & 0xc0) === 0x80 &&
        (s.charCodeAt(i + 2) & 0xc0) === 0x80 &&
        (s.charCodeAt(i + 3) & 0xc0) === 0x80
      ) {
        cpt =
          ((b0 & 0x07) << 18) |
          ((s.charCodeAt(i + 1) & 0x3f) << 12) |
          ((s.charCodeAt(i + 2) & 0x3f) << 6) |
          (s.charCodeAt(i + 3) & 0x3f);
        len = 4;
      }
    }
    if (cpt < 0) {
      out[n++] = REPLACEMENT;
      i += 1;
      exact = false;
      continue;
    }
    if (cpt >= MAX_CODEPOINTS || utf8EncodedLength(cpt) !== len) exact = false;
    out[n++] = cpt;
    i += len;
  }
  return { cpts: out.subarray(0, n), exact };
}

function utf8EncodedLength(cpt: number): number {
  return cpt < 0x80 ? 1 : cpt < 0x800 ? 2 : cpt < 0x10000 ? 3 : 4;
}

/** Append the UTF-8 bytes of `cpt` to `out` as byte values (llama.cpp's unicode_cpt_to_utf8). */
export function pushUtf8(cpt: number, out: number[]): void {
  if (cpt < 0x80) out.push(cpt);
  else if (cpt < 0x800) out.push(0xc0 | (cpt >> 6), 0x80 | (cpt & 0x3f));
  else if (cpt < 0x10000) out.push(0xe0 | (cpt >> 12), 0x80 | ((cpt >> 6) & 0x3f), 0x80 | (cpt & 0x3f));
  else if (cpt < MAX_CODEPOINTS)
    out.push(0xf0 | (cpt >> 18), 0x80 | ((cpt >> 12) & 0x3f), 0x80 | ((cpt >> 6) & 0x3f), 0x80 | (cpt & 0x3f));
  else pushUtf8(REPLACEMENT, out); // llama.cpp would throw here; never emit a broken sequence
}

/** Byte string of the UTF-8 encoding of codepoints. */
export function cptsToBytes(cpts: ArrayLike<number>, start = 0, end = cpts.length): string {
  const bytes: number[] = [];
  for (let i = start; i < end; i++) pushUtf8(cpts[i]!, bytes);
  return bytesToBinary(bytes);
}

/** One char per byte. */
export function bytesToBinary(bytes: ArrayLike<number>): string {
  let s = '';
  const CHUNK = 8192;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    s += String.fromCharCode.apply(null, Array.prototype.slice.call(bytes, i, i + CHUNK) as number[]);
  }
  return s;
}

// UTF-8 conversions without Node's Buffer (the engine runs in browsers too); TextEncoder
// and TextDecoder give what Buffer's 'utf8' gives (lone surrogates and invalid sequences
// become U+FFFD, WHATWG's maximal-subpart rule)
const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder();

/** A JS string's UTF-8 bytes. */
export function textToBytes(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

/** UTF-8 bytes as a JS string (invalid sequences become U+FFFD). */
export function bytesToText(bytes: Uint8Array): string {
  return utf8Decoder.decode(bytes);
}

/** A JS string as a byte string of its UTF-8 (lone surrogates become U+FFFD, as any UTF-8 conversion does). */
export function textToBinary(text: string): string {
  return bytesArrayToBinary(utf8Encoder.encode(text));
}

export function bytesArrayToBinary(bytes: Uint8Array): string {
  let s = '';
  const CHUNK = 8192;
  for (let i = 0; i < bytes.length; i += CHUNK) {
    s += String.fromCharCode.apply(null, bytes.subarray(i, i + CHUNK) as unknown as number[]);
  }
  return s;
}

export function binaryToBytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i); // the low byte, as latin1
  return out;
}

/** Decode a byte string as UTF-8 for display (invalid sequences become U+FFFD). */
export function binaryToText(s: string): string {
  return utf8Decoder.decode(binaryToBytes(s));
}

// ---- GPT-2 byte-level alphabet ----

/** byte -> the char that stands for it in byte-level BPE vocabularies. */
export const BYTE_TO_CHAR: readonly string[] = (() => {
  const map: string[] = new Array(256);
  const direct = (b: number) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  let n = 0;
  for (let b = 0; b < 256; b++) map[b] = String.fromCharCode(direct(b) ? b : 256 + n++);
  return map;
})();

const BYTE_TO_CODE = new Uint16Array(256);
for (let b = 0; b < 256; b++) BYTE_TO_CODE[b] = BYTE_TO_CHAR[b]!.charCodeAt(0);

/** char code -> byte, or -1 when the char is not part of the byte-level alphabet. */
export const CHAR_TO_BYTE: ReadonlyMap<number, number> = new Map(BYTE_TO_CHAR.map((c, b) => [c.charCodeAt(0), b]));

/** Map a byte string to its byte-level BPE form (each byte one char of the alphabet). */
export function byteLevelEncode(bin: string, start = 0, end = bin.length): string {
  const n = end - start;
  if (n <= 64) {
    const codes = new Array<number>(n);
    for (let i = 0; i < n; i++) codes[i] = BYTE_TO_CODE[bin.charCodeAt(start + i)]!;
    return String.fromCharCode.apply(null, codes);
  }
  let s = '';
  for (let i = start; i < end; i++) s += BYTE_TO_CHAR[bin.charCodeAt(i)]!;
  return s;
}
