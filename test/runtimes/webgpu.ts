// The WebGPU device under Deno (navigator.gpu: wgpu and its naga shader compiler), run by
// test/webgpu-deno.test.ts on Mesa's lavapipe: an adapter with `shader-f16` and without
// subgroups, which Dawn (Node's WebGPU) refuses. Prints one JSON line: the adapter, the
// features the device has, and
//
//   deno run -A dist/test/runtimes/webgpu.js ops
//     the op harness cases whose kernels read or write F16 (weights, K/V, caches, masks),
//     a few more (odd sizes, views, F16 to F16), and the row reductions, each against the
//     reference device on three paths: `f16` (shader-f16, each input in its own buffer as a
//     model's weights and cache are: F16 bound as array<f16>), `f16-shared` (shader-f16, the
//     inputs in the compute buffer: an F16 tensor beside dst is unpacked from words) and
//     `u32` (shader-f16 switched off). Per case: NMSE and how many of its shaders read
//     (`f16r`) and wrote (`f16w`) array<f16> bindings
//   deno run -A dist/test/runtimes/webgpu.js model MODEL.gguf REF.json TOLERANCE [u32]
//     the model fully offloaded (shader-f16 on unless `u32`), its first reference case
//     checked against llama.cpp's answers (checkRefCase) twice, and against the CPU
//     device's logits: the figures, whether both runs gave the same bits (and the same
//     as the u32 path's), and how many shaders bound array<f16>
import { readFileSync } from 'node:fs';
import { cpuDevice } from '../../src/backends/cpu/index.js';
import { deviceByName, enableWebGpu } from '../../src/backends/index.js';
import { referenceDevice } from '../../src/backends/reference/index.js';
import { compareDevices, type OpCase, opCases } from '../../src/backends/testing/op-harness.js';
import type { WebGpuDevice } from '../../src/backends/webgpu/device.js';
import * as ops from '../../src/ggml/ops.js';
import { newTensor, permute, view } from '../../src/ggml/tensor.js';
import { GGMLType } from '../../src/ggml/types.js';
import { setLogCallback } from '../../src/log.js';
import { Model } from '../../src/model/index.js';
import { checkRefCase, type RefCase, sameBits } from '../helpers/arch-refs.js';

const { F16, F32, I32 } = GGMLType;

