// Seeded pseudo-random numbers for the model generator: xoshiro128** seeded through
// splitmix32, integer arithmetic only, so a seed gives the same bytes on every platform
// (no Math.log/cos, whose last bits may differ between engines).

/** One splitmix32 step: a well-mixed 32-bit value from a 32-bit state. */
export function splitmix32(x: number): number {
  let z = (x + 0x9e3779b9) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return (z ^ (z >>> 16)) >>> 0;
}

/** FNV-1a over the UTF-16 code units of `s`, continued from `h`. */
export function hashString(s: string, h = 0x811c9dc5): number {
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** A 32-bit seed from any number of parts (numbers up to 2^53, or strings). */
export function mixSeed(...parts: (number | string)[]): number {
  let h = 0x2545f491;
  for (const p of parts) {
    if (typeof p === 'string') {
      h = splitmix32(h ^ hashString(p));
    } else {
      if (!Number.isSafeInteger(p)) throw new RangeError(`seed part ${p} is not a safe integer`);
      const lo = p >>> 0;
      const hi = Math.floor(p / 0x100000000) >>> 0;
      h = splitmix32(splitmix32(h ^ lo) ^ hi);
    }
  }
  return h;
}

const INV_2_32 = 1 / 0x100000000;
// Irwin-Hall of four 16-bit uniforms: mean 4 * 65535 / 2, variance 4 * (65536^2 - 1) / 12.
const IH_MEAN = 2 * 65535;
const IH_INV_STD = 1 / Math.sqrt((4 * (65536 * 65536 - 1)) / 12);

export class Rng {
  private s0: number;
  private s1: number;
  private s2: number;
  private s3: number;

  constructor(seed: number) {
    let x = seed >>> 0;
    this.s0 = x = splitmix32(x);
    this.s1 = x = splitmix32(x);
    this.s2 = x = splitmix32(x);
    this.s3 = splitmix32(x);
    if ((this.s0 | this.s1 | this.s2 | this.s3) === 0) this.s0 = 1; // the one forbidden state
  }

  /** Next 32-bit unsigned integer (xoshiro128**). */
  nextU32(): number {
    const s0 = this.s0;
    const s1 = this.s1;
    const s2 = this.s2;
    const s3 = this.s3;
    const m = Math.imul(s1, 5);
    const r = Math.imul((m << 7) | (m >>> 25), 9);
    const t = s1 << 9;
    const n2 = s2 ^ s0;
    const n3 = s3 ^ s1;
    this.s1 = s1 ^ n2;
    this.s0 = s0 ^ n3;
    this.s2 = n2 ^ t;
    this.s3 = (n3 << 11) | (n3 >>> 21);
    return r >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    return this.nextU32() * INV_2_32;
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /**
   * Fills dst[off, off+n) with approximately normal values (Irwin-Hall of four 16-bit
   * uniforms: exact mean and variance, tails cut at ±3.46 std), mean + std * z.
   */
  fillNormal(dst: Float32Array, off: number, n: number, mean: number, std: number): void {
    let s0 = this.s0;
    let s1 = this.s1;
    let s2 = this.s2;
    let s3 = this.s3;
    const scale = std * IH_INV_STD;
    const base = mean - IH_MEAN * scale;
    const end = off + n;
    // Two xoshiro128** steps per value, unrolled (twice as fast as a loop in V8).
    for (let i = off; i < end; i++) {
      let m = Math.imul(s1, 5);
      const r1 = Math.imul((m << 7) | (m >>> 25), 9);
      let t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      m = Math.imul(s1, 5);
      const r2 = Math.imul((m << 7) | (m >>> 25), 9);
      t = s1 << 9;
      s2 ^= s0;
      s3 ^= s1;
      s1 ^= s2;
      s0 ^= s3;
      s2 ^= t;
      s3 = (s3 << 11) | (s3 >>> 21);
      dst[i] = base + ((r1 >>> 16) + (r1 & 0xffff) + (r2 >>> 16) + (r2 & 0xffff)) * scale;
    }
    this.s0 = s0;
    this.s1 = s1;
    this.s2 = s2;
    this.s3 = s3;
  }
}
