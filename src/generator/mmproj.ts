// Seeded multimodal projector files ("mmproj": general.architecture = clip), named and
// shaped as llama.cpp's mtmd loads them (tools/mtmd/clip.cpp load_hparams / load_tensors,
// clip-impl.h): a vision (`v.*`) or audio (`a.*`) encoder and its projector (`mm.*`), for
// the projector types below. Values are drawn as the text models' (fill.ts: seeded by the
// seed and each tensor's name), so a spec always gives the same bytes.
import { statSync } from 'node:fs';
import { GGMLType } from '../ggml/types.js';
import { GGUFValueType, GGUFWriter } from '../gguf/index.js';
import { tensorBytes } from './fill.js';
import type { PlannedTensor, TensorInit } from './layout.js';
import { TokenType, type VocabKV } from './vocab.js';

/** The clip.projector_type values the generator writes. */
export const MMPROJ_TYPES = [
  'gemma3',
  'mlp',
  'ldp',
  'ldpv2',
  'pixtral',
  'internvl',
  'qwen2vl_merger',
  'qwen2.5vl_merger',
  'qwen3vl_merger',
  'gemma4v',
  'qwen2a',
  'ultravox',
  'voxtral',
  'gemma4a',
] as const;
export type MmprojType = (typeof MMPROJ_TYPES)[number];

/** Audio projectors (the rest are vision ones). */
export function isAudioProjector(t: MmprojType): boolean {
  return t === 'qwen2a' || t === 'ultravox' || t === 'voxtral' || t === 'gemma4a';
}

export interface MmprojShape {
  /** Encoder width, layers, heads and feed-forward rows (n_ff must differ from n_embd: see planEncoder). */
  nEmbd: number;
  nLayer: number;
  nHead: number;
  nFf: number;
  /** The text model's width (the projector's output). */
  nEmbdText: number;
  /** Vision: image side the encoder was trained at (fixed-size projectors resize to it) and patch side. */
  imageSize?: number;
  patchSize?: number;
  /** gemma3, internvl: `clip.vision.projector.scale_factor` (absent: mtmd's default). */
  scaleFactor?: number;
  /** mlp: `clip.vision.image_grid_pinpoints` (LLaVA-1.6 tiles; absent: one padded square). */
  gridPinpoints?: number[];
  /** pixtral: `clip.vision.spatial_merge_size` with Mistral Small 3.1's patch merger (mm.input_norm, mm.patch_merger). */
  spatialMerge?: number;
  /** gemma4v: clippable linears, [input limit, output limit]: every layer linear and the projection get NAME.input_min/max = ∓/±input and NAME.output_min/max = ∓/±output scalars. */
  clamp?: [number, number];
  /** internvl: `clip.vision.preproc_max_tiles`. */
  maxTiles?: number;
  /** qwen2.5vl_merger: `clip.vision.n_wa_pattern` (every n-th layer attends fully, the others in windows). */
  windowPattern?: number;
  /** qwen3vl_merger: the learned position grid's side (bilinear-resized to the patch grid) and the layers with a deepstack merger (their features go to the text model's first layers). */
  posGrid?: number;
  deepstackLayers?: number[];
  /** Audio: mel bins (`clip.audio.num_mel_bins`) and frames stacked per projector input (`projector.stack_factor`). */
  nMel?: number;
  stackFactor?: number;
  /** gemma4a: the subsampling convolutions' channels and the encoder output's width (a.pre_encode.out; absent: none). */
  convChannels?: [number, number];
  outProj?: number;
  /** gemma4a: write clamp bounds (Gemma 4's clippable linears) for some weights. */
  clamped?: boolean;
}

export interface MmprojSpec {
  projector: MmprojType;
  shape: MmprojShape;
  seed: number;
  name?: string;
  /**
   * A second, audio encoder in the same file (Gemma 4's, Qwen2.5-Omni's): the projector types
   * then go in clip.vision.projector_type and clip.audio.projector_type (or, with `omni`, as
   * Qwen2.5-Omni's converter writes them, one clip.projector_type = 'qwen2.5o' for a
   * qwen2.5vl_merger + qwen2a pair).
   */
  audio?: { projector: MmprojType; shape: MmprojShape; omni?: boolean };
  /**
   * F32 (default), F16 or Q4_0 for the 2D+ weights (norms, biases and embeddings rows stay
   * F32, as the converters write; Q4_0 takes the matrices with rows of whole 32-blocks, the
   * rest stay F32: for shapes that would be gigabytes otherwise).
   */
  fileType?: 'F32' | 'F16' | 'Q4_0';
}

const NORM: TensorInit = { mean: 1, std: 0.1 };
const BIAS: TensorInit = { mean: 0, std: 0.1 };
const EMBD: TensorInit = { mean: 0, std: 0.5 };
const linear = (fanIn: number): TensorInit => ({ mean: 0, std: 1 / Math.sqrt(fanIn) });

const SIGLIP_MEAN = [0.5, 0.5, 0.5];
const CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073];
const CLIP_STD = [0.26862954, 0.26130258, 0.27577711];
const IMAGENET_MEAN = [0.485, 0.456, 0.406];
const IMAGENET_STD = [0.229, 0.224, 0.225];

