// What a generated model is: architecture, shape, file type, vocabulary and seed.
import type { FileTypeName } from '../quantize/ftypes.js';

export type GenArch =
  | 'llama'
  | 'qwen2'
  | 'qwen2vl'
  | 'qwen3'
  | 'qwen3vl'
  | 'bert'
  | 'gemma2'
  | 'gemma3'
  | 'gemma-embedding'
  | 'gemma4'
  | 'phi3'
  | 'smollm3'
  | 'qwen35'
  | 'qwen35moe'
  | 'lfm2'
  | 'lfm2moe'
  | 'granitehybrid'
  | 'nemotron_h'
  | 'nemotron_h_moe'
  | 'qwen2moe'
  | 'qwen3moe'
  | 'deepseek2'
  | 'gpt-oss';

/** The dense architecture whose layers a recurrent one shares (its MoE variant's, or itself). */
export type RecurrentFamily = 'qwen35' | 'lfm2' | 'granitehybrid' | 'nemotron_h';

const RECURRENT_FAMILY: Partial<Record<GenArch, RecurrentFamily>> = {
  qwen35: 'qwen35',
  qwen35moe: 'qwen35',
  lfm2: 'lfm2',
  lfm2moe: 'lfm2',
  granitehybrid: 'granitehybrid',
  nemotron_h: 'nemotron_h',
  nemotron_h_moe: 'nemotron_h',
};

/** Architectures with recurrent layers (layout-recurrent.ts). */
export function isRecurrentArch(arch: GenArch): boolean {
  return RECURRENT_FAMILY[arch] !== undefined;
}

/** The family of a recurrent architecture (throws for any other). */
export function recurrentFamily(arch: GenArch): RecurrentFamily {
  const f = RECURRENT_FAMILY[arch];
  if (!f) throw new RangeError(`${arch} has no recurrent layers`);
  return f;
}

/** Sizes of Mamba-2 / Gated DeltaNet layers (the `ssm.*` keys). */
export interface SsmShape {
  /** `ssm.conv_kernel`. */
  dConv: number;
  /** `ssm.inner_size`: Mamba-2's inner width; Gated DeltaNet's value width (heads × head size). */
  dInner: number;
  /** `ssm.state_size`: Mamba-2's state size; Gated DeltaNet's key head size. */
  dState: number;
  /** `ssm.time_step_rank`: Mamba-2's heads; Gated DeltaNet's value heads. */
  nHead: number;
  /** `ssm.group_count`: Mamba-2's groups of B and C; Gated DeltaNet's key heads. */
  nGroup: number;
}

/** Gemma-family architectures (GeGLU, sandwich norms, embeddings scaled by √n_embd, tied output). */
export function isGemma(arch: GenArch): boolean {
  return arch === 'gemma2' || arch === 'gemma3' || arch === 'gemma-embedding' || arch === 'gemma4';
}

/**
 * Architectures whose feed-forward is a mixture of experts (llama and gemma4: when `experts`
 * is given; gemma4's experts sit beside its dense feed-forward, as in Gemma 4 26B-A4B).
 */
export const MOE_ARCHS: readonly GenArch[] = [
  'qwen2moe',
  'qwen3moe',
  'deepseek2',
  'gpt-oss',
  'qwen35moe',
  'lfm2moe',
  'nemotron_h_moe',
];

/** The experts of a mixture-of-experts model (llama with these is Mixtral-style). */
export interface ExpertShape {
  nExpert: number;
  nUsed: number;
  /** Rows of one expert's gate/up (`expert_feed_forward_length`; llama: n_ff). */
  nFf: number;
  /**
   * qwen2moe, qwen35moe: rows of the sigmoid-gated shared expert; granitehybrid,
   * nemotron_h_moe: rows of the ungated shared expert; deepseek2: shared experts of nFf rows each.
   */
  nShared?: number;
  /** deepseek2, lfm2moe: leading layers with a dense feed-forward of n_ff rows. */
  nDenseLead?: number;
  /** deepseek2: 'softmax' (V2) or 'sigmoid' (V3 / GLM) scores; lfm2moe: `expert_gating_func` (default sigmoid). */
  gating?: 'softmax' | 'sigmoid';
  /** deepseek2, nemotron_h_moe: expert_weights_scale (routed scaling factor) and expert_weights_norm. */
  weightsScale?: number;
  weightsNorm?: boolean;
  /** deepseek2: a per-expert selection bias (exp_probs_b); lfm2moe and nemotron_h_moe always have one. */
  probsBias?: boolean;
  /**
   * Router weights' standard deviation (default 1/sqrt(nEmbd); gemma4: 1, its router input
   * is divided by sqrt(nEmbd)); 0 makes every expert tie.
   */
  routerStd?: number;
  /** gemma4, deepseek2, qwen35moe: one `ffn_gate_up_exps` stack of 2·nFf rows per expert (gate rows first) instead of two. */
  gateUpFused?: boolean;
  /** gemma4: a per-expert scale of the down projection's output (`ffn_down_exps.scale`). */
  downScale?: boolean;
  /**
   * nemotron_h_moe (Nemotron 3 Puzzle): experts used and rows of each block's experts, one
   * value per block (written as arrays; nUsed / nFf: their first expert layer's values).
   */
  nUsedPerLayer?: number[];
  nFfPerLayer?: number[];
  /** Grouped selection (DeepSeek-V3): `expert_group_count` groups, the `used` best eligible. */
  groups?: { n: number; used: number };
  /** nemotron_h_moe (Nemotron 3 Super): the experts' latent width (`moe_latent_size`, with ffn_latent_down/up). */
  latent?: number;
}

