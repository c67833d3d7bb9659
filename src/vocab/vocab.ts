// The vocabulary of a GGUF file: tokens, scores, token attributes, merges, special ids
// and flags, read and defaulted the way llama.cpp's llama_vocab::load does, plus the
// encode/decode entry points (which delegate to one file per stage).
import type { GGUFFile } from '../gguf/index.js';
import { GGUFValueType } from '../gguf/index.js';
import { logger } from '../log.js';
import { BpeTokenizer } from './bpe.js';
import { decodeTokens, StreamDecoder, type StreamDecoderOptions, tokenPiece } from './decode.js';
import { encodeText } from './encode.js';
import { PRE_TOKENIZER_NAMES, PreTokenizer, preTokenizerSpec } from './pretokenize.js';
import { SpmTokenizer } from './spm.js';
import { binaryToText, textToBinary } from './unicode.js';
import { WpmTokenizer } from './wpm.js';

const log = logger('vocab');

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

/** GGUF token types (tokenizer.ggml.token_type) to attributes. */
const TYPE_TO_ATTR = [
  Attr.UNDEFINED,
  Attr.NORMAL,
  Attr.UNKNOWN,
  Attr.CONTROL,
  Attr.USER_DEFINED,
  Attr.UNUSED,
  Attr.BYTE,
];

export type VocabType = 'spm' | 'bpe' | 'wpm';

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

/** Thrown when a vocabulary cannot be loaded (bad or unsupported metadata). */
export class VocabError extends Error {
  override name = 'VocabError';
}

/** Anything that may tokenize one raw-text fragment (a byte string) into ids. */
export interface FragmentTokenizer {
  tokenize(text: string, out: number[]): void;
}

const NULL = -1;

const EOT_TEXTS = [
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '<|end_of_text|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '<｜end▁of▁sentence｜>',
  '<end_of_utterance>',
];
const EOM_TEXTS = ['<|eom_id|>'];
const FIM_PRE_TEXTS = [
  '<|fim_prefix|>',
  '<fim-prefix>',
  '<fim_prefix>',
  '<｜fim▁begin｜>',
  '<PRE>',
  '▁<PRE>',
  '<|code_prefix|>',
  '<|prefix|>',
];
const FIM_SUF_TEXTS = [
  '<|fim_suffix|>',
  '<fim-suffix>',
  '<fim_suffix>',
  '<｜fim▁hole｜>',
  '<SUF>',
  '▁<SUF>',
  '<|code_suffix|>',
  '<|suffix|>',
];
const FIM_MID_TEXTS = [
  '<|fim_middle|>',
  '<fim-middle>',
  '<fim_middle>',
  '<｜fim▁end｜>',
  '<MID>',
  '▁<MID>',
  '<|code_middle|>',
  '<|middle|>',
];
const FIM_PAD_TEXTS = ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]'];
const FIM_REP_TEXTS = ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>'];
const FIM_SEP_TEXTS = ['<|file_sep|>'];
const EOG_TEXTS = new Set([
  '<|eot_id|>',
  '<|im_end|>',
  '<|end|>',
  '<|return|>',
  '<|call|>',
  '<|flush|>',
  '<|calls|>',
  '<end_of_turn>',
  '<|endoftext|>',
  '</s>',
  '<|eom_id|>',
  '<EOT>',
  '_<EOT>',
  '[EOT]',
  '[EOS]',
  '<|end_of_text|>',
  '<end_of_utterance>',
  '<eos>',
  '<turn|>',
  '<|tool_response>',
  '<｜end▁of▁sentence｜>',
  '[e~[',
]);

export class Vocab {
  readonly type: VocabType;
  /** `tokenizer.ggml.model` */
  readonly model: string;
  /** `tokenizer.ggml.pre` as used ('default' when absent or forced). */
  readonly pre: string;
  readonly tokens: readonly string[];
  readonly scores: Float32Array;
  readonly attrs: Uint16Array;
  /** BPE merges as "left right" -> rank. */
  readonly merges: ReadonlyMap<string, number>;

  bos = NULL;
  eos = NULL;
  eot = NULL;
  eom = NULL;
  unk = NULL;
  sep = NULL;
  pad = NULL;
  mask = NULL;
  fimPre = NULL;
  fimSuf = NULL;
  fimMid = NULL;
  fimPad = NULL;
  fimRep = NULL;
  fimSep = NULL;
  readonly eog = new Set<number>();

  addBos = false;
  addEos = false;
  addSep = false;
  addSpacePrefix = false;
  cleanSpaces = false;
  ignoreMerges = false;
  lowercase = true;
  stripAccents = true;
  /** Longest token text, in UTF-16 units. */
  readonly maxTokenLength: number;

