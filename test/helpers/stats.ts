// Pearson's chi-square goodness-of-fit test: the statistic over cells with an expected
// count of at least 5 (the rest pooled into one cell) and its p-value, the upper
// regularized incomplete gamma function Q(df/2, x/2).

/** ln Γ(z) for z > 0: the recurrence up to z ≥ 8, then Stirling's series. */
function lnGamma(z: number): number {
  let shift = 0;
  while (z < 8) {
    shift += Math.log(z);
    z += 1;
  }
  const z2 = z * z;
  const series = 1 / (12 * z) - 1 / (360 * z * z2) + 1 / (1260 * z * z2 * z2) - 1 / (1680 * z * z2 * z2 * z2);
  return (z - 0.5) * Math.log(z) - z + 0.5 * Math.log(2 * Math.PI) + series - shift;
}

/** Q(a, x) = Γ(a, x) / Γ(a). */
export function gammaQ(a: number, x: number): number {
  if (x <= 0) return 1;
  const front = Math.exp(a * Math.log(x) - x - lnGamma(a));
  if (x < a + 1) {
    // P by its power series, Q = 1 - P
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 10000 && Math.abs(term) > Math.abs(sum) * 1e-15; n++) {
      term *= x / (a + n);
      sum += term;
    }
    return 1 - front * sum;
  }
  // the continued fraction for Q, by the modified Lentz method
  const tiny = 1e-300;
  let b = x + 1 - a;
  let c = 1 / tiny;
  let d = 1 / b;
  let f = d;
  for (let n = 1; n < 10000; n++) {
    const an = -n * (n - a);
    b += 2;
    d = an * d + b;
    if (Math.abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (Math.abs(c) < tiny) c = tiny;
    d = 1 / d;
    const delta = d * c;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-15) break;
  }
  return front * f;
}

export interface ChiSquare {
  statistic: number;
  df: number;
  p: number;
}

/** Observed counts against expected probabilities (which sum to 1) over the same cells. */
export function chiSquare(observed: readonly number[], expected: readonly number[]): ChiSquare {
  const n = observed.reduce((a, b) => a + b, 0);
  let stat = 0;
  let cells = 0;
  let poolO = 0;
  let poolE = 0;
  for (let i = 0; i < observed.length; i++) {
    const e = expected[i] * n;
    if (e >= 5) {
      stat += (observed[i] - e) ** 2 / e;
      cells++;
    } else {
      poolO += observed[i];
      poolE += e;
    }
  }
  if (poolE > 0) {
    stat += (poolO - poolE) ** 2 / poolE;
    cells++;
  }
  const df = cells - 1;
  return { statistic: stat, df, p: gammaQ(df / 2, stat / 2) };
}
