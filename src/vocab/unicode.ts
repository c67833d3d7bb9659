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

function computeFlags(cpt: number): number {
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
    r = String.fromCodePoint(cpt).toLowerCase().codePointAt(0)!;
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
    r = String.fromCodePoint(cpt).normalize('NFD').codePointAt(0)!;
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

/** A JS string as a byte string of its UTF-8 (lone surrogates become U+FFFD, as any UTF-8 conversion does). */
export function textToBinary(text: string): string {
  return Buffer.from(text, 'utf8').toString('latin1');
}

export function bytesArrayToBinary(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');
}

export function binaryToBytes(s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'latin1'));
}

/** Decode a byte string as UTF-8 for display (invalid sequences become U+FFFD). */
export function binaryToText(s: string): string {
  return Buffer.from(s, 'latin1').toString('utf8');
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
