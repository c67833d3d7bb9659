// SentencePiece (BPE-by-score) as llama.cpp's llm_tokenizer_spm: start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the token with
// the highest score (leftmost on ties), then emit each symbol as its token, or as
// <0xNN> byte tokens when it is not one. Runs on bytes, so invalid UTF-8 in the input
// comes out as byte tokens exactly as in llama.cpp.
//
// Speed: when no token has "▁" right after another character (true of LLaMA and Phi-3),
// no merge can cross the start of a "▁" run, so the text splits there into pieces that
// are tokenized independently (same result, small queues) and memoized.
import { BigramQueue, Symbols } from './heap.js';
import type { FragmentTokenizer, VocabView } from './types.js';
import { utf8Len } from './unicode.js';

const SPACE = '\u00e2\u0096\u0081'; // "▁" as a byte string
const CACHE_LIMIT = 1 << 16;

export class SpmTokenizer implements FragmentTokenizer {
  /** Token id by the byte string of its text. */
  private readonly ids = new Map<string, number>();
  private readonly byteIds = new Int32Array(256).fill(-1);
  private readonly scores: Float32Array;
  private readonly queue = new BigramQueue();
  private readonly symbols = new Symbols(256);
  private readonly top = { left: 0, right: 0, size: 0 };
  /** Whether pieces may be cut before each "▁" that follows another character. */
  private readonly cutAtSpace: boolean;
  private readonly cache = new Map<string, number[]>();

  constructor(vocab: VocabView) {
    this.scores = vocab.scores;
    for (let i = 0; i < vocab.nTokens; i++) this.ids.set(vocab.tokenBytes(i), i);
    const hex = '0123456789ABCDEF';
    for (let b = 0; b < 256; b++) {
      const id = this.ids.get(`<0x${hex[b >> 4]}${hex[b & 15]}>`) ?? this.ids.get(String.fromCharCode(b));
      this.byteIds[b] = id ?? vocab.unk;
    }
    this.cutAtSpace = !vocab.tokens.some((t) => /[^\u2581]\u2581/.test(t));
  }

  tokenize(text: string, out: number[]): void {
    if (!this.cutAtSpace) {
      this.tokenizePiece(text, out);
      return;
    }
    let start = 0;
    for (;;) {
      let cut = text.indexOf(SPACE, start + 1);
      // a cut goes before a run of "▁", not inside one
      while (cut > 0 && text.startsWith(SPACE, cut - 3)) cut = text.indexOf(SPACE, cut + 3);
      const end = cut < 0 ? text.length : cut;
      const piece = text.slice(start, end);
      let ids = this.cache.get(piece);
      if (ids === undefined) {
        ids = [];
        this.tokenizePiece(piece, ids);
        if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
        this.cache.set(piece, ids);
      }
      for (let i = 0; i < ids.length; i++) out.push(ids[i]!);
      if (cut < 0) return;
      start = end;
    }
  }

  private tokenizePiece(text: string, out: number[]): void {
    const n = text.length;
    if (n === 0) return;
    const sym = this.symbols;
    sym.reset(n);
    for (let offs = 0; offs < n; ) {
      const len = Math.min(utf8Len(text.charCodeAt(offs)), n - offs);
      sym.add(offs, len, offs + len === n);
      offs += len;
    }
    const q = this.queue;
    q.clear();
    for (let i = 1; i < sym.count; i++) this.tryAdd(text, i - 1, i);
    const top = this.top;
    while (q.pop(top)) {
      const l = top.left;
      const r = top.right;
      const ll = sym.len[l]!;
      const rl = sym.len[r]!;
      if (ll === 0 || rl === 0 || ll + rl !== top.size) continue;
      sym.merge(l, r);
      this.tryAdd(text, sym.prev[l]!, l);
      this.tryAdd(text, l, sym.next[l]!);
    }
    for (let i = 0; i !== -1; i = sym.next[i]!) {
      const start = sym.start[i]!;
      const len = sym.len[i]!;
      const id = this.ids.get(text.slice(start, start + len));
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      for (let j = start; j < start + len; j++) {
        const b = this.byteIds[text.charCodeAt(j)]!;
        if (b >= 0) out.push(b);
      }
    }
  }

  private tryAdd(text: string, left: number, right: number): void {
    if (left < 0 || right < 0) return;
    const sym = this.symbols;
    const start = sym.start[left]!;
    const size = sym.len[left]! + sym.len[right]!;
    const id = this.ids.get(text.slice(start, start + size));
    if (id === undefined) return;
    // highest score first: the queue pops the lowest key
    this.queue.push(-this.scores[id]!, left, right, size);
  }
}
