// The scale searches ggml's quantizers share (ggml-quants.c's make_*_quants), with C's
// float32 arithmetic: every operation goes through Math.fround, in C's evaluation order
// (`w*x*l` is `(w*x)*l`), and C's integer conversions where they happen (a value stored
// into a uint8_t wraps). Each takes the quant weights the caller chose: the importance
// matrix times sqrt(sigma2 + x²), or x-derived weights when there is none.

const fr = Math.fround;

/** Below this absolute maximum a group counts as all zero (ggml's GROUP_MAX_EPS). */
export const GROUP_MAX_EPS = fr(1e-15);
export const F0_1 = fr(0.1);
const F0_05 = fr(0.05);
const FM0_9 = fr(-0.9);

const nbScratch = new Float32Array(1);
const nbBits = new Int32Array(nbScratch.buffer);

/**
 * ggml's nearest_int: the float32 sum with 1.5*2^23 rounds to an integer (ties to even),
 * which is then read back from the mantissa bits. Done on the bits, as C does, so that
 * out-of-range inputs (C only asserts in debug builds) give the same garbage.
 * `v` must be a float32 value.
 */
export function nearestInt(v: number): number {
  nbScratch[0] = v + 12582912;
  return (nbBits[0]! & 0x007fffff) - 0x00400000;
}

/**
 * C's MAX(a, b) macro, `a > b ? a : b`: with a NaN it returns b, where Math.max would
 * return NaN; the quantizers' running maxima depend on that.
 */
export function cMax(a: number, b: number): number {
  // biome-ignore lint/complexity/useMathMinMax: NaN must behave as in C
  return a > b ? a : b;
}

export function clamp(v: number, lo: number, hi: number): number {
  return Math.max(lo, Math.min(hi, v));
}

/**
 * make_qx_quants with rmse_type 1: symmetric quantization of x[xo..xo+n) to
 * [-nmax, nmax-1] (stored +nmax in L[lo..]); tries 18 scales around nmax/max and keeps
 * the best weighted least-squares fit. Weights: qw[qo..] when given, else x². Returns the scale.
 */
export function makeQxQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  L: Uint8Array | Int8Array,
  lo: number,
  qw: Float32Array | null,
  qo: number,
): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]!);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i]!;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  let iscale = fr(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    const l = clamp(nearestInt(fr(iscale * xi)), -nmax, nmax - 1);
    L[lo + i] = l + nmax;
    const w = qw ? qw[qo + i]! : fr(xi * xi);
    sumlx = fr(sumlx + fr(fr(w * xi) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  let scale = suml2 !== 0 ? fr(sumlx / suml2) : 0;
  let best = fr(scale * sumlx);
  for (let is = -9; is <= 9; is++) {
    if (is === 0) continue;
    iscale = fr(-fr(nmax + fr(F0_1 * is)) / max);
    sumlx = 0;
    suml2 = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i]!;
      const l = clamp(nearestInt(fr(iscale * xi)), -nmax, nmax - 1);
      const w = qw ? qw[qo + i]! : fr(xi * xi);
      sumlx = fr(sumlx + fr(fr(w * xi) * l));
      suml2 = fr(suml2 + fr(fr(w * l) * l));
    }
    if (suml2 > 0 && fr(sumlx * sumlx) > fr(best * suml2)) {
      for (let i = 0; i < n; i++) {
        L[lo + i] = nmax + clamp(nearestInt(fr(iscale * x[xo + i]!)), -nmax, nmax - 1);
      }
      scale = fr(sumlx / suml2);
      best = fr(scale * sumlx);
    }
  }
  return scale;
}

/**
 * make_q3_quants with do_rmse: symmetric quantization to [-nmax, nmax-1] refined by up
 * to 5 passes of coordinate descent on the x*x-weighted error; L gets values +nmax.
 */
