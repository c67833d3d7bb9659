// An opened GGUF file: metadata with typed access, the tensor table, and tensor data
// read lazily by file offset into caller-provided memory.
import { typeName, typeTraits } from '../ggml/types.js';
import { GGUFValueType, valueTypeName } from './constants.js';
import { Cursor } from './cursor.js';
import { GGUFError } from './errors.js';
import { type GGUFHeader, type GGUFTensorInfo, parseHeader } from './reader.js';
import { type ByteSource, ConcatSource, type FileIdentity, FileSource, MemorySource } from './source.js';
import { type GGUFArray, type GGUFKV, type GGUFValue, isArrayValue } from './values.js';

const INTEGER_TYPES = new Set([
  GGUFValueType.UINT8,
  GGUFValueType.INT8,
  GGUFValueType.UINT16,
  GGUFValueType.INT16,
  GGUFValueType.UINT32,
  GGUFValueType.INT32,
  GGUFValueType.UINT64,
  GGUFValueType.INT64,
]);

export class GGUFFile {
  readonly version: number;
  readonly alignment: number;
  /** Absolute file offset of the data section. */
  readonly dataOffset: number;
  readonly fileSize: number;
  readonly metadata: ReadonlyMap<string, GGUFKV>;
  readonly tensors: readonly GGUFTensorInfo[];
  private readonly byName: ReadonlyMap<string, GGUFTensorInfo>;

  constructor(
    private readonly source: ByteSource,
    header: GGUFHeader,
  ) {
    this.version = header.version;
    this.alignment = header.alignment;
    this.dataOffset = header.dataOffset;
    this.fileSize = source.size;
    this.metadata = header.kv;
    this.tensors = header.tensors;
    this.byName = new Map(header.tensors.map((t) => [t.name, t]));
  }

  get path(): string {
    return this.source.name;
  }

  // ---- metadata ----

  has(key: string): boolean {
    return this.metadata.has(key);
  }

  /** The raw entry, or undefined. */
  get(key: string): GGUFKV | undefined {
    return this.metadata.get(key);
  }

  private missing(key: string): never {
    throw new GGUFError(this.path, undefined, `missing metadata key '${key}'`);
  }

  private mistyped(kv: GGUFKV, expected: string): never {
    let actual = valueTypeName(kv.type);
    if (isArrayValue(kv.value)) actual = `ARRAY of ${valueTypeName(kv.value.itemType)}`;
    throw new GGUFError(this.path, kv.offset, `metadata key '${kv.key}' has type ${actual}, expected ${expected}`);
  }

  private typed<T>(key: string, type: GGUFValueType, fallback: T | typeof NONE): GGUFValue | T {
    const kv = this.metadata.get(key);
    if (!kv) return fallback === NONE ? this.missing(key) : fallback;
    if (kv.type !== type) this.mistyped(kv, valueTypeName(type));
    return kv.value;
  }

