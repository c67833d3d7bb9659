// The WebGPU device under Deno (navigator.gpu: wgpu and its naga shader compiler), run by
// test/webgpu-deno.test.ts on Mesa's lavapipe: an adapter with `shader-f16` and without
// subgroups, which Dawn (Node's WebGPU) refuses. Prints one JSON line: the adapter, the
// features the device took, whether naga compiles the native f16 read of a word
// (bitcast<vec2<f16>>(u32): what an f16 path would use), and
//
//   deno run -A dist/test/runtimes/webgpu.js ops
//     the op harness cases whose kernels read or write F16 (weights, K/V, caches, masks),
//     and the row reductions: each case's NMSE against the reference device
//   deno run -A dist/test/runtimes/webgpu.js model MODEL.gguf REF.json TOLERANCE
//     the model fully offloaded, its first reference case checked against llama.cpp's
//     answers (checkRefCase) twice: the figures and whether both gave the same bits
import { readFileSync } from 'node:fs';
import { cpuDevice } from '../../src/backends/cpu/index.js';
import { deviceByName, enableWebGpu } from '../../src/backends/index.js';
import { referenceDevice } from '../../src/backends/reference/index.js';
import { compareDevices, opCases } from '../../src/backends/testing/op-harness.js';
import type { WebGpuDevice } from '../../src/backends/webgpu/device.js';
import { setLogCallback } from '../../src/log.js';
import { Model } from '../../src/model/index.js';
import { checkRefCase, type RefCase, sameBits } from '../helpers/arch-refs.js';

/** A few cases per kernel that handles F16 data, and the reductions (lavapipe compiles slowly: ~1 s a case). */
const CASES =
  /^(GET_ROWS\(F16\)|MUL_MAT\(F16 x F32\)|MUL_MAT\(Q4_0 x F32\) K=64 M=5|CPY F(16|32) -> F(16|32)$|SET_ROWS F32 -> F16 cache, I32|FLASH_ATTN_EXT K\/V F16 heads 4\/2 softcap 0 mask true|SOFT_MAX \[13,6,4\] mask F16|RMS_NORM \[33)/;

/**
 * Whether the runtime's WebGPU compiles a native F16 read from a word, the form an f16
 * path would take (the device reads F16 by unpack2x16float instead): 'compiles', the
 * compiler's message, or null where the adapter has no shader-f16.
 */
async function f16Probe(): Promise<string | null> {
  const gpu = (globalThis as { navigator?: { gpu?: GPU } }).navigator?.gpu;
  const adapter = await gpu?.requestAdapter();
  if (!adapter?.features.has('shader-f16')) return null;
  const device = await adapter.requestDevice({ requiredFeatures: ['shader-f16'] });
  try {
    device.pushErrorScope('validation');
    const module = device.createShaderModule({
      code: `enable f16;
@group(0) @binding(0) var<storage, read_write> b: array<u32>;
@compute @workgroup_size(1) fn main() { let h = bitcast<vec2<f16>>(b[0]); b[1] = bitcast<u32>(f32(h[1])); }`,
    });
    device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
    const e = await device.popErrorScope();
    return e ? (e.message.split('\n').filter((l) => l.trim())[0] ?? e.message) : 'compiles';
  } finally {
    device.destroy();
  }
}

setLogCallback(() => {});
await enableWebGpu();
const dev = deviceByName('WebGPU0') as WebGpuDevice | undefined;
const [mode, ...args] = process.argv.slice(2);
const out: Record<string, unknown> = { adapter: dev?.description ?? null, features: dev?.ctx.available ?? null };
if (dev) out.f16 = await f16Probe();
if (dev && mode === 'ops') {
  const t0 = performance.now();
  const results = await compareDevices(
    dev,
    referenceDevice,
    undefined,
    opCases().filter((c) => CASES.test(c.name)),
  );
  out.ms = Math.round(performance.now() - t0);
  out.results = results.map((r) => ({ name: r.name, nmse: r.nmse ?? null, skipped: r.skipped ?? null }));
} else if (dev && mode === 'model') {
  const [path, refPath, tol] = args;
  const ref = JSON.parse(readFileSync(refPath, 'utf8')) as { cases: RefCase[] };
  const model = await Model.load(path, { devices: [dev, cpuDevice] });
  try {
    const t0 = performance.now();
    const a = await checkRefCase(model, ref.cases[0], Number(tol), `${path} (deno webgpu)`);
    const b = await checkRefCase(model, ref.cases[0], Number(tol), `${path} (deno webgpu, again)`);
    out.model = {
      ms: Math.round(performance.now() - t0),
      maxDelta: a.maxDelta,
      matched: a.matched,
      required: a.required,
      sameBits: sameBits(a.steps, b.steps),
      mulMats: dev.opCounts.get('MUL_MAT') ?? 0,
    };
  } finally {
    model.free();
  }
}
process.stdout.write(`${JSON.stringify(out)}\n`);
cpuDevice.close();
