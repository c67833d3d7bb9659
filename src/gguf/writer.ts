// GGUF v3 writer: metadata of every value type, tensors aligned to general.alignment.
// Tensor data may be left out (a hole) to make sparse files for tests of huge models.
import { traitsOf } from '../ggml/types.js';
import { GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_MAX_DIMS, GGUF_MAX_NAME, GGUFValueType } from './constants.js';
import type { GGUFFile } from './file.js';
import { type GGUFArray, type GGUFValue, isArrayValue } from './values.js';

// Writing files is Node's (the writer is a Node-only tool); the GGUF index re-exports the
// writer, so a browser loads this module too, and must not import node:fs.
const fs = typeof process !== 'undefined' && process.versions?.node ? await import('node:fs') : undefined;
function nodeFs(): typeof import('node:fs') {
  if (!fs) throw new Error('GGUFWriter: writing files needs Node');
  return fs;
}

class ByteSink {
  private buf = new Uint8Array(4096);
  private view = new DataView(this.buf.buffer);
  length = 0;

  private reserve(n: number): number {
    if (this.length + n > this.buf.length) {
      let size = this.buf.length * 2;
      while (size < this.length + n) size *= 2;
      const next = new Uint8Array(size);
      next.set(this.buf.subarray(0, this.length));
      this.buf = next;
      this.view = new DataView(next.buffer);
    }
    const at = this.length;
    this.length += n;
    return at;
  }
  u8(v: number) {
    const at = this.reserve(1);
    this.view.setUint8(at, v);
  }
  i8(v: number) {
    const at = this.reserve(1);
    this.view.setInt8(at, v);
  }
  u16(v: number) {
    const at = this.reserve(2);
    this.view.setUint16(at, v, true);
  }
  i16(v: number) {
    const at = this.reserve(2);
    this.view.setInt16(at, v, true);
  }
  u32(v: number) {
    const at = this.reserve(4);
    this.view.setUint32(at, v, true);
  }
  i32(v: number) {
    const at = this.reserve(4);
    this.view.setInt32(at, v, true);
  }
  f32(v: number) {
    const at = this.reserve(4);
    this.view.setFloat32(at, v, true);
  }
  f64(v: number) {
    const at = this.reserve(8);
    this.view.setFloat64(at, v, true);
  }
  u64(v: bigint | number) {
    const at = this.reserve(8);
    this.view.setBigUint64(at, BigInt(v), true);
  }
  i64(v: bigint | number) {
    const at = this.reserve(8);
    this.view.setBigInt64(at, BigInt(v), true);
  }
  bytes(b: Uint8Array) {
    const at = this.reserve(b.length);
    this.buf.set(b, at);
  }
  string(s: string) {
    const b = encoder.encode(s);
    this.u64(b.length);
    this.bytes(b);
  }
  pad(alignment: number) {
    const n = (alignment - (this.length % alignment)) % alignment;
    this.reserve(n); // fresh bytes are zero
  }
  result(): Uint8Array {
    return this.buf.subarray(0, this.length);
  }
}

const encoder = new TextEncoder();

export interface TensorEntry {
  name: string;
  type: number;
  dims: number[];
  /** The tensor's bytes; undefined leaves a hole of zeros (sparse on disk). */
  data: Uint8Array | undefined;
  nBytes: number;
  offset: number;
}

