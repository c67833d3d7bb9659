// What a generated model is: architecture, shape, file type, vocabulary and seed.
import type { FileTypeName } from '../quantize/ftypes.js';

export type GenArch = 'llama' | 'qwen2' | 'qwen3' | 'bert';

export interface ModelShape {
  nEmbd: number;
  nLayer: number;
  nHead: number;
  /** Defaults to nHead (no GQA). */
  nHeadKv?: number;
  nFf: number;
  /** Rows of token_embd; ignored (follows the copied vocabulary) for `{ kind: 'copy' }`. */
  nVocab: number;
  /** `{arch}.context_length`; bert: also the rows of position_embd. */
  nCtxTrain: number;
  /** Per-head size; defaults to nEmbd / nHead (then key/value_length are not written, except for qwen3). */
  headDim?: number;
  /** `{arch}.rope.dimension_count`; defaults to headDim. Not written for bert. */
  ropeDim?: number;
  /** Defaults: 10000 (llama), 1e6 (qwen2/qwen3). */
  ropeFreqBase?: number;
  /** RMS norm epsilon (llama/qwen*, default 1e-5) or layer-norm epsilon (bert, default 1e-12). */
  normEps?: number;
  /** No output.weight: the output projection reuses token_embd (llama/qwen*). */
  tiedEmbeddings?: boolean;
  /**
   * bert: `bert.pooling_type` (llama.cpp: 0 none, 1 mean, 2 cls, 3 last, 4 rank); default 1.
   * 4 (rank) makes a reranker: bert gets a classification head (cls.weight/bias,
   * cls.output.weight/bias, one output), qwen3 a Qwen3-Reranker head (cls.output.weight,
   * labels yes/no) and its rerank prompt.
   */
  poolingType?: number;
  /** bert: rows of token_types (the `token_type_count`); default 2. */
  nTypeVocab?: number;
}

export type VocabSpec =
  | { kind: 'synthetic-spm' | 'synthetic-bpe' | 'synthetic-wpm'; size: number }
  /** A few tokens (<unk> <s> </s> and single letters, no byte fallback): for statistics over the whole vocabulary. */
  | { kind: 'toy-spm'; size: number }
  | { kind: 'copy'; from: string };

export interface ModelSpec {
  arch: GenArch;
  /** general.name; defaults to `generated-{arch}-{nEmbd}x{nLayer}`. */
  name?: string;
  shape: ModelShape;
  fileType: FileTypeName;
  seed: number;
  /** Defaults to a synthetic vocabulary of shape.nVocab tokens of the arch's usual kind. */
  vocab?: VocabSpec;
  /**
   * Key and tensor order: 'convert' as convert_hf_to_gguf.py writes (general.file_type
   * among the hyper-parameters, tensors by layer in module order), 'quantize' as
   * llama-quantize rewrites a file (quantization_version and file_type last, tensors sorted
   * by layer then name). Default: 'convert' for F32, 'quantize' for every other type.
   */
  layout?: 'convert' | 'quantize';
}

export type { FileTypeName } from '../quantize/ftypes.js';
export { FILE_TYPES, isFileTypeName } from '../quantize/ftypes.js';

/** Every field of a shape filled in with its default for `arch`. */
export type ResolvedShape = Required<ModelShape>;

