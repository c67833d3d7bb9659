// decodeAudio and logMelSpectrogram against llama.cpp's own code built from its sources (mtmd-helper's
// miniaudio decoder asked for f32 mono 16 kHz; mtmd-audio.cpp's whisper log-mel): the SHA-256 prefixes
// below are of those programs' float32 outputs. WAVs of every sample format, 1-3 channels and 8-96 kHz
// are generated here (their bytes are fixed by the encoder), so the resampler and channel mixing are
// checked bit for bit; the mtmd fixture clips check the mel spectrogram bit for bit.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { decodeAudio, detectMediaKind, gemma4aMel, logMelSpectrogram, melFilters } from '../src/media/index.js';
import { cosf, sinf } from '../src/media/sincosf.js';
import { encodeWav, toneSamples, type WavSpec } from './helpers/media-encode.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const sha = (a: Float32Array) =>
  createHash('sha256')
    .update(new Uint8Array(a.buffer, a.byteOffset, a.byteLength))
    .digest('hex')
    .slice(0, 16);

// [rate, channels, bits, float, extensible] -> miniaudio's frames read, its hash, and the length mtmd's buffer has
const MINIAUDIO: [number, number, WavSpec['bits'], boolean, boolean, number, string, number][] = [
  [16000, 1, 16, false, false, 5920, 'a152c42bf94b15eb', 5920],
  [44100, 2, 16, false, false, 5920, '171a1c80629c5996', 5920],
  [48000, 2, 32, true, false, 5920, 'b3ffe1743335f49c', 5921],
  [8000, 1, 8, false, false, 5920, 'f090ddf29dac0b9b', 5920],
  [22050, 1, 24, false, false, 5920, 'ecaafab3ec889177', 5920],
  [16000, 3, 32, false, false, 5920, 'f795742423c5050c', 5920],
  [11025, 2, 64, true, false, 5919, '07a1df7c5679188d', 5919],
  [96000, 1, 16, false, false, 5920, '0e0dcdc2aeb2bf9e', 5921],
  [32000, 2, 16, false, false, 5920, 'ed5bea57373bf53b', 5921],
  [24000, 1, 16, false, true, 5920, '06edd544f5769de5', 5920],
];

describe('decodeAudio: WAV as miniaudio decodes it for mtmd', () => {
  for (const [rate, channels, bits, float, extensible, read, hash, length] of MINIAUDIO) {
    test(`${rate} Hz, ${channels} ch, ${bits}-bit ${float ? 'float' : 'PCM'}${extensible ? ' (extensible)' : ''}`, async () => {
      const n = Math.round(rate * 0.37);
      const wav = encodeWav({
        sampleRate: rate,
        channels,
        bits,
        float,
        extensible,
        samples: toneSamples(n, channels, rate),
      });
      const a = await decodeAudio(wav);
      assert.equal(a.sampleRate, 16000);
      assert.equal(a.samples.length, length);
      assert.equal(sha(a.samples.subarray(0, read)), hash);
      for (let i = read; i < length; i++) assert.equal(a.samples[i], 0, 'frames the resampler could not make stay 0');
    });
  }

  test('detectMediaKind: mtmd magic bytes', () => {
    const b = (s: string) => new Uint8Array([...s].map((c) => c.charCodeAt(0)));
    assert.equal(detectMediaKind(b('RIFF\0\0\0\0WAVEfmt ')), 'audio');
    assert.equal(detectMediaKind(b('ID3\x04\0\0\0\0\0\0\0\0')), 'audio');
    assert.equal(detectMediaKind(new Uint8Array([0xff, 0xfb, 0x90, 0, 0, 0, 0, 0, 0, 0, 0, 0])), 'audio');
    assert.equal(detectMediaKind(b('fLaC\0\0\0\x22\0\0\0\0')), 'audio');
    assert.equal(detectMediaKind(b('RIFF\0\0\0\0WEBPVP8 ')), 'image');
    assert.equal(detectMediaKind(b('fLaC')), 'image', 'under 12 bytes mtmd never takes it for audio');
    // JPEG starts FF D8: not an MPEG sync word (D8 & E0 = C0)
    assert.equal(detectMediaKind(new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 0, 0, 0, 0, 0, 0, 0])), 'image');
  });
});

describe('decodeAudio: FLAC and MP3 (test/fixtures/media, made with flac 1.4 and LAME 3.100)', () => {
  const fixture = (name: string) =>
    new Uint8Array(readFileSync(new URL(`../../test/fixtures/media/${name}`, import.meta.url)));
  test("FLAC is lossless: miniaudio's samples exactly, and the same as the WAV it was made from", async () => {
    const stereo = await decodeAudio(fixture('stereo-44k.flac'));
    assert.equal(sha(stereo.samples), '8149a36b93b1aaff');
    const wav = encodeWav({ sampleRate: 44100, channels: 2, bits: 16, samples: toneSamples(4410, 2, 44100) });
    assert.deepEqual(stereo.samples, (await decodeAudio(wav)).samples);
    assert.equal(sha((await decodeAudio(fixture('mono-22k-24bit.flac'))).samples), '79f6f93136f7317e');
  });
  test("MP3 (mpg123): miniaudio's length, its samples within 1e-4 (minimp3 there)", async () => {
    const a = await decodeAudio(fixture('stereo-44k.mp3'));
    assert.equal(a.samples.length, 5920);
    const MINIAUDIO: [number, number][] = [
      [0, 0],
      [100, 0.45220935344696045],
      [1000, -0.41761618852615356],
      [3000, 0.08966309577226639],
      [5919, 0.11383675038814545],
    ];
    for (const [i, v] of MINIAUDIO)
      assert.ok(Math.abs(a.samples[i] - v) < 1e-4, `sample ${i}: ${a.samples[i]} vs ${v}`);
  });
});

