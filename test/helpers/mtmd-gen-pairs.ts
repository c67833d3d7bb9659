// Generated multimodal pairs (text model + mmproj projector) for the projector types the
// ../shared mtmd fixtures lack, made as those fixtures are (README of fixtures/mtmd): tiny
// random weights, the stories260K vocabulary plus the delimiter tokens the projectors look
// up, a small chat template; and the PNG/WAV media their cases use, written here (no ../shared
// images needed). Used by test/refs/mtmd/make-refs.mjs (llama.cpp's answers) and
// test/mtmd-generated.test.ts (ours).
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  GENERATOR_VERSION,
  generateModel,
  type ModelSpec,
  MTMD_DELIMITERS,
  presetSpec,
  specHash,
} from '../../src/generator/index.js';
import { generateMmproj, MMPROJ_PRESETS, type MmprojSpec } from '../../src/generator/mmproj.js';
import { TokenType } from '../../src/generator/vocab.js';
import { encodePng } from './media-encode.js';

/** What one case feeds the model (as the shared fixtures' cases.json). */
export interface GenCase {
  name: string;
  /** Which preprocessing path of the projector the case exercises. */
  path: 'fixed' | 'dynamic' | 'tiled' | 'audio' | 'mixed';
  prompt?: string;
  messages?: { role: string; content: Record<string, unknown>[] }[];
  /** Media file names (written by writeMedia), in marker order. */
  media: string[];
}

export interface GenPair {
  name: string;
  text: ModelSpec;
  mmproj: MmprojSpec;
  cases: GenCase[];
}

const turns = (open: string, close: string, assistant: string) =>
  `{% for m in messages %}{{ '${open}' + ('${assistant}' if m['role'] == 'assistant' else m['role']) + '\\n' }}{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}{% endif %}{% endfor %}{% endif %}{{ '${close}\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '${open}${assistant}\\n' }}{% endif %}`;
const GEMMA_TEMPLATE = turns('<start_of_turn>', '<end_of_turn>', 'model');
const CHATML_TEMPLATE = turns('<|im_start|>', '<|im_end|>', 'assistant');

/** The text half: n_embd 64, 2 layers, 4 heads / 2 KV of 16, n_ff 128 (the shared fixtures' shape). */
function textSpec(vocabFrom: string, arch: ModelSpec['arch'], seed: number, extra: Partial<ModelSpec['shape']> = {}) {
  const gemma = arch === 'gemma3';
  return {
    arch,
    name: `generated-${arch}-text`,
    shape: {
      nEmbd: 64,
      nLayer: 2,
      nHead: 4,
      nHeadKv: 2,
      headDim: 16,
      nFf: 128,
      nVocab: 0,
      nCtxTrain: 4096,
      normEps: 1e-6,
      ...(gemma
        ? {
            slidingWindow: 16,
            swaPattern: 2,
            ropeFreqBase: 1e6,
            ropeFreqBaseSwa: 10000,
            tiedEmbeddings: true,
            embdStd: 0.15,
          }
        : {}),
      ...extra,
    },
    fileType: 'F32',
    seed,
    vocab: {
      kind: 'copy',
      from: vocabFrom,
      extra: MTMD_DELIMITERS,
      chatTemplate: gemma ? GEMMA_TEMPLATE : CHATML_TEMPLATE,
    },
  } satisfies ModelSpec;
}

/**
 * Gemma 4 (E2B-like: per-layer embeddings, shared KV, layer output scales) at the generator's
 * tiny size; `extra`: tokens beyond MTMD_DELIMITERS (appended, so the other pairs' files stay as they are).
 */
function gemma4Text(vocabFrom: string, extra: readonly { text: string; type: number }[] = []): ModelSpec {
  const spec = presetSpec('tiny-gemma4', 'F32', { seed: 20 });
  return {
    ...spec,
    vocab: { kind: 'copy', from: vocabFrom, extra: [...MTMD_DELIMITERS, ...extra], chatTemplate: GEMMA_TEMPLATE },
  };
}

/** Gemma 4's audio delimiters (mtmd.cpp's aud_beg / aud_end for gemma4a). */
const GEMMA4_AUDIO = ['<|audio>', '<audio|>'].map((text) => ({ text, type: TokenType.CONTROL }));

const VISION = { nEmbd: 32, nLayer: 2, nHead: 4, nFf: 64, nEmbdText: 64 };

