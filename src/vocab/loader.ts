// Reads a GGUF file's tokenizer metadata into a plain VocabDescription, filling defaults
// the way llama.cpp's llama_vocab::load does: model type and its default special ids,
// merges, the pre-tokenizer and the flags its name switches on, tokens, scores, token
// types -> attributes, special ids from the file, special tokens found by their text,
// the end-of-generation set, and the per-model attributes llama.cpp sets by name.
import type { GGUFFile } from '../gguf/index.js';
import { GGUFValueType } from '../gguf/index.js';
import { logger } from '../log.js';
import { PRE_TOKENIZER_NAMES, preTypeSpec } from './pretypes.js';
import {
  Attr,
  NULL_TOKEN as NULL,
  type SpecialIds,
  type VocabDescription,
  VocabError,
  type VocabOptions,
  type VocabType,
} from './types.js';
import { textToBinary } from './unicode.js';

const log = logger('vocab');

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

/** Special-id keys, in llama.cpp's order (the deprecated prefix/suffix/middle last). */
const SPECIAL_KEYS: [string, keyof SpecialIds][] = [
  ['bos_token_id', 'bos'],
  ['eos_token_id', 'eos'],
  ['eot_token_id', 'eot'],
  ['eom_token_id', 'eom'],
  ['unknown_token_id', 'unk'],
  ['seperator_token_id', 'sep'],
  ['padding_token_id', 'pad'],
  ['mask_token_id', 'mask'],
  ['fim_pre_token_id', 'fimPre'],
  ['fim_suf_token_id', 'fimSuf'],
  ['fim_mid_token_id', 'fimMid'],
  ['fim_pad_token_id', 'fimPad'],
  ['fim_rep_token_id', 'fimRep'],
  ['fim_sep_token_id', 'fimSep'],
  ['prefix_token_id', 'fimPre'],
  ['suffix_token_id', 'fimSuf'],
  ['middle_token_id', 'fimMid'],
];

/** Model type and its default bos, eos, unk, sep, pad, mask, as llama.cpp defaults them. */
function modelType(path: string, model: string): { type: VocabType; defaults: number[] } {
  switch (model) {
    case 'llama':
      return { type: 'spm', defaults: [1, 2, 0, NULL, NULL, NULL] };
    case 'bert':
      return { type: 'wpm', defaults: [101, NULL, 100, 102, 0, 103] };
    case 'gpt2':
      return { type: 'bpe', defaults: [11, 11, NULL, NULL, NULL, NULL] };
    case 'gemma4': // SPM-style BPE; the file names its special tokens
      return { type: 'bpe', defaults: [NULL, NULL, NULL, NULL, NULL, NULL] };
    case 't5':
      return { type: 'ugm', defaults: [NULL, 1, 2, NULL, 0, NULL] };
    default:
      throw new VocabError(
        `${path}: unsupported tokenizer model '${model}' (tokenizer.ggml.model; llama-ts knows llama, gpt2, gemma4, bert, t5)`,
      );
  }
}

/** The SentencePiece normalization table of a UGM vocabulary, checked as llama.cpp checks it. */
function readCharsmap(file: GGUFFile): Uint8Array | null {
  const key = 'tokenizer.ggml.precompiled_charsmap';
  const kv = file.getArray(key, null);
  if (!kv) return null;
  if (kv.itemType !== GGUFValueType.UINT8 && kv.itemType !== GGUFValueType.INT8) {
    throw new VocabError(`${file.path}: ${key} is not an array of (u)int8`);
  }
  const src = kv.items as Uint8Array | Int8Array;
  const bytes = new Uint8Array(src.buffer, src.byteOffset, src.length).slice();
  if (bytes.length < 4)
    throw new VocabError(`${file.path}: ${key} is too small (${bytes.length} bytes) for its header`);
  const blob = new DataView(bytes.buffer).getUint32(0, true);
  if (blob + 4 >= bytes.length) {
    throw new VocabError(`${file.path}: ${key}: double-array size ${blob} runs past the end (${bytes.length} bytes)`);
  }
  return bytes;
}

