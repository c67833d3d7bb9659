// The WebGPU device on a second implementation: Deno's navigator.gpu (wgpu, shaders
// compiled by naga) on Mesa's lavapipe, an adapter with `shader-f16` and without subgroups
// (Dawn, Node's WebGPU, refuses lavapipe). The op harness cases whose kernels read or write
// F16, a few more (odd rows, views, many columns) and the row reductions match the
// reference device on each F16 path: `f16` (shader-f16, inputs in buffers of their own as
// a model's weights and KV cache: F16 bound as array<f16>, read and written natively),
// `f16-shared` (inputs beside dst: unpacked from words) and `u32` (shader-f16 off). Models
// fully offloaded on the f16 path (rand-llama-F16: F16 weights and KV cache; rand-llama-Q4_0
// and qwen3moe-F32, whose expert routing sorts on the GPU: an F16 KV cache) meet the CPU fidelity tolerance against llama.cpp's answers, stay close
// to the CPU device's logits and give the same bits twice and as on the u32 path
// (test/runtimes/webgpu.ts runs them under Deno). Skips without a Deno executable (LLAMA_TS_DENO, as
// test/runtimes.test.ts) or lavapipe's ICD (Debian's mesa-vulkan-drivers).

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const LAVAPIPE = '/usr/share/vulkan/icd.d/lvp_icd.x86_64.json';
const deno = process.env.LLAMA_TS_DENO;
const skip = !deno
  ? 'LLAMA_TS_DENO is unset (the path of a deno executable)'
  : !existsSync(LAVAPIPE)
    ? `no lavapipe ICD at ${LAVAPIPE} (Debian's mesa-vulkan-drivers)`
    : false;
const SCRIPT = join(REPO_ROOT, 'dist', 'test', 'runtimes', 'webgpu.js');

interface Out {
  adapter: string | null;
  features: { subgroups: boolean; f16: boolean } | null;
  results?: { path: string; name: string; nmse: number | null; skipped: string | null; f16r: number; f16w: number }[];
  model?: {
    maxDelta: number;
    vsCpu: number;
    matched: number;
    required: number;
    sameBits: boolean;
    sameAsU32: boolean | null;
    mulMats: number;
    argsorts: number;
    f16r: number;
    f16w: number;
    f16: boolean;
  };
}

function runDeno(args: string[]): Out {
  const r = spawnSync(deno as string, ['run', '-A', SCRIPT, ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, VK_ICD_FILENAMES: LAVAPIPE },
  });
  // (naga prints debugging lines on stderr: only its tail is worth showing)
  assert.equal(r.status, 0, `deno ${args.join(' ')} exited ${r.status} (${r.error ?? ''}):\n${r.stderr.slice(-3000)}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as Out;
}

test('deno + lavapipe: F16 cases match the reference device on the f16, f16-shared and u32 paths', { skip }, (t) => {
  const out = runDeno(['ops']);
  if (!out.adapter) return t.skip('deno finds no WebGPU adapter on lavapipe');
  process.stdout.write(`# deno's adapter ${out.adapter}: ${JSON.stringify(out.features)}\n`);
  const results = out.results ?? [];
  for (const r of results)
    process.stdout.write(`# ${r.path} ${r.name} ${r.nmse} f16 reads ${r.f16r} writes ${r.f16w}\n`);
  const paths = out.features?.f16 ? ['u32', 'f16', 'f16-shared'] : ['u32'];
  for (const p of paths) {
    const ran = results.filter((r) => r.path === p);
    assert.ok(ran.length >= 25, `${p}: only ${ran.length} cases ran`);
    assert.deepEqual(
      ran.filter((r) => r.skipped !== null || r.nmse === null || !(r.nmse <= 1e-6)).map((r) => r.name),
      [],
      `${p}: cases off the reference or skipped`,
    );
  }
  // without shader-f16 no shader binds array<f16>; with it, every F16 case in its own buffers
  // reads it natively and every F16 result is written natively
  assert.deepEqual(
    results.filter((r) => r.path === 'u32' && r.f16r + r.f16w > 0).map((r) => r.name),
    [],
  );
  if (!out.features?.f16) return;
  const f16 = results.filter((r) => r.path === 'f16');
  assert.deepEqual(
    f16.filter((r) => /F16/.test(r.name) && r.f16r === 0).map((r) => r.name),
    [],
    'F16 cases not read through array<f16>',
  );
  assert.deepEqual(
    f16.filter((r) => /(CPY|SET_ROWS) F(16|32) -> F16/.test(r.name) && r.f16w === 0).map((r) => r.name),
    [],
    'F16 results not written through array<f16>',
  );
});

for (const [rel, tol] of [
  ['fixtures/rand-llama-F16', 0.02],
  ['fixtures/rand-llama-Q4_0', 0.1],
  // a mixture of experts: its routing (ARGSORT) on the GPU too
  ['fixtures/archs/qwen3moe-F32', 0.02],
] as const) {
  test(`deno + lavapipe: ${rel} offloaded on the f16 path meets llama.cpp within ${tol}, the same bits twice`, {
    skip,
  }, (t) => {
    const path = sharedPath(`${rel}.gguf`);
    if (!path) return t.skip(missingShared(`${rel}.gguf`));
    const out = runDeno(['model', path, sharedPath(`${rel}.ref.json`)!, String(tol)]);
    if (!out.adapter) return t.skip('deno finds no WebGPU adapter on lavapipe');
    const m = out.model!;
    process.stdout.write(
      `# deno webgpu ${rel} (f16 ${m.f16}): max|Δ| ${m.maxDelta.toFixed(4)}, greedy ${m.matched}/${m.required}, ` +
        `max|Δ logit| vs the CPU device ${m.vsCpu.toExponential(2)}, ${m.f16r} shaders read and ${m.f16w} wrote array<f16>\n`,
    );
    assert.ok(m.maxDelta <= tol && m.mulMats > 0);
    if (rel.includes('moe')) assert.ok(m.argsorts > 0, 'the routing ran on the CPU');
    assert.ok(m.vsCpu <= tol, `logits ${m.vsCpu} off the CPU device's`);
    assert.ok(m.sameBits, 'a second run gave other bits');
    // the KV cache (and rand-llama-F16's weights) are F16: written and read as such, to the
    // same bits as the u32 path (the arithmetic is f32 on both)
    if (out.features?.f16) {
      assert.ok(m.f16 && m.f16r > 0 && m.f16w > 0, 'the f16 path was not taken');
      assert.equal(m.sameAsU32, true, 'the f16 path gave other bits than the u32 path');
    }
  });
}