const chat = (path: GenCase['path'], text: string, image: string, after = ' today?'): GenCase => ({
  name: 'chat',
  path,
  messages: [
    {
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'image_url', image_url: { url: image } },
        { type: 'text', text: after },
      ],
    },
  ],
  media: [image],
});

/** The generated pairs; `vocabFrom` is ../shared/models/stories260K.gguf. */
export function genPairs(vocabFrom: string): GenPair[] {
  const mid = (path: GenCase['path'], image = 'grad-64x48.png'): GenCase => ({
    name: 'mid',
    path,
    prompt: 'Once upon a time <__media__> there was a',
    media: [image],
  });
  const two = (path: GenCase['path']): GenCase => ({
    name: 'two',
    path,
    prompt: 'Look at <__media__> and then <__media__> so the cat',
    media: ['checker-37x53.png', 'gray-40x40.png'],
  });
  const big = (path: GenCase['path'], image = 'photo-160x120.png'): GenCase => ({
    name: 'big',
    path,
    prompt: '<__media__>The little girl saw',
    media: [image],
  });
  const pano = (path: GenCase['path']): GenCase => ({
    name: 'pano',
    path,
    prompt: 'The wide picture <__media__> shows a',
    media: ['pano-240x80.png'],
  });
  const mixed = ['grad-64x48.png', 'chord-0.8s.wav'];
  // an image then a clip, and a clip then an image: each medium to its own encoder
  const mixedCases: GenCase[] = [
    { name: 'mixed', path: 'mixed', prompt: 'Look <__media__> and hear <__media__> the end', media: mixed },
    {
      name: 'audio-first',
      path: 'mixed',
      prompt: 'Hear <__media__> then see <__media__> so',
      media: ['noise-0.5s.wav', 'gray-40x40.png'],
    },
  ];
  const audio = (): GenCase[] => [
    { name: 'mid', path: 'audio', prompt: 'Listen <__media__> and she said', media: ['sweep-1.5s.wav'] },
    {
      name: 'two',
      path: 'audio',
      prompt: 'First <__media__> then <__media__> the end',
      media: ['chord-0.8s.wav', 'noise-0.5s.wav'],
    },
  ];
  return [
    {
      name: 'gemma3',
      text: textSpec(vocabFrom, 'gemma3', 11),
      mmproj: { projector: 'gemma3', seed: 11, shape: { ...VISION, imageSize: 32, patchSize: 4, scaleFactor: 2 } },
      cases: [mid('fixed'), two('fixed'), big('fixed'), chat('fixed', 'What is in the picture ', 'gray-40x40.png')],
    },
    {
      name: 'llava',
      text: textSpec(vocabFrom, 'llama', 12),
      mmproj: { projector: 'mlp', seed: 12, shape: { ...VISION, imageSize: 32, patchSize: 4 } },
      cases: [mid('fixed'), two('fixed'), big('fixed')],
    },
    {
      name: 'llava16',
      text: textSpec(vocabFrom, 'llama', 13),
      mmproj: {
        projector: 'mlp',
        seed: 13,
        shape: { ...VISION, imageSize: 32, patchSize: 4, gridPinpoints: [32, 64, 64, 32, 64, 64] },
      },
      cases: [mid('tiled'), pano('tiled'), big('tiled')],
    },
    {
      name: 'ldpv2',
      text: textSpec(vocabFrom, 'llama', 21),
      mmproj: { projector: 'ldpv2', seed: 21, shape: { ...VISION, imageSize: 48, patchSize: 2 } },
      cases: [mid('fixed'), two('fixed')],
    },
    {
      // MobileVLM v1
      name: 'ldp',
      text: textSpec(vocabFrom, 'llama', 24),
      mmproj: { projector: 'ldp', seed: 24, shape: { ...VISION, imageSize: 48, patchSize: 2 } },
      cases: [mid('fixed'), two('fixed')],
    },
    {
      name: 'pixtral',
      text: textSpec(vocabFrom, 'llama', 14),
      mmproj: { projector: 'pixtral', seed: 14, shape: { ...VISION, imageSize: 64, patchSize: 4 } },
      cases: [mid('dynamic'), two('dynamic'), pano('dynamic')],
    },
    {
      // Mistral Small 3.1's projector: pixtral with a 2x2 patch merger
      name: 'pixtral-merger',
      text: textSpec(vocabFrom, 'llama', 23),
      mmproj: { projector: 'pixtral', seed: 23, shape: { ...VISION, imageSize: 64, patchSize: 4, spatialMerge: 2 } },
      cases: [mid('dynamic'), two('dynamic')],
    },
    {
      name: 'internvl',
      text: textSpec(vocabFrom, 'qwen2', 15),
      mmproj: { projector: 'internvl', seed: 15, shape: { ...VISION, imageSize: 32, patchSize: 4, maxTiles: 6 } },
      cases: [mid('tiled'), pano('tiled'), big('tiled')],
    },
    {
      // InternViT-6B's shape (mtmd switches to RMS norms for 3200 wide x 45 layers), Q4_0 (1 GB):
      // 40-px tiles of 4x4 patches (4 rows each), at most one tile: a 40x40 image is one encode,
      // 37x53 two (tile + overview)
      name: 'internvit6b',
      text: textSpec(vocabFrom, 'qwen2', 25),
      mmproj: { ...MMPROJ_PRESETS['internvit-6b-q4']!.spec, seed: 25 },
      cases: [
        { name: 'fixed', path: 'fixed', prompt: 'Once upon a time <__media__> there was a', media: ['gray-40x40.png'] },
        { name: 'odd', path: 'tiled', prompt: '<__media__>The little girl saw', media: ['checker-37x53.png'] },
      ],
    },
    {
      name: 'qwen2vl',
      text: textSpec(vocabFrom, 'qwen2vl', 22, { ropeSections: [2, 3, 3, 0] }),
      mmproj: { projector: 'qwen2vl_merger', seed: 22, shape: { ...VISION, imageSize: 56, patchSize: 14 } },
      cases: [
        mid('dynamic'),
        two('dynamic'),
        big('dynamic'),
        chat('dynamic', 'What is in the picture ', 'gray-40x40.png'),
      ],
    },
    {
      name: 'qwen25vl',
      text: textSpec(vocabFrom, 'qwen2vl', 16, { ropeSections: [2, 3, 3, 0] }),
      mmproj: {
        projector: 'qwen2.5vl_merger',
        seed: 16,
        shape: { ...VISION, imageSize: 56, patchSize: 14, windowPattern: 2 },
      },
      cases: [mid('dynamic'), two('dynamic'), big('dynamic')],
    },
    {
      name: 'qwen3vl',
      text: textSpec(vocabFrom, 'qwen3vl', 19, { ropeSections: [2, 3, 3, 0], deepstackLayers: 1 }),
      mmproj: {
        projector: 'qwen3vl_merger',
        seed: 19,
        shape: { ...VISION, imageSize: 64, patchSize: 8, posGrid: 6, deepstackLayers: [0] },
      },
      cases: [mid('dynamic'), two('dynamic'), big('dynamic')],
    },
    {
      name: 'gemma4v',
      text: gemma4Text(vocabFrom),
      mmproj: { projector: 'gemma4v', seed: 20, shape: { ...VISION, imageSize: 64, patchSize: 4, posGrid: 64 } },
      cases: [mid('dynamic'), two('dynamic'), big('dynamic')],
    },
    {
      // Gemma 4's clippable linears: every layer linear and the projection clamped (in ±2, out ±1.5);
      // a llama text half, whose own agreement (~0.001) leaves the projector's visible (the tiny
      // Gemma 4 text model alone is up to 0.01 off llama.node, 0.044 with these images)
      name: 'gemma4v-clamp',
      text: textSpec(vocabFrom, 'llama', 24),
      mmproj: {
        projector: 'gemma4v',
        seed: 24,
        shape: { ...VISION, imageSize: 64, patchSize: 4, posGrid: 64, clamp: [2, 1.5] },
      },
      cases: [mid('dynamic'), two('dynamic')],
    },
    {
      name: 'gemma4a',
      text: gemma4Text(vocabFrom, GEMMA4_AUDIO),
      // a.pre_encode.out to 48 wide before the projection, clamp bounds on some weights; the
      // long clip spans two 30 s chunks
      mmproj: { projector: 'gemma4a', seed: 23, shape: { ...VISION, nMel: 128, outProj: 48, clamped: true } },
      cases: [...audio(), { name: 'long', path: 'audio', prompt: 'Hear <__media__> the end', media: ['hum-31s.wav'] }],
    },
    {
      // one file with Gemma 4's vision and audio encoders (clip.vision.projector_type,
      // clip.audio.projector_type): images and audio in one prompt, each to its own encoder
      name: 'gemma4-omni',
      text: gemma4Text(vocabFrom, GEMMA4_AUDIO),
      mmproj: {
        projector: 'gemma4v',
        seed: 26,
        shape: { ...VISION, imageSize: 64, patchSize: 4, posGrid: 64 },
        audio: { projector: 'gemma4a', shape: { ...VISION, nMel: 128, outProj: 48 } },
      },
      cases: mixedCases,
    },
    {
      // Qwen2.5-Omni's file: clip.projector_type 'qwen2.5o' (qwen2.5vl_merger for images, qwen2a
      // for audio) with an M-RoPE text half: image rows in 2-D, audio rows one position each
      name: 'qwen25omni',
      text: textSpec(vocabFrom, 'qwen2vl', 27, { ropeSections: [2, 3, 3, 0] }),
      mmproj: {
        projector: 'qwen2.5vl_merger',
        seed: 27,
        shape: { ...VISION, imageSize: 56, patchSize: 14, windowPattern: 2 },
        audio: { projector: 'qwen2a', shape: { ...VISION, nMel: 128 }, omni: true },
      },
      cases: mixedCases,
    },
    {
      name: 'ultravox',
      text: textSpec(vocabFrom, 'llama', 17),
      // Build 10257 counts floor(3000 frames / 2 / stack) audio embeddings but its graph pads
      // 1500 positions up to a multiple of the stack: the stack must divide 1500 (the real 8 aborts)
      mmproj: { projector: 'ultravox', seed: 17, shape: { ...VISION, nMel: 128, stackFactor: 4 } },
      cases: audio(),
    },
    {
      name: 'voxtral',
      text: textSpec(vocabFrom, 'llama', 18),
      // voxtral also average-pools by 2 after the stack: 1500 / stack must be even (the real 4 aborts)
      mmproj: { projector: 'voxtral', seed: 18, shape: { ...VISION, nMel: 128, stackFactor: 2 } },
      cases: audio(),
    },
  ];
}

