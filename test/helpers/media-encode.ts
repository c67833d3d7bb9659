// Small encoders for the media tests: PNG (every colour type, depth, filter and interlace),
// BMP and WAV files built from known samples, so a test knows the pixels and samples a
// decoder must give back without a reference file.
import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function crc32(b: Uint8Array): number {
  let c = 0xffffffff;
  for (const x of b) c = CRC_TABLE[(c ^ x) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

export function pngChunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  v.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length)));
  return out;
}

export function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export const PNG_SIGNATURE = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

export function pngHeader(width: number, height: number, depth: number, colorType: number, interlace = 0): Uint8Array {
  const d = new Uint8Array(13);
  const v = new DataView(d.buffer);
  v.setUint32(0, width);
  v.setUint32(4, height);
  d.set([depth, colorType, 0, 0, interlace], 8);
  return pngChunk('IHDR', d);
}

export interface PngSpec {
  width: number;
  height: number;
  colorType: 0 | 2 | 3 | 4 | 6;
  depth: 1 | 2 | 4 | 8 | 16;
  interlace?: 0 | 1;
  /** Samples, row-major, `channels` per pixel (palette: indices), each < 2^depth. */
  samples: number[];
  /** RGB triples (colour type 3). */
  palette?: number[];
}

const CHANNELS = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 } as const;
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
];

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** A PNG of `spec`; row `y` of each pass uses filter `y % 5` (all five filter types). */
export function encodePng(spec: PngSpec): Uint8Array {
  const ch = CHANNELS[spec.colorType];
  const passes = spec.interlace ? ADAM7 : [[0, 0, 1, 1]];
  const bpp = Math.max(1, (ch * spec.depth) >> 3);
  const raw: number[] = [];
  for (const [x0, y0, dx, dy] of passes) {
    const w = Math.ceil((spec.width - x0) / dx);
    const h = Math.ceil((spec.height - y0) / dy);
    if (w <= 0 || h <= 0) continue;
    const stride = Math.ceil((w * ch * spec.depth) / 8);
    let prev = new Uint8Array(stride);
    for (let y = 0; y < h; y++) {
      const row = new Uint8Array(stride);
      for (let x = 0; x < w; x++) {
        for (let c = 0; c < ch; c++) {
          const s = spec.samples[((y0 + y * dy) * spec.width + x0 + x * dx) * ch + c];
          if (spec.depth === 16) {
            row[(x * ch + c) * 2] = s >> 8;
            row[(x * ch + c) * 2 + 1] = s & 0xff;
          } else {
            const bit = (x * ch + c) * spec.depth;
            row[bit >> 3] |= s << (8 - spec.depth - (bit & 7));
          }
        }
      }
      const f = y % 5;
      raw.push(f);
      for (let i = 0; i < stride; i++) {
        const a = i >= bpp ? row[i - bpp] : 0;
        const b = prev[i];
        const c = i >= bpp ? prev[i - bpp] : 0;
        const pred = [0, a, b, (a + b) >> 1, paeth(a, b, c)][f];
        raw.push((row[i] - pred) & 0xff);
      }
      prev = row;
    }
  }
  const parts = [PNG_SIGNATURE, pngHeader(spec.width, spec.height, spec.depth, spec.colorType, spec.interlace ?? 0)];
  if (spec.palette) parts.push(pngChunk('PLTE', new Uint8Array(spec.palette)));
  parts.push(pngChunk('IDAT', deflateSync(new Uint8Array(raw))), pngChunk('IEND', new Uint8Array(0)));
  return concatBytes(parts);
}

/** The RGB8 pixels stb_image gives for `spec` with 3 channels requested. */
export function expectedRgb(spec: PngSpec): Uint8Array {
  const ch = CHANNELS[spec.colorType];
  const n = spec.width * spec.height;
  const out = new Uint8Array(n * 3);
  const to8 = (s: number) =>
    spec.depth === 16 ? s >> 8 : spec.depth === 8 ? s : s * [0, 0xff, 0x55, 0, 0x11][spec.depth];
  for (let i = 0; i < n; i++) {
    const s = spec.samples.slice(i * ch, i * ch + ch);
    if (spec.colorType === 3) out.set((spec.palette as number[]).slice(s[0] * 3, s[0] * 3 + 3), i * 3);
    else if (ch <= 2) out.fill(to8(s[0]), i * 3, i * 3 + 3);
    else out.set([to8(s[0]), to8(s[1]), to8(s[2])], i * 3);
  }
  return out;
}

/** Deterministic samples below 2^depth. */
export function sampleRamp(count: number, depth: number, seed = 7): number[] {
  const out: number[] = [];
  let s = seed;
  for (let i = 0; i < count; i++) {
    s = (s * 1103515245 + 12345) >>> 0;
    out.push((s >>> 8) % 2 ** depth);
  }
  return out;
}

export interface WavSpec {
  sampleRate: number;
  channels: number;
  /** 8/16/24/32 PCM, or 32/64 with `float`. */
  bits: 8 | 16 | 24 | 32 | 64;
  float?: boolean;
  /** Interleaved samples in [-1, 1). */
  samples: ArrayLike<number>;
  extensible?: boolean;
}

