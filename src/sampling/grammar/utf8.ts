// Strict UTF-8 decoding of token pieces that may start or end in the middle of a
// character. Pieces are byte strings (one char per byte, as Vocab.pieceBytes returns).
// Like llama.cpp's decode_utf8 with a carried `partial_utf8`, but stricter: overlong
// forms, surrogates, values above U+10FFFF and stray continuation bytes are invalid,
// so a grammar can never be satisfied by bytes that are not UTF-8.
import { textToBinary } from '../../vocab/unicode.js';

/** A character cut short: its bits so far, how many continuation bytes it still needs, its total length. */
export interface PartialUtf8 {
  readonly value: number;
  readonly remain: number;
  readonly len: number;
}

export const NO_PARTIAL: PartialUtf8 = { value: 0, remain: 0, len: 0 };

/** Smallest code point for each encoded length (anything below is overlong). */
const MIN_CP = [0, 0, 0x80, 0x800, 0x10000];

export interface Decoded {
  cps: number[];
  partial: PartialUtf8;
}

/**
 * Decode `bytes` (a byte string) continuing from `start`. Returns the complete code points
 * and the trailing incomplete character, or null when the bytes cannot be UTF-8.
 */
export function decodeUtf8(bytes: string, start: PartialUtf8 = NO_PARTIAL): Decoded | null {
  const cps: number[] = [];
  let value = start.value;
  let remain = start.remain;
  let len = start.len;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes.charCodeAt(i);
    if (remain > 0) {
      if ((b & 0xc0) !== 0x80) return null;
      value = value * 64 + (b & 0x3f);
      if (--remain === 0) {
        if (!validCodepoint(value, len)) return null;
        cps.push(value);
      }
      continue;
    }
    if (b < 0x80) cps.push(b);
    else if (b < 0xc0 || b >= 0xf8) return null;
    else {
      len = b < 0xe0 ? 2 : b < 0xf0 ? 3 : 4;
      remain = len - 1;
      value = b & (0x7f >> len);
    }
  }
  const partial = remain > 0 ? { value, remain, len } : NO_PARTIAL;
  if (remain > 0 && partialRange(partial) === null) return null;
  return { cps, partial };
}

function validCodepoint(cp: number, len: number): boolean {
  return cp >= MIN_CP[len]! && cp <= 0x10ffff && (cp < 0xd800 || cp > 0xdfff);
}

/** The code points an incomplete character can still become, as [lo, hi], or null when none is valid. */
export function partialRange(p: PartialUtf8): [number, number] | null {
  const scale = 2 ** (6 * p.remain);
  let lo = p.value * scale;
  let hi = lo + scale - 1;
  lo = Math.max(lo, MIN_CP[p.len]!);
  hi = Math.min(hi, 0x10ffff);
  if (lo > hi) return null;
  if (lo >= 0xd800 && hi <= 0xdfff) return null;
  return [lo, hi];
}

/** UTF-8 bytes of a JS string as a byte string. */
export function stringToBytes(text: string): string {
  return textToBinary(text);
}
