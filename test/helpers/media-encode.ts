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
