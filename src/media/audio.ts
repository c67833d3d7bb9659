// decodeAudio: bytes to the mono 16 kHz f32 samples mtmd's audio encoders take (mtmd-helper's
// miniaudio decoder: f32, 1 channel, the model's rate), and detectMediaKind, mtmd's check of
// whether a buffer is audio (else it is taken for an image), extended to the audio formats a
// browser decodes (Ogg, WebM, MP4/M4A, AAC: decoded there by its own decoder, native.ts).

import { decodeFlac, decodeMp3 } from './compressed.js';
import { MediaError } from './errors.js';
import { decodeNativeAudio, nativeAudioFormat, unreadMessage } from './native.js';
import { mixPlanarToMono, mixToMono, resampleLinear } from './resample.js';
import { AUDIO_DEFAULTS, type AudioDecodeOptions, type DecodedAudio } from './types.js';
import { decodeWav, isWav } from './wav.js';

export type AudioFormat = 'WAV' | 'MP3' | 'FLAC';

/** The audio format of `b` by mtmd's magic-byte check (RIFF/WAVE, ID3 or an MPEG sync word, fLaC), or undefined. */
export function audioFormat(b: Uint8Array): AudioFormat | undefined {
  if (b.length < 12) return undefined; // mtmd looks at 12 bytes at least
  if (isWav(b)) return 'WAV';
  if ((b[0] === 0x49 && b[1] === 0x44 && b[2] === 0x33) || (b[0] === 0xff && (b[1] & 0xe0) === 0xe0)) return 'MP3';
  if (b[0] === 0x66 && b[1] === 0x4c && b[2] === 0x61 && b[3] === 0x43) return 'FLAC';
  return undefined;
}

/** 'audio' when mtmd would decode `b` as audio, or a browser would (Ogg, WebM, MP4, AAC), else 'image'. */
export function detectMediaKind(b: Uint8Array): 'image' | 'audio' {
  return audioFormat(b) || nativeAudioFormat(b) ? 'audio' : 'image';
}

export async function decodeAudio(bytes: Uint8Array, opts?: AudioDecodeOptions): Promise<DecodedAudio> {
  const o = { ...AUDIO_DEFAULTS, ...opts };
  // AAC's ADTS sync word passes mtmd's MP3 check: it is taken for what it is first
  const native = nativeAudioFormat(bytes);
  if (native) return decodeNativeAudio(native, bytes, o);
  const format = audioFormat(bytes);
  if (!format) throw new MediaError('media', unreadMessage('audio', bytes));
  if (bytes.length > o.maxBytes)
    throw new MediaError(format, `file of ${bytes.length} bytes is over the limit of ${o.maxBytes}`);
  let mono: Float32Array;
  let rate: number;
  if (format === 'WAV') {
    const pcm = decodeWav(bytes, o.maxSeconds);
    if (pcm.data.length === 0) throw new MediaError(format, 'no samples');
    mono = mixToMono(pcm.data, pcm.channels);
    rate = pcm.sampleRate;
  } else {
    const planar = format === 'MP3' ? await decodeMp3(bytes, o.maxSeconds) : await decodeFlac(bytes, o.maxSeconds);
    mono = mixPlanarToMono(planar.channels);
    rate = planar.sampleRate;
  }
  return { sampleRate: o.sampleRate, samples: resampleLinear(mono, rate, o.sampleRate) };
}
