// Hostile media: declared sizes past the limits are refused before any pixel or sample is decoded,
// decompression bombs stop at the size the header declares, and truncated or corrupt files of every
// format are a MediaError naming the format and what was wrong, quickly (no OOM, no hang).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import jpeg from 'jpeg-js';
import { decodeAudio, decodeImage, MediaError } from '../src/media/index.js';
import {
  concatBytes,
  encodeBmp24,
  encodeGif,
  encodePng,
  encodeWav,
  PNG_SIGNATURE,
  pngChunk,
  pngHeader,
  sampleRamp,
  toneSamples,
} from './helpers/media-encode.js';
import { animatedWebp, encodeWebp, riffChunk, sampleRgba, vp8x, webpFile } from './helpers/webp-encode.js';

async function rejects(p: Promise<unknown>, format: string, re: RegExp): Promise<void> {
  const t0 = performance.now();
  await assert.rejects(p, (e: unknown) => {
    assert.ok(e instanceof MediaError, `a MediaError, not ${e}`);
    assert.equal(e.format, format);
    assert.match(e.message, re);
    return true;
  });
  assert.ok(performance.now() - t0 < 3000, 'fails fast');
}

const rgb = new Uint8Array(sampleRamp(12 * 9 * 3, 8, 5));
const png = encodePng({ width: 12, height: 9, colorType: 2, depth: 8, samples: [...rgb] });
const patched = (b: Uint8Array, at: number, bytes: number[]) => {
  const c = b.slice();
  c.set(bytes, at);
  return c;
};
const be32 = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];

describe('hostile PNG', () => {
  test('a side over the limit (IHDR 100000 x 10) is refused before inflating', async () => {
    await rejects(decodeImage(patched(png, 16, be32(100000))), 'PNG', /100000x9 is over the limit of 16384 per side/);
  });
  test('too many pixels (10000 x 10000) is refused', async () => {
    await rejects(
      decodeImage(patched(patched(png, 16, be32(10000)), 20, be32(10000))),
      'PNG',
      /100000000 pixels\) is over the limit of 50000000/,
    );
  });
  test('the caller may lower the limits', async () => {
    await rejects(decodeImage(png, { maxPixels: 100 }), 'PNG', /108 pixels\) is over the limit of 100/);
    await rejects(decodeImage(png, { maxBytes: 100 }), 'PNG', /over the limit of 100/);
  });
  test('a zlib bomb (20 MB of zeros in 20 KB) stops at the size IHDR declares', async () => {
    const bomb = concatBytes([
      PNG_SIGNATURE,
      pngHeader(1000, 1000, 8, 0),
      pngChunk('IDAT', deflateSync(new Uint8Array(20_000_000), { level: 9 })),
      pngChunk('IEND', new Uint8Array(0)),
    ]);
    assert.ok(bomb.length < 40_000);
    await rejects(decodeImage(bomb), 'PNG', /longer than IHDR's 1000x1000 declares/);
  });
  test('truncated in the IDAT chunk', async () => {
    await rejects(decodeImage(png.subarray(0, png.length - 30)), 'PNG', /truncated/);
  });
  test('no IEND chunk', async () => {
    await rejects(decodeImage(png.subarray(0, png.length - 12)), 'PNG', /truncated at byte \d+ \(no IEND chunk\)/);
  });
  test('too little image data for IHDR', async () => {
    const short = concatBytes([
      PNG_SIGNATURE,
      pngHeader(12, 9, 8, 2),
      pngChunk('IDAT', deflateSync(new Uint8Array(50))),
      pngChunk('IEND', new Uint8Array(0)),
    ]);
    await rejects(decodeImage(short), 'PNG', /image data is 50 bytes, IHDR's 12x9 needs 333/);
  });
  test('corrupt zlib data', async () => {
    const idat = png.indexOf(0x49, 33); // 'I' of IDAT
    await rejects(decodeImage(patched(png, idat + 4, [0xff, 0xff, 0xff, 0xff])), 'PNG', /corrupt|truncated/);
  });
  test('an invalid filter type', async () => {
    const raw = new Uint8Array(9 * 37);
    raw[0] = 7;
    const bad = concatBytes([
      PNG_SIGNATURE,
      pngHeader(12, 9, 8, 2),
      pngChunk('IDAT', deflateSync(raw)),
      pngChunk('IEND', new Uint8Array(0)),
    ]);
    await rejects(decodeImage(bad), 'PNG', /invalid filter type 7/);
  });
  test('an invalid bit depth, an unknown critical chunk, a palette image without PLTE', async () => {
    await rejects(decodeImage(patched(png, 24, [3])), 'PNG', /invalid bit depth 3 for colour type 2/);
    const crit = concatBytes([png.subarray(0, 33), pngChunk('ABCD', new Uint8Array(4)), png.subarray(33)]);
    await rejects(decodeImage(crit), 'PNG', /unknown critical chunk "ABCD"/);
    await rejects(decodeImage(patched(png, 25, [3])), 'PNG', /palette image without a PLTE chunk/);
  });
});