  getString(key: string): string;
  getString<T>(key: string, fallback: T): string | T;
  getString(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.STRING, fallback);
  }

  getU32(key: string): number;
  getU32<T>(key: string, fallback: T): number | T;
  getU32(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.UINT32, fallback);
  }

  getI32(key: string): number;
  getI32<T>(key: string, fallback: T): number | T;
  getI32(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.INT32, fallback);
  }

  getU64(key: string): bigint;
  getU64<T>(key: string, fallback: T): bigint | T;
  getU64(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.UINT64, fallback);
  }

  getF32(key: string): number;
  getF32<T>(key: string, fallback: T): number | T;
  getF32(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.FLOAT32, fallback);
  }

  getBool(key: string): boolean;
  getBool<T>(key: string, fallback: T): boolean | T;
  getBool(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.BOOL, fallback);
  }

  /** Any integer type, as a number (error if it is not a safe integer). */
  getInt(key: string): number;
  getInt<T>(key: string, fallback: T): number | T;
  getInt(key: string, fallback: unknown = NONE): unknown {
    const kv = this.metadata.get(key);
    if (!kv) return fallback === NONE ? this.missing(key) : fallback;
    if (!INTEGER_TYPES.has(kv.type)) this.mistyped(kv, 'an integer');
    const n = Number(kv.value as number | bigint);
    if (!Number.isSafeInteger(n)) {
      throw new GGUFError(this.path, kv.offset, `metadata key '${key}' value ${kv.value} is out of range`);
    }
    return n;
  }

  /** Any integer or float type, as a number. */
  getNumber(key: string): number;
  getNumber<T>(key: string, fallback: T): number | T;
  getNumber(key: string, fallback: unknown = NONE): unknown {
    const kv = this.metadata.get(key);
    if (!kv) return fallback === NONE ? this.missing(key) : fallback;
    if (kv.type === GGUFValueType.FLOAT32 || kv.type === GGUFValueType.FLOAT64) return kv.value as number;
    return this.getInt(key);
  }

  getArray(key: string): GGUFArray;
  getArray<T>(key: string, fallback: T): GGUFArray | T;
  getArray(key: string, fallback: unknown = NONE): unknown {
    return this.typed(key, GGUFValueType.ARRAY, fallback);
  }

  /** An array whose items must be of `itemType`. */
  getArrayOf(key: string, itemType: GGUFValueType): GGUFArray;
  getArrayOf<T>(key: string, itemType: GGUFValueType, fallback: T): GGUFArray | T;
  getArrayOf(key: string, itemType: GGUFValueType, fallback: unknown = NONE): unknown {
    const kv = this.metadata.get(key);
    if (!kv) return fallback === NONE ? this.missing(key) : fallback;
    if (!isArrayValue(kv.value) || kv.value.itemType !== itemType)
      this.mistyped(kv, `ARRAY of ${valueTypeName(itemType)}`);
    return kv.value;
  }

  getStringArray(key: string): string[];
  getStringArray<T>(key: string, fallback: T): string[] | T;
  getStringArray(key: string, fallback: unknown = NONE): unknown {
    if (!this.metadata.has(key)) return fallback === NONE ? this.missing(key) : fallback;
    return this.getArrayOf(key, GGUFValueType.STRING).items as string[];
  }

  /** general.architecture, the key every model file must have. */
  get architecture(): string {
    return this.getString('general.architecture');
  }

  // ---- tensors ----

  tensor(name: string): GGUFTensorInfo | undefined {
    return this.byName.get(name);
  }

  private resolve(t: GGUFTensorInfo | string): GGUFTensorInfo {
    if (typeof t !== 'string') return t;
    const info = this.byName.get(t);
    if (!info) throw new GGUFError(this.path, undefined, `no tensor named '${t}'`);
    return info;
  }

  /** Throws the loader's error for tensors of a type llama-ts recognises but cannot compute with. */
  assertSupportedType(t: GGUFTensorInfo | string): void {
    const info = this.resolve(t);
    const tr = typeTraits(info.type);
    if (!tr?.supported) {
      throw new GGUFError(
        this.path,
        info.infoOffset,
        `tensor ${info.name} has type ${typeName(info.type)}, which llama-ts does not support yet`,
      );
    }
  }

  private range(info: GGUFTensorInfo, offset: number, length: number): void {
    if (!(offset >= 0 && length >= 0 && offset + length <= info.nBytes)) {
      throw new RangeError(
        `tensor '${info.name}': range [${offset}, ${offset + length}) is outside its ${info.nBytes} bytes`,
      );
    }
  }

  /**
   * Read a tensor's bytes (or `dst.length` bytes from `offset` within it) into `dst`,
   * a fresh buffer when omitted. Positioned read: nothing else of the file is loaded.
   */
  readTensorData(t: GGUFTensorInfo | string, dst?: Uint8Array, offset = 0): Uint8Array {
    const info = this.resolve(t);
    const out = dst ?? new Uint8Array(info.nBytes - offset);
    this.range(info, offset, out.length);
    const got = this.source.readSync(out, info.fileOffset + offset);
    if (got !== out.length) {
      throw new GGUFError(this.path, info.fileOffset + offset + got, `short read of tensor '${info.name}'`);
    }
    return out;
  }

  /** As readTensorData, on libuv's thread pool so the event loop stays free. */
  async readTensorDataAsync(t: GGUFTensorInfo | string, dst?: Uint8Array, offset = 0): Promise<Uint8Array> {
    const info = this.resolve(t);
    const out = dst ?? new Uint8Array(info.nBytes - offset);
    this.range(info, offset, out.length);
    const got = await this.source.readAsync(out, info.fileOffset + offset);
    if (got !== out.length) {
      throw new GGUFError(this.path, info.fileOffset + offset + got, `short read of tensor '${info.name}'`);
    }
    return out;
  }

  /** The identity of the file on disk (undefined for bytes in memory). */
  identity(): FileIdentity | undefined {
    return this.source instanceof FileSource ? this.source.identity() : undefined;
  }

  close(): void {
    this.source.close();
  }
}