/** DeepSeek-2's latent attention sizes. */
export interface MlaShape {
  /** 0: no query bottleneck (the -Lite models). */
  qLoraRank: number;
  kvLoraRank: number;
  /** Per-head query/key size before absorption (nope + rope dims) and value size. */
  headK: number;
  headV: number;
}

/** YaRN context extension, as the converters write it. */
export interface YarnShape {
  factor: number;
  originalContext: number;
  /** deepseek2: `rope.scaling.yarn_log_multiplier` as stored (0.1·mscale_all_dim). */
  logMultiplier?: number;
}

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
   * qwen35, qwen35moe, deepseek2, nemotron_h_moe: multi-token-prediction blocks after the nLayer others
   * (`nextn_predict_layers`; block_count counts them), which llama.cpp loads but does not
   * evaluate. Default 0.
   */
  nextnLayers?: number;
  /** deepseek2: attention temperature tuning (`attention.temperature_scale` / `_length`; scale 0: none). */
  attnTemp?: { scale: number; length: number };
  /**
   * bert: `bert.pooling_type` (llama.cpp: 0 none, 1 mean, 2 cls, 3 last, 4 rank); default 1.
   * 4 (rank) makes a reranker: bert gets a classification head (cls.weight/bias,
   * cls.output.weight/bias, one output), qwen3 a Qwen3-Reranker head (cls.output.weight,
   * labels yes/no) and its rerank prompt.
   */
  poolingType?: number;
  /** bert: rows of token_types (the `token_type_count`); default 2. */
  nTypeVocab?: number;
  /** Mixture of experts (required by the MoE architectures; llama: Mixtral-style). */
  experts?: ExpertShape;
  /** deepseek2's latent attention (required by it). */
  mla?: MlaShape;
  yarn?: YarnShape;

  // ---- sliding-window architectures (gemma*, phi3, gpt-oss) ----
  /** `attention.sliding_window` (0: none; gemma2 and gemma4 need one). */
  slidingWindow?: number;
  /** `attention.sliding_window_pattern`: a period (gemma2/3/embedding) or one bool per layer (gemma4). */
  swaPattern?: number | boolean[];
  /** `rope.freq_base_swa`. */
  ropeFreqBaseSwa?: number;
  /**
   * Gemma family: std of the token embedding table (default or 0: n_embd^-0.25 when it is
   * tied, 1/√n_embd otherwise). A tied table scores each token's own row highest, so a smaller std
   * keeps the model from predicting the last input token back with probability ~1.
   */
  embdStd?: number;
  /** gemma2: `attn_logit_softcapping` and `final_logit_softcapping` (gemma3/4: final only, 0 = none). */
  attnSoftcap?: number;
  finalSoftcap?: number;
  /** gemma4: head size, rotated dims and KV heads of sliding-window layers (the others: headDim, ropeDim, nHeadKv). */
  headDimSwa?: number;
  ropeDimSwa?: number;
  nHeadKvSwa?: number;
  /** gemma4: the last n layers read an earlier layer's KV (`attention.shared_kv_layers`). */
  sharedKvLayers?: number;
  /** gemma4: per-layer embedding width (`embedding_length_per_layer_input`, 0: none). */
  embdPerLayer?: number;
  /** gemma4: full-attention layers without `attn_v` (V is K's projection). */
  fullLayersWithoutV?: boolean;
  /** gemma4: a `layer_output_scale` per layer. */
  layerOutputScale?: boolean;
  /**
   * phi3 and llama: LongRoPE factor tensors and `rope.scaling.original_context_length` /
   * `attn_factor` (llama: also `rope.scaling.type` longrope, which its loader needs).
   */
  longRope?: { nCtxOrig: number; attnFactor: number };
  /**
   * Projection layouts llama.cpp's loaders take besides the converters' usual one, for every
   * architecture (test/refs/variants, test/refs/variants-b): q/k/v as one fused attn_qkv or
   * as separate attn_q/k/v (phi3), a bias on each named projection that has none
   * (`attn_q`, `attn_output`, `ffn_up`, `output`, ...), and the named projections' biases
   * left out (qwen2's, qwen2moe's, gpt-oss's q/k/v). With fused q/k/v, a bias on any of
   * q/k/v gives attn_qkv one.
   */
  projections?: ProjectionLayout;
  /** llama: a `rope_freqs.weight` RoPE divides its frequencies by (as Llama 3.1's converter writes). */
  ropeFreqs?: boolean;
  /** gemma-embedding: width of the dense projections after pooling (0: none). */
  denseDim?: number;
  /**
   * gemma3/4 and gemma-embedding: mean of the q/k norm weights (default 1). Larger values
   * sharpen attention, so that which keys a window keeps shows in the logits.
   */
  qkNormScale?: number;

  // ---- recurrent and hybrid architectures (qwen35, lfm2, granitehybrid, nemotron_h) ----
  /**
   * Kind of each layer, one letter per layer: 'R' recurrent (Gated DeltaNet, short
   * convolution, Mamba-2), 'A' attention, 'F' feed-forward only (nemotron_h). qwen35:
   * derived from fullAttentionInterval.
   */
  layerKinds?: string;
  /** qwen35: every n-th layer is attention (`full_attention_interval`, default 4). */
  fullAttentionInterval?: number;
  ssm?: SsmShape;
  /** lfm2: the short convolution's length (`shortconv.l_cache`, default 3). */
  shortConvL?: number;
  /** qwen35, qwen2vl, qwen3vl: `rope.dimension_sections` (M-RoPE; qwen35 default [11, 11, 10, 0]). */
  ropeSections?: number[];
  /** qwen3vl: `n_deepstack_layers` (the input embeddings are n_embd wide times 1 + this). Default 0. */
  deepstackLayers?: number;
  /** granitehybrid: `embedding_scale`, `residual_scale`, `logit_scale`, `attention.scale` (0: not written). */
  granite?: { embeddingScale: number; residualScale: number; logitScale: number; attentionScale: number };
}

