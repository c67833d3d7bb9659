// f16 to f32 in the CPU kernels, for every one of the 65536 halves: rows of an F16 tensor
// read as f32, and f16 block scales (Q4_0 in both interleaved layouts, Q8_0) through the
// products. Subnormal halves matter: the kernels convert them without a float operation
// on a subnormal (x64 slows such an operation down by a microcode assist), and must still
// give the exact value.

import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { tensorSet } from '../src/backends/api.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { computeOn, withQ4_0Layout } from '../src/backends/testing/compute.js';
import { allocTensors } from '../src/ggml/alloc.js';
import { f16ToF32, f32ToF16 } from '../src/ggml/fp16.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';

after(() => cpuDevice.close());

const ALL = Uint16Array.from({ length: 65536 }, (_, h) => h);

function same(got: number, want: number, what: string): void {
  if (Number.isNaN(want)) assert.ok(Number.isNaN(got), `${what}: ${got}, want NaN`);
  else assert.ok(Object.is(got, want), `${what}: ${got}, want ${want}`);
}

test('cpu f16: every half read as f32 (GET_ROWS of an F16 tensor) is exact', async () => {
  const t = newTensor(GGMLType.F16, [256, 256], 't');
  const bufs = allocTensors([t], cpuDevice.bufferType(), 'weights');
  tensorSet(t, new Uint8Array(ALL.buffer));
  const idx = newTensor(GGMLType.I32, [256], 'idx');
  const r = await computeOn(cpuDevice, [ops.getRows(t, idx)], [[idx, Int32Array.from({ length: 256 }, (_, i) => i)]]);
  const got = r.values[0];
  for (let h = 0; h < 65536; h++) same(got[h], f16ToF32(h), `half 0x${h.toString(16)}`);
  r.allocator.free();
  for (const b of bufs) b.free();
});

// One block per row (K = 32), its scale the row's half and every weight 1 (Q4_0 nibble 9,
// Q8_0 quant 1), against a column of ones (quantized as ggml-cpu's Q8_0: scale f16(1/127),
// quants 127): row r's result is 32 · 127 · (d_r · d_a) + 0, rounded as the kernels round it.
for (const [name, layout] of [
  ['Q4_0', 'k4'],
  ['Q4_0', 'rep4'],
  ['Q8_0', undefined],
] as const) {
  test(`cpu f16: every half as a ${name} block scale${layout ? ` (${layout} layout)` : ''} gives the exact product`, async () => {
    const q4 = name === 'Q4_0';
    const ts = q4 ? 18 : 34;
    const bytes = new Uint8Array(65536 * ts);
    for (let h = 0; h < 65536; h++) {
      bytes[h * ts] = h & 0xff;
      bytes[h * ts + 1] = h >> 8;
      bytes.fill(q4 ? 0x99 : 1, h * ts + 2, (h + 1) * ts);
    }
    const run = async () => {
      const a = newTensor(GGMLType[name], [32, 65536], 'a');
      const bufs = allocTensors([a], cpuDevice.bufferType(), 'weights');
      tensorSet(a, bytes);
      const x = newTensor(GGMLType.F32, [32, 1], 'x');
      const r = await computeOn(cpuDevice, [ops.mulMat(a, x)], [[x, new Float32Array(32).fill(1)]]);
      const out = Float32Array.from(r.values[0]);
      r.allocator.free();
      for (const b of bufs) b.free();
      return out;
    };
    const got = layout ? await withQ4_0Layout(layout, run) : await run();
    const da = f16ToF32(f32ToF16(1 / 127));
    for (let h = 0; h < 65536; h++) {
      // (+ 0: the sums start at +0, so a -0 scale gives +0)
      const want = Math.fround(32 * 127 * Math.fround(Math.fround(f16ToF32(h)) * da)) + 0;
      same(got[h], want, `scale 0x${h.toString(16)}`);
    }
  });
}
