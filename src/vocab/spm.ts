// SentencePiece (BPE-by-score) as llama.cpp's llm_tokenizer_spm: start from UTF-8
// characters, repeatedly merge the adjacent pair whose concatenation is the token with
// the highest score (leftmost on ties), then emit each symbol as its token, or as
// <0xNN> byte tokens when it is not one. Runs on bytes, so invalid UTF-8 in the input
// comes out as byte tokens exactly as in llama.cpp.
import { BigramQueue, Symbols } from './heap.js';
import { utf8Len } from './unicode.js';
import type { FragmentTokenizer, Vocab } from './vocab.js';

export class SpmTokenizer implements FragmentTokenizer {
  /** Token id by the byte string of its text. */
  private readonly ids = new Map<string, number>();
  private readonly byteIds = new Int32Array(256).fill(-1);
  private readonly scores: Float32Array;
  private readonly queue = new BigramQueue();
  private readonly symbols = new Symbols(256);
  private readonly top = { left: 0, right: 0, size: 0 };

  constructor(vocab: Vocab) {
    this.scores = vocab.scores;
    for (let i = 0; i < vocab.nTokens; i++) this.ids.set(vocab.tokenBytes(i), i);
    const hex = '0123456789ABCDEF';
    for (let b = 0; b < 256; b++) {
      const id = this.ids.get(`<0x${hex[b >> 4]}${hex[b & 15]}>`) ?? this.ids.get(String.fromCharCode(b));
      this.byteIds[b] = id ?? vocab.unk;
    }
  }

  tokenize(text: string, out: number[]): void {
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