export interface MmprojPlan {
  kv: VocabKV[];
  tensors: PlannedTensor[];
}

/** The keys and tensors of the projector `spec` describes (throws naming a bad shape value). */
export function planMmproj(spec: MmprojSpec): MmprojPlan {
  if (!spec.audio) return planOne(spec);
  const { projector: ap, shape, omni } = spec.audio;
  if (isAudioProjector(spec.projector) || !isAudioProjector(ap)) {
    throw new RangeError(
      `a dual projector file takes a vision projector and an audio one (got ${spec.projector}, ${ap})`,
    );
  }
  if (omni && (spec.projector !== 'qwen2.5vl_merger' || ap !== 'qwen2a')) {
    throw new RangeError(`qwen2.5o files pair qwen2.5vl_merger with qwen2a (got ${spec.projector}, ${ap})`);
  }
  const v = planOne({ ...spec, audio: undefined });
  const a = planOne({ ...spec, projector: ap, shape, audio: undefined });
  // the vision plan's keys with the projector types per encoder, then the audio encoder's own
  const kv: VocabKV[] = [];
  const str = (key: string, value: string) => kv.push({ key, type: GGUFValueType.STRING, value });
  for (const e of v.kv) {
    if (e.key === 'clip.projector_type') {
      if (omni) str('clip.projector_type', 'qwen2.5o');
      else {
        str('clip.vision.projector_type', spec.projector);
        str('clip.audio.projector_type', ap);
      }
    } else if (e.key === 'clip.has_audio_encoder') kv.push({ ...e, value: true });
    else kv.push(e);
  }
  const have = new Set(kv.map((e) => e.key));
  for (const e of a.kv) if (!have.has(e.key) && e.key !== 'clip.projector_type') kv.push(e);
  return { kv, tensors: [...v.tensors, ...a.tensors] };
}

