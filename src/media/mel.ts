// Whisper's log-mel spectrogram as mtmd computes it (mtmd-audio.cpp, the whisper preprocessor used by
// qwen2a, qwen2.5-omni, ultravox, voxtral, ...), float32 rounding where its C++ rounds: a periodic
// Hann window, its recursive radix-2 FFT (odd lengths by a direct DFT) over a sin/cos table of n_fft
// entries, power spectrum, Slaney mel filters (librosa's default, area-normalised) summed in double,
// log10 of max(sum, 2^-24), then max-8 clamping and (x + 4) / 4 over the whole clip, cut into chunks of
// 3000 frames (a last, shorter chunk is dropped: it is always padding).
//
// Padding follows the oracle build the fixtures were made with (llama.cpp build 10257): a clip shorter
// than 31 s is first zero-padded to 31 s, then 200 samples reflected in front and 30 s + 200 zeros
// appended, so any clip under 31 s gives 2 chunks (6101 frames). Later llama.cpp pads short clips
// only to n_fft/2 + 1 samples (one chunk): `minSamples` selects that.
//
// gemma4aMel is mtmd's gemma4a preprocessor on the same FFT and frame loop (see there): magnitude,
// HTK filters, natural log, no normalisation, 30 s chunks of their own length.
import { cosf, sinf } from './sincosf.js';

const f = Math.fround;
/** mtmd's mel floor, 5.960464477539063e-08f: 2^-24. */
const MEL_FLOOR = 2 ** -24;

export interface MelOptions {
  /** Mel bands (the projector's clip.audio.num_mel_bins; 128 for qwen2a, 80 for Whisper v2). */
  nMel: number;
  /** FFT size. Default 400. */
  nFft?: number;
  /** Hann window length. Default 400. */
  windowLength?: number;
  /** Hop between frames. Default 160. */
  hopLength?: number;
  /** Sample rate. Default 16000. */
  sampleRate?: number;
  /** Frames per chunk (what the encoder takes at once). Default 3000. */
  chunkFrames?: number;
  /** A shorter clip is zero-padded to this many samples first. Default sampleRate * 31 (see above). */
  minSamples?: number;
}

export interface MelChunks {
  nMel: number;
  /** Frames per chunk. */
  nFrames: number;
  /** Each chunk mel-major: chunk[m * nFrames + t]. */
  chunks: Float32Array[];
}

/** Mel scale options of mtmd's filter bank: HTK (2595·log10(1 + f/700)) instead of Slaney, and Slaney's area normalisation. */
export interface MelFilterOptions {
  htk?: boolean;
  areaNorm?: boolean;
}

/**
 * The mel filter bank mtmd builds (fill_mel_filterbank_matrix, in double, fmin 0, fmax rate/2):
 * nMel x (nFft/2+1). Default: Slaney scale, area-normalised (librosa's default, Whisper's).
 */
export function melFilters(
  nMel: number,
  nFft: number,
  sampleRate: number,
  { htk = false, areaNorm = true }: MelFilterOptions = {},
): Float32Array {
  const minLogHz = 1000;
  const linSlope = 3 / 200;
  const minLogMel = minLogHz * linSlope;
  const logStep = Math.log(6.4) / 27;
  const hzToMel = htk
    ? (hz: number) => 2595 * Math.log10(1 + hz / 700)
    : (hz: number) => (hz < minLogHz ? hz * linSlope : minLogMel + Math.log(hz / minLogHz) / logStep);
  const melToHz = htk
    ? (m: number) => 700 * (10 ** (m / 2595) - 1)
    : (m: number) => (m < minLogMel ? m / linSlope : minLogHz * Math.exp((m - minLogMel) * logStep));
  const fmax = f(0.5 * sampleRate);
  const binHz = sampleRate / nFft;
  const mLo = hzToMel(0);
  const mHi = hzToMel(fmax);
  const hz: number[] = [];
  for (let i = 0; i < nMel + 2; i++) hz.push(melToHz(mLo + (mHi - mLo) * (i / (nMel + 1))));
  const nBins = (nFft >> 1) + 1;
  const out = new Float32Array(nMel * nBins);
  for (let m = 0; m < nMel; m++) {
    const [l, c, r] = [hz[m], hz[m + 1], hz[m + 2]];
    const dl = Math.max(1e-30, c - l);
    const dr = Math.max(1e-30, r - c);
    const enorm = areaNorm ? 2 / Math.max(1e-30, r - l) : 1;
    for (let k = 0; k < nBins; k++) {
      const fq = k * binHz;
      let w = 0;
      if (fq >= l && fq <= c) w = (fq - l) / dl;
      else if (fq > c && fq <= r) w = (r - fq) / dr;
      out[m * nBins + k] = w * enorm;
    }
  }
  return out;
}

