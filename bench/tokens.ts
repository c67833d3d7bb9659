// Deterministic pseudo-random token ids for the benchmarks (xorshift32), first set to
// `bos` when it is >= 0.

export function randomTokens(n: number, nVocab: number, seed: number, bos = -1): number[] {
  let s = seed >>> 0 || 1;
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    out.push(s % nVocab);
  }
  if (bos >= 0) out[0] = bos;
  return out;
}