/** test/refs/mtmd/models.json: per pair, the SHA-256 of the files its references were made from. */
export const PAIR_MANIFEST: Record<string, { model: string; mmproj: string; projector: string; text_arch: string }> =
  JSON.parse(readFileSync(fileURLToPath(new URL('../../../test/refs/mtmd/models.json', import.meta.url)), 'utf8'));

/**
 * ensurePair, then both files checked against PAIR_MANIFEST: references made from other
 * bytes (a changed generator) would be compared in vain, so that is an error naming the file.
 */
export function ensureReferencePair(pair: GenPair, dir: string): { model: string; mmproj: string } {
  const files = ensurePair(pair, dir);
  const want = PAIR_MANIFEST[pair.name];
  if (!want) throw new Error(`${pair.name}: no entry in test/refs/mtmd/models.json`);
  for (const k of ['model', 'mmproj'] as const) {
    const got = createHash('sha256').update(readFileSync(files[k])).digest('hex');
    if (got !== want[k]) {
      throw new Error(`${files[k]}: not the file the references were made with (sha256 ${got}, references ${want[k]})`);
    }
  }
  return files;
}

/**
 * Writes the pair's text model and projector into `dir` (unless there); returns their paths.
 * The names carry a hash of both specs, so a changed spec never reuses an old file.
 */
