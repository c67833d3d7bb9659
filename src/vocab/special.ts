// Partition raw text on special-token text before tokenizing, as llama.cpp's
// tokenizer_st_partition: every control/user-defined/unknown token, longest first, is
// cut out of the remaining raw fragments. User-defined tokens are always cut out;
// control and unknown ones only when parsing special tokens. LSTRIP/RSTRIP attributes
// swallow ASCII whitespace beside a match.
import { Attr, type VocabView } from './types.js';

/** A raw-text fragment [start, end) of the input byte string, or a token id. */
export type Fragment = { start: number; end: number } | number;

function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d);
}

export function partitionSpecial(vocab: VocabView, text: string, parseSpecial: boolean): Fragment[] {
  let frags: Fragment[] = text.length > 0 ? [{ start: 0, end: text.length }] : [];
  for (const id of vocab.specialTokens) {
    const attr = vocab.attrs[id]!;
    if (!parseSpecial && attr & (Attr.CONTROL | Attr.UNKNOWN)) continue;
    const tok = vocab.tokenBytes(id);
    if (!text.includes(tok)) continue;
    const next: Fragment[] = [];
    for (const f of frags) {
      if (typeof f === 'number') {
        next.push(f);
        continue;
      }
      let cur = f.start;
      const end = f.end;
      for (;;) {
        const m = text.indexOf(tok, cur);
        if (m < 0 || m + tok.length > end) {
          if (cur < end) next.push({ start: cur, end });
          break;
        }
        let leftEnd = m;
        if (attr & Attr.LSTRIP) while (leftEnd > cur && isSpace(text.charCodeAt(leftEnd - 1))) leftEnd--;
        if (leftEnd > cur) next.push({ start: cur, end: leftEnd });
        next.push(id);
        cur = m + tok.length;
        if (attr & Attr.RSTRIP) while (cur < end && isSpace(text.charCodeAt(cur))) cur++;
      }
    }
    frags = next;
  }
  return frags;
}