describe('hostile JPEG', () => {
  const gray = new Uint8Array(16 * 16 * 4).fill(128);
  const jpg = new Uint8Array(jpeg.encode({ width: 16, height: 16, data: gray }, 90).data);
  const noisy = new Uint8Array(
    jpeg.encode({ width: 16, height: 16, data: new Uint8Array(sampleRamp(1024, 8, 3)) }, 90).data,
  );
  const sof = () => {
    for (let i = 2; i < jpg.length; i++) if (jpg[i] === 0xff && jpg[i + 1] === 0xc0) return i;
    throw new Error('no SOF');
  };
  test('a good one decodes', async () => {
    const img = await decodeImage(jpg);
    assert.equal(img.width, 16);
    assert.ok(Math.abs(img.data[0] - 128) <= 2);
  });
  test('a declared size over the limit', async () => {
    await rejects(
      decodeImage(patched(jpg, sof() + 5, [0xea, 0x60, 0xea, 0x60])),
      'JPEG',
      /60000x60000 is over the limit/,
    );
  });
  test('truncated scan data', async () => {
    let sos = 0;
    for (let i = 2; i < noisy.length; i++) if (noisy[i] === 0xff && noisy[i + 1] === 0xda) sos = i;
    assert.ok(noisy.length > sos + 100);
    await rejects(decodeImage(noisy.subarray(0, sos + 30)), 'JPEG', /truncated: no end-of-image marker/);
  });
  test('truncated before the scan', async () => {
    await rejects(decodeImage(jpg.subarray(0, sof() + 4)), 'JPEG', /truncated/);
  });
  test('corrupt segment structure', async () => {
    await rejects(decodeImage(patched(jpg, sof(), [0x00])), 'JPEG', /expected a marker at byte \d+, found 0x0/);
  });
});

describe('hostile GIF', () => {
  const pal = sampleRamp(256 * 3, 8, 9);
  const gif = encodeGif(10, 6, pal, new Uint8Array(sampleRamp(60, 8, 4)));
  test('a good one decodes (palette lookup)', async () => {
    const img = await decodeImage(gif);
    const first = sampleRamp(60, 8, 4)[0];
    assert.deepEqual([...img.data.subarray(0, 3)], pal.slice(first * 3, first * 3 + 3));
  });
  test('a declared size over the limit', async () => {
    await rejects(decodeImage(patched(gif, 6, [0xff, 0xff, 0xff, 0xff])), 'GIF', /65535x65535 .* over the limit/);
  });
  test('truncated', async () => {
    await rejects(decodeImage(gif.subarray(0, gif.length - 20)), 'GIF', /truncated at byte/);
  });
  test('a frame outside the screen', async () => {
    const at = 13 + 768 + 1;
    await rejects(decodeImage(patched(gif, at, [5])), 'GIF', /outside the 10x6 screen/);
  });
  test('an LZW stream without a leading clear code', async () => {
    const at = 13 + 768 + 10 + 1 + 1; // first data byte of the first sub-block
    await rejects(decodeImage(patched(gif, at, [0x05, gif[at + 1] & 0xfe])), 'GIF', /does not start with a clear code/);
  });
});

describe('hostile BMP', () => {
  const bmp = encodeBmp24(7, 5, new Uint8Array(sampleRamp(105, 8, 2)));
  test('a good one decodes (bottom-up rows)', async () => {
    assert.deepEqual((await decodeImage(bmp)).data, new Uint8Array(sampleRamp(105, 8, 2)));
  });
  test('a declared size over the limit', async () => {
    await rejects(decodeImage(patched(bmp, 18, [0xff, 0xff, 0, 0])), 'BMP', /65535x5 is over the limit/);
  });
  test('truncated pixel data', async () => {
    await rejects(decodeImage(bmp.subarray(0, bmp.length - 10)), 'BMP', /truncated: pixel data needs/);
  });
  test('RLE is refused, as stb_image does', async () => {
    await rejects(decodeImage(patched(bmp, 30, [1])), 'BMP', /RLE compression is not supported/);
  });
});