export function makeQ3Quants(n: number, nmax: number, x: Float32Array, xo: number, L: Int8Array, lo: number): number {
  let max = 0;
  let amax = 0;
  for (let i = 0; i < n; i++) {
    const ax = Math.abs(x[xo + i]!);
    if (ax > amax) {
      amax = ax;
      max = x[xo + i]!;
    }
  }
  if (amax < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  const iscale = fr(-nmax / max);
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    const l = clamp(nearestInt(fr(iscale * xi)), -nmax, nmax - 1);
    L[lo + i] = l;
    const w = fr(xi * xi);
    sumlx = fr(sumlx + fr(fr(w * xi) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let nChanged = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i]!;
      const w = fr(xi * xi);
      const li = L[lo + i]!;
      let slx = fr(sumlx - fr(fr(w * xi) * li));
      if (slx > 0) {
        let sl2 = fr(suml2 - fr(fr(w * li) * li));
        const newL = clamp(nearestInt(fr(fr(xi * sl2) / slx)), -nmax, nmax - 1);
        if (newL !== li) {
          slx = fr(slx + fr(fr(w * xi) * newL));
          sl2 = fr(sl2 + fr(fr(w * newL) * newL));
          if (sl2 > 0 && fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            L[lo + i] = newL;
            sumlx = slx;
            suml2 = sl2;
            nChanged++;
          }
        }
      }
    }
    if (nChanged === 0) break;
  }
  for (let i = 0; i < n; i++) L[lo + i] = L[lo + i]! + nmax;
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}

/** Second result of makeQkx2Quants / makeQkx3Quants: the (positive) min to subtract, C's `*the_min`. */
export let qkxMin = 0;

/**
 * make_qkx2_quants: asymmetric quantization x ~ scale*L + min to [0, nmax] with given
 * weights; scans nstep+1 candidate scales (rmin + rdelta*is + nmax over the range) and
 * keeps the weighted least-squares (scale, min) with the lowest error (abs when useMad).
 * Returns the scale; the min (negated, >= 0) is left in qkxMin.
 */
export function makeQkx2Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  weights: Float32Array,
  L: Uint8Array,
  lo: number,
  Laux: Uint8Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  useMad: boolean,
): number {
  return qkxSearch(false, n, nmax, x, xo, weights, L, lo, Laux, rmin, rdelta, nstep, useMad);
}

/**
 * make_qkx3_quants (the importance-matrix paths' variant of make_qkx2_quants): the same
 * search, from rmin -0.9 in 37 steps of 0.05, giving up on a range that is not positive.
 */
export function makeQkx3Quants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  weights: Float32Array,
  L: Uint8Array,
  lo: number,
  Laux: Uint8Array,
): number {
  return qkxSearch(true, n, nmax, x, xo, weights, L, lo, Laux, FM0_9, F0_05, 36, false);
}

function qkxSearch(
  v3: boolean,
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  weights: Float32Array,
  L: Uint8Array,
  lo: number,
  Laux: Uint8Array,
  rmin: number,
  rdelta: number,
  nstep: number,
  useMad: boolean,
): number {
  let min = x[xo]!;
  let max = x[xo]!;
  let sumW = weights[0]!;
  let sumX = fr(sumW * x[xo]!);
  for (let i = 1; i < n; i++) {
    const xi = x[xo + i]!;
    if (xi < min) min = xi;
    if (xi > max) max = xi;
    const w = weights[i]!;
    sumW = fr(sumW + w);
    sumX = fr(sumX + fr(w * xi));
  }
  if (min > 0) min = 0;
  if (v3 ? max <= min : max === min) {
    L.fill(0, lo, lo + n);
    qkxMin = -min;
    return 0;
  }
  let iscale = fr(nmax / fr(max - min));
  let scale = fr(1 / iscale);
  let bestError = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    const l = clamp(nearestInt(fr(iscale * fr(xi - min))), 0, nmax);
    L[lo + i] = l;
    let diff = fr(fr(fr(scale * l) + min) - xi);
    diff = useMad ? Math.abs(diff) : fr(diff * diff);
    bestError = fr(bestError + fr(weights[i]! * diff));
  }
  if (nstep < 1) {
    qkxMin = -min;
    return scale;
  }
  for (let is = 0; is <= nstep; is++) {
    // min moves to the best fit found so far, and both the range and the offsets follow it
    iscale = fr(fr(fr(rmin + fr(rdelta * is)) + nmax) / fr(max - min));
    let sumL = 0;
    let sumL2 = 0;
    let sumXL = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i]!;
      const l = clamp(nearestInt(fr(iscale * fr(xi - min))), 0, nmax);
      Laux[i] = l;
      const w = weights[i]!;
      const wl = fr(w * l);
      sumL = fr(sumL + wl);
      sumL2 = fr(sumL2 + fr(wl * l));
      sumXL = fr(sumXL + fr(wl * xi));
    }
    const D = fr(fr(sumW * sumL2) - fr(sumL * sumL));
    if (D > 0) {
      let thisScale = fr(fr(fr(sumW * sumXL) - fr(sumX * sumL)) / D);
      let thisMin = fr(fr(fr(sumL2 * sumX) - fr(sumL * sumXL)) / D);
      if (thisMin > 0) {
        thisMin = 0;
        thisScale = fr(sumXL / sumL2);
      }
      let curError = 0;
      for (let i = 0; i < n; i++) {
        let diff = fr(fr(fr(thisScale * Laux[i]!) + thisMin) - x[xo + i]!);
        diff = useMad ? Math.abs(diff) : fr(diff * diff);
        curError = fr(curError + fr(weights[i]! * diff));
      }
      if (curError < bestError) {
        for (let i = 0; i < n; i++) L[lo + i] = Laux[i]!;
        bestError = curError;
        scale = thisScale;
        min = thisMin;
      }
    }
  }
  qkxMin = -min;
  return scale;
}

