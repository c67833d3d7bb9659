// PNG to RGB8 as stb_image gives it with 3 channels requested (what mtmd uses): every colour
// type and bit depth, Adam7 interlace; 16-bit samples keep their high byte, gray is replicated,
// alpha (and tRNS) is dropped, not composited; gamma and colour chunks are ignored, as stb does.
// Like stb, chunk CRCs are not checked; the zlib stream (inflated through the platform seam,
// so it runs in browsers too) is, and its size must match what IHDR declares.
import { platform } from '../platform/index.js';
import { MediaError } from './errors.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import type { DecodedImage } from './types.js';

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function isPng(b: Uint8Array): boolean {
  return b.length >= 8 && SIGNATURE.every((v, i) => b[i] === v);
}

const fail = (msg: string): never => {
  throw new MediaError('PNG', msg);
};

/** Samples per pixel for each colour type (0 gray, 2 RGB, 3 palette, 4 gray+alpha, 6 RGBA). */
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
const DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };
/** Adam7 passes: x0, y0, dx, dy. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
];

interface Header {
  width: number;
  height: number;
  depth: number;
  colorType: number;
  interlace: number;
}

/** The passes' sizes (one pass when not interlaced), skipping empty ones as the format does. */
function passes(h: Header): { x0: number; y0: number; dx: number; dy: number; w: number; h: number }[] {
  if (!h.interlace) return [{ x0: 0, y0: 0, dx: 1, dy: 1, w: h.width, h: h.height }];
  return ADAM7.map(([x0, y0, dx, dy]) => ({
    x0,
    y0,
    dx,
    dy,
    w: Math.ceil((h.width - x0) / dx),
    h: Math.ceil((h.height - y0) / dy),
  })).filter((p) => p.w > 0 && p.h > 0);
}

export async function decodePng(b: Uint8Array, limits: ImageLimits): Promise<DecodedImage> {
  if (!isPng(b)) fail('not a PNG signature');
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let pos = 8;
  let hdr: Header | undefined;
  let palette: Uint8Array | undefined;
  const idat: Uint8Array[] = [];
  let idatBytes = 0;
  let ended = false;
  while (!ended) {
    if (pos + 8 > b.length) fail(`file is truncated at byte ${pos} (no IEND chunk)`);
    const len = view.getUint32(pos);
    const type = String.fromCharCode(b[pos + 4], b[pos + 5], b[pos + 6], b[pos + 7]);
    const start = pos + 8;
    if (len > 0x7fffffff || start + len + 4 > b.length)
      fail(`file is truncated: chunk ${JSON.stringify(type)} at byte ${pos} declares ${len} bytes`);
    const data = b.subarray(start, start + len);
    pos = start + len + 4; // the CRC is skipped, as stb_image does
    if (!hdr && type !== 'IHDR') fail(`first chunk is ${JSON.stringify(type)}, not IHDR`);
    switch (type) {
      case 'IHDR': {
        if (hdr) fail('more than one IHDR chunk');
        if (len !== 13) fail(`IHDR chunk is ${len} bytes, not 13`);
        const h: Header = {
          width: view.getUint32(start),
          height: view.getUint32(start + 4),
          depth: data[8],
          colorType: data[9],
          interlace: data[12],
        };
        if (!(h.colorType in CHANNELS)) fail(`invalid colour type ${h.colorType}`);
        if (!DEPTHS[h.colorType].includes(h.depth)) fail(`invalid bit depth ${h.depth} for colour type ${h.colorType}`);
        if (data[10] !== 0) fail(`unknown compression method ${data[10]}`);
        if (data[11] !== 0) fail(`unknown filter method ${data[11]}`);
        if (h.interlace > 1) fail(`unknown interlace method ${h.interlace}`);
        checkDimensions('PNG', h.width, h.height, limits);
        hdr = h;
        break;
      }
      case 'PLTE':
        if (len === 0 || len % 3 !== 0 || len > 768) fail(`PLTE chunk of ${len} bytes is invalid`);
        palette = data;
        break;
      case 'IDAT':
        idat.push(data);
        idatBytes += len;
        if (idatBytes > limits.maxBytes) fail(`compressed image data is over ${limits.maxBytes} bytes`);
        break;
      case 'IEND':
        ended = true;
        break;
      case 'CgBI':
        fail("Apple's CgBI variant is not supported");
        break;
      default:
        // bit 5 of the first letter clear = critical: a decoder that does not know it must stop (stb does)
        if ((b[start - 4] & 0x20) === 0) fail(`unknown critical chunk ${JSON.stringify(type)}`);
    }
  }
  const h = hdr as Header;
  if (idatBytes === 0) fail('no IDAT chunk (no image data)');
  if (h.colorType === 3 && !palette) fail('palette image without a PLTE chunk');
  const channels = CHANNELS[h.colorType];
  const bitsPerPixel = channels * h.depth;
  const ps = passes(h);
  let expected = 0;
  for (const p of ps) expected += p.h * (1 + Math.ceil((p.w * bitsPerPixel) / 8));
  const compressed = idat.length === 1 ? idat[0] : concat(idat, idatBytes);
  let raw: Uint8Array;
  try {
    raw = await platform.inflate(compressed, expected);
  } catch (e) {
    const m = (e as Error).message;
    throw new MediaError(
      'PNG',
      m.startsWith('inflated data is over') ? `image data is longer than IHDR's ${h.width}x${h.height} declares` : m,
    );
  }
  if (raw.length < expected)
    fail(`image data is ${raw.length} bytes, IHDR's ${h.width}x${h.height} needs ${expected} (truncated)`);
  return { width: h.width, height: h.height, data: toRgb(raw, h, ps, palette) };
}

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Reverses the row filters in place; `bpp` is the filter's byte distance (at least 1). */
function unfilter(raw: Uint8Array, at: number, rows: number, stride: number, bpp: number): void {
  let prev = -1;
  for (let y = 0; y < rows; y++) {
    const f = raw[at];
    const row = at + 1;
    if (f > 4) fail(`invalid filter type ${f} on a row`);
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? raw[row + i - bpp] : 0;
      const up = prev >= 0 ? raw[prev + i] : 0;
      let v = raw[row + i];
      switch (f) {
        case 1:
          v += a;
          break;
        case 2:
          v += up;
          break;
        case 3:
          v += (a + up) >> 1;
          break;
        case 4: {
          const c = i >= bpp && prev >= 0 ? raw[prev + i - bpp] : 0;
          const p = a + up - c;
          const pa = Math.abs(p - a);
          const pb = Math.abs(p - up);
          const pc = Math.abs(p - c);
          v += pa <= pb && pa <= pc ? a : pb <= pc ? up : c;
          break;
        }
      }
      raw[row + i] = v;
    }
    prev = row;
    at = row + stride;
  }
}

