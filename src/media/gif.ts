// GIF to RGB8: the first frame as stb_image composes it (what mtmd gets): the canvas starts black,
// transparent pixels are not drawn, and when the screen's background index is not 0, pixels the
// frame does not cover take the global palette's background entry with red and blue swapped (stb
// copies its BGR-ordered palette entry as is). LZW codes, interlacing and the frame rectangle are
// checked; a stream that ends early is an error (stb would read zeros).
import { MediaError } from './errors.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import type { DecodedImage } from './types.js';

const fail = (msg: string): never => {
  throw new MediaError('GIF', msg);
};

export function decodeGif(b: Uint8Array, limits: ImageLimits): DecodedImage {
  let pos = 6;
  const u8 = () => {
    if (pos >= b.length) fail(`file is truncated at byte ${pos}`);
    return b[pos++];
  };
  const u16 = () => u8() | (u8() << 8);
  const skip = (n: number) => {
    pos += n;
  };
  const width = u16();
  const height = u16();
  const flags = u8();
  const bgIndex = u8();
  u8();
  checkDimensions('GIF', width, height, limits);
  // palettes as [r, g, b, alpha]
  const readPalette = (n: number, transparent: number) => {
    const p = new Uint8Array(256 * 4);
    for (let i = 0; i < n; i++) p.set([u8(), u8(), u8(), i === transparent ? 0 : 255], i * 4);
    return p;
  };
  const global = flags & 0x80 ? readPalette(2 << (flags & 7), -1) : undefined;
  let transparent = -1;
  let eflags = 0;
  const out = new Uint8Array(width * height * 3);
  for (;;) {
    const tag = u8();
    if (tag === 0x3b) fail('no image in the file');
    if (tag === 0x21) {
      const ext = u8();
      if (ext === 0xf9) {
        const len = u8();
        if (len === 4) {
          eflags = u8();
          u16();
          if (transparent >= 0 && global) global[transparent * 4 + 3] = 255;
          if (eflags & 1) {
            transparent = u8();
            if (global) global[transparent * 4 + 3] = 0;
          } else {
            u8();
            transparent = -1;
          }
        } else {
          skip(len);
          continue; // stb leaves the extension's sub-blocks to the tag loop here
        }
      }
      for (let len = u8(); len !== 0; len = u8()) skip(len);
      continue;
    }
    if (tag !== 0x2c) fail(`unknown block 0x${tag.toString(16)} at byte ${pos - 1}`);
    const [x0, y0, w, h] = [u16(), u16(), u16(), u16()];
    if (x0 + w > width || y0 + h > height)
      fail(`frame ${w}x${h} at ${x0},${y0} is outside the ${width}x${height} screen`);
    const lflags = u8();
    let table: Uint8Array;
    if (lflags & 0x80) table = readPalette(2 << (lflags & 7), eflags & 1 ? transparent : -1);
    else if (global) table = global;
    else return fail('no colour table');
    const drawn = new Uint8Array(width * height);
    raster(u8, skip, table, drawn, out, { width, x0, y0, w, h, interlaced: (lflags & 0x40) !== 0 });
    if (bgIndex > 0 && global) {
      for (let i = 0; i < width * height; i++)
        if (!drawn[i]) {
          out[i * 3] = global[bgIndex * 4 + 2];
          out[i * 3 + 1] = global[bgIndex * 4 + 1];
          out[i * 3 + 2] = global[bgIndex * 4];
        }
    }
    return { width, height, data: out };
  }
}

interface Frame {
  width: number;
  x0: number;
  y0: number;
  w: number;
  h: number;
  interlaced: boolean;
}

/** LZW-decodes one frame's raster onto `out`, marking the pixels it covers in `drawn`. */
function raster(
  u8: () => number,
  skip: (n: number) => void,
  table: Uint8Array,
  drawn: Uint8Array,
  out: Uint8Array,
  fr: Frame,
): void {
  const minCode = u8();
  if (minCode > 12) fail(`LZW code size ${minCode} is over 12`);
  const clear = 1 << minCode;
  const prefix = new Int16Array(8192);
  const firstOf = new Uint8Array(8192);
  const suffix = new Uint8Array(8192);
  for (let i = 0; i < clear; i++) {
    prefix[i] = -1;
    firstOf[i] = i;
    suffix[i] = i;
  }
  let codeSize = minCode + 1;
  let mask = (1 << codeSize) - 1;
  let avail = clear + 2;
  let old = -1;
  let first = true;
  let bits = 0;
  let nBits = 0;
  let len = 0;
  // the output cursor, in pixels; interlaced frames go through rows 0,8,.. then 4,12,.. then 2,6,.. then 1,3,..
  let cx = 0;
  let cy = 0;
  let step = fr.interlaced ? 8 : 1;
  let parse = fr.interlaced ? 3 : 0;
  if (fr.w === 0) cy = fr.h;
  const stack = new Uint8Array(8192);
  const emit = (code: number) => {
    let n = 0;
    for (let c = code; c >= 0; c = prefix[c]) stack[n++] = suffix[c];
    while (n > 0) {
      const s = stack[--n];
      if (cy >= fr.h) continue;
      const idx = (fr.y0 + cy) * fr.width + fr.x0 + cx;
      drawn[idx] = 1;
      if (table[s * 4 + 3] > 128) out.set(table.subarray(s * 4, s * 4 + 3), idx * 3);
      if (++cx >= fr.w) {
        cx = 0;
        cy += step;
        while (cy >= fr.h && parse > 0) {
          step = 1 << parse;
          cy = step >> 1;
          parse--;
        }
      }
    }
  };
  for (;;) {
    if (nBits < codeSize) {
      if (len === 0) {
        len = u8();
        if (len === 0) return;
      }
      len--;
      bits |= u8() << nBits;
      nBits += 8;
      continue;
    }
    const code = bits & mask;
    bits >>= codeSize;
    nBits -= codeSize;
    if (code === clear) {
      codeSize = minCode + 1;
      mask = (1 << codeSize) - 1;
      avail = clear + 2;
      old = -1;
      first = false;
    } else if (code === clear + 1) {
      skip(len);
      for (let l = u8(); l > 0; l = u8()) skip(l);
      return;
    } else if (code <= avail) {
      if (first) fail('LZW stream does not start with a clear code');
      if (old >= 0) {
        const p = avail++;
        if (avail > 8192) fail('too many LZW codes');
        prefix[p] = old;
        firstOf[p] = firstOf[old];
        suffix[p] = code === avail ? firstOf[p] : firstOf[code];
      } else if (code === avail) fail('illegal LZW code');
      emit(code);
      if ((avail & mask) === 0 && avail <= 0xfff) {
        codeSize++;
        mask = (1 << codeSize) - 1;
      }
      old = code;
    } else fail('illegal LZW code');
  }
}
