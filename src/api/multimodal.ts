// A context's multimodal projector on the engine side (llama.node's initMultimodal): media
// references read and decoded, prompts with <__media__> markers tokenized into text tokens
// and media placeholders, and the placeholders evaluated into the context when the batcher
// reaches them. Runs in the engine worker, as the model does.

import type { PromptMedia } from '../generation/index.js';
import { decodeAudio, decodeImage, detectMediaKind } from '../media/index.js';
import { IMAGE_DEFAULTS } from '../media/types.js';
import type { Context, Model } from '../model/index.js';
import { type Chunk, chunkLayout, type MediaInput, Multimodal } from '../multimodal/mtmd.js';
import { platform } from '../platform/index.js';
import { LlamaError } from './errors.js';

/** initMultimodal's options (llama.node's). */
export interface MultimodalOptions {
  path: string;
  use_gpu?: boolean;
  image_min_tokens?: number;
  image_max_tokens?: number;
}

/** What tokenize() reports for a prompt with media (llama.node's TokenizeResult fields). */
export interface MediaTokenizeResult {
  tokens: number[];
  has_media: boolean;
  bitmap_hashes: string[];
  chunk_pos: number[];
  chunk_pos_media: number[];
}

/** Placeholder ids: one negative id per media item (by its hash), below -1 (llama.cpp's "no token"). */
function placeholderId(hash: string): number {
  return -(2 + (Number.parseInt(hash.slice(0, 7), 16) & 0x0fffffff));
}

const DATA_URL = /^data:([^;,]*)(;base64)?,/;

/**
 * The bytes a media reference names: a file path, a file: URL, a data: URL (base64), or
 * bare base64 (llama.node takes audio data so), read whole up to `maxBytes`.
 */
export async function readMedia(ref: string, maxBytes = IMAGE_DEFAULTS.maxBytes): Promise<Uint8Array> {
  if (typeof ref !== 'string' || ref === '') {
    throw new LlamaError('ERR_OPTION', `media: ${JSON.stringify(ref)} is not a path, file: URL or data: URL`);
  }
  const m = DATA_URL.exec(ref);
  if (m) {
    if (!m[2]) throw new LlamaError('ERR_OPTION', 'media: a data: URL must be base64 (";base64,")');
    return base64(ref.slice(m[0].length));
  }
  let path = ref;
  if (ref.startsWith('file://')) path = decodeURIComponent(new URL(ref).pathname);
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(ref)) {
    throw new LlamaError('ERR_OPTION', `media: ${ref.slice(0, 40)}: only paths, file: URLs and data: URLs are read`);
  }
  let file: ReturnType<typeof platform.openFile>;
  try {
    file = platform.openFile(path);
  } catch (e) {
    // llama.node also takes audio as bare base64 (input_audio.data)
    if (ref.length >= 64 && /^[A-Za-z0-9+/]+={0,2}$/.test(ref)) return base64(ref);
    throw new LlamaError('ERR_OPTION', `media: cannot open ${path}: ${(e as Error).message}`);
  }
  try {
    if (file.size > maxBytes) throw new LlamaError('ERR_OPTION', `media: ${path} is over ${maxBytes} bytes`);
    const bytes = new Uint8Array(file.size);
    await file.readAsync(bytes, 0);
    return bytes;
  } finally {
    file.close();
  }
}