/** mtmd's recursive FFT of a real input: `out` gets N complex values (re, im); `scratch` is working space. */
function fftReal(
  cos: Float32Array,
  sin: Float32Array,
  x: Float32Array,
  xo: number,
  n: number,
  out: Float32Array,
  oo: number,
): void {
  const nVals = cos.length;
  if (n === 1) {
    out[oo] = x[xo];
    out[oo + 1] = 0;
    return;
  }
  const half = n >> 1;
  if (n & 1) {
    const step = nVals / n;
    for (let k = 0; k < n; k++) {
      let re = 0;
      let im = 0;
      for (let j = 0; j < n; j++) {
        const idx = (k * j * step) % nVals;
        const v = x[xo + j];
        re = f(re + f(v * cos[idx]));
        im = f(im + f(-v * sin[idx]));
      }
      out[oo + 2 * k] = re;
      out[oo + 2 * k + 1] = im;
    }
    return;
  }
  // as mtmd: the halves are copied after the input (x[xo+n ...]) and transformed into out[oo+2n ...]
  const e = xo + n;
  for (let i = 0; i < half; i++) x[e + i] = x[xo + 2 * i];
  const ef = oo + 2 * n;
  fftReal(cos, sin, x, e, half, out, ef);
  for (let i = 0; i < half; i++) x[e + i] = x[xo + 2 * i + 1];
  const of = ef + n;
  fftReal(cos, sin, x, e, half, out, of);
  const step = nVals / n;
  for (let k = 0; k < half; k++) {
    const re = cos[k * step];
    const im = -sin[k * step];
    const ro = out[of + 2 * k];
    const io = out[of + 2 * k + 1];
    const er = out[ef + 2 * k];
    const ei = out[ef + 2 * k + 1];
    out[oo + 2 * k] = f(f(er + f(re * ro)) - f(im * io));
    out[oo + 2 * k + 1] = f(f(ei + f(re * io)) + f(im * ro));
    out[oo + 2 * (k + half)] = f(f(er - f(re * ro)) + f(im * io));
    out[oo + 2 * (k + half) + 1] = f(f(ei - f(re * io)) - f(im * ro));
  }
}

export function logMelSpectrogram(samples: Float32Array, opts: MelOptions): MelChunks {
  const nMel = opts.nMel;
  const nFft = opts.nFft ?? 400;
  const win = opts.windowLength ?? 400;
  const hop = opts.hopLength ?? 160;
  const rate = opts.sampleRate ?? 16000;
  const chunkFrames = opts.chunkFrames ?? 3000;
  const minSamples = opts.minSamples ?? rate * 31;
  if (!(nMel > 0 && nMel <= 256)) throw new RangeError(`nMel ${nMel} must be in 1..256`);
  if (samples.length === 0) throw new RangeError('no audio samples');
  if (win > nFft) throw new RangeError(`window length ${win} is over the FFT size ${nFft}`);

  const hann = new Float32Array(nFft);
  // the window (periodic), centred in the FFT frame when shorter
  const wOff = (nFft - win) >> 1;
  for (let i = 0; i < win; i++) hann[wOff + i] = 0.5 * (1 - cosf((2 * Math.PI * i) / win));
  const filters = melFilters(nMel, nFft, rate);

  const n = Math.max(samples.length, minSamples, (nFft >> 1) + 1);
  const pad = nFft >> 1;
  const padded = new Float32Array(n + rate * 30 + 2 * pad);
  padded.set(samples, pad);
  for (let i = 0; i < pad; i++) padded[i] = pad - i < samples.length ? samples[pad - i] : 0; // reflected: samples[pad..1]
  const nLen = Math.floor((padded.length - nFft) / hop) + 1;
  const mel = melBands(padded, nLen, {
    nMel,
    nFft,
    hop,
    hann,
    filters,
    magnitude: false,
    log: Math.log10,
    floor: MEL_FLOOR,
  });
  let max = -1e20;
  for (let i = 0; i < mel.length; i++) if (mel[i] > max) max = mel[i];
  max -= 8;
  for (let i = 0; i < mel.length; i++) mel[i] = ((mel[i] < max ? f(max) : mel[i]) + 4) / 4;

  const chunks: Float32Array[] = [];
  for (let off = 0; off + chunkFrames <= nLen; off += chunkFrames) {
    const c = new Float32Array(nMel * chunkFrames);
    for (let m = 0; m < nMel; m++) c.set(mel.subarray(m * nLen + off, m * nLen + off + chunkFrames), m * chunkFrames);
    chunks.push(c);
  }
  return { nMel, nFrames: chunkFrames, chunks };
}

interface BandOptions {
  nMel: number;
  nFft: number;
  hop: number;
  /** The window, nFft long. */
  hann: Float32Array;
  filters: Float32Array;
  /** |X| (gemma4a) instead of |X|². */
  magnitude: boolean;
  log: (x: number) => number;
  /** Band sums below it are raised to it before the log. */
  floor: number;
}

/**
 * The log-mel bands of nLen frames of `padded` (frame t at t·hop), mel-major [nMel][nLen], as
 * mtmd's log_mel_spectrogram worker computes them: the windowed frame (zeros past the end),
 * its FFT, power or magnitude per bin, the filters summed in double (four products a step, in
 * float), floored, log.
 */
