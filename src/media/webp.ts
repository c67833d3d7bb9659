// WebP to RGB8 (alpha dropped, as stb_image drops it for the other formats mtmd reads). The RIFF
// container and the VP8/VP8L/VP8X headers are read here first, so a size over the limits, a
// truncated file or a broken header is a MediaError before any pixel is decoded; the pixels come
// from libwebp built to WebAssembly (@jsquash/webp), imported when the first WebP is decoded.
// An animated WebP gives its first frame, placed on a black canvas of the declared size.
import { Wasm } from '../backends/cpu/wasm-api.js';
import { platform } from '../platform/index.js';
import { MediaError } from './errors.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import type { DecodedImage } from './types.js';

const fail = (message: string): never => {
  throw new MediaError('WebP', message);
};
const u24 = (b: Uint8Array, at: number) => b[at] | (b[at + 1] << 8) | (b[at + 2] << 16);
const u32 = (b: Uint8Array, at: number) => (u24(b, at) | (b[at + 3] << 24)) >>> 0;
const tag = (b: Uint8Array, at: number) => String.fromCharCode(b[at], b[at + 1], b[at + 2], b[at + 3]);

interface Chunk {
  fourcc: string;
  /** The payload (without the 8-byte chunk header). */
  data: Uint8Array;
  /** The whole chunk, header and padding included. */
  raw: Uint8Array;
}

/** The chunks in `b[at, end)`; a chunk running past `end` is a truncated file. */
function chunks(b: Uint8Array, at: number, end: number, where: string): Chunk[] {
  const out: Chunk[] = [];
  while (at + 8 <= end) {
    const fourcc = tag(b, at);
    const size = u32(b, at + 4);
    if (at + 8 + size > end)
      fail(`${where}chunk '${fourcc}' declares ${size} bytes, only ${end - at - 8} remain (truncated)`);
    const next = Math.min(end, at + 8 + size + (size & 1));
    out.push({ fourcc, data: b.subarray(at + 8, at + 8 + size), raw: b.subarray(at, next) });
    at = next;
  }
  return out;
}

/** The size a VP8 (lossy) or VP8L (lossless) bitstream declares, its header checked. */
function bitstreamSize(c: Chunk): { width: number; height: number } {
  const d = c.data;
  if (c.fourcc === 'VP8L') {
    if (d.length < 5) fail(`VP8L header is truncated (${d.length} of 5 bytes)`);
    if (d[0] !== 0x2f) fail(`VP8L signature is 0x${d[0].toString(16)}, not 0x2f (corrupt)`);
    const bits = u32(d, 1);
    if (bits >>> 29 !== 0) fail(`VP8L version ${bits >>> 29} is not 0 (corrupt)`);
    return { width: (bits & 0x3fff) + 1, height: ((bits >>> 14) & 0x3fff) + 1 };
  }
  if (d.length < 10) fail(`VP8 header is truncated (${d.length} of 10 bytes)`);
  if (d[0] & 1) fail('VP8 bitstream does not start with a key frame (corrupt)');
  if (d[3] !== 0x9d || d[4] !== 0x01 || d[5] !== 0x2a) fail('VP8 start code is missing (corrupt)');
  const partition = (d[0] | (d[1] << 8) | (d[2] << 16)) >>> 5;
  if (10 + partition > d.length) fail(`VP8 first partition of ${partition} bytes runs past the chunk (truncated)`);
  return { width: (d[6] | (d[7] << 8)) & 0x3fff, height: (d[8] | (d[9] << 8)) & 0x3fff };
}

const isBitstream = (c: Chunk) => c.fourcc === 'VP8 ' || c.fourcc === 'VP8L';