function planOne(spec: MmprojSpec): MmprojPlan {
  const s = spec.shape;
  const p = spec.projector;
  if (!(MMPROJ_TYPES as readonly string[]).includes(p)) {
    throw new RangeError(`unknown projector type '${p}' (the generator writes ${MMPROJ_TYPES.join(', ')})`);
  }
  for (const k of ['nEmbd', 'nLayer', 'nHead', 'nFf', 'nEmbdText'] as const) {
    if (!(Number.isSafeInteger(s[k]) && s[k] > 0)) throw new RangeError(`mmproj shape: ${k} = ${s[k]}`);
  }
  if (s.nEmbd % s.nHead !== 0)
    throw new RangeError(`mmproj shape: nEmbd ${s.nEmbd} is not a multiple of nHead ${s.nHead}`);
  // clip.cpp swaps ffn_up/ffn_down of some projectors when ffn_down's rows equal n_embd
  if (s.nFf === s.nEmbd) throw new RangeError(`mmproj shape: nFf must differ from nEmbd (${s.nEmbd})`);
  const audio = isAudioProjector(p);
  const m = audio ? 'audio' : 'vision';
  const kv: VocabKV[] = [];
  const u32 = (key: string, value: number) => kv.push({ key, type: GGUFValueType.UINT32, value });
  const f32 = (key: string, value: number) => kv.push({ key, type: GGUFValueType.FLOAT32, value });
  const bool = (key: string, value: boolean) => kv.push({ key, type: GGUFValueType.BOOL, value });
  const str = (key: string, value: string) => kv.push({ key, type: GGUFValueType.STRING, value });
  const f32s = (key: string, items: number[]) =>
    kv.push({
      key,
      type: GGUFValueType.ARRAY,
      value: { itemType: GGUFValueType.FLOAT32, items: Float32Array.from(items) },
    });
  const i32s = (key: string, items: number[]) =>
    kv.push({
      key,
      type: GGUFValueType.ARRAY,
      value: { itemType: GGUFValueType.INT32, items: Int32Array.from(items) },
    });
  const tensors: PlannedTensor[] = [];
  const add = (name: string, dims: number[], init: TensorInit) => tensors.push({ name, dims, init });

  str('general.architecture', 'clip');
  str('general.name', spec.name ?? `generated-${p}-mmproj-${s.nEmbd}x${s.nLayer}`);
  u32('general.file_type', spec.fileType === 'F16' ? 1 : spec.fileType === 'Q4_0' ? 2 : 0);
  str('clip.projector_type', p);
  bool('clip.has_vision_encoder', !audio);
  bool('clip.has_audio_encoder', audio);
  bool('clip.has_text_encoder', false);
  u32(`clip.${m}.embedding_length`, s.nEmbd);
  u32(`clip.${m}.feed_forward_length`, s.nFf);
  u32(`clip.${m}.block_count`, s.nLayer);
  u32(`clip.${m}.attention.head_count`, s.nHead);
  f32(`clip.${m}.attention.layer_norm_epsilon`, audio ? 1e-5 : 1e-6);
  u32(`clip.${m}.projection_dim`, s.nEmbdText);

  const E = s.nEmbd;
  const T = s.nEmbdText;
  if (p === 'gemma4a') {
    planGemma4a(add, u32, s);
    return { kv, tensors };
  }
  if (audio) {
    const nMel = s.nMel ?? 128;
    const stack = s.stackFactor ?? (p === 'ultravox' ? 8 : 4);
    u32('clip.audio.num_mel_bins', nMel);
    if (p !== 'qwen2a') u32('clip.audio.projector.stack_factor', stack);
    // Whisper's encoder: two convolutions, learned positions, pre-norm layers without a k bias
    add('a.conv1d.1.weight', [3, nMel, E], linear(3 * nMel));
    add('a.conv1d.1.bias', [1, E], BIAS);
    add('a.conv1d.2.weight', [3, E, E], linear(3 * E));
    add('a.conv1d.2.bias', [1, E], BIAS);
    add('a.position_embd.weight', [E, 1500], EMBD);
    planLayers(add, 'a', s, { norm: 'layer', kBias: false, gated: false });
    add('a.post_ln.weight', [E], NORM);
    add('a.post_ln.bias', [E], BIAS);
    const inW = E * stack;
    if (p === 'qwen2a') {
      // Qwen2-Audio: frames average-pooled by 2 in the encoder, one linear
      add('mm.a.fc.weight', [E, T], linear(E));
      add('mm.a.fc.bias', [T], BIAS);
    } else if (p === 'ultravox') {
      // rms-norm, linear to 2·n (halves swiglu'd), rms-norm, linear
      const hid = T * 2;
      add('mm.a.norm_pre.weight', [inW], NORM);
      add('mm.a.mlp.1.weight', [inW, hid * 2], linear(inW));
      add('mm.a.norm_mid.weight', [hid], NORM);
      add('mm.a.mlp.2.weight', [hid, T], linear(hid));
    } else {
      add('mm.a.mlp.1.weight', [inW, T], linear(inW));
      add('mm.a.mlp.2.weight', [T, T], linear(T));
    }
    return { kv, tensors };
  }

  const img = s.imageSize ?? 32;
  const patch = s.patchSize ?? 4;
  if (img % patch !== 0) throw new RangeError(`mmproj shape: imageSize ${img} is not a multiple of patchSize ${patch}`);
  u32('clip.vision.image_size', img);
  u32('clip.vision.patch_size', patch);
  const nPatch = (img / patch) ** 2;
  const patchEmbd = () => add('v.patch_embd.weight', [patch, patch, 3, E], linear(patch * patch * 3));
  switch (p) {
    case 'gemma3': {
      f32s('clip.vision.image_mean', SIGLIP_MEAN);
      f32s('clip.vision.image_std', SIGLIP_MEAN);
      bool('clip.use_gelu', true);
      if (s.scaleFactor !== undefined) u32('clip.vision.projector.scale_factor', s.scaleFactor);
      patchEmbd();
      add('v.patch_embd.bias', [E], BIAS);
      add('v.position_embd.weight', [E, nPatch], EMBD);
      planLayers(add, 'v', s, { norm: 'layer', kBias: true, gated: false });
      add('v.post_ln.weight', [E], NORM);
      add('v.post_ln.bias', [E], BIAS);
      add('mm.soft_emb_norm.weight', [E], NORM);
      // used transposed by mtmd: [n_embd_text, n_embd]
      add('mm.input_projection.weight', [T, E], linear(E));
      break;
    }
    case 'ldp':
    case 'ldpv2':
    case 'mlp': {
      // LLaVA: CLIP ViT with a class embedding and a pre-norm, two-layer GELU MLP; MobileVLM
      // V2 (ldpv2): the MLP, a 2x2 average pool and a depthwise 3x3 position conv; MobileVLM
      // (ldp): the MLP and two depthwise-conv blocks (mtmd assumes a 24x24 patch grid for both)
      if (p !== 'mlp' && img / patch !== 24)
        throw new RangeError(`mmproj shape: ${p} needs a 24x24 patch grid (imageSize = 24 x patchSize)`);
      f32s('clip.vision.image_mean', CLIP_MEAN);
      f32s('clip.vision.image_std', CLIP_STD);
      bool('clip.use_gelu', true);
      if (s.gridPinpoints) {
        i32s('clip.vision.image_grid_pinpoints', s.gridPinpoints);
        str('clip.vision.mm_patch_merge_type', 'spatial_unpad');
      }
      add('v.class_embd', [E], EMBD);
      patchEmbd();
      add('v.position_embd.weight', [E, nPatch + 1], EMBD);
      add('v.pre_ln.weight', [E], NORM);
      add('v.pre_ln.bias', [E], BIAS);
      planLayers(add, 'v', s, { norm: 'layer', kBias: true, gated: false });
      const mm = p === 'mlp' ? 'mm.' : 'mm.model.mlp.';
      const [m0, m1] = p === 'ldp' ? [1, 3] : [0, 2];
      add(`${mm}${m0}.weight`, [E, T], linear(E));
      add(`${mm}${m0}.bias`, [T], BIAS);
      add(`${mm}${m1}.weight`, [T, T], linear(T));
      add(`${mm}${m1}.bias`, [T], BIAS);
      if (p === 'ldp') {
        // two blocks: depthwise conv, LayerNorm, squeeze-excitation (fc1 to T/4, fc2), pointwise linear, LayerNorm
        for (const b of [1, 2]) {
          const q = `mm.model.mb_block.${b}.block.`;
          add(`${q}0.0.weight`, [3, 3, 1, T], linear(9));
          add(`${q}0.1.weight`, [T], NORM);
          add(`${q}0.1.bias`, [T], BIAS);
          add(`${q}1.fc1.weight`, [T, T / 4], linear(T));
          add(`${q}1.fc1.bias`, [T / 4], BIAS);
          add(`${q}1.fc2.weight`, [T / 4, T], linear(T / 4));
          add(`${q}1.fc2.bias`, [T], BIAS);
          add(`${q}2.0.weight`, [T, T], linear(T));
          add(`${q}2.1.weight`, [T], NORM);
          add(`${q}2.1.bias`, [T], BIAS);
        }
      }
      if (p === 'ldpv2') {
        add('mm.model.peg.0.weight', [3, 3, 1, T], linear(9));
        add('mm.model.peg.0.bias', [T], BIAS);
      }
      if (s.gridPinpoints) add('v.image_newline', [T], EMBD);
      break;
    }
    case 'pixtral': {
      // 2D RoPE, RMS norms, SiLU-gated feed-forward; one [IMG_BREAK] embedding per row
      f32s('clip.vision.image_mean', CLIP_MEAN);
      f32s('clip.vision.image_std', CLIP_STD);
      bool('clip.use_silu', true);
      patchEmbd();
      add('v.pre_ln.weight', [E], NORM);
      planLayers(add, 'v', s, { norm: 'rms', kBias: false, gated: true, noBias: true });
      const sm = s.spatialMerge;
      if (sm !== undefined) {
        // Mistral Small 3.1: an RMS norm, then each sm x sm block of patches unfolded through a linear
        if (!(Number.isSafeInteger(sm) && sm >= 2)) throw new RangeError(`mmproj shape: spatialMerge = ${sm}`);
        u32('clip.vision.spatial_merge_size', sm);
        add('mm.input_norm.weight', [E], NORM);
        add('mm.patch_merger.weight', [E * sm * sm, E], linear(E * sm * sm));
      }
      add('mm.1.weight', [E, T], linear(E));
      add('mm.1.bias', [T], BIAS);
      add('mm.2.weight', [T, T], linear(T));
      add('mm.2.bias', [T], BIAS);
      add('v.token_embd.img_break', [T], EMBD);
      break;
    }
    case 'internvl': {
      // InternViT: class embedding, layer scales; pixel shuffle, then LayerNorm + GELU MLP
      f32s('clip.vision.image_mean', IMAGENET_MEAN);
      f32s('clip.vision.image_std', IMAGENET_STD);
      bool('clip.use_gelu', true);
      const scale = s.scaleFactor ?? 2;
      u32('clip.vision.projector.scale_factor', scale);
      if (s.maxTiles !== undefined) u32('clip.vision.preproc_max_tiles', s.maxTiles);
      // InternViT-6B (mtmd knows it by its shape): RMS norms, q/k norms over the whole row; its
      // patch bias gets a common offset (mean 1), which RMS norms keep and LayerNorms remove,
      // so that the two give apart outputs on random weights
      const vit6b = E === 3200 && s.nLayer === 45;
      add('v.class_embd', [E], EMBD);
      patchEmbd();
      add('v.patch_embd.bias', [E], vit6b ? { mean: 1, std: 0.1 } : BIAS);
      add('v.position_embd.weight', [E, nPatch + 1], EMBD);
      planLayers(add, 'v', s, {
        norm: vit6b ? 'rms' : 'layer',
        kBias: true,
        gated: false,
        layerScale: true,
        ...(vit6b ? { qkNorm: 'row' as const } : {}),
      });
      const inW = E * scale * scale;
      add('mm.model.mlp.0.weight', [inW], NORM);
      add('mm.model.mlp.0.bias', [inW], BIAS);
      add('mm.model.mlp.1.weight', [inW, T], linear(inW));
      add('mm.model.mlp.1.bias', [T], BIAS);
      add('mm.model.mlp.3.weight', [T, T], linear(T));
      add('mm.model.mlp.3.bias', [T], BIAS);
      break;
    }
    case 'qwen2vl_merger':
    case 'qwen2.5vl_merger': {
      // two temporal patch kernels, 2D M-RoPE; Qwen2-VL: LayerNorm blocks with gelu_quick (no
      // ffn key: mtmd's default); Qwen2.5-VL: RMS norms, SiLU-gated feed-forward, window
      // attention except every n_wa_pattern-th layer; then the 2x2 merger MLP
      const v25 = p === 'qwen2.5vl_merger';
      f32s('clip.vision.image_mean', CLIP_MEAN);
      f32s('clip.vision.image_std', CLIP_STD);
      if (v25) {
        bool('clip.use_silu', true);
        u32('clip.vision.n_wa_pattern', s.windowPattern ?? 2);
      }
      patchEmbd();
      add('v.patch_embd.weight.1', [patch, patch, 3, E], linear(patch * patch * 3));
      planLayers(add, 'v', s, { norm: v25 ? 'rms' : 'layer', kBias: true, gated: v25 });
      add('v.post_ln.weight', [E], NORM);
      if (!v25) add('v.post_ln.bias', [E], BIAS);
      const inW = E * 4;
      add('mm.0.weight', [inW, inW], linear(inW));
      add('mm.0.bias', [inW], BIAS);
      add('mm.2.weight', [inW, T], linear(inW));
      add('mm.2.bias', [T], BIAS);
      break;
    }
    case 'qwen3vl_merger': {
      // two temporal patch kernels with a bias, a learned position grid, LayerNorm blocks with
      // GELU; the 2x2 merger, plus one merger per deepstack layer
      f32s('clip.vision.image_mean', SIGLIP_MEAN);
      f32s('clip.vision.image_std', SIGLIP_MEAN);
      bool('clip.use_gelu', true);
      u32('clip.vision.spatial_merge_size', 2);
      const deep = new Set(s.deepstackLayers ?? []);
      for (const l of deep) {
        if (!(Number.isSafeInteger(l) && l >= 0 && l < s.nLayer))
          throw new RangeError(`mmproj shape: deepstack layer ${l} is not a layer`);
      }
      // (older loaders read which layers have one from this key; newer ones from the tensors)
      kv.push({
        key: 'clip.vision.is_deepstack_layers',
        type: GGUFValueType.ARRAY,
        value: { itemType: GGUFValueType.BOOL, items: Array.from({ length: s.nLayer }, (_, l) => deep.has(l)) },
      });
      patchEmbd();
      add('v.patch_embd.weight.1', [patch, patch, 3, E], linear(patch * patch * 3));
      add('v.patch_embd.bias', [E], BIAS);
      const grid = s.posGrid ?? img / patch;
      add('v.position_embd.weight', [E, grid * grid], EMBD);
      planLayers(add, 'v', s, { norm: 'layer', kBias: true, gated: false, fusedQkv: true });
      const inW = E * 4;
      for (const l of [...deep].sort((a, b) => a - b)) {
        add(`v.deepstack.${l}.norm.weight`, [inW], NORM);
        add(`v.deepstack.${l}.norm.bias`, [inW], BIAS);
        add(`v.deepstack.${l}.fc1.weight`, [inW, inW], linear(inW));
        add(`v.deepstack.${l}.fc1.bias`, [inW], BIAS);
        add(`v.deepstack.${l}.fc2.weight`, [inW, T], linear(inW));
        add(`v.deepstack.${l}.fc2.bias`, [T], BIAS);
      }
      add('v.post_ln.weight', [E], NORM);
      add('v.post_ln.bias', [E], BIAS);
      add('mm.0.weight', [inW, inW], linear(inW));
      add('mm.0.bias', [inW], BIAS);
      add('mm.2.weight', [inW, T], linear(inW));
      add('mm.2.bias', [T], BIAS);
      break;
    }
    case 'gemma4v': {
      // Gemma 4's ViT: x and y position tables, 2D RoPE, RMS norms with q/k norms and post
      // norms, GELU-gated feed-forward; avg-pool n_merge x n_merge, RMS norm, projection
      f32s('clip.vision.image_mean', SIGLIP_MEAN);
      f32s('clip.vision.image_std', SIGLIP_MEAN);
      bool('clip.use_gelu', true);
      if (s.scaleFactor !== undefined) u32('clip.vision.projector.scale_factor', s.scaleFactor);
      patchEmbd();
      const grid = s.posGrid ?? 64;
      add('v.position_embd.weight', [E, grid, 2], EMBD);
      planLayers(add, 'v', s, {
        norm: 'rms',
        kBias: false,
        gated: true,
        noBias: true,
        qkNorm: 'head',
        postNorms: true,
      });
      add('mm.input_projection.weight', [E, T], linear(E));
      if (s.clamp) {
        // Gemma4ClippableLinear: each linear's four scalars after its weight
        const [inp, out] = s.clamp;
        if (!(inp > 0 && out > 0)) throw new RangeError(`mmproj shape: clamp = [${s.clamp}]`);
        const linears = tensors.filter((t) =>
          /^(v\.blk\.\d+\.(attn_(q|k|v|out)|ffn_(gate|up|down))|mm\.input_projection)\.weight$/.test(t.name),
        );
        const at = (t: PlannedTensor) => tensors.indexOf(t) + 1;
        for (const w of linears) {
          const base = w.name.slice(0, -'.weight'.length);
          const scalar = (key: string, v: number): PlannedTensor => ({
            name: `${base}.${key}`,
            dims: [1],
            init: { mean: v, std: 0 },
          });
          tensors.splice(
            at(w),
            0,
            scalar('input_max', inp),
            scalar('input_min', -inp),
            scalar('output_max', out),
            scalar('output_min', -out),
          );
        }
      }
      break;
    }
    default:
      throw new RangeError(`projector '${p}' is an audio one`);
  }
  return { kv, tensors };
}

