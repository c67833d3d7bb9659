// WAV (RIFF/WAVE) to interleaved f32 frames, as miniaudio's WAV backend (dr_wav) reads them and its
// converter turns them into f32: PCM u8/s16/s24/s32 and IEEE float 32/64, plain or
// WAVE_FORMAT_EXTENSIBLE. The declared data size is checked against the file and the limits
// before any sample is converted.
import { MediaError } from './errors.js';

export interface PcmFrames {
  sampleRate: number;
  channels: number;
  /** Interleaved f32 samples. */
  data: Float32Array;
}

const fail = (msg: string): never => {
  throw new MediaError('WAV', msg);
};

export function isWav(b: Uint8Array): boolean {
  return b.length >= 12 && tag(b, 0) === 'RIFF' && tag(b, 8) === 'WAVE';
}

function tag(b: Uint8Array, at: number): string {
  return String.fromCharCode(b[at], b[at + 1], b[at + 2], b[at + 3]);
}

export function decodeWav(b: Uint8Array, maxSeconds: number): PcmFrames {
  if (!isWav(b)) fail('not a RIFF/WAVE file');
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  let pos = 12;
  let fmt: { tag: number; channels: number; rate: number; align: number; bits: number } | undefined;
  while (pos + 8 <= b.length) {
    const id = tag(b, pos);
    let size = v.getUint32(pos + 4, true);
    const start = pos + 8;
    if (id === 'fmt ') {
      if (size < 16 || start + size > b.length) fail(`fmt chunk of ${size} bytes is truncated or too short`);
      let formatTag = v.getUint16(start, true);
      if (formatTag === 0xfffe) {
        if (size < 40) fail('WAVE_FORMAT_EXTENSIBLE fmt chunk is shorter than 40 bytes');
        formatTag = v.getUint16(start + 24, true); // the sub-format GUID starts with the format tag
      }
      fmt = {
        tag: formatTag,
        channels: v.getUint16(start + 2, true),
        rate: v.getUint32(start + 4, true),
        align: v.getUint16(start + 12, true),
        bits: v.getUint16(start + 14, true),
      };
    } else if (id === 'data') {
      if (!fmt) fail('data chunk before the fmt chunk');
      const f = fmt as NonNullable<typeof fmt>;
      // streaming writers leave the size at 0 or 0xFFFFFFFF: the data runs to the end of the file
      if (size === 0xffffffff || (size === 0 && b.length > start)) size = b.length - start;
      if (start + size > b.length)
        fail(`data chunk declares ${size} bytes, the file has ${b.length - start} after it (truncated)`);
      return convert(b.subarray(start, start + size), f, maxSeconds);
    }
    pos = start + size + (size & 1);
  }
  return fail(fmt ? 'no data chunk (truncated?)' : 'no fmt chunk');
}

function convert(
  d: Uint8Array,
  fmt: { tag: number; channels: number; rate: number; align: number; bits: number },
  maxSeconds: number,
): PcmFrames {
  const { channels, rate, bits } = fmt;
  if (channels < 1 || channels > 254) fail(`invalid channel count ${channels}`);
  if (rate < 1 || rate > 384000) fail(`invalid sample rate ${rate}`);
  const isFloat = fmt.tag === 3;
  if (fmt.tag !== 1 && !isFloat) fail(`format tag ${fmt.tag} is not supported (PCM or IEEE float only)`);
  if (isFloat ? bits !== 32 && bits !== 64 : ![8, 16, 24, 32].includes(bits))
    fail(`${bits}-bit ${isFloat ? 'float' : 'PCM'} samples are not supported`);
  const bytes = bits >> 3;
  const frameBytes = bytes * channels;
  const frames = Math.floor(d.length / frameBytes);
  if (frames / rate > maxSeconds) fail(`${(frames / rate).toFixed(1)} s of audio is over the limit of ${maxSeconds} s`);
  const n = frames * channels;
  const out = new Float32Array(n);
  const v = new DataView(d.buffer, d.byteOffset, d.byteLength);
  const u8scale = Math.fround(2 / 255); // miniaudio's 0.00784313725490196078f
  for (let i = 0; i < n; i++) {
    const at = i * bytes;
    if (isFloat) out[i] = bits === 32 ? v.getFloat32(at, true) : v.getFloat64(at, true);
    else if (bits === 8) out[i] = Math.fround(Math.fround(d[at] * u8scale) - 1);
    else if (bits === 16) out[i] = v.getInt16(at, true) / 32768;
    else if (bits === 24) out[i] = (((d[at] << 8) | (d[at + 1] << 16) | (d[at + 2] << 24)) >> 8) / 8388608;
    else out[i] = v.getInt32(at, true) / 2147483648;
  }
  return { sampleRate: rate, channels, data: out };
}
