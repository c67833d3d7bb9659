// Vocabularies for generated models: synthetic ones (SentencePiece-style, byte-level BPE,
// WordPiece) that llama.cpp's tokenizers accept, or every tokenizer.* key copied from
// another GGUF file.
import { type GGUFArray, type GGUFNumericArray, type GGUFValue, GGUFValueType, openGGUF } from '../gguf/index.js';
import type { VocabSpec } from './spec.js';

/** llama.cpp's token types (llama_token_type / gguf TokenType). */
export const TokenType = {
  NORMAL: 1,
  UNKNOWN: 2,
  CONTROL: 3,
  USER_DEFINED: 4,
  UNUSED: 5,
  BYTE: 6,
} as const;

export interface VocabKV {
  key: string;
  type: GGUFValueType;
  value: GGUFValue;
}

export interface BuiltVocab {
  /** tokenizer.* keys in file order. */
  kv: VocabKV[];
  nVocab: number;
  /** tokenizer.ggml.token_type_count when the vocabulary carries it (BERT). */
  nTypeVocab?: number;
}

const u32 = (key: string, value: number): VocabKV => ({ key, type: GGUFValueType.UINT32, value });
const str = (key: string, value: string): VocabKV => ({ key, type: GGUFValueType.STRING, value });
const strArray = (key: string, items: string[]): VocabKV => ({
  key,
  type: GGUFValueType.ARRAY,
  value: { itemType: GGUFValueType.STRING, items },
});

// Letters by English frequency: the first multi-character pieces are the likely ones.
const LETTERS = 'etaoinshrdlcumwfgypbvkjxqz';

/**
 * Strings of growing length: each one is a shorter string of the sequence plus one letter,
 * so every piece can be built by merges of pieces listed before it. `first` is the set of
 * first characters (e.g. a word-start marker plus the letters).
 */
function* pieces(first: string[]): Generator<[string, string]> {
  let level: string[] = [...first];
  for (;;) {
    const next: string[] = [];
    for (const p of level) {
      for (const c of LETTERS) {
        next.push(p + c);
        yield [p, c];
      }
    }
    level = next;
  }
}

/** GPT-2's byte-to-character table: printable bytes map to themselves, the rest to U+0100... */
export function bytesToUnicode(): string[] {
  const out = new Array<string>(256);
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    out[b] = String.fromCodePoint(printable ? b : 256 + extra++);
  }
  return out;
}

/** GPT-2's vocabulary order of the 256 byte tokens: printable bytes first, then the rest. */
function byteTokenOrder(): number[] {
  const printable: number[] = [];
  const rest: number[] = [];
  for (let b = 0; b < 256; b++) {
    const p = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    (p ? printable : rest).push(b);
  }
  return [...printable, ...rest];
}

function tooSmall(kind: string, size: number, min: number): never {
  throw new RangeError(`${kind} vocabulary of ${size} tokens: needs at least ${min}`);
}

/** SentencePiece-style (tokenizer.ggml.model "llama"): <unk> <s> </s>, 256 byte tokens, scored pieces. */
function syntheticSpm(size: number): BuiltVocab {
  const SP = '\u2581';
  const tokens: string[] = ['<unk>', '<s>', '</s>'];
  const types: number[] = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(TokenType.BYTE);
  }
  const min = tokens.length + 1;
  if (size < min) tooSmall('SPM', size, min);
  const seen = new Set(tokens);
  const add = (t: string) => {
    if (tokens.length < size && !seen.has(t)) {
      seen.add(t);
      tokens.push(t);
      types.push(TokenType.NORMAL);
    }
  };
  add(SP);
  for (const c of `${LETTERS}${LETTERS.toUpperCase()}0123456789.,!?'"-:;()`) add(c);
  for (const [p, c] of pieces([SP, ...LETTERS])) {
    if (tokens.length >= size) break;
    add(p + c);
  }
  const scores = new Float32Array(size);
  // Pieces score by rank (SentencePiece's merge preference); specials and bytes 0.
  for (let i = 259; i < size; i++) scores[i] = -(i - 259);
  return {
    nVocab: size,
    kv: [
      strArray('tokenizer.ggml.tokens', tokens),
      {
        key: 'tokenizer.ggml.scores',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.FLOAT32, items: scores },
      },
      {
        key: 'tokenizer.ggml.token_type',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.INT32, items: Int32Array.from(types) },
      },
      str('tokenizer.ggml.model', 'llama'),
      u32('tokenizer.ggml.unknown_token_id', 0),
      u32('tokenizer.ggml.bos_token_id', 1),
      u32('tokenizer.ggml.eos_token_id', 2),
    ],
  };
}