  /** Control, user-defined and unknown tokens, longest text first (for special-token partitioning). */
  readonly specialTokens: readonly number[];
  private readonly ids: Map<string, number>;
  private readonly bytesCache: (string | undefined)[];
  private readonly pieceCache: (string | undefined)[];
  readonly preTokenizer: PreTokenizer | undefined;
  private fragmentTokenizer: FragmentTokenizer | undefined;

  private constructor(file: GGUFFile, opts: VocabOptions) {
    const model = file.getString('tokenizer.ggml.model');
    let pre = file.getString('tokenizer.ggml.pre', '');
    this.model = model;
    let defaults: [number, number, number, number, number, number];
    // bos, eos, unk, sep, pad, mask as llama.cpp defaults them per model
    if (model === 'llama') {
      this.type = 'spm';
      defaults = [1, 2, 0, NULL, NULL, NULL];
    } else if (model === 'bert') {
      this.type = 'wpm';
      defaults = [101, NULL, 100, 102, 0, 103];
    } else if (model === 'gpt2') {
      this.type = 'bpe';
      defaults = [11, 11, NULL, NULL, NULL, NULL];
    } else {
      throw new VocabError(`${file.path}: unsupported tokenizer model '${model}' (llama-ts knows llama, gpt2, bert)`);
    }
    [this.bos, this.eos, this.unk, this.sep, this.pad, this.mask] = defaults;

    // ---- merges ----
    const merges = new Map<string, number>();
    if (this.type === 'bpe') {
      if (!file.has('tokenizer.ggml.merges')) throw new VocabError(`${file.path}: BPE vocabulary without merges`);
      const list = file.getStringArray('tokenizer.ggml.merges');
      for (let i = 0; i < list.length; i++) {
        const m = list[i]!;
        const sp = m.indexOf(' ', 1);
        const key = sp < 0 ? ' ' : m;
        if (!merges.has(key)) merges.set(key, i);
      }
    }
    this.merges = merges;

    // ---- pre-tokenizer and flags ----
    if (this.type === 'bpe') {
      this.cleanSpaces = true;
      if (pre === '') {
        log.warn("missing pre-tokenizer type (tokenizer.ggml.pre), using 'default'; generation quality may suffer");
        pre = 'default';
      }
      let spec = preTokenizerSpec(pre);
      if (!spec) {
        if (!opts.forceDefaultPre) {
          throw new VocabError(
            `${file.path}: unknown pre-tokenizer type '${pre}' (known: ${PRE_TOKENIZER_NAMES.join(', ')}); ` +
              'pass forceDefaultPre to use the default one',
          );
        }
        log.warn(`unknown pre-tokenizer type '${pre}', forced to 'default'`);
        pre = 'default';
        spec = preTokenizerSpec(pre)!;
      }
      this.preTokenizer = new PreTokenizer(spec.regexes);
      this.cleanSpaces = spec.cleanSpaces;
      this.ignoreMerges = spec.ignoreMerges;
      this.addBos = spec.addBos;
      this.addSep = spec.addSep;
      if (pre === 'glm4' || pre === 'chatglm-bpe') this.bos = NULL;
    } else if (this.type === 'spm') {
      this.addSpacePrefix = true;
      this.addBos = true;
    } else {
      this.cleanSpaces = true;
      this.addBos = true;
      this.addSep = true;
    }
    this.pre = pre === '' ? 'default' : pre;
    this.addSpacePrefix = file.getBool('tokenizer.ggml.add_space_prefix', this.addSpacePrefix);

    // ---- tokens ----
    const tokens = file.getStringArray('tokenizer.ggml.tokens').slice();
    const n = tokens.length;
    const scoresKV = file.getArray('tokenizer.ggml.scores', null);
    const scores = new Float32Array(n);
    if (scoresKV) {
      if (scoresKV.items.length < n) throw new VocabError(`${file.path}: fewer scores than tokens`);
      for (let i = 0; i < n; i++) scores[i] = Number((scoresKV.items as ArrayLike<number>)[i]);
    }
    const attrs = new Uint16Array(n).fill(Attr.NORMAL);
    const typesKV = file.getArray('tokenizer.ggml.token_type', null);
    if (typesKV) {
      if (typesKV.itemType !== GGUFValueType.INT32) throw new VocabError(`${file.path}: token_type is not INT32`);
      if (typesKV.items.length < n) throw new VocabError(`${file.path}: fewer token types than tokens`);
      const t = typesKV.items as Int32Array;
      for (let i = 0; i < n; i++) attrs[i] = TYPE_TO_ATTR[t[i]!] ?? Attr.UNDEFINED;
    }
    const ids = new Map<string, number>();
    let maxLen = 0;
    for (let i = 0; i < n; i++) {
      let w = tokens[i]!;
      if (w === '') {
        log.warn(`empty token at index ${i}`);
        w = `[EMPTY_${i}]`;
        tokens[i] = w;
      }
      const prev = ids.get(w);
      if (prev !== undefined) throw new VocabError(`${file.path}: duplicate token '${w}' (ids ${prev} and ${i})`);
      ids.set(w, i);
      if (w.length > maxLen) maxLen = w.length;
    }
    this.tokens = tokens;
    this.scores = scores;
    this.attrs = attrs;
    this.ids = ids;
    this.maxTokenLength = maxLen;
    this.bytesCache = new Array(n);
    this.pieceCache = new Array(n);

    // ---- special ids ----
    const keys: [string, (v: number) => void, () => number][] = [
      ['bos_token_id', (v) => (this.bos = v), () => this.bos],
      ['eos_token_id', (v) => (this.eos = v), () => this.eos],
      ['eot_token_id', (v) => (this.eot = v), () => this.eot],
      ['eom_token_id', (v) => (this.eom = v), () => this.eom],
      ['unknown_token_id', (v) => (this.unk = v), () => this.unk],
      ['seperator_token_id', (v) => (this.sep = v), () => this.sep],
      ['padding_token_id', (v) => (this.pad = v), () => this.pad],
      ['mask_token_id', (v) => (this.mask = v), () => this.mask],
      ['fim_pre_token_id', (v) => (this.fimPre = v), () => this.fimPre],
      ['fim_suf_token_id', (v) => (this.fimSuf = v), () => this.fimSuf],
      ['fim_mid_token_id', (v) => (this.fimMid = v), () => this.fimMid],
      ['fim_pad_token_id', (v) => (this.fimPad = v), () => this.fimPad],
      ['fim_rep_token_id', (v) => (this.fimRep = v), () => this.fimRep],
      ['fim_sep_token_id', (v) => (this.fimSep = v), () => this.fimSep],
      ['prefix_token_id', (v) => (this.fimPre = v), () => this.fimPre],
      ['suffix_token_id', (v) => (this.fimSuf = v), () => this.fimSuf],
      ['middle_token_id', (v) => (this.fimMid = v), () => this.fimMid],
    ];
    for (const [key, set, get] of keys) {
      const full = `tokenizer.ggml.${key}`;
      if (get() >= n) {
        log.warn(`default special token '${full}' = ${get()} out of vocab range, disabling`);
        set(NULL);
      }
      const v = file.getInt(full, null);
      if (v === null) continue;
      if (v < 0 || v >= n) log.warn(`bad special token: '${full}' = ${v}, using default id ${get()}`);
      else set(v);
    }
    this.addBos = file.getBool('tokenizer.ggml.add_bos_token', this.addBos);
    this.addEos = file.getBool('tokenizer.ggml.add_eos_token', this.addEos);
    this.addSep = file.getBool('tokenizer.ggml.add_sep_token', this.addSep);
    if (this.addBos && this.bos === NULL)
      throw new VocabError(`${file.path}: add_bos_token is true, but bos_token_id is not set`);
    if (this.addEos && this.eos === NULL)
      throw new VocabError(`${file.path}: add_eos_token is true, but eos_token_id is not set`);
    if (this.addSep && this.sep === NULL)
      throw new VocabError(`${file.path}: add_sep_token is true, but seperator_token_id is not set`);
    this.lowercase = file.getBool('tokenizer.ggml.normalizer.lowercase', true);
    this.stripAccents = file.getBool('tokenizer.ggml.normalizer.strip_accents', this.lowercase);

    // ---- special tokens recognised by their text ----
    const markControl = (id: number) => {
      if (!(attrs[id]! & Attr.CONTROL)) {
        log.warn(`control-looking token: ${id} '${tokens[id]}' was not control-type; overriding its type`);
        attrs[id] = attrs[id]! | Attr.CONTROL;
      }
    };
    const detect = (texts: string[], get: () => number, set: (v: number) => void) => {
      if (get() !== NULL) return;
      for (const t of texts) {
        const id = ids.get(t);
        if (id !== undefined) {
          set(id);
          markControl(id);
          return;
        }
      }
    };
    detect(
      EOT_TEXTS,
      () => this.eot,
      (v) => (this.eot = v),
    );
    detect(
      EOM_TEXTS,
      () => this.eom,
      (v) => (this.eom = v),
    );
    detect(
      FIM_PRE_TEXTS,
      () => this.fimPre,
      (v) => (this.fimPre = v),
    );
    detect(
      FIM_SUF_TEXTS,
      () => this.fimSuf,
      (v) => (this.fimSuf = v),
    );
    detect(
      FIM_MID_TEXTS,
      () => this.fimMid,
      (v) => (this.fimMid = v),
    );
    detect(
      FIM_PAD_TEXTS,
      () => this.fimPad,
      (v) => (this.fimPad = v),
    );
    detect(
      FIM_REP_TEXTS,
      () => this.fimRep,
      (v) => (this.fimRep = v),
    );
    detect(
      FIM_SEP_TEXTS,
      () => this.fimSep,
      (v) => (this.fimSep = v),
    );

    for (let i = 0; i < n; i++) {
      if (attrs[i]! & Attr.CONTROL && !(attrs[i]! & Attr.UNUSED) && tokens[i]!.includes('unused')) {
        attrs[i] = attrs[i]! | Attr.UNUSED;
      }
    }
    for (const id of [this.fimPad, this.fimRep, this.fimSep]) if (id !== NULL) this.eog.add(id);
    for (const t of EOG_TEXTS) {
      const id = ids.get(t);
      if (id === undefined) continue;
      this.eog.add(id);
      markControl(id);
    }
    for (const t of ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>']) {
      const id = ids.get(t);
      if (id !== undefined) attrs[id] = Attr.USER_DEFINED;
    }
    for (const [id, what] of [
      [this.eos, 'eos'],
      [this.eot, 'eot'],
      [this.eom, 'eom'],
    ] as const) {
      if (id !== NULL && !this.eog.has(id)) {
        this.eog.add(id);
        log.warn(`special_${what}_id is not in the end-of-generation set; the tokenizer config may be incorrect`);
      }
    }
    const endId = ids.get('<|end|>');
    if (endId !== undefined && this.eog.has(endId)) {
      const has = (t: string) => {
        const id = ids.get(t);
        return id !== undefined && this.eog.has(id);
      };
      if ((has('<|return|>') && has('<|call|>')) || (has('<|calls|>') && has('<|flush|>'))) {
        this.eog.delete(endId);
        attrs[endId] = Attr.USER_DEFINED;
      }
    }

    // ---- special token cache: longest byte length first ----
    const special: number[] = [];
    for (let i = 0; i < n; i++) {
      if (attrs[i]! & (Attr.CONTROL | Attr.USER_DEFINED | Attr.UNKNOWN)) special.push(i);
    }
    const byteLen = (id: number) => this.tokenBytes(id).length;
    special.sort((a, b) => byteLen(b) - byteLen(a) || a - b);
    this.specialTokens = special;

    // ---- per-model token attributes llama.cpp sets by name ----
    const name = file.getString('general.name', '').toLowerCase();
    const arch = file.getString('general.architecture', '');
    if (
      ['jina-v2-de', 'jina-v2-es', 'jina-v2-code'].some((s) => this.pre.includes(s)) ||
      ['nomic-bert-moe', 'jina-bert-v3'].some((s) => arch.includes(s))
    ) {
      const id = ids.get('<mask>');
      if (id === undefined) log.warn('mask token is missing in vocab');
      else attrs[id] = attrs[id]! | Attr.LSTRIP;
    } else if (name.includes('phi-3') || name.includes('phi3')) {
      for (const id of special) attrs[id] = attrs[id]! | Attr.RSTRIP;
      const setR = (t: string, on: boolean) => {
        const id = ids.get(t);
        if (id !== undefined) attrs[id] = on ? attrs[id]! | Attr.RSTRIP : attrs[id]! & ~Attr.RSTRIP;
      };
      setR('</s>', true);
      for (const t of ['<unk>', '<s>', '<|endoftext|>']) setR(t, false);
    } else if (name.includes('modern-bert')) {
      const id = ids.get('[MASK]');
      if (id !== undefined) attrs[id] = attrs[id]! | Attr.LSTRIP;
    }
  }

  /** Load the vocabulary from a GGUF file's metadata. Throws VocabError (or GGUFError) on bad metadata. */
  static fromGGUF(file: GGUFFile, opts: VocabOptions = {}): Vocab {
    return new Vocab(file, opts);
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
    return new Uint8Array(
      Buffer.from(decodeTokens(this, ids, opts.removeSpecial ?? false, opts.renderSpecial ?? false), 'latin1'),
    );
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
