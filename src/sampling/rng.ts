// Random numbers as llama.cpp draws them: std::mt19937, and libstdc++'s
// generate_canonical for std::uniform_real_distribution<float|double> and
// std::discrete_distribution. With the same seed, a chain draws the same numbers as
// llama.cpp built with GCC on Linux (and in any case the same numbers on every run).

import { platform } from '../platform/index.js';

/** llama.cpp's LLAMA_DEFAULT_SEED: "pick a random seed". */
export const DEFAULT_SEED = 0xffffffff;

/** A fresh random 32-bit seed (never DEFAULT_SEED itself). */
export function randomSeed(): number {
  for (;;) {
    const b = platform.randomBytes(4);
    const s = (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
    if (s !== DEFAULT_SEED) return s;
  }
}

/** The seed a sampler uses for `seed`: itself, or a random one for DEFAULT_SEED (-1). */
export function resolveSeed(seed: number): number {
  const s = seed >>> 0;
  return s === DEFAULT_SEED ? randomSeed() : s;
}

const N = 624;
const M = 397;

/** The 32-bit Mersenne Twister (std::mt19937). */
export class Mt19937 {
  private readonly mt = new Uint32Array(N);
  private index = N;

  constructor(seed: number) {
    this.seed(seed);
  }

  seed(seed: number): void {
    const mt = this.mt;
    mt[0] = seed >>> 0;
    for (let i = 1; i < N; i++) {
      const prev = mt[i - 1]!;
      mt[i] = (Math.imul(1812433253, prev ^ (prev >>> 30)) + i) >>> 0;
    }
    this.index = N;
  }

  private twist(): void {
    const mt = this.mt;
    for (let k = 0; k < N; k++) {
      const y = (mt[k]! & 0x80000000) | (mt[(k + 1) % N]! & 0x7fffffff);
      mt[k] = mt[(k + M) % N]! ^ (y >>> 1) ^ (y & 1 ? 0x9908b0df : 0);
    }
    this.index = 0;
  }

  /** The next 32-bit output. */
  nextU32(): number {
    if (this.index >= N) this.twist();
    let y = this.mt[this.index++]!;
    y ^= y >>> 11;
    y ^= (y << 7) & 0x9d2c5680;
    y ^= (y << 15) & 0xefc60000;
    y ^= y >>> 18;
    return y >>> 0;
  }

  /** std::uniform_real_distribution<float>(0, 1): one draw, rounded to float, below 1. */
  nextFloat(): number {
    const r = Math.fround(this.nextU32()) / 4294967296;
    return r >= 1 ? 1 - 2 ** -24 : r;
  }

  /** std::uniform_real_distribution<double>(0, 1): two draws, below 1. */
  nextDouble(): number {
    const lo = this.nextU32();
    const hi = this.nextU32();
    const r = (lo + hi * 4294967296) * 2 ** -64;
    return r >= 1 ? 1 - 2 ** -53 : r;
  }

  clone(): Mt19937 {
    const c = new Mt19937(0);
    c.mt.set(this.mt);
    c.index = this.index;
    return c;
  }
}

/**
 * std::discrete_distribution<int>(weights)(rng) as libstdc++ computes it: fewer than two
 * weights draw nothing and give 0; otherwise the cumulative normalized weights (the last
 * forced to 1) are searched for the first one ≥ a uniform double.
 */
export function discreteIndex(weights: Float32Array, n: number, rng: Mt19937): number {
  if (n < 2) return 0;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += weights[i]!;
  const u = rng.nextDouble();
  let cum = 0;
  for (let i = 0; i < n - 1; i++) {
    cum += weights[i]! / sum;
    if (cum >= u) return i;
  }
  return n - 1;
}