/**
 * Gemma 4's audio conformer (clip.cpp's gemma4a tensors, with every optional one): two 3x3
 * stride-2 subsampling convolutions with bias and channel norm, the input projection; per
 * layer two half-step FFNs with pre and post norms, attention with its pre/post norms,
 * per-dimension q/k scales and the relative-position projection, the light convolution
 * (pw1 to 2·E for the GLU, depthwise width 5 F32 [5, E] as ggml_ssm_conv takes it, pw2), ln2,
 * with `clamped`, bounds for attn_q's input and ffn_up's output;
 * the output projection, soft-embedding norm and projection to the text width.
 */
function planGemma4a(
  add: (name: string, dims: number[], init: TensorInit) => void,
  u32: (key: string, value: number) => void,
  s: MmprojShape,
): void {
  const E = s.nEmbd;
  const F = s.nFf;
  const D = E / s.nHead;
  const nMel = s.nMel ?? 128;
  const [c0, c1] = s.convChannels ?? [8, 8];
  u32('clip.audio.num_mel_bins', nMel);
  const half = (n: number) => Math.floor((n - 1) / 2) + 1;
  for (const [i, ic, oc] of [
    [0, 1, c0],
    [1, c0, c1],
  ] as const) {
    add(`a.conv1d.${i}.weight`, [3, 3, ic, oc], linear(9 * ic));
    add(`a.conv1d.${i}.bias`, [1, 1, oc], BIAS);
    add(`a.conv1d.${i}.norm.weight`, [oc], NORM);
  }
  const flat = c1 * half(half(nMel));
  add('a.input_projection.weight', [flat, E], linear(flat));
  add('a.input_projection.bias', [E], BIAS);
  for (let l = 0; l < s.nLayer; l++) {
    const b = `a.blk.${l}.`;
    const ffn = (x: string) => {
      add(`${b}ffn_norm${x}.weight`, [E], NORM);
      add(`${b}ffn_up${x}.weight`, [E, F], linear(E));
      add(`${b}ffn_down${x}.weight`, [F, E], linear(F));
      add(`${b}ffn_post_norm${x}.weight`, [E], NORM);
    };
    ffn('');
    add(`${b}attn_pre_norm.weight`, [E], NORM);
    for (const x of ['attn_q', 'attn_k', 'attn_v', 'attn_out', 'attn_k_rel']) add(`${b}${x}.weight`, [E, E], linear(E));
    add(`${b}attn_out.bias`, [E], BIAS);
    if (s.clamped) {
      // clippable linears' bounds (scalars): q's input and the FFN up-projection's output,
      // tight enough to clip
      add(`${b}attn_q.input_min`, [1], { mean: -1.5, std: 0 });
      add(`${b}attn_q.input_max`, [1], { mean: 1.5, std: 0 });
      add(`${b}ffn_up.output_min`, [1], { mean: -1, std: 0 });
      add(`${b}ffn_up.output_max`, [1], { mean: 1, std: 0 });
    }
    add(`${b}per_dim_scale.weight`, [D], NORM);
    add(`${b}per_dim_k_scale.weight`, [D], NORM);
    add(`${b}attn_post_norm.weight`, [E], NORM);
    add(`${b}conv_norm.weight`, [E], NORM);
    add(`${b}conv_pw1.weight`, [E, 2 * E], linear(E));
    add(`${b}conv_dw.weight`, [5, E], linear(5));
    add(`${b}conv_dw.bias`, [E], BIAS);
    add(`${b}norm_conv.weight`, [E], NORM);
    add(`${b}conv_pw2.weight`, [E, E], linear(E));
    ffn('_1');
    add(`${b}ln2.weight`, [E], NORM);
  }
  let out = E;
  if (s.outProj !== undefined) {
    out = s.outProj;
    add('a.pre_encode.out.weight', [E, out], linear(E));
    add('a.pre_encode.out.bias', [out], BIAS);
  }
  add('mm.a.soft_emb_norm.weight', [out], NORM);
  add('mm.a.input_projection.weight', [out, s.nEmbdText], linear(out));
}

