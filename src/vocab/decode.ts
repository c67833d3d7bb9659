// Token ids back to bytes: each token's piece (▁ to space for SentencePiece and
// WordPiece, the GPT-2 byte alphabet undone for BPE, <0xNN> to its byte), the leading
// space rule and llama.cpp's clean_spaces pass of detokenize, and a streaming decoder
// that holds back a UTF-8 character until all of its bytes have arrived.

import { Attr, type VocabView } from './types.js';
import { binaryToBytes, CHAR_TO_BYTE, textToBinary } from './unicode.js';

const SPACE_ESCAPE = '\u00e2\u0096\u0081'; // "▁" as a byte string

/** The full piece of a token as a byte string (special tokens rendered). */
export function tokenPiece(vocab: VocabView, id: number): string {
  const attr = vocab.attrs[id]!;
  const text = vocab.tokenBytes(id);
  if (attr & (Attr.UNKNOWN | Attr.CONTROL | Attr.USER_DEFINED)) return text;
  if (attr & Attr.NORMAL) {
    if (vocab.type === 'bpe' && !vocab.escapeWhitespaces) return byteLevelDecode(vocab.tokens[id]!);
    return text.replaceAll(SPACE_ESCAPE, ' ');
  }
  if (attr & Attr.BYTE) {
    const t = vocab.tokens[id]!;
    return String.fromCharCode(Number.parseInt(t.slice(3, 5), 16) & 0xff);
  }
  return '';
}

function byteLevelDecode(token: string): string {
  let out = '';
  for (const ch of token) {
    const b = CHAR_TO_BYTE.get(ch.codePointAt(0)!);
    if (b !== undefined) {
      out += String.fromCharCode(b);
      continue;
    }
    const utf8 = textToBinary(ch);
    let hex = '';
    for (let i = 0; i < utf8.length; i++) hex += utf8.charCodeAt(i).toString(16).padStart(2, '0');
    out += `[UNK_BYTE_0x${hex}${textToBinary(token)}]`;
  }
  return out;
}

/** llama.cpp's detokenize, returning a byte string. */
export function decodeTokens(
  vocab: VocabView,
  ids: readonly number[],
  removeSpecial: boolean,
  renderSpecial: boolean,
): string {
  let start = 0;
  let end = ids.length;
  let removeSpace = vocab.addSpacePrefix;
  if (removeSpecial && vocab.addBos && end > 0 && ids[0] === vocab.bos) {
    removeSpace = false;
    start++;
  }
  if (removeSpecial && vocab.addEos && end > start && ids[end - 1] === vocab.eos) end--;
  let text = '';
  for (let i = start; i < end; i++) {
    text += vocab.pieceBytes(ids[i]!, renderSpecial, removeSpace ? 1 : 0);
    removeSpace = false;
  }
  return vocab.cleanSpaces ? cleanSpaces(text) : text;
}

/** llama.cpp's three clean-up passes over decoded bytes. */
export function cleanSpaces(text: string): string {
  if (text.length === 0) return text;
  // 1: " ?", " !", " .", " ," lose the space
  let a = [text.charCodeAt(0)];
  for (let i = 1; i < text.length; i++) {
    const x = text.charCodeAt(i);
    if (text.charCodeAt(i - 1) === 0x20 && (x === 0x3f || x === 0x21 || x === 0x2e || x === 0x2c)) a.pop();
    a.push(x);
  }
  // 2: a lone apostrophe between spaces loses both spaces
  let b = [a[0]!];
  for (let i = 1; i < a.length; i++) {
    const x = a[i]!;
    if (x === 0x27 && i + 1 < a.length && a[i - 1] === 0x20 && a[i + 1] === 0x20) {
      b.pop();
      a[++i] = 0;
      b.push(x);
      continue;
    }
    b.push(x);
  }
  // 3: " 's", " 'm", " 're", " 've" lose the space
  a = b;
  b = [a[0]!];
  for (let i = 1; i < a.length; i++) {
    const x = a[i]!;
    if (a[i - 1] === 0x20 && x === 0x27 && i + 1 < a.length) {
      const x1 = a[i + 1]!;
      if (x1 === 0x73 || x1 === 0x6d) b.pop();
      else if (i + 2 < a.length) {
        const x2 = a[i + 2]!;
        if ((x1 === 0x72 && x2 === 0x65) || (x1 === 0x76 && x2 === 0x65)) b.pop();
      }
    }
    b.push(x);
  }
  let s = '';
  for (let i = 0; i < b.length; i += 8192) s += String.fromCharCode.apply(null, b.slice(i, i + 8192));
  return s;
}

export interface StreamDecoderOptions {
  /** Render control and unknown tokens as their text. Default false. */
  renderSpecial?: boolean;
  /** Drop a leading BOS (as detokenize's remove_special). Default false. */
  removeSpecial?: boolean;
  /** Apply detokenize's leading-space rule: strip one space from the first piece when the vocabulary adds a space prefix (not after a dropped BOS). Default false, as llama.cpp's generation loop prints pieces unstripped. */
  stripLeadingSpace?: boolean;
}

/**
 * Incremental detokenizer: push tokens (or raw bytes), get text back; a character whose
 * bytes span several tokens is held until complete, so no output chunk ever ends in
 * the middle of a UTF-8 sequence. Invalid bytes come out as U+FFFD once they are known
 * to be invalid.
 */
export class StreamDecoder {
  private readonly utf8 = new TextDecoder('utf-8');
  private first = true;

  constructor(
    private readonly vocab: VocabView,
    private readonly opts: StreamDecoderOptions = {},
  ) {}

  push(id: number): string {
    const v = this.vocab;
    let lstrip = 0;
    if (this.first) {
      this.first = false;
      if (this.opts.removeSpecial && v.addBos && id === v.bos) return '';
      if (this.opts.stripLeadingSpace && v.addSpacePrefix) lstrip = 1;
    }
    const piece = v.pieceBytes(id, this.opts.renderSpecial ?? false, lstrip);
    return piece.length === 0 ? '' : this.pushBytes(binaryToBytes(piece));
  }

  pushBytes(bytes: Uint8Array): string {
    return this.utf8.decode(bytes, { stream: true });
  }

  /** End of stream: whatever is held back comes out (an incomplete sequence as U+FFFD). */
  flush(): string {
    return this.utf8.decode();
  }
}