/**
 * make_qp_quants: quantization of non-negative x (scales, mins, magnitudes) to [0, nmax]
 * with weights qw: the best of 9 scales around nmax/max by weighted squared error, then up
 * to 5 passes of coordinate descent. L (uint8, as in C: a negative level wraps) gets the
 * levels. Returns the scale.
 */
export function makeQpQuants(
  n: number,
  nmax: number,
  x: Float32Array,
  xo: number,
  L: Uint8Array,
  lo: number,
  qw: Float32Array,
  qo: number,
): number {
  let max = 0;
  for (let i = 0; i < n; i++) max = cMax(max, x[xo + i]!);
  if (max < GROUP_MAX_EPS) {
    L.fill(0, lo, lo + n);
    return 0;
  }
  let iscale = fr(nmax / max);
  for (let i = 0; i < n; i++) L[lo + i] = nearestInt(fr(iscale * x[xo + i]!));
  const scale = fr(1 / iscale);
  let bestMse = 0;
  for (let i = 0; i < n; i++) {
    const diff = fr(x[xo + i]! - fr(scale * L[lo + i]!));
    bestMse = fr(bestMse + fr(fr(qw[qo + i]! * diff) * diff));
  }
  for (let is = -4; is <= 4; is++) {
    if (is === 0) continue;
    const iscaleIs = fr(fr(fr(F0_1 * is) + nmax) / max);
    const scaleIs = fr(1 / iscaleIs);
    let mse = 0;
    for (let i = 0; i < n; i++) {
      const l = Math.min(nmax, nearestInt(fr(iscaleIs * x[xo + i]!)));
      const diff = fr(x[xo + i]! - fr(scaleIs * l));
      mse = fr(mse + fr(fr(qw[qo + i]! * diff) * diff));
    }
    if (mse < bestMse) {
      bestMse = mse;
      iscale = iscaleIs;
    }
  }
  let sumlx = 0;
  let suml2 = 0;
  for (let i = 0; i < n; i++) {
    const xi = x[xo + i]!;
    const l = Math.min(nmax, nearestInt(fr(iscale * xi)));
    L[lo + i] = l;
    const w = qw[qo + i]!;
    sumlx = fr(sumlx + fr(fr(w * xi) * l));
    suml2 = fr(suml2 + fr(fr(w * l) * l));
  }
  for (let itry = 0; itry < 5; itry++) {
    let nChanged = 0;
    for (let i = 0; i < n; i++) {
      const xi = x[xo + i]!;
      const w = qw[qo + i]!;
      const li = L[lo + i]!;
      let slx = fr(sumlx - fr(fr(w * xi) * li));
      let sl2 = fr(suml2 - fr(fr(w * li) * li));
      if (slx > 0 && sl2 > 0) {
        const newL = Math.min(nmax, nearestInt(fr(fr(xi * sl2) / slx)));
        if (newL !== li) {
          slx = fr(slx + fr(fr(w * xi) * newL));
          sl2 = fr(sl2 + fr(fr(w * newL) * newL));
          if (fr(fr(slx * slx) * suml2) > fr(fr(sumlx * sumlx) * sl2)) {
            L[lo + i] = newL;
            sumlx = slx;
            suml2 = sl2;
            nChanged++;
          }
        }
      }
    }
    if (nChanged === 0) break;
  }
  return suml2 > 0 ? fr(sumlx / suml2) : 0;
}
