// Unigram (UGM: T5 and several embedding models) as llama.cpp's llm_tokenizer_ugm:
// normalize the fragment (the precompiled charsmap's longest-match replacements,
// user-defined pieces copied as they are, spaces to "▁" with the space-prefix and
// extra-whitespace rules), then choose the segmentation with the highest total piece
// score by dynamic programming over byte offsets (Viterbi), a codepoint no piece covers
// costing the unknown token at the lowest score minus 10; runs of unknowns become one.
// Works on bytes throughout, so results match llama.cpp's std::string code byte for byte.
import { Attr, type FragmentTokenizer, VocabError, type VocabView } from './types.js';
import { binaryToBytes, textToBytes, utf8Len } from './unicode.js';

const SPACE_ESCAPE = [0xe2, 0x96, 0x81]; // "▁"
const REPLACEMENT = [0xef, 0xbf, 0xbd]; // U+FFFD

/**
 * A byte trie in flat arrays: node 0 is the root, children found through one
 * open-addressing hash table keyed by (node, byte).
 */
class ByteTrie {
  /** Token id ending at each node, or -1. */
  value: Int32Array = new Int32Array(1).fill(-1);
  private nodes = 1;
  private keys = new Int32Array(1024).fill(-1);
  private vals = new Int32Array(1024);
  private edges = 0;

  insert(bytes: ArrayLike<number>, id: number): void {
    let n = 0;
    for (let i = 0; i < bytes.length; i++) {
      let c = this.child(n, bytes[i]!);
      if (c < 0) {
        c = this.nodes++;
        if (c >= this.value.length) {
          const v = new Int32Array(this.value.length * 2).fill(-1);
          v.set(this.value);
          this.value = v;
        }
        this.setChild(n, bytes[i]!, c);
      }
      n = c;
    }
    this.value[n] = id;
  }

  /** Child of `node` along byte `b`, or -1. */
  child(node: number, b: number): number {
    const key = node * 256 + b;
    const mask = this.keys.length - 1;
    for (let h = Math.imul(key, 0x9e3779b1) >>> 0; ; h++) {
      const k = this.keys[h & mask]!;
      if (k === key) return this.vals[h & mask]!;
      if (k < 0) return -1;
    }
  }

  private setChild(node: number, b: number, child: number): void {
    if ((this.edges + 1) * 2 > this.keys.length) this.grow();
    this.put(node * 256 + b, child);
    this.edges++;
  }

  private put(key: number, v: number): void {
    const mask = this.keys.length - 1;
    let h = Math.imul(key, 0x9e3779b1) >>> 0;
    while (this.keys[h & mask]! >= 0) h++;
    this.keys[h & mask] = key;
    this.vals[h & mask] = v;
  }

  private grow(): void {
    const keys = this.keys;
    const vals = this.vals;
    this.keys = new Int32Array(keys.length * 2).fill(-1);
    this.vals = new Int32Array(keys.length * 2);
    for (let i = 0; i < keys.length; i++) if (keys[i]! >= 0) this.put(keys[i]!, vals[i]!);
  }
}

/**
 * SentencePiece's precompiled charsmap: an XOR-compressed double array over byte strings
 * (each 32-bit unit: BASE in bits 10-30, shifted by 8 more when bit 9 is set; LEAF in bit
 * 8; LCHECK, the label, in bits 0-7; value units have bit 31 set), then NUL-terminated
 * replacement strings that leaves point to.
 */
export class Charsmap {
  private readonly units: Uint32Array;
  private readonly replacements: Uint8Array;

  constructor(
    blob: Uint8Array,
    private readonly where: string,
  ) {
    const dv = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    const size = dv.getUint32(0, true);
    this.units = new Uint32Array(Math.floor(size / 4));
    for (let i = 0; i < this.units.length; i++) this.units[i] = dv.getUint32(4 + i * 4, true);
    this.replacements = blob.subarray(4 + size);
  }