export interface ProjectionLayout {
  qkv?: 'fused' | 'split';
  /** Projections (weight names without `.weight`, e.g. `attn_q`) given a bias when they have none. */
  biases?: string[];
  /** Projections whose bias is left out. */
  noBiases?: string[];
}

/** The q/k/v projections, as `ProjectionLayout.biases` / `noBiases` name them. */
export const QKV_PROJECTIONS = ['attn_q', 'attn_k', 'attn_v'];

export type VocabSpec =
  | { kind: 'synthetic-spm' | 'synthetic-bpe' | 'synthetic-wpm'; size: number }
  /** A few tokens (<unk> <s> </s> and single letters, no byte fallback): for statistics over the whole vocabulary. */
  | { kind: 'toy-spm'; size: number }
  /**
   * Every tokenizer.* key of another file; `extra` tokens appended after its own (e.g. a
   * multimodal projector's delimiters), `chatTemplate` replacing its tokenizer.chat_template.
   */
  | { kind: 'copy'; from: string; extra?: readonly { text: string; type: number }[]; chatTemplate?: string };

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
export type ResolvedShape = Required<Omit<ModelShape, 'experts' | 'mla' | 'yarn'>> &
  Pick<ModelShape, 'experts' | 'mla' | 'yarn'>;

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
    ropeFreqBase:
      s.ropeFreqBase ??
      (arch === 'qwen2' || arch === 'qwen2vl' || arch === 'qwen3' || arch === 'qwen3vl' || MOE_ARCHS.includes(arch)
        ? 1e6
        : 10000),
    normEps: s.normEps ?? (arch === 'bert' ? 1e-12 : isGemma(arch) ? 1e-6 : 1e-5),
    // Gemma 2 and EmbeddingGemma always reuse token_embd for the output (embeddings: none)
    tiedEmbeddings:
      arch === 'bert' || arch === 'gemma2' || arch === 'gemma-embedding' ? true : (s.tiedEmbeddings ?? false),
    nextnLayers: s.nextnLayers ?? 0,
    attnTemp: s.attnTemp ?? { scale: 0, length: 0 },
    poolingType: s.poolingType ?? 1,
    nTypeVocab: s.nTypeVocab ?? 2,
    experts: s.experts,
    mla: s.mla,
    yarn: s.yarn,
    slidingWindow: s.slidingWindow ?? 0,
    swaPattern: s.swaPattern ?? 0,
    ropeFreqBaseSwa: s.ropeFreqBaseSwa ?? 10000,
    embdStd: s.embdStd ?? 0,
    attnSoftcap: s.attnSoftcap ?? 0,
    finalSoftcap: s.finalSoftcap ?? 0,
    headDimSwa: s.headDimSwa ?? headDim,
    ropeDimSwa: s.ropeDimSwa ?? s.headDimSwa ?? s.ropeDim ?? headDim,
    nHeadKvSwa: s.nHeadKvSwa ?? s.nHeadKv ?? s.nHead,
    sharedKvLayers: s.sharedKvLayers ?? 0,
    embdPerLayer: s.embdPerLayer ?? 0,
    fullLayersWithoutV: s.fullLayersWithoutV ?? false,
    layerOutputScale: s.layerOutputScale ?? false,
    longRope: s.longRope ?? { nCtxOrig: 0, attnFactor: 1 },
    projections: s.projections ?? {},
    ropeFreqs: s.ropeFreqs ?? false,
    denseDim: s.denseDim ?? 0,
    qkNormScale: s.qkNormScale ?? 1,
    layerKinds: s.layerKinds ?? '',
    fullAttentionInterval: s.fullAttentionInterval ?? 4,
    ssm: s.ssm ?? { dConv: 0, dInner: 0, dState: 0, nHead: 0, nGroup: 0 },
    shortConvL: s.shortConvL ?? 3,
    ropeSections: s.ropeSections ?? [11, 11, 10, 0],
    deepstackLayers: s.deepstackLayers ?? 0,
    granite: s.granite ?? { embeddingScale: 0, residualScale: 0, logitScale: 0, attentionScale: 0 },
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
  if (r.nHead % r.nHeadKvSwa !== 0)
    throw new RangeError(`model shape: nHead ${r.nHead} is not a multiple of nHeadKvSwa ${r.nHeadKvSwa}`);
  if ((arch === 'gemma2' || arch === 'gemma4' || arch === 'gemma-embedding') && r.slidingWindow <= 0)
    throw new RangeError(`model shape: ${arch} needs slidingWindow`);
  if (Array.isArray(r.swaPattern) && r.swaPattern.length !== r.nLayer)
    throw new RangeError(`model shape: swaPattern has ${r.swaPattern.length} entries for ${r.nLayer} layers`);
  if (r.sharedKvLayers < 0 || (r.sharedKvLayers > 0 && r.nLayer - r.sharedKvLayers < 2))
    throw new RangeError(
      `model shape: sharedKvLayers ${r.sharedKvLayers} must leave at least 2 layers with their own KV`,
    );
  if (r.experts?.latent !== undefined && arch !== 'nemotron_h_moe')
    throw new RangeError('model shape: experts.latent is for nemotron_h_moe');
  for (const a of [r.experts?.nUsedPerLayer, r.experts?.nFfPerLayer]) {
    if (a && (arch !== 'nemotron_h_moe' || a.length !== r.nLayer + r.nextnLayers))
      throw new RangeError('model shape: per-layer expert counts and sizes are for nemotron_h_moe, one per block');
  }
  if (r.nextnLayers !== 0 && !['qwen35', 'qwen35moe', 'deepseek2', 'nemotron_h_moe'].includes(arch))
    throw new RangeError(
      `model shape: nextnLayers is for qwen35, qwen35moe, deepseek2 and nemotron_h_moe, not ${arch}`,
    );
  if (isRecurrentArch(arch)) checkRecurrentShape(arch, r);
  if (MOE_ARCHS.includes(arch) && !r.experts) throw new RangeError(`model shape: ${arch} needs experts`);
  if (r.experts) {
    const e = r.experts;
    pos(e.nExpert, 'experts.nExpert');
    pos(e.nUsed, 'experts.nUsed');
    pos(e.nFf, 'experts.nFf');
    if (e.nUsed > e.nExpert) throw new RangeError(`model shape: ${e.nUsed} experts used of ${e.nExpert}`);
  }
  if (arch === 'deepseek2') {
    const m = r.mla;
    if (!m) throw new RangeError('model shape: deepseek2 needs mla');
    if (r.nHeadKv !== 1) throw new RangeError('model shape: deepseek2 (latent attention) has one KV head');
    if (r.headDim !== m.kvLoraRank + r.ropeDim || m.headK <= r.ropeDim) {
      throw new RangeError('model shape: deepseek2 needs headDim = kvLoraRank + ropeDim and mla.headK > ropeDim');
    }
  }
  return r;
}

