// Tensors llama.cpp's loader for an architecture does not take make it refuse the file
// ("wrong number of tensors"; checked with node-llama-cpp 3.21.1 for each case below), and
// so does ours, naming the tensor, instead of loading it with the tensor ignored or used as
// another architecture would. The accepted variants are checked against llama.cpp's answers
// in model-variant-refs.test.ts. Keys llama.cpp's gemma4 loader requires are required here
// too (before, the norm epsilons defaulted to 1e-5 and 1e-12). No ../shared needed: the models are generated.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { generateModel, type ModelShape, presetSpec } from '../src/generator/index.js';
import { GGUFWriter, openGGUF } from '../src/gguf/index.js';
import { Context, Model, ModelError } from '../src/model/index.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-loader-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const REFUSED: { preset: string; shape: Partial<ModelShape>; tensor: string; why: string }[] = [
  {
    preset: 'tiny-qwen3',
    shape: { projections: { biases: ['attn_output'] } },
    tensor: 'blk.0.attn_output.bias',
    why: 'qwen3 takes no attn_output bias',
  },
  {
    preset: 'tiny-qwen2',
    shape: { projections: { biases: ['attn_output'] } },
    tensor: 'blk.0.attn_output.bias',
    why: 'qwen2 takes no attn_output bias',
  },
  {
    preset: 'tiny-phi3',
    shape: { projections: { biases: ['attn_output'] } },
    tensor: 'blk.0.attn_output.bias',
    why: 'phi3 takes no attn_output bias',
  },
  {
    preset: 'tiny-phi3',
    shape: { tiedEmbeddings: false, projections: { biases: ['output'] } },
    tensor: 'output.bias',
    why: 'phi3 takes no output bias',
  },
  {
    preset: 'tiny-gemma3',
    shape: { projections: { biases: ['ffn_up'] } },
    tensor: 'blk.0.ffn_up.bias',
    why: 'gemma3 takes no MLP biases',
  },
  {
    preset: 'tiny-smollm3',
    shape: { projections: { biases: ['ffn_up'] } },
    tensor: 'blk.0.ffn_up.bias',
    why: 'smollm3 takes no MLP biases',
  },
];

for (const c of REFUSED) {
  test(`${c.preset} with ${c.tensor}: refused, naming it (${c.why})`, async () => {
    const path = join(dir, `${c.preset}-${c.tensor}.gguf`);
    generateModel(presetSpec(c.preset, 'F32', { shape: c.shape }), path);
    await assert.rejects(
      Model.load(path),
      (e: unknown) =>
        e instanceof ModelError && e.message.includes(`'${c.tensor}'`) && /wrong number of tensors/.test(e.message),
    );
  });
}

/** A copy of `src` without the metadata key `key` and the tensors whose names `drop` matches. */
function without(src: string, key: string, drop?: RegExp): string {
  const dst = join(dir, `without-${key || drop?.source.replace(/\W+/g, '_')}.gguf`);
  const f = openGGUF(src);
  try {
    const w = new GGUFWriter({ alignment: f.alignment });
    for (const [k, kv] of f.metadata) if (k !== key) w.set(k, kv.type, kv.value);
    for (const t of f.tensors) if (!drop?.test(t.name)) w.addTensor(t.name, t.type, [...t.dims], f.readTensorData(t));
    w.write(dst);
  } finally {
    f.close();
  }
  return dst;
}
const withoutKey = (src: string, key: string) => without(src, key);

const REQUIRED_KEYS: [string, string[]][] = [
  ['tiny-llama', ['llama.attention.layer_norm_rms_epsilon']],
  ['tiny-qwen2', ['qwen2.attention.layer_norm_rms_epsilon']],
  ['tiny-phi3', ['phi3.attention.layer_norm_rms_epsilon']],
  ['tiny-bert', ['bert.attention.layer_norm_epsilon']],
  // the experts and recurrent architectures (before: defaults, e.g. 1e-5 / 1e-6)
  ['tiny-qwen35', ['qwen35.attention.layer_norm_rms_epsilon']],
  ['tiny-qwen35moe', ['qwen35moe.attention.layer_norm_rms_epsilon']],
  ['tiny-lfm2', ['lfm2.attention.layer_norm_rms_epsilon']],
  ['tiny-granitehybrid', ['granitehybrid.attention.layer_norm_rms_epsilon']],
  ['tiny-nemotron-h', ['nemotron_h.attention.layer_norm_rms_epsilon']],
  ['tiny-qwen2moe', ['qwen2moe.attention.layer_norm_rms_epsilon']],
  ['tiny-qwen3moe', ['qwen3moe.attention.layer_norm_rms_epsilon']],
  ['tiny-gpt-oss', ['gpt-oss.attention.layer_norm_rms_epsilon']],
  // deepseek2: q_lora_rank is required outside the -Lite block counts (tiny-deepseek2 has 2)
  [
    'tiny-deepseek2',
    [
      'deepseek2.attention.layer_norm_rms_epsilon',
      'deepseek2.expert_shared_count',
      'deepseek2.expert_feed_forward_length',
      'deepseek2.attention.q_lora_rank',
    ],
  ],
  [
    'tiny-gemma4',
    [
      'gemma4.attention.sliding_window_pattern',
      'gemma4.attention.key_length_swa',
      'gemma4.attention.value_length_swa',
      'gemma4.embedding_length_per_layer_input',
    ],
  ],
];

