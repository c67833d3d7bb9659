// WebP files made at test time with libwebp's own encoder (@jsquash/webp, WebAssembly), and the
// pixels libwebp's own decoder gives them: the references the media layer's WebP path is held to.
import { readFileSync } from 'node:fs';
import decodeRef, { init as initDecode } from '@jsquash/webp/decode.js';
import encode, { init as initEncode } from '@jsquash/webp/encode.js';
import { Wasm } from '../../src/backends/cpu/wasm-api.js';

const wasm = (path: string) =>
  new Wasm.Module(readFileSync(new URL(import.meta.resolve(`@jsquash/webp/codec/${path}`))));
let ready: Promise<void> | undefined;
const setup = () =>
  (ready ??= (async () => {
    // Node 20 has WebAssembly SIMD, so the encoder's init picks its SIMD build: its .wasm must match
    await initEncode(wasm('enc/webp_enc_simd.wasm') as never);
    await initDecode(wasm('dec/webp_dec.wasm') as never);
  })());

export interface Rgba {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}

/** A w x h RGBA test pattern: smooth gradients plus a fine pattern, alpha 0 on every 5th pixel if `alpha`. */
export function sampleRgba(width: number, height: number, alpha: boolean): Rgba {
  const data = new Uint8ClampedArray(width * height * 4);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 4;
      data[i] = (x * 255) / width;
      data[i + 1] = (y * 255) / height;
      data[i + 2] = ((x ^ y) & 8) * 16 + 40;
      data[i + 3] = alpha && (x + y) % 5 === 0 ? 0 : alpha ? 128 + x : 255;
    }
  return { width, height, data };
}

/** libwebp's encoding of `img`: lossless (exact: transparent pixels keep their RGB) or lossy. */
export async function encodeWebp(img: Rgba, lossless: boolean, quality = 80): Promise<Uint8Array> {
  await setup();
  const opts = lossless ? { lossless: 1, exact: 1 } : { quality };
  return new Uint8Array(await encode(img as never, opts));
}

/** libwebp's own RGBA for a still WebP. */
export async function libwebpRgba(b: Uint8Array): Promise<Rgba> {
  await setup();
  return decodeRef(b.slice().buffer);
}

/** RGBA to RGB, alpha dropped. */
export function rgbOf(img: Rgba): Uint8Array {
  const out = new Uint8Array(img.width * img.height * 3);
  for (let i = 0, o = 0; i < img.data.length; i += 4) {
    out[o++] = img.data[i];
    out[o++] = img.data[i + 1];
    out[o++] = img.data[i + 2];
  }
  return out;
}

const le = (n: number, bytes: number) => Array.from({ length: bytes }, (_, i) => (n >>> (8 * i)) & 0xff);

/** A RIFF chunk: fourcc, little-endian size, payload, padding to even. */
export function riffChunk(fourcc: string, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(8 + payload.length + (payload.length & 1));
  out.set([...fourcc].map((c) => c.charCodeAt(0)));
  out.set(le(payload.length, 4), 4);
  out.set(payload, 8);
  return out;
}

/** A RIFF WEBP file of `chunks`. */
export function webpFile(...chunks: Uint8Array[]): Uint8Array {
  const size = chunks.reduce((n, c) => n + c.length, 4);
  const out = new Uint8Array(8 + size);
  out.set([0x52, 0x49, 0x46, 0x46, ...le(size, 4), 0x57, 0x45, 0x42, 0x50]);
  let at = 12;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/** A VP8X chunk: flags (0x10 alpha, 0x02 animation) and the canvas size. */
export function vp8x(flags: number, width: number, height: number): Uint8Array {
  return riffChunk('VP8X', new Uint8Array([flags, 0, 0, 0, ...le(width - 1, 3), ...le(height - 1, 3)]));
}

/** The chunks after the 12-byte RIFF header of a still WebP (its VP8X dropped). */
export function frameChunks(b: Uint8Array): Uint8Array {
  const body = b.subarray(12);
  return String.fromCharCode(...body.subarray(0, 4)) === 'VP8X' ? body.subarray(18) : body;
}

/** An animated WebP: the canvas, then frames (still WebPs) at even x, y. */
export function animatedWebp(
  width: number,
  height: number,
  frames: { x: number; y: number; w: number; h: number; webp: Uint8Array }[],
): Uint8Array {
  const anmf = frames.map((f) => {
    const head = new Uint8Array([
      ...le(f.x / 2, 3),
      ...le(f.y / 2, 3),
      ...le(f.w - 1, 3),
      ...le(f.h - 1, 3),
      ...le(100, 3),
      0,
    ]);
    const body = frameChunks(f.webp);
    const payload = new Uint8Array(16 + body.length);
    payload.set(head);
    payload.set(body, 16);
    return riffChunk('ANMF', payload);
  });
  return webpFile(vp8x(0x12, width, height), riffChunk('ANIM', new Uint8Array(6)), ...anmf);
}