describe('hostile WebP', async () => {
  const src = sampleRgba(24, 16, true);
  const lossless = await encodeWebp(src, true);
  const lossy = await encodeWebp(sampleRgba(24, 16, false), false);
  const le = (n: number, bytes: number) => Array.from({ length: bytes }, (_, i) => (n >>> (8 * i)) & 0xff);
  const withRiffSize = (b: Uint8Array) => patched(b, 4, le(b.length - 8, 4));
  test('good ones decode', async () => {
    assert.equal((await decodeImage(lossless)).width, 24);
    assert.equal((await decodeImage(lossy)).height, 16);
  });
  test('declared sizes over the limits are refused before decoding', async () => {
    // VP8L: 14-bit sizes minus one at bytes 21..24, flags in the top bits
    const bits = (16383 | (16383 << 14) | ((lossless[24] & 0xf0) << 24)) >>> 0;
    await rejects(
      decodeImage(patched(lossless, 21, le(bits, 4))),
      'WebP',
      /16384x16384 \(268435456 pixels\) is over the limit/,
    );
    // VP8: 14-bit width and height at bytes 26..29
    await rejects(
      decodeImage(patched(lossy, 26, [...le(16000, 2), ...le(16000, 2)])),
      'WebP',
      /16000x16000 .* over the limit/,
    );
    // VP8X: a 24-bit canvas
    const big = webpFile(vp8x(0x10, 100000, 10), riffChunk('VP8L', lossless.subarray(20)));
    await rejects(decodeImage(big), 'WebP', /100000x10 is over the limit of 16384 per side/);
    await rejects(decodeImage(lossless, { maxSide: 20 }), 'WebP', /24x16 is over the limit of 20 per side/);
  });
  test('truncated: short of what RIFF or a chunk declares', async () => {
    await rejects(
      decodeImage(lossless.subarray(0, lossless.length - 10)),
      'WebP',
      /RIFF declares \d+ bytes, the file has \d+ \(truncated\)/,
    );
    await rejects(
      decodeImage(withRiffSize(lossless.slice(0, lossless.length - 10))),
      'WebP',
      /chunk 'VP8L' declares \d+ bytes, only \d+ remain \(truncated\)/,
    );
    await rejects(decodeImage(withRiffSize(lossy.slice(0, 28))), 'WebP', /truncated/);
  });
  test('corrupt headers and data', async () => {
    await rejects(decodeImage(patched(lossless, 20, [0x2e])), 'WebP', /VP8L signature is 0x2e, not 0x2f/);
    await rejects(decodeImage(patched(lossy, 23, [0])), 'WebP', /VP8 start code is missing/);
    await rejects(decodeImage(patched(lossless, 12, [0x41, 0x42, 0x43, 0x44])), 'WebP', /first chunk is 'ABCD'/);
    const mismatch = webpFile(vp8x(0, 30, 16), riffChunk('VP8L', lossless.subarray(20)));
    await rejects(decodeImage(mismatch), 'WebP', /VP8X canvas 30x16 and bitstream 24x16 differ/);
    const garbage = lossless.slice();
    garbage.fill(0xff, 25);
    await rejects(decodeImage(garbage), 'WebP', /libwebp cannot decode it \(truncated or corrupt\)/);
  });
  test('an animation whose first frame lies outside the canvas', async () => {
    const anim = animatedWebp(20, 16, [{ x: 0, y: 0, w: 24, h: 16, webp: lossless }]);
    await rejects(decodeImage(anim), 'WebP', /first frame 24x16 at 0,0 lies outside the 20x16 canvas/);
  });
});

describe('hostile WAV and others', () => {
  const wav = encodeWav({ sampleRate: 16000, channels: 1, bits: 16, samples: toneSamples(1600, 1, 16000) });
  test('a data chunk declaring more than the file has', async () => {
    await rejects(decodeAudio(patched(wav, 40, [0, 0, 0, 0x10])), 'WAV', /declares 268435456 bytes.*truncated/);
  });
  test('a clip over the time limit (declared rate 1 Hz)', async () => {
    await rejects(decodeAudio(patched(wav, 24, [1, 0, 0, 0])), 'WAV', /1600\.0 s of audio is over the limit of 600 s/);
    await rejects(decodeAudio(wav, { maxSeconds: 0.05 }), 'WAV', /over the limit of 0.05 s/);
  });
  test('an unsupported format tag, no fmt chunk, truncated header', async () => {
    await rejects(decodeAudio(patched(wav, 20, [2, 0])), 'WAV', /format tag 2 is not supported/);
    await rejects(decodeAudio(patched(wav, 12, [0x78])), 'WAV', /data chunk before the fmt chunk/);
    await rejects(decodeAudio(wav.subarray(0, 30)), 'WAV', /fmt chunk of 16 bytes is truncated/);
  });
  test('FLAC: truncated, a declared length over the limit; MP3 without frames; non-media is refused', async () => {
    const flac = new Uint8Array(readFileSync(new URL('../../test/fixtures/media/stereo-44k.flac', import.meta.url)));
    await rejects(
      decodeAudio(flac.subarray(0, flac.length >> 1)),
      'FLAC',
      /declares 4410 samples, \d+ decode \(truncated or corrupt\)|no frame decodes \(truncated or corrupt/,
    );
    await rejects(decodeAudio(flac, { maxSeconds: 0.05 }), 'FLAC', /0\.1 s of audio is over the limit of 0\.05 s/);
    await rejects(decodeAudio(flac.subarray(0, 30)), 'FLAC', /truncated or has no STREAMINFO/);
    const junk = new Uint8Array(4000).fill(0x55);
    junk.set([0x49, 0x44, 0x33, 4, 0, 0, 0, 0, 0, 0]);
    await rejects(decodeAudio(junk), 'MP3', /no audio frames|corrupt data/);
    await rejects(decodeImage(new TextEncoder().encode('hello, this is text')), 'media', /not an image/);
    await rejects(decodeImage(new TextEncoder().encode('RIFF\0\0\0\0WEBPVP8 ')), 'WebP', /truncated/);
  });
});
