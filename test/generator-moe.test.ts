// The generator's mixtures of experts against the shared MoE fixtures (same tensor names
// and shapes, the MXFP4 file's per-tensor types) and llama-quantize's expert rules
// (MXFP4_MOE, 8 experts, ffn_down's layer from the name), and the real-size presets'
// shapes and parameter counts.

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import {
  chooseTensorTypes,
  type GenArch,
  generateModel,
  type ModelSpec,
  planTensors,
  presetSpec,
  resolveShape,
} from '../src/generator/index.js';
import { typeName } from '../src/ggml/types.js';
import { type GGUFFile, openGGUF } from '../src/gguf/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-gen-moe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A spec with a fixture's shape (its vocabulary copied). */
function specOf(f: GGUFFile, arch: GenArch): ModelSpec {
  const a = f.architecture;
  const n = (k: string, d?: number) => (d === undefined ? f.getNumber(`${a}.${k}`) : f.getNumber(`${a}.${k}`, d));
  const nExpert = n('expert_count');
  const shape: ModelSpec['shape'] = {
    nEmbd: n('embedding_length'),
    nLayer: n('block_count'),
    nHead: n('attention.head_count'),
    nHeadKv: n('attention.head_count_kv'),
    nFf: n('feed_forward_length'),
    nVocab: 0,
    nCtxTrain: n('context_length'),
    headDim: n('attention.key_length', n('embedding_length') / n('attention.head_count')),
    ropeDim: n('rope.dimension_count'),
    experts: {
      nExpert,
      nUsed: n('expert_used_count'),
      nFf: n('expert_feed_forward_length', n('feed_forward_length')),
      nShared: n('expert_shared_count', 0),
      nDenseLead: n('leading_dense_block_count', 0),
    },
  };
  if (arch === 'deepseek2') {
    shape.mla = {
      qLoraRank: n('attention.q_lora_rank', 0),
      kvLoraRank: n('attention.kv_lora_rank'),
      headK: n('attention.key_length_mla'),
      headV: n('attention.value_length_mla'),
    };
  }
  return { arch, fileType: 'F32', seed: 1, shape, vocab: { kind: 'copy', from: f.path }, layout: 'convert' };
}

const shapes = (f: GGUFFile) => f.tensors.map((t) => `${t.name} [${t.dims.join(', ')}]`).sort();

for (const [stem, arch] of [
  ['qwen3moe-F32', 'qwen3moe'],
  ['llama-moe-F32', 'llama'],
  ['deepseek2-F32', 'deepseek2'],
  ['gpt-oss-F32', 'gpt-oss'],
] as [string, GenArch][]) {
  const rel = `fixtures/archs/${stem}.gguf`;
  test(`${stem}: the generator writes the fixture's tensors (names and shapes)`, {
    skip: sharedPath(rel) ? false : missingShared(rel),
  }, () => {
    const fix = openGGUF(sharedPath(rel)!);
    try {
      const out = join(dir, `${stem}.gguf`);
      generateModel(specOf(fix, arch), out);
      const gen = openGGUF(out);
      try {
        assert.deepEqual(shapes(gen), shapes(fix));
        assert.equal(gen.architecture, fix.architecture);
      } finally {
        gen.close();
      }
    } finally {
      fix.close();
    }
  });
}

test('MXFP4_MOE: expert stacks MXFP4, other matrices and the output Q8_0, vectors F32 (the gpt-oss fixture)', {
  skip: sharedPath('fixtures/archs/gpt-oss-MXFP4.gguf') ? false : missingShared('fixtures/archs/gpt-oss-MXFP4.gguf'),
}, () => {
  const fix = openGGUF(sharedPath('fixtures/archs/gpt-oss-MXFP4.gguf')!);
  try {
    const chosen = chooseTensorTypes(
      { arch: 'gpt-oss', nLayer: 2, nHead: 4, nHeadKv: 2, nExpert: 4 },
      fix.tensors,
      'MXFP4_MOE',
    );
    assert.deepEqual(
      fix.tensors.map((t) => `${t.name} ${typeName(chosen.get(t.name)!.type)}`),
      fix.tensors.map((t) => `${t.name} ${typeName(t.type)}`),
    );
    assert.equal(fix.getNumber('general.file_type'), 38);
  } finally {
    fix.close();
  }
});

test('8 experts: attn_k and attn_v Q8_0, attn_output Q5_K in Q4_K_M; ffn_down by the layer in its name', () => {
  const spec = presetSpec('tiny-mixtral', 'Q4_K_M');
  spec.shape = { ...spec.shape, nEmbd: 256, nFf: 256, nLayer: 8, experts: { nExpert: 8, nUsed: 2, nFf: 256 } };
  const shape = resolveShape('llama', { ...spec.shape, nVocab: 512 });
  const plan = planTensors('llama', shape, 512);
  const types = chooseTensorTypes({ arch: 'llama', nLayer: 8, nHead: 4, nHeadKv: 2, nExpert: 8 }, plan, 'Q4_K_M');
  const t = (name: string) => typeName(types.get(name)!.type);
  assert.equal(t('blk.3.attn_k.weight'), 'Q8_0');
  assert.equal(t('blk.3.attn_v.weight'), 'Q8_0');
  assert.equal(t('blk.3.attn_output.weight'), 'Q5_K');
  assert.equal(t('blk.3.ffn_gate_exps.weight'), 'Q4_K');
  // use_more_bits(i, 8): layers 0 and 7, and (i - 1) % 3 == 2 → 3 and 6
  const down = [...Array(8).keys()].map((i) => t(`blk.${i}.ffn_down_exps.weight`));
  assert.deepEqual(down, ['Q6_K', 'Q4_K', 'Q4_K', 'Q6_K', 'Q4_K', 'Q4_K', 'Q6_K', 'Q6_K']);
  assert.equal(t('blk.0.ffn_gate_inp.weight'), 'F32');
});

test('real-size presets: Qwen3-30B-A3B and gpt-oss-20b shapes and parameter counts', () => {
  const count = (preset: string) => {
    const s = presetSpec(preset, 'F32');
    const shape = resolveShape(s.arch, s.shape);
    return planTensors(s.arch, shape, s.shape.nVocab).reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0);
  };
  // Qwen3-30B-A3B: 30.5B parameters; gpt-oss-20b: 20.9B
  assert.ok(Math.abs(count('qwen3-30b-a3b') / 1e9 - 30.5) < 0.1, `${count('qwen3-30b-a3b')}`);
  assert.ok(Math.abs(count('gpt-oss-20b') / 1e9 - 20.9) < 0.1, `${count('gpt-oss-20b')}`);
  const q = presetSpec('qwen3-30b-a3b', 'Q4_0');
  assert.deepEqual(
    [q.shape.nEmbd, q.shape.nLayer, q.shape.nHead, q.shape.nHeadKv, q.shape.headDim],
    [2048, 48, 32, 4, 128],
  );
  assert.deepEqual(q.shape.experts, { nExpert: 128, nUsed: 8, nFf: 768 });
  const g = presetSpec('gpt-oss-20b', 'MXFP4_MOE');
  assert.deepEqual(
    [g.shape.nEmbd, g.shape.nLayer, g.shape.nHead, g.shape.nHeadKv, g.shape.headDim],
    [2880, 24, 64, 8, 64],
  );
  assert.deepEqual(g.shape.experts, { nExpert: 32, nUsed: 4, nFf: 2880 });
  assert.equal(g.shape.slidingWindow, 128);
  assert.equal(g.shape.nVocab, 201088);
});
