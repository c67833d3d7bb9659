// Q4_0 weights on the relaxed build in both of their layouts (rep4, and k4 where the engine
// runs its kernels faster: engine-flags.ts q4_0Layout) and with both exact forms of the
// 8-bit dot (the engine flag dotAdd: 16-bit dots and adds, or 32-bit accumulation where
// the engine makes it one instruction): every combination must give the same bits, for
// every column count (one-column, four-column and unpacked-tile kernels), close to the
// reference device. The 32-bit form runs only where it is exact (not Node 20's).

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { FLAGS_AT } from '../src/backends/cpu/arena.js';
import { dotAddExact, engineFlags, FLAG_DOT_ADD } from '../src/backends/cpu/engine-flags.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { weightProduct, withQ4_0Layout } from '../src/backends/testing/compute.js';
import { nmse, randomData } from '../src/backends/testing/op-harness.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

after(() => cpuDevice.close());

/** Writes the engine flags word of every arena the device has (the kernels read it per call). */
function setFlags(v: number): void {
  for (const a of cpuDevice.arenas.arenas) new Uint32Array(a.memory.buffer, FLAGS_AT, 1)[0] = v;
}

for (const K of [96, 2048]) {
  test(`cpu Q4_0 layouts and dot forms give the same bits (K=${K}, M=11, columns 1-21)`, async (t) => {
    if (cpuDevice.variant !== 'relaxed') {
      t.skip('the strict build has one layout and one dot form');
      return;
    }
    const M = 11; // two groups of four rows and three plain rows
    const N = 21;
    const wdata = randomData(newTensor(GGMLType.Q4_0, [K, M]), 41);
    const data = randomData(newTensor(GGMLType.F32, [K, N]), 42) as Float32Array;
    const want = await weightProduct(referenceDevice, GGMLType.Q4_0, K, M, wdata, data, 0, N);
    const forms = dotAddExact() ? [0, FLAG_DOT_ADD] : [0];
    if (forms.length === 1) t.diagnostic('the 32-bit relaxed dot is not exact on this engine: 16-bit form only');
    let first: Float32Array | undefined;
    try {
      for (const layout of ['rep4', 'k4'] as const) {
        for (const f of forms) {
          setFlags(f);
          const what = `${layout}, dot form ${f}`;
          const product = (j0: number, n: number) =>
            withQ4_0Layout(layout, () => weightProduct(cpuDevice, GGMLType.Q4_0, K, M, wdata, data, j0, n));
          const got = await product(0, N);
          const e = nmse(got, want);
          assert.ok(e <= 5e-4, `${what}: NMSE ${e}`);
          if (first) assert.deepEqual(got, first, `${what} against rep4, 16-bit form`);
          first ??= got;
          // fewer columns take the one- and four-column kernels: the same bits per column
          for (const [j0, n] of [
            [0, 1],
            [3, 2],
            [5, 4],
            [9, 5],
            [12, 9],
          ]) {
            assert.deepEqual(
              await product(j0, n),
              got.subarray(j0 * M, (j0 + n) * M),
              `${what}: columns ${j0}..${j0 + n - 1}`,
            );
          }
        }
      }
    } finally {
      setFlags(engineFlags());
    }
  });
}

// The other types whose one-column kernels have both dot forms (k4 Q4_K, Q6_K, MXFP4; rep4
// Q8_0): the same bits in either form and for every column count (one-column, two- or
// four-column kernels, Q6_K's unpacked tiles), close to the reference device. Random bytes
// give Q6_K scales of both signs.
for (const name of ['Q4_K', 'Q6_K', 'MXFP4', 'Q8_0'] as const) {
  test(`cpu ${name} dot forms give the same bits (K=512, M=11, columns 1-21)`, async (t) => {
    if (cpuDevice.variant !== 'relaxed') {
      t.skip('the strict build has one layout and one dot form');
      return;
    }
    const type = GGMLType[name];
    const K = 512;
    const M = 11;
    const N = 21;
    const wdata = randomData(newTensor(type, [K, M]), 51);
    const data = randomData(newTensor(GGMLType.F32, [K, N]), 52) as Float32Array;
    const want = await weightProduct(referenceDevice, type, K, M, wdata, data, 0, N);
    const forms = dotAddExact() ? [0, FLAG_DOT_ADD] : [0];
    let first: Float32Array | undefined;
    try {
      for (const f of forms) {
        setFlags(f);
        const product = (j0: number, n: number) => weightProduct(cpuDevice, type, K, M, wdata, data, j0, n);
        const got = await product(0, N);
        const e = nmse(got, want);
        assert.ok(e <= 5e-4, `dot form ${f}: NMSE ${e}`);
        if (first) assert.deepEqual(got, first, `dot form ${f} against the 16-bit form`);
        first ??= got;
        for (const [j0, n] of [
          [0, 1],
          [3, 2],
          [5, 4],
          [9, 5],
          [12, 9],
        ]) {
          assert.deepEqual(
            await product(j0, n),
            got.subarray(j0 * M, (j0 + n) * M),
            `dot form ${f}: columns ${j0}..${j0 + n - 1}`,
          );
        }
      }
    } finally {
      setFlags(engineFlags());
    }
  });
}