export function ensurePair(pair: GenPair, dir: string): { model: string; mmproj: string } {
  mkdirSync(dir, { recursive: true });
  const key = createHash('sha256')
    .update(JSON.stringify({ text: specHash(pair.text), mmproj: pair.mmproj, v: GENERATOR_VERSION }))
    .digest('hex')
    .slice(0, 16);
  const model = join(dir, `${pair.name}-${key}.gguf`);
  const mmproj = join(dir, `${pair.name}-${key}.mmproj.gguf`);
  const write = (path: string, gen: (tmp: string) => void) => {
    if (existsSync(path)) return;
    const tmp = `${path}.tmp-${process.pid}`;
    gen(tmp);
    renameSync(tmp, path);
  };
  write(model, (tmp) => generateModel(pair.text, tmp));
  write(mmproj, (tmp) => generateMmproj(pair.mmproj, tmp));
  return { model, mmproj };
}

// ---- media ----

/** A deterministic value in [0, 256) from integers (no Math.random: the images are part of the references). */
const hash = (...xs: number[]) => {
  let h = 2166136261;
  for (const x of xs) h = Math.imul(h ^ (x & 0xffff), 16777619) ^ (x >>> 16);
  h = Math.imul(h ^ (h >>> 15), 2246822507);
  return (h ^ (h >>> 13)) & 0xff;
};

