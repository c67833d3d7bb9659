// Deterministic float32 test rows for quantizer conformance: ordinary Gaussian data plus
// the cases that reach a quantizer's corners (all-zero and constant blocks, zeroed
// sub-blocks, lone outliers, one-sided data, subnormal, tiny and overflowing magnitudes).

/** mulberry32: a small seeded PRNG with uniform output in [0, 1). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Near-normal samples (Irwin-Hall: the sum of 12 uniforms, minus 6). Only + and - on
 * doubles, so the values are the same on every engine (Math.log/cos are not guaranteed
 * to be), which golden hashes of quantized output rely on.
 */
export function gaussian(rand: () => number): () => number {
  return () => {
    let s = -6;
    for (let i = 0; i < 12; i++) s += rand();
    return s;
  };
}

/** `nBlocks` blocks of 256 values, Gaussian with per-block scale and offset. */
export function gaussianRows(nBlocks: number, seed: number): Float32Array {
  const rand = prng(seed);
  const g = gaussian(rand);
  const x = new Float32Array(nBlocks * 256);
  for (let b = 0; b < nBlocks; b++) {
    const scale = 0.001 + 2 * rand();
    const offset = rand() < 0.5 ? 0 : (rand() - 0.5) * 2;
    for (let i = 0; i < 256; i++) x[b * 256 + i] = g() * scale + offset;
  }
  return x;
}

/** Blocks of 256 values covering the corner cases (count is fixed for a given seed). */
export function edgeCaseRows(seed: number): Float32Array {
  const rand = prng(seed);
  const g = gaussian(rand);
  const blocks: number[][] = [];
  const block = (f: (i: number) => number) => blocks.push(Array.from({ length: 256 }, (_, i) => f(i)));
  for (const s of [1, 1e-3, 1e-8, 1e-20, 1e-38, 1e3, 1e15, 1e30]) {
    block(() => g() * s);
    block(() => (2 * rand() - 1) * s);
    block(() => Math.abs(g()) * s);
    block(() => -Math.abs(g()) * s);
  }
  block(() => 0);
  block(() => 0.5);
  block(() => -0.5);
  block(() => 1e-16);
  block(() => 1e-45); // the smallest subnormal
  block((i) => (i % 16 === 0 ? 1 : 0));
  block((i) => (i === 5 ? -3 : 0));
  block((i) => ((i >= 0 && i < 16) || (i >= 32 && i < 64) ? 0 : g()));
  for (let k = 0; k < 40; k++) {
    const scale = 0.01 + 10 * rand();
    const pZero = rand();
    const a = Array.from({ length: 256 }, () => (rand() < pZero ? 0 : g() * scale));
    if (k % 3 === 0) a[Math.floor(rand() * 256)]! *= 1000;
    if (k % 5 === 0) for (let i = 0; i < 256; i++) a[i] = Math.round(a[i]! * 4) / 4;
    if (k % 7 === 0) a.fill(0, 0, 128);
    blocks.push(a);
  }
  return Float32Array.from(blocks.flat());
}

/**
 * `nb` blocks of random bytes of a type with `typeSize`-byte blocks, for dequantizer
 * conformance. When `scaleOff` is given, the f16 scale there is finite: any exponent
 * when b % 4 == 0, a subnormal when b % 7 == 1, an ordinary one otherwise (random bits
 * elsewhere, so no NaN whose payload engines may treat differently).
 */
export function randomBlocks(typeSize: number, nb: number, seed: number, scaleOff?: number): Uint8Array {
  const rand = prng(seed);
  const byte = () => Math.floor(rand() * 256);
  const bytes = new Uint8Array(nb * typeSize);
  for (let i = 0; i < bytes.length; i++) bytes[i] = byte();
  if (scaleOff !== undefined) {
    for (let b = 0; b < nb; b++) {
      let h = ((byte() << 8) | byte()) & 0x7fff;
      if (b % 4 === 0) h = h >= 0x7c00 ? h - 0x0400 : h;
      else if (b % 7 === 1) h &= 0x3ff;
      else h = (0x2000 + (h & 0xfff)) & 0x7fff;
      h |= (byte() & 1) << 15;
      bytes[b * typeSize + scaleOff] = h & 0xff;
      bytes[b * typeSize + scaleOff + 1] = h >>> 8;
    }
  }
  return bytes;
}

/** A positive importance matrix row of n entries (0.01 .. 10, mostly small), float32. */
export function randomImatrix(n: number, seed: number): Float32Array {
  const rand = prng(seed);
  return Float32Array.from({ length: n }, () => {
    const r = rand();
    return 0.01 + r * r * 10;
  });
}

/** `n` words of simple English drawn with prng(seed): a text for importance-matrix runs. */
export function storyText(n: number, seed: number): string {
  const words = (
    'once upon a time there was a little girl named lily she liked to play with her toys in the park ' +
    'one day she saw a big dog the dog was very friendly and they became best friends they played ' +
    'together every day and had lots of fun'
  ).split(' ');
  const rand = prng(seed);
  return Array.from({ length: n }, () => words[Math.floor(rand() * words.length)]).join(' ');
}
