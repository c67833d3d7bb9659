// A multimodal projector file (llama.cpp's "mmproj": general.architecture = clip): its
// hyper-parameters (`clip.*` keys, read as mtmd's clip.cpp reads them, with its defaults)
// and its weights (`v.*` vision encoder, `a.*` audio encoder, `mm.*` projector), loaded
// into host buffers. Every projector type this module runs is listed in PROJECTORS; any
// other is refused by name, and a missing key or tensor is named.
// One file may hold a vision and an audio encoder (Qwen2.5-Omni, Gemma 4): as clip.cpp's
// clip_init, each becomes a part of its own (an Mmproj), the weights loaded once and shared.

import { type Device, type Buffer as DeviceBuffer, fallbackDevice } from '../backends/index.js';
import { allocTensors } from '../ggml/alloc.js';
import { newTensor, type Tensor, TensorFlag } from '../ggml/tensor.js';
import { GGMLType } from '../ggml/types.js';
import { type GGUFFile, GGUFValueType, openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { defaultDevices, readWeights } from '../model/model.js';

const log = logger('mmproj');

/** The projector types llama-ts runs (clip.projector_type). */
export const PROJECTORS = [
  'gemma3',
  'idefics3',
  'lfm2',
  'qwen2vl_merger',
  'qwen2.5vl_merger',
  'qwen3vl_merger',
  'qwen2a',
  'ultravox',
  'voxtral',
  'gemma4a',
  'mlp',
  'ldp',
  'ldpv2',
  'pixtral',
  'internvl',
  'gemma4v',
] as const;
/** The audio projectors among them. */
const AUDIO_PROJECTORS: readonly string[] = ['qwen2a', 'ultravox', 'voxtral', 'gemma4a'];
/** clip.projector_type of Qwen2.5-Omni's files: qwen2.5vl_merger for images, qwen2a for audio (clip.cpp). */
const QWEN25O = 'qwen2.5o';
export type ProjectorType = (typeof PROJECTORS)[number];

/** A multimodal projector file llama-ts cannot use; the message names the file and the problem. */
export class MmprojError extends Error {
  override name = 'MmprojError';
}

/** The vision encoder's hyper-parameters (clip.vision.*) and mtmd's per-projector settings. */
export interface VisionHParams {
  imageSize: number;
  patchSize: number;
  nEmbd: number;
  nFf: number;
  nLayer: number;
  nHead: number;
  eps: number;
  projectionDim: number;
  mean: [number, number, number];
  std: [number, number, number];
  /** Patches merged per side (clip.vision.projector.scale_factor; mtmd's default per projector). */
  nMerge: number;
  /** idefics3: the longest edge images are resized to before tiling (clip.vision.preproc_image_size). */
  longestEdge: number;
  /** Dynamic-resolution limits in pixels (lfm2), from the token limits; -1: none. */
  minPixels: number;
  maxPixels: number;
  /** 'gelu' (use_gelu), 'silu' (use_silu) or 'gelu_quick' (neither), as clip.cpp picks. */
  ffnOp: 'gelu' | 'silu' | 'gelu_quick';
  /** mlp (LLaVA-1.6): the tiled resolutions, [width, height] pairs (clip.vision.image_grid_pinpoints); empty: none. */
  gridPinpoints: [number, number][];
  /** qwen2.5vl_merger: every n-th layer attends fully, the others within windows (clip.vision.n_wa_pattern); 0: none. */
  windowPattern: number;
}

/** The audio encoder's hyper-parameters (clip.audio.*): a Whisper encoder, or Gemma 4's conformer (gemma4a). */
export interface AudioHParams {
  nEmbd: number;
  nFf: number;
  nLayer: number;
  nHead: number;
  eps: number;
  projectionDim: number;
  /** Mel bands of the log-mel input (clip.audio.num_mel_bins). */
  nMel: number;
  /** Encoder frames stacked per projector input (clip.audio.projector.stack_factor: ultravox, voxtral; else 1). */
  stackFactor: number;
}

/**
 * Gemma 4's clippable linears: the ranges a weight's input and output are clamped to, from
 * the scalar tensors NAME.input_min / .input_max / .output_min / .output_max beside
 * NAME.weight (±FLT_MAX where one is absent, as clip.cpp's defaults).
 */
export interface LinearClamp {
  inMin: number;
  inMax: number;
  outMin: number;
  outMax: number;
}

const FLT_MAX = 3.4028234663852886e38;
const CLAMP_KEYS = ['input_min', 'input_max', 'output_min', 'output_max'] as const;

/** Options of initMultimodal that change preprocessing (llama.node's image_min/max_tokens). */
export interface MmprojOptions {
  imageMinTokens?: number;
  imageMaxTokens?: number;
  /** Devices to place the weights on (default: the host device the text model would use). */
  device?: Device;
}

/**
 * What a projector file takes (vision, audio), from its header alone, as Mmproj.load would
 * judge it: a router lists a model's modalities without loading it.
 */
export function projectorModalities(path: string): { vision: boolean; audio: boolean } {
  const file = openGGUF(path);
  try {
    if (file.getString('general.architecture', '') !== 'clip') return { vision: false, audio: false };
    const types = encoderTypes(file);
    return { vision: types.vision !== undefined, audio: types.audio !== undefined };
  } finally {
    file.close();
  }
}

/** A projector file's encoders: one, or a vision and an audio one. */
export interface MmprojParts {
  vision?: Mmproj;
  audio?: Mmproj;
}

/** The weights' buffers, shared by the parts of one file: freed with the last part. */
interface SharedBuffers {
  buffers: DeviceBuffer[];
  users: number;
}

export class Mmproj {
  private constructor(
    readonly path: string,
    readonly projector: ProjectorType,
    /** The vision encoder's hyper-parameters (a vision projector), else undefined. */
    private readonly visionHp: VisionHParams | undefined,
    readonly audio: AudioHParams | undefined,
    private readonly tensors: ReadonlyMap<string, Tensor>,
    private readonly shared: SharedBuffers,
    readonly device: Device,
    private readonly clamps: ReadonlyMap<string, LinearClamp>,
  ) {}

  /**
   * Opens and loads a projector file's encoder; throws MmprojError naming what is wrong. A
   * file with a vision and an audio encoder gives its vision one (loadParts gives both).
   */
  static async load(path: string, opts: MmprojOptions = {}): Promise<Mmproj> {
    const { vision, audio } = await Mmproj.loadParts(path, opts);
    if (vision && audio) audio.free();
    return (vision ?? audio)!;
  }

  /** Opens and loads every encoder of a projector file (clip_init's ctx_v and ctx_a). */
  static async loadParts(path: string, opts: MmprojOptions = {}): Promise<MmprojParts> {
    const file = openGGUF(path);
    try {
      const arch = file.getString('general.architecture', '');
      if (arch !== 'clip') {
        throw new MmprojError(
          `${path}: general.architecture is '${arch}', not 'clip': not a multimodal projector file`,
        );
      }
      const types = encoderTypes(file);
      const vision = types.vision && visionHParams(file, types.vision, opts);
      const audio = types.audio && audioHParams(file, types.audio);
      const device = opts.device ?? defaultDevices().at(-1) ?? fallbackDevice();
      const tensors = new Map<string, Tensor>();
      for (const info of file.tensors) {
        file.assertSupportedType(info);
        tensors.set(info.name, newTensor(info.type, info.dims, info.name).setFlag(TensorFlag.WEIGHT));
      }
      const need = (projector: ProjectorType, nLayer: number) => {
        for (const name of requiredTensors(projector, nLayer)) {
          if (!tensors.has(name)) {
            throw new MmprojError(`${path}: missing tensor '${name}' (a ${projector} projector needs it)`);
          }
        }
      };
      if (types.vision) need(types.vision, vision!.nLayer);
      if (types.audio) need(types.audio, audio!.nLayer);
      const buffers = allocTensors([...tensors.values()], device.bufferType(), 'weights');
      try {
        await readWeights(file, [...tensors.values()], {});
      } catch (e) {
        for (const b of buffers) b.free();
        throw e;
      }
      const shared: SharedBuffers = { buffers, users: 0 };
      const part = (projector: ProjectorType, v: VisionHParams | undefined, a: AudioHParams | undefined) => {
        shared.users++;
        // clip.cpp reads the clamp scalars for gemma4v only
        const clamps = projector === 'gemma4v' ? linearClamps(file) : new Map<string, LinearClamp>();
        return new Mmproj(path, projector, v, a, tensors, shared, device, clamps);
      };
      const parts: MmprojParts = {};
      if (types.vision) parts.vision = part(types.vision, vision, undefined);
      if (types.audio) parts.audio = part(types.audio, undefined, audio);
      log.info(
        `loaded ${path}: projector ${[types.vision, types.audio].filter(Boolean).join(' + ')}, ${tensors.size} tensors`,
      );
      return parts;
    } finally {
      file.close();
    }
  }

  get hasVision(): boolean {
    return this.visionHp !== undefined;
  }

  get hasAudio(): boolean {
    return this.audio !== undefined;
  }

  /** The vision hyper-parameters (throws for an audio projector). */
  get vision(): VisionHParams {
    if (!this.visionHp) throw new MmprojError(`${this.path}: projector '${this.projector}' has no vision encoder`);
    return this.visionHp;
  }

  /** Width of the embeddings it outputs (the text model's n_embd). */
  get projectionDim(): number {
    return (this.visionHp ?? this.audio)!.projectionDim;
  }

  /** Qwen3-VL: the vision layers with a deepstack merger (v.deepstack.N.*), ascending. */
  get deepstackLayers(): number[] {
    const n = this.visionHp?.nLayer ?? 0;
    return Array.from({ length: n }, (_, il) => il).filter((il) => this.tensors.has(`v.deepstack.${il}.fc1.weight`));
  }

  /** Width of an output embedding row: projectionDim, once more per deepstack merger (clip_n_mmproj_embd). */
  get outputWidth(): number {
    // gemma4a: its projection's rows (clip_n_mmproj_embd reads them there)
    if (this.projector === 'gemma4a') return this.get('mm.a.input_projection.weight').ne[1];
    return this.projectionDim * (1 + this.deepstackLayers.length);
  }

  /** A tensor the projector requires (checked at load). */
  get(name: string): Tensor {
    const t = this.tensors.get(name);
    if (!t) throw new MmprojError(`${this.path}: missing tensor '${name}'`);
    return t;
  }

  /** Every tensor name in the file. */
  get tensorNames(): string[] {
    return [...this.tensors.keys()];
  }

  opt(name: string): Tensor | undefined {
    return this.tensors.get(name);
  }

  /** The clamps of the linear whose weight is `weightName` (gemma4v), if the file gives any. */
  clampOf(weightName: string): LinearClamp | undefined {
    return this.clamps.get(weightName);
  }

  free(): void {
    if (this.freed) return;
    this.freed = true;
    if (--this.shared.users > 0) return;
    for (const b of this.shared.buffers) b.free();
    this.shared.buffers.length = 0;
  }

  private freed = false;
}

/** Every weight's clamps where the file has at least one of its four scalars (F32, one element each). */
function linearClamps(file: GGUFFile): Map<string, LinearClamp> {
  const out = new Map<string, LinearClamp>();
  for (const info of file.tensors) {
    if (!info.name.endsWith('.weight')) continue;
    const base = info.name.slice(0, -'.weight'.length);
    const v: Partial<Record<(typeof CLAMP_KEYS)[number], number>> = {};
    for (const key of CLAMP_KEYS) {
      const t = file.tensor(`${base}.${key}`);
      if (!t) continue;
      if (t.type !== GGMLType.F32 || t.nElements !== 1) {
        throw new MmprojError(
          `${file.path}: tensor '${t.name}' must be one F32 value (type ${t.type}, ${t.nElements} elements)`,
        );
      }
      const bytes = file.readTensorData(t);
      v[key] = new DataView(bytes.buffer, bytes.byteOffset, 4).getFloat32(0, true);
    }
    if (Object.keys(v).length === 0) continue;
    out.set(info.name, {
      inMin: v.input_min ?? -FLT_MAX,
      inMax: v.input_max ?? FLT_MAX,
      outMin: v.output_min ?? -FLT_MAX,
      outMax: v.output_max ?? FLT_MAX,
    });
  }
  return out;
}

/**
 * The projector type of each encoder, as clip.cpp's load_hparams picks it: clip.projector_type
 * for every encoder of the file when present ('qwen2.5o': qwen2.5vl_merger for images, qwen2a
 * for audio; any other names one encoder, vision or audio by its type), else
 * clip.vision.projector_type and clip.audio.projector_type, each where clip.has_vision_encoder /
 * clip.has_audio_encoder says that encoder is there.
 */
function encoderTypes(file: GGUFFile): { vision?: ProjectorType; audio?: ProjectorType } {
  const main = file.getString('clip.projector_type', null);
  const hasV = file.getBool('clip.has_vision_encoder', false) === true;
  const hasA = file.getBool('clip.has_audio_encoder', false) === true;
  if (main !== null && main !== QWEN25O) {
    const projector = checkType(file, 'clip.projector_type', main);
    const isAudio = AUDIO_PROJECTORS.includes(projector);
    const flag = isAudio ? 'clip.has_audio_encoder' : 'clip.has_vision_encoder';
    if (!(isAudio ? hasA : hasV)) {
      throw new MmprojError(
        `${file.path}: projector '${projector}' has no ${isAudio ? 'audio' : 'vision'} encoder (${flag})`,
      );
    }
    return isAudio ? { audio: projector } : { vision: projector };
  }
  const vKey = 'clip.vision.projector_type';
  const aKey = 'clip.audio.projector_type';
  if (main === null && !file.has(vKey) && !file.has(aKey)) {
    throw new MmprojError(`${file.path}: missing key 'clip.projector_type' (nor '${vKey}' / '${aKey}')`);
  }
  const pick = (has: boolean, key: string, omni: ProjectorType, audio: boolean): ProjectorType | undefined => {
    if (!has) return undefined;
    if (main === QWEN25O) return omni;
    const name = file.getString(key, null);
    if (name === null) throw new MmprojError(`${file.path}: missing key '${key}'`);
    const projector = checkType(file, key, name);
    if (AUDIO_PROJECTORS.includes(projector) !== audio) {
      throw new MmprojError(`${file.path}: '${key}' is '${name}', not ${audio ? 'an audio' : 'a vision'} projector`);
    }
    return projector;
  };
  const out = { vision: pick(hasV, vKey, 'qwen2.5vl_merger', false), audio: pick(hasA, aKey, 'qwen2a', true) };
  if (!out.vision && !out.audio) {
    throw new MmprojError(`${file.path}: no encoder (clip.has_vision_encoder and clip.has_audio_encoder are not set)`);
  }
  return out;
}

function checkType(file: GGUFFile, key: string, name: string): ProjectorType {
  if (!(PROJECTORS as readonly string[]).includes(name)) {
    throw new MmprojError(
      `${file.path}: projector type '${name}' is not supported (llama-ts runs ${PROJECTORS.join(', ')}, ${QWEN25O}; from '${key}')`,
    );
  }
  return name as ProjectorType;
}

function visionHParams(file: GGUFFile, projector: ProjectorType, opts: MmprojOptions): VisionHParams {
  const k = (s: string) => `clip.vision.${s}`;
  const need = (s: string): number => {
    if (!file.has(k(s))) throw new MmprojError(`${file.path}: missing key '${k(s)}'`);
    return file.getNumber(k(s));
  };
  const triple = (s: string): [number, number, number] => {
    if (!file.has(k(s))) throw new MmprojError(`${file.path}: missing key '${k(s)}'`);
    const items = file.getArrayOf(k(s), GGUFValueType.FLOAT32).items as unknown as number[];
    if (items.length < 3) throw new MmprojError(`${file.path}: '${k(s)}' has ${items.length} values, needs 3`);
    return [items[0], items[1], items[2]];
  };
  const useGelu = file.getBool('clip.use_gelu', false);
  const useSilu = file.getBool('clip.use_silu', false);
  const hp: VisionHParams = {
    imageSize: need('image_size'),
    patchSize: need('patch_size'),
    nEmbd: need('embedding_length'),
    nFf: need('feed_forward_length'),
    nLayer: need('block_count'),
    nHead: need('attention.head_count'),
    eps: file.getNumber(k('attention.layer_norm_epsilon'), 1e-6),
    projectionDim: need('projection_dim'),
    mean: triple('image_mean'),
    std: triple('image_std'),
    nMerge: 1,
    longestEdge: 0,
    minPixels: -1,
    maxPixels: -1,
    ffnOp: useGelu ? 'gelu' : useSilu ? 'silu' : 'gelu_quick',
    gridPinpoints: [],
    windowPattern: 0,
  };
  const scale = file.getNumber(k('projector.scale_factor'), null);
  const patchArea = (merge: number) => (hp.patchSize * merge) ** 2;
  // the token limits: the file's unless initMultimodal asked for others (clip.cpp's set_limit_image_tokens)
  const limits = (min: number, max: number) => {
    hp.minPixels = (opts.imageMinTokens && opts.imageMinTokens > 0 ? opts.imageMinTokens : min) * patchArea(hp.nMerge);
    hp.maxPixels = (opts.imageMaxTokens && opts.imageMaxTokens > 0 ? opts.imageMaxTokens : max) * patchArea(hp.nMerge);
  };
  switch (projector) {
    case 'gemma3':
      hp.nMerge = scale ?? 4;
      break;
    case 'idefics3':
      hp.nMerge = scale ?? 1;
      hp.longestEdge = file.getNumber(k('preproc_image_size'), 0);
      break;
    case 'lfm2':
      hp.nMerge = scale ?? 1;
      limits(64, 256);
      break;
    case 'qwen2vl_merger':
    case 'qwen2.5vl_merger':
    case 'qwen3vl_merger':
      hp.nMerge = file.getNumber(k('spatial_merge_size'), 2);
      limits(8, 4096);
      if (projector === 'qwen2.5vl_merger') hp.windowPattern = need('n_wa_pattern');
      break;
    case 'internvl': {
      // tiles: every a × b grid of min..max tiles (clip.cpp's set_internvl_dhr_res_candidates)
      hp.nMerge = scale ?? 1;
      const min = file.getNumber(k('preproc_min_tiles'), 1);
      const max = file.getNumber(k('preproc_max_tiles'), 12);
      if (!(min >= 1 && min <= max && max <= 1024)) {
        throw new MmprojError(`${file.path}: preproc_min_tiles ${min} / preproc_max_tiles ${max} out of range`);
      }
      for (let a = min; a <= max; a++) {
        for (let b = Math.max(Math.ceil(min / a), min); b <= Math.min(Math.floor(max / a), max); b++) {
          hp.gridPinpoints.push([a * hp.imageSize, b * hp.imageSize]);
        }
      }
      break;
    }
    case 'pixtral':
      hp.nMerge = file.getNumber(k('spatial_merge_size'), 1);
      limits(8, 1024);
      break;
    case 'gemma4v':
      hp.nMerge = scale ?? 3; // the pooling kernel
      // build 10257's limits: its answers for small images (48, 49 tokens) put the floor at 40
      // (later llama.cpp: 70..1120); the ceiling is Gemma 4's 280 soft tokens (not checked)
      limits(40, 280);
      break;
    case 'mlp':
    case 'ldp':
    case 'ldpv2': {
      // ldp's stride-2 conv, ldpv2's 2×2 pool: a quarter of the patches come out
      if (projector !== 'mlp') hp.nMerge = 2;
      const pins = file.getArrayOf(k('image_grid_pinpoints'), GGUFValueType.INT32, null);
      const items = pins ? (Array.from(pins.items as ArrayLike<number>) as number[]) : [];
      if (items.length % 2 !== 0) {
        throw new MmprojError(`${file.path}: '${k('image_grid_pinpoints')}' has an odd count (${items.length})`);
      }
      for (let i = 0; i < items.length; i += 2) hp.gridPinpoints.push([items[i]!, items[i + 1]!]);
      break;
    }
  }
  return hp;
}

function audioHParams(file: GGUFFile, projector: ProjectorType): AudioHParams {
  const k = (s: string) => `clip.audio.${s}`;
  const need = (s: string): number => {
    if (!file.has(k(s))) throw new MmprojError(`${file.path}: missing key '${k(s)}'`);
    return file.getNumber(k(s));
  };
  return {
    nEmbd: need('embedding_length'),
    nFf: need('feed_forward_length'),
    nLayer: need('block_count'),
    nHead: need('attention.head_count'),
    // gemma4a: 1e-6 whatever the file says (clip.cpp: its converter wrote a wrong value)
    eps: projector === 'gemma4a' ? 1e-6 : file.getNumber(k('attention.layer_norm_epsilon'), 1e-5),
    projectionDim: need('projection_dim'),
    nMel: need('num_mel_bins'),
    stackFactor: projector === 'qwen2a' || projector === 'gemma4a' ? 1 : need('projector.stack_factor'),
  };
}

function requiredTensors(projector: ProjectorType, nLayer: number): string[] {
  if (projector === 'gemma4a') {
    // clip.cpp's required ones, and mm.a.input_projection (optional there, but the output
    // width is read from it)
    const names = ['a.conv1d.0.weight', 'a.conv1d.1.weight', 'a.input_projection.weight'];
    names.push('mm.a.input_projection.weight');
    for (let il = 0; il < nLayer; il++) {
      for (const t of ['attn_out', 'ffn_up', 'ffn_down', 'ffn_norm', 'conv_pw1', 'conv_dw', 'conv_pw2']) {
        names.push(`a.blk.${il}.${t}.weight`);
      }
      for (const t of ['ffn_norm_1', 'ffn_up_1', 'ffn_down_1']) names.push(`a.blk.${il}.${t}.weight`);
    }
    return names;
  }
  if (AUDIO_PROJECTORS.includes(projector)) {
    const names = ['a.conv1d.1.weight', 'a.conv1d.1.bias', 'a.conv1d.2.weight', 'a.conv1d.2.bias'];
    names.push('a.position_embd.weight');
    if (projector === 'qwen2a') names.push('mm.a.fc.weight', 'mm.a.fc.bias');
    else names.push('mm.a.mlp.1.weight', 'mm.a.mlp.2.weight');
    if (projector === 'ultravox') names.push('mm.a.norm_pre.weight', 'mm.a.norm_mid.weight');
    for (let il = 0; il < nLayer; il++) {
      for (const t of ['ln1', 'ln2', 'attn_q', 'attn_k', 'attn_v', 'attn_out', 'ffn_up', 'ffn_down']) {
        names.push(`a.blk.${il}.${t}.weight`);
      }
    }
    return names;
  }
  const names = ['v.patch_embd.weight'];
  if (isQwenVL(projector)) names.push('v.patch_embd.weight.1');
  if ((!isQwenVL(projector) && projector !== 'pixtral') || projector === 'qwen3vl_merger') {
    names.push('v.position_embd.weight');
  }
  // Qwen3-VL's blocks take q, k and v from one fused matrix
  const attn = projector === 'qwen3vl_merger' ? ['attn_qkv'] : ['attn_q', 'attn_k', 'attn_v'];
  for (let il = 0; il < nLayer; il++) {
    for (const t of ['ln1', 'ln2', ...attn, 'attn_out', 'ffn_up', 'ffn_down']) {
      names.push(`v.blk.${il}.${t}.weight`);
    }
  }
  switch (projector) {
    case 'gemma3':
      names.push('mm.soft_emb_norm.weight', 'mm.input_projection.weight');
      break;
    case 'idefics3':
      names.push('mm.model.fc.weight');
      break;
    case 'lfm2':
      names.push('mm.1.weight', 'mm.2.weight');
      break;
    case 'qwen2vl_merger':
    case 'qwen2.5vl_merger':
    case 'qwen3vl_merger':
      names.push('mm.0.weight', 'mm.2.weight');
      break;
    case 'mlp':
      names.push('mm.0.weight', 'mm.0.bias');
      break;
    case 'internvl':
      names.push('v.class_embd', 'mm.model.mlp.0.weight', 'mm.model.mlp.1.weight', 'mm.model.mlp.3.weight');
      break;
    case 'pixtral':
      names.push('mm.1.weight', 'mm.2.weight');
      break;
    case 'ldp':
      names.push('mm.model.mlp.1.weight', 'mm.model.mlp.1.bias', 'mm.model.mlp.3.weight', 'mm.model.mlp.3.bias');
      for (const b of [1, 2]) {
        for (const t of ['0.0.weight', '0.1.weight', '0.1.bias', '1.fc1.weight', '1.fc2.weight', '2.0.weight']) {
          names.push(`mm.model.mb_block.${b}.block.${t}`);
        }
        names.push(`mm.model.mb_block.${b}.block.2.1.weight`, `mm.model.mb_block.${b}.block.2.1.bias`);
      }
      break;
    case 'ldpv2':
      names.push('mm.model.mlp.0.weight', 'mm.model.mlp.0.bias', 'mm.model.mlp.2.weight', 'mm.model.mlp.2.bias');
      names.push('mm.model.peg.0.weight', 'mm.model.peg.0.bias');
      break;
  }
  return names;
}

/** The Qwen-VL mergers: two temporal patch kernels, 2-D M-RoPE, the text model's M-RoPE positions. */
export function isQwenVL(projector: ProjectorType): boolean {
  return projector === 'qwen2vl_merger' || projector === 'qwen2.5vl_merger' || projector === 'qwen3vl_merger';
}
