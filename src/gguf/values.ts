// In-memory form of GGUF metadata values. Numeric arrays are typed arrays (a vocabulary's
// scores and token types stay compact); 64-bit integers are bigints so nothing is rounded.
import { GGUFValueType } from './constants.js';

export type GGUFNumericArray =
  | Uint8Array
  | Int8Array
  | Uint16Array
  | Int16Array
  | Uint32Array
  | Int32Array
  | Float32Array
  | Float64Array
  | BigUint64Array
  | BigInt64Array;

export interface GGUFArray {
  readonly itemType: GGUFValueType;
  /** Typed array for numbers, boolean[] / string[] / GGUFArray[] otherwise. */
  readonly items: GGUFNumericArray | boolean[] | string[] | GGUFArray[];
}

export type GGUFScalar = number | bigint | boolean | string;
export type GGUFValue = GGUFScalar | GGUFArray;

export interface GGUFKV {
  readonly key: string;
  readonly type: GGUFValueType;
  readonly value: GGUFValue;
  /** File offset of the value's encoding (after the key and type). */
  readonly offset: number;
}

export function isArrayValue(v: GGUFValue): v is GGUFArray {
  return typeof v === 'object' && v !== null && 'itemType' in v;
}

/** The shortest decimal that reads back as the same float32 (1e-5, not 0.000009999999747). */
export function shortestF32(v: number): number {
  if (!Number.isFinite(v)) return v;
  for (let p = 1; p < 9; p++) {
    const d = Number(v.toPrecision(p));
    if (Math.fround(d) === v) return d;
  }
  return v;
}

/** Plain-JSON form of a value (bigints as numbers when safe, else strings; typed arrays as arrays). */
export function valueToJSON(v: GGUFValue, type?: GGUFValueType): unknown {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (typeof v === 'number' && type === GGUFValueType.FLOAT32) return shortestF32(v);
  if (!isArrayValue(v)) return v;
  const out: unknown[] = [];
  for (const item of v.items as Iterable<GGUFValue>) out.push(valueToJSON(item, v.itemType));
  return out;
}
