// Importance-matrix files as llama.cpp writes them (llama-imatrix) and llama-quantize
// reads them (common/imatrix-loader.cpp):
// - GGUF (current): general.type "imatrix", imatrix.datasets (string array),
//   imatrix.chunk_count and imatrix.chunk_size (u32); per weight tensor NAME, an F32
//   tensor NAME.in_sum2 [n_per_row, n_mat] of summed squared activations and an F32
//   NAME.counts [1, n_mat] of how many activation rows were summed (n_mat: experts);
// - legacy .dat: int32 entry count; per entry int32 name length, the name, int32 ncall,
//   int32 value count, float32 values (already means, times ncall); then optionally
//   int32 chunk count, int32 length and the dataset name.
// For quantization each entry becomes per-column weights: sums / count (1 where a
// matrix saw no rows), legacy values / ncall.

import { closeSync, openSync, readSync } from 'node:fs';
import { GGMLType } from '../ggml/types.js';
import { GGUFValueType, GGUFWriter, openGGUF } from '../gguf/index.js';

export interface ImatrixEntry {
  /** Summed squared activations (GGUF), or the legacy file's values. */
  sums: Float32Array;
  /** Rows summed per matrix (GGUF: one per expert); legacy: [ncall]. */
  counts: number[];
}

export interface ImatrixFile {
  entries: Map<string, ImatrixEntry>;
  datasets: string[];
  chunkCount: number;
  chunkSize: number;
  legacy: boolean;
}

export class ImatrixError extends Error {
  constructor(path: string, message: string) {
    super(`${path}: ${message}`);
    this.name = 'ImatrixError';
  }
}

const GGUF_MAGIC = 0x46554747;

function readMagic(path: string): number {
  const fd = openSync(path, 'r');
  try {
    const b = Buffer.alloc(4);
    return readSync(fd, b, 0, 4, 0) === 4 ? b.readUInt32LE(0) : -1;
  } finally {
    closeSync(fd);
  }
}

/** Reads an imatrix file in either format. Throws ImatrixError naming what is wrong. */
export function readImatrixFile(path: string): ImatrixFile {
  return readMagic(path) === GGUF_MAGIC ? readGGUF(path) : readLegacy(path);
}

