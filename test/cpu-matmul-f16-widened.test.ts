// F16 weights against many columns: each group of four rows is widened to f32 once per
// column chunk into the worker's scratch (assembly/matmul.ts, mmGroup), and the tiles run
// on the f32 rows. Widening is exact and the tiles' order is unchanged, so a column must
// give the bits it has alone (the F16 tiles), at 1, 2 and 3 threads, with chunks of the
// widened path, a short chunk that is not widened, and the rows left over after the groups;
// close to the reference device. The node's scratch must have room for the widened rows.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { EXTRA_WORD, encodeGraph } from '../src/backends/cpu/encode.js';
import { CpuReg } from '../src/backends/cpu/index.js';
import { KERNELS, STEP_WORDS } from '../src/backends/cpu/protocol.js';
import type { Device } from '../src/backends/impl.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { weightProduct } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { GraphAllocator } from '../src/ggml/alloc.js';
import { buildGraph } from '../src/ggml/graph.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

// a device of its own, so its pool has three workers
const device = new CpuReg('CPU-f16mm').addDevice({ name: 'CPU-f16mm', threads: 3 });
after(() => device.close());

/** The device computing at nth threads. */
function at(nth: number): Device {
  const d = Object.create(device) as Device;
  d.initBackend = () => device.initBackend(`threads=${nth}`);
  return d;
}

/** F16 weights with signed zeros, subnormal and large halves among them (exact when widened). */
function weights(K: number, M: number): Uint16Array {
  const h = new Uint16Array(randomData(newTensor(GGMLType.F16, [K, M]), 41).buffer.slice(0));
  const special = [0x0000, 0x8000, 0x0001, 0x83ff, 0x0200, 0x7bff, 0xfbff, 0x0400];
  for (let i = 0; i < h.length; i += 37) h[i] = special[(i / 37) % special.length]!;
  return h;
}

// K = 12: one 8-wide step and a 4-wide one; 1156: long rows, K mod 8 = 4. M = 22: five
// groups of four and two rows left over. N = 129 and 130: a chunk of 128 widened columns,
// then one of 1 or 2 (below the widening threshold: the F16 tiles); N = 9: one chunk, odd.
for (const K of [12, 1156]) {
  for (const N of [9, 129, 130]) {
    test(`cpu matmul F16 widened groups: K=${K}, M=22, N=${N}, columns alone and 1-3 threads`, async () => {
      const M = 22;
      const wdata = weights(K, M);
      const data = randomData(newTensor(GGMLType.F32, [K, N]), 42) as Float32Array;
      const product = (dev: Device, j0: number, n: number) =>
        weightProduct(dev, GGMLType.F16, K, M, wdata, data, j0, n);
      const got = await product(at(1), 0, N);
      for (const nth of [2, 3]) assert.deepEqual(await product(at(nth), 0, N), got, `K=${K} N=${N}: ${nth} threads`);
      for (const j of [0, 5, N - 2, N - 1]) {
        assert.deepEqual(
          await product(at(2), j, 1),
          got.subarray(j * M, (j + 1) * M),
          `K=${K} N=${N} column ${j} alone`,
        );
      }
      // columns 4..8 as a batch of 5 (widened), against the same columns in the big batch
      assert.deepEqual(await product(at(3), 4, 5), got.subarray(4 * M, 9 * M), `K=${K} N=${N} columns 4..8`);
      const e = nmse(got, await product(referenceDevice, 0, N));
      assert.ok(e <= 1e-6, `K=${K} N=${N}: NMSE ${e} against the reference device`);
    });
  }
}

test('cpu matmul F16: the scratch of a many-column product holds a group of four rows in f32', () => {
  const K = 1156;
  const a = newTensor(GGMLType.F16, [K, 8]).setName('a');
  const b = newTensor(GGMLType.F32, [K, 16]).setName('b');
  const graph = buildGraph(ops.mulMat(a, b));
  const alloc = new GraphAllocator([device.bufferType()]);
  alloc.allocGraph(graph);
  try {
    const { steps, nsteps } = encodeGraph(graph.nodes, 2, device.arenas);
    const mem = new Int32Array(device.arenas.arenas[0]!.memory.buffer);
    let seen = 0;
    for (let i = 0; i < nsteps; i++) {
      const [, kernel, rec] = steps.subarray(i * STEP_WORDS, i * STEP_WORDS + 3) as unknown as number[];
      if (KERNELS[kernel!] !== 'k_mm') continue;
      const stride = mem[(rec! >>> 2) + EXTRA_WORD + 4]!; // extra word 4: the per-worker scratch stride
      assert.ok(stride >= 16 * K, `k_mm scratch per worker ${stride} bytes, want >= ${16 * K}`);
      seen++;
    }
    assert.equal(seen, 1);
  } finally {
    alloc.free();
  }
});
