// Qwen2.5-VL's window attention (clip.cpp's inputs for PROJECTOR_TYPE_QWEN25VL): the merge
// blocks (2x2 patches each) are regrouped window by window (windows of 112 pixels: 4x4 blocks
// at patch 14, clipped at the right and bottom edges), so that each window is one contiguous
// range; layers other than every n_wa_pattern-th attend only within their window (a
// block-diagonal mask); the merger's output rows are put back in raster order at the end.

import { f32ToF16 } from '../../ggml/fp16.js';

/** clip.cpp's window side in pixels when the file names none. */
const WINDOW_PIXELS = 112;

export interface WindowLayout {
  /** For each merge block in raster order, its place in window order (window_idx). */
  idx: Int32Array;
  /** For each place in window order, the raster merge block there (inv_window_idx). */
  invIdx: Int32Array;
  /** [n patches (keys), n patches (queries)] F16 mask: 0 within a window, -inf elsewhere. */
  mask: Uint16Array;
}

/** The window regrouping of a bx × by grid of merge blocks of m² patches each. */
export function windowLayout(bx: number, by: number, patchSize: number, m: number): WindowLayout {
  const grid = Math.max(1, Math.floor(WINDOW_PIXELS / patchSize / m));
  const nBlocks = bx * by;
  const n = nBlocks * m * m;
  const idx = new Int32Array(nBlocks);
  const invIdx = new Int32Array(nBlocks);
  const mask = new Uint16Array(n * n).fill(f32ToF16(Number.NEGATIVE_INFINITY));
  const zero = f32ToF16(0);
  let dst = 0;
  for (let y = 0; y < by; y += grid) {
    for (let x = 0; x < bx; x += grid) {
      const start = dst;
      for (let dy = 0; dy < Math.min(grid, by - y); dy++) {
        for (let dx = 0; dx < Math.min(grid, bx - x); dx++) {
          const src = (y + dy) * bx + (x + dx);
          idx[src] = dst;
          invIdx[dst] = src;
          dst++;
        }
      }
      // the window's patches [start·m², dst·m²) see each other
      for (let r = start * m * m; r < dst * m * m; r++) mask.fill(zero, r * n + start * m * m, r * n + dst * m * m);
    }
  }
  return { idx, invIdx, mask };
}
