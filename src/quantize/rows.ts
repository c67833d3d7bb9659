// Converting a run of rows from one tensor type to another: dequantize (or widen) the
// source rows to f32, then quantize them with ggml_quantize_chunk's rules. Rows of a 3-D
// (expert) tensor use their expert's slice of the importance matrix. Shared by the pool's
// workers and the calling thread (small tensors).

import { dequantize, quantizeRows } from '../ggml/quants/index.js';
import { rowSize } from '../ggml/types.js';
import { useWasmQuantizers } from './wasm-quantizers.js';

useWasmQuantizers();

export interface ConvertTask {
  srcType: number;
  dstType: number;
  nPerRow: number;
  /** Rows of one expert's matrix (ne[1]); the importance matrix holds one row of weights per expert. */
  rowsPerExpert: number;
  /** Index (within the tensor) of the first row of the source buffer. */
  firstRow: number;
  imatrix: Float32Array | null;
}

/**
 * Converts rows [r0, r1) of `src` (source bytes of the slab's rows) into `dst` (the slab's
 * destination bytes), through `scratch` (f32, at least (r1 - r0) · nPerRow values).
 */
export function convertRows(
  task: ConvertTask,
  src: Uint8Array,
  dst: Uint8Array,
  r0: number,
  r1: number,
  scratch: Float32Array,
): void {
  const { srcType, dstType, nPerRow } = task;
  const srcRow = rowSize(srcType, nPerRow);
  const dstRow = rowSize(dstType, nPerRow);
  const n = (r1 - r0) * nPerRow;
  const x = scratch.subarray(0, n);
  dequantize(srcType, src.subarray(r0 * srcRow, r1 * srcRow), x, n);
  // runs of rows of the same expert share its slice of the importance matrix
  for (let r = r0; r < r1; ) {
    const g = task.firstRow + r;
    const expert = Math.floor(g / task.rowsPerExpert);
    const end = Math.min(r1, r + (task.rowsPerExpert - (g % task.rowsPerExpert)));
    const im = task.imatrix ? task.imatrix.subarray(expert * nPerRow, (expert + 1) * nPerRow) : null;
    quantizeRows(
      dstType,
      x.subarray((r - r0) * nPerRow, (end - r0) * nPerRow),
      dst.subarray(r * dstRow, end * dstRow),
      end - r,
      nPerRow,
      im,
    );
    r = end;
  }
}
