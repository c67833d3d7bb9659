// Token embeddings left in the model file (LoadOptions.embeddingsOnDisk): the rows a
// batch needs are read on demand, giving the same bits as the table in memory, on the CPU
// device and on the reference kernels; the CPU device's size threshold picks the default;
// a tied table stays in memory; Gemma 4's per-layer table (read by the same token ids)
// goes to disk with or without token_embd; a file changed in place after loading fails
// clearly, a deleted one keeps working (the file stays open).

import assert from 'node:assert/strict';
import { closeSync, copyFileSync, mkdtempSync, openSync, rmSync, unlinkSync, utimesSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { CpuReg, cpuDevice } from '../src/backends/cpu/index.js';
import type { Device } from '../src/backends/impl.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, type LoadOptions, Model } from '../src/model/index.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-disk-embd-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const paths: Record<string, string> = {};

before(() => {
  setLogCallback(() => {});
  for (const [name, preset, type] of [
    ['llamaQ8', 'tiny-llama', 'Q8_0'],
    ['llamaQ4', 'tiny-llama', 'Q4_0'],
    ['llamaF32', 'tiny-llama', 'F32'],
    ['qwen2', 'tiny-qwen2', 'Q8_0'],
    ['gemma4', 'tiny-gemma4', 'Q8_0'],
  ] as const) {
    paths[name] = join(dir, `${name}.gguf`);
    generateModel(presetSpec(preset, type), paths[name]);
  }
  const untied = presetSpec('tiny-gemma4', 'Q8_0');
  untied.shape = { ...untied.shape, tiedEmbeddings: false };
  paths.gemma4Untied = join(dir, 'gemma4-untied.gguf');
  generateModel(untied, paths.gemma4Untied);
});
after(() => setLogCallback(null));

// repeated ids in one batch (each row is read once), and ids far apart
const PROMPT = [1, 17, 254, 17, 99, 400, 7, 1, 301, 17];

/** Logits of every token in one batch, then of each token decoded alone, and the 'embd' intermediate. */
async function run(m: Model): Promise<{ batch: Float32Array[]; single: Float32Array[]; embd: Float32Array }> {
  const c = new Context(m, { nCtx: 64, nThreads: 2, keepIntermediates: true });
  try {
    await c.decode({ tokens: PROMPT, logits: PROMPT.map(() => true) });
    const batch = PROMPT.map((_, i) => c.getLogits(i));
    const embd = c.intermediates.find((t) => t.name === 'embd')!.values;
    c.clearMemory();
    const single: Float32Array[] = [];
    for (const t of PROMPT) {
      await c.decode({ tokens: [t] });
      single.push(c.getLogits(-1));
    }
    return { batch, single, embd };
  } finally {
    c.free();
  }
}

async function load(path: string, opts: LoadOptions): Promise<Model> {
  return Model.load(path, opts);
}

for (const [name, devices] of [
  ['llamaQ8', [cpuDevice]],
  ['llamaQ4', [cpuDevice]],
  ['llamaF32', [cpuDevice]],
  ['llamaQ8', [referenceDevice]],
] as [string, Device[]][]) {
  test(`${name} on ${devices[0].name}: embeddings read from the file give the same bits as in memory`, async () => {
    const mem = await load(paths[name], { devices, embeddingsOnDisk: false });
    const disk = await load(paths[name], { devices, embeddingsOnDisk: true });
    try {
      assert.notEqual(mem.weights.get('token_embd.weight').buffer, null);
      assert.equal(disk.weights.get('token_embd.weight').buffer, null);
      assert.ok(disk.weights.rowsOnDisk(disk.weights.get('token_embd.weight')));
      const a = await run(mem);
      const b = await run(disk);
      assert.deepEqual(b.embd, a.embd);
      for (let i = 0; i < PROMPT.length; i++) {
        assert.deepEqual(b.batch[i], a.batch[i], `token ${i}: batch`);
        assert.deepEqual(b.single[i], a.single[i], `token ${i}: alone`);
      }
    } finally {
      mem.free();
      disk.free();
    }
  });
}

test("the CPU device's threshold picks the default; a tied table stays in memory", async () => {
  const small = await load(paths.llamaQ8, { devices: [cpuDevice] });
  const reg = new CpuReg('DiskEmbd');
  const eager = reg.addDevice({ name: 'Eager', embdOnDiskMinBytes: 0, threads: 2 });
  const onDisk = await load(paths.llamaQ8, { devices: [eager] });
  const tied = await load(paths.qwen2, { devices: [cpuDevice], embeddingsOnDisk: true });
  try {
    assert.ok(cpuDevice.embdOnDiskMinBytes > small.weights.get('token_embd.weight').nbytes);
    assert.notEqual(small.weights.get('token_embd.weight').buffer, null);
    assert.equal(onDisk.weights.get('token_embd.weight').buffer, null);
    assert.equal(tied.weights.opt('output.weight'), undefined);
    assert.notEqual(tied.weights.get('token_embd.weight').buffer, null);
    const a = await run(small);
    const b = await run(onDisk);
    for (let i = 0; i < PROMPT.length; i++) assert.deepEqual(b.batch[i], a.batch[i]);
    assert.ok((await run(tied)).batch.every((l) => l.every(Number.isFinite)));
  } finally {
    small.free();
    onDisk.free();
    tied.free();
    await eager.close();
  }
});

test('a model file changed after loading fails clearly; a deleted one keeps working', async () => {
  const changed = join(dir, 'changed.gguf');
  const deleted = join(dir, 'deleted.gguf');
  copyFileSync(paths.llamaQ8, changed);
  copyFileSync(paths.llamaQ8, deleted);
  const ref = await load(paths.llamaQ8, { devices: [cpuDevice], embeddingsOnDisk: true });
  const m1 = await load(changed, { devices: [cpuDevice], embeddingsOnDisk: true });
  const m2 = await load(deleted, { devices: [cpuDevice], embeddingsOnDisk: true });
  try {
    const expected = await run(ref);
    // overwrite one byte of the table in place and move the modification time
    const f = openGGUF(changed);
    const at = f.tensor('token_embd.weight')!.fileOffset;
    f.close();
    const fd = openSync(changed, 'r+');
    writeSync(fd, new Uint8Array([0x5a]), 0, 1, at);
    closeSync(fd);
    utimesSync(changed, new Date(), new Date(Date.now() + 10_000));
    await assert.rejects(run(m1), /changed after loading/);

    unlinkSync(deleted);
    const got = await run(m2);
    for (let i = 0; i < PROMPT.length; i++) assert.deepEqual(got.batch[i], expected.batch[i]);
  } finally {
    ref.free();
    m1.free();
    m2.free();
  }
});

for (const name of ['gemma4', 'gemma4Untied']) {
  test(`${name}: per_layer_token_embd${name === 'gemma4' ? '' : ' and token_embd'} read from the file give the same bits`, async () => {
    const mem = await load(paths[name], { devices: [cpuDevice], embeddingsOnDisk: false });
    const disk = await load(paths[name], { devices: [cpuDevice], embeddingsOnDisk: true });
    try {
      const pl = (m: Model) => m.weights.get('per_layer_token_embd.weight');
      assert.notEqual(pl(mem).buffer, null);
      assert.equal(pl(disk).buffer, null);
      assert.ok(disk.weights.rowsOnDisk(pl(disk)));
      // token_embd goes to disk only when the output is untied
      assert.equal(disk.weights.get('token_embd.weight').buffer === null, name === 'gemma4Untied');
      const a = await run(mem);
      const b = await run(disk);
      for (let i = 0; i < PROMPT.length; i++) {
        assert.deepEqual(b.batch[i], a.batch[i], `token ${i}: batch`);
        assert.deepEqual(b.single[i], a.single[i], `token ${i}: alone`);
      }
    } finally {
      mem.free();
      disk.free();
    }
  });
}
