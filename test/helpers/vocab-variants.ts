// Vocabularies for the tokenizer fidelity tests, made from ../shared/vocab files:
// - the same file with one metadata key changed (a BPE vocabulary under another
//   pre-tokenizer name), as a file view for llama-ts and as a written file for llama.cpp;
// - an SPM-style BPE vocabulary (raw UTF-8 pieces with "▁" for spaces, <0xNN> byte
//   tokens, like Gemma 4's) derived from the LLaMA SentencePiece vocabulary, since no
//   shared file is one;
// - a Unigram (UGM, T5-style) vocabulary generated from a fixed seed with a small
//   precompiled charsmap.
// Everything is deterministic, so references computed once by llama.cpp on the written
// files hold for the copies the tests rebuild.
import { GGUFValueType } from '../../src/gguf/constants.js';
import type { GGUFFile } from '../../src/gguf/file.js';
import type { GGUFKV } from '../../src/gguf/values.js';
import { GGUFWriter } from '../../src/gguf/writer.js';

/** A view of `file` whose metadata has `key` set to the string `value` (nothing is copied). */
export function withString(file: GGUFFile, key: string, value: string): GGUFFile {
  const metadata = new Map<string, GGUFKV>(file.metadata);
  metadata.set(key, { key, type: GGUFValueType.STRING, value, offset: -1 });
  return Object.create(file, { metadata: { value: metadata } }) as GGUFFile;
}

const TOKEN_NORMAL = 1;
const TOKEN_UNKNOWN = 2;
const TOKEN_CONTROL = 3;

/**
 * An SPM-style BPE vocabulary (tokenizer.ggml.model "gpt2", or "gemma4" with `gemma4`)
 * from a SentencePiece one: the same pieces and byte tokens, newline-run tokens added,
 * and merges derived so that every piece is reachable: pieces in score order, each made
 * from the first split whose halves are both already reachable.
 */
export function spmStyleBpe(spm: GGUFFile, pre: string, gemma4 = false): GGUFWriter {
  const tokens = spm.getStringArray('tokenizer.ggml.tokens').slice();
  const scores = Array.from(spm.getArray('tokenizer.ggml.scores').items as Float32Array);
  const types = Array.from(spm.getArray('tokenizer.ggml.token_type').items as Int32Array);
  for (const nl of ['\n', '\n\n', '\n\n\n']) {
    tokens.push(nl);
    scores.push(0);
    types.push(TOKEN_NORMAL);
  }
  const order = tokens.map((_, i) => i).filter((i) => types[i] === TOKEN_NORMAL);
  order.sort((a, b) => scores[b]! - scores[a]! || a - b);
  const reachable = new Set<string>();
  for (const i of order) if ([...tokens[i]!].length === 1) reachable.add(tokens[i]!);
  const merges: string[] = [];
  for (const i of order) {
    const t = tokens[i]!;
    const chars = [...t];
    if (chars.length < 2) continue;
    for (let k = 1; k < chars.length; k++) {
      const left = chars.slice(0, k).join('');
      const right = chars.slice(k).join('');
      if (reachable.has(left) && reachable.has(right)) {
        merges.push(`${left} ${right}`);
        reachable.add(t);
        break;
      }
    }
  }
  const w = new GGUFWriter();
  w.setString('general.architecture', 'llama');
  w.setString('general.name', 'spm-style-bpe');
  w.setString('tokenizer.ggml.model', gemma4 ? 'gemma4' : 'gpt2');
  if (!gemma4) w.setString('tokenizer.ggml.pre', pre);
  w.setStringArray('tokenizer.ggml.tokens', tokens);
  w.setArray('tokenizer.ggml.scores', GGUFValueType.FLOAT32, new Float32Array(scores));
  w.setArray('tokenizer.ggml.token_type', GGUFValueType.INT32, new Int32Array(types));
  w.setStringArray('tokenizer.ggml.merges', merges);
  w.setU32('tokenizer.ggml.bos_token_id', 1);
  w.setU32('tokenizer.ggml.eos_token_id', 2);
  w.setU32('tokenizer.ggml.unknown_token_id', 0);
  w.setBool('tokenizer.ggml.add_bos_token', true);
  return w;
}