/** A WAV file of `spec` (integer samples are the float ones scaled and rounded). */
export function encodeWav(spec: WavSpec): Uint8Array {
  const bytes = spec.bits >> 3;
  const dataLen = spec.samples.length * bytes;
  const fmtLen = spec.extensible ? 40 : 16;
  const out = new Uint8Array(12 + 8 + fmtLen + 8 + dataLen);
  const v = new DataView(out.buffer);
  const put = (at: number, s: string) => {
    for (let i = 0; i < 4; i++) out[at + i] = s.charCodeAt(i);
  };
  put(0, 'RIFF');
  v.setUint32(4, out.length - 8, true);
  put(8, 'WAVE');
  put(12, 'fmt ');
  v.setUint32(16, fmtLen, true);
  const tagValue = spec.float ? 3 : 1;
  v.setUint16(20, spec.extensible ? 0xfffe : tagValue, true);
  v.setUint16(22, spec.channels, true);
  v.setUint32(24, spec.sampleRate, true);
  v.setUint32(28, spec.sampleRate * spec.channels * bytes, true);
  v.setUint16(32, spec.channels * bytes, true);
  v.setUint16(34, spec.bits, true);
  if (spec.extensible) {
    v.setUint16(36, 22, true);
    v.setUint16(38, spec.bits, true);
    v.setUint16(44, tagValue, true);
    out.set([0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xaa, 0x00, 0x38, 0x9b, 0x71], 46);
  }
  const d = 20 + fmtLen;
  put(d, 'data');
  v.setUint32(d + 4, dataLen, true);
  for (let i = 0; i < spec.samples.length; i++) {
    const s = spec.samples[i];
    const at = d + 8 + i * bytes;
    if (spec.float) {
      if (spec.bits === 32) v.setFloat32(at, s, true);
      else v.setFloat64(at, s, true);
    } else if (spec.bits === 8) out[at] = Math.max(0, Math.min(255, Math.round(s * 128 + 128)));
    else if (spec.bits === 16) v.setInt16(at, Math.max(-32768, Math.min(32767, Math.round(s * 32768))), true);
    else if (spec.bits === 24) {
      const x = Math.max(-8388608, Math.min(8388607, Math.round(s * 8388608)));
      out[at] = x & 0xff;
      out[at + 1] = (x >> 8) & 0xff;
      out[at + 2] = (x >> 16) & 0xff;
    } else v.setInt32(at, Math.max(-2147483648, Math.min(2147483647, Math.round(s * 2147483648))), true);
  }
  return out;
}

/** `n` interleaved samples of a few sines and a little noise, in [-0.9, 0.9]. */
export function toneSamples(n: number, channels: number, rate: number, seed = 3): Float32Array {
  const out = new Float32Array(n * channels);
  let s = seed;
  for (let i = 0; i < n; i++) {
    for (let c = 0; c < channels; c++) {
      s = (s * 1103515245 + 12345) >>> 0;
      const t = i / rate;
      out[i * channels + c] =
        0.5 * Math.sin(2 * Math.PI * (220 + 110 * c) * t) +
        0.3 * Math.sin(2 * Math.PI * 3100 * t) +
        0.1 * ((s >>> 8) / 2 ** 24 - 0.5);
    }
  }
  return out;
}

/** A 24-bit bottom-up BMP (40-byte header) of RGB pixels. */
export function encodeBmp24(width: number, height: number, rgb: Uint8Array): Uint8Array {
  const row = (width * 3 + 3) & ~3;
  const out = new Uint8Array(54 + row * height);
  const v = new DataView(out.buffer);
  out.set([0x42, 0x4d]);
  v.setUint32(2, out.length, true);
  v.setUint32(10, 54, true);
  v.setUint32(14, 40, true);
  v.setInt32(18, width, true);
  v.setInt32(22, height, true);
  v.setUint16(26, 1, true);
  v.setUint16(28, 24, true);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const s = (y * width + x) * 3;
      const d = 54 + (height - 1 - y) * row + x * 3;
      out.set([rgb[s + 2], rgb[s + 1], rgb[s]], d);
    }
  return out;
}

/** A GIF89a of palette indices (global palette of 2^bits RGB entries), LZW-coded without resets. */
export function encodeGif(width: number, height: number, palette: number[], indices: Uint8Array, bits = 8): Uint8Array {
  const head = [...'GIF89a'].map((c) => c.charCodeAt(0));
  const out: number[] = [...head, width & 255, width >> 8, height & 255, height >> 8, 0x80 | (bits - 1), 0, 0];
  for (let i = 0; i < 1 << bits; i++) out.push(palette[i * 3] ?? 0, palette[i * 3 + 1] ?? 0, palette[i * 3 + 2] ?? 0);
  out.push(0x2c, 0, 0, 0, 0, width & 255, width >> 8, height & 255, height >> 8, 0);
  const min = Math.max(2, bits);
  out.push(min);
  // a clear code before every pixel keeps the code size fixed: simple and valid
  const clear = 1 << min;
  const size = min + 1;
  const bytes: number[] = [];
  let acc = 0;
  let n = 0;
  const put = (code: number) => {
    acc |= code << n;
    n += size;
    while (n >= 8) {
      bytes.push(acc & 255);
      acc >>= 8;
      n -= 8;
    }
  };
  for (const i of indices) {
    put(clear);
    put(i);
  }
  put(clear + 1);
  if (n > 0) bytes.push(acc & 255);
  for (let i = 0; i < bytes.length; i += 255) {
    const chunk = bytes.slice(i, i + 255);
    out.push(chunk.length, ...chunk);
  }
  out.push(0, 0x3b);
  return new Uint8Array(out);
}
