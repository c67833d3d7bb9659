// Multimodal prompts (llama.cpp's mtmd): a prompt with `<__media__>` markers and images
// becomes chunks — text tokens, and image chunks holding what the encoder reads — and the
// chunks are evaluated into a text context: text as token batches, an image as its
// embedding rows (Batch.embd), non-causally where the model wants it (Gemma 3).
// Encoded images are kept by the hash of their pixels, so a second turn with the same
// image reuses them. A projector file with a vision and an audio encoder (Qwen2.5-Omni,
// Gemma 4) gives two parts; each medium goes to its own (mtmd's ctx_v / ctx_a).

import { gemma4aMel, logMelSpectrogram } from '../media/index.js';
import type { Context } from '../model/context.js';
import { embdInputWidth } from '../model/hparams.js';
import type { Model } from '../model/model.js';
import { platform } from '../platform/index.js';
import type { Vocab } from '../vocab/index.js';
import { type Embeddings, VisionEncoder } from './encoder.js';
import type { RgbImage } from './image.js';
import { imageLayout } from './layout.js';
import { isQwenVL, Mmproj, MmprojError, type MmprojOptions, type MmprojParts } from './mmproj.js';

/** llama.cpp's default media marker (mtmd_default_marker). */
export const MEDIA_MARKER = '<__media__>';

export type Chunk =
  | { type: 'text'; tokens: number[] }
  | {
      type: 'image';
      /** Embedding rows the encoder outputs. */
      nTokens: number;
      /** Positions it takes in the text context. */
      nPos: number;
      /** Rows per grid row (M-RoPE places row i at y = i / nx, x = i % nx). */
      nx: number;
      /** Placed in 2-D (an image of a Qwen-VL encoder in an M-RoPE model); else rows at pos, pos + 1, … */
      grid: boolean;
      /** Decoded with bidirectional attention (mtmd_decode_use_non_causal). */
      nonCausal: boolean;
      /** The hash of the preprocessed pixels (a cache key; llama.node's bitmap id). */
      id: string;
      encode: () => Promise<Embeddings>;
    };

/** A media item: 8-bit RGB pixels, or 16 kHz mono samples. */
export type MediaInput = RgbImage | { samples: Float32Array };

/** Where each chunk starts in the flattened prompt, as llama.node's tokenize reports it. */
export interface ChunkLayout {
  /** Token ids with -1 for each position an image takes. */
  tokens: number[];
  chunkPos: number[];
  chunkPosMedia: number[];
  nTokens: number;
}

const CACHE_LIMIT = 32;
/** The text around an audio clip's embeddings, by projector (mtmd.cpp's aud_beg / aud_end). */
const AUDIO_MARKERS: Partial<Record<string, [string, string?]>> = {
  qwen2a: ['<|audio_bos|>', '<|audio_eos|>'],
  voxtral: ['[BEGIN_AUDIO]'],
  gemma4a: ['<|audio>', '<audio|>'],
};

/** One encoder of the projector file and its graphs. */
interface Part {
  mm: Mmproj;
  encoder: VisionEncoder;
}

export class Multimodal {
  private readonly vision: Part | undefined;
  private readonly audio: Part | undefined;
  private readonly cache = new Map<string, Embeddings>();
  /** lookupToken's answers (a scan of the vocabulary each). */
  private readonly tokenIds = new Map<string, number>();

  private constructor(
    parts: MmprojParts,
    readonly vocab: Vocab,
    nThreads: number,
  ) {
    const part = (mm: Mmproj | undefined) => mm && { mm, encoder: new VisionEncoder(mm, nThreads) };
    this.vision = part(parts.vision);
    this.audio = part(parts.audio);
  }

  /** Loads a projector for `model`; each encoder's output width must be the model's embedding width. */
  static async load(path: string, model: Model, opts: MmprojOptions & { nThreads?: number } = {}): Promise<Multimodal> {
    const parts = await Mmproj.loadParts(path, opts);
    const want = embdInputWidth(model.hp);
    for (const mm of [parts.vision, parts.audio]) {
      if (!mm || mm.outputWidth === want) continue;
      parts.vision?.free();
      parts.audio?.free();
      throw new MmprojError(
        `${path}: the ${mm.projector} projector outputs ${mm.outputWidth}-wide embeddings (clip.${mm.hasAudio ? 'audio' : 'vision'}.projection_dim ${mm.projectionDim}, ${mm.deepstackLayers.length} deepstack mergers), the model ${model.path} takes ${want} (n_embd ${model.hp.nEmbd}, n_deepstack_layers ${model.hp.nDeepstack})`,
      );
    }
    return new Multimodal(parts, model.vocab, opts.nThreads ?? 4);
  }

  /** The file's vision encoder, else its audio one. */
  get mm(): Mmproj {
    return (this.vision ?? this.audio)!.mm;
  }

