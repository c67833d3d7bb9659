// Search structures of the IQ1/IQ2/IQ3 quantizers (ggml's iq2xs_init_impl and
// iq3xs_init_impl, rebuilt here): a quantizer rounds a group of 8 (or 4) values to levels,
// packs the levels into an index u (bits per coordinate as in the compact grid), and
// looks u up:
// - on the grid: `map[u]` is the grid point;
// - off it: `neighbours(u)` lists the grid points nearest to u, all those at the
//   `nwant` smallest distinct squared distances (in "2·level + 1" coordinates), in
//   increasing (distance, index) order, as ggml's sorted tables hold them.
// Only points whose levels the quantizers can produce are ever asked for, so neighbour
// lists are computed on first use rather than for the whole index space.

import { type GridSpec, gridLevels } from './iq-grids.js';

export interface GridSearch {
  readonly spec: GridSpec;
  /** Grid point of each level index u, or -1. */
  readonly map: Int32Array;
  /** Coordinates of every grid point as 2·level + 1: point g, coordinate k at [g * coords + k]. */
  readonly pos: Int8Array;
  /** Grid points nearest to an off-grid index u (cached). */
  neighbours(u: number): Uint16Array;
}

const cache = new Map<GridSpec, Map<number, GridSearch>>();

/** The search structure of a grid, keeping the `nwant` nearest distances of off-grid points. */
export function gridSearch(spec: GridSpec, nwant: number): GridSearch {
  let byWant = cache.get(spec);
  if (!byWant) {
    byWant = new Map();
    cache.set(spec, byWant);
  }
  let s = byWant.get(nwant);
  if (!s) {
    s = build(spec, nwant);
    byWant.set(nwant, s);
  }
  return s;
}

function build(spec: GridSpec, nwant: number): GridSearch {
  const { coords, bits } = spec;
  const n = spec.compact.length;
  const levels = gridLevels(spec);
  const pos = new Int8Array(levels.length);
  for (let i = 0; i < levels.length; i++) pos[i] = 2 * levels[i]! + 1;
  const map = new Int32Array(1 << (bits * coords)).fill(-1);
  for (let g = 0; g < n; g++) map[spec.compact[g]!] = g;
  const lists = new Map<number, Uint16Array>();
  const d2 = new Int32Array(n);
  const mask = (1 << bits) - 1;
  const maxD2 = coords * (2 * mask) ** 2;
  const counts = new Int32Array(maxD2 + 1);
  return {
    spec,
    map,
    pos,
    neighbours(u: number): Uint16Array {
      let list = lists.get(u);
      if (list) return list;
      counts.fill(0);
      for (let g = 0; g < n; g++) {
        let d = 0;
        for (let k = 0; k < coords; k++) {
          const diff = pos[g * coords + k]! - (2 * ((u >> (bits * k)) & mask) + 1);
          d += diff * diff;
        }
        d2[g] = d;
        counts[d]++;
      }
      // the nwant smallest distances present, then the points at them by (distance, index)
      let total = 0;
      let limit = -1;
      for (let d = 0, found = 0; d <= maxD2 && found < nwant; d++) {
        if (counts[d]! === 0) continue;
        found++;
        total += counts[d]!;
        limit = d;
      }
      list = new Uint16Array(total);
      let at = 0;
      for (let d = 0; d <= limit; d++) {
        if (counts[d]! === 0) continue;
        for (let g = 0; g < n; g++) if (d2[g] === d) list[at++] = g;
      }
      lists.set(u, list);
      return list;
    },
  };
}