  private unit(i: number): number {
    if (i >= this.units.length) {
      throw new VocabError(`${this.where}: precompiled charsmap: index ${i} is outside its ${this.units.length} units`);
    }
    return this.units[i]!;
  }

  private base(i: number): number {
    const u = this.unit(i);
    return ((u >>> 10) << ((u & (1 << 9)) >>> 6)) >>> 0;
  }

  /**
   * The longest source string at `bytes[start..end)`: [replacement start, replacement
   * length, bytes consumed], or null when no source string starts there.
   */
  match(bytes: Uint8Array, start: number, end: number): [number, number, number] | null {
    if (this.units.length === 0) return null;
    let node = this.base(0);
    let length = 0;
    let value = 0;
    for (let p = start; p < end; p++) {
      const c = bytes[p]!;
      if (c === 0) break;
      node = (node ^ c) >>> 0;
      const u = this.unit(node);
      if ((u & 0x800000ff) >>> 0 !== c) break;
      const leaf = (u >>> 8) & 1;
      node = (node ^ this.base(node)) >>> 0;
      if (leaf) {
        length = p - start + 1;
        value = this.unit(node) & 0x7fffffff;
      }
    }
    if (length === 0) return null;
    const r = this.replacements;
    if (value >= r.length) {
      throw new VocabError(
        `${this.where}: precompiled charsmap: replacement offset ${value} is past its end (${r.length})`,
      );
    }
    const nul = r.indexOf(0, value);
    if (nul < 0) throw new VocabError(`${this.where}: precompiled charsmap: replacement at ${value} is not terminated`);
    return [value, nul - value, length];
  }

  replacementBytes(): Uint8Array {
    return this.replacements;
  }
}

