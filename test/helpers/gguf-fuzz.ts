// GGUF fuzzer shared by the CI test (2,000 cases) and the bench script (100,000):
// mutate valid files (bit flips, truncations, lying lengths and counts), parse them,
// and touch everything a parsed file offers. Only GGUFError may come out.
import { GGUFError, isArrayValue, parseGGUF, valueToJSON } from '../../src/gguf/index.js';

/** Small deterministic PRNG (mulberry32). */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface FuzzSeed {
  name: string;
  bytes: Uint8Array;
  /** End of the header: most mutations land before it, where parsing happens. */
  headerEnd: number;
}

export interface FuzzResult {
  cases: number;
  parsed: number;
  rejected: number;
  unexpected: { seed: string; mutation: string; error: string }[];
  byMutation: Record<string, number>;
}

const INTERESTING_U64 = [
  0n,
  1n,
  2n,
  31n,
  32n,
  255n,
  0xffffffffn,
  0x100000000n,
  1n << 53n,
  1n << 62n,
  (1n << 63n) - 1n,
  1n << 63n,
  (1n << 64n) - 1n,
];
const INTERESTING_U32 = [0, 1, 2, 3, 4, 5, 8, 9, 12, 13, 0x7fffffff, 0x80000000, 0xffffffff, 31, 39, 100];

function mutate(seed: FuzzSeed, r: () => number): { bytes: Uint8Array; mutation: string } {
  const pick = r();
  const at = () => Math.floor(r() < 0.9 ? r() * seed.headerEnd : r() * seed.bytes.length);
  if (pick < 0.35) {
    const bytes = seed.bytes.slice();
    const flips = 1 + Math.floor(r() * 8);
    for (let i = 0; i < flips; i++) {
      const p = at();
      bytes[p]! ^= 1 << Math.floor(r() * 8);
    }
    return { bytes, mutation: 'bitflip' };
  }
  if (pick < 0.55) {
    const n = Math.floor(r() < 0.8 ? r() * seed.headerEnd : r() * seed.bytes.length);
    return { bytes: seed.bytes.subarray(0, n), mutation: 'truncate' };
  }
  if (pick < 0.8) {
    const bytes = seed.bytes.slice();
    const dv = new DataView(bytes.buffer);
    const p = Math.min(at(), bytes.length - 8);
    let v = INTERESTING_U64[Math.floor(r() * INTERESTING_U64.length)]!;
    if (r() < 0.3) v = BigInt(Math.floor(r() * bytes.length * 2));
    if (p >= 0) dv.setBigUint64(p, v, true);
    return { bytes, mutation: 'u64-length' };
  }
  if (pick < 0.92) {
    const bytes = seed.bytes.slice();
    const dv = new DataView(bytes.buffer);
    const p = Math.min(at(), bytes.length - 4);
    if (p >= 0) dv.setUint32(p, INTERESTING_U32[Math.floor(r() * INTERESTING_U32.length)]!, true);
    return { bytes, mutation: 'u32-value' };
  }
  // Splice: repeat or drop a chunk of the header.
  const b = seed.bytes;
  const len = Math.min(b.length, 1 + Math.floor(r() * 64));
  const a = Math.min(at(), b.length - len);
  let bytes: Uint8Array;
  if (r() < 0.5) {
    bytes = new Uint8Array(b.length + len);
    bytes.set(b.subarray(0, a + len));
    bytes.set(b.subarray(a, a + len), a + len);
    bytes.set(b.subarray(a + len), a + 2 * len);
  } else {
    bytes = new Uint8Array(Math.max(0, b.length - len));
    bytes.set(b.subarray(0, a));
    bytes.set(b.subarray(a + len), a);
  }
  return { bytes, mutation: 'splice' };
}

/** Use everything a parsed file offers, as a loader would. */
function exercise(bytes: Uint8Array): void {
  const f = parseGGUF(bytes, 'fuzz.gguf');
  for (const kv of f.metadata.values()) {
    JSON.stringify(valueToJSON(kv.value, kv.type));
    if (isArrayValue(kv.value)) void kv.value.items.length;
  }
  for (const t of f.tensors) {
    if (t.nBytes <= 1 << 24) f.readTensorData(t);
    else f.readTensorData(t, new Uint8Array(16), t.nBytes - 16);
  }
  f.getString('general.architecture', '');
}

export function runFuzz(seeds: FuzzSeed[], cases: number, seed = 1): FuzzResult {
  const r = rng(seed);
  const result: FuzzResult = { cases, parsed: 0, rejected: 0, unexpected: [], byMutation: {} };
  for (let i = 0; i < cases; i++) {
    const s = seeds[i % seeds.length]!;
    const { bytes, mutation } = mutate(s, r);
    result.byMutation[mutation] = (result.byMutation[mutation] ?? 0) + 1;
    try {
      exercise(bytes);
      result.parsed++;
    } catch (e) {
      if (e instanceof GGUFError) result.rejected++;
      else
        result.unexpected.push({
          seed: s.name,
          mutation,
          error: e instanceof Error ? (e.stack ?? e.message) : String(e),
        });
    }
  }
  return result;
}

/** A seed from a valid file's bytes. */
export function seedOf(name: string, bytes: Uint8Array): FuzzSeed {
  return { name, bytes, headerEnd: parseGGUF(bytes).dataOffset };
}
