// WordPiece as llama.cpp's llm_tokenizer_wpm (BERT): normalize (NFD first codepoint,
// drop controls and accents, lowercase), split on whitespace, and make every
// punctuation mark, ASCII symbol and CJK ideograph a word of its own; then match each
// word greedily, longest token first, with the "▁" word-start marker that llama.cpp's
// converter writes in place of WordPiece's "##" continuation convention. A word with an
// unmatchable piece becomes [UNK].

import type { FragmentTokenizer, VocabView } from './types.js';
import {
  cptFlags,
  cptNfdFirst,
  cptToLower,
  decodeBytes,
  FLAG_ACCENT_MARK,
  FLAG_CONTROL,
  FLAG_PUNCTUATION,
  FLAG_SYMBOL,
  FLAG_WHITESPACE,
  REPLACEMENT,
} from './unicode.js';

export function isChineseChar(c: number): boolean {
  return (
    (c >= 0x4e00 && c <= 0x9fff) ||
    (c >= 0x3400 && c <= 0x4dbf) ||
    (c >= 0x20000 && c <= 0x2a6df) ||
    (c >= 0x2a700 && c <= 0x2b73f) ||
    (c >= 0x2b740 && c <= 0x2b81f) ||
    (c >= 0x2b920 && c <= 0x2ceaf) || // sic: HF's range, kept for identical results
    (c >= 0xf900 && c <= 0xfaff) ||
    (c >= 0x2f800 && c <= 0x2fa1f)
  );
}

export class WpmTokenizer implements FragmentTokenizer {
  constructor(private readonly vocab: VocabView) {}

  /** Normalized words of a fragment (llama.cpp's preprocess). */
  words(text: string): string[] {
    const { lowercase, stripAccents } = this.vocab;
    const words: string[] = [];
    let cur = '';
    for (let c of decodeBytes(text).cpts) {
      if (stripAccents) c = cptNfdFirst(c);
      const f = cptFlags(c);
      if (f & FLAG_WHITESPACE) {
        if (cur) words.push(cur);
        cur = '';
        continue;
      }
      if (c === 0 || c === REPLACEMENT || f & FLAG_CONTROL) continue;
      if (stripAccents && f & FLAG_ACCENT_MARK) continue;
      const s = String.fromCodePoint(lowercase ? cptToLower(c) : c);
      if (f & FLAG_PUNCTUATION || (c < 0x7f && f & FLAG_SYMBOL) || isChineseChar(c)) {
        if (cur) words.push(cur);
        words.push(s);
        cur = '';
      } else {
        cur += s;
      }
    }
    if (cur) words.push(cur);
    return words;
  }

  tokenize(text: string, out: number[]): void {
    const vocab = this.vocab;
    const maxLen = vocab.maxTokenLength;
    for (const word of this.words(text)) {
      const w = `\u2581${word}`;
      const n = w.length;
      const mark = out.length;
      for (let i = 0; i < n; ) {
        let matched = -1;
        for (let j = Math.min(n, i + maxLen + 1); j > i; j--) {
          const id = vocab.textToToken(w.slice(i, j));
          if (id >= 0) {
            out.push(id);
            matched = j;
            break;
          }
        }
        if (matched < 0) {
          out.length = mark; // one unmatchable piece discards the whole word
          break;
        }
        i = matched;
      }
      if (out.length === mark) out.push(vocab.unk);
    }
  }
}