/** A toy SentencePiece vocabulary: <unk> <s> </s>, then "▁" and letters (no byte tokens). */
function toySpm(size: number): BuiltVocab {
  const letters = `\u2581${LETTERS}${LETTERS.toUpperCase()}`;
  if (size < 4 || size > 3 + letters.length) {
    throw new RangeError(`toy SPM vocabulary of ${size} tokens: needs 4 to ${3 + letters.length}`);
  }
  const tokens = ['<unk>', '<s>', '</s>', ...letters.slice(0, size - 3)];
  const types = tokens.map((_, i) => (i === 0 ? TokenType.UNKNOWN : i < 3 ? TokenType.CONTROL : TokenType.NORMAL));
  const scores = Float32Array.from(tokens, (_, i) => (i < 3 ? 0 : -i));
  return {
    nVocab: size,
    kv: [
      strArray('tokenizer.ggml.tokens', tokens),
      {
        key: 'tokenizer.ggml.scores',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.FLOAT32, items: scores },
      },
      {
        key: 'tokenizer.ggml.token_type',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.INT32, items: Int32Array.from(types) },
      },
      str('tokenizer.ggml.model', 'llama'),
      u32('tokenizer.ggml.unknown_token_id', 0),
      u32('tokenizer.ggml.bos_token_id', 1),
      u32('tokenizer.ggml.eos_token_id', 2),
    ],
  };
}

/** Byte-level BPE (tokenizer.ggml.model "gpt2"): 256 byte tokens, merged pieces, chat specials last. */
function syntheticBpe(size: number, pre: string): BuiltVocab {
  const b2u = bytesToUnicode();
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
  const min = 256 + specials.length + 1;
  if (size < min) tooSmall('BPE', size, min);
  const tokens = byteTokenOrder().map((b) => b2u[b] as string);
  const types: number[] = tokens.map(() => TokenType.NORMAL);
  const merges: string[] = [];
  const seen = new Set(tokens);
  const space = b2u[0x20] as string; // 'Ġ'
  for (const [p, c] of pieces([space, ...LETTERS])) {
    if (tokens.length >= size - specials.length) break;
    const t = p + c;
    if (seen.has(t)) continue;
    seen.add(t);
    tokens.push(t);
    types.push(TokenType.NORMAL);
    merges.push(`${p} ${c}`);
  }
  for (const s of specials) {
    tokens.push(s);
    types.push(TokenType.CONTROL);
  }
  const eot = size - specials.length;
  return {
    nVocab: size,
    kv: [
      str('tokenizer.ggml.model', 'gpt2'),
      str('tokenizer.ggml.pre', pre),
      strArray('tokenizer.ggml.tokens', tokens),
      {
        key: 'tokenizer.ggml.token_type',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.INT32, items: Int32Array.from(types) },
      },
      strArray('tokenizer.ggml.merges', merges),
      u32('tokenizer.ggml.eos_token_id', eot),
      u32('tokenizer.ggml.padding_token_id', eot),
      u32('tokenizer.ggml.bos_token_id', eot),
      { key: 'tokenizer.ggml.add_bos_token', type: GGUFValueType.BOOL, value: false },
    ],
  };
}

/**
 * WordPiece (tokenizer.ggml.model "bert") in the form llama.cpp's converter writes: word
 * starts carry a leading U+2581, continuations ("##x" in the original) are bare, bracketed
 * specials stay as they are. Ids as in BERT's own vocabulary: [PAD] 0, [unused*] 1-99,
 * [UNK] 100, [CLS] 101, [SEP] 102, [MASK] 103 (llama.cpp's WPM defaults).
 */