interface LayerOpts {
  norm: 'layer' | 'rms';
  kBias: boolean;
  gated: boolean;
  /** No biases at all (pixtral). */
  noBias?: boolean;
  /** ls1 / ls2 per-channel scales (InternViT). */
  layerScale?: boolean;
  /** One attn_qkv (q, k, v rows in that order) instead of three (Qwen3-VL). */
  fusedQkv?: boolean;
  /** Norms of q and k, per head (Gemma 4) or over the whole row (InternViT-6B); norms after attention and feed-forward (Gemma 4). */
  qkNorm?: 'head' | 'row';
  postNorms?: boolean;
}

/** The encoder blocks: pre-norm attention and feed-forward, as clip.cpp's build_vit reads them. */
function planLayers(
  add: (name: string, dims: number[], init: TensorInit) => void,
  pre: 'v' | 'a',
  s: MmprojShape,
  o: LayerOpts,
): void {
  const E = s.nEmbd;
  const F = s.nFf;
  for (let l = 0; l < s.nLayer; l++) {
    const b = `${pre}.blk.${l}.`;
    const norm = (n: string) => {
      add(`${b}${n}.weight`, [E], NORM);
      if (o.norm === 'layer') add(`${b}${n}.bias`, [E], BIAS);
    };
    norm('ln1');
    if (o.fusedQkv) {
      add(`${b}attn_qkv.weight`, [E, 3 * E], linear(E));
      add(`${b}attn_qkv.bias`, [3 * E], BIAS);
    }
    for (const x of o.fusedQkv ? ['attn_out'] : ['attn_q', 'attn_k', 'attn_v', 'attn_out']) {
      add(`${b}${x}.weight`, [E, E], linear(E));
      if (!o.noBias && (x !== 'attn_k' || o.kBias)) add(`${b}${x}.bias`, [E], BIAS);
    }
    if (o.qkNorm) {
      const w = o.qkNorm === 'head' ? E / s.nHead : E;
      add(`${b}attn_q_norm.weight`, [w], NORM);
      add(`${b}attn_k_norm.weight`, [w], NORM);
    }
    if (o.postNorms) add(`${b}attn_post_norm.weight`, [E], NORM);
    if (o.layerScale) add(`${b}ls1.weight`, [E], NORM);
    norm('ln2');
    if (o.gated) {
      add(`${b}ffn_gate.weight`, [E, F], linear(E));
      if (!o.noBias) add(`${b}ffn_gate.bias`, [F], BIAS);
    }
    add(`${b}ffn_up.weight`, [E, F], linear(E));
    if (!o.noBias) add(`${b}ffn_up.bias`, [F], BIAS);
    add(`${b}ffn_down.weight`, [F, E], linear(F));
    if (!o.noBias) add(`${b}ffn_down.bias`, [E], BIAS);
    if (o.postNorms) add(`${b}ffn_post_norm.weight`, [E], NORM);
    if (o.layerScale) add(`${b}ls2.weight`, [E], NORM);
  }
}

