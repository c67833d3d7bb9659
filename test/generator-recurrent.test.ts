// The generator on the recurrent and hybrid architectures: llama-quantize's per-tensor
// types on the shared fixtures of ../shared/fixtures/archs/ (convolution kernels, A, dt
// and norms stay F32; the ssm_in / ssm_out / alpha / beta matrices are quantized), and the
// benchmark presets' real shapes: Qwen3.5-0.8B's and LFM2-1.2B's parameter counts computed
// here from their published configurations, their Q4_0 and Q4_K_M types.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  chooseTensorTypes,
  type FileTypeName,
  type ModelShape,
  planTensors,
  presetSpec,
  QKV_PROJECTIONS,
  resolveShape,
} from '../src/generator/index.js';
import { typeName } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const FIXTURES = ['qwen35', 'qwen35moe', 'lfm2', 'granitehybrid'];

for (const arch of FIXTURES) {
  const rel = `fixtures/archs/${arch}-Q8_0.gguf`;
  test(`${arch} Q8_0: llama-quantize's per-tensor types`, {
    skip: sharedPath(rel) ? false : missingShared(rel),
  }, () => {
    const f = openGGUF(sharedPath(rel)!);
    const a = f.architecture;
    const kv = f.get(`${a}.attention.head_count_kv`)?.value;
    const types = chooseTensorTypes(
      {
        arch: a,
        nLayer: f.getNumber(`${a}.block_count`),
        nHead: f.getNumber(`${a}.attention.head_count`),
        nHeadKv: Array.isArray(kv) ? Number(kv[0]) : Number(kv ?? 0),
        nExpert: f.getNumber(`${a}.expert_count`, 0),
      },
      f.tensors,
      'Q8_0',
    );
    const got = f.tensors.map((t) => `${t.name} ${typeName(types.get(t.name)?.type ?? -1)}`);
    const want = f.tensors.map((t) => `${t.name} ${typeName(t.type)}`);
    assert.deepEqual(got, want);
    assert.ok(
      want.some((x) => /(ssm_conv1d|shortconv\.conv)\.weight F32$/.test(x)),
      'a convolution kernel kept F32',
    );
  });
}

/** Per tensor name without its layer, the set of types chosen across layers. */
function presetTypes(preset: string, ft: FileTypeName): { params: number; types: Map<string, Set<string>> } {
  const spec = presetSpec(preset, ft);
  const shape = resolveShape(spec.arch, spec.shape);
  const plan = planTensors(spec.arch, shape, shape.nVocab);
  const chosen = chooseTensorTypes(
    { arch: spec.arch, nLayer: shape.nLayer, nHead: shape.nHead, nHeadKv: shape.nHeadKv },
    plan,
    ft,
  );
  const types = new Map<string, Set<string>>();
  for (const [name, t] of chosen) {
    const key = name.replace(/^blk\.\d+\./, '');
    if (!types.has(key)) types.set(key, new Set());
    types.get(key)!.add(typeName(t.type));
  }
  return { params: plan.reduce((s, t) => s + t.dims.reduce((x, y) => x * y, 1), 0), types };
}

test("Qwen3.5-0.8B preset: the configuration's parameter count, F32 where llama-quantize keeps it", () => {
  // hidden 1024, vocab 248320 tied, 24 layers of which 18 Gated DeltaNet (16 key / 16 value
  // heads of 128, conv 4) and 6 gated attention (8 heads / 2 KV heads of 256, q and gate
  // from one projection, q/k norms), intermediate 3584
  const d = 1024;
  const qkv = 2 * 16 * 128 + 16 * 128;
  const delta = d * qkv + d * 2048 + 4 * qkv + 16 + 16 + 2 * d * 16 + 128 + 2048 * d;
  const attn = d * 2 * 8 * 256 + 2 * d * 2 * 256 + 8 * 256 * d + 2 * 256;
  const perLayer = 2 * d + 3 * d * 3584;
  const want = 248320 * d + d + 24 * perLayer + 18 * delta + 6 * attn;
  for (const ft of ['Q4_0', 'Q4_K_M'] as const) {
    const { params, types } = presetTypes('qwen3.5-0.8b', ft);
    assert.equal(params, want);
    for (const k of ['ssm_conv1d.weight', 'ssm_a', 'ssm_dt.bias', 'ssm_norm.weight', 'attn_q_norm.weight']) {
      assert.deepEqual([...types.get(k)!], ['F32'], `${ft} ${k}`);
    }
    for (const k of ['attn_qkv.weight', 'attn_gate.weight', 'ssm_alpha.weight', 'ssm_beta.weight', 'ssm_out.weight']) {
      assert.ok(![...types.get(k)!].includes('F32'), `${ft} ${k} quantized`);
    }
    assert.deepEqual([...types.get('token_embd.weight')!], ['Q6_K'], `${ft}: tied, the output's type`);
  }
});

test("LFM2-1.2B preset: the configuration's parameter count, F32 where llama-quantize keeps it", () => {
  // hidden 2048, vocab 65536 tied, 16 layers: 10 short convolutions (L 3, in_proj to 3 ×
  // 2048) and 6 attention (32 heads / 8 KV heads of 64, q/k norms), intermediate 8192
  const d = 2048;
  const conv = d * 3 * d + 3 * d + d * d;
  const attn = d * d + 2 * d * 8 * 64 + d * d + 2 * 64;
  const want = 65536 * d + d + 16 * (2 * d + 3 * d * 8192) + 10 * conv + 6 * attn;
  assert.equal(want, 1_170_340_608); // LiquidAI's model card: 1.17B
  for (const ft of ['Q4_0', 'Q4_K_M'] as const) {
    const { params, types } = presetTypes('lfm2-1.2b', ft);
    assert.equal(params, want);
    assert.deepEqual([...types.get('shortconv.conv.weight')!], ['F32'], ft);
    assert.ok(![...types.get('shortconv.in_proj.weight')!].includes('F32'), `${ft}: in_proj quantized`);
  }
});

test('projections: one layout flag for every family (biases left out, split keeping the Gated DeltaNet attn_qkv)', () => {
  const names = (preset: string, projections: ModelShape['projections']) => {
    const spec = presetSpec(preset, 'F32', { shape: { projections } });
    const shape = resolveShape(spec.arch, spec.shape);
    return planTensors(spec.arch, shape, shape.nVocab).map((t) => t.name);
  };
  // qwen2moe's converter gives q/k/v biases; noBiases leaves them out
  const moe = names('tiny-qwen2moe', { noBiases: QKV_PROJECTIONS });
  assert.ok(moe.includes('blk.0.attn_q.weight') && !moe.some((n) => /attn_[qkv]\.bias$/.test(n)));
  // qwen35: attention layer 3 fused, then split back; recurrent layer 0's attn_qkv kept
  const fused = names('tiny-qwen35', { qkv: 'fused', biases: QKV_PROJECTIONS });
  assert.ok(fused.includes('blk.3.attn_qkv.bias') && !fused.includes('blk.3.attn_q.weight'));
  const split = names('tiny-qwen35', { qkv: 'split' });
  assert.ok(split.includes('blk.0.attn_qkv.weight') && !split.includes('blk.0.attn_q.weight'));
  assert.deepEqual(split, names('tiny-qwen35', {}));
});