const IMAGES: Record<
  string,
  { w: number; h: number; gray?: boolean; px: (x: number, y: number, c: number) => number }
> = {
  'grad-64x48.png': { w: 64, h: 48, px: (x, y, c) => [x * 4, y * 5, (x + y) * 2][c]! & 0xff },
  'checker-37x53.png': {
    w: 37,
    h: 53,
    px: (x, y, c) => (((x >> 2) + (y >> 2)) & 1 ? [230, 40, 20][c]! : [10, 90, 220][c]!),
  },
  'gray-40x40.png': { w: 40, h: 40, gray: true, px: (x, y) => (x * 6 + y * 3) & 0xff },
  'photo-160x120.png': {
    w: 160,
    h: 120,
    px: (x, y, c) => Math.min(255, ((Math.sin(x / 9 + c) + Math.cos(y / 7 - c)) * 60 + 128 + (hash(x, y, c) >> 3)) | 0),
  },
  'pano-240x80.png': { w: 240, h: 80, px: (x, y, c) => ((x * (c + 1)) ^ (y * 3)) & 0xff },
};

const AUDIO: Record<string, { seconds: number; sample: (t: number, i: number) => number }> = {
  'sweep-1.5s.wav': { seconds: 1.5, sample: (t) => 0.5 * Math.sin(2 * Math.PI * (200 + 900 * t) * t) },
  'chord-0.8s.wav': {
    seconds: 0.8,
    sample: (t) =>
      0.25 * (Math.sin(2 * Math.PI * 261.6 * t) + Math.sin(2 * Math.PI * 329.6 * t) + Math.sin(2 * Math.PI * 392 * t)),
  },
  'noise-0.5s.wav': { seconds: 0.5, sample: (_t, i) => (hash(i, 7) - 128) / 400 },
  // past one 30 s chunk (gemma4a cuts clips there)
  'hum-31s.wav': {
    seconds: 31,
    sample: (t, i) =>
      0.3 * Math.sin(2 * Math.PI * 150 * t) * (0.6 + 0.4 * Math.sin(2 * Math.PI * 0.7 * t)) + (hash(i, 3) - 128) / 2000,
  },
};

/** 16 kHz mono 16-bit PCM. */
function wav(samples: Int16Array): Uint8Array {
  const out = new Uint8Array(44 + samples.length * 2);
  const v = new DataView(out.buffer);
  const text = (at: number, s: string) => {
    for (let i = 0; i < s.length; i++) out[at + i] = s.charCodeAt(i);
  };
  text(0, 'RIFF');
  v.setUint32(4, 36 + samples.length * 2, true);
  text(8, 'WAVEfmt ');
  v.setUint32(16, 16, true);
  v.setUint16(20, 1, true);
  v.setUint16(22, 1, true);
  v.setUint32(24, 16000, true);
  v.setUint32(28, 32000, true);
  v.setUint16(32, 2, true);
  v.setUint16(34, 16, true);
  text(36, 'data');
  v.setUint32(40, samples.length * 2, true);
  for (let i = 0; i < samples.length; i++) v.setInt16(44 + i * 2, samples[i]!, true);
  return out;
}

/** Writes every image and sound the cases use into `dir` (same bytes on every run). */
export function writeMedia(dir: string): void {
  mkdirSync(dir, { recursive: true });
  for (const [name, im] of Object.entries(IMAGES)) {
    const ch = im.gray ? 1 : 3;
    const samples: number[] = [];
    for (let y = 0; y < im.h; y++)
      for (let x = 0; x < im.w; x++) for (let c = 0; c < ch; c++) samples.push(im.px(x, y, c));
    writeFileSync(
      join(dir, name),
      encodePng({ width: im.w, height: im.h, colorType: im.gray ? 0 : 2, depth: 8, samples }),
    );
  }
  for (const [name, a] of Object.entries(AUDIO)) {
    const n = Math.round(a.seconds * 16000);
    const s = new Int16Array(n);
    for (let i = 0; i < n; i++) s[i] = Math.round(Math.max(-1, Math.min(1, a.sample(i / 16000, i))) * 32767);
    writeFileSync(join(dir, name), wav(s));
  }
}
