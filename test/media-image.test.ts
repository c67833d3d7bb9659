// decodeImage against stb_image (what mtmd decodes with, 3 channels): the mtmd fixture PNGs
// hash to stb_image's own output (SHA-256 prefixes recorded from stb_image 2.30 as vendored in
// llama.cpp), and generated PNGs of every colour type, bit depth, filter and interlace give the
// pixels stb's rules give (alpha dropped, gray replicated, 16-bit high byte, low-bit gray scaled).
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { decodeImage, imageFormat } from '../src/media/index.js';
import { encodePng, expectedRgb, type PngSpec, sampleRamp } from './helpers/media-encode.js';
import { missingShared, sharedPath } from './helpers/shared.js';
import { animatedWebp, encodeWebp, libwebpRgba, rgbOf, sampleRgba } from './helpers/webp-encode.js';

const STB = {
  'alpha-50x30.png': [50, 30, 'b443c01a0f952030'],
  'checker-37x53.png': [37, 53, '7235e5c51970a30b'],
  'grad-64x48.png': [64, 48, '0f6c7550b7d1f867'],
  'gray-40x40.png': [40, 40, '1e8db9177b0696a7'],
  'pano-1200x400.png': [1200, 400, '4a0b7f5f24578603'],
  'photo-640x480.png': [640, 480, 'd6e3f77648f80186'],
} as const;

const imgDir = sharedPath('fixtures/mtmd/img');

describe('decodeImage: mtmd fixture PNGs', { skip: imgDir ? false : missingShared('fixtures/mtmd/img') }, () => {
  for (const [name, [w, h, sha]] of Object.entries(STB)) {
    test(`${name} is stb_image's pixels`, async () => {
      const img = await decodeImage(readFileSync(`${imgDir}/${name}`));
      assert.equal(img.width, w);
      assert.equal(img.height, h);
      assert.equal(img.data.length, w * h * 3);
      assert.equal(createHash('sha256').update(img.data).digest('hex').slice(0, 16), sha);
    });
  }
});

// BMP, GIF and JPEG files made with ImageMagick 6.9 (test/fixtures/media/, 17x11 and 23x13): all hash
// to stb_image's pixels (JPEG: baseline 4:4:4, progressive 4:2:0, 4:2:2 with a restart marker after
// every MCU, 4:1:1 (stb's nearest-neighbour upsampling), progressive gray).
const STB_FORMATS: Record<string, string> = {
  'argb32.bmp': 'e307f90f250365ae',
  'mono1.bmp': '22e7eb6f1ea7b978',
  'os2.bmp': '1f0504a84f374757',
  'pal4.bmp': '53114784f6ba8132',
  'comp.gif': '9e380ecc9aebeedb',
  'inter.gif': '122c142757bdb2b1',
  'trans.gif': 'cf09be86eca2d94e',
  'base444.jpg': 'eed082ec5f9c58d8',
  'prog420.jpg': 'd5448c9eb6afaf4c',
  'rst422.jpg': 'a000106e880fe050',
  's411.jpg': 'b4974f92bcc712ee',
  'gray-prog.jpg': '7b3f4a6fadcb00c3',
};
const fixture = (name: string) => readFileSync(new URL(`../../test/fixtures/media/${name}`, import.meta.url));

describe('decodeImage: BMP, GIF, JPEG as stb_image', () => {
  for (const [name, sha] of Object.entries(STB_FORMATS)) {
    test(`${name} is stb_image's pixels`, async () => {
      const img = await decodeImage(fixture(name));
      assert.equal(img.width * img.height * 3, img.data.length);
      assert.equal(createHash('sha256').update(img.data).digest('hex').slice(0, 16), sha);
    });
  }
});