// ---- UGM ----

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The normalization rules of the generated UGM vocabulary's charsmap: NFKC-like folds of
 * a few characters (full-width forms, ligatures, compatibility digits, odd spaces), a
 * two-character sequence, and prefixes that share bytes with each other.
 */
export const UGM_CHARSMAP_RULES: readonly [string, string][] = [
  ['Ａ', 'A'],
  ['Ｂ', 'B'],
  ['ａ', 'a'],
  ['ｂ', 'b'],
  ['１', '1'],
  ['２', '2'],
  ['０', '0'],
  ['ﬁ', 'fi'],
  ['ﬂ', 'fl'],
  ['ﬀ', 'ff'],
  ['①', '1'],
  ['²', '2'],
  ['½', '1⁄2'],
  ['™', 'TM'],
  ['…', '...'],
  ['\u00a0', ' '],
  ['\u3000', ' '],
  ['\u2009', ' '],
  ['\t', ' '],
  ['\n', ' '],
  ['Å', 'Å'],
  ['e\u0301', 'é'],
  ['ｶ', 'カ'],
  ['ﾞ', '゙'],
  ['ｶﾞ', 'ガ'],
  ['Ω', 'Ω'],
  ['\u200b', ''],
];

/**
 * A precompiled charsmap in the format llama.cpp reads (SentencePiece's): a u32 byte size,
 * an XOR-compressed double array over the UTF-8 of each rule's source (a leaf's value
 * entry holds the offset of its replacement), then the NUL-terminated replacements.
 */
export function buildCharsmap(rules: readonly [string, string][]): Uint8Array {
  // replacements, each NUL-terminated
  const repl: number[] = [];
  const keys: [Uint8Array, number][] = [];
  for (const [from, to] of rules) {
    keys.push([new Uint8Array(Buffer.from(from, 'utf8')), repl.length]);
    repl.push(...Buffer.from(to, 'utf8'), 0);
  }
  // a byte trie over the keys
  interface Node {
    children: Map<number, Node>;
    value: number;
    index: number;
  }
  const root: Node = { children: new Map(), value: -1, index: 0 };
  for (const [key, value] of keys) {
    let n = root;
    for (const b of key) {
      let c = n.children.get(b);
      if (!c) {
        c = { children: new Map(), value: -1, index: -1 };
        n.children.set(b, c);
      }
      n = c;
    }
    n.value = value;
  }
  // place nodes: node i's children block starts at off = i ^ BASE[i]; child c sits at
  // off ^ c, a leaf's value entry at off ^ 0. Offsets are unique and slots free.
  const units: number[] = [0];
  const used: boolean[] = [true];
  const offsets = new Set<number>();
  const put = (i: number, v: number) => {
    while (units.length <= i) {
      units.push(0);
      used.push(false);
    }
    units[i] = v >>> 0;
    used[i] = true;
  };
  const free = (i: number) => i >= used.length || !used[i];
  const queue: Node[] = [root];
  while (queue.length > 0) {
    const n = queue.shift()!;
    const labels = [...n.children.keys()];
    const slots = n.value >= 0 ? [0, ...labels] : labels;
    if (slots.length === 0) continue;
    let off = 1;
    while (offsets.has(off) || !slots.every((c) => free(off ^ c))) off++;
    offsets.add(off);
    const base = n.index ^ off;
    if (base >= 1 << 21) throw new RangeError('charsmap too large for this builder');
    // BASE in bits 10-30, LEAF in bit 8, LCHECK (the node's label) in bits 0-7
    put(n.index, (base << 10) | ((n.value >= 0 ? 1 : 0) << 8) | (units[n.index]! & 0xff));
    if (n.value >= 0) put(off, (1 << 31) | n.value);
    for (const [c, child] of n.children) {
      child.index = off ^ c;
      put(child.index, c);
      queue.push(child);
    }
  }
  // cover whole 256-entry blocks, so any XOR step lands inside the array
  while (units.length % 256 !== 0) units.push(0);
  const out = new Uint8Array(4 + units.length * 4 + repl.length);
  const dv = new DataView(out.buffer);
  dv.setUint32(0, units.length * 4, true);
  for (let i = 0; i < units.length; i++) dv.setUint32(4 + i * 4, units[i]!, true);
  out.set(repl, 4 + units.length * 4);
  return out;
}

