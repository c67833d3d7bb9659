// The model layer without reference data: generated tiny llama / qwen2 / qwen3 / bert
// models; one batch versus token by token, ubatch splits, several sequences, the KV-cache
// operations (remove, copy, shift), cache types, embeddings and pooling, the
// n_gpu_layers-style split over two devices, loading errors, progress and abort.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { tensorBuffer } from '../src/backends/index.js';
import { ReferenceReg, referenceDevice } from '../src/backends/reference/index.js';
import { generateModel, type ModelSpec, presetSpec } from '../src/generator/index.js';
import { GGMLType } from '../src/ggml/types.js';
import { GGUFError, GGUFValueType, GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import {
  type Batch,
  Context,
  ContextError,
  type ContextParams,
  l2Normalize,
  Model,
  ModelError,
} from '../src/model/index.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-model-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const paths: Record<string, string> = {};

function gen(name: string, spec: ModelSpec): void {
  paths[name] = join(dir, `${name}.gguf`);
  generateModel(spec, paths[name]);
}

before(() => {
  setLogCallback(() => {});
  gen('llama', presetSpec('tiny-llama', 'F32'));
  gen('llamaQ8', presetSpec('tiny-llama', 'Q8_0'));
  gen('qwen2', presetSpec('tiny-qwen2', 'F16'));
  gen('qwen3', presetSpec('tiny-qwen3', 'Q8_0'));
  gen('bert', presetSpec('tiny-bert', 'F16'));
  const wide = presetSpec('tiny-llama', 'F32');
  wide.shape = { ...wide.shape, nEmbd: 256, nFf: 256 };
  gen('wide', wide);
});
after(() => setLogCallback(null));

// Exact comparisons run on the reference kernels (row by row, the same arithmetic
// whatever the batch); the default (fastest) device is checked against them separately.
const models = new Map<string, Model>();
async function model(name: string): Promise<Model> {
  if (!models.has(name)) models.set(name, await Model.load(paths[name], { devices: [referenceDevice] }));
  return models.get(name)!;
}
after(() => {
  for (const m of models.values()) m.free();
});

async function withContext<T>(m: Model, p: ContextParams, fn: (c: Context) => Promise<T>): Promise<T> {
  const c = new Context(m, p);
  try {
    return await fn(c);
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

const PROMPT = [1, 17, 254, 33, 99, 400, 7, 12, 301, 45];

/** Logits after each token of `tokens`, decoded in one batch. */
async function allLogits(m: Model, tokens: number[], p: ContextParams = {}, batch: Partial<Batch> = {}) {
  return withContext(m, { nCtx: 64, ...p }, async (c) => {
    await c.decode({ tokens, logits: tokens.map(() => true), ...batch });
    return tokens.map((_, i) => c.getLogits(i));
  });
}

for (const name of ['llama', 'llamaQ8', 'qwen2', 'qwen3']) {
  test(`${name}: one batch, token by token and small ubatches give the same logits`, async () => {
    const m = await model(name);
    const batch = await allLogits(m, PROMPT);
    const split = await allLogits(m, PROMPT, { nUbatch: 3 });
    const single = await withContext(m, { nCtx: 64 }, async (c) => {
      const out: Float32Array[] = [];
      for (const t of PROMPT) {
        await c.decode({ tokens: [t] });
        out.push(c.getLogits(-1));
      }
      return out;
    });
    for (let i = 0; i < PROMPT.length; i++) {
      assert.equal(batch[i].length, m.hp.nVocab);
      assert.ok(batch[i].every(Number.isFinite));
      assert.ok(maxDiff(batch[i], single[i]) < 1e-5, `token ${i}: batch vs single`);
      assert.ok(maxDiff(batch[i], split[i]) < 1e-5, `token ${i}: ubatch split`);
    }
  });
}

test('the default device agrees with the reference kernels', async () => {
  for (const name of ['llamaQ8', 'qwen2', 'qwen3']) {
    const ref = await allLogits(await model(name), PROMPT);
    const m = await Model.load(paths[name]);
    try {
      const got = await allLogits(m, PROMPT);
      const single = await withContext(m, { nCtx: 64 }, async (c) => {
        for (const t of PROMPT) await c.decode({ tokens: [t] });
        return c.getLogits(-1);
      });
      for (let i = 0; i < PROMPT.length; i++) assert.ok(maxDiff(got[i], ref[i]) < 0.1, `${name} token ${i}`);
      assert.ok(maxDiff(single, ref[PROMPT.length - 1]) < 0.1, `${name}: token by token`);
    } finally {
      m.free();
    }
  }
});

test('the default device: a token gets the same bits in one batch, in another split and alone', async () => {
  // 40 tokens: two flash-attention key blocks, several query tiles
  const tokens = Array.from({ length: 40 }, (_, i) => (i * 37 + 11) % 500);
  for (const name of ['llamaQ8', 'qwen2']) {
    const m = await Model.load(paths[name]);
    try {
      const batch = await allLogits(m, tokens);
      const split = await withContext(m, { nCtx: 64 }, async (c) => {
        await c.decode({ tokens: tokens.slice(0, 29), logits: tokens.slice(0, 29).map(() => true) });
        const out = tokens.slice(0, 29).map((_, i) => c.getLogits(i));
        for (const t of tokens.slice(29)) {
          await c.decode({ tokens: [t] });
          out.push(c.getLogits(-1));
        }
        return out;
      });
      for (let i = 0; i < tokens.length; i++) assert.deepEqual(split[i], batch[i], `${name} token ${i}`);
    } finally {
      m.free();
    }
  }
});

test('two sequences in one batch equal two separate decodes', async () => {
  const m = await model('llama');
  const a = PROMPT.slice(0, 6);
  const b = [1, 200, 201, 202, 203];
  const tokens = [...a, ...b];
  const seqIds = [...a.map(() => 0), ...b.map(() => 1)];
  const together = await allLogits(m, tokens, { nSeqMax: 2 }, { seqIds });
  const alone = [...(await allLogits(m, a)), ...(await allLogits(m, b))];
  for (let i = 0; i < tokens.length; i++) assert.ok(maxDiff(together[i], alone[i]) < 1e-5, `token ${i}`);
});

test('seqRm: reusing a cached prefix gives the same logits as a fresh decode', async () => {
  const m = await model('llama');
  const fresh = await allLogits(m, [...PROMPT.slice(0, 5), 60, 61, 62]);
  await withContext(m, { nCtx: 64 }, async (c) => {
    await c.decode({ tokens: PROMPT });
    c.seqRm(0, 5, -1);
    assert.equal(c.seqPosMax(0), 4);
    await c.decode({ tokens: [60, 61, 62], logits: [1, 1, 1] });
    for (let i = 0; i < 3; i++) assert.ok(maxDiff(c.getLogits(i), fresh[5 + i]) < 1e-5);
  });
});

test('seqCp and seqKeep: a copied prefix serves a second sequence', async () => {
  const m = await model('llama');
  const fresh = await allLogits(m, [...PROMPT.slice(0, 4), 90, 91]);
  await withContext(m, { nCtx: 64, nSeqMax: 2 }, async (c) => {
    await c.decode({ tokens: PROMPT.slice(0, 4) });
    c.seqCp(0, 1);
    await c.decode({ tokens: [90, 91], seqIds: [1, 1], logits: [1, 1] });
    assert.ok(maxDiff(c.getLogits(1), fresh[5]) < 1e-5);
    c.seqKeep(1);
    assert.equal(c.seqPosMax(0), -1);
    assert.equal(c.seqPosMax(1), 5);
  });
});

for (const name of ['llama', 'qwen2', 'qwen3']) {
  test(`${name}: seqAdd shifts positions and re-rotates the cached keys`, async () => {
    const m = await model(name);
    // attention depends on relative positions only: P at 0..9 then 77 at 10 equals
    // P shifted to 7..16 then 77 at 17 (up to rounding), if the keys were re-rotated; F32
    // caches without flash attention (which would read them cast to F16, as llama.cpp does)
    const f32: ContextParams = { typeK: 'f32', typeV: 'f32', flashAttn: false };
    const fresh = await allLogits(m, [...PROMPT, 77], f32);
    await withContext(m, { nCtx: 64, ...f32 }, async (c) => {
      await c.decode({ tokens: PROMPT });
      c.seqAdd(0, 0, -1, 7);
      assert.equal(c.seqPosMin(0), 7);
      assert.equal(c.seqPosMax(0), 16);
      await c.decode({ tokens: [77] });
      assert.ok(maxDiff(c.getLogits(-1), fresh[PROMPT.length]) < 1e-3);
    });
  });
}

test('context shift as llama-ts run does it: drop a range, slide the rest down', async () => {
  const m = await model('llama');
  await withContext(m, { nCtx: 12 }, async (c) => {
    await c.decode({ tokens: PROMPT });
    c.seqRm(0, 1, 5);
    c.seqAdd(0, 5, 10, -4);
    assert.equal(c.seqPosMax(0), 5);
    assert.equal(c.memory?.caches[0].used, 6);
    await c.decode({ tokens: [5, 6, 7, 8, 9, 10] });
    assert.equal(c.seqPosMax(0), 11);
    assert.ok(c.getLogits(-1).every(Number.isFinite));
  });
});

test('KV cache types: f32 and q8_0 stay close to f16', async () => {
  const m = await model('wide');
  const f16 = await allLogits(m, PROMPT);
  const f32 = await allLogits(m, PROMPT, { typeK: 'f32', typeV: 'f32' });
  const q8 = await allLogits(m, PROMPT, { typeK: 'q8_0', typeV: 'q8_0' });
  const last = PROMPT.length - 1;
  assert.ok(maxDiff(f16[last], f32[last]) < 0.05);
  assert.ok(maxDiff(f16[last], q8[last]) < 0.2);
  // a Q8_0 row holds 32 values: the tiny model's 16-wide heads cannot use it
  assert.throws(() => new Context(models.get('llama')!, { typeK: 'q8_0' }), /the head size is 16/);
});

test('flashAttn: false (llama.cpp unfused attention) stays close to flash attention, token by token too', async () => {
  const m = await model('wide');
  const fa = await allLogits(m, PROMPT);
  const unfused = await allLogits(m, PROMPT, { flashAttn: false });
  const single = await withContext(m, { nCtx: 64, flashAttn: false }, async (c) => {
    const out: Float32Array[] = [];
    for (const t of PROMPT) {
      await c.decode({ tokens: [t] });
      out.push(c.getLogits(-1));
    }
    return out;
  });
  for (let i = 0; i < PROMPT.length; i++) {
    // the probabilities rounded to f16 against V: close, and not the same computation
    assert.ok(maxDiff(fa[i], unfused[i]) < 0.02, `token ${i}: ${maxDiff(fa[i], unfused[i])}`);
    assert.ok(maxDiff(unfused[i], single[i]) < 1e-4, `token ${i} alone: ${maxDiff(unfused[i], single[i])}`);
  }
  assert.ok(fa.some((x, i) => maxDiff(x, unfused[i]) > 0));
  assert.throws(
    () => new Context(m, { typeK: 'q8_0', typeV: 'q8_0', flashAttn: false }),
    /a q8_0 V cache needs flash attention/,
  );
});

test('a full KV cache and bad batches are ContextErrors', async () => {
  const m = await model('llama');
  await withContext(m, { nCtx: 8 }, async (c) => {
    await assert.rejects(c.decode({ tokens: PROMPT }), ContextError);
    await c.decode({ tokens: PROMPT.slice(0, 6) });
    await assert.rejects(c.decode({ tokens: [5, 6, 7] }), /KV cache is full/);
    await assert.rejects(c.decode({ tokens: [m.hp.nVocab] }), /outside the vocabulary/);
    await assert.rejects(c.decode({ tokens: [1], seqIds: [1] }), /sequence id/);
    await assert.rejects(c.decode({ tokens: [] }), /empty/);
    assert.throws(() => c.getLogits(0), /did not ask/);
  });
});

test('the n_gpu_layers split places layers on two devices and gives the same logits', async () => {
  const reg = new ReferenceReg('Split');
  const offload = reg.addDevice({ name: 'Offload', numerics: 'ggml-cpu', ownBuffersOnly: true });
  const host = reg.addDevice({ name: 'Host', numerics: 'ggml-cpu' });
  const one = await model('llamaQ8');
  const expected = await allLogits(one, PROMPT);
  const split = await Model.load(paths.llamaQ8, { devices: [offload, host], nGpuLayers: 1 });
  try {
    assert.deepEqual(
      split.layerDevices.map((d) => d.name),
      ['Host', 'Offload'],
    );
    assert.equal(tensorBuffer(split.weights.get('blk.1.attn_q.weight'))?.bufferType.device, offload);
    assert.equal(tensorBuffer(split.weights.get('token_embd.weight'))?.bufferType.device, host);
    const got = await allLogits(split, PROMPT);
    for (let i = 0; i < PROMPT.length; i++) assert.ok(maxDiff(got[i], expected[i]) < 1e-5);
  } finally {
    split.free();
  }
});

test('ops the model devices lack run on the reference kernels', async () => {
  const reg = new ReferenceReg('Partial');
  const partial = reg.addDevice({
    name: 'NoAttention',
    numerics: 'ggml-cpu',
    opFilter: (t) => t.op !== 'FLASH_ATTN_EXT' && t.op !== 'ROPE',
  });
  const expected = await allLogits(await model('llamaQ8'), PROMPT);
  const m = await Model.load(paths.llamaQ8, { devices: [partial] });
  try {
    const got = await allLogits(m, PROMPT);
    for (let i = 0; i < PROMPT.length; i++) assert.ok(maxDiff(got[i], expected[i]) < 1e-5);
  } finally {
    m.free();
  }
});

test('bert: pooled embeddings (mean, cls, last) agree with the per-token ones', async () => {
  const m = await model('bert');
  assert.equal(m.hp.causal, false);
  assert.equal(m.hp.pooling, 'mean');
  const tokens = m.vocab.encode('hello world again', { addSpecial: true });
  const perToken = await withContext(m, { embeddings: true, pooling: 'none' }, async (c) => {
    await c.decode({ tokens, logits: tokens.map(() => true) });
    return tokens.map((_, i) => c.getEmbeddings(i));
  });
  for (const pooling of ['mean', 'cls', 'last'] as const) {
    await withContext(m, { embeddings: true, pooling }, async (c) => {
      await c.decode({ tokens });
      const got = c.getEmbeddingsSeq(0);
      const want =
        pooling === 'cls'
          ? perToken[0]
          : pooling === 'last'
            ? perToken[tokens.length - 1]
            : perToken[0].map((_, d) => perToken.reduce((s, r) => s + r[d], 0) / perToken.length);
      assert.ok(maxDiff(got, want) < 1e-5, pooling);
    });
  }
  const unit = l2Normalize(perToken[0]);
  assert.ok(Math.abs(unit.reduce((s, x) => s + x * x, 0) - 1) < 1e-6);
  assert.throws(() => new Context(m, { embeddings: false }), /embedding model/);
});

test('a decoder gives embeddings (last-token pooling) too', async () => {
  const m = await model('qwen2');
  await withContext(m, { embeddings: true, pooling: 'last' }, async (c) => {
    await c.decode({ tokens: PROMPT });
    assert.equal(c.getEmbeddingsSeq(0).length, m.hp.nEmbd);
    assert.throws(() => c.getLogits(-1), /embeddings, not logits/);
  });
});

// ---- loading ----

function rewrite(
  src: string,
  dst: string,
  edit: {
    arch?: string;
    drop?: string;
    dims?: [string, number[]];
    type?: [string, number];
    /** Metadata keys to set (an existing one is replaced in place). */
    meta?: Record<string, [GGUFValueType, number]>;
  },
): string {
  const f = openGGUF(src);
  try {
    const w = new GGUFWriter({ alignment: f.alignment });
    for (const [key, kv] of f.metadata) {
      let k = key;
      if (edit.arch && key.startsWith(`${f.architecture}.`)) k = `${edit.arch}.${key.slice(f.architecture.length + 1)}`;
      if (key === 'general.architecture' && edit.arch) w.set(key, GGUFValueType.STRING, edit.arch);
      else if (edit.meta?.[k]) w.set(k, edit.meta[k][0], edit.meta[k][1]);
      else w.set(k, kv.type, kv.value);
    }
    for (const [k, [type, value]] of Object.entries(edit.meta ?? {})) if (!f.metadata.has(k)) w.set(k, type, value);
    for (const t of f.tensors) {
      if (t.name === edit.drop) continue;
      if (edit.dims?.[0] === t.name) w.addTensor(t.name, t.type, edit.dims[1]);
      else if (edit.type?.[0] === t.name) w.addTensor(t.name, edit.type[1], [...t.dims]);
      else w.addTensor(t.name, t.type, [...t.dims], f.readTensorData(t));
    }
    w.write(dst);
    return dst;
  } finally {
    f.close();
  }
}

test('hyper-parameters that cannot work are refused at load, naming the key and the value', async () => {
  const F32 = GGUFValueType.FLOAT32;
  const U32 = GGUFValueType.UINT32;
  const I32 = GGUFValueType.INT32;
  const cases: [string, string, Record<string, [GGUFValueType, number]>, RegExp][] = [
    [
      'llama',
      'rot-big',
      { 'llama.rope.dimension_count': [U32, 18] },
      /llama\.rope\.dimension_count = 18 is larger than the head size 16/,
    ],
    ['llama', 'rot-odd', { 'llama.rope.dimension_count': [U32, 15] }, /llama\.rope\.dimension_count = 15 must be even/],
    ['llama', 'rot-part', { 'llama.rope.dimension_count': [U32, 8] }, /= 8 must equal the head size 16 for llama/],
    [
      'qwen2',
      'rot-zero',
      { 'qwen2.rope.dimension_count': [U32, 0] },
      /qwen2\.rope\.dimension_count = 0 must be even and > 0/,
    ],
    [
      'llama',
      'eps-nan',
      { 'llama.attention.layer_norm_rms_epsilon': [F32, Number.NaN] },
      /layer_norm_rms_epsilon = NaN must be a finite number ≥ 0/,
    ],
    [
      'llama',
      'eps-neg',
      { 'llama.attention.layer_norm_rms_epsilon': [F32, -1e-5] },
      /layer_norm_rms_epsilon = -0\.0000099\d* must be a finite number ≥ 0/,
    ],
    [
      'bert',
      'ln-eps-nan',
      { 'bert.attention.layer_norm_epsilon': [F32, Number.NaN] },
      /bert\.attention\.layer_norm_epsilon = NaN/,
    ],
    [
      'llama',
      'base-nan',
      { 'llama.rope.freq_base': [F32, Number.NaN] },
      /llama\.rope\.freq_base = NaN must be a finite number > 0/,
    ],
    ['llama', 'base-zero', { 'llama.rope.freq_base': [F32, 0] }, /llama\.rope\.freq_base = 0 must be/],
    ['llama', 'base-inf', { 'llama.rope.freq_base': [F32, Number.POSITIVE_INFINITY] }, /freq_base = Infinity/],
    ['llama', 'scale-nan', { 'llama.rope.scaling.factor': [F32, Number.NaN] }, /llama\.rope\.scaling\.factor = NaN/],
    ['llama', 'layers-0', { 'llama.block_count': [U32, 0] }, /llama\.block_count = 0 is not an integer ≥ 1/],
    [
      'llama',
      'layers-1',
      { 'llama.block_count': [U32, 1] },
      /llama\.block_count = 1, but the file has tensor 'blk\.1\./,
    ],
    ['llama', 'layers-many', { 'llama.block_count': [U32, 100_000] }, /block_count = 100000 is more than 512 layers/],
    [
      'llama',
      'heads-neg',
      { 'llama.attention.head_count': [I32, -4] },
      /llama\.attention\.head_count = -4 is not an integer ≥ 1/,
    ],
    [
      'llama',
      'embd-frac',
      { 'llama.embedding_length': [F32, 64.5] },
      /llama\.embedding_length = 64\.5 is not an integer/,
    ],
    ['llama', 'ctx-neg', { 'llama.context_length': [I32, -1] }, /llama\.context_length = -1 is not a count/],
    [
      'llama',
      'moe-used',
      { 'llama.expert_count': [U32, 4] },
      /llama\.expert_used_count = 0 must be 1\.\.expert_count \(4\)/,
    ],
    [
      'llama',
      'moe-many',
      { 'llama.expert_count': [U32, 4], 'llama.expert_used_count': [U32, 5] },
      /llama\.expert_used_count = 5 must be 1\.\.expert_count \(4\)/,
    ],
    [
      'llama',
      'moe-groups',
      { 'llama.expert_count': [U32, 4], 'llama.expert_used_count': [U32, 2], 'llama.expert_group_count': [U32, 2] },
      // (llama.cpp asserts 0 < expert_group_used_count < expert_group_count)
      /llama\.expert_group_count = 2 \/ expert_group_used_count = 0: groups must divide the 4 experts, and 0 < used < groups/,
    ],
    // (llama.cpp's qwen2 graph asserts n_rot = head size and aborts; partial rotation where
    // llama.cpp allows it is checked against its answers on phi3, model-swa-refs.test.ts)
    [
      'qwen2',
      'qwen2-partial',
      { 'qwen2.rope.dimension_count': [U32, 8] },
      /qwen2\.rope\.dimension_count = 8 must equal the head size 16 for qwen2/,
    ],
    [
      'llama',
      'moe-tensors',
      { 'llama.expert_count': [U32, 4], 'llama.expert_used_count': [U32, 2] },
      /missing tensor 'blk\.0\.ffn_gate_inp\.weight'/,
    ],
  ];
  for (const [base, name, meta, message] of cases) {
    const p = rewrite(paths[base]!, join(dir, `hp-${name}.gguf`), { meta });
    await assert.rejects(
      Model.load(p, { devices: [referenceDevice] }),
      (e: unknown) => e instanceof ModelError && message.test(e.message) && e.message.startsWith(p),
      name,
    );
  }
});

test('loading errors name the file, the architecture or the tensor', async () => {
  await assert.rejects(Model.load(join(dir, 'absent.gguf')), (e: unknown) => {
    assert.ok(e instanceof GGUFError);
    assert.match((e as Error).message, /absent\.gguf.*cannot open/);
    return true;
  });
  const gpt2 = rewrite(paths.llama, join(dir, 'gpt2.gguf'), { arch: 'gpt2' });
  await assert.rejects(
    Model.load(gpt2),
    (e: unknown) =>
      e instanceof ModelError &&
      /architecture 'gpt2' is not supported; supported: llama, qwen2, qwen3, bert, gemma2, gemma3, gemma4, gemma-embedding, phi3, smollm3, qwen35, qwen35moe, lfm2, lfm2moe, granitehybrid, nemotron_h, nemotron_h_moe, qwen2moe, qwen3moe, deepseek2, gpt-oss, qwen2vl/.test(
        (e as Error).message,
      ),
  );
  const missing = rewrite(paths.llama, join(dir, 'missing.gguf'), { drop: 'blk.1.ffn_up.weight' });
  await assert.rejects(Model.load(missing), /missing tensor 'blk\.1\.ffn_up\.weight'/);
  const shape = rewrite(paths.llama, join(dir, 'shape.gguf'), { dims: ['blk.0.attn_k.weight', [64, 64]] });
  await assert.rejects(Model.load(shape), /tensor 'blk\.0\.attn_k\.weight' has shape \[64, 64\], expected \[64, 32\]/);
  const type = rewrite(paths.wide, join(dir, 'type.gguf'), { type: ['blk.0.attn_q.weight', GGMLType.F64] });
  await assert.rejects(Model.load(type), /blk\.0\.attn_q\.weight has type F64, which llama-ts does not support/);
});

test('tied embeddings: without output.weight the output reuses token_embd', async () => {
  const m = await model('qwen2');
  assert.equal(m.weights.opt('output.weight'), undefined);
  const l = await allLogits(m, PROMPT.slice(0, 3));
  assert.equal(l[2].length, m.hp.nVocab);
});

test('loading reports progress and can be aborted', async () => {
  const seen: number[] = [];
  const m = await Model.load(paths.llama, { onProgress: (f) => void seen.push(f) });
  m.free();
  assert.ok(seen.length > 5);
  assert.equal(seen[seen.length - 1], 1);
  assert.ok(seen.every((x, i) => i === 0 || x >= seen[i - 1]));

  const ac = new AbortController();
  ac.abort(new Error('stop'));
  await assert.rejects(Model.load(paths.llama, { signal: ac.signal }), /stop/);
  const ac2 = new AbortController();
  let calls = 0;
  const p = Model.load(paths.llama, {
    signal: ac2.signal,
    onProgress: () => {
      if (++calls === 3) ac2.abort(new Error('halfway'));
    },
  });
  await assert.rejects(p, /halfway/);
  await assert.rejects(Model.load(paths.llama, { onProgress: () => false }), /cancelled/);
});
