// GGUF v2/v3 parser. Layout (little-endian):
//   magic u32 "GGUF" | version u32 | tensor_count u64 | kv_count u64
//   kv_count × (key: string, type: u32, value)
//   tensor_count × (name: string, n_dims u32, ne[n_dims] i64, type u32, offset u64)
//   padding to general.alignment, then the tensor data section.
// Strings are u64 length + UTF-8 bytes; arrays are u32 item type + u64 count + items.
// Every count and length is checked against the bytes left in the file before use.

import { type GGMLType, typeName, typeTraits } from '../ggml/types.js';
import { logger } from '../log.js';
import {
  GGUF_DEFAULT_ALIGNMENT,
  GGUF_MAGIC,
  GGUF_MAX_ARRAY_DEPTH,
  GGUF_MAX_DIMS,
  GGUF_MAX_NAME,
  GGUFValueType,
  isValueType,
  minEncodedSize,
  valueTypeName,
} from './constants.js';
import { type Cursor, decodeUtf8 } from './cursor.js';
import { GGUFError } from './errors.js';
import type { GGUFArray, GGUFKV, GGUFValue } from './values.js';

const log = logger('gguf');

export interface GGUFTensorInfo {
  readonly name: string;
  /** ggml type id. */
  readonly type: GGMLType;
  /** ne: elements per dimension, ne[0] varies fastest. */
  readonly dims: readonly number[];
  readonly nElements: number;
  readonly nBytes: number;
  /** Offset relative to the start of the data section. */
  readonly offset: number;
  /** Absolute file offset of the tensor's first byte. */
  readonly fileOffset: number;
  /** File offset of this tensor's info record (for error messages). */
  readonly infoOffset: number;
}

export interface GGUFHeader {
  readonly version: number;
  readonly kv: ReadonlyMap<string, GGUFKV>;
  readonly tensors: readonly GGUFTensorInfo[];
  readonly alignment: number;
  readonly dataOffset: number;
  /** Bytes of the data section that tensors use (end of the last tensor). */
  readonly dataSize: number;
}

const INT64_MAX = (1n << 63n) - 1n;

function readArray(c: Cursor, depth: number): GGUFArray {
  const typeAt = c.pos;
  const itemType = c.u32('array item type');
  if (!isValueType(itemType)) c.fail(`unknown array item type ${itemType}`, typeAt);
  if (itemType === GGUFValueType.ARRAY && depth >= GGUF_MAX_ARRAY_DEPTH) {
    c.fail(`arrays nested deeper than ${GGUF_MAX_ARRAY_DEPTH}`, typeAt);
  }
  const n = c.count('array length', minEncodedSize(itemType));
  switch (itemType) {
    case GGUFValueType.STRING: {
      const items = new Array<string>(n);
      for (let i = 0; i < n; i++) items[i] = c.string('array string');
      return { itemType, items };
    }
    case GGUFValueType.ARRAY: {
      const items = new Array<GGUFArray>(n);
      for (let i = 0; i < n; i++) items[i] = readArray(c, depth + 1);
      return { itemType, items };
    }
    case GGUFValueType.BOOL: {
      const raw = c.bytes(n, 'bool array');
      const items = new Array<boolean>(n);
      for (let i = 0; i < n; i++) items[i] = raw[i] !== 0;
      return { itemType, items };
    }
    default: {
      const size = minEncodedSize(itemType);
      const raw = c.bytes(n * size, `${valueTypeName(itemType)} array`);
      // raw is a fresh copy at byteOffset 0, so typed views are aligned.
      return { itemType, items: numericView(itemType, raw.buffer as ArrayBuffer, n) };
    }
  }
}

function numericView(type: GGUFValueType, buf: ArrayBuffer, n: number): GGUFArray['items'] {
  // GGUF is little-endian, like every platform Node runs on in practice.
  switch (type) {
    case GGUFValueType.UINT8:
      return new Uint8Array(buf, 0, n);
    case GGUFValueType.INT8:
      return new Int8Array(buf, 0, n);
    case GGUFValueType.UINT16:
      return new Uint16Array(buf, 0, n);
    case GGUFValueType.INT16:
      return new Int16Array(buf, 0, n);
    case GGUFValueType.UINT32:
      return new Uint32Array(buf, 0, n);
    case GGUFValueType.INT32:
      return new Int32Array(buf, 0, n);
    case GGUFValueType.FLOAT32:
      return new Float32Array(buf, 0, n);
    case GGUFValueType.FLOAT64:
      return new Float64Array(buf, 0, n);
    case GGUFValueType.UINT64:
      return new BigUint64Array(buf, 0, n);
    case GGUFValueType.INT64:
      return new BigInt64Array(buf, 0, n);
    default:
      throw new Error(`not a numeric type: ${type}`);
  }
}