const NONE: unique symbol = Symbol('none');

function openOne(path: string): { src: FileSource; header: GGUFHeader } {
  let src: FileSource;
  try {
    src = new FileSource(path);
  } catch (e) {
    throw new GGUFError(path, undefined, `cannot open: ${(e as Error).message}`);
  }
  try {
    return { src, header: parseHeader(new Cursor(src)) };
  } catch (e) {
    src.close();
    throw e;
  }
}

/**
 * Open and parse a GGUF file (header and tensor table only). Throws GGUFError. The first
 * shard of a split model (gguf-split: PREFIX-00001-of-0000N.gguf, `split.count` N) opens
 * the whole model: the other shards are found by name, and the file reads as their
 * concatenation (metadata from the first, tensors from all).
 */
export function openGGUF(path: string): GGUFFile {
  const first = openOne(path);
  const countKv = first.header.kv.get('split.count');
  const count = countKv === undefined ? 1 : Number(countKv.value);
  if (count <= 1) return new GGUFFile(first.src, first.header);
  const opened: FileSource[] = [first.src];
  try {
    return openSplit(path, first.header, count, opened);
  } catch (e) {
    for (const s of opened) s.close();
    throw e;
  }
}

const splitNo = (h: GGUFHeader): number => Number(h.kv.get('split.no')?.value ?? -1);

function openSplit(path: string, head: GGUFHeader, count: number, opened: FileSource[]): GGUFFile {
  const m = /^(.*)-(\d{5})-of-(\d{5})\.gguf$/.exec(path);
  if (!m || Number(m[2]) !== 1 || Number(m[3]) !== count) {
    throw new GGUFError(
      path,
      undefined,
      `split.count is ${count}: give the first shard, named as gguf-split names it (PREFIX-00001-of-${String(count).padStart(5, '0')}.gguf), so the others are found`,
    );
  }
  if (splitNo(head) !== 0)
    throw new GGUFError(path, undefined, `split.no is ${splitNo(head)}, expected 0 in the first shard`);
  const tensors: GGUFTensorInfo[] = [...head.tensors];
  const names = new Set(tensors.map((t) => t.name));
  let base = opened[0]!.size;
  for (let k = 1; k < count; k++) {
    const name = `${m[1]}-${String(k + 1).padStart(5, '0')}-of-${m[3]}.gguf`;
    const { src, header } = openOne(name);
    opened.push(src);
    const n = Number(header.kv.get('split.count')?.value ?? 1);
    if (splitNo(header) !== k || n !== count) {
      throw new GGUFError(name, undefined, `split.no ${splitNo(header)} of ${n}, expected shard ${k} of ${count}`);
    }
    for (const t of header.tensors) {
      if (names.has(t.name)) throw new GGUFError(name, t.infoOffset, `tensor '${t.name}' is in an earlier shard too`);
      names.add(t.name);
      tensors.push({ ...t, fileOffset: base + t.fileOffset });
    }
    base += src.size;
  }
  const want = Number(head.kv.get('split.tensors.count')?.value ?? tensors.length);
  if (want !== tensors.length) {
    throw new GGUFError(
      path,
      undefined,
      `split.tensors.count is ${want}, but the ${count} shards hold ${tensors.length}`,
    );
  }
  return new GGUFFile(new ConcatSource(opened), { ...head, tensors });
}

/** Parse GGUF bytes already in memory. */
export function parseGGUF(bytes: Uint8Array, name = '<memory>'): GGUFFile {
  const src = new MemorySource(bytes, name);
  return new GGUFFile(src, parseHeader(new Cursor(src)));
}