describe('decodeImage: PNG colour types, depths, interlace', () => {
  const cases: [PngSpec['colorType'], PngSpec['depth']][] = [
    [0, 1],
    [0, 2],
    [0, 4],
    [0, 8],
    [0, 16],
    [2, 8],
    [2, 16],
    [3, 1],
    [3, 2],
    [3, 4],
    [3, 8],
    [4, 8],
    [4, 16],
    [6, 8],
    [6, 16],
  ];
  const ch = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
  for (const [colorType, depth] of cases) {
    for (const interlace of [0, 1] as const) {
      test(`colour type ${colorType}, ${depth}-bit${interlace ? ', Adam7' : ''}`, async () => {
        const width = 13;
        const height = 11;
        const palette = colorType === 3 ? sampleRamp(3 * 2 ** depth, 8, 99) : undefined;
        const spec: PngSpec = {
          width,
          height,
          colorType,
          depth,
          interlace,
          palette,
          samples: sampleRamp(width * height * ch[colorType], depth, colorType * 31 + depth),
        };
        const img = await decodeImage(encodePng(spec));
        assert.equal(img.width, width);
        assert.equal(img.height, height);
        assert.deepEqual(img.data, expectedRgb(spec));
      });
    }
  }

  test('a 1x1 interlaced image (six empty passes)', async () => {
    const spec: PngSpec = { width: 1, height: 1, colorType: 2, depth: 8, interlace: 1, samples: [10, 20, 30] };
    assert.deepEqual((await decodeImage(encodePng(spec))).data, new Uint8Array([10, 20, 30]));
  });

  test('imageFormat reads magic bytes', () => {
    assert.equal(imageFormat(new Uint8Array([0xff, 0xd8, 0xff, 0xe0])), 'JPEG');
    assert.equal(imageFormat(new TextEncoder().encode('GIF89a')), 'GIF');
    assert.equal(imageFormat(new TextEncoder().encode('BM')), 'BMP');
    assert.equal(imageFormat(new TextEncoder().encode('RIFF\0\0\0\0WEBP')), 'WebP');
    assert.equal(imageFormat(new TextEncoder().encode('RIFF\0\0\0\0WAVE')), undefined);
  });
});

// WebP (beyond mtmd, whose stb_image has none): files made by libwebp's encoder at test time, held
// to libwebp's own decoded pixels with alpha dropped (lossless: the source exactly).
describe('decodeImage: WebP', () => {
  const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex').slice(0, 16);
  const psnr = (a: Uint8Array, b: Uint8Array) => {
    let se = 0;
    for (let i = 0; i < a.length; i++) se += (a[i] - b[i]) ** 2;
    return 10 * Math.log10((255 * 255 * a.length) / se);
  };

  test('lossless (VP8L) is the source RGB exactly, alpha dropped', async () => {
    for (const alpha of [false, true]) {
      const src = sampleRgba(45, 31, alpha);
      const file = await encodeWebp(src, true);
      assert.equal(String.fromCharCode(...file.subarray(12, 16)), 'VP8L');
      const img = await decodeImage(file);
      assert.equal(img.width, 45);
      assert.equal(img.height, 31);
      assert.deepEqual(img.data, rgbOf(src));
    }
  });

  test("lossy (VP8) is libwebp's pixels, close to the source", async () => {
    const src = sampleRgba(64, 40, false);
    const file = await encodeWebp(src, false, 90);
    assert.equal(String.fromCharCode(...file.subarray(12, 16)), 'VP8 ');
    const img = await decodeImage(file);
    assert.equal(img.width, 64);
    assert.equal(img.height, 40);
    assert.deepEqual(img.data, rgbOf(await libwebpRgba(file)));
    assert.equal(sha(img.data), '69baf84d6f7eaf35');
    const db = psnr(img.data, rgbOf(src));
    // a sanity bound: the pattern's 8-pixel checker is hard on VP8's 4:2:0 chroma (27 dB at quality 90)
    assert.ok(db > 25, `PSNR ${db.toFixed(1)} dB`);
  });

  test("lossy with alpha (VP8X, ALPH) is libwebp's RGB, alpha dropped", async () => {
    const src = sampleRgba(50, 30, true);
    const file = await encodeWebp(src, false, 90);
    assert.equal(String.fromCharCode(...file.subarray(12, 16)), 'VP8X');
    const ref = await libwebpRgba(file);
    assert.ok(
      ref.data.some((v, i) => i % 4 === 3 && v === 0),
      'the reference keeps transparent pixels',
    );
    const img = await decodeImage(file);
    assert.equal(img.width, 50);
    assert.equal(img.height, 30);
    assert.deepEqual(img.data, rgbOf(ref));
    assert.ok(psnr(img.data, rgbOf(src)) > 25);
  });

  test('animated (VP8X, ANMF): the first frame at its offset on a black canvas', async () => {
    const f1 = sampleRgba(20, 12, true);
    const f2 = sampleRgba(30, 20, false);
    const lossy = await encodeWebp(f1, false, 90);
    for (const first of [await encodeWebp(f1, true), lossy]) {
      const file = animatedWebp(40, 30, [
        { x: 6, y: 10, w: 20, h: 12, webp: first },
        { x: 0, y: 0, w: 30, h: 20, webp: await encodeWebp(f2, true) },
      ]);
      const img = await decodeImage(file);
      assert.equal(img.width, 40);
      assert.equal(img.height, 30);
      const want = new Uint8Array(40 * 30 * 3);
      const frame = rgbOf(await libwebpRgba(first));
      for (let y = 0; y < 12; y++) want.set(frame.subarray(y * 60, y * 60 + 60), ((10 + y) * 40 + 6) * 3);
      assert.deepEqual(img.data, want);
      if (first !== lossy) assert.deepEqual(frame, rgbOf(f1));
    }
  });
});
