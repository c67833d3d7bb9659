// The IQ1/IQ2/IQ3 codebooks in the forms their users read:
// - dequantizers and dot products: one byte per coordinate (ggml's iq2xxs_grid, iq1s_grid,
//   ...): grid point g, coordinate k at [g * coords + k];
// - quantizers: the level indices (0..3 or 0..7), through `levels()`.
// Each is built once, on first use, from the compact tables in iq-grid-tables.ts.

import { KGRID_IQ1S, KGRID_IQ2S, KGRID_IQ2XS, KGRID_IQ2XXS, KGRID_IQ3S, KGRID_IQ3XXS } from './iq-grid-tables.js';

/** One codebook: its compact points and how a level index becomes a dequantized byte. */
export interface GridSpec {
  readonly compact: Uint16Array;
  /** Coordinates per point (8 for IQ1/IQ2, 4 for IQ3). */
  readonly coords: number;
  /** Bits per coordinate in a compact point. */
  readonly bits: number;
  /** Dequantized value of each level index. */
  readonly values: readonly number[];
}

export const GRID_IQ2XXS: GridSpec = { compact: KGRID_IQ2XXS, coords: 8, bits: 2, values: [8, 25, 43] };
export const GRID_IQ2XS: GridSpec = { compact: KGRID_IQ2XS, coords: 8, bits: 2, values: [8, 25, 43] };
export const GRID_IQ2S: GridSpec = { compact: KGRID_IQ2S, coords: 8, bits: 2, values: [8, 25, 43] };
/** IQ1_S / IQ1_M: ternary points, levels 0, 1, 2 are -1, 0, +1. */
export const GRID_IQ1S: GridSpec = { compact: KGRID_IQ1S, coords: 8, bits: 2, values: [-1, 0, 1] };
export const GRID_IQ3XXS: GridSpec = {
  compact: KGRID_IQ3XXS,
  coords: 4,
  bits: 3,
  values: [4, 12, 20, 28, 36, 44, 52, 62],
};
export const GRID_IQ3S: GridSpec = { compact: KGRID_IQ3S, coords: 4, bits: 3, values: [1, 3, 5, 7, 9, 11, 13, 15] };

const valueCache = new Map<GridSpec, Int8Array>();
const levelCache = new Map<GridSpec, Uint8Array>();

/** The level index (0..2^bits-1) of every coordinate: point g, coordinate k at [g * coords + k]. */
export function gridLevels(spec: GridSpec): Uint8Array {
  let out = levelCache.get(spec);
  if (!out) {
    const { compact, coords, bits } = spec;
    const mask = (1 << bits) - 1;
    out = new Uint8Array(compact.length * coords);
    for (let g = 0; g < compact.length; g++) {
      for (let k = 0; k < coords; k++) out[g * coords + k] = (compact[g]! >> (bits * k)) & mask;
    }
    levelCache.set(spec, out);
  }
  return out;
}

/**
 * The dequantized value of every coordinate (ggml's byte grid; IQ1's values are signed):
 * point g, coordinate k at [g * coords + k].
 */
export function gridValues(spec: GridSpec): Int8Array {
  let out = valueCache.get(spec);
  if (!out) {
    const lv = gridLevels(spec);
    out = new Int8Array(lv.length);
    for (let i = 0; i < lv.length; i++) out[i] = spec.values[lv[i]!]!;
    valueCache.set(spec, out);
  }
  return out;
}

/**
 * IQ2/IQ3 sign bytes: 7 stored sign bits (one per coordinate) complete to 8 with the
 * parity bit, so that every group of 8 has an even number of negative values
 * (ggml's ksigns_iq2xs).
 */
export function signsOf7(s7: number): number {
  let p = s7;
  p ^= p >> 4;
  p ^= p >> 2;
  p ^= p >> 1;
  return s7 | ((p & 1) << 7);
}