export function resolveShape(arch: GenArch, s: ModelShape): ResolvedShape {
  const headDim = s.headDim ?? s.nEmbd / s.nHead;
  const r: ResolvedShape = {
    nEmbd: s.nEmbd,
    nLayer: s.nLayer,
    nHead: s.nHead,
    nHeadKv: s.nHeadKv ?? s.nHead,
    nFf: s.nFf,
    nVocab: s.nVocab,
    nCtxTrain: s.nCtxTrain,
    headDim,
    ropeDim: s.ropeDim ?? headDim,
    ropeFreqBase: s.ropeFreqBase ?? (arch === 'llama' ? 10000 : 1e6),
    normEps: s.normEps ?? (arch === 'bert' ? 1e-12 : 1e-5),
    tiedEmbeddings: arch === 'bert' ? true : (s.tiedEmbeddings ?? false),
    poolingType: s.poolingType ?? 1,
    nTypeVocab: s.nTypeVocab ?? 2,
  };
  const pos = (v: number, what: string) => {
    if (!Number.isSafeInteger(v) || v <= 0)
      throw new RangeError(`model shape: ${what} = ${v} is not a positive integer`);
  };
  pos(r.nEmbd, 'nEmbd');
  pos(r.nLayer, 'nLayer');
  pos(r.nHead, 'nHead');
  pos(r.nHeadKv, 'nHeadKv');
  pos(r.nFf, 'nFf');
  pos(r.nVocab, 'nVocab');
  pos(r.nCtxTrain, 'nCtxTrain');
  pos(r.headDim, 'headDim (nEmbd / nHead unless given)');
  pos(r.nTypeVocab, 'nTypeVocab');
  if (r.nHead % r.nHeadKv !== 0)
    throw new RangeError(`model shape: nHead ${r.nHead} is not a multiple of nHeadKv ${r.nHeadKv}`);
  if (r.ropeDim <= 0 || r.ropeDim > r.headDim || r.ropeDim % 2 !== 0) {
    throw new RangeError(`model shape: ropeDim ${r.ropeDim} must be even and at most headDim ${r.headDim}`);
  }
  if (arch === 'bert' && r.nHeadKv !== r.nHead)
    throw new RangeError('model shape: bert has no grouped-query attention');
  return r;
}

// ---- presets ----------------------------------------------------------------------

export interface Preset {
  arch: GenArch;
  name: string;
  shape: ModelShape;
  vocabKind: 'synthetic-spm' | 'synthetic-bpe' | 'synthetic-wpm';
  description: string;
}

