// Media that mtmd does not read (stb_image, miniaudio) but a browser does: AVIF, HEIC, JPEG XL
// and ICO images; Ogg, WebM, MP4/M4A and AAC audio. Where the runtime has its own decoders (the
// web platform's decodeImageNative/decodeAudioNative) they decode these; Node, Deno and Bun
// have none and refuse them. The formats mtmd reads never come here: our decoders give its
// exact pixels and samples, which a browser's (premultiplied alpha, colour management, its own
// resampler) would not. Sizes and durations a container declares are checked before decoding.
import { platform } from '../platform/index.js';
import type { NativeAudio } from '../platform/types.js';
import { MediaError } from './errors.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import { mixPlanarToMono, resampleLinear } from './resample.js';
import type { AudioDecodeOptions, DecodedAudio, DecodedImage } from './types.js';

export type NativeImageFormat = 'AVIF' | 'HEIC' | 'JXL' | 'ICO';
export type NativeAudioFormat = 'Ogg' | 'WebM' | 'MP4' | 'AAC';

const MIME: Record<NativeImageFormat | NativeAudioFormat, string> = {
  AVIF: 'image/avif',
  HEIC: 'image/heic',
  JXL: 'image/jxl',
  ICO: 'image/x-icon',
  Ogg: 'audio/ogg',
  WebM: 'audio/webm',
  MP4: 'audio/mp4',
  AAC: 'audio/aac',
};

export const IMAGES_READ = 'PNG, JPEG, GIF, BMP, WebP';
export const AUDIO_READ = 'WAV, MP3, FLAC';

/** `n` bytes of `b` from `at` as Latin-1 text (magic numbers, box types). */
export function ascii(b: Uint8Array, at: number, n: number): string {
  return String.fromCharCode(...b.subarray(at, at + n));
}

const u32 = (b: Uint8Array, at: number) => ((b[at] << 24) | (b[at + 1] << 16) | (b[at + 2] << 8) | b[at + 3]) >>> 0;

/** An ISO BMFF file's major brand (its leading ftyp box), or undefined. */
function majorBrand(b: Uint8Array): string | undefined {
  return b.length >= 12 && ascii(b, 4, 4) === 'ftyp' ? ascii(b, 8, 4) : undefined;
}

/** Whether the ftyp box lists `brand` among its compatible brands. */
function compatible(b: Uint8Array, brand: string): boolean {
  const end = Math.min(u32(b, 0), b.length);
  for (let at = 16; at + 4 <= end; at += 4) if (ascii(b, at, 4) === brand) return true;
  return false;
}

const HEIF_BRANDS = new Set(['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1']);
// audio (and video, whose audio track a browser decodes) in MP4's family of containers
const MP4_BRANDS = new Set([
  'M4A ',
  'M4B ',
  'M4P ',
  'M4V ',
  'mp41',
  'mp42',
  'isom',
  'iso2',
  'iso4',
  'iso5',
  'iso6',
  'dash',
  '3gp4',
  '3gp5',
  '3gp6',
  '3g2a',
  'qt  ',
  'f4a ',
]);

/** An image format only a browser decodes, by its first bytes, or undefined. */
export function nativeImageFormat(b: Uint8Array): NativeImageFormat | undefined {
  const brand = majorBrand(b);
  if (brand === 'avif' || brand === 'avis') return 'AVIF';
  if (brand && HEIF_BRANDS.has(brand)) return compatible(b, 'avif') ? 'AVIF' : 'HEIC';
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0x0a) return 'JXL'; // a bare codestream
  if (b.length >= 12 && ascii(b, 0, 12) === '\0\0\0\x0cJXL \r\n\x87\n') return 'JXL'; // in its container
  if (b.length >= 6 && u32(b, 0) === 0x00000100 && (b[4] | b[5]) !== 0) return 'ICO';
  return undefined;
}

/** An audio format only a browser decodes, by its first bytes (12 at least, as mtmd's check), or undefined. */
export function nativeAudioFormat(b: Uint8Array): NativeAudioFormat | undefined {
  if (b.length < 12) return undefined;
  if (ascii(b, 0, 4) === 'OggS') return 'Ogg';
  if (u32(b, 0) === 0x1a45dfa3) return 'WebM'; // EBML: WebM and Matroska
  const brand = majorBrand(b);
  if (brand && MP4_BRANDS.has(brand)) return 'MP4';
  // ADTS: an MPEG sync word with layer bits 00, which MPEG audio (MP3) never uses
  if (b[0] === 0xff && (b[1] & 0xf6) === 0xf0) return 'AAC';
  return undefined;
}

/** Whether `b` looks like SVG (XML text with an <svg> element): a vector image, refused. */
export function isSvg(b: Uint8Array): boolean {
  const head = new TextDecoder().decode(b.subarray(0, 4096)).replace(/^\uFEFF?\s*/, '');
  return head.startsWith('<') && /<svg[\s>]/i.test(head);
}