function base64(s: string): Uint8Array {
  const clean = s.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean)) throw new LlamaError('ERR_OPTION', 'media: the data is not base64');
  return Uint8Array.from(atob(clean.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
}

/**
 * Media items kept for prompts being evaluated (each holds its preprocessed pixels until
 * encoded): the most recently tokenized ones. A cached prefix never needs its items again.
 */
const ITEMS_KEPT = 256;

export class EngineMultimodal implements PromptMedia {
  /** The media items of recent prompts, by placeholder id, least recently tokenized first. */
  private readonly items = new Map<number, Chunk & { type: 'image' }>();

  private constructor(
    readonly mtmd: Multimodal,
    private readonly ctx: Context,
  ) {}

  static async load(model: Model, ctx: Context, o: MultimodalOptions): Promise<EngineMultimodal> {
    // use_gpu (llama.node's default: true) puts the projector on the model's GPU, as clip.cpp
    // takes the first GPU backend; ops that device lacks run on the host
    const gpu = o.use_gpu === false ? undefined : model.devices.find((d) => d.type === 'gpu' || d.type === 'accel');
    const mtmd = await Multimodal.load(o.path, model, {
      nThreads: ctx.nThreads,
      ...(gpu ? { device: gpu } : {}),
      ...(o.image_min_tokens !== undefined ? { imageMinTokens: o.image_min_tokens } : {}),
      ...(o.image_max_tokens !== undefined ? { imageMaxTokens: o.image_max_tokens } : {}),
    });
    return new EngineMultimodal(mtmd, ctx);
  }

  get support(): { vision: boolean; audio: boolean } {
    return this.mtmd.support;
  }

  /** Decodes the media references (images need a vision encoder, audio an audio one). */
  async decode(refs: readonly string[]): Promise<MediaInput[]> {
    const out: MediaInput[] = [];
    for (const ref of refs) {
      const bytes = await readMedia(ref);
      const audio = detectMediaKind(bytes) === 'audio';
      // a file with both encoders takes either
      if (!(audio ? this.support.audio : this.support.vision)) {
        throw new LlamaError(
          'ERR_OPTION',
          `media: ${describe(ref)} is ${audio ? 'audio' : 'not audio'}; the projector ${this.mtmd.mm.path} takes ${this.support.audio ? 'audio' : 'images'}`,
        );
      }
      try {
        out.push(audio ? await decodeAudio(bytes) : await decodeImage(bytes));
      } catch (e) {
        throw new LlamaError('ERR_OPTION', `media: ${describe(ref)}: ${(e as Error).message}`);
      }
    }
    return out;
  }

  /** The chunks of a prompt with media, each image registered under its placeholder id. */
  private chunks(text: string, images: readonly MediaInput[]): Chunk[] {
    const chunks = this.mtmd.tokenize(text, images);
    for (const c of chunks) {
      if (c.type !== 'image') continue;
      const id = placeholderId(c.id);
      this.items.delete(id);
      this.items.set(id, c);
    }
    while (this.items.size > ITEMS_KEPT) this.items.delete(this.items.keys().next().value!);
    return chunks;
  }

  /** Prompt tokens with each media position as its item's placeholder id (for the batcher). */
  promptTokens(text: string, images: readonly MediaInput[]): number[] {
    const out: number[] = [];
    for (const c of this.chunks(text, images)) {
      if (c.type === 'text') out.push(...c.tokens);
      else out.push(...new Array<number>(c.nPos).fill(placeholderId(c.id)));
    }
    return out;
  }

  /** llama.node's tokenize(text, media_paths): -1 for every media position, and the chunk layout. */
  tokenize(text: string, images: readonly MediaInput[]): MediaTokenizeResult {
    const chunks = this.chunks(text, images);
    const lay = chunkLayout(chunks);
    return {
      tokens: lay.tokens,
      has_media: lay.chunkPosMedia.length > 0,
      bitmap_hashes: chunks.flatMap((c) => (c.type === 'image' ? [c.id] : [])),
      chunk_pos: lay.chunkPos,
      chunk_pos_media: lay.chunkPosMedia,
    };
  }

  positions(id: number): number {
    const item = this.items.get(id);
    if (!item) throw new Error(`media item ${id} is not known (its prompt was tokenized by another projector)`);
    return item.nPos;
  }

  async evaluate(id: number, seq: number, pos: number): Promise<void> {
    const item = this.items.get(id);
    if (!item) throw new Error(`media item ${id} is not known`);
    await this.mtmd.evalChunk(this.ctx, item, pos, seq);
  }

  free(): void {
    this.items.clear();
    this.mtmd.free();
  }
}

function describe(ref: string): string {
  return ref.startsWith('data:') ? 'a data: URL' : ref.length > 80 ? `${ref.slice(0, 80)}…` : ref;
}
