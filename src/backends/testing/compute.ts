// Run a small graph on one device: allocate its inputs and intermediates, upload the
// input data, compute, read the outputs back. For tests and the op harness.

import { allocTensors, GraphAllocator } from '../../ggml/alloc.js';
import { buildGraph, type Graph } from '../../ggml/graph.js';
import * as ops from '../../ggml/ops.js';
import { dequantize } from '../../ggml/quants/index.js';
import { newTensor, type Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { tensorGet, tensorGetF32, tensorSet } from '../api.js';
import type { Device } from '../impl.js';

export type Inputs = ReadonlyArray<readonly [Tensor, ArrayBufferView]>;

export interface ComputeResult {
  graph: Graph;
  allocator: GraphAllocator;
  /** Each output read back as F32. */
  values: Float32Array[];
}

export interface ComputeOptions {
  /**
   * Each input leaf in a buffer of its own (as a model's weights and KV cache lie apart from
   * the compute buffer), freed once the outputs are read; else all in the graph's buffer.
   */
  ownBuffers?: boolean;
}

/**
 * Compute `outputs` on `device`. Leafs listed in `inputs` get their data; unlisted leafs
 * must already be allocated (weights) or are zero-filled.
 */
export async function computeOn(
  device: Device,
  outputs: Tensor[],
  inputs: Inputs,
  opts: ComputeOptions = {},
): Promise<ComputeResult> {
  const graph = buildGraph(...outputs);
  const own = opts.ownBuffers
    ? inputs.filter(([t]) => !t.buffer && !t.viewSrc).flatMap(([t]) => allocTensors([t], device.bufferType()))
    : [];
  const allocator = new GraphAllocator([device.bufferType()]);
  allocator.allocGraph(graph);
  allocator.buffers[0]?.clear(0);
  for (const [t, data] of inputs) tensorSet(t, data);
  const backend = device.initBackend();
  await backend.graphCompute(graph);
  await backend.synchronize();
  const values = [];
  for (const o of outputs) values.push(await readF32(o));
  backend.free();
  for (const b of own) b.free();
  return { graph, allocator, values };
}

/** Any tensor's values as F32: F32 by strides, other types row by row (rows contiguous). */
export async function readF32(t: Tensor): Promise<Float32Array> {
  if (t.type === GGMLType.F32) return tensorGetF32(t);
  if (t.type === GGMLType.I32) {
    // indices (argsort): element by element, as numbers
    const out = new Float32Array(t.nelements);
    let k = 0;
    for (let i3 = 0; i3 < t.ne[3]; i3++) {
      for (let i2 = 0; i2 < t.ne[2]; i2++) {
        for (let i1 = 0; i1 < t.ne[1]; i1++) {
          const off = i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
          const bytes = await tensorGet(t, off, (t.ne[0] - 1) * t.nb[0] + 4);
          const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
          for (let i0 = 0; i0 < t.ne[0]; i0++) out[k++] = dv.getInt32(i0 * t.nb[0], true);
        }
      }
    }
    return out;
  }
  const out = new Float32Array(t.nelements);
  let k = 0;
  for (let i3 = 0; i3 < t.ne[3]; i3++) {
    for (let i2 = 0; i2 < t.ne[2]; i2++) {
      for (let i1 = 0; i1 < t.ne[1]; i1++) {
        const bytes = await tensorGet(t, i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3], t.rowBytes);
        dequantize(t.type, bytes, out.subarray(k, k + t.ne[0]), t.ne[0]);
        k += t.ne[0];
      }
    }
  }
  return out;
}

/**
 * Columns [j0, j0 + n) of `data` (K floats each) times weights of `type` [K, M] whose
 * bytes are `wdata`, placed in dev's weights buffer as a model places them (so the CPU
 * device repacks them): the [M, n] product.
 */
export async function weightProduct(
  dev: Device,
  type: GGMLType,
  K: number,
  M: number,
  wdata: ArrayBufferView,
  data: Float32Array,
  j0: number,
  n: number,
): Promise<Float32Array> {
  const a = newTensor(type, [K, M]);
  const bufs = allocTensors([a], dev.bufferType(), 'weights');
  tensorSet(a, wdata);
  const b = newTensor(GGMLType.F32, [K, n]);
  const r = await computeOn(dev, [ops.mulMat(a, b)], [[b, data.subarray(j0 * K, (j0 + n) * K)]]);
  const out = r.values[0].slice();
  r.allocator.free();
  for (const x of bufs) x.free();
  return out;
}

/**
 * Runs fn with Q4_0 weights allocated meanwhile in the given layout of the CPU device's
 * relaxed build (engine-flags.ts q4_0Layout, through LLAMA_TS_Q4_0_LAYOUT), then restores
 * the setting.
 */
export async function withQ4_0Layout<T>(layout: 'k4' | 'rep4', fn: () => Promise<T> | T): Promise<T> {
  const saved = process.env.LLAMA_TS_Q4_0_LAYOUT;
  process.env.LLAMA_TS_Q4_0_LAYOUT = layout;
  try {
    return await fn();
  } finally {
    if (saved === undefined) delete process.env.LLAMA_TS_Q4_0_LAYOUT;
    else process.env.LLAMA_TS_Q4_0_LAYOUT = saved;
  }
}
