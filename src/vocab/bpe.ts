// Byte-level BPE as llama.cpp's llm_tokenizer_bpe: the pre-tokenizer cuts text into
// words, each word's UTF-8 bytes are spelled in the GPT-2 byte alphabet, and adjacent
// symbols are merged lowest merge rank first (leftmost on ties) through a priority
// queue, so a long word costs n log n, not n². Words repeat, so results are memoized.
import { BigramQueue, Symbols } from './heap.js';
import { PreTokenizer } from './pretokenize.js';
import type { FragmentTokenizer, VocabView } from './types.js';
import { byteLevelEncode, cptsToBytes, decodeBytes } from './unicode.js';

const CACHE_LIMIT = 1 << 16;

export class BpeTokenizer implements FragmentTokenizer {
  private readonly pre: PreTokenizer;
  private readonly ranks: ReadonlyMap<string, number>;
  private readonly cache = new Map<string, number[]>();
  private readonly queue = new BigramQueue();
  private readonly symbols = new Symbols(64);
  private readonly top = { left: 0, right: 0, size: 0 };

  constructor(private readonly vocab: VocabView) {
    this.pre = new PreTokenizer(vocab.preTokenizer!.regexes);
    this.ranks = vocab.merges;
  }

  tokenize(text: string, out: number[]): void {
    const { cpts, exact } = decodeBytes(text);
    const lengths = this.pre.split(cpts);
    let c = 0; // codepoint index
    let b = 0; // byte index into `text` (meaningful when exact)
    for (const len of lengths) {
      // the word's UTF-8 as a byte string: a slice of the input unless decoding replaced bytes
      let bytes: string;
      if (exact) {
        let n = 0;
        for (let i = c; i < c + len; i++) {
          const cp = cpts[i]!;
          n += cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        }
        bytes = text.slice(b, b + n);
        b += n;
      } else {
        bytes = cptsToBytes(cpts, c, c + len);
      }
      c += len;
      let ids = this.cache.get(bytes);
      if (ids === undefined) {
        ids = [];
        this.mergeWord(byteLevelEncode(bytes), ids);
        if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
        this.cache.set(bytes, ids);
      }
      for (let i = 0; i < ids.length; i++) out.push(ids[i]!);
    }
  }

  private mergeWord(word: string, out: number[]): void {
    const vocab = this.vocab;
    if (vocab.ignoreMerges) {
      const id = vocab.textToToken(word);
      if (id >= 0) {
        out.push(id);
        return;
      }
    }
    const n = word.length; // one char per byte of the original text
    const sym = this.symbols;
    sym.reset(n);
    for (let i = 0; i < n; i++) sym.add(i, 1, i === n - 1);
    const q = this.queue;
    q.clear();
    for (let i = 1; i < n; i++) this.tryAdd(word, i - 1, i);
    const top = this.top;
    while (q.pop(top)) {
      const l = top.left;
      const r = top.right;
      const ll = sym.len[l]!;
      const rl = sym.len[r]!;
      // stale when either side changed since the pair was queued
      if (ll === 0 || rl === 0 || ll + rl !== top.size) continue;
      sym.merge(l, r);
      this.tryAdd(word, sym.prev[l]!, l);
      this.tryAdd(word, l, sym.next[l]!);
    }
    for (let i = 0; i !== -1; i = sym.next[i]!) {
      const s = word.slice(sym.start[i]!, sym.start[i]! + sym.len[i]!);
      const id = vocab.textToToken(s);
      if (id >= 0) {
        out.push(id);
        continue;
      }
      for (const ch of s) {
        const bid = vocab.textToToken(ch);
        if (bid >= 0) out.push(bid);
      }
    }
  }

  private tryAdd(word: string, left: number, right: number): void {
    if (left < 0 || right < 0) return;
    const sym = this.symbols;
    const ls = sym.start[left]!;
    const rs = sym.start[right]!;
    const rl = sym.len[right]!;
    const rank = this.ranks.get(`${word.slice(ls, rs)} ${word.slice(rs, rs + rl)}`);
    if (rank === undefined) return;
    this.queue.push(rank, left, right, rs + rl - ls);
  }
}
