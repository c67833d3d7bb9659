// Tensors llama.cpp's loader for an architecture does not take make it refuse the file
// ("wrong number of tensors"; checked with node-llama-cpp 3.21.1 for each case below), and
// so does ours, naming the tensor, instead of loading it with the tensor ignored or used as
// another architecture would. The accepted variants are checked against llama.cpp's answers
// in model-variant-refs.test.ts. No ../shared needed: the models are generated.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { generateModel, type ModelShape, presetSpec } from '../src/generator/index.js';
import { Model, ModelError } from '../src/model/index.js';

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