/** The refusal for bytes that are not a format mtmd reads: names the format where it is known. */
export function unreadMessage(kind: 'image' | 'audio', b: Uint8Array): string {
  const read = kind === 'image' ? `not an image mtmd reads (${IMAGES_READ})` : `not audio mtmd reads (${AUDIO_READ})`;
  const native = kind === 'image' ? nativeImageFormat(b) : nativeAudioFormat(b);
  return native
    ? `${read}; ${native} is decoded only in a browser, by its own decoder (llama-ts/web)`
    : `${read} by its first bytes`;
}

/** The runtime's audio decoder where this thread has none of its own (a web worker asks its page). */
let audioRelay: NativeAudioDecoder | undefined;
export type NativeAudioDecoder = (bytes: Uint8Array, mime: string, sampleRate: number) => Promise<NativeAudio>;

/**
 * Sets where this thread's audio goes to be decoded when the platform cannot decode it here:
 * the web engine worker's page (Chromium has no OfflineAudioContext in workers).
 */
export function relayNativeAudio(fn: NativeAudioDecoder | undefined): void {
  audioRelay = fn;
}

/** The box types ISO BMFF boxes hold within [start, end): [type, payload start, end]. */
function* boxes(b: Uint8Array, start: number, end: number): Generator<[string, number, number]> {
  let at = start;
  while (at + 8 <= end) {
    let size = u32(b, at);
    let header = 8;
    if (size === 1) {
      if (at + 16 > end) return;
      size = u32(b, at + 8) * 2 ** 32 + u32(b, at + 12);
      header = 16;
    } else if (size === 0) size = end - at;
    if (size < header || at + size > end) return;
    yield [ascii(b, at + 4, 4), at + header, at + size];
    at += size;
  }
}

function child(b: Uint8Array, start: number, end: number, type: string): [number, number] | undefined {
  for (const [t, s, e] of boxes(b, start, end)) if (t === type) return [s, e];
  return undefined;
}

/** The sizes an image file declares (HEIF's ispe properties, ICO's directory), before any decoding. */
export function declaredSizes(format: NativeImageFormat, b: Uint8Array): [number, number][] {
  const out: [number, number][] = [];
  if (format === 'AVIF' || format === 'HEIC') {
    const meta = child(b, 0, b.length, 'meta');
    const iprp = meta && child(b, meta[0] + 4, meta[1], 'iprp'); // meta is a full box
    const ipco = iprp && child(b, iprp[0], iprp[1], 'ipco');
    if (ipco)
      for (const [t, s, e] of boxes(b, ipco[0], ipco[1]))
        if (t === 'ispe' && e - s >= 12) out.push([u32(b, s + 4), u32(b, s + 8)]);
  } else if (format === 'ICO') {
    const n = b[4] | (b[5] << 8);
    for (let k = 0, at = 6; k < n && at + 16 <= b.length; k++, at += 16) out.push([b[at] || 256, b[at + 1] || 256]);
  }
  return out;
}

/** An EBML variable-length integer at `at`: [value (-1: all ones, an unknown size), its length], or undefined. */
function vint(b: Uint8Array, at: number, keepMarker = false): [number, number] | undefined {
  const first = b[at];
  if (first === undefined || first === 0) return undefined;
  const len = Math.clz32(first) - 23;
  if (at + len > b.length) return undefined;
  const mask = 0xff >> len;
  let v = keepMarker ? first : first & mask;
  let ones = (first & mask) === mask;
  for (let k = 1; k < len; k++) {
    v = v * 256 + b[at + k];
    ones &&= b[at + k] === 0xff;
  }
  return [ones && !keepMarker ? -1 : v, len];
}

/** WebM's Segment > Info > Duration (in TimecodeScale units, 1 ms unless it says), where the muxer wrote one. */
function webmSeconds(b: Uint8Array): number | undefined {
  let at = 0;
  let end = b.length;
  let scale = 1e6;
  // EBML header, then into the Segment, then into Info; stop at the first Cluster
  for (let steps = 0; at < end && steps < 4096; steps++) {
    const id = vint(b, at, true);
    const size = id && vint(b, at + id[1]);
    if (!id || !size) return undefined;
    const body = at + id[1] + size[1];
    const bodyEnd = size[0] < 0 ? end : Math.min(end, body + size[0]);
    if (id[0] === 0x18538067 || id[0] === 0x1549a966) {
      at = body; // a container: walk its children
      end = bodyEnd;
      continue;
    }
    if (id[0] === 0x1f43b675) return undefined;
    if (id[0] === 0x2ad7b1 && size[0] > 0 && size[0] <= 8) {
      scale = 0;
      for (let k = 0; k < size[0]; k++) scale = scale * 256 + b[body + k];
    }
    if (id[0] === 0x4489 && (size[0] === 4 || size[0] === 8) && body + size[0] <= b.length) {
      const v = new DataView(b.buffer, b.byteOffset + body, size[0]);
      const units = size[0] === 4 ? v.getFloat32(0) : v.getFloat64(0);
      // TimecodeScale comes before Duration in every muxer seen; a later one is not looked for
      return (units * scale) / 1e9;
    }
    at = bodyEnd;
  }
  return undefined;
}

