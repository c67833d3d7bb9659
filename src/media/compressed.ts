// MP3 and FLAC to f32 frames through the wasm-audio-decoders packages (mpg123 and libFLAC built to
// WebAssembly, embedded in their JavaScript: no native code, Node and browsers alike). FLAC's
// STREAMINFO is read first, so the declared length is checked before anything is decoded; MP3
// declares none, so it is decoded in slices and stopped once past the limit. FLAC is lossless:
// its samples are miniaudio's exactly; MP3 decoders differ (mpg123 here, minimp3 in miniaudio).
import { FLACDecoder } from '@wasm-audio-decoders/flac';
import { MPEGDecoder } from 'mpg123-decoder';
import { MediaError } from './errors.js';

/** Decoded planar channels. */
export interface PlanarFrames {
  sampleRate: number;
  channels: Float32Array[];
}

const MP3_SLICE = 64 * 1024;

export async function decodeMp3(b: Uint8Array, maxSeconds: number): Promise<PlanarFrames> {
  const decoder = new MPEGDecoder();
  await decoder.ready;
  try {
    const parts: Float32Array[][] = [];
    let rate = 0;
    let frames = 0;
    let errors = 0;
    for (let at = 0; at < b.length; at += MP3_SLICE) {
      const r = decoder.decode(b.subarray(at, at + MP3_SLICE));
      errors += r.errors.length;
      if (r.samplesDecoded === 0) continue;
      if (rate && r.sampleRate !== rate)
        throw new MediaError('MP3', `the sample rate changes from ${rate} to ${r.sampleRate} Hz`);
      rate = r.sampleRate;
      frames += r.samplesDecoded;
      parts.push(r.channelData.map((c) => c.slice(0, r.samplesDecoded)));
      if (frames / rate > maxSeconds)
        throw new MediaError(
          'MP3',
          `more than ${maxSeconds} s of audio (the limit); stopped at ${(frames / rate).toFixed(1)} s`,
        );
    }
    if (frames === 0) throw new MediaError('MP3', errors > 0 ? 'corrupt data: no frame decodes' : 'no audio frames');
    const nCh = Math.max(...parts.map((p) => p.length));
    const channels = Array.from({ length: nCh }, () => new Float32Array(frames));
    let o = 0;
    for (const p of parts) {
      for (let c = 0; c < nCh; c++) channels[c].set(p[Math.min(c, p.length - 1)], o);
      o += p[0].length;
    }
    return { sampleRate: rate, channels };
  } finally {
    decoder.free();
  }
}

export async function decodeFlac(b: Uint8Array, maxSeconds: number): Promise<PlanarFrames> {
  // fLaC, then metadata blocks; the first is STREAMINFO (34 bytes)
  if (b.length < 42 || (b[4] & 0x7f) !== 0)
    throw new MediaError('FLAC', 'file is truncated or has no STREAMINFO block');
  const si = b.subarray(8, 42);
  const rate = (si[10] << 12) | (si[11] << 4) | (si[12] >> 4);
  const channels = ((si[12] >> 1) & 7) + 1;
  const total = (si[13] & 15) * 2 ** 32 + ((si[14] << 24) >>> 0) + (si[15] << 16) + (si[16] << 8) + si[17];
  if (rate === 0) throw new MediaError('FLAC', 'STREAMINFO declares a sample rate of 0');
  if (total / rate > maxSeconds)
    throw new MediaError('FLAC', `${(total / rate).toFixed(1)} s of audio is over the limit of ${maxSeconds} s`);
  const decoder = new FLACDecoder();
  await decoder.ready;
  try {
    const r = await decoder.decodeFile(b);
    if (r.samplesDecoded === 0)
      throw new MediaError(
        'FLAC',
        `no frame decodes (truncated or corrupt${r.errors.length > 0 ? `: ${r.errors[0]?.message}` : ''})`,
      );
    if (r.samplesDecoded / r.sampleRate > maxSeconds)
      throw new MediaError('FLAC', `more than ${maxSeconds} s of audio (the limit)`);
    if (total > 0 && r.samplesDecoded < total)
      throw new MediaError(
        'FLAC',
        `STREAMINFO declares ${total} samples, ${r.samplesDecoded} decode (truncated or corrupt)`,
      );
    // the wasm build scales a b-bit sample x to x / (2^(b-1) - 1); miniaudio (dr_flac) to x / 2^(b-1):
    // x is recovered by rounding (exact to 24 bits) and scaled as miniaudio does
    const d = 2 ** (r.bitDepth - 1) - 1;
    const out = r.channelData.slice(0, channels).map((c) => c.slice(0, r.samplesDecoded));
    if (r.bitDepth <= 24) for (const c of out) for (let i = 0; i < c.length; i++) c[i] = Math.round(c[i] * d) / (d + 1);
    return { sampleRate: r.sampleRate, channels: out };
  } finally {
    decoder.free();
  }
}