function readValue(c: Cursor, type: GGUFValueType): GGUFValue {
  switch (type) {
    case GGUFValueType.UINT8:
      return c.u8('u8 value');
    case GGUFValueType.INT8:
      return c.i8('i8 value');
    case GGUFValueType.UINT16:
      return c.u16('u16 value');
    case GGUFValueType.INT16:
      return c.i16('i16 value');
    case GGUFValueType.UINT32:
      return c.u32('u32 value');
    case GGUFValueType.INT32:
      return c.i32('i32 value');
    case GGUFValueType.FLOAT32:
      return c.f32('f32 value');
    case GGUFValueType.BOOL: {
      const at = c.pos;
      const b = c.u8('bool value');
      if (b > 1) c.fail(`bool value is ${b}, expected 0 or 1`, at);
      return b === 1;
    }
    case GGUFValueType.STRING:
      return c.string('string value');
    case GGUFValueType.ARRAY:
      return readArray(c, 1);
    case GGUFValueType.UINT64:
      return c.u64('u64 value');
    case GGUFValueType.INT64:
      return c.i64('i64 value');
    case GGUFValueType.FLOAT64:
      return c.f64('f64 value');
  }
}

function readTensorInfo(c: Cursor, names: Set<string>): Omit<GGUFTensorInfo, 'fileOffset'> {
  const infoOffset = c.pos;
  const nameBytes = c.stringBytes('tensor name');
  const name = decodeUtf8(nameBytes);
  if (nameBytes.length >= GGUF_MAX_NAME) {
    c.fail(
      `tensor name '${name.slice(0, 80)}' is ${nameBytes.length} bytes, the limit is ${GGUF_MAX_NAME - 1}`,
      infoOffset,
    );
  }
  if (names.has(name)) c.fail(`duplicate tensor name '${name}'`, infoOffset);
  names.add(name);

  const dimsAt = c.pos;
  const nDims = c.u32(`dimension count of tensor '${name}'`);
  if (nDims > GGUF_MAX_DIMS)
    c.fail(`tensor '${name}' has ${nDims} dimensions, at most ${GGUF_MAX_DIMS} allowed`, dimsAt);
  const dims: number[] = [];
  let product = 1n;
  for (let i = 0; i < nDims; i++) {
    const at = c.pos;
    const ne = c.i64(`dimension ${i} of tensor '${name}'`);
    if (ne < 0n) c.fail(`tensor '${name}' has negative dimension ${i}: ${ne}`, at);
    product *= ne;
    if (product > INT64_MAX) c.fail(`tensor '${name}' element count overflows int64 (dimension ${i} is ${ne})`, at);
    dims.push(Number(ne));
  }
  const typeAt = c.pos;
  const type = c.u32(`type of tensor '${name}'`);
  const traits = typeTraits(type);
  if (!traits) c.fail(`tensor '${name}' has ${typeName(type)}, which is not a ggml type this reader knows`, typeAt);
  const ne0 = dims[0] ?? 1;
  if (ne0 % traits.blockSize !== 0) {
    c.fail(
      `tensor '${name}' of type ${traits.name}: row length ${ne0} is not a multiple of the block size ${traits.blockSize}`,
      dimsAt,
    );
  }
  const bytes = (product / BigInt(traits.blockSize)) * BigInt(traits.typeSize);
  if (product > BigInt(Number.MAX_SAFE_INTEGER) || bytes > BigInt(Number.MAX_SAFE_INTEGER)) {
    c.fail(`tensor '${name}' is too large (${product} elements, ${bytes} bytes)`, dimsAt);
  }
  const offAt = c.pos;
  const offset = c.u64(`data offset of tensor '${name}'`);
  if (offset > BigInt(Number.MAX_SAFE_INTEGER)) c.fail(`tensor '${name}' data offset ${offset} is out of range`, offAt);
  return { name, type, dims, nElements: Number(product), nBytes: Number(bytes), offset: Number(offset), infoOffset };
}