function readGGUF(path: string): ImatrixFile {
  const f = openGGUF(path);
  try {
    if (f.tensors.length < 1) throw new ImatrixError(path, 'no data in the file');
    for (const key of ['imatrix.datasets', 'imatrix.chunk_count', 'imatrix.chunk_size']) {
      // llama-quantize refuses a GGUF imatrix without these
      if (!f.has(key)) throw new ImatrixError(path, `missing imatrix metadata (key '${key}')`);
    }
    const datasets = f.getStringArray('imatrix.datasets');
    const chunkCount = f.getU32('imatrix.chunk_count');
    const chunkSize = f.getU32('imatrix.chunk_size');
    const pairs = new Map<string, { sums?: (typeof f.tensors)[number]; counts?: (typeof f.tensors)[number] }>();
    for (const t of f.tensors) {
      const m = /^(.+)\.(in_sum2|counts)$/.exec(t.name);
      if (!m) continue;
      const p = pairs.get(m[1]!) ?? {};
      if (m[2] === 'in_sum2') p.sums = t;
      else p.counts = t;
      pairs.set(m[1]!, p);
    }
    const entries = new Map<string, ImatrixEntry>();
    for (const [name, { sums, counts }] of [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
      if (!sums || !counts) throw new ImatrixError(path, `mismatched sums and counts for ${name}`);
      if (sums.type !== GGMLType.F32 || counts.type !== GGMLType.F32) {
        throw new ImatrixError(path, `sums and counts for ${name} must be F32`);
      }
      const sb = f.readTensorData(sums);
      const cb = f.readTensorData(counts);
      const c = new Float32Array(cb.buffer, cb.byteOffset, counts.nElements);
      const s = new Float32Array(sb.buffer, sb.byteOffset, sums.nElements).slice();
      if (c.length < 1 || s.length % c.length !== 0) {
        throw new ImatrixError(path, `${name}: ${s.length} sums do not split into ${c.length} matrices`);
      }
      // C's lround: halves away from zero
      entries.set(name, { sums: s, counts: [...c].map((v) => Math.sign(v) * Math.floor(Math.abs(v) + 0.5)) });
    }
    return { entries, datasets, chunkCount, chunkSize, legacy: false };
  } finally {
    f.close();
  }
}

function readLegacy(path: string): ImatrixFile {
  const fd = openSync(path, 'r');
  let pos = 0;
  const read = (n: number, what: string): Buffer => {
    const b = Buffer.alloc(n);
    const got = n === 0 ? 0 : readSync(fd, b, 0, n, pos);
    if (got !== n) throw new ImatrixError(path, `truncated at byte ${pos} while reading ${what}`);
    pos += n;
    return b;
  };
  try {
    const head = Buffer.alloc(4);
    if (readSync(fd, head, 0, 4, 0) !== 4 || head.readInt32LE(0) < 1) {
      throw new ImatrixError(path, 'not a GGUF file, and no data as a legacy imatrix (.dat)');
    }
    const n = head.readInt32LE(0);
    pos = 4;
    const entries = new Map<string, ImatrixEntry>();
    for (let i = 0; i < n; i++) {
      const len = read(4, `the name length of entry ${i + 1}`).readInt32LE(0);
      if (len < 0 || len > 1 << 16)
        throw new ImatrixError(path, `entry ${i + 1}: bad name length ${len} at byte ${pos - 4}`);
      const name = read(len, `the name of entry ${i + 1}`).toString('utf8');
      const ncall = read(4, `ncall of ${name}`).readInt32LE(0);
      const nval = read(4, `the value count of ${name}`).readInt32LE(0);
      if (nval < 1 || nval > 1 << 28)
        throw new ImatrixError(path, `${name}: bad value count ${nval} at byte ${pos - 4}`);
      const v = read(4 * nval, `the values of ${name}`);
      const sums = new Float32Array(nval);
      for (let j = 0; j < nval; j++) sums[j] = v.readFloatLE(4 * j);
      entries.set(name, { sums, counts: [ncall] });
    }
    // optional trailer: chunk count and dataset name
    let chunkCount = 0;
    const datasets: string[] = [];
    const tail = Buffer.alloc(8);
    const got = readSync(fd, tail, 0, 8, pos);
    if (got >= 4) {
      chunkCount = tail.readInt32LE(0);
      if (got === 8) {
        const len = tail.readInt32LE(4);
        pos += 8;
        if (len > 0 && len < 1 << 16) {
          const d = Buffer.alloc(len);
          if (readSync(fd, d, 0, len, pos) === len) datasets.push(d.toString('utf8').replace(/\0.*$/s, ''));
        }
      }
    }
    return { entries, datasets, chunkCount, chunkSize: 0, legacy: true };
  } finally {
    closeSync(fd);
  }
}

const fr = Math.fround;

/**
 * The per-column quantization weights of every entry, as llama-quantize prepares them:
 * GGUF sums / count per matrix (1 for a matrix that saw no rows), legacy values / ncall.
 */
export function imatrixWeights(file: ImatrixFile): Map<string, Float32Array> {
  const out = new Map<string, Float32Array>();
  for (const [name, e] of file.entries) {
    const w = new Float32Array(e.sums.length);
    if (!file.legacy) {
      const ne0 = e.sums.length / e.counts.length;
      e.counts.forEach((count, j) => {
        for (let i = 0; i < ne0; i++) w[j * ne0 + i] = count > 0 ? fr(e.sums[j * ne0 + i]! / fr(count)) : 1;
      });
    } else {
      const ncall = e.counts[0] ?? 0;
      for (let i = 0; i < w.length; i++) w[i] = ncall > 0 ? fr(e.sums[i]! / ncall) : e.sums[i]!;
    }
    out.set(name, w);
  }
  return out;
}

/** Writes an imatrix in llama.cpp's GGUF format (entries sorted by name, as llama-imatrix does). */
export function writeImatrixGGUF(path: string, file: Omit<ImatrixFile, 'legacy'>): void {
  const w = new GGUFWriter();
  w.setString('general.type', 'imatrix');
  w.setStringArray('imatrix.datasets', file.datasets);
  w.set('imatrix.chunk_count', GGUFValueType.UINT32, file.chunkCount);
  w.set('imatrix.chunk_size', GGUFValueType.UINT32, file.chunkSize);
  const names = [...file.entries.keys()].sort();
  for (const name of names) {
    const e = file.entries.get(name)!;
    const nmat = e.counts.length;
    if (nmat < 1 || e.sums.length === 0) continue;
    const sums = new Uint8Array(e.sums.buffer.slice(e.sums.byteOffset, e.sums.byteOffset + e.sums.byteLength));
    w.addTensor(`${name}.in_sum2`, GGMLType.F32, [e.sums.length / nmat, nmat], sums);
    w.addTensor(`${name}.counts`, GGMLType.F32, [1, nmat], new Uint8Array(Float32Array.from(e.counts).buffer));
  }
  w.write(path);
}