/** A still WebP of one frame's chunks (ALPH and VP8, or VP8L), for the decoder. */
function stillWebp(frame: Chunk[], width: number, height: number): Uint8Array {
  const alph = frame.find((c) => c.fourcc === 'ALPH');
  const parts = frame.filter((c) => c === alph || isBitstream(c)).map((c) => c.raw);
  if (alph) {
    const vp8x = new Uint8Array(18);
    vp8x.set([0x56, 0x50, 0x38, 0x58, 10, 0, 0, 0, 0x10]);
    vp8x.set([(width - 1) & 0xff, ((width - 1) >> 8) & 0xff, (width - 1) >> 16], 12);
    vp8x.set([(height - 1) & 0xff, ((height - 1) >> 8) & 0xff, (height - 1) >> 16], 15);
    parts.unshift(vp8x);
  }
  const size = parts.reduce((n, p) => n + p.length, 4);
  const out = new Uint8Array(8 + size);
  out.set([0x52, 0x49, 0x46, 0x46, size & 0xff, (size >> 8) & 0xff, (size >> 16) & 0xff, size >>> 24]);
  out.set([0x57, 0x45, 0x42, 0x50], 8);
  let at = 12;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

interface Plan {
  /** The canvas. */
  width: number;
  height: number;
  /** What the decoder gets: the file, or the first frame as a still WebP. */
  bytes: Uint8Array;
  /** Where the decoded frame goes on the canvas, and its size. */
  x: number;
  y: number;
  frameWidth: number;
  frameHeight: number;
}

/** Reads and checks the container and headers: what to decode, and where it goes. */
export function planWebp(b: Uint8Array, limits: ImageLimits): Plan {
  if (b.length < 20) fail(`file of ${b.length} bytes is truncated (no chunk header)`);
  const riff = u32(b, 4);
  if (riff < 12) fail(`RIFF size ${riff} is invalid (corrupt)`);
  if (8 + riff > b.length) fail(`RIFF declares ${8 + riff} bytes, the file has ${b.length} (truncated)`);
  const top = chunks(b, 12, 8 + riff, '');
  const first = top[0];
  if (!first) fail('no chunk after the RIFF header (truncated)');
  if (isBitstream(first)) {
    const { width, height } = bitstreamSize(first);
    checkDimensions('WebP', width, height, limits);
    return { width, height, bytes: b, x: 0, y: 0, frameWidth: width, frameHeight: height };
  }
  if (first.fourcc !== 'VP8X') fail(`first chunk is '${first.fourcc}', not VP8, VP8L or VP8X (corrupt)`);
  if (first.data.length < 10) fail(`VP8X chunk of ${first.data.length} bytes is truncated (10 needed)`);
  const width = u24(first.data, 4) + 1;
  const height = u24(first.data, 7) + 1;
  checkDimensions('WebP', width, height, limits);
  const animated = (first.data[0] & 0x02) !== 0;
  if (!animated) {
    const bs = top.find(isBitstream) ?? fail('VP8X file has no VP8 or VP8L chunk (truncated or corrupt)');
    const s = bitstreamSize(bs);
    if (s.width !== width || s.height !== height)
      fail(`VP8X canvas ${width}x${height} and bitstream ${s.width}x${s.height} differ (corrupt)`);
    return { width, height, bytes: b, x: 0, y: 0, frameWidth: width, frameHeight: height };
  }
  const anmf = top.find((c) => c.fourcc === 'ANMF') ?? fail('animated file has no ANMF frame (truncated or corrupt)');
  const f = anmf.data;
  if (f.length < 16) fail(`ANMF chunk of ${f.length} bytes is truncated (16 needed)`);
  const x = u24(f, 0) * 2;
  const y = u24(f, 3) * 2;
  const frameWidth = u24(f, 6) + 1;
  const frameHeight = u24(f, 9) + 1;
  if (x + frameWidth > width || y + frameHeight > height)
    fail(`first frame ${frameWidth}x${frameHeight} at ${x},${y} lies outside the ${width}x${height} canvas (corrupt)`);
  const frame = chunks(f, 16, f.length, 'ANMF ');
  const bs = frame.find(isBitstream) ?? fail('first frame has no VP8 or VP8L chunk (truncated or corrupt)');
  const s = bitstreamSize(bs);
  if (s.width !== frameWidth || s.height !== frameHeight)
    fail(`first frame ${frameWidth}x${frameHeight} and its bitstream ${s.width}x${s.height} differ (corrupt)`);
  return { width, height, bytes: stillWebp(frame, frameWidth, frameHeight), x, y, frameWidth, frameHeight };
}

/** What libwebp's decoder returns (an ImageData, or its polyfill outside a browser). */
interface Rgba {
  width: number;
  height: number;
  data: Uint8ClampedArray;
}
type Decode = (bytes: ArrayBuffer) => Promise<Rgba>;

let codec: Promise<Decode> | undefined;

/** libwebp's decoder, imported and instantiated once (again after a failure: a page may go back online). */
function webpDecoder(): Promise<Decode> {
  codec ??= (async () => {
    const mod = await import('@jsquash/webp/decode.js');
    // Node's fetch reads no file: URL, so outside a page its .wasm is read through the platform
    // seam and compiled here; a browser fetches it beside the module (`llama-ts web` serves it at
    // /vendor/)
    if (platform.runtime() !== 'web') {
      const wasm = platform.readAsset(new URL(import.meta.resolve('@jsquash/webp/codec/dec/webp_dec.wasm')));
      await mod.init(new Wasm.Module(wasm) as never);
    }
    return mod.default as unknown as Decode;
  })().catch((e: unknown) => {
    codec = undefined;
    throw e;
  });
  return codec;
}

export async function decodeWebp(b: Uint8Array, limits: ImageLimits): Promise<DecodedImage> {
  const plan = planWebp(b, limits);
  const decode = await webpDecoder();
  const copy = plan.bytes.slice().buffer;
  let rgba: Rgba;
  try {
    rgba = await decode(copy);
  } catch (e) {
    throw new MediaError('WebP', `libwebp cannot decode it (truncated or corrupt): ${(e as Error).message ?? e}`);
  }
  if (rgba.width !== plan.frameWidth || rgba.height !== plan.frameHeight)
    fail(`decoded ${rgba.width}x${rgba.height}, the header declares ${plan.frameWidth}x${plan.frameHeight} (corrupt)`);
  const data = new Uint8Array(plan.width * plan.height * 3);
  const src = rgba.data;
  for (let r = 0; r < plan.frameHeight; r++) {
    let o = ((plan.y + r) * plan.width + plan.x) * 3;
    let i = r * plan.frameWidth * 4;
    for (let c = 0; c < plan.frameWidth; c++, i += 4) {
      data[o++] = src[i];
      data[o++] = src[i + 1];
      data[o++] = src[i + 2];
    }
  }
  return { width: plan.width, height: plan.height, data };
}