/** Parse the header and tensor table; tensor data is left in place, to be read by offset. */
export function parseHeader(c: Cursor): GGUFHeader {
  const magic = c.u32('magic');
  if (magic !== GGUF_MAGIC) {
    const text = [0, 8, 16, 24].map((s) => (magic >>> s) & 0xff);
    const shown = text.every((b) => b >= 0x20 && b < 0x7f)
      ? `'${String.fromCharCode(...text)}'`
      : `0x${magic.toString(16)}`;
    c.fail(`not a GGUF file: magic is ${shown}, expected 'GGUF'`, 0);
  }
  const version = c.u32('version');
  if (version !== 2 && version !== 3) {
    if (version !== 0 && (version & 0xffff) === 0)
      c.fail(`big-endian GGUF files are not supported (version field 0x${version.toString(16)})`, 4);
    c.fail(`unsupported GGUF version ${version} (supported: 2, 3)`, 4);
  }
  // A tensor info takes at least 8 (name length) + 4 (n_dims) + 4 (type) + 8 (offset) bytes.
  const nTensors = c.count('tensor count', 24);
  // A key-value pair takes at least 8 (key length) + 4 (type) + 1 (value) bytes.
  const nKV = c.count('metadata key-value count', 13);

  const kv = new Map<string, GGUFKV>();
  for (let i = 0; i < nKV; i++) {
    const keyAt = c.pos;
    const key = c.string(`key of metadata entry ${i}`);
    if (kv.has(key)) c.fail(`duplicate metadata key '${key}'`, keyAt);
    const typeAt = c.pos;
    const type = c.u32(`value type of '${key}'`);
    if (!isValueType(type)) c.fail(`metadata key '${key}' has unknown value type ${type}`, typeAt);
    const offset = c.pos;
    const value = readValue(c, type);
    kv.set(key, { key, type, value, offset });
  }

  let alignment = GGUF_DEFAULT_ALIGNMENT;
  const al = kv.get('general.alignment');
  if (al) {
    if (al.type !== GGUFValueType.UINT32) {
      c.fail(`general.alignment has type ${valueTypeName(al.type)}, expected UINT32`, al.offset);
    }
    const a = al.value as number;
    if (a === 0 || (a & (a - 1)) !== 0) c.fail(`general.alignment is ${a}, which is not a power of two`, al.offset);
    alignment = a;
  }

  const names = new Set<string>();
  const infos: Omit<GGUFTensorInfo, 'fileOffset'>[] = [];
  for (let i = 0; i < nTensors; i++) infos.push(readTensorInfo(c, names));

  const dataOffset = Math.ceil(c.pos / alignment) * alignment;
  const tensors: GGUFTensorInfo[] = infos.map((t) => ({ ...t, fileOffset: dataOffset + t.offset }));

  const fileSize = c.src.size;
  for (const t of tensors) {
    if (t.offset % alignment !== 0) {
      c.fail(
        `tensor '${t.name}' data offset ${t.offset} is not a multiple of the alignment ${alignment}`,
        t.infoOffset,
      );
    }
    if (t.fileOffset + t.nBytes > fileSize) {
      c.fail(
        `tensor '${t.name}' data (${t.nBytes} bytes at file offset ${t.fileOffset}) extends past the end of the file (${fileSize} bytes)`,
        t.infoOffset,
      );
    }
  }
  const byOffset = [...tensors].sort((a, b) => a.offset - b.offset);
  let dataSize = 0;
  for (let i = 0; i < byOffset.length; i++) {
    const t = byOffset[i]!;
    const prev = byOffset[i - 1];
    if (prev && prev.offset + prev.nBytes > t.offset) {
      c.fail(
        `tensor '${t.name}' (data offset ${t.offset}) overlaps tensor '${prev.name}' (data offset ${prev.offset}, ${prev.nBytes} bytes)`,
        t.infoOffset,
      );
    }
    dataSize = Math.max(dataSize, t.offset + t.nBytes);
  }
  log.debug(`loaded ${tensors.length} tensors, ${kv.size} kv from ${c.src.name} (GGUF v${version})`);
  return { version, kv, tensors, alignment, dataOffset, dataSize };
}

export { GGUFError };
