// Importance matrices for the fixture models, as the scratch harness wrote them for
// llama-quantize when the pinned references were made (tests rebuild the same files).
import { writeFileSync } from 'node:fs';
import { openGGUF } from '../../src/gguf/index.js';
import { writeImatrixGGUF } from '../../src/quantize/imatrix-file.js';
import { prng } from './quant-inputs.js';

/**
 * Importance matrices for rand-llama-F32's block tensors, as the scratch harness wrote
 * them for llama-quantize: 'uniform' (every weight 1) and 'random' (sums / count in
 * 0.001 .. 5), GGUF (counts 1024, 2 chunks of 512) and legacy .dat (ncall 2).
 */
export function writeImatrices(model: string, out: string): void {
  const f = openGGUF(model);
  const names = f.tensors
    .filter((t) => t.name.startsWith('blk.') && t.dims.length >= 2 && t.dims[1]! > 1)
    .map((t) => [t.name, t.dims[0]!] as const);
  f.close();
  for (const kind of ['uniform', 'random'] as const) {
    const r = prng(kind === 'uniform' ? 1 : 12345);
    const entries = new Map<string, { sums: Float32Array; counts: number[] }>();
    for (const [name, n] of names) {
      const sums = Float32Array.from({ length: n }, () => (kind === 'uniform' ? 1024 : 1024 * (0.001 + 5 * r() ** 3)));
      entries.set(name, { sums, counts: [1024] });
    }
    writeImatrixGGUF(`${out}-${kind}.gguf`, { entries, datasets: ['synthetic.txt'], chunkCount: 2, chunkSize: 512 });
    const parts: Buffer[] = [];
    const i32 = (v: number) => {
      const b = Buffer.alloc(4);
      b.writeInt32LE(v);
      return b;
    };
    parts.push(i32(entries.size));
    for (const [name, e] of [...entries].sort((a, b) => (a[0] < b[0] ? -1 : 1))) {
      parts.push(i32(name.length), Buffer.from(name), i32(2), i32(e.sums.length));
      parts.push(Buffer.from(Float32Array.from(e.sums, (s) => (s / 1024) * 2).buffer));
    }
    parts.push(i32(2), i32(13), Buffer.from('synthetic.txt'));
    writeFileSync(`${out}-${kind}.dat`, Buffer.concat(parts));
  }
}