/** Read and default the tokenizer metadata of `file`. Throws VocabError (or GGUFError) on bad metadata. */
export function readVocab(file: GGUFFile, opts: VocabOptions = {}): VocabDescription {
  const path = file.path;
  const model = file.getString('tokenizer.ggml.model');
  let pre = file.getString('tokenizer.ggml.pre', '');
  const { type, defaults } = modelType(path, model);
  const sp: SpecialIds = {
    bos: defaults[0]!,
    eos: defaults[1]!,
    eot: NULL,
    eom: NULL,
    unk: defaults[2]!,
    sep: defaults[3]!,
    pad: defaults[4]!,
    mask: defaults[5]!,
    fimPre: NULL,
    fimSuf: NULL,
    fimMid: NULL,
    fimPad: NULL,
    fimRep: NULL,
    fimSep: NULL,
  };

  // ---- merges ----
  if (model === 'gemma4') pre = 'gemma4';
  const merges = new Map<string, number>();
  if (type === 'bpe') {
    if (file.has('tokenizer.ggml.merges')) {
      const list = file.getStringArray('tokenizer.ggml.merges');
      for (let i = 0; i < list.length; i++) {
        const m = list[i]!;
        const key = m.indexOf(' ', 1) < 0 ? ' ' : m;
        if (!merges.has(key)) merges.set(key, i);
      }
    } else if (pre !== 'kimi-k2') {
      throw new VocabError(`${path}: BPE vocabulary without merges (tokenizer.ggml.merges)`);
    }
  }

  // ---- pre-tokenizer and flags ----
  let preTokenizer: VocabDescription['preTokenizer'] = null;
  let cleanSpaces = false;
  let ignoreMerges = false;
  let addBos = false;
  let addEos = false;
  let addSep = false;
  let addSpacePrefix = false;
  let escapeWhitespaces = true;
  let forceBos = false;
  let lowercaseDefault = true;
  if (type === 'bpe') {
    if (pre === '') {
      log.warn("missing pre-tokenizer type (tokenizer.ggml.pre), using 'default'; generation quality may suffer");
      pre = 'default';
    }
    let spec = preTypeSpec(pre);
    if (!spec) {
      if (!opts.forceDefaultPre) {
        throw new VocabError(
          `${path}: unknown pre-tokenizer type '${pre}' (tokenizer.ggml.pre; known: ${PRE_TOKENIZER_NAMES.join(', ')}); ` +
            'to tokenize with the default pre-tokenizer anyway, pass { forceDefaultPre: true } (llama-ts tokenize: --force-default-pre)',
        );
      }
      log.warn(`unknown pre-tokenizer type '${pre}', forced to 'default'`);
      pre = 'default';
      spec = preTypeSpec(pre)!;
    }
    preTokenizer = { regexes: spec.regexes, byteEncode: spec.byteEncode, newlineWords: spec.newlineWords };
    cleanSpaces = spec.cleanSpaces;
    ignoreMerges = spec.ignoreMerges;
    addBos = spec.addBos;
    addSep = spec.addSep;
    escapeWhitespaces = spec.escapeWhitespaces;
    forceBos = spec.forceBos;
    lowercaseDefault = spec.lowercase;
    if (spec.noBos) sp.bos = NULL;
  } else if (type === 'spm') {
    addSpacePrefix = true;
    addBos = true;
  } else if (type === 'wpm') {
    cleanSpaces = true;
    addBos = true;
    addSep = true;
  } else {
    addEos = true; // UGM (T5): </s> after the text, no BOS
  }
  if (pre === '') pre = 'default';
  addSpacePrefix = file.getBool('tokenizer.ggml.add_space_prefix', addSpacePrefix);
  const removeExtraWhitespaces = file.getBool('tokenizer.ggml.remove_extra_whitespaces', false);
  const precompiledCharsmap = type === 'ugm' ? readCharsmap(file) : null;

  // ---- tokens ----
  const tokens = file.getStringArray('tokenizer.ggml.tokens').slice();
  const n = tokens.length;
  const scoresKV = file.getArray('tokenizer.ggml.scores', null);
  const scores = new Float32Array(n);
  if (scoresKV) {
    if (scoresKV.items.length < n) throw new VocabError(`${path}: fewer scores than tokens`);
    for (let i = 0; i < n; i++) scores[i] = Number((scoresKV.items as ArrayLike<number>)[i]);
  }
  const attrs = new Uint16Array(n).fill(Attr.NORMAL);
  const typesKV = file.getArray('tokenizer.ggml.token_type', null);
  if (typesKV) {
    if (typesKV.itemType !== GGUFValueType.INT32) throw new VocabError(`${path}: token_type is not INT32`);
    if (typesKV.items.length < n) throw new VocabError(`${path}: fewer token types than tokens`);
    const t = typesKV.items as Int32Array;
    for (let i = 0; i < n; i++) attrs[i] = TYPE_TO_ATTR[t[i]!] ?? Attr.UNDEFINED;
  }
  const ids = new Map<string, number>();
  for (let i = 0; i < n; i++) {
    let w = tokens[i]!;
    if (w === '') {
      log.warn(`empty token at index ${i}`);
      w = `[EMPTY_${i}]`;
      tokens[i] = w;
    }
    const prev = ids.get(w);
    if (prev !== undefined) throw new VocabError(`${path}: duplicate token '${w}' (ids ${prev} and ${i})`);
    ids.set(w, i);
  }

  // ---- special ids ----
  for (const [key, field] of SPECIAL_KEYS) {
    const full = `tokenizer.ggml.${key}`;
    if (sp[field] >= n) {
      log.warn(`default special token '${full}' = ${sp[field]} out of vocab range, disabling`);
      sp[field] = NULL;
    }
    const v = file.getInt(full, null);
    if (v === null) continue;
    if (v < 0 || v >= n) log.warn(`bad special token: '${full}' = ${v}, using default id ${sp[field]}`);
    else sp[field] = v;
  }
  addBos = file.getBool('tokenizer.ggml.add_bos_token', addBos);
  addEos = file.getBool('tokenizer.ggml.add_eos_token', addEos);
  addSep = file.getBool('tokenizer.ggml.add_sep_token', addSep);
  if (forceBos && !addBos) {
    log.warn(`add_bos_token overridden to true for pre-tokenizer '${pre}'`);
    addBos = true;
  }
  if (addBos && sp.bos === NULL) throw new VocabError(`${path}: add_bos_token is true, but bos_token_id is not set`);
  if (addEos && sp.eos === NULL) throw new VocabError(`${path}: add_eos_token is true, but eos_token_id is not set`);
  if (addSep && sp.sep === NULL)
    throw new VocabError(`${path}: add_sep_token is true, but seperator_token_id is not set`);
  const lowercase = file.getBool('tokenizer.ggml.normalizer.lowercase', lowercaseDefault);
  const stripAccents = file.getBool('tokenizer.ggml.normalizer.strip_accents', lowercase);

  // ---- special tokens recognised by their text ----
  const markControl = (id: number) => {
    if (!(attrs[id]! & Attr.CONTROL)) {
      log.warn(`control-looking token: ${id} '${tokens[id]}' was not control-type; overriding its type`);
      attrs[id] = attrs[id]! | Attr.CONTROL;
    }
  };
  const detect = (texts: string[], field: keyof SpecialIds) => {
    if (sp[field] !== NULL) return;
    for (const t of texts) {
      const id = ids.get(t);
      if (id !== undefined) {
        sp[field] = id;
        markControl(id);
        return;
      }
    }
  };
  detect(EOT_TEXTS, 'eot');
  detect(EOM_TEXTS, 'eom');
  detect(FIM_PRE_TEXTS, 'fimPre');
  detect(FIM_SUF_TEXTS, 'fimSuf');
  detect(FIM_MID_TEXTS, 'fimMid');
  detect(FIM_PAD_TEXTS, 'fimPad');
  detect(FIM_REP_TEXTS, 'fimRep');
  detect(FIM_SEP_TEXTS, 'fimSep');

  for (let i = 0; i < n; i++) {
    if (attrs[i]! & Attr.CONTROL && !(attrs[i]! & Attr.UNUSED) && tokens[i]!.includes('unused')) {
      attrs[i] = attrs[i]! | Attr.UNUSED;
    }
  }
  const eog = new Set<number>();
  for (const id of [sp.fimPad, sp.fimRep, sp.fimSep]) if (id !== NULL) eog.add(id);
  for (const t of EOG_TEXTS) {
    const id = ids.get(t);
    if (id === undefined) continue;
    eog.add(id);
    markControl(id);
  }
  for (const t of ['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>']) {
    const id = ids.get(t);
    if (id !== undefined) attrs[id] = Attr.USER_DEFINED;
  }
  for (const what of ['eos', 'eot', 'eom'] as const) {
    const id = sp[what];
    if (id !== NULL && !eog.has(id)) {
      eog.add(id);
      log.warn(`special_${what}_id is not in the end-of-generation set; the tokenizer config may be incorrect`);
    }
  }
  const endId = ids.get('<|end|>');
  if (endId !== undefined && eog.has(endId)) {
    const has = (t: string) => {
      const id = ids.get(t);
      return id !== undefined && eog.has(id);
    };
    if ((has('<|return|>') && has('<|call|>')) || (has('<|calls|>') && has('<|flush|>'))) {
      eog.delete(endId);
      attrs[endId] = Attr.USER_DEFINED;
    }
  }

  // ---- special token cache: longest byte length first ----
  const special: number[] = [];
  const byteLen = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    if (attrs[i]! & (Attr.CONTROL | Attr.USER_DEFINED | Attr.UNKNOWN)) {
      special.push(i);
      byteLen.set(i, textToBinary(tokens[i]!).length);
    }
  }
  special.sort((a, b) => byteLen.get(b)! - byteLen.get(a)! || a - b);

  // ---- per-model token attributes llama.cpp sets by name ----
  const name = file.getString('general.name', '').toLowerCase();
  const arch = file.getString('general.architecture', '');
  if (
    ['jina-v2-de', 'jina-v2-es', 'jina-v2-code'].some((s) => pre.includes(s)) ||
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

  return {
    path,
    model,
    type,
    pre,
    preTokenizer,
    tokens,
    scores,
    attrs,
    ids,
    merges,
    eog,
    specialTokens: special,
    ...sp,
    addBos,
    addEos,
    addSep,
    addSpacePrefix,
    cleanSpaces,
    ignoreMerges,
    escapeWhitespaces,
    removeExtraWhitespaces,
    precompiledCharsmap,
    lowercase,
    stripAccents,
  };
}
