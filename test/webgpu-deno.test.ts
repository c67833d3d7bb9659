// The WebGPU device on a second implementation: Deno's navigator.gpu (wgpu, shaders
// compiled by naga) on Mesa's lavapipe, an adapter with `shader-f16` and no subgroups
// (Dawn, Node's WebGPU, refuses lavapipe). The op harness cases whose kernels read or write
// F16 and the row reductions match the reference device, and a model with F16 weights and
// an F16 KV cache, fully offloaded, meets the CPU fidelity tolerance against llama.cpp's
// answers with the same bits twice (test/runtimes/webgpu.ts runs them under Deno). The
// device asks for no shader-f16: the line it prints says whether naga compiles the native
// F16 read an f16 path would use. Skips without a Deno executable (LLAMA_TS_DENO, as
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
  features: { subgroups: boolean } | null;
  f16: string | null;
  results?: { name: string; nmse: number | null; skipped: string | null }[];
  model?: { maxDelta: number; matched: number; required: number; sameBits: boolean; mulMats: number };
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

test('deno + lavapipe: the F16 and reduction op cases match the reference device', { skip }, (t) => {
  const out = runDeno(['ops']);
  if (!out.adapter) return t.skip('deno finds no WebGPU adapter on lavapipe');
  process.stdout.write(
    `# deno's adapter ${out.adapter}: subgroups ${out.features?.subgroups}; native f16 read: ${out.f16 ?? 'no shader-f16'}\n`,
  );
  const results = out.results ?? [];
  for (const r of results) process.stdout.write(`# ${r.name} ${r.nmse}\n`);
  assert.ok(results.length >= 10, `only ${results.length} cases ran`);
  assert.deepEqual(
    results.filter((r) => r.skipped !== null || r.nmse === null || !(r.nmse <= 1e-6)).map((r) => r.name),
    [],
  );
});

test('deno + lavapipe: rand-llama-F16 offloaded meets llama.cpp within 0.02, the same bits twice', { skip }, (t) => {
  const rel = 'fixtures/rand-llama-F16';
  const path = sharedPath(`${rel}.gguf`);
  if (!path) return t.skip(missingShared(`${rel}.gguf`));
  const out = runDeno(['model', path, sharedPath(`${rel}.ref.json`)!, '0.02']);
  if (!out.adapter) return t.skip('deno finds no WebGPU adapter on lavapipe');
  const m = out.model!;
  process.stdout.write(`# deno webgpu ${rel}: max|Δ| ${m.maxDelta.toFixed(4)}, greedy ${m.matched}/${m.required}\n`);
  assert.ok(m.maxDelta <= 0.02 && m.mulMats > 0);
  assert.ok(m.sameBits, 'a second run gave other bits');
});