/** The seconds an audio file declares (Ogg's last granule position, MP4's movie header, WebM's Info), or undefined. */
export function declaredSeconds(format: NativeAudioFormat, b: Uint8Array): number | undefined {
  if (format === 'Ogg') {
    // the first packet names the codec: Opus counts granules at 48 kHz, Vorbis at its own rate
    const packet = 27 + b[26];
    if (packet + 16 > b.length) return undefined;
    const rate =
      ascii(b, packet, 8) === 'OpusHead'
        ? 48000
        : ascii(b, packet, 7) === '\x01vorbis'
          ? (b[packet + 12] | (b[packet + 13] << 8) | (b[packet + 14] << 16) | (b[packet + 15] << 24)) >>> 0
          : 0;
    if (!rate) return undefined;
    for (let at = b.length - 27; at >= Math.max(0, b.length - 65_536 - 27); at--) {
      if (b[at] !== 0x4f || ascii(b, at, 4) !== 'OggS') continue;
      const lo = (b[at + 6] | (b[at + 7] << 8) | (b[at + 8] << 16) | (b[at + 9] << 24)) >>> 0;
      const hi = (b[at + 10] | (b[at + 11] << 8) | (b[at + 12] << 16) | (b[at + 13] << 24)) >>> 0;
      if (hi === 0xffffffff) continue; // -1: no packet ends on this page
      return (hi * 2 ** 32 + lo) / rate;
    }
    return undefined;
  }
  if (format === 'MP4') {
    const moov = child(b, 0, b.length, 'moov');
    const mvhd = moov && child(b, moov[0], moov[1], 'mvhd');
    if (!mvhd || mvhd[1] - mvhd[0] < 32) return undefined;
    const v1 = b[mvhd[0]] === 1;
    const scale = u32(b, mvhd[0] + (v1 ? 20 : 12));
    const duration = v1 ? u32(b, mvhd[0] + 24) * 2 ** 32 + u32(b, mvhd[0] + 28) : u32(b, mvhd[0] + 16);
    return scale ? duration / scale : undefined;
  }
  if (format === 'WebM') return webmSeconds(b);
  return undefined;
}

function browserError(format: NativeImageFormat | NativeAudioFormat, e: unknown): MediaError {
  if (e instanceof MediaError) return e;
  return new MediaError(format, `the browser cannot decode it: ${(e as Error)?.message ?? String(e)}`);
}

/** An image the browser decodes, as RGB8 (its alpha dropped, as stb_image's 3-channel load does). */
export async function decodeNativeImage(
  format: NativeImageFormat,
  bytes: Uint8Array,
  limits: ImageLimits,
): Promise<DecodedImage> {
  const decode = platform.decodeImageNative;
  if (!decode) throw new MediaError(format, unreadMessage('image', bytes));
  if (bytes.length > limits.maxBytes)
    throw new MediaError(format, `file of ${bytes.length} bytes is over the limit of ${limits.maxBytes}`);
  for (const [w, h] of declaredSizes(format, bytes)) checkDimensions(format, w, h, limits);
  let img: Awaited<ReturnType<typeof decode>>;
  try {
    // the decoded size is checked again before the pixels are read back (formats without a declared size)
    img = await decode(bytes, MIME[format], (w, h) => checkDimensions(format, w, h, limits));
  } catch (e) {
    throw browserError(format, e);
  }
  const { width, height, rgba } = img;
  const data = new Uint8Array(width * height * 3);
  for (let i = 0, o = 0; o < data.length; i += 4) {
    data[o++] = rgba[i];
    data[o++] = rgba[i + 1];
    data[o++] = rgba[i + 2];
  }
  return { width, height, data };
}

/** Audio the browser decodes (and resamples to the rate asked), mixed to mono as miniaudio mixes. */
export async function decodeNativeAudio(
  format: NativeAudioFormat,
  bytes: Uint8Array,
  o: Required<AudioDecodeOptions>,
): Promise<DecodedAudio> {
  const decode = platform.decodeAudioNative ?? audioRelay;
  if (!decode) throw new MediaError(format, unreadMessage('audio', bytes));
  if (bytes.length > o.maxBytes)
    throw new MediaError(format, `file of ${bytes.length} bytes is over the limit of ${o.maxBytes}`);
  const tooLong = (s: number) =>
    new MediaError(format, `${s.toFixed(1)} s of audio is over the limit of ${o.maxSeconds} s`);
  const declared = declaredSeconds(format, bytes);
  if (declared !== undefined && declared > o.maxSeconds) throw tooLong(declared);
  let pcm: NativeAudio;
  try {
    pcm = await decode(bytes, MIME[format], o.sampleRate);
  } catch (e) {
    throw browserError(format, e);
  }
  const n = pcm.channels[0]?.length ?? 0;
  if (n === 0) throw new MediaError(format, 'no samples');
  if (n / pcm.sampleRate > o.maxSeconds) throw tooLong(n / pcm.sampleRate);
  return {
    sampleRate: o.sampleRate,
    samples: resampleLinear(mixPlanarToMono(pcm.channels), pcm.sampleRate, o.sampleRate),
  };
}
