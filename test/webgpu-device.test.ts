// The WebGPU device: registry entry, buffers (any sub-range read/write/memset, unaligned
// heads and tails included; the host buffer type), and a generated tiny llama computed on
// it, fully offloaded and split with nGpuLayers 1, against the CPU device; the same tokens
// twice give the same bits. Skips without a WebGPU adapter (SwiftShader: README "GPU").

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { getBackendDevicesInfo, loadModel } from '../src/api/index.js';
import type { LlamaModelOptions } from '../src/api/types.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { initBackend, tensorBuffer, tensorGet, tensorSet } from '../src/backends/index.js';
import { ReferenceReg } from '../src/backends/reference/index.js';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { allocTensors } from '../src/ggml/alloc.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';
import { setLogCallback } from '../src/log.js';
import { Context, defaultDevices, Model } from '../src/model/index.js';
import { subrangeProperty } from './helpers/buffer-property.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';
import { webGpuDevice } from './helpers/webgpu.js';

const dev = await webGpuDevice();
const skip = typeof dev === 'string' ? dev : false;
const gpu = () => dev as Exclude<typeof dev, string>;
after(() => cpuDevice.close());

test('webgpu: the device is registered with its adapter, caps and limits', { skip }, () => {
  const p = gpu().props();
  assert.equal(p.name, 'WebGPU0');
  assert.equal(p.type, 'gpu');
  assert.ok(p.description.length > 0);
  assert.deepEqual(
    { async: p.caps.async, hostBuffer: p.caps.hostBuffer, events: p.caps.events },
    { async: true, hostBuffer: true, events: true },
  );
  const buft = gpu().bufferType();
  assert.equal(buft.isHost, false);
  assert.ok(buft.alignment >= 4 && buft.maxSize >= 2 ** 20);
  assert.equal(gpu().hostBufferType()?.isHost, true);
});

test('webgpu buffers: any sub-range write, memset and read round-trips byte-exactly', { skip }, async () => {
  for (let seed = 1; seed <= 3; seed++) await subrangeProperty(gpu().bufferType(), seed, 40);
});

test('webgpu host buffer type: mapped staging memory, round-trips too', { skip }, async () => {
  await subrangeProperty(gpu().hostBufferType(), 4, 10);
});

test('webgpu buffers: memory counts what is allocated', { skip }, async () => {
  const before = gpu().memory();
  const t = newTensor(GGMLType.F32, [1000]);
  const [buf] = allocTensors([t], gpu().bufferType());
  tensorSet(t, new Float32Array(1000).fill(1.5));
  assert.equal(new Float32Array((await tensorGet(t, 4, 8)).buffer)[1], 1.5);
  assert.ok(before.free - gpu().memory().free >= 4000);
  buf!.free();
  assert.equal(gpu().memory().free, before.free);
});

test('webgpu: a software adapter is listed but never chosen by default', { skip }, () => {
  if (!gpu().props().caps.software) return; // a real GPU: chosen by default, as it should be
  assert.ok(!defaultDevices().includes(gpu()));
  assert.notEqual(initBackend().device, gpu());
  assert.equal(initBackend('webgpu0').device, gpu());
});

