// The vocabulary of a GGUF file: what the loader read (tokens, scores, attributes, merges,
// special ids and flags) plus the encode/decode entry points, which delegate to one file
// per stage.
import type { GGUFFile } from '../gguf/index.js';
import { BpeTokenizer } from './bpe.js';
import { decodeTokens, StreamDecoder, type StreamDecoderOptions, tokenPiece } from './decode.js';
import { encodeText } from './encode.js';
import { readVocab } from './loader.js';
import { SpmTokenizer } from './spm.js';
import {
  Attr,
  type DecodeOptions,
  type EncodeOptions,
  type FragmentTokenizer,
  NULL_TOKEN as NULL,
  type VocabDescription,
  type VocabOptions,
  type VocabType,
  type VocabView,
} from './types.js';
import { UgmTokenizer } from './ugm.js';
import { binaryToBytes, binaryToText, textToBinary } from './unicode.js';
import { WpmTokenizer } from './wpm.js';

export class Vocab implements VocabView {
  readonly path: string;
  readonly type: VocabType;
  /** `tokenizer.ggml.model` */
  readonly model: string;
  /** `tokenizer.ggml.pre` as used ('default' when absent or forced). */
  readonly pre: string;
  readonly preTokenizer: VocabDescription['preTokenizer'];
  readonly tokens: readonly string[];
  readonly scores: Float32Array;
  readonly attrs: Uint16Array;
  readonly ids: ReadonlyMap<string, number>;
  /** BPE merges as "left right" -> rank. */
  readonly merges: ReadonlyMap<string, number>;

  bos: number;
  eos: number;
  eot: number;
  eom: number;
  unk: number;
  sep: number;
  pad: number;
  mask: number;
  fimPre: number;
  fimSuf: number;
  fimMid: number;
  fimPad: number;
  fimRep: number;
  fimSep: number;
  readonly eog: Set<number>;

  addBos: boolean;
  addEos: boolean;
  addSep: boolean;
  addSpacePrefix: boolean;
  cleanSpaces: boolean;
  ignoreMerges: boolean;
  escapeWhitespaces: boolean;
  removeExtraWhitespaces: boolean;
  readonly precompiledCharsmap: Uint8Array | null;
  lowercase: boolean;
  stripAccents: boolean;
  /** Longest token text, in UTF-16 units. */
  readonly maxTokenLength: number;

  /** Control, user-defined and unknown tokens, longest text first (for special-token partitioning). */
  readonly specialTokens: readonly number[];
  private readonly bytesCache: (string | undefined)[];
  private readonly pieceCache: (string | undefined)[];
  private fragmentTokenizer: FragmentTokenizer | undefined;

  /** A vocabulary from its description (see `readVocab`). */
  constructor(d: VocabDescription) {
    this.path = d.path;
    this.type = d.type;
    this.model = d.model;
    this.pre = d.pre;
    this.preTokenizer = d.preTokenizer;
    this.tokens = d.tokens;
    this.scores = d.scores;
    this.attrs = d.attrs;
    this.ids = d.ids;
    this.merges = d.merges;
    this.bos = d.bos;
    this.eos = d.eos;
    this.eot = d.eot;
    this.eom = d.eom;
    this.unk = d.unk;
    this.sep = d.sep;
    this.pad = d.pad;
    this.mask = d.mask;
    this.fimPre = d.fimPre;
    this.fimSuf = d.fimSuf;
    this.fimMid = d.fimMid;
    this.fimPad = d.fimPad;
    this.fimRep = d.fimRep;
    this.fimSep = d.fimSep;
    this.eog = new Set(d.eog);
    this.addBos = d.addBos;
    this.addEos = d.addEos;
    this.addSep = d.addSep;
    this.addSpacePrefix = d.addSpacePrefix;
    this.cleanSpaces = d.cleanSpaces;
    this.ignoreMerges = d.ignoreMerges;
    this.escapeWhitespaces = d.escapeWhitespaces;
    this.removeExtraWhitespaces = d.removeExtraWhitespaces;
    this.precompiledCharsmap = d.precompiledCharsmap;
    this.lowercase = d.lowercase;
    this.stripAccents = d.stripAccents;
    this.specialTokens = d.specialTokens;
    let maxLen = 0;
    for (const t of d.tokens) if (t.length > maxLen) maxLen = t.length;
    this.maxTokenLength = maxLen;
    this.bytesCache = new Array(d.tokens.length);
    this.pieceCache = new Array(d.tokens.length);
  }