function writeScalar(s: ByteSink, type: GGUFValueType, v: GGUFValue, key: string): void {
  const bad = () => new TypeError(`GGUF key '${key}': value ${String(v)} does not fit type ${GGUFValueType[type]}`);
  const int = (lo: number, hi: number) => {
    if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw bad();
    return v;
  };
  switch (type) {
    case GGUFValueType.UINT8:
      s.u8(int(0, 0xff));
      return;
    case GGUFValueType.INT8:
      s.i8(int(-0x80, 0x7f));
      return;
    case GGUFValueType.UINT16:
      s.u16(int(0, 0xffff));
      return;
    case GGUFValueType.INT16:
      s.i16(int(-0x8000, 0x7fff));
      return;
    case GGUFValueType.UINT32:
      s.u32(int(0, 0xffffffff));
      return;
    case GGUFValueType.INT32:
      s.i32(int(-0x80000000, 0x7fffffff));
      return;
    case GGUFValueType.FLOAT32:
      if (typeof v !== 'number') throw bad();
      s.f32(v);
      return;
    case GGUFValueType.FLOAT64:
      if (typeof v !== 'number') throw bad();
      s.f64(v);
      return;
    case GGUFValueType.BOOL:
      if (typeof v !== 'boolean') throw bad();
      s.u8(v ? 1 : 0);
      return;
    case GGUFValueType.STRING:
      if (typeof v !== 'string') throw bad();
      s.string(v);
      return;
    case GGUFValueType.UINT64:
      if (typeof v !== 'bigint' && typeof v !== 'number') throw bad();
      if (BigInt(v) < 0n || BigInt(v) >= 1n << 64n) throw bad();
      s.u64(v);
      return;
    case GGUFValueType.INT64:
      if (typeof v !== 'bigint' && typeof v !== 'number') throw bad();
      if (BigInt(v) < -(1n << 63n) || BigInt(v) >= 1n << 63n) throw bad();
      s.i64(v);
      return;
    case GGUFValueType.ARRAY: {
      if (!isArrayValue(v)) throw bad();
      s.u32(v.itemType);
      s.u64(v.items.length);
      for (const item of v.items as Iterable<GGUFValue>) writeScalar(s, v.itemType, item, key);
      return;
    }
  }
}

export interface GGUFWriterOptions {
  /** Data alignment; written as general.alignment when not the default 32. */
  alignment?: number;
}

export class GGUFWriter {
  private readonly kv = new Map<string, { type: GGUFValueType; value: GGUFValue }>();
  private readonly tensorList: TensorEntry[] = [];
  private readonly alignment: number;
  private dataSize = 0;

  constructor(opts: GGUFWriterOptions = {}) {
    this.alignment = opts.alignment ?? GGUF_DEFAULT_ALIGNMENT;
    if (this.alignment <= 0 || (this.alignment & (this.alignment - 1)) !== 0) {
      throw new RangeError(`alignment ${this.alignment} is not a power of two`);
    }
    if (this.alignment !== GGUF_DEFAULT_ALIGNMENT) this.set('general.alignment', GGUFValueType.UINT32, this.alignment);
  }

  /**
   * A writer holding everything of `file`: same keys in the same order, same tensors with
   * their data read in. Writing it reproduces a file laid out as ggml lays files out.
   */
  static fromFile(file: GGUFFile, opts: { withData?: boolean } = {}): GGUFWriter {
    const w = new GGUFWriter({ alignment: file.alignment });
    w.kv.clear();
    for (const [key, kv] of file.metadata) w.set(key, kv.type, kv.value);
    for (const t of file.tensors) {
      w.addTensor(t.name, t.type, [...t.dims], opts.withData === false ? undefined : file.readTensorData(t));
    }
    return w;
  }

  /** Set a key (insertion order is file order; setting again replaces the value in place). */
  set(key: string, type: GGUFValueType, value: GGUFValue): this {
    writeScalar(new ByteSink(), type, value, key); // validate now, fail at the call that is wrong
    this.kv.set(key, { type, value });
    return this;
  }

  /** Remove a key (no-op when absent). */
  delete(key: string): this {
    this.kv.delete(key);
    return this;
  }

  setString(key: string, v: string) {
    return this.set(key, GGUFValueType.STRING, v);
  }
  setU32(key: string, v: number) {
    return this.set(key, GGUFValueType.UINT32, v);
  }
  setI32(key: string, v: number) {
    return this.set(key, GGUFValueType.INT32, v);
  }
  setF32(key: string, v: number) {
    return this.set(key, GGUFValueType.FLOAT32, v);
  }
  setBool(key: string, v: boolean) {
    return this.set(key, GGUFValueType.BOOL, v);
  }
  setU64(key: string, v: bigint | number) {
    return this.set(key, GGUFValueType.UINT64, BigInt(v));
  }
  setArray(key: string, itemType: GGUFValueType, items: GGUFArray['items']) {
    return this.set(key, GGUFValueType.ARRAY, { itemType, items });
  }
  setStringArray(key: string, items: string[]) {
    return this.setArray(key, GGUFValueType.STRING, items);
  }

