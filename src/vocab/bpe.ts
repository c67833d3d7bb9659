// BPE as llama.cpp's llm_tokenizer_bpe: the pre-tokenizer cuts text into words, each
// word's UTF-8 bytes are spelled in the GPT-2 byte alphabet (byte-level BPE; SPM-style
// BPE such as Gemma 4's keeps the UTF-8 characters and falls back to <0xNN> tokens),
// and adjacent symbols are merged lowest merge rank first (leftmost on ties) through a
// priority queue, so a long word costs n log n, not n². Words repeat, so results are
// memoized.
//
// Some pre-tokenizers leave long words: SPM-style BPE merges whole lines, SuperBPE whole
// stretches between numbers. A merge joins a symbol ending in character a to one
// starting with character b only if some merge rule has that (last, first) pair; where
// two adjacent characters form no such pair, no merge ever crosses between them, so a
// long word is cut there into pieces merged independently (same result, small queues)
// and memoized. With vocabularies whose merges cross spaces (real SuperBPE ones), few
// cuts remain and long words cost their n log n.
import { BigramQueue, Symbols } from './heap.js';
import { PreTokenizer } from './pretokenize.js';
import type { FragmentTokenizer, VocabView } from './types.js';
import { binaryToText, byteLevelEncode, cptsToBytes, decodeBytes, textToBytes } from './unicode.js';

const CACHE_LIMIT = 1 << 16;
/** Words at least this long (in UTF-16 units) are cut where no merge can cross. */
const CUT_MIN = 24;

export class BpeTokenizer implements FragmentTokenizer {
  private readonly pre: PreTokenizer;
  private readonly ranks: ReadonlyMap<string, number>;
  private readonly cache = new Map<string, number[]>();
  private readonly queue = new BigramQueue();
  private readonly symbols = new Symbols(64);
  private readonly top = { left: 0, right: 0, size: 0 };
  private readonly byteEncode: boolean;
  private readonly newlineWords: boolean;
  /** Token of each byte when a merged symbol is not a token (<0xNN> tokens for SPM-style BPE). */
  private readonly byteIds = new Int32Array(256);
  /** (last char, first char) of every merge's two sides, as lastCp * 0x110000 + firstCp. */
  private readonly joins = new Set<number>();
  private readonly pieceCache = new Map<string, number[]>();

  constructor(private readonly vocab: VocabView) {
    const spec = vocab.preTokenizer!;
    this.pre = new PreTokenizer(spec.regexes);
    this.ranks = vocab.merges;
    this.byteEncode = spec.byteEncode;
    this.newlineWords = spec.newlineWords;
    const hex = '0123456789ABCDEF';
    for (let b = 0; b < 256; b++) {
      this.byteIds[b] = this.byteEncode
        ? vocab.textToToken(byteLevelEncode(String.fromCharCode(b)))
        : vocab.textToToken(`<0x${hex[b >> 4]}${hex[b & 15]}>`);
    }
    for (const key of this.ranks.keys()) {
      const sp = key.indexOf(' ', 1);
      if (sp < 0 || sp + 1 >= key.length) continue;
      const a = key.codePointAt(key.charCodeAt(sp - 1) >= 0xdc00 && key.charCodeAt(sp - 1) < 0xe000 ? sp - 2 : sp - 1)!;
      this.joins.add(a * 0x110000 + key.codePointAt(sp + 1)!);
    }
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
        ids = this.encodeWord(this.byteEncode ? byteLevelEncode(bytes) : binaryToText(bytes));
        if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
        this.cache.set(bytes, ids);
      }
      for (let i = 0; i < ids.length; i++) out.push(ids[i]!);
    }
  }

  /** One word (byte-alphabet chars, or SPM-style whole characters) to ids. */
  private encodeWord(word: string): number[] {
    const vocab = this.vocab;
    const out: number[] = [];
    // whole-word lookups come first, before any cut (llama.cpp: ignore_merges, Gemma 4's newline runs)
    if (vocab.ignoreMerges || (this.newlineWords && /^\n+$/.test(word))) {
      const id = vocab.textToToken(word);
      if (id >= 0) return [id];
    }
    if (word.length < CUT_MIN) {
      this.mergeWord(word, out);
      return out;
    }
    let start = 0;
    let prev = word.codePointAt(0)!;
    for (let i = prev > 0xffff ? 2 : 1; i <= word.length; ) {
      const cp = i < word.length ? word.codePointAt(i)! : -1;
      if (cp < 0 || !this.joins.has(prev * 0x110000 + cp)) {
        const piece = word.slice(start, i);
        start = i;
        let ids = this.pieceCache.get(piece);
        if (ids === undefined) {
          ids = [];
          this.mergeWord(piece, ids);
          if (this.pieceCache.size >= CACHE_LIMIT) this.pieceCache.clear();
          this.pieceCache.set(piece, ids);
        }
        for (let k = 0; k < ids.length; k++) out.push(ids[k]!);
        if (cp < 0) break;
      }
      prev = cp;
      i += cp > 0xffff ? 2 : 1;
    }
    return out;
  }

  /** Merge one word or piece of one. */
  private mergeWord(word: string, out: number[]): void {
    const vocab = this.vocab;
    const n = word.length;
    const sym = this.symbols;
    sym.reset(n);
    if (this.byteEncode) {
      for (let i = 0; i < n; i++) sym.add(i, 1, i === n - 1); // one char per byte
    } else {
      for (let i = 0; i < n; ) {
        const u = word.charCodeAt(i);
        const len = u >= 0xd800 && u < 0xdc00 && i + 1 < n ? 2 : 1;
        sym.add(i, len, i + len === n);
        i += len;
      }
    }
    const q = this.queue;
    q.clear();
    for (let i = 1; i < sym.count; i++) this.tryAdd(word, i - 1, i);
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
      if (this.byteEncode) {
        for (let j = 0; j < s.length; j++) {
          const bid = vocab.textToToken(s[j]!);
          if (bid >= 0) out.push(bid);
        }
      } else {
        const utf8 = textToBytes(s);
        for (let j = 0; j < utf8.length; j++) {
          const bid = this.byteIds[utf8[j]!]!;
          if (bid >= 0) out.push(bid);
        }
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
