// What the vocabulary layer's files share: token attributes, the plain description the
// loader reads from a GGUF file, the view of a vocabulary the pipeline stages work on,
// options and the error type. This file imports nothing, so the stages (special, spm,
// bpe, wpm, ugm, encode, decode) and `Vocab` itself depend on it and never on each other
// in a circle.

/** Token attributes (llama_token_attr). */
export const Attr = {
  UNDEFINED: 0,
  UNKNOWN: 1 << 0,
  UNUSED: 1 << 1,
  NORMAL: 1 << 2,
  CONTROL: 1 << 3,
  USER_DEFINED: 1 << 4,
  BYTE: 1 << 5,
  NORMALIZED: 1 << 6,
  LSTRIP: 1 << 7,
  RSTRIP: 1 << 8,
  SINGLE_WORD: 1 << 9,
} as const;

/** No token (llama.cpp's LLAMA_TOKEN_NULL). */
export const NULL_TOKEN = -1;

/** SentencePiece BPE, byte-level BPE, WordPiece, Unigram. */
export type VocabType = 'spm' | 'bpe' | 'wpm' | 'ugm';

/** Thrown when a vocabulary cannot be loaded (bad or unsupported metadata). */
export class VocabError extends Error {
  override name = 'VocabError';
}

export interface VocabOptions {
  /** Use the default pre-tokenizer when `tokenizer.ggml.pre` names one llama-ts does not know (instead of failing). */
  forceDefaultPre?: boolean;
}

export interface EncodeOptions {
  /** Add BOS/EOS (CLS/SEP for WordPiece) as the vocabulary asks. Default true. */
  addSpecial?: boolean;
  /** Recognise the text of control tokens inside the input. Default false (user-defined tokens are always recognised, as in llama.cpp). */
  parseSpecial?: boolean;
}

export interface DecodeOptions {
  /** Drop a leading BOS and a trailing EOS when the vocabulary adds them. Default false. */
  removeSpecial?: boolean;
  /** Render control and unknown tokens as their text. Default false. */
  renderSpecial?: boolean;
}

/** Anything that may tokenize one raw-text fragment (a byte string) into ids. */
export interface FragmentTokenizer {
  tokenize(text: string, out: number[]): void;
}

/** Special token ids; -1 (NULL_TOKEN) where the vocabulary has none. */
export interface SpecialIds {
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
}

/** How a BPE vocabulary cuts text into words before merging (from `tokenizer.ggml.pre`). */
export interface PreTokenizerSpec {
  /** Regexes applied one after the other (some stand for hand-written scanners). */
  regexes: readonly string[];
  /** Words are spelled in the GPT-2 byte alphabet before merging (false: raw UTF-8, byte tokens as <0xNN>). */
  byteEncode: boolean;
  /** A word of newlines only is looked up whole before merging (Gemma 4). */
  newlineWords: boolean;
}

/** Everything a GGUF file says about its tokenizer, defaulted as llama.cpp's loader does. Plain data. */
export interface VocabDescription extends SpecialIds {
  /** The file it came from (for messages). */
  path: string;
  /** `tokenizer.ggml.model` */
  model: string;
  type: VocabType;
  /** `tokenizer.ggml.pre` as used ('default' when absent or forced). */
  pre: string;
  /** BPE only. */
  preTokenizer: PreTokenizerSpec | null;
  tokens: readonly string[];
  scores: Float32Array;
  attrs: Uint16Array;
  /** Token id by its exact text. */
  ids: ReadonlyMap<string, number>;
  /** BPE merges as "left right" -> rank. */
  merges: ReadonlyMap<string, number>;
  /** End-of-generation ids. */
  eog: ReadonlySet<number>;
  /** Control, user-defined and unknown tokens, longest UTF-8 first (for special-token partitioning). */
  specialTokens: readonly number[];
  addBos: boolean;
  addEos: boolean;
  addSep: boolean;
  addSpacePrefix: boolean;
  cleanSpaces: boolean;
  ignoreMerges: boolean;
  /** Spaces become "▁" before tokenizing (SPM-style BPE and UGM). */
  escapeWhitespaces: boolean;
  /** UGM: collapse runs of spaces and drop leading/trailing ones. */
  removeExtraWhitespaces: boolean;
  /** UGM: the SentencePiece normalization table (`tokenizer.ggml.precompiled_charsmap`), or null. */
  precompiledCharsmap: Uint8Array | null;
  /** WordPiece normalizer. */
  lowercase: boolean;
  stripAccents: boolean;
}

/** What the pipeline stages read from a vocabulary (`Vocab` is one). */
export interface VocabView extends Readonly<VocabDescription> {
  readonly nTokens: number;
  /** Longest token text, in UTF-16 units. */
  readonly maxTokenLength: number;
  /** BERT's [CLS]: the BOS slot of a WordPiece vocabulary. */
  readonly cls: number;
  /** Id of a token by its exact text, or -1. */
  textToToken(text: string): number;
  /** Token text as a byte string (its UTF-8, one char per byte). */
  tokenBytes(id: number): string;
  /** A token's piece as a byte string (llama.cpp's token_to_piece). */
  pieceBytes(id: number, renderSpecial?: boolean, lstrip?: number): string;
  /** The tokenizer of this vocabulary's model for one raw-text fragment. */
  readonly fragments: FragmentTokenizer;
}