/** The tiny presets' encoder: 2 layers, 32 wide, 4 heads, to 64. */
const TINY = { nEmbd: 32, nLayer: 2, nHead: 4, nFf: 64, nEmbdText: 64 };

/** Projector shapes by name: a tiny one per type (the test pairs' shapes) and real ones for benchmarks. */
export const MMPROJ_PRESETS: Readonly<Record<string, { description: string; spec: Omit<MmprojSpec, 'seed'> }>> = {
  'gemma3-siglip-400m': {
    description:
      "Gemma 3 4B's SigLIP-400M: 27 layers, 1152 wide, 16 heads, n_ff 4304, 896 px, patch 14, to 2560 (256 tokens), F16",
    spec: {
      projector: 'gemma3',
      fileType: 'F16',
      name: 'SigLIP-400M gemma3 projector (random weights)',
      shape: { nEmbd: 1152, nLayer: 27, nHead: 16, nFf: 4304, nEmbdText: 2560, imageSize: 896, patchSize: 14 },
    },
  },
  'qwen2.5vl-3b-vision': {
    description:
      "Qwen2.5-VL-3B's ViT: 32 layers, 1280 wide, 16 heads, n_ff 3420, patch 14, full attention every 8th layer, to 2048, F16",
    spec: {
      projector: 'qwen2.5vl_merger',
      fileType: 'F16',
      name: 'Qwen2.5-VL-3B vision (random weights)',
      shape: {
        nEmbd: 1280,
        nLayer: 32,
        nHead: 16,
        nFf: 3420,
        nEmbdText: 2048,
        imageSize: 896,
        patchSize: 14,
        windowPattern: 8,
      },
    },
  },
  'tiny-pixtral-merger': {
    description: "pixtral with Mistral Small 3.1's 2x2 patch merger at the test pairs' size",
    spec: {
      projector: 'pixtral',
      shape: { ...TINY, imageSize: 64, patchSize: 4, spatialMerge: 2 },
    },
  },
  'tiny-gemma4-omni': {
    description: "Gemma 4's vision and audio encoders in one file (gemma4v + gemma4a) at the test pairs' size",
    spec: {
      projector: 'gemma4v',
      shape: { ...TINY, imageSize: 64, patchSize: 4 },
      audio: { projector: 'gemma4a', shape: { ...TINY, nMel: 128 } },
    },
  },
  'tiny-qwen2.5o': {
    description:
      "Qwen2.5-Omni's file (clip.projector_type qwen2.5o: qwen2.5vl_merger + qwen2a) at the test pairs' size",
    spec: {
      projector: 'qwen2.5vl_merger',
      shape: { ...TINY, imageSize: 56, patchSize: 14, windowPattern: 2 },
      audio: { projector: 'qwen2a', shape: { ...TINY, nMel: 128 }, omni: true },
    },
  },
  'internvit-6b-q4': {
    description:
      "InternViT-6B's shape as mtmd recognises it (45 layers, 3200 wide, 25 heads; RMS norms, q/k norms) with a 64-row feed-forward, 40 px, patch 10, to 64, Q4_0 (1.05 GB)",
    spec: {
      projector: 'internvl',
      fileType: 'Q4_0',
      name: 'InternViT-6B-shaped internvl projector (random weights)',
      shape: { nEmbd: 3200, nLayer: 45, nHead: 25, nFf: 64, nEmbdText: 64, imageSize: 40, patchSize: 10, maxTiles: 1 },
    },
  },
  'tiny-gemma4v-clamp': {
    description: "gemma4v with clippable linears (inputs clamped to ±2, outputs to ±1.5) at the test pairs' size",
    spec: {
      projector: 'gemma4v',
      shape: { ...TINY, imageSize: 64, patchSize: 4, clamp: [2, 1.5] },
    },
  },
  ...Object.fromEntries(
    MMPROJ_TYPES.map((t) => [
      `tiny-${t}`,
      {
        description: `${t} at the test pairs' size: 2 layers, 32 wide, to 64`,
        spec: {
          projector: t,
          shape: {
            ...TINY,
            ...(isAudioProjector(t)
              ? { nMel: 128 }
              : t.startsWith('qwen')
                ? { imageSize: 56, patchSize: 14 }
                : t === 'ldpv2' || t === 'ldp'
                  ? { imageSize: 48, patchSize: 2 }
                  : { imageSize: 32, patchSize: 4 }),
          },
        },
      },
    ]),
  ),
};