/** The harness cases that read or write F16, the reductions and ARGSORT (lavapipe compiles slowly: ~0.2 s a shader). */
const CASES =
  /^(GET_ROWS\(F16\)|MUL_MAT\(F16|MUL_MAT_ID\(F16\)|MUL_MAT\(Q4_0 x F32\) K=64 M=5|CPY F(16|32) -> F(16|32)|SET_ROWS F32 -> F16|FLASH_ATTN_EXT (K\/V F16|split: .*F16|D 64, heads 14\/2, 1 queries)|SOFT_MAX .*mask F16|RMS_NORM \[33|ARGSORT )/;

/** Odd sizes and views beyond the harness's: long odd rows, many columns, F16 to F16 of a permuted view. */
function moreCases(): OpCase[] {
  const mm = (K: number, M: number, N: number): OpCase => ({
    name: `MUL_MAT(F16 x F32) K=${K} M=${M} N=${N}`,
    build: () => {
      const a = newTensor(F16, [K, M]);
      const b = newTensor(F32, [K, N]);
      return { out: ops.mulMat(a, b), inputs: [a, b] };
    },
  });
  return [
    mm(129, 33, 1),
    mm(257, 19, 11),
    {
      name: 'GET_ROWS(F16) [255,9] idx [4]',
      build: () => {
        const a = newTensor(F16, [255, 9]);
        const idx = newTensor(I32, [4]);
        return { out: ops.getRows(a, idx), inputs: [a, [idx, new Int32Array([8, 0, 3, 3])]] };
      },
    },
    transposedCopy(2),
  ];
}

/**
 * CPY F16 -> F16 of a transposed view [6,7,3] of odd rows from row `r0`: half the rows
 * start inside a word, and with an odd r0 the view itself does (only the f16 path, which
 * reads by element, takes a view off a word).
 */
function transposedCopy(r0: number): OpCase {
  return {
    name: `CPY F16 -> F16 of a transposed view [6,7,3] of odd rows from byte ${14 * r0}`,
    build: () => {
      const a = newTensor(F16, [7, 8, 3]);
      const v = permute(view(a, [7, 6, 3], [a.nb[1], a.nb[2]], r0 * a.nb[1]), [1, 0, 2, 3]);
      return { out: ops.cpy(ops.cpy(v, newTensor(F16, [6, 7, 3])), newTensor(F32, [6, 7, 3])), inputs: [a] };
    },
  };
}

setLogCallback(() => {});
await enableWebGpu();
const dev = deviceByName('WebGPU0') as WebGpuDevice | undefined;
const [mode, ...args] = process.argv.slice(2);
const out: Record<string, unknown> = { adapter: dev?.description ?? null, features: dev?.ctx.available ?? null };

/** Pipeline keys used since the last call (a key names each binding's element type: `f16r`, `f16w`, `u32r`, …). */
const keys = new Set<string>();
if (dev) {
  const pipeline = dev.ctx.pipeline.bind(dev.ctx);
  dev.ctx.pipeline = (key, kinds, source, label) => {
    keys.add(key);
    return pipeline(key, kinds, source, label);
  };
}
const used = (tag: string) => [...keys].filter((k) => k.split('|')[3].split(',').includes(tag)).length;

if (dev && mode === 'ops') {
  const t0 = performance.now();
  const cases = [...opCases().filter((c) => CASES.test(c.name)), ...moreCases()];
  const paths: [string, boolean, boolean][] = [
    ['u32', false, true],
    ...(dev.ctx.available.f16
      ? ([
          ['f16', true, true],
          ['f16-shared', true, false],
        ] as [string, boolean, boolean][])
      : []),
  ];
  const results = [];
  for (const [path, f16, own] of paths) {
    dev.ctx.setFeatures({ f16 });
    for (const c of path === 'f16' ? [...cases, transposedCopy(1)] : cases) {
      keys.clear();
      const [r] = await compareDevices(dev, referenceDevice, undefined, [c], { ownBuffers: own });
      results.push({
        path,
        name: r.name,
        nmse: r.nmse ?? null,
        skipped: r.skipped ?? null,
        f16r: used('f16r'),
        f16w: used('f16w'),
      });
    }
  }
  out.ms = Math.round(performance.now() - t0);
  out.results = results;
} else if (dev && mode === 'model') {
  const [path, refPath, tol, u32] = args;
  dev.ctx.setFeatures({ f16: u32 !== 'u32' });
  const ref = JSON.parse(readFileSync(refPath, 'utf8')) as { cases: RefCase[] };
  const cpuModel = await Model.load(path, { devices: [cpuDevice] });
  const cpu = await checkRefCase(cpuModel, ref.cases[0], Number(tol), `${path} (cpu)`);
  cpuModel.free();
  const model = await Model.load(path, { devices: [dev, cpuDevice] });
  try {
    const t0 = performance.now();
    const a = await checkRefCase(model, ref.cases[0], Number(tol), `${path} (deno webgpu)`);
    const b = await checkRefCase(model, ref.cases[0], Number(tol), `${path} (deno webgpu, again)`);
    const f16r = used('f16r');
    const f16w = used('f16w');
    // the f16 path changes how F16 is loaded and stored, never the arithmetic: the u32 path's bits
    let sameAsU32: boolean | null = null;
    if (dev.ctx.features.f16) {
      dev.ctx.setFeatures({ f16: false });
      const u = await checkRefCase(model, ref.cases[0], Number(tol), `${path} (deno webgpu, u32)`);
      sameAsU32 = sameBits(a.steps, u.steps);
      dev.ctx.setFeatures({ f16: true });
    }
    let vsCpu = 0;
    a.steps.forEach((s, i) => {
      for (let k = 0; k < s.length; k++) vsCpu = Math.max(vsCpu, Math.abs(s[k] - cpu.steps[i][k]));
    });
    out.model = {
      ms: Math.round(performance.now() - t0),
      maxDelta: a.maxDelta,
      cpuMaxDelta: cpu.maxDelta,
      vsCpu,
      matched: a.matched,
      required: a.required,
      sameBits: sameBits(a.steps, b.steps),
      sameAsU32,
      mulMats: dev.opCounts.get('MUL_MAT') ?? 0,
      argsorts: dev.opCounts.get('ARGSORT') ?? 0,
      f16r,
      f16w,
      f16: dev.ctx.features.f16,
    };
  } finally {
    model.free();
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
cpuDevice.close();