  /** The vision encoder's graphs, else the audio one's. */
  get encoder(): VisionEncoder {
    return (this.vision ?? this.audio)!.encoder;
  }

  get support(): { vision: boolean; audio: boolean } {
    return { vision: this.vision !== undefined, audio: this.audio !== undefined };
  }

  /**
   * mtmd_tokenize: the text split at the markers (one image per marker, in order; images
   * beyond the markers are appended at the end, as llama.node does), each text piece
   * tokenized with special tokens parsed, the image layouts in between, BOS first when
   * the vocabulary adds it.
   */
  tokenize(text: string, images: readonly MediaInput[]): Chunk[] {
    const pieces = text.split(MEDIA_MARKER);
    const nMarkers = pieces.length - 1;
    if (nMarkers > images.length) {
      throw new Error(`the prompt has ${nMarkers} media markers but ${images.length} media were given`);
    }
    // media without a marker go at the end of the prompt
    let prompt = text;
    if (nMarkers < images.length) prompt += MEDIA_MARKER.repeat(images.length - nMarkers);
    const chunks: Chunk[] = [];
    const addTokens = (ids: number[]) => {
      if (ids.length === 0) return;
      const last = chunks.at(-1);
      if (last?.type === 'text') last.tokens.push(...ids);
      else chunks.push({ type: 'text', tokens: ids });
    };
    const addText = (s: string) => {
      if (s) addTokens(this.vocab.encode(s, { addSpecial: false, parseSpecial: true }));
    };
    prompt.split(MEDIA_MARKER).forEach((piece, i) => {
      const media = i > 0 ? images[i - 1]! : undefined;
      if (media && 'samples' in media) this.addAudio(media.samples, chunks, addText);
      else if (media) {
        if (!this.vision) throw new Error(`the projector ${this.mm.path} takes audio, not images`);
        const { mm, encoder } = this.vision;
        // M-RoPE: the grid's rows share the first position and span max(nx, ny)
        const grid = isQwenVL(mm.projector);
        const nonCausal = this.nonCausal;
        for (const part of imageLayout(mm, media)) {
          if (part.kind === 'text') addText(part.text);
          else if (part.kind === 'token') addTokens([this.lookupToken(part.text)]);
          else {
            const img = part.image;
            const g = encoder.tokensFor(img.width, img.height);
            const id = pixelHash(img.width, img.height, img.data);
            chunks.push({
              type: 'image',
              nTokens: g.n,
              nPos: grid ? Math.max(g.nx, g.ny) : g.n,
              nx: g.nx,
              grid,
              nonCausal,
              id,
              encode: () => this.encodeCached(id, () => encoder.encode(img)),
            });
          }
        }
      }
      addText(piece);
    });
    if (this.vocab.addBos) {
      const first = chunks[0];
      if (first?.type === 'text') first.tokens.unshift(this.vocab.bos);
      else chunks.unshift({ type: 'text', tokens: [this.vocab.bos] });
    }
    if (this.vocab.addEos) addTokens([this.vocab.eos]);
    return chunks;
  }

  /** mtmd's lookup_token: the first token whose piece (special tokens rendered) is `text`. */
  private lookupToken(text: string): number {
    const hit = this.tokenIds.get(text);
    if (hit !== undefined) return hit;
    const bytes = String.fromCharCode(...new TextEncoder().encode(text));
    for (let id = 0; id < this.vocab.nTokens; id++) {
      if (this.vocab.pieceBytes(id, true) === bytes) {
        this.tokenIds.set(text, id);
        return id;
      }
    }
    throw new Error(
      `the model's vocabulary has no token ${JSON.stringify(text)}, which ${this.vision?.mm.projector} images need`,
    );
  }

  /**
   * An audio clip (16 kHz mono): its log-mel in 30 s chunks (src/media: Whisper's for qwen2a,
   * ultravox, voxtral, 3000 frames each; Gemma 4's for gemma4a, as many frames as the chunk
   * has), each a chunk of embeddings, between the projector's markers as mtmd puts them:
   * <|audio_bos|>…<|audio_eos|> (qwen2a), [BEGIN_AUDIO]… (voxtral), <|audio>…<audio|>
   * (gemma4a), none (ultravox).
   */
  private addAudio(samples: Float32Array, chunks: Chunk[], addText: (s: string) => void): void {
    if (!this.audio) throw new Error(`the projector ${this.mm.path} takes images, not audio`);
    const { mm, encoder } = this.audio;
    const hp = mm.audio!;
    let mel: { data: Float32Array; nFrames: number }[];
    if (mm.projector === 'gemma4a') mel = gemma4aMel(samples, hp.nMel).chunks;
    else {
      const m = logMelSpectrogram(samples, { nMel: hp.nMel });
      mel = m.chunks.map((data) => ({ data, nFrames: m.nFrames }));
    }
    const [begin, end] = AUDIO_MARKERS[mm.projector] ?? [];
    if (begin) addText(begin);
    for (const { data, nFrames } of mel) {
      const n = encoder.audioTokensFor(nFrames);
      const id = pixelHash(nFrames, hp.nMel, data);
      // in an M-RoPE model too, one position per row (mtmd's set_position_mrope_1d)
      chunks.push({
        type: 'image',
        nTokens: n,
        nPos: n,
        nx: n,
        grid: false,
        nonCausal: false,
        id,
        encode: () => this.encodeCached(id, () => encoder.encodeAudio(data, nFrames)),
      });
    }
    if (end) addText(end);
  }