/** stb_image's scale of low-bit gray to 8 bits. */
const DEPTH_SCALE = [0, 0xff, 0x55, 0, 0x11, 0, 0, 0, 0x01];

function toRgb(raw: Uint8Array, h: Header, ps: ReturnType<typeof passes>, palette?: Uint8Array): Uint8Array {
  const out = new Uint8Array(h.width * h.height * 3);
  const channels = CHANNELS[h.colorType];
  const bpp = Math.max(1, (channels * h.depth) >> 3);
  const step = h.depth === 16 ? 2 : 1; // bytes per sample at 8/16 bits; the high byte is kept
  const nPal = palette ? palette.length / 3 : 0;
  let at = 0;
  for (const p of ps) {
    const stride = Math.ceil((p.w * channels * h.depth) / 8);
    unfilter(raw, at, p.h, stride, bpp);
    for (let y = 0; y < p.h; y++) {
      const row = at + 1 + y * (stride + 1);
      const oy = p.y0 + y * p.dy;
      for (let x = 0; x < p.w; x++) {
        const o = (oy * h.width + p.x0 + x * p.dx) * 3;
        if (h.depth < 8) {
          const bit = x * h.depth;
          const v = (raw[row + (bit >> 3)] >> (8 - h.depth - (bit & 7))) & ((1 << h.depth) - 1);
          if (h.colorType === 3) writePalette(out, o, palette as Uint8Array, v, nPal);
          else out[o] = out[o + 1] = out[o + 2] = v * DEPTH_SCALE[h.depth];
          continue;
        }
        const s = row + x * channels * step;
        switch (h.colorType) {
          case 0:
          case 4:
            out[o] = out[o + 1] = out[o + 2] = raw[s];
            break;
          case 3:
            writePalette(out, o, palette as Uint8Array, raw[s], nPal);
            break;
          default:
            out[o] = raw[s];
            out[o + 1] = raw[s + step];
            out[o + 2] = raw[s + 2 * step];
        }
      }
    }
    at += p.h * (stride + 1);
  }
  return out;
}

function writePalette(out: Uint8Array, o: number, pal: Uint8Array, i: number, n: number): void {
  if (i >= n) fail(`palette index ${i} is past the ${n}-entry PLTE`);
  out[o] = pal[i * 3];
  out[o + 1] = pal[i * 3 + 1];
  out[o + 2] = pal[i * 3 + 2];
}