describe('logMelSpectrogram: mtmd-audio.cpp whisper preprocessing', () => {
  test("glibc's sinf/cosf values mtmd's tables hold (Math.sin rounded differs)", () => {
    assert.equal(sinf((2 * Math.PI * 164) / 400), Math.fround(0.5358266830444336));
    assert.notEqual(Math.fround(Math.sin(Math.fround((2 * Math.PI * 164) / 400))), Math.fround(0.5358266830444336));
    assert.equal(sinf((2 * Math.PI * 238) / 400), Math.fround(-0.5620834231376648));
    assert.equal(cosf((2 * Math.PI * 99) / 400), Math.fround(0.01570728048682213));
    assert.equal(cosf((2 * Math.PI * 50) / 400), Math.fround(0.7071067690849304));
  });

  test('Slaney mel filters: triangles of area normalised height, 128 x 201', () => {
    const m = melFilters(128, 400, 16000);
    assert.equal(m.length, 128 * 201);
    // bin 0 (0 Hz) is the left edge of the first filter: weight 0; every filter has some weight
    assert.equal(m[0], 0);
    for (let r = 0; r < 128; r++)
      assert.ok(
        m.subarray(r * 201, r * 201 + 201).some((v) => v > 0),
        `filter ${r}`,
      );
  });

  test('a silent clip: every value is the clamped floor ((log10(2^-24) + 4) / 4)', () => {
    const m = logMelSpectrogram(new Float32Array(8000), { nMel: 80 });
    assert.equal(m.chunks.length, 2);
    const v = Math.fround((Math.fround(Math.log10(2 ** -24)) + 4) / 4);
    assert.ok(m.chunks.every((c) => c.every((x) => x === v)));
  });

  test('clips under 31 s give 2 chunks (oracle build); minSamples n_fft/2+1 gives 1 (later llama.cpp)', () => {
    const s = toneSamples(16000, 1, 16000);
    assert.equal(logMelSpectrogram(s, { nMel: 16 }).chunks.length, 2);
    assert.equal(logMelSpectrogram(s, { nMel: 16, minSamples: 201 }).chunks.length, 1);
    const long = toneSamples(16000 * 45, 1, 16000);
    // 45 s + 30 s of padding: (45 + 30) s * 100 frames/s = 7500 frames -> 2 whole chunks
    assert.equal(logMelSpectrogram(long, { nMel: 8 }).chunks.length, 2);
  });

  const audioDir = sharedPath('fixtures/mtmd/audio');
  const MTMD: [string, string, string, string][] = [
    ['sweep-1.5s', '1822f755381d946f', 'bb74110cc270876d', '143a4867ba21e8ec'],
    ['chord-0.8s', '3495921e5011a90d', '181a12c17a909879', 'dbe3f6ecb871252f'],
    ['noise-0.5s', '1fe7d7605c0f1c48', '3ca165e03c263ad4', 'e3d65d74c20df5f2'],
  ];
  for (const [name, samplesHash, mel31Hash, melHash] of MTMD) {
    test(`${name}.wav: samples and 128-band mel chunks are mtmd's`, {
      skip: audioDir ? false : missingShared('fixtures/mtmd/audio'),
    }, async () => {
      const a = await decodeAudio(readFileSync(`${audioDir}/${name}.wav`));
      assert.equal(sha(a.samples), samplesHash);
      const join = (cs: Float32Array[]) => {
        const out = new Float32Array(cs.reduce((n, c) => n + c.length, 0));
        cs.forEach((c, i) => {
          out.set(c, i * c.length);
        });
        return out;
      };
      const m = logMelSpectrogram(a.samples, { nMel: 128 });
      assert.equal(m.chunks.length, 2);
      assert.equal(m.nFrames, 3000);
      assert.equal(sha(join(m.chunks)), mel31Hash);
      assert.equal(sha(join(logMelSpectrogram(a.samples, { nMel: 128, minSamples: 201 }).chunks)), melHash);
    });
  }
});

describe('gemma4aMel: mtmd-audio.cpp gemma4a preprocessing', () => {
  // [samples, mel bands] -> frames per 30 s chunk and the SHA-256 prefix of mtmd's chunks, one
  // after the other (mtmd_audio_preprocessor_gemma4a of llama.cpp 80fb11ac, built with g++ -O2)
  const CASES: [number, number, number[], string][] = [
    [24000, 128, [149], '323b3dd21c463813'],
    [16000 * 31, 128, [2999, 99], 'e382eaddbac66073'],
    [200, 128, [1], 'ee5fb558554d59cd'],
    [480160, 64, [2999, 1], 'f524372f27738e17'],
  ];
  for (const [n, nMel, frames, hash] of CASES) {
    test(`${n} samples, ${nMel} bands: ${frames.join(' + ')} frames, mtmd's values`, () => {
      const m = gemma4aMel(toneSamples(n, 1, 16000), nMel);
      assert.deepEqual(
        m.chunks.map((c) => c.nFrames),
        frames,
      );
      const all = new Float32Array(m.chunks.reduce((k, c) => k + c.data.length, 0));
      let at = 0;
      for (const c of m.chunks) {
        all.set(c.data, at);
        at += c.data.length;
      }
      assert.equal(sha(all), hash);
    });
  }

  test('a chunk too short for a frame is refused (mtmd fails on it too)', () => {
    assert.throws(() => gemma4aMel(new Float32Array(480001), 16), /1-sample audio chunk is too short/);
  });
});