/** Whether bytes[i..] starts with a sequence llama.cpp's UTF-8 decoder accepts; its length or 0. */
function validUtf8(bytes: Uint8Array, i: number, end: number): number {
  const b = bytes[i]!;
  if (b < 0x80) return 1;
  if (!(b & 0x40)) return 0;
  const n = !(b & 0x20) ? 2 : !(b & 0x10) ? 3 : !(b & 0x08) ? 4 : 0;
  if (n === 0 || i + n > end) return 0;
  for (let k = 1; k < n; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return 0;
  return n;
}

export class UgmTokenizer implements FragmentTokenizer {
  private readonly tokens = new ByteTrie();
  private readonly userDefined = new ByteTrie();
  /** First bytes of user-defined pieces (a quick test before walking their trie). */
  private readonly userFirst = new Uint8Array(256);
  private readonly charsmap: Charsmap | null;
  private readonly scores: Float32Array;
  private readonly isUserDefined: Uint8Array;
  private readonly unknownScore: number;
  private buf = new Uint8Array(1024);

  constructor(private readonly vocab: VocabView) {
    this.scores = vocab.scores;
    this.charsmap = vocab.precompiledCharsmap ? new Charsmap(vocab.precompiledCharsmap, vocab.path) : null;
    this.isUserDefined = new Uint8Array(vocab.nTokens);
    let minScore = 3.4028234663852886e38;
    for (let id = 0; id < vocab.nTokens; id++) {
      const a = vocab.attrs[id]!;
      if (a & Attr.NORMAL) minScore = Math.min(minScore, vocab.scores[id]!);
      if (a & (Attr.NORMAL | Attr.USER_DEFINED | Attr.UNUSED)) {
        this.tokens.insert(textToBytes(vocab.tokens[id]!), id);
      }
      if (a & Attr.USER_DEFINED) {
        const bytes = textToBytes(vocab.tokens[id]!);
        this.userDefined.insert(bytes, id);
        this.userFirst[bytes[0]!] = 1;
        this.isUserDefined[id] = 1;
      }
    }
    this.unknownScore = Math.fround(minScore - 10);
    if (vocab.unk < 0)
      throw new VocabError(`${vocab.path}: UGM vocabulary without an unknown token (unknown_token_id)`);
  }

  tokenize(text: string, out: number[]): void {
    const norm = this.normalize(text);
    const n = norm.length;
    if (n === 0) return;
    const unk = this.vocab.unk;
    // best segmentation of norm[0..i): its last token, where that token starts, total score
    const best = new Float64Array(n + 1).fill(Number.NEGATIVE_INFINITY);
    const tokenAt = new Int32Array(n + 1).fill(unk);
    const startAt = new Int32Array(n + 1);
    best[0] = 0;
    const trie = this.tokens;
    for (let i = 0; i < n; ) {
      const cpLen = Math.min(utf8Len(norm[i]!), n - i);
      const base = best[i]!;
      let wholeCodepoint = false;
      let node = trie.child(0, norm[i]!);
      for (let p = i + 1; node >= 0; p++) {
        const id = trie.value[node]!;
        if (id >= 0) {
          if (p - i === cpLen) wholeCodepoint = true;
          const score = base + (this.isUserDefined[id] ? 0 : this.scores[id]!);
          if (score > best[p]!) {
            best[p] = score;
            tokenAt[p] = id;
            startAt[p] = i;
          }
        }
        if (p >= n) break;
        node = trie.child(node, norm[p]!);
      }
      if (!wholeCodepoint) {
        const p = i + cpLen;
        const score = base + this.unknownScore;
        if (score > best[p]!) {
          best[p] = score;
          tokenAt[p] = unk;
          startAt[p] = i;
        }
      }
      i += cpLen;
    }
    const mark = out.length;
    let prevUnknown = false;
    for (let p = n; ; p = startAt[p]!) {
      const id = tokenAt[p]!;
      const isUnknown = id === unk;
      if (!(prevUnknown && isUnknown)) out.push(id);
      if (startAt[p] === 0) break;
      prevUnknown = isUnknown;
    }
    // gathered from the end
    for (let a = mark, b = out.length - 1; a < b; a++, b--) {
      const t = out[a]!;
      out[a] = out[b]!;
      out[b] = t;
    }
  }

  /** The fragment (a byte string) normalized as llama.cpp's UGM session does, as UTF-8 bytes. */
  normalize(text: string): Uint8Array {
    const input = binaryToBytes(text);
    const len = input.length;
    const v = this.vocab;
    const space = v.escapeWhitespaces ? SPACE_ESCAPE : [0x20];
    const prependSpace = v.addSpacePrefix;
    const mergeSpaces = v.removeExtraWhitespaces;
    let out = this.buf;
    let n = 0;
    const push = (b: number) => {
      if (n === out.length) {
        const grown = new Uint8Array(out.length * 2);
        grown.set(out);
        out = grown;
        this.buf = grown;
      }
      out[n++] = b;
    };
    let spacePrepended = false;
    let inWord = false;
    const emit = (bytes: ArrayLike<number>, start: number, count: number) => {
      for (let k = start; k < start + count; k++) {
        const c = bytes[k]!;
        if (c !== 0x20) {
          if (!inWord) {
            inWord = true;
            if ((prependSpace && !spacePrepended) || mergeSpaces) {
              for (const s of space) push(s);
              spacePrepended = true;
            }
          }
          push(c);
        } else {
          inWord = false;
          if (!mergeSpaces) for (const s of space) push(s);
        }
      }
    };
    for (let i = 0; i < len; ) {
      // a prefix on the path of a user-defined piece is copied as it is (as far as it follows the path)
      if (this.userFirst[input[i]!]) {
        let node = 0;
        let depth = 0;
        while (i + depth < len) {
          const c = this.userDefined.child(node, input[i + depth]!);
          if (c < 0) break;
          node = c;
          depth++;
        }
        emit(input, i, depth);
        i += depth;
        continue;
      }
      const m = this.charsmap?.match(input, i, len);
      if (m) {
        emit(this.charsmap!.replacementBytes(), m[0], m[1]);
        i += m[2];
        continue;
      }
      const u = validUtf8(input, i, len);
      if (u > 0) {
        emit(input, i, u);
        i += u;
      } else {
        emit(REPLACEMENT, 0, 3);
        i += 1;
      }
    }
    return out.slice(0, n);
  }
}