function syntheticWpm(size: number): BuiltVocab {
  const SP = '\u2581';
  const tokens = ['[PAD]'];
  for (let i = 0; i < 99; i++) tokens.push(`[unused${i}]`);
  tokens.push('[UNK]', '[CLS]', '[SEP]', '[MASK]');
  const types: number[] = tokens.map((t) => (t.startsWith('[unused') ? TokenType.NORMAL : TokenType.CONTROL));
  const min = tokens.length + 1;
  if (size < min) tooSmall('WPM', size, min);
  const seen = new Set(tokens);
  const add = (t: string) => {
    if (tokens.length < size && !seen.has(t)) {
      seen.add(t);
      tokens.push(t);
      types.push(TokenType.NORMAL);
    }
  };
  for (const c of `${LETTERS}0123456789.,!?'"-:;()`) add(SP + c);
  for (const c of `${LETTERS}0123456789`) add(c);
  for (const [p, c] of pieces([...LETTERS])) {
    if (tokens.length >= size) break;
    add(SP + p + c);
    add(p + c);
  }
  return {
    nVocab: size,
    kv: [
      str('tokenizer.ggml.model', 'bert'),
      strArray('tokenizer.ggml.tokens', tokens),
      {
        key: 'tokenizer.ggml.token_type',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.INT32, items: Int32Array.from(types) },
      },
      u32('tokenizer.ggml.unknown_token_id', 100),
      u32('tokenizer.ggml.seperator_token_id', 102),
      u32('tokenizer.ggml.padding_token_id', 0),
      u32('tokenizer.ggml.cls_token_id', 101),
      u32('tokenizer.ggml.mask_token_id', 103),
    ],
  };
}

/**
 * Every tokenizer.* key of another GGUF file, in its order; `extra` tokens appended (to the
 * tokens, scores and types arrays), `chatTemplate` in place of the file's.
 */
function copyVocab(spec: Extract<VocabSpec, { kind: 'copy' }>): BuiltVocab {
  const path = spec.from;
  const f = openGGUF(path);
  try {
    const kv: VocabKV[] = [];
    for (const [key, e] of f.metadata) if (key.startsWith('tokenizer.')) kv.push({ key, type: e.type, value: e.value });
    const tokens = f.getStringArray('tokenizer.ggml.tokens', null);
    if (!tokens) throw new RangeError(`${path}: no tokenizer.ggml.tokens to copy`);
    const extra = spec.extra ?? [];
    if (extra.length > 0) {
      const known = new Set(tokens);
      for (const t of extra)
        if (known.has(t.text))
          throw new RangeError(`${path}: extra token ${JSON.stringify(t.text)} is already in the vocabulary`);
      // the per-token arrays grow by one entry per extra token (scores 0)
      const append = (key: string, more: (string | number)[]) => {
        const e = kv.find((x) => x.key === key);
        if (!e) return;
        const a = e.value as GGUFArray;
        const items = Array.from(a.items as ArrayLike<string | number>).concat(more);
        e.value = {
          itemType: a.itemType,
          items: a.itemType === GGUFValueType.STRING ? (items as string[]) : typedLike(a.items, items as number[]),
        };
      };
      append(
        'tokenizer.ggml.tokens',
        extra.map((t) => t.text),
      );
      append(
        'tokenizer.ggml.scores',
        extra.map(() => 0),
      );
      append(
        'tokenizer.ggml.token_type',
        extra.map((t) => t.type),
      );
    }
    if (spec.chatTemplate !== undefined) {
      const e = kv.find((x) => x.key === 'tokenizer.chat_template');
      if (e) e.value = spec.chatTemplate;
      else kv.push(str('tokenizer.chat_template', spec.chatTemplate));
    }
    const nVocab = tokens.length + extra.length;
    const typeCount = f.getInt('tokenizer.ggml.token_type_count', null);
    return typeCount === null ? { kv, nVocab } : { kv, nVocab, nTypeVocab: typeCount };
  } finally {
    f.close();
  }
}

/** `items` in an array of the same kind as `like`. */
function typedLike(like: GGUFArray['items'], items: number[]): GGUFNumericArray {
  const Ctor = (like as unknown as { constructor: { from(a: number[]): GGUFNumericArray } }).constructor;
  return Ctor.from(items);
}

/** The vocabulary of `spec`; `bpePre` names the BPE pre-tokenizer written for synthetic BPE. */
export function buildVocab(spec: VocabSpec, bpePre = 'gpt-2'): BuiltVocab {
  switch (spec.kind) {
    case 'synthetic-spm':
      return syntheticSpm(spec.size);
    case 'synthetic-bpe':
      return syntheticBpe(spec.size, bpePre);
    case 'synthetic-wpm':
      return syntheticWpm(spec.size);
    case 'toy-spm':
      return toySpm(spec.size);
    case 'copy':
      return copyVocab(spec);
  }
}
