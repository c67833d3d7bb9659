// BMP to RGB8 as stb_image reads it: headers of 12/40/56/108/124 bytes, 1/4/8-bit palettes (sized
// from the pixel-data offset, as stb does), 24-bit BGR, 16/32-bit with default or BI_BITFIELDS masks
// (each scaled to 8 bits by stb's bit-replication), bottom-up or top-down rows; RLE and embedded
// JPEG/PNG are refused, as stb does. Reading past the end is an error (stb would read zeros).
import { MediaError } from './errors.js';
import { checkDimensions, type ImageLimits } from './limits.js';
import type { DecodedImage } from './types.js';

const fail = (msg: string): never => {
  throw new MediaError('BMP', msg);
};

class Reader {
  pos = 0;
  constructor(private readonly b: Uint8Array) {}
  u8(): number {
    if (this.pos >= this.b.length) fail(`file is truncated at byte ${this.pos}`);
    return this.b[this.pos++];
  }
  u16(): number {
    return this.u8() | (this.u8() << 8);
  }
  u32(): number {
    return (this.u16() | (this.u16() << 16)) >>> 0;
  }
  skip(n: number): void {
    if (n < 0) fail(`pixel data offset points into the header`);
    this.pos += n;
  }
  /** Fails unless `n` more bytes are there. */
  need(n: number, what: string): void {
    if (this.pos + n > this.b.length)
      fail(`file is truncated: ${what} needs ${n} bytes from byte ${this.pos}, the file has ${this.b.length}`);
  }
}

const highBit = (z: number) => 31 - Math.clz32(z);
const bitCount = (z: number) => {
  let n = 0;
  for (let v = z >>> 0; v; v &= v - 1) n++;
  return n;
};
const MUL = [0, 0xff, 0x55, 0x49, 0x11, 0x21, 0x41, 0x81, 0x01];
const SHIFT = [0, 0, 0, 1, 0, 2, 4, 6, 0];

/** A masked channel scaled to 8 bits by repeating its bits (stb's shiftsigned). */
function channel(v: number, mask: number): number {
  if (!mask) return 0;
  const shift = highBit(mask) - 7;
  const bits = bitCount(mask);
  let x = (v & mask) >>> 0;
  x = shift < 0 ? x << -shift : x >>> shift;
  x >>>= 8 - bits;
  return (x * MUL[bits]) >> SHIFT[bits];
}

