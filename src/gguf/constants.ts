// GGUF container constants (file format facts, shared by reader and writer).

/** "GGUF" as a little-endian u32. */
export const GGUF_MAGIC = 0x46554747;
export const GGUF_DEFAULT_ALIGNMENT = 32;
/** ggml's GGML_MAX_NAME: tensor names are shorter than this many bytes. */
export const GGUF_MAX_NAME = 64;
/** ggml's GGML_MAX_DIMS. */
export const GGUF_MAX_DIMS = 4;
/** Arrays of arrays deeper than this are rejected (the format allows any depth; the stack does not). */
export const GGUF_MAX_ARRAY_DEPTH = 16;

export enum GGUFValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** Encoded size of a scalar of this type (strings and arrays: their smallest encoding). */
export function minEncodedSize(type: GGUFValueType): number {
  switch (type) {
    case GGUFValueType.UINT8:
    case GGUFValueType.INT8:
    case GGUFValueType.BOOL:
      return 1;
    case GGUFValueType.UINT16:
    case GGUFValueType.INT16:
      return 2;
    case GGUFValueType.UINT32:
    case GGUFValueType.INT32:
    case GGUFValueType.FLOAT32:
      return 4;
    case GGUFValueType.UINT64:
    case GGUFValueType.INT64:
    case GGUFValueType.FLOAT64:
    case GGUFValueType.STRING: // u64 length
      return 8;
    case GGUFValueType.ARRAY: // u32 item type + u64 count
      return 12;
  }
}

export function valueTypeName(type: number): string {
  return GGUFValueType[type] ?? `unknown value type ${type}`;
}

export function isValueType(type: number): type is GGUFValueType {
  return Number.isInteger(type) && type >= 0 && type <= 12;
}