test('webgpu: `llama-ts devices --json` lists the device, its caps and buffer types', { skip }, () => {
  const out = execFileSync(process.execPath, [`${REPO_ROOT}bin/llama-ts.js`, 'devices', '--json'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const d = (JSON.parse(out) as { name: string }[]).find((x) => x.name === 'WebGPU0') as Record<string, unknown>;
  assert.ok(d, out);
  assert.equal(d.backend, 'WebGPU');
  assert.equal(d.type, 'gpu');
  assert.equal(d.description, gpu().description);
  assert.equal((d.caps as { software?: boolean }).software, gpu().props().caps.software);
  assert.deepEqual(
    (d.bufferTypes as { name: string; isHost: boolean }[]).map((b) => [b.name, b.isHost]),
    [
      ['WebGPU0', false],
      ['WebGPU0_Host', true],
    ],
  );
});

test('without WebGPU the backend logs one line and the host path goes on', async () => {
  // LLAMA_TS_WEBGPU=0 stands in for a machine without an adapter (the same branch: init gives null)
  const script = `
    import { enableWebGpu, listDevices, initBackend } from ${JSON.stringify(new URL('../src/backends/index.js', import.meta.url).href)};
    import { setLogCallback } from ${JSON.stringify(new URL('../src/log.js', import.meta.url).href)};
    const lines = [];
    setLogCallback((level, msg) => lines.push(level + ' ' + msg));
    await enableWebGpu();
    console.log(JSON.stringify({ devices: listDevices().map((d) => d.name), lines: lines.filter((l) => /WebGPU/.test(l)), dflt: initBackend().name }));`;
  const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
    env: { ...process.env, LLAMA_TS_WEBGPU: '0' },
    encoding: 'utf8',
  });
  assert.deepEqual(JSON.parse(out), {
    devices: ['CPU', 'Reference'],
    lines: ['info backend WebGPU not available on this system; skipped'],
    dflt: 'CPU',
  });
});

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-webgpu-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const PROMPT = [1, 17, 254, 33, 99, 400, 7, 12, 301, 45];

async function logits(m: Model, tokens: number[]): Promise<Float32Array[]> {
  const c = new Context(m, { nCtx: 64 });
  try {
    // the prompt in one batch, then one more token (a decode step)
    await c.decode({ tokens: tokens.slice(0, -1), logits: tokens.slice(0, -1).map(() => true) });
    const out = tokens.slice(0, -1).map((_, i) => c.getLogits(i));
    await c.decode({ tokens: tokens.slice(-1) });
    out.push(c.getLogits(0));
    return out;
  } finally {
    c.free();
  }
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  assert.equal(a.length, b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i] - b[i]));
  return d;
}

for (const type of ['F32', 'Q8_0'] as const) {
  test(`webgpu: a tiny llama (${type}) offloaded and split matches the reference and the CPU device`, {
    skip,
  }, async () => {
    setLogCallback(() => {});
    const path = join(dir, `llama-${type}.gguf`);
    generateModel(presetSpec('tiny-llama', type), path);
    const cpu = await Model.load(path, { devices: [cpuDevice] });
    const oracle = await Model.load(path, { devices: [new ReferenceReg('Exact').addDevice({ name: 'Exact' })] });
    const full = await Model.load(path, { devices: [gpu(), cpuDevice] });
    const split = await Model.load(path, { devices: [gpu(), cpuDevice], nGpuLayers: 1 });
    try {
      assert.equal(tensorBuffer(full.weights.get('blk.0.attn_q.weight'))?.bufferType.device, gpu());
      assert.equal(split.layerDevices.map((d) => d.name).join(), 'CPU,WebGPU0');
      // the GPU keeps activations in F32: against the exact (double-precision) reference
      // both types agree closely; the CPU device rounds them to Q8_0 for Q8_0 weights (as
      // ggml-cpu), so against it the Q8_0 model differs by that rounding
      const exact = await logits(oracle, PROMPT);
      const expected = await logits(cpu, PROMPT);
      const before = gpu().opCounts.get('MUL_MAT') ?? 0;
      const attn = gpu().opCounts.get('FLASH_ATTN_EXT') ?? 0;
      let worst = 0;
      for (const m of [full, split]) {
        const got = await logits(m, PROMPT);
        for (let i = 0; i < PROMPT.length; i++) {
          const dx = maxDiff(got[i], exact[i]);
          const dc = maxDiff(got[i], expected[i]);
          worst = Math.max(worst, dx);
          assert.ok(dx < (m === split && type !== 'F32' ? 0.1 : 2e-3), `token ${i}: max |Δ| ${dx} from the reference`);
          assert.ok(dc < (type === 'F32' ? 2e-3 : 0.1), `token ${i}: max |Δ| ${dc} from the CPU device`);
        }
        // the same tokens again: the same bits, and no pipeline compiled anew
        const compiled = gpu().ctx.compiled;
        assert.deepEqual(await logits(m, PROMPT), got);
        assert.equal(gpu().ctx.compiled, compiled, 'pipelines were rebuilt');
      }
      console.log(`${type}: max |Δ| from the reference ${worst}`);
      assert.ok((gpu().opCounts.get('MUL_MAT') ?? 0) > before, 'no matrix product ran on the GPU');
      assert.ok((gpu().opCounts.get('FLASH_ATTN_EXT') ?? 0) > attn, 'no attention ran on the GPU');
    } finally {
      for (const m of [cpu, oracle, full, split]) m.free();
      setLogCallback(null);
    }
  });
}