/**
 * The tokens mtmd looks up or inserts around media, and chat-turn markers, to append to a
 * text model's vocabulary (VocabSpec `copy` extra): those of ../shared/fixtures/mtmd (its
 * ids 512..561 after stories260K's 512), then pixtral's, internvl's, voxtral's and gemma4v's. All
 * CONTROL but "\n\n" (user-defined), as in the fixtures.
 */
export const MTMD_DELIMITERS: readonly { text: string; type: number }[] = [
  '<start_of_turn>',
  '<end_of_turn>',
  '<start_of_image>',
  '<end_of_image>',
  '<fake_token_around_image>',
  '<global-img>',
  '<end_of_utterance>',
  '\n\n',
  ...grid((r, c) => `<row_${r}_col_${c}>`),
  '<|im_start|>',
  '<|im_end|>',
  '<|image_start|>',
  '<|image_end|>',
  '<|img_thumbnail|>',
  ...grid((r, c) => `<|img_row_${r}_col_${c}|>`),
  '<|vision_start|>',
  '<|vision_end|>',
  '<|image_pad|>',
  '<|audio_bos|>',
  '<|audio_eos|>',
  '[IMG]',
  '[IMG_BREAK]',
  '[IMG_END]',
  '<img>',
  '</img>',
  '<IMG_CONTEXT>',
  '[BEGIN_AUDIO]',
  '<|image>',
  '<image|>',
].map((text) => ({ text, type: text === '\n\n' ? TokenType.USER_DEFINED : TokenType.CONTROL }));