  private async encodeCached(id: string, compute: () => Promise<Embeddings>) {
    const hit = this.cache.get(id);
    if (hit) return hit;
    const e = await compute();
    if (this.cache.size >= CACHE_LIMIT) this.cache.delete(this.cache.keys().next().value!);
    this.cache.set(id, e);
    return e;
  }

  /** Whether image chunks are decoded with bidirectional attention (mtmd_decode_use_non_causal). */
  private get nonCausal(): boolean {
    const mm = this.vision?.mm;
    // Gemma 4: bidirectional too, but E2B/E4B (text n_embd 1536 or 2560) stay causal
    if (mm?.projector === 'gemma4v') return mm.outputWidth !== 1536 && mm.outputWidth !== 2560;
    return mm?.projector === 'gemma3';
  }

  /**
   * Evaluates chunks into `ctx` for sequence `seq` from position `nPast` (mtmd_helper_eval_chunks):
   * text in n_batch pieces, images as embedding rows; logits for the last text token.
   * Returns the position after the prompt.
   */
  async eval(ctx: Context, chunks: readonly Chunk[], nPast: number, seq = 0): Promise<number> {
    let pos = nPast;
    for (let c = 0; c < chunks.length; c++) {
      const ch = chunks[c];
      const isLast = c === chunks.length - 1;
      if (ch.type === 'text') {
        for (let i = 0; i < ch.tokens.length; i += ctx.nBatch) {
          const part = ch.tokens.slice(i, i + ctx.nBatch);
          const n = part.length;
          const logits = part.map((_, j) => isLast && i + j === ch.tokens.length - 1);
          await ctx.decode({
            tokens: part,
            pos: Array.from({ length: n }, (_, j) => pos + j),
            seqIds: new Array<number>(n).fill(seq),
            logits,
          });
          pos += n;
        }
      } else {
        await this.evalChunk(ctx, ch, pos, seq);
        pos += ch.nPos;
      }
    }
    return pos;
  }

  /**
   * Evaluates one image chunk into `ctx` at positions pos.. of sequence `seq`
   * (mtmd_helper_decode_image_chunk): encoded (or taken from the cache), then its rows
   * decoded in n_batch pieces, non-causally where the model wants it.
   */
  async evalChunk(ctx: Context, ch: Chunk & { type: 'image' }, pos: number, seq = 0): Promise<void> {
    const e = await ch.encode();
    const w = e.width;
    for (let i = 0; i < e.nTokens; i += ctx.nBatch) {
      const n = Math.min(ctx.nBatch, e.nTokens - i);
      await ctx.decode({
        tokens: [],
        embd: e.data.subarray(i * w, (i + n) * w),
        // M-RoPE: every row at the image's first position, placed by its grid cell
        pos: Array.from({ length: n }, (_, j) => (ch.grid ? pos : pos + i + j)),
        seqIds: new Array<number>(n).fill(seq),
        causal: ch.nonCausal ? false : undefined,
        ...(ch.grid
          ? {
              grid: {
                y: Array.from({ length: n }, (_, j) => Math.floor((i + j) / ch.nx)),
                x: Array.from({ length: n }, (_, j) => (i + j) % ch.nx),
              },
            }
          : {}),
      });
    }
  }

  free(): void {
    for (const part of [this.vision, this.audio]) {
      part?.encoder.free();
      part?.mm.free();
    }
    this.cache.clear();
  }
}

/** The flattened token layout of chunks (llama.node's tokenize with media). */
export function chunkLayout(chunks: readonly Chunk[]): ChunkLayout {
  const tokens: number[] = [];
  const chunkPos: number[] = [];
  const chunkPosMedia: number[] = [];
  for (const ch of chunks) {
    chunkPos.push(tokens.length);
    if (ch.type === 'text') tokens.push(...ch.tokens);
    else {
      chunkPosMedia.push(tokens.length);
      for (let i = 0; i < ch.nPos; i++) tokens.push(-1);
    }
  }
  return { tokens, chunkPos, chunkPosMedia, nTokens: tokens.length };
}

/** A hex SHA-256 of an image's size and preprocessed values. */
function pixelHash(width: number, height: number, data: Float32Array): string {
  const h = platform.sha256();
  h.update(new Uint8Array(Int32Array.of(width, height).buffer));
  h.update(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  return Array.from(h.digest(), (b) => b.toString(16).padStart(2, '0')).join('');
}