// ---- choosing the device: loadModel's devices / n_gpu_layers, getBackendDevicesInfo, the CLI ----

const STORIES = sharedPath('models/stories260K.gguf');
const noStories = STORIES ? false : missingShared('models/stories260K.gguf');

test('webgpu: getBackendDevicesInfo lists it; loadModel({ devices: ["webgpu"], n_gpu_layers: 1 }) runs on it and the CPU with the CPU\'s greedy tokens', {
  skip: skip || noStories,
}, async () => {
  const info = await getBackendDevicesInfo();
  const g = info.find((d) => d.deviceName === 'WebGPU0');
  assert.deepEqual(g && { backend: g.backend, type: g.type }, { backend: 'WebGPU', type: 'gpu' });
  assert.ok(g!.maxMemorySize >= 2 ** 20);
  assert.ok(info.some((d) => d.deviceName === 'CPU' && d.type === 'cpu'));
  const tokens = async (o: Partial<LlamaModelOptions>) => {
    const ctx = await loadModel({ model: STORIES!, n_ctx: 64, ...o });
    try {
      const r = await ctx.completion({ prompt: 'Once upon a time', n_predict: 12, temperature: 0 });
      return { sys: ctx.getSystemInfo(), text: r.text };
    } finally {
      await ctx.release();
    }
  };
  const cpu = await tokens({ devices: ['CPU'] });
  const split = await tokens({ devices: ['webgpu'], n_gpu_layers: 1 });
  assert.match(split.sys, /WebGPU0/);
  assert.match(split.sys, /CPU/, 'the host device is appended to a GPU');
  assert.equal(split.text, cpu.text);
  await assert.rejects(loadModel({ model: STORIES!, devices: ['nope'] }), /no device 'nope' \(available: .*WebGPU0/);
});

test('webgpu: `llama-ts run --device webgpu -ngl 1` and `bench -ngl 1` run the last layer on it', {
  skip: skip || noStories,
}, () => {
  const cli = (...args: string[]) =>
    execFileSync(process.execPath, [`${REPO_ROOT}bin/llama-ts.js`, ...args], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
  const run = (...more: string[]) =>
    (
      JSON.parse(cli('run', '-m', STORIES!, '-p', 'Once upon a time', '-n', '8', '--temp', '0', '--json', ...more)) as {
        generated_tokens: number[];
      }
    ).generated_tokens;
  assert.deepEqual(run('--device', 'webgpu', '-ngl', '1'), run('--device', 'CPU'));
  const bench = JSON.parse(
    cli('bench', '-m', STORIES!, '-p', '8', '-n', '2', '-r', '1', '-o', 'json', '--device', 'webgpu', '-ngl', '1'),
  ) as { backend: string; n_gpu_layers: number }[];
  assert.deepEqual(
    bench.map((b) => [b.backend, b.n_gpu_layers]),
    [
      ['WebGPU0,CPU', 1],
      ['WebGPU0,CPU', 1],
    ],
  );
});

const QWEN3 = sharedPath('fixtures/rand-qwen3-Q8_0.gguf');

/** Six greedy tokens after a prompt, one decode each, with a q8_0 KV cache and flash attention. */
async function greedyQ8Cache(m: Model): Promise<number[]> {
  const c = new Context(m, { nCtx: 64, typeK: 'q8_0', typeV: 'q8_0', flashAttn: true });
  try {
    const out: number[] = [];
    let next = [1, 403, 407, 261, 378];
    for (let i = 0; i < 6; i++) {
      await c.decode({ tokens: next });
      const l = c.getLogits(-1);
      next = [l.indexOf(Math.max(...l))];
      out.push(next[0]);
    }
    return out;
  } finally {
    c.free();
  }
}

test("webgpu: a q8_0 KV cache of layers on it stays in its memory (quantized there by SET_ROWS, read there by FLASH_ATTN_EXT) and gives the CPU's tokens", {
  skip: skip || (QWEN3 ? false : missingShared('fixtures/rand-qwen3-Q8_0.gguf')),
}, async () => {
  const lines: string[] = [];
  setLogCallback((_level, msg) => lines.push(msg));
  const m = await Model.load(QWEN3!, { devices: [gpu(), cpuDevice] });
  const cpu = await Model.load(QWEN3!, { devices: [cpuDevice] });
  try {
    const OPS = ['MUL_MAT', 'SET_ROWS', 'FLASH_ATTN_EXT'];
    const before = OPS.map((op) => gpu().opCounts.get(op) ?? 0);
    const got = await greedyQ8Cache(m);
    assert.ok(!lines.some((l) => /cannot write a q8_0 KV cache/.test(l)), lines.join('\n'));
    for (const [i, op] of OPS.entries()) {
      assert.ok((gpu().opCounts.get(op) ?? 0) > before[i], `no ${op} ran on the GPU`);
    }
    assert.deepEqual(got, await greedyQ8Cache(cpu));
  } finally {
    m.free();
    cpu.free();
    setLogCallback(null);
  }
});

test('webgpu: decode steps reuse every pipeline and bind group, one command encoder a step', { skip }, async () => {
  setLogCallback(() => {});
  const path = join(dir, 'llama-steps.gguf');
  generateModel(presetSpec('tiny-llama', 'F32'), path);
  const m = await Model.load(path, { devices: [gpu(), cpuDevice] });
  const c = new Context(m, { nCtx: 64 });
  // count what the device creates from here on (its own methods, wrapped on this instance)
  const device = gpu().ctx.device as unknown as Record<string, (...a: unknown[]) => unknown>;
  const counts = { pipelines: 0, bindGroups: 0, encoders: 0, passes: 0 };
  const wrap = (name: string, count: keyof typeof counts, after?: (r: unknown) => void) => {
    const f = device[name].bind(device);
    device[name] = (...a: unknown[]) => {
      counts[count]++;
      const r = f(...a);
      after?.(r);
      return r;
    };
    return () => {
      delete device[name];
    };
  };
  const restore = [
    wrap('createComputePipeline', 'pipelines'),
    wrap('createBindGroup', 'bindGroups'),
    wrap('createCommandEncoder', 'encoders', (r) => {
      const enc = r as GPUCommandEncoder;
      const begin = enc.beginComputePass.bind(enc);
      enc.beginComputePass = (d?: GPUComputePassDescriptor) => {
        counts.passes++;
        return begin(d);
      };
    }),
  ];
  try {
    await c.decode({ tokens: PROMPT.slice(0, 6) });
    await c.decode({ tokens: [PROMPT[6]] }); // the first one-token graph may compile its shapes' pipelines
    const steps: (typeof counts)[] = [];
    for (const t of PROMPT.slice(7)) {
      for (const k of Object.keys(counts) as (keyof typeof counts)[]) counts[k] = 0;
      await c.decode({ tokens: [t] });
      steps.push({ ...counts });
    }
    // fully offloaded: one graph split a step, its dispatches in one compute pass of one
    // encoder (plus the encoder that copies the logits out)
    for (const s of steps) assert.deepEqual(s, { pipelines: 0, bindGroups: 0, encoders: s.encoders, passes: 1 });
    console.log(`per decode step: ${JSON.stringify(steps)}`);
    assert.ok(
      steps.every((s) => s.encoders <= 2),
      JSON.stringify(steps),
    );
  } finally {
    for (const r of restore) r();
    c.free();
    m.free();
    setLogCallback(null);
  }
});

test('webgpu: a kernel the WGSL compiler rejects is an error naming its node, not a dispatch that does nothing', {
  skip,
}, async () => {
  const ctx = (dev as Exclude<typeof dev, string>).ctx;
  const bad = '@compute @workgroup_size(1) fn main() { let x: u32 = 1.5; }';
  ctx.pipeline('test: a rejected kernel', 'w', () => bad, 'TEST #0');
  await assert.rejects(ctx.compileErrors(), /did not compile: TEST #0: /);
  await ctx.compileErrors(); // reported once; the next graph compiles it afresh
});
