// Channel mixing and resampling as miniaudio's decoder does them for mtmd (ma_decoder asked for
// f32, 1 channel, the model's rate): samples become f32 first, channels are averaged in f32, then
// miniaudio's linear resampler runs (rates reduced by their gcd, linear interpolation, and a 4th-order
// low-pass made of two biquads at min(rate)/2, applied to each input frame when downsampling and to
// each output frame when upsampling). Every step rounds to float32 where miniaudio's C does.
const f = Math.fround;

/** Averages interleaved channels into one (miniaudio's mono_out path: a float sum, then a division). */
export function mixToMono(interleaved: Float32Array, channels: number): Float32Array {
  if (channels === 1) return interleaved;
  const n = Math.floor(interleaved.length / channels);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let t = 0;
    for (let c = 0; c < channels; c++) t = f(t + interleaved[i * channels + c]);
    out[i] = t / channels;
  }
  return out;
}

/** The same average over planar channels (a decoder's per-channel arrays). */
export function mixPlanarToMono(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0];
  const n = channels[0].length;
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    let t = 0;
    for (const c of channels) t = f(t + c[i]);
    out[i] = t / channels.length;
  }
  return out;
}

function gcd(a: number, b: number): number {
  while (b) [a, b] = [b, a % b];
  return a;
}

/** The frame count miniaudio's decoder reports after resampling (ma_calculate_frame_count_after_resampling). */
export function resampledLength(n: number, rateIn: number, rateOut: number): number {
  if (n === 0) return 0;
  if (rateIn === rateOut) return n;
  const N = BigInt(n);
  const I = BigInt(rateIn);
  const O = BigInt(rateOut);
  let out = (N * O) / I;
  const fromFrac = (out * (I / O)) / O;
  const prelim = out * (I % O) + fromFrac;
  if (prelim <= N) out += 1n;
  return Number(out);
}

interface Biquad {
  b0: number;
  b1: number;
  b2: number;
  a1: number;
  a2: number;
  r1: number;
  r2: number;
}

/** miniaudio's ma_lpf of order 4: two second-order sections with Butterworth q values. */
function lowPass(sampleRate: number, cutoff: number): Biquad[] {
  const order = 4;
  const out: Biquad[] = [];
  for (let i = 0; i < order / 2; i++) {
    const q = 1 / (2 * Math.cos((1 + i * 2) * (Math.PI / (order * 2))));
    const w = (2 * Math.PI * cutoff) / sampleRate;
    const s = Math.sin(w);
    const c = Math.cos(w);
    const a = s / (2 * q);
    const a0 = 1 + a;
    out.push({
      b0: f((1 - c) / 2 / a0),
      b1: f((1 - c) / a0),
      b2: f((1 - c) / 2 / a0),
      a1: f((-2 * c) / a0),
      a2: f((1 - a) / a0),
      r1: 0,
      r2: 0,
    });
  }
  return out;
}

function filter(bqs: Biquad[], x: number): number {
  for (const q of bqs) {
    const y = f(f(q.b0 * x) + q.r1);
    q.r1 = f(f(f(q.b1 * x) - f(q.a1 * y)) + q.r2);
    q.r2 = f(f(q.b2 * x) - f(q.a2 * y));
    x = y;
  }
  return x;
}

/**
 * Mono f32 samples from `rateIn` to `rateOut` as ma_linear_resampler does; the result has the
 * length miniaudio's decoder reports (frames the resampler could not produce stay 0, as in mtmd's
 * buffer).
 */
export function resampleLinear(x: Float32Array, rateIn: number, rateOut: number): Float32Array {
  if (rateIn === rateOut) return x;
  const g = gcd(rateIn, rateOut);
  const sIn = rateIn / g;
  const sOut = rateOut / g;
  const bqs = lowPass(Math.max(sIn, sOut), Math.min(sIn, sOut) * 0.5);
  const down = sIn > sOut;
  const advInt = Math.floor(sIn / sOut);
  const advFrac = sIn % sOut;
  const out = new Float32Array(resampledLength(x.length, rateIn, rateOut));
  let tInt = 1;
  let tFrac = 0;
  let x0 = 0;
  let x1 = 0;
  let i = 0;
  for (let o = 0; o < out.length; o++) {
    while (tInt > 0 && i < x.length) {
      x0 = x1;
      x1 = down ? filter(bqs, x[i]) : x[i];
      i++;
      tInt--;
    }
    if (tInt > 0) break; // out of input: the rest stays 0
    const a = f(tFrac / sOut);
    let s = f(x0 + f(f(x1 - x0) * a));
    if (!down) s = filter(bqs, s);
    out[o] = s;
    tInt += advInt;
    tFrac += advFrac;
    if (tFrac >= sOut) {
      tFrac -= sOut;
      tInt++;
    }
  }
  return out;
}
