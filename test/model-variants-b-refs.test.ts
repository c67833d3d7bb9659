// Fidelity for the tensor and hyper-parameter variants llama.cpp's loaders accept for the
// expert, latent-attention and recurrent-hybrid architectures, against references made
// with llama.cpp (node-llama-cpp 3.21.1) for generated models (test/refs/variants-b/, made
// by test/refs/make-refs.mjs variants-b): each model is an existing preset with one variant (see
// test/helpers/variants-b-ref-models.ts). Prompt logits, greedy tokens generated one decode
// at a time, at 1, 2 and 3 threads with the same bits. No ../shared needed.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { generateModel, type ModelShape, presetSpec } from '../src/generator/index.js';
import { GGUFValueType, GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, Model } from '../src/model/index.js';
import { sameBits } from './helpers/arch-refs.js';
import { refModelTests } from './helpers/ref-models-test.js';
import { REPO_ROOT } from './helpers/shared.js';
import { REF_MODELS } from './helpers/variants-b-ref-models.js';

const { dir, cpus } = refModelTests(join(REPO_ROOT, 'test/refs/variants-b'), REF_MODELS);

/**
 * A generated preset (one shape field changed), its file rewritten by `edit` (keys set or
 * removed, tensors added), loaded: the error it is refused with.
 */
async function refusal(preset: string, shape: Partial<ModelShape>, edit?: (w: GGUFWriter) => void): Promise<string> {
  const path = join(dir, `refused-${preset}.gguf`);
  generateModel(presetSpec(preset, 'F32', { shape }), path);
  if (edit) {
    const f = openGGUF(path);
    const w = GGUFWriter.fromFile(f);
    f.close();
    edit(w);
    w.write(path);
  }
  setLogCallback(() => {});
  try {
    const model = await Model.load(path, { devices: [cpus[0]] });
    model.free();
  } catch (e) {
    return (e as Error).message;
  } finally {
    setLogCallback(null);
  }
  return 'loaded';
}

const i32s = (xs: number[]) => ({ itemType: GGUFValueType.INT32, items: Int32Array.from(xs) });

test('variants llama.cpp refuses (a missing key, or an assertion at load or graph build) are refused naming the key or tensor', async () => {
  const sections = 'qwen35.rope.dimension_sections';
  assert.match(
    await refusal('tiny-qwen35', {}, (w) => w.delete(sections)),
    /qwen35\.rope\.dimension_sections is missing/,
  );
  // ggml asserts some pair in the first three sections, and at most the head size in all
  assert.match(
    await refusal('tiny-qwen35', {}, (w) => w.set(sections, GGUFValueType.ARRAY, i32s([0, 0, 0, 4]))),
    /dimension_sections = \[0,0,0,4\]/,
  );
  assert.match(
    await refusal('tiny-qwen35', {}, (w) => w.set(sections, GGUFValueType.ARRAY, i32s([20, 20, 0, 0]))),
    /dimension_sections = \[20,20,0,0\].*head size 32/,
  );
  // qwen35's gated attention reads separate q/k/v (llama.cpp's graph has no fused path there)
  assert.match(await refusal('tiny-qwen35', { projections: { qkv: 'fused' } }), /blk\.3\.attn_qkv\.weight/);
  // qwen2moe/qwen3moe: GGML_ASSERT(n_embd_head == n_rot) in llama.cpp's graph
  assert.match(await refusal('tiny-qwen3moe', { ropeDim: 8 }), /qwen3moe\.rope\.dimension_count = 8 must equal/);
  assert.match(
    await refusal('tiny-qwen2moe', {}, (w) => w.set('qwen2moe.attention.value_length', GGUFValueType.UINT32, 8)),
    /qwen2moe\.attention\.value_length = 8/,
  );
  // granitehybrid: GGML_ASSERT(2 * n_embd == d_inner) at load
  assert.match(
    await refusal('tiny-granitehybrid', { ssm: { dConv: 4, dInner: 192, dState: 16, nHead: 8, nGroup: 1 } }),
    /granitehybrid\.ssm\.inner_size = 192/,
  );
  // every multi-token-prediction layer count must leave a trunk (llama.cpp asserts it)
  assert.match(
    await refusal('tiny-qwen35', {}, (w) => w.set('qwen35.nextn_predict_layers', GGUFValueType.UINT32, 4)),
    /nextn_predict_layers/,
  );
});

test('lfm2: LFM2-ColBert dense_2_out (accepted by llama.cpp for embeddings) is refused by name, not ignored', async () => {
  const msg = await refusal('tiny-lfm2', {}, (w) =>
    w.addTensor('dense_2_out.weight', 0, [64, 32], new Uint8Array(64 * 32 * 4)),
  );
  assert.match(msg, /dense_2_out/);
});

/** Logits after a prompt, for a model file (one thread). */
async function promptLogits(path: string): Promise<Float32Array> {
  setLogCallback(() => {});
  const model = await Model.load(path, { devices: [cpus[0]] });
  setLogCallback(null);
  try {
    const ctx = new Context(model, { nCtx: 64 });
    try {
      await ctx.decode({ tokens: model.vocab.encode('Once upon a time', { addSpecial: true, parseSpecial: false }) });
      return ctx.getLogits(-1);
    } finally {
      ctx.free();
    }
  } finally {
    model.free();
  }
}

test('expert_used_count and expert_feed_forward_length given once per block answer as the single value (llama.cpp: get_key_or_arr)', async () => {
  for (const [preset, arch] of [
    ['tiny-qwen3moe', 'qwen3moe'],
    ['tiny-nemotron-h-moe', 'nemotron_h_moe'],
  ] as const) {
    const scalar = join(dir, `${preset}-scalar.gguf`);
    const arrays = join(dir, `${preset}-arrays.gguf`);
    generateModel(presetSpec(preset, 'F32'), scalar);
    const f = openGGUF(scalar);
    const w = GGUFWriter.fromFile(f);
    const nLayer = f.getNumber(`${arch}.block_count`);
    for (const k of ['expert_used_count', 'expert_feed_forward_length']) {
      const v = f.getNumber(`${arch}.${k}`);
      w.set(`${arch}.${k}`, GGUFValueType.ARRAY, {
        itemType: GGUFValueType.UINT32,
        items: new Uint32Array(nLayer).fill(v),
      });
    }
    f.close();
    w.write(arrays);
    assert.ok(sameBits([await promptLogits(arrays)], [await promptLogits(scalar)]), `${preset}: arrays differ`);
  }
});