function checkRecurrentShape(arch: GenArch, r: ResolvedShape): void {
  const bad = (what: string) => {
    throw new RangeError(`model shape (${arch}): ${what}`);
  };
  const family = recurrentFamily(arch);
  if (family === 'qwen35') {
    if (r.layerKinds !== '') bad('qwen35 layers follow fullAttentionInterval, not layerKinds');
    if (!(Number.isSafeInteger(r.fullAttentionInterval) && r.fullAttentionInterval >= 1))
      bad(`fullAttentionInterval ${r.fullAttentionInterval} is not a positive integer`);
  } else {
    if (r.layerKinds.length !== r.nLayer) bad(`layerKinds has ${r.layerKinds.length} letters for ${r.nLayer} layers`);
    const letters = family === 'nemotron_h' ? /^[RAF]+$/ : /^[RA]+$/;
    if (!letters.test(r.layerKinds)) bad(`layerKinds '${r.layerKinds}' (letters: ${letters.source})`);
  }
  const ex = r.experts;
  // Granite's experts have feed_forward_length rows (llama.cpp reads no expert length for it)
  if (arch === 'granitehybrid' && ex && ex.nFf !== r.nFf) bad(`experts.nFf ${ex.nFf} must equal nFf ${r.nFf}`);
  if (arch === 'nemotron_h_moe' && !((ex?.nShared ?? 0) > 0)) bad('nemotron_h_moe needs experts.nShared');
  if (ex && (arch === 'qwen35' || arch === 'lfm2' || arch === 'nemotron_h'))
    bad(`experts need ${arch}'s MoE architecture`);
  if (ex && (ex.nDenseLead ?? 0) > 0 && arch !== 'lfm2moe') bad('experts.nDenseLead is for lfm2moe (and deepseek2)');
  if (family === 'lfm2') {
    if (!(Number.isSafeInteger(r.shortConvL) && r.shortConvL >= 2)) bad(`shortConvL ${r.shortConvL} must be ≥ 2`);
    return;
  }
  const m = r.ssm;
  for (const [k, v] of Object.entries(m)) if (!(Number.isSafeInteger(v) && v > 0)) bad(`ssm.${k} = ${v}`);
  if (m.nHead % m.nGroup !== 0) bad(`ssm heads ${m.nHead} are not a multiple of the groups ${m.nGroup}`);
  if (family === 'qwen35' && m.dInner !== m.nHead * m.dState)
    bad(`Gated DeltaNet value width ${m.dInner} must be heads ${m.nHead} × head size ${m.dState}`);
  if (family !== 'qwen35' && m.dInner % m.nHead !== 0) bad(`ssm inner size ${m.dInner} must divide by the heads`);
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
  'tiny-gemma2': {
    arch: 'gemma2',
    name: 'tiny-gemma2',
    description: 'small gemma2 for tests: window 8 on every other layer, soft-capping, 512-token SPM vocab',
    shape: { nEmbd: 64, nLayer: 4, nHead: 4, nHeadKv: 2, nFf: 128, nVocab: 512, nCtxTrain: 2048, slidingWindow: 8 },
    vocabKind: 'synthetic-spm',
  },
  'tiny-gemma3': {
    arch: 'gemma3',
    name: 'tiny-gemma3',
    description: 'small gemma3 for tests: 5 sliding-window layers (window 8) to 1 global, one KV head, tied',
    shape: {
      nEmbd: 64,
      nLayer: 6,
      nHead: 4,
      nHeadKv: 1,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      headDim: 32,
      slidingWindow: 8,
      swaPattern: 6,
      ropeFreqBase: 1e6,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-gemma-embedding': {
    arch: 'gemma-embedding',
    name: 'tiny-gemma-embedding',
    description: 'small EmbeddingGemma for tests: symmetric window 8 on 3 of 4 layers, mean pooling, dense 64→96→64',
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 1,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      headDim: 32,
      slidingWindow: 8,
      swaPattern: 4,
      ropeFreqBase: 1e6,
      poolingType: 1,
      denseDim: 96,
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-gemma4': {
    arch: 'gemma4',
    name: 'tiny-gemma4',
    description:
      'small gemma4 (E2B-like) for tests: per-layer embeddings, 2 shared-KV layers, full layers without attn_v, layer output scales',
    shape: {
      nEmbd: 64,
      nLayer: 6,
      nHead: 4,
      nHeadKv: 1,
      nHeadKvSwa: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      headDim: 32,
      headDimSwa: 16,
      ropeDim: 32,
      ropeDimSwa: 16,
      slidingWindow: 8,
      swaPattern: [true, false, true, false, true, false],
      ropeFreqBase: 1e6,
      finalSoftcap: 30,
      sharedKvLayers: 2,
      embdPerLayer: 32,
      fullLayersWithoutV: true,
      layerOutputScale: true,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-spm',
  },
  // Gemma 4 26B-A4B's layer kinds at a tiny size: every layer's feed-forward is a dense
  // GeGLU (the shared expert) beside routed GeGLU experts, each branch with its own norms;
  // full layers without attn_v, layer output scales, final soft-cap, no per-layer
  // embeddings or shared KV.
  'tiny-gemma4-moe': {
    arch: 'gemma4',
    name: 'tiny-gemma4-moe',
    description:
      'small gemma4 mixture of experts (26B-A4B-like) for tests: 8 experts of 32 rows, top-2, beside a dense GeGLU of 96; fused gate_up stacks, per-expert down scales',
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 1,
      nHeadKvSwa: 2,
      nFf: 96,
      nVocab: 512,
      nCtxTrain: 2048,
      headDim: 32,
      headDimSwa: 16,
      ropeDim: 32,
      ropeDimSwa: 16,
      slidingWindow: 8,
      swaPattern: [true, false, true, false],
      ropeFreqBase: 1e6,
      finalSoftcap: 30,
      fullLayersWithoutV: true,
      layerOutputScale: true,
      // (26B-A4B ties them; a separate output matrix gives these random weights less repetitive greedy text)
      tiedEmbeddings: false,
      // a decisive router (logits of std ~2), as trained ones are: near-ties between experts,
      // which any rounding difference flips, stay rare
      experts: { nExpert: 8, nUsed: 2, nFf: 32, routerStd: 2, gateUpFused: true, downScale: true },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-phi3': {
    arch: 'phi3',
    // (a general.name with "phi3" or "phi-3" makes llama.cpp look up Phi-3's special tokens)
    name: 'tiny-phi',
    description:
      'small phi3 for tests: LongRoPE factors (original context 512), partial rotary 3/4, a sliding window key',
    shape: {
      nEmbd: 128,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 160,
      nVocab: 512,
      nCtxTrain: 4096,
      ropeDim: 24,
      longRope: { nCtxOrig: 512, attnFactor: 1.19 },
      slidingWindow: 16,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-smollm3': {
    arch: 'smollm3',
    name: 'tiny-smollm3',
    description: 'small smollm3 for tests: NoPE on every 4th layer, 512-token BPE vocab',
    shape: { nEmbd: 64, nLayer: 4, nHead: 4, nHeadKv: 2, nFf: 128, nVocab: 512, nCtxTrain: 2048, ropeFreqBase: 5e6 },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-qwen35': {
    arch: 'qwen35',
    name: 'tiny-qwen35',
    description:
      'small qwen35 for tests: 3 Gated DeltaNet layers to 1 gated attention layer, 2 key / 4 value heads, partial rotary 8 of 32',
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      headDim: 32,
      ropeDim: 8,
      ropeFreqBase: 1e7,
      normEps: 1e-6,
      ropeSections: [2, 1, 1, 0],
      ssm: { dConv: 4, dInner: 64, dState: 16, nHead: 4, nGroup: 2 },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-lfm2': {
    arch: 'lfm2',
    name: 'tiny-lfm2',
    description: 'small lfm2 for tests: 3 short-convolution layers (length 3) and 1 attention layer, tied',
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      ropeFreqBase: 1e6,
      layerKinds: 'RRAR',
      shortConvL: 3,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-granitehybrid': {
    arch: 'granitehybrid',
    name: 'tiny-granitehybrid',
    description: "small granitehybrid for tests: 3 Mamba-2 layers and 1 attention layer, Granite's multipliers",
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      layerKinds: 'RRAR',
      ssm: { dConv: 4, dInner: 128, dState: 16, nHead: 8, nGroup: 1 },
      granite: { embeddingScale: 4, residualScale: 0.5, logitScale: 2, attentionScale: 0.1 },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-nemotron-h': {
    arch: 'nemotron_h',
    name: 'tiny-nemotron-h',
    description:
      'small nemotron_h for tests: Mamba-2 (2 groups), squared-ReLU feed-forward and RoPE-less attention layers',
    shape: {
      nEmbd: 64,
      nLayer: 6,
      nHead: 4,
      nHeadKv: 2,
      headDim: 16,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      layerKinds: 'RFAFRF',
      ssm: { dConv: 4, dInner: 128, dState: 16, nHead: 8, nGroup: 2 },
    },
    vocabKind: 'synthetic-spm',
  },
  // The mixtures of experts of the recurrent hybrids at test size (their real shapes: Qwen3.5-35B-A3B
  // 256 experts top-8 of 512 rows and a gated shared expert of 512; LFM2-8B-A1B 32 experts
  // top-4 of 1792 rows after 2 dense layers, sigmoid scores with a selection bias; Granite
  // 4.0-H-Tiny 64 experts top-6 of 512 rows and a shared expert of 1024; Nemotron 3 Nano
  // 30B-A3B 128 experts top-6 of 1856 squared-ReLU rows, a shared expert of 3712, weights
  // renormalised and scaled by 2.5). Routers of logit std ~2, decisive as trained ones are.
  'tiny-qwen35moe': {
    arch: 'qwen35moe',
    name: 'tiny-qwen35moe',
    description:
      'small qwen35moe for tests: tiny-qwen35 with 8 experts of 32 rows, top-2, and a sigmoid-gated shared expert of 64',
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      headDim: 32,
      ropeDim: 8,
      ropeFreqBase: 1e7,
      normEps: 1e-6,
      ropeSections: [2, 1, 1, 0],
      ssm: { dConv: 4, dInner: 64, dState: 16, nHead: 4, nGroup: 2 },
      experts: { nExpert: 8, nUsed: 2, nFf: 32, nShared: 64, routerStd: 0.25 },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-lfm2moe': {
    arch: 'lfm2moe',
    name: 'tiny-lfm2moe',
    description:
      'small lfm2moe for tests: 3 short-convolution layers and 1 attention layer, a dense first layer, then 8 experts of 32 rows, top-2, sigmoid scores with a selection bias',
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 2,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      ropeFreqBase: 1e6,
      layerKinds: 'RRAR',
      shortConvL: 3,
      tiedEmbeddings: true,
      experts: { nExpert: 8, nUsed: 2, nFf: 32, nDenseLead: 1, gating: 'sigmoid', routerStd: 0.25 },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-granitehybrid-moe': {
    arch: 'granitehybrid',
    name: 'tiny-granitehybrid-moe',
    description:
      "small granitehybrid with experts (4.0-H-Tiny-like) for tests: 3 Mamba-2 layers and 1 attention layer, 8 experts of 32 rows, top-2, a shared expert of 64, Granite's multipliers",
    shape: {
      nEmbd: 64,
      nLayer: 4,
      nHead: 4,
      nHeadKv: 2,
      nFf: 32,
      nVocab: 512,
      nCtxTrain: 2048,
      layerKinds: 'RRAR',
      ssm: { dConv: 4, dInner: 128, dState: 16, nHead: 8, nGroup: 1 },
      granite: { embeddingScale: 4, residualScale: 0.5, logitScale: 2, attentionScale: 0.1 },
      experts: { nExpert: 8, nUsed: 2, nFf: 32, nShared: 64, routerStd: 0.25 },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-nemotron-h-moe': {
    arch: 'nemotron_h_moe',
    name: 'tiny-nemotron-h-moe',
    description:
      'small nemotron_h_moe for tests: Mamba-2 (2 groups), attention and expert layers (8 squared-ReLU experts of 32 rows, top-2, sigmoid with a selection bias, weights renormalised and scaled by 2.5, a shared expert of 64)',
    shape: {
      nEmbd: 64,
      nLayer: 6,
      nHead: 4,
      nHeadKv: 2,
      headDim: 16,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 2048,
      layerKinds: 'RFAFRF',
      ssm: { dConv: 4, dInner: 128, dState: 16, nHead: 8, nGroup: 2 },
      experts: {
        nExpert: 8,
        nUsed: 2,
        nFf: 32,
        nShared: 64,
        weightsNorm: true,
        weightsScale: 2.5,
        routerStd: 0.25,
      },
    },
    vocabKind: 'synthetic-spm',
  },
  // Qwen/Qwen3.5-0.8B (model card and config): hidden 1024, 24 layers in 6 × (3 Gated
  // DeltaNet + 1 gated attention); attention 8 query / 2 KV heads of 256, partial rotary
  // 0.25 (64 dims), rope_theta 1e7, mrope sections [11, 11, 10]; DeltaNet 16 key and 16
  // value heads of 128, conv kernel 4; intermediate 3584; vocab 248320; rms_norm_eps 1e-6;
  // tied embeddings.
  'qwen3.5-0.8b': {
    arch: 'qwen35',
    name: 'Qwen3.5-0.8B (random weights)',
    description:
      "Qwen3.5-0.8B's shape: 1024 wide, 24 layers (18 Gated DeltaNet, 6 attention 8/2 × 256), n_ff 3584, vocab 248320, tied",
    shape: {
      nEmbd: 1024,
      nLayer: 24,
      nHead: 8,
      nHeadKv: 2,
      nFf: 3584,
      nVocab: 248320,
      nCtxTrain: 262144,
      headDim: 256,
      ropeDim: 64,
      ropeFreqBase: 1e7,
      normEps: 1e-6,
      ropeSections: [11, 11, 10, 0],
      ssm: { dConv: 4, dInner: 2048, dState: 128, nHead: 16, nGroup: 16 },
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-bpe',
  },
  // LiquidAI/LFM2-1.2B config.json: hidden 2048, 16 layers, attention at layers 2, 5, 8, 10,
  // 12, 14 (32 heads, 8 KV heads of 64), the others short convolutions (conv_L_cache 3),
  // intermediate 8192 (block_ff_dim 12288 auto-adjusted), vocab 65536, rope_theta 1e6,
  // norm_eps 1e-5, tied embeddings.
  'lfm2-1.2b': {
    arch: 'lfm2',
    name: 'LFM2-1.2B (random weights)',
    description:
      "LFM2-1.2B's shape: 2048 wide, 16 layers (10 short convolutions, 6 attention 32/8), n_ff 8192, vocab 65536",
    shape: {
      nEmbd: 2048,
      nLayer: 16,
      nHead: 32,
      nHeadKv: 8,
      nFf: 8192,
      nVocab: 65536,
      nCtxTrain: 128000,
      ropeFreqBase: 1e6,
      normEps: 1e-5,
      layerKinds: 'RRARRARRARARARAR',
      shortConvL: 3,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-bpe',
  },
  // google/gemma-3-1b-it config.json: hidden 1152, 26 layers, 4 heads, 1 KV head, head_dim
  // 256, intermediate 6912, vocab 262144, sliding_window 512 (pattern 6), rope_theta 1e6 /
  // rope_local_base_freq 1e4, rms_norm_eps 1e-6, max_position_embeddings 32768, tied.
  'gemma-3-1b': {
    arch: 'gemma3',
    name: 'Gemma-3-1B (random weights)',
    description: "Gemma 3 1B's shape: 1152 wide, 26 layers, 4/1 heads of 256, n_ff 6912, window 512, vocab 262144",
    shape: {
      nEmbd: 1152,
      nLayer: 26,
      nHead: 4,
      nHeadKv: 1,
      nFf: 6912,
      nVocab: 262144,
      nCtxTrain: 32768,
      headDim: 256,
      slidingWindow: 512,
      swaPattern: 6,
      ropeFreqBase: 1e6,
      ropeFreqBaseSwa: 1e4,
      normEps: 1e-6,
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-spm',
  },
  // microsoft/Phi-4-mini-instruct config.json: hidden 3072, 32 layers, 24 heads, 8 KV heads,
  // intermediate 8192, vocab 200064, partial_rotary_factor 0.75 (96 of 128 dims), rope_theta
  // 1e4, LongRoPE (original 4096 of 131072 positions), rms_norm_eps 1e-5, tied.
  'phi-4-mini': {
    arch: 'phi3',
    name: 'Phi-4-mini (random weights)',
    description: "Phi-4-mini's shape: 3072 wide, 32 layers, 24/8 heads, n_ff 8192, partial rotary 0.75, vocab 200064",
    shape: {
      nEmbd: 3072,
      nLayer: 32,
      nHead: 24,
      nHeadKv: 8,
      nFf: 8192,
      nVocab: 200064,
      nCtxTrain: 131072,
      ropeDim: 96,
      ropeFreqBase: 10000,
      normEps: 1e-5,
      longRope: { nCtxOrig: 4096, attnFactor: 1.1902380714238083 },
      tiedEmbeddings: true,
    },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-qwen3moe': {
    arch: 'qwen3moe',
    name: 'tiny-qwen3moe',
    description: 'small Qwen3 mixture of experts for tests: 8 experts, top-2, renormalised',
    shape: {
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 64,
      nVocab: 512,
      nCtxTrain: 512,
      headDim: 16,
      experts: { nExpert: 8, nUsed: 2, nFf: 32 },
    },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-qwen2moe': {
    arch: 'qwen2moe',
    name: 'tiny-qwen2moe',
    description: 'small Qwen2 mixture of experts for tests: 4 experts, top-2, a sigmoid-gated shared expert',
    shape: {
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 96,
      nVocab: 512,
      nCtxTrain: 512,
      experts: { nExpert: 4, nUsed: 2, nFf: 32, nShared: 64 },
    },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-mixtral': {
    arch: 'llama',
    name: 'tiny-mixtral',
    description: 'small Mixtral-style llama for tests: 8 experts of n_ff rows, top-2',
    shape: {
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 64,
      nVocab: 512,
      nCtxTrain: 512,
      experts: { nExpert: 8, nUsed: 2, nFf: 64 },
    },
    vocabKind: 'synthetic-spm',
  },
  'tiny-deepseek2': {
    arch: 'deepseek2',
    name: 'tiny-deepseek2',
    description:
      'small DeepSeek-V3/GLM-style model for tests: latent attention with q-LoRA, a dense first layer, sigmoid routing with a selection bias, scaled weights, a shared expert',
    shape: {
      nEmbd: 64,
      nLayer: 3,
      nHead: 4,
      nHeadKv: 1,
      nFf: 128,
      nVocab: 512,
      nCtxTrain: 512,
      headDim: 40,
      ropeDim: 8,
      normEps: 1e-6,
      mla: { qLoraRank: 32, kvLoraRank: 32, headK: 24, headV: 16 },
      experts: {
        nExpert: 8,
        nUsed: 2,
        nFf: 32,
        nShared: 1,
        nDenseLead: 1,
        gating: 'sigmoid',
        weightsScale: 2.5,
        weightsNorm: true,
        probsBias: true,
      },
    },
    vocabKind: 'synthetic-bpe',
  },
  'tiny-gpt-oss': {
    arch: 'gpt-oss',
    name: 'tiny-gpt-oss',
    description: 'small gpt-oss for tests: sinks, sliding window 8 on even layers, YaRN, 4 experts top-2',
    shape: {
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      nFf: 64,
      nVocab: 512,
      nCtxTrain: 4096,
      headDim: 16,
      ropeFreqBase: 150000,
      experts: { nExpert: 4, nUsed: 2, nFf: 64 },
      yarn: { factor: 32, originalContext: 128 },
      slidingWindow: 8,
    },
    vocabKind: 'synthetic-bpe',
  },
  // Qwen/Qwen3-30B-A3B config.json: hidden 2048, 48 layers, 32 heads, 4 KV heads, head_dim
  // 128, intermediate 6144, moe_intermediate 768, 128 experts, 8 per token, vocab 151936,
  // max_position_embeddings 40960, rope_theta 1e6, rms_norm_eps 1e-6, untied (30.5B
  // parameters, 3.3B active). `--layers` keeps the per-layer shape.
  'qwen3-30b-a3b': {
    arch: 'qwen3moe',
    name: 'Qwen3-30B-A3B (random weights)',
    description:
      "Qwen3-30B-A3B's shape: 2048 wide, 48 layers, 32/4 heads of 128, 128 experts of 768, top-8, vocab 151936",
    shape: {
      nEmbd: 2048,
      nLayer: 48,
      nHead: 32,
      nHeadKv: 4,
      nFf: 6144,
      nVocab: 151936,
      nCtxTrain: 40960,
      headDim: 128,
      ropeFreqBase: 1e6,
      normEps: 1e-6,
      experts: { nExpert: 128, nUsed: 8, nFf: 768 },
    },
    vocabKind: 'synthetic-bpe',
  },
  // openai/gpt-oss-20b config.json: hidden 2880, 24 layers, 64 heads, 8 KV heads, head_dim
  // 64, 32 experts of 2880, 4 per token, sliding_window 128 (even layers), vocab 201088,
  // rope_theta 150000 with YaRN (factor 32, original 4096), max_position_embeddings 131072
  // (20.9B parameters, 3.6B active; experts in MXFP4 as released).
  'gpt-oss-20b': {
    arch: 'gpt-oss',
    name: 'gpt-oss-20b (random weights)',
    description:
      "gpt-oss-20b's shape: 2880 wide, 24 layers, 64/8 heads of 64, 32 experts of 2880, top-4, window 128, vocab 201088",
    shape: {
      nEmbd: 2880,
      nLayer: 24,
      nHead: 64,
      nHeadKv: 8,
      nFf: 2880,
      nVocab: 201088,
      nCtxTrain: 131072,
      headDim: 64,
      ropeFreqBase: 150000,
      normEps: 1e-5,
      experts: { nExpert: 32, nUsed: 4, nFf: 2880 },
      yarn: { factor: 32, originalContext: 4096 },
      slidingWindow: 128,
    },
    vocabKind: 'synthetic-bpe',
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
  // (a deep copy: experts, mla and yarn are objects a caller may change)
  const shape: ModelShape = structuredClone(p.shape);
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