/**
 * A Unigram vocabulary from a fixed seed: <pad> </s> <unk>, user-defined pieces, then
 * "▁"-prefixed and plain pieces over a small alphabet (Latin, accents, Cyrillic, CJK, an
 * emoji) with log-probability scores; T5's flags.
 */
export function ugmVocab(opts: { addSpacePrefix?: boolean; removeExtraWhitespaces?: boolean } = {}): GGUFWriter {
  const r = rng(20240521);
  const alphabet = [
    ..."abcdefghijklmnopqrstuvwxyzABCDEFTHIMS0123456789.,!?'-()éèàüöçñßабвгдежзклмнопрстуя世界你好日本語中文😀",
  ];
  const tokens: string[] = ['<pad>', '</s>', '<unk>', '<extra_id_0>', '<sep>'];
  const types: number[] = [TOKEN_CONTROL, TOKEN_CONTROL, TOKEN_UNKNOWN, 4 /* user-defined */, 4];
  const scores: number[] = [0, 0, 0, 0, 0];
  const seen = new Set(tokens);
  const add = (t: string, score: number) => {
    if (seen.has(t)) return;
    seen.add(t);
    tokens.push(t);
    types.push(TOKEN_NORMAL);
    scores.push(score);
  };
  add('▁', -2);
  for (const c of alphabet) add(c, -4 - r() * 4);
  for (const c of alphabet) add(`▁${c}`, -5 - r() * 4);
  const words = [
    'the',
    'and',
    'hello',
    'world',
    'token',
    'izer',
    'ing',
    'tion',
    'un',
    'igram',
    'model',
    'test',
    'fi',
    'fl',
    'ff',
    'TM',
    'ab',
    'AB',
    '12',
    '10',
    '1⁄2',
    'ca',
    'fé',
    'über',
    'привет',
    'мир',
    '世界',
    '你好',
    'é',
    'ガ',
    'カ',
    '...',
    'Ω',
    'Å',
    "'s",
    'ly',
    'er',
    'es',
    'st',
    'th',
    'he',
    'in',
    'an',
    'on',
    're',
  ];
  for (const w of words) {
    add(w, -6 - r() * 6);
    add(`▁${w}`, -5 - r() * 6);
  }
  for (let i = 0; i < 600; i++) {
    const len = 2 + Math.floor(r() * 5);
    let t = r() < 0.5 ? '▁' : '';
    for (let j = 0; j < len; j++) t += alphabet[Math.floor(r() * 27)];
    add(t, -8 - r() * 8);
  }
  const w = new GGUFWriter();
  w.setString('general.architecture', 't5');
  w.setString('general.name', 'generated-unigram');
  w.setString('tokenizer.ggml.model', 't5');
  w.setStringArray('tokenizer.ggml.tokens', tokens);
  w.setArray('tokenizer.ggml.scores', GGUFValueType.FLOAT32, new Float32Array(scores));
  w.setArray('tokenizer.ggml.token_type', GGUFValueType.INT32, new Int32Array(types));
  w.setBool('tokenizer.ggml.add_space_prefix', opts.addSpacePrefix ?? true);
  w.setBool('tokenizer.ggml.remove_extra_whitespaces', opts.removeExtraWhitespaces ?? true);
  w.setU32('tokenizer.ggml.unknown_token_id', 2);
  w.setU32('tokenizer.ggml.eos_token_id', 1);
  w.setU32('tokenizer.ggml.padding_token_id', 0);
  w.setArray('tokenizer.ggml.precompiled_charsmap', GGUFValueType.UINT8, buildCharsmap(UGM_CHARSMAP_RULES));
  return w;
}