function grid(f: (r: number, c: number) => string): string[] {
  const out: string[] = [];
  for (let r = 1; r <= 4; r++) for (let c = 1; c <= 4; c++) out.push(f(r, c));
  return out;
}

export interface MmprojResult {
  path: string;
  fileSize: number;
  parameters: number;
}

/** Writes the projector `spec` describes to `path` (overwriting it). */
export function generateMmproj(spec: MmprojSpec, path: string): MmprojResult {
  if (!Number.isSafeInteger(spec.seed)) throw new RangeError(`seed ${spec.seed} is not a safe integer`);
  const plan = planMmproj(spec);
  const w = new GGUFWriter();
  for (const kv of plan.kv) w.set(kv.key, kv.type, kv.value);
  // F16 for matrices and kernels (as the converters write them); 1D tensors and embedding rows stay F32
  // (ldp's and ldpv2's depthwise conv kernels are F16 in every file: build 10257's CPU backend has no F32
  // im2col for it and aborts with "GGML_ASSERT(*cur_backend_id != -1)")
  const typeOf = (t: PlannedTensor) => {
    if (t.name === 'mm.model.peg.0.weight' || /^mm\.model\.mb_block\.\d\.block\.0\.0\.weight$/.test(t.name)) {
      return GGMLType.F16;
    }
    if (t.dims.length < 2 || t.name.includes('position_embd')) return GGMLType.F32;
    // gemma4a's depthwise kernel and 3-D conv biases stay F32: ggml_ssm_conv takes no other kernel
    const gemma4a = spec.projector === 'gemma4a' || (spec.audio?.projector === 'gemma4a' && t.name.startsWith('a.'));
    if (gemma4a && (t.name.endsWith('conv_dw.weight') || t.name.endsWith('.bias'))) {
      return GGMLType.F32;
    }
    if (spec.fileType === 'F16') return GGMLType.F16;
    if (spec.fileType === 'Q4_0' && t.dims[0]! % 32 === 0) return GGMLType.Q4_0;
    return GGMLType.F32;
  };
  const byName = new Map(plan.tensors.map((t) => [t.name, t]));
  for (const t of plan.tensors) w.addTensor(t.name, typeOf(t), t.dims);
  w.write(path, (e) => {
    const t = byName.get(e.name) as PlannedTensor;
    return tensorBytes(spec.seed, t, e.type);
  });
  const parameters = plan.tensors.reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0);
  return { path, fileSize: statSync(path).size, parameters };
}
