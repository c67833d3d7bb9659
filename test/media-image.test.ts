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