  /** Add a tensor; `data` may be undefined to leave its bytes as a hole of zeros. */
  addTensor(name: string, type: number, dims: number[], data?: Uint8Array): this {
    if (encoder.encode(name).length >= GGUF_MAX_NAME) throw new RangeError(`tensor name '${name}' is too long`);
    if (this.tensorList.some((t) => t.name === name)) throw new RangeError(`duplicate tensor name '${name}'`);
    if (dims.length > GGUF_MAX_DIMS) throw new RangeError(`tensor '${name}' has more than ${GGUF_MAX_DIMS} dims`);
    const tr = traitsOf(type);
    const n = dims.reduce((a, b) => a * b, 1);
    if ((dims[0] ?? 1) % tr.blockSize !== 0) {
      throw new RangeError(`tensor '${name}': row length ${dims[0]} is not a multiple of ${tr.name}'s block size`);
    }
    const nBytes = (n / tr.blockSize) * tr.typeSize;
    if (data && data.length !== nBytes) {
      throw new RangeError(`tensor '${name}': ${data.length} bytes given, ${nBytes} expected`);
    }
    const offset = Math.ceil(this.dataSize / this.alignment) * this.alignment;
    this.tensorList.push({ name, type, dims: [...dims], data, nBytes, offset });
    this.dataSize = offset + nBytes;
    return this;
  }

  get tensors(): readonly TensorEntry[] {
    return this.tensorList;
  }

  /** Header, metadata and tensor infos, padded to the alignment: the data section follows. */
  header(): Uint8Array {
    const s = new ByteSink();
    s.u32(GGUF_MAGIC);
    s.u32(3);
    s.u64(this.tensorList.length);
    s.u64(this.kv.size);
    for (const [key, { type, value }] of this.kv) {
      s.string(key);
      s.u32(type);
      writeScalar(s, type, value, key);
    }
    for (const t of this.tensorList) {
      s.string(t.name);
      s.u32(t.dims.length);
      for (const d of t.dims) s.i64(d);
      s.u32(t.type);
      s.u64(t.offset);
    }
    // Current ggml pads even when no data follows; some older writers did not.
    s.pad(this.alignment);
    return s.result();
  }

  /** Total file size: header + data section padded to the alignment. */
  fileSize(headerLength = this.header().length): number {
    return headerLength + Math.ceil(this.dataSize / this.alignment) * this.alignment;
  }

  /** The whole file in memory (small files: tests, fixtures). */
  toBytes(): Uint8Array {
    const head = this.header();
    const out = new Uint8Array(this.fileSize(head.length));
    out.set(head);
    for (const t of this.tensorList) if (t.data) out.set(t.data, head.length + t.offset);
    return out;
  }

  /**
   * Write to `path`, streaming tensor data; holes stay unwritten (sparse where the
   * filesystem allows). `provide` produces a tensor's bytes on demand when they were not
   * given to addTensor, so models larger than memory can be written one tensor at a time.
   */
  write(path: string, provide?: (t: TensorEntry) => Uint8Array | undefined): void {
    const head = this.header();
    const { openSync, ftruncateSync, closeSync } = nodeFs();
    const fd = openSync(path, 'w');
    try {
      writeAll(fd, head, 0);
      for (const t of this.tensorList) {
        const data = t.data ?? provide?.(t);
        if (!data) continue;
        if (data.length !== t.nBytes)
          throw new RangeError(`tensor '${t.name}': ${data.length} bytes given, ${t.nBytes} expected`);
        writeAll(fd, data, head.length + t.offset);
      }
      ftruncateSync(fd, this.fileSize(head.length));
    } finally {
      closeSync(fd);
    }
  }
}

function writeAll(fd: number, data: Uint8Array, position: number): void {
  let done = 0;
  while (done < data.length) {
    done += nodeFs().writeSync(fd, data, done, Math.min(data.length - done, 1 << 30), position + done);
  }
}
