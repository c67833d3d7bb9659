// Elementwise ops: ADD, MUL and DIV (b broadcast over a by repetition), SCALE, SILU,
// GELU, TANH, SIGMOID, CLAMP, gpt-oss's SWIGLU_OAI; and SUM_ROWS.

import { f16ToF32, f32ToF16 } from '../../../ggml/fp16.js';
import type { Tensor } from '../../../ggml/tensor.js';
import { forEachRow, HostView } from '../access.js';
import type { KernelOptions } from './options.js';

function binary(dst: Tensor, f: (x: number, y: number) => number): void {
  const [a, b] = dst.src;
  const va = new HostView(a);
  const vb = new HostView(b);
  const vd = new HostView(dst);
  forEachRow(dst.ne, (i1, i2, i3) => {
    const j1 = i1 % b.ne[1];
    const j2 = i2 % b.ne[2];
    const j3 = i3 % b.ne[3];
    for (let i0 = 0; i0 < dst.ne[0]; i0++) {
      vd.set(f(va.get(i0, i1, i2, i3), vb.get(i0 % b.ne[0], j1, j2, j3)), i0, i1, i2, i3);
    }
  });
}

function unary(dst: Tensor, f: (x: number) => number): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  forEachRow(dst.ne, (i1, i2, i3) => {
    for (let i0 = 0; i0 < dst.ne[0]; i0++) vd.set(f(va.get(i0, i1, i2, i3)), i0, i1, i2, i3);
  });
}

export function add(dst: Tensor): void {
  binary(dst, (x, y) => x + y);
}

export function mul(dst: Tensor): void {
  binary(dst, (x, y) => x * y);
}

export function div(dst: Tensor): void {
  binary(dst, (x, y) => x / y);
}

export function scale(dst: Tensor): void {
  const s = dst.params.scale;
  const b = dst.params.bias ?? 0;
  unary(dst, (x) => s * x + b);
}

export function silu(dst: Tensor): void {
  unary(dst, (x) => x / (1 + Math.exp(-x)));
}

const SQRT_2_OVER_PI = Math.sqrt(2 / Math.PI);

function geluExact(x: number): number {
  return 0.5 * x * (1 + Math.tanh(SQRT_2_OVER_PI * x * (1 + 0.044715 * x * x)));
}

let geluTable: Float32Array | null = null;

/**
 * ggml-cpu's GELU (GGML_GELU_FP16): 0 below -10, x above 10, otherwise a lookup in a
 * table of f16 results by the f16 rounding of x. The table is built on first use.
 */
export function geluGgmlCpu(x: number): number {
  if (x <= -10) return 0;
  if (x >= 10) return x;
  if (!geluTable) {
    geluTable = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) geluTable[h] = f16ToF32(f32ToF16(geluExact(f16ToF32(h))));
  }
  return geluTable[f32ToF16(x)];
}

/** GELU, tanh approximation: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function gelu(dst: Tensor, o: KernelOptions = {}): void {
  unary(dst, o.ggmlCpu ? geluGgmlCpu : geluExact);
}

export function tanh(dst: Tensor): void {
  unary(dst, Math.tanh);
}

export function sigmoid(dst: Tensor): void {
  unary(dst, (x) => 1 / (1 + Math.exp(-x)));
}

export function clamp(dst: Tensor): void {
  const { min, max } = dst.params;
  unary(dst, (x) => Math.min(Math.max(x, min), max));
}

/** x = min(g, limit), y = clamp(u, ±limit): x / (1 + e^(-alpha·x)) · (y + 1). */
export function swigluOai(dst: Tensor): void {
  const [g, u] = dst.src;
  const vg = new HostView(g);
  const vu = new HostView(u);
  const vd = new HostView(dst);
  const { alpha, limit } = dst.params;
  forEachRow(dst.ne, (i1, i2, i3) => {
    for (let i0 = 0; i0 < dst.ne[0]; i0++) {
      const x = Math.min(vg.get(i0, i1, i2, i3), limit);
      const y = Math.min(Math.max(vu.get(i0, i1, i2, i3), -limit), limit);
      vd.set((x / (1 + Math.exp(-alpha * x))) * (y + 1), i0, i1, i2, i3);
    }
  });
}

/** dst[0, i1, i2, i3] = Σ_i0 a[i0, i1, i2, i3] (double-precision sum). */
export function sumRows(dst: Tensor): void {
  const va = new HostView(dst.src[0]);
  const vd = new HostView(dst);
  const n = dst.src[0].ne[0];
  forEachRow(dst.ne, (i1, i2, i3) => {
    let s = 0;
    for (let i0 = 0; i0 < n; i0++) s += va.get(i0, i1, i2, i3);
    vd.set(s, 0, i1, i2, i3);
  });
}