export function decodeBmp(b: Uint8Array, limits: ImageLimits): DecodedImage {
  const r = new Reader(b);
  if (r.u8() !== 0x42 || r.u8() !== 0x4d) fail('not a BMP signature');
  r.u32();
  r.u32();
  const offset = r.u32();
  const hsz = r.u32();
  if (![12, 40, 56, 108, 124].includes(hsz)) fail(`unknown header size ${hsz}`);
  let extraRead = 14;
  const width = hsz === 12 ? r.u16() : r.u32();
  const rawHeight = hsz === 12 ? r.u16() : r.u32() | 0;
  if (r.u16() !== 1) fail('plane count is not 1');
  const bpp = r.u16();
  let [mr, mg, mb, ma] = [0, 0, 0, 0];
  const defaults = () => {
    if (bpp === 16) [mr, mg, mb, ma] = [31 << 10, 31 << 5, 31, 0];
    else if (bpp === 32) [mr, mg, mb, ma] = [0xff0000, 0xff00, 0xff, 0xff000000];
    else [mr, mg, mb, ma] = [0, 0, 0, 0];
  };
  if (hsz !== 12) {
    const compress = r.u32();
    if (compress === 1 || compress === 2) fail('RLE compression is not supported');
    if (compress >= 4) fail(`compression ${compress} (embedded JPEG/PNG) is not supported`);
    if (compress === 3 && bpp !== 16 && bpp !== 32) fail(`BI_BITFIELDS with ${bpp} bits per pixel`);
    for (let i = 0; i < 5; i++) r.u32();
    if (hsz === 40 || hsz === 56) {
      if (hsz === 56) for (let i = 0; i < 4; i++) r.u32();
      if (bpp === 16 || bpp === 32) {
        if (compress === 0) defaults();
        else {
          [mr, mg, mb] = [r.u32(), r.u32(), r.u32()];
          extraRead += 12;
          if (mr === mg && mg === mb) fail('red, green and blue masks are equal');
        }
      }
    } else {
      [mr, mg, mb, ma] = [r.u32(), r.u32(), r.u32(), r.u32()];
      if (compress !== 3) defaults();
      for (let i = 0; i < 13; i++) r.u32();
      if (hsz === 124) for (let i = 0; i < 4; i++) r.u32();
    }
  }
  const flip = rawHeight > 0;
  const height = Math.abs(rawHeight);
  checkDimensions('BMP', width, height, limits);
  let psize = 0;
  if (hsz === 12) {
    if (bpp < 24) psize = Math.trunc((offset - extraRead - 24) / 3);
  } else if (bpp < 16) psize = (offset - extraRead - hsz) >> 2;
  if (psize === 0) {
    if (offset < r.pos || offset - r.pos > 1024) fail(`pixel data offset ${offset} is invalid`);
    r.skip(offset - r.pos);
  }
  const out = new Uint8Array(width * height * 3);
  let z = 0;
  if (bpp < 16) {
    if (psize <= 0 || psize > 256) fail(`palette of ${psize} entries is invalid`);
    const pal = new Uint8Array(256 * 3); // entries past the palette read black (stb reads stale memory)
    for (let i = 0; i < psize; i++) {
      const [bl, g, rd] = [r.u8(), r.u8(), r.u8()];
      if (hsz !== 12) r.u8();
      pal.set([rd, g, bl], i * 3);
    }
    r.skip(offset - extraRead - hsz - psize * (hsz === 12 ? 3 : 4));
    if (bpp !== 1 && bpp !== 4 && bpp !== 8) fail(`${bpp} bits per pixel is not supported`);
    const rowBytes = bpp === 1 ? (width + 7) >> 3 : bpp === 4 ? (width + 1) >> 1 : width;
    const pad = -rowBytes & 3;
    r.need(height * (rowBytes + pad) - pad, 'pixel data');
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const byte = b[r.pos + ((x * bpp) >> 3)];
        const idx = bpp === 8 ? byte : bpp === 4 ? (x & 1 ? byte & 15 : byte >> 4) : (byte >> (7 - (x & 7))) & 1;
        out[z++] = pal[idx * 3];
        out[z++] = pal[idx * 3 + 1];
        out[z++] = pal[idx * 3 + 2];
      }
      r.pos += rowBytes + pad;
    }
  } else {
    r.skip(offset - extraRead - hsz);
    if (bpp !== 16 && bpp !== 24 && bpp !== 32) fail(`${bpp} bits per pixel is not supported`);
    const px = bpp >> 3;
    const pad = bpp === 32 ? 0 : -(px * width) & 3;
    const easy = bpp === 24 || (mb === 0xff && mg === 0xff00 && mr === 0xff0000 && ma === 0xff000000);
    if (!easy) {
      if (!mr || !mg || !mb) fail('a colour mask is 0');
      if (bitCount(mr) > 8 || bitCount(mg) > 8 || bitCount(mb) > 8 || bitCount(ma) > 8)
        fail('a colour mask is wider than 8 bits');
    }
    r.need(height * (px * width + pad) - pad, 'pixel data');
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++, r.pos += px) {
        const p = r.pos;
        if (easy) {
          out[z++] = b[p + 2];
          out[z++] = b[p + 1];
          out[z++] = b[p];
        } else {
          const v =
            px === 2 ? b[p] | (b[p + 1] << 8) : (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
          out[z++] = channel(v, mr);
          out[z++] = channel(v, mg);
          out[z++] = channel(v, mb);
        }
      }
      r.pos += pad;
    }
  }
  if (flip) {
    const row = width * 3;
    const tmp = new Uint8Array(row);
    for (let y = 0; y < height >> 1; y++) {
      const a = y * row;
      const c = (height - 1 - y) * row;
      tmp.set(out.subarray(a, a + row));
      out.copyWithin(a, c, c + row);
      out.set(tmp, c);
    }
  }
  return { width, height, data: out };
}