export const PRESETS: Readonly<Record<string, Preset>> = {
  'tiny-llama': {
    arch: 'llama',
    name: 'tiny-llama',
    description: 'small llama for tests: 64 wide, 2 layers, GQA 4/2, 512-token SPM vocab',
    shape: { nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nVocab: 512, nCtxTrain: 512 },
    vocabKind: 'synthetic-spm',
  },
  'tiny-qwen2': {
    arch: 'qwen2',
    name: 'tiny-qwen2',
    description: 'small qwen2 for tests: q/k/v biases, tied embeddings, 512-token BPE vocab',
    shape: { nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nVocab: 512, nCtxTrain: 512, tiedEmbeddings: true },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-qwen3': {
    arch: 'qwen3',
    name: 'tiny-qwen3',
    description: 'small qwen3 for tests: q/k RMS norms, head_dim 32 (> nEmbd / nHead), 512-token BPE vocab',
    shape: { nEmbd: 64, nLayer: 2, nHead: 4, nHeadKv: 2, nFf: 128, nVocab: 512, nCtxTrain: 512, headDim: 32 },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-bert-reranker': {
    arch: 'bert',
    name: 'tiny-bert-reranker',
    description: 'small BERT reranker for tests: pooling rank, classification head, 512-token WordPiece vocab',
    shape: { nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nVocab: 512, nCtxTrain: 128, poolingType: 4 },
    vocabKind: 'synthetic-wpm',
  },
  'tiny-qwen3-reranker': {
    arch: 'qwen3',
    name: 'tiny-qwen3-reranker',
    description: 'small Qwen3-Reranker for tests: yes/no head, the rerank prompt, 512-token BPE vocab',
    shape: {
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 512,
      headDim: 32,
      poolingType: 4,
    },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-bert': {
    arch: 'bert',
    name: 'tiny-bert',
    description: 'small BERT embedding model for tests: mean pooling, 512-token WordPiece vocab',
    shape: { nEmbd: 64, nLayer: 2, nHead: 4, nFf: 128, nVocab: 512, nCtxTrain: 128 },
    vocabKind: 'synthetic-wpm',
  },
  // Qwen/Qwen2.5-0.5B config.json: hidden 896, 24 layers, 14 heads, 2 KV heads,
  // intermediate 4864, vocab 151936, max_position_embeddings 32768, rope_theta 1e6,
  // rms_norm_eps 1e-6, tie_word_embeddings true (494M parameters).
  'qwen2.5-0.5b': {
    arch: 'qwen2',
    name: 'Qwen2.5-0.5B (random weights)',
    description: "Qwen2.5-0.5B's shape: 896 wide, 24 layers, 14/2 heads, n_ff 4864, vocab 151936, tied",
    shape: {
      nEmbd: 896,
      nLayer: 24,
      nHead: 14,
      nHeadKv: 2,
      nFf: 4864,
      nVocab: 151936,
      nCtxTrain: 32768,
      ropeFreqBase: 1e6,
      normEps: 1e-6,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-bpe',
  },
  // Qwen/Qwen2.5-1.5B config.json: hidden 1536, 28 layers, 12 heads, 2 KV heads,
  // intermediate 8960, vocab 151936, rope_theta 1e6, rms_norm_eps 1e-6, tied (1.54B).
  // The speculative-decoding benchmark's target (qwen2.5-0.5b drafts for it: same vocabulary).
  'qwen2.5-1.5b': {
    arch: 'qwen2',
    name: 'Qwen2.5-1.5B (random weights)',
    description: "Qwen2.5-1.5B's shape: 1536 wide, 28 layers, 12/2 heads, n_ff 8960, vocab 151936, tied",
    shape: {
      nEmbd: 1536,
      nLayer: 28,
      nHead: 12,
      nHeadKv: 2,
      nFf: 8960,
      nVocab: 151936,
      nCtxTrain: 32768,
      ropeFreqBase: 1e6,
      normEps: 1e-6,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-bpe',
  },
  // The shape the speed references in ../shared/notes/wasm-simd.md were measured on: Qwen2.5-0.5B
  // with an untied output matrix and the tokenizer's 151669 tokens (630M parameters).
  'qwen2.5-0.5b-630m': {
    arch: 'qwen2',
    name: 'Qwen2.5-0.5B, untied output (random weights)',
    description: "Qwen2.5-0.5B's shape with a separate output.weight and vocab 151669: 630M parameters",
    shape: {
      nEmbd: 896,
      nLayer: 24,
      nHead: 14,
      nHeadKv: 2,
      nFf: 4864,
      nVocab: 151669,
      nCtxTrain: 32768,
      ropeFreqBase: 1e6,
      normEps: 1e-6,
      tiedEmbeddings: false,
    },
    vocabKind: 'synthetic-bpe',
  },
  // TinyLlama/TinyLlama-1.1B-Chat-v1.0 config.json: hidden 2048, 22 layers, 32 heads,
  // 4 KV heads, intermediate 5632, vocab 32000, max_position_embeddings 2048,
  // rope_theta 10000, rms_norm_eps 1e-5, untied output (1.10B parameters).
  'tinyllama-1.1b': {
    arch: 'llama',
    name: 'TinyLlama-1.1B (random weights)',
    description: "TinyLlama-1.1B's shape: 2048 wide, 22 layers, 32/4 heads, n_ff 5632, vocab 32000",
    shape: {
      nEmbd: 2048,
      nLayer: 22,
      nHead: 32,
      nHeadKv: 4,
      nFf: 5632,
      nVocab: 32000,
      nCtxTrain: 2048,
      ropeFreqBase: 10000,
      normEps: 1e-5,
    },
    vocabKind: 'synthetic-spm',
  },
};

/** What a preset's spec may change: seed, vocabulary, and shape fields (e.g. head counts). */
export interface PresetOptions {
  seed?: number;
  vocab?: VocabSpec;
  /** Fields that replace the preset's, e.g. `{ nHead: 8, nHeadKv: 1 }` for one KV head. */
  shape?: Partial<ModelShape>;
}

/** The spec of a preset in a file type (seed 1 unless given). */
export function presetSpec(preset: string, fileType: FileTypeName, opts: PresetOptions = {}): ModelSpec {
  const p = PRESETS[preset];
  if (!p) throw new RangeError(`unknown preset '${preset}' (known: ${Object.keys(PRESETS).join(', ')})`);
  const shape: ModelShape = { ...p.shape };
  for (const [k, v] of Object.entries(opts.shape ?? {})) {
    if (v !== undefined) (shape as unknown as Record<string, unknown>)[k] = v;
  }
  resolveShape(p.arch, shape);
  return {
    arch: p.arch,
    name: p.name,
    shape,
    fileType,
    seed: opts.seed ?? 1,
    vocab: opts.vocab ?? { kind: p.vocabKind, size: shape.nVocab },
  };
}