function melBands(padded: Float32Array, nLen: number, o: BandOptions): Float32Array {
  const { nMel, nFft, hop, hann, filters } = o;
  const cos = new Float32Array(nFft);
  const sin = new Float32Array(nFft);
  for (let i = 0; i < nFft; i++) {
    const theta = (2 * Math.PI * i) / nFft;
    sin[i] = sinf(theta);
    cos[i] = cosf(theta);
  }
  const nBins = (nFft >> 1) + 1;
  const mel = new Float32Array(nMel * nLen);
  const frame = new Float32Array(nFft * 2);
  const fftOut = new Float32Array(nFft * 8);
  const power = new Float32Array(nBins);
  const floorLog = f(o.log(o.floor));
  let lastNonZero = -1;
  for (let i = padded.length - 1; i >= 0; i--)
    if (padded[i] !== 0) {
      lastNonZero = i;
      break;
    }
  for (let t = 0; t < nLen; t++) {
    const off = t * hop;
    if (off > lastNonZero) {
      // an all-zero frame: every power is 0, so every band is the log of the floor
      for (let m = 0; m < nMel; m++) mel[m * nLen + t] = floorLog;
      continue;
    }
    const valid = Math.min(nFft, Math.max(0, padded.length - off));
    for (let j = 0; j < valid; j++) frame[j] = f(hann[j] * padded[off + j]);
    frame.fill(0, valid);
    fftReal(cos, sin, frame, 0, nFft, fftOut, 0);
    for (let j = 0; j < nBins; j++) {
      const re = fftOut[2 * j];
      const im = fftOut[2 * j + 1];
      const p = f(f(re * re) + f(im * im));
      power[j] = o.magnitude ? Math.sqrt(p) : p;
    }
    for (let m = 0; m < nMel; m++) {
      const row = m * nBins;
      let sum = 0;
      let k = 0;
      for (; k < nBins - 3; k += 4)
        sum += f(
          f(
            f(f(power[k] * filters[row + k]) + f(power[k + 1] * filters[row + k + 1])) +
              f(power[k + 2] * filters[row + k + 2]),
          ) + f(power[k + 3] * filters[row + k + 3]),
        );
      for (; k < nBins; k++) sum += f(power[k] * filters[row + k]);
      mel[m * nLen + t] = o.log(Math.max(sum, o.floor));
    }
  }
  return mel;
}

/** Gemma 4 audio's mel floor, 0.001f. */
const GEMMA4A_FLOOR = f(0.001);
/** Samples per chunk of a gemma4a clip: 30 s at 16 kHz. */
const GEMMA4A_CHUNK = 30 * 16000;

export interface MelFrames {
  nMel: number;
  /** Each chunk mel-major: data[m * nFrames + t]. */
  chunks: { data: Float32Array; nFrames: number }[];
}

/**
 * Gemma 4's audio features as mtmd-audio.cpp's gemma4a preprocessor computes them: the clip cut
 * into 30 s chunks, each padded with 160 zeros in front (half the 20 ms frame) and zeros behind
 * to the frame count PyTorch's unfold of 321-sample windows gives; frames of 512 samples every
 * 160, a 320-sample periodic Hann window at the frame's start (zeros after it), |FFT|, HTK mel
 * filters without area normalisation, ln(max(sum, 0.001)); no normalisation.
 */
export function gemma4aMel(samples: Float32Array, nMel: number): MelFrames {
  const nFft = 512;
  const win = 320;
  const hop = 160;
  const rate = 16000;
  if (!(nMel > 0 && nMel <= 256)) throw new RangeError(`nMel ${nMel} must be in 1..256`);
  if (samples.length === 0) throw new RangeError('no audio samples');
  const hann = new Float32Array(nFft);
  // float arithmetic as the C++ writes it: 0.5f - 0.5f * cosf((2.0f * (float)M_PI * i) / 320)
  const twoPi = f(2 * f(Math.PI));
  for (let i = 0; i < win; i++) hann[i] = f(0.5 - f(0.5 * cosf(f(f(twoPi * i) / win))));
  const filters = melFilters(nMel, nFft, rate, { htk: true, areaNorm: false });
  const chunks: MelFrames['chunks'] = [];
  for (let off = 0; off < samples.length; off += GEMMA4A_CHUNK) {
    const len = Math.min(GEMMA4A_CHUNK, samples.length - off);
    const padLeft = win / 2;
    // C's integer division truncates toward zero
    const frames = Math.trunc((len + padLeft - (win + 1)) / hop) + 1;
    const needed = (frames - 1) * hop + nFft;
    const padded = new Float32Array(Math.max(needed - len, padLeft) + len);
    padded.set(samples.subarray(off, off + len), padLeft);
    const nLen = Math.trunc((padded.length - nFft) / hop) + 1;
    if (nLen <= 0 || padded.length < nFft) {
      throw new RangeError(`a ${len}-sample audio chunk is too short for one ${nFft}-sample frame`);
    }
    const data = melBands(padded, nLen, {
      nMel,
      nFft,
      hop,
      hann,
      filters,
      magnitude: true,
      log: Math.log,
      floor: GEMMA4A_FLOOR,
    });
    // mtmd trims to `frames`; the padding above always gives exactly that many
    chunks.push({ data, nFrames: nLen });
  }
  return { nMel, chunks };
}