  /** Load the vocabulary from a GGUF file's metadata. Throws VocabError (or GGUFError) on bad metadata. */
  static fromGGUF(file: GGUFFile, opts: VocabOptions = {}): Vocab {
    return new Vocab(readVocab(file, opts));
  }

  get nTokens(): number {
    return this.tokens.length;
  }

  /** BERT's [CLS]: the BOS slot of a WordPiece vocabulary. */
  get cls(): number {
    return this.bos;
  }

  /** Id of a token by its exact text, or -1. */
  textToToken(text: string): number {
    return this.ids.get(text) ?? NULL;
  }

  tokenText(id: number): string {
    this.check(id);
    return this.tokens[id]!;
  }

  tokenAttr(id: number): number {
    this.check(id);
    return this.attrs[id]!;
  }

  isControl(id: number): boolean {
    return (this.tokenAttr(id) & Attr.CONTROL) !== 0;
  }

  isByte(id: number): boolean {
    return (this.tokenAttr(id) & Attr.BYTE) !== 0;
  }

  isEog(id: number): boolean {
    return this.eog.has(id);
  }

  /** Token text as a byte string (its UTF-8, one char per byte). */
  tokenBytes(id: number): string {
    let b = this.bytesCache[id];
    if (b === undefined) {
      b = textToBinary(this.tokens[id]!);
      this.bytesCache[id] = b;
    }
    return b;
  }

  /** The tokenizer of this vocabulary's model for one raw-text fragment. */
  get fragments(): FragmentTokenizer {
    if (!this.fragmentTokenizer) {
      if (this.type === 'spm') this.fragmentTokenizer = new SpmTokenizer(this);
      else if (this.type === 'bpe') this.fragmentTokenizer = new BpeTokenizer(this);
      else if (this.type === 'ugm') this.fragmentTokenizer = new UgmTokenizer(this);
      else this.fragmentTokenizer = new WpmTokenizer(this);
    }
    return this.fragmentTokenizer;
  }

  /** Text (a JS string, or raw UTF-8 bytes) to token ids. */
  encode(text: string | Uint8Array, opts: EncodeOptions = {}): number[] {
    return encodeText(this, text, opts.addSpecial ?? true, opts.parseSpecial ?? false);
  }

  /** A token's piece as a byte string (llama.cpp's token_to_piece). */
  pieceBytes(id: number, renderSpecial = true, lstrip = 0): string {
    this.check(id);
    let p = this.pieceCache[id];
    if (p === undefined) {
      p = tokenPiece(this, id);
      this.pieceCache[id] = p;
    }
    if (!renderSpecial && this.attrs[id]! & (Attr.UNKNOWN | Attr.CONTROL)) return '';
    let i = 0;
    while (i < lstrip && i < p.length && p.charCodeAt(i) === 0x20) i++;
    return i === 0 ? p : p.slice(i);
  }

  /** A token's piece as text (bytes that are not whole UTF-8 characters show as U+FFFD). */
  tokenToPiece(id: number, renderSpecial = true): string {
    return binaryToText(this.pieceBytes(id, renderSpecial));
  }

  /** Token ids to text, as llama.cpp's detokenize (leading-space and clean-up rules included). */
  decode(ids: readonly number[], opts: DecodeOptions = {}): string {
    return binaryToText(decodeTokens(this, ids, opts.removeSpecial ?? false, opts.renderSpecial ?? false));
  }

  /** Token ids to raw bytes. */
  decodeToBytes(ids: readonly number[], opts: DecodeOptions = {}): Uint8Array {
    return binaryToBytes(decodeTokens(this, ids, opts.removeSpecial ?? false, opts.renderSpecial ?? false));
  }

  /** An incremental decoder that never splits a UTF-8 character. */
  streamDecoder(opts: StreamDecoderOptions = {}): StreamDecoder {
    return new StreamDecoder(this, opts);
  }

  private check(id: number): void {
    if (!(Number.isInteger(id) && id >= 0 && id < this.tokens.length)) {
      throw new RangeError(`token id ${id} is outside the vocabulary (0..${this.tokens.length - 1})`);
    }
  }
}