for (const [preset, keys] of REQUIRED_KEYS) {
  test(`${preset} without a key its llama.cpp loader requires (no default): refused, naming the key`, async () => {
    const path = join(dir, `${preset}.gguf`);
    generateModel(presetSpec(preset, 'F32'), path);
    for (const key of keys) {
      await assert.rejects(
        Model.load(withoutKey(path, key)),
        (e: unknown) => e instanceof ModelError && e.message.includes(`missing key '${key}'`),
        key,
      );
    }
  });
}

test('tiny-gemma4 without final_logit_softcapping: soft-capped at 30, as llama.cpp (its hparams default)', async () => {
  const path = join(dir, 'tiny-gemma4-softcap.gguf');
  generateModel(presetSpec('tiny-gemma4', 'F32'), path);
  const logits = async (file: string) => {
    const m = await Model.load(file);
    const ctx = new Context(m, { nCtx: 32 });
    try {
      await ctx.decode({ tokens: [1, 300, 301, 302] });
      return { cap: m.hp.finalSoftcap, logits: ctx.getLogits(-1) };
    } finally {
      ctx.free();
      m.free();
    }
  };
  const withKey = await logits(path);
  const keyless = await logits(withoutKey(path, 'gemma4.final_logit_softcapping'));
  assert.equal(withKey.cap, 30);
  assert.equal(keyless.cap, 30);
  assert.deepEqual(keyless.logits, withKey.logits);
});

test('bert without a token type count, EmbeddingGemma dense layers without their widths: refused as by llama.cpp', async () => {
  const bert = join(dir, 'tiny-bert-types.gguf');
  generateModel(presetSpec('tiny-bert', 'F32'), bert);
  await assert.rejects(
    Model.load(withoutKey(bert, 'tokenizer.ggml.token_type_count')),
    (e: unknown) =>
      e instanceof ModelError && /token_type_count = 0; a bert model needs a token type count/.test(e.message),
  );
  // llama.cpp sizes dense_2 by dense_2_feat_out (0 when absent): the file's tensor does not fit
  const emb = join(dir, 'tiny-gemma-embedding.gguf');
  generateModel(presetSpec('tiny-gemma-embedding', 'F32'), emb);
  await assert.rejects(
    Model.load(withoutKey(emb, 'gemma-embedding.dense_2_feat_out')),
    (e: unknown) =>
      e instanceof ModelError && /tensor 'dense_2\.weight' has shape \[64, 96\], expected \[64, 0\]/.test(e.message),
  );
});

// Tensors llama.cpp's loader creates without TENSOR_NOT_REQUIRED (node-llama-cpp 3.21.1:
// "missing tensor"); before, each of these files loaded (the shared expert or the Mamba-2
// group norm left out of the graph)
const MISSING: { preset: string; drop: RegExp; tensor: string }[] = [
  { preset: 'tiny-qwen35moe', drop: /_shexp\./, tensor: 'blk.0.ffn_gate_inp_shexp.weight' },
  { preset: 'tiny-granitehybrid', drop: /\.ssm_norm\./, tensor: 'blk.0.ssm_norm.weight' },
  { preset: 'tiny-nemotron-h', drop: /\.ssm_norm\./, tensor: 'blk.0.ssm_norm.weight' },
];

for (const c of MISSING) {
  test(`${c.preset} without ${c.drop.source}: refused, naming '${c.tensor}'`, async () => {
    const path = join(dir, `${c.preset}-full.gguf`);
    generateModel(presetSpec(c.preset, 'F32'), path);
    await assert.rejects(
      Model.load(without(path, '', c.drop)),
      (e: unknown) => e instanceof ModelError && e.message.includes(`missing tensor '${c.tensor}'`),
    );
  });
}

test('lfm2 with head size × heads ≠ embedding_length: refused, naming the keys and attn_q', async () => {
  // llama.cpp sizes attn_q and attn_output by n_embd (node-llama-cpp: wrong shape of attn_q);
  // before, the queries were sized by head size × heads and the file ran
  const path = join(dir, 'tiny-lfm2-head32.gguf');
  generateModel(presetSpec('tiny-lfm2', 'F32', { shape: { headDim: 32 } }), path);
  await assert.rejects(
    Model.load(path),
    (e: unknown) =>
      e instanceof ModelError &&
      /attention\.key_length 32 \/ value_length 32 × head_count 4 ≠ embedding_length 64/.test(e.message) &&
      e.message.includes("'blk.2.attn_q.weight'"),
  );
});
