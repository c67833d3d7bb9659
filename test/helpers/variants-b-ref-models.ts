// The generated models whose llama.cpp references live in test/refs/variants-b/ (made by
// test/refs/make-refs.mjs variants-b): hyper-parameter and tensor variants llama.cpp's
// loaders accept for the expert, latent-attention and recurrent-hybrid architectures
// (qwen35, qwen35moe, deepseek2, gpt-oss, lfm2, granitehybrid, nemotron_h, qwen2moe,
// qwen3moe), each an existing preset with one shape field changed. The manifest there holds
// each generated file's SHA-256, so a change to the generator shows as a mismatch.

import type { ExpertShape, FileTypeName, ModelShape } from '../../src/generator/index.js';
import { PRESETS, presetSpec, QKV_PROJECTIONS } from '../../src/generator/index.js';
import type { RefModel } from './swa-ref-models.js';

/** As test/refs/recurrent's: F32 0.02; Q8_0 0.15 (one flipped Q8_0 rounding there). */
const TOL: Record<string, number> = { F32: 0.02, Q8_0: 0.15 };

function variant(
  preset: string,
  suffix: string,
  shape: Partial<ModelShape>,
  type: FileTypeName,
  covers: string,
): RefModel {
  const name = `${preset}-${suffix}-${type}`;
  return {
    name,
    spec: presetSpec(preset, type, { shape }),
    covers,
    refs: [{ file: `${name}.ref.json`, input: 'prompts.json', ctx: 256, kind: 'logits', tol: TOL[type] }],
  };
}

function expertsOf(preset: string): ExpertShape {
  const e = PRESETS[preset].shape.experts;
  if (!e) throw new Error(`${preset} has no experts`);
  return e;
}

export const REF_MODELS: RefModel[] = [
  variant(
    'tiny-qwen35',
    'sections-wrap',
    { ropeSections: [0, 2, 1, 0] },
    'F32',
    'qwen35 with rope.dimension_sections [0, 2, 1, 0] over 4 rotated pairs: the sections wrap, and pairs 0 and 3 fall in the fourth (text position 0)',
  ),
  variant('tiny-qwen35', 'sections-wrap', { ropeSections: [0, 2, 1, 0] }, 'Q8_0', 'the same in Q8_0'),
  variant(
    'tiny-qwen35moe',
    'sections-e',
    { ropeSections: [1, 0, 1, 2] },
    'F32',
    'qwen35moe with rope.dimension_sections [1, 0, 1, 2]: pairs 1 and 3 in the fourth section',
  ),
  variant(
    'tiny-qwen2moe',
    'fused-qkv',
    { projections: { qkv: 'fused' } },
    'F32',
    'qwen2moe with one attn_qkv weight and bias (create_tensor_qkv)',
  ),
  variant(
    'tiny-qwen2moe',
    'no-qkv-bias',
    { projections: { noBiases: QKV_PROJECTIONS } },
    'F32',
    'qwen2moe without q/k/v biases (optional in llama.cpp)',
  ),
  variant(
    'tiny-qwen3moe',
    'qkv-bias',
    { projections: { biases: QKV_PROJECTIONS } },
    'F32',
    'qwen3moe with q/k/v biases (applied when present)',
  ),
  variant(
    'tiny-qwen3moe',
    'fused-qkv',
    { projections: { qkv: 'fused', biases: QKV_PROJECTIONS } },
    'Q8_0',
    'qwen3moe with one attn_qkv weight and bias, Q8_0',
  ),
  variant(
    'tiny-gpt-oss',
    'fused-qkv',
    { projections: { qkv: 'fused' } },
    'F32',
    'gpt-oss with one attn_qkv weight and bias',
  ),
  variant(
    'tiny-gpt-oss',
    'no-qkv-bias',
    { projections: { noBiases: QKV_PROJECTIONS } },
    'F32',
    'gpt-oss without q/k/v biases',
  ),
  variant(
    'tiny-qwen35',
    'mtp',
    { nextnLayers: 1 },
    'F32',
    'qwen35 with a multi-token-prediction block (nextn_predict_layers 1): loaded, not evaluated',
  ),
  variant(
    'tiny-qwen35moe',
    'mtp-fused-exps',
    { nextnLayers: 1, experts: { ...expertsOf('tiny-qwen35moe'), gateUpFused: true } },
    'F32',
    'qwen35moe with a multi-token-prediction block and fused ffn_gate_up_exps',
  ),
  variant(
    'tiny-deepseek2',
    'mtp',
    { nextnLayers: 1 },
    'F32',
    'deepseek2 with a multi-token-prediction block (GLM-4.7-Flash-like): loaded, not evaluated',
  ),
  variant(
    'tiny-deepseek2',
    'fused-exps',
    { experts: { ...expertsOf('tiny-deepseek2'), gateUpFused: true } },
    'F32',
    'deepseek2 with fused ffn_gate_up_exps (create_tensor_gate_up_exps)',
  ),
  variant(
    'tiny-qwen35',
    'qkv-bias',
    { projections: { biases: QKV_PROJECTIONS } },
    'F32',
    'qwen35 with attention q/k/v biases, which llama.cpp loads and its graph leaves unused',
  ),
  variant(
    'tiny-lfm2',
    'fused-qkv',
    { projections: { qkv: 'fused', biases: QKV_PROJECTIONS } },
    'F32',
    'lfm2 with one attn_qkv weight and bias',
  ),
  variant(
    'tiny-nemotron-h',
    'fused-qkv',
    { projections: { qkv: 'fused', biases: QKV_PROJECTIONS } },
    'F32',
    'nemotron_h with one attn_qkv weight and bias',
  ),
  variant(
    'tiny-granitehybrid',
    'fused-qkv',
    { projections: { qkv: 'fused', biases: QKV_PROJECTIONS } },
    'F32',
    'granitehybrid with one attn_qkv weight and bias',
  ),
  variant(
    'tiny-deepseek2',
    'attn-temp',
    { attnTemp: { scale: 0.5, length: 4 } },
    'F32',
    'deepseek2 with attention temperature tuning (Mistral Large 3): queries scaled by log(floor(pos / 4) + 1) · 0.5 + 1',
  ),
  variant(
    'tiny-nemotron-h-moe',
    'mtp',
    { nextnLayers: 1 },
    'F32',
    'nemotron_h_moe with a multi-token-prediction block (attention and experts): loaded, not evaluated',
  ),
  variant(
    'tiny-qwen3moe',
    'head32',
    { headDim: 32 },
    'F32',
    'qwen3moe with heads of 32 (key_length ≠ embedding_length / head_count)',
  ),
  variant(
    'tiny-gpt-oss',
    'head32',
    { headDim: 32 },
    'F32',
    'gpt-oss with heads of 32 (≠ embedding_length / head_count)',
  ),
  variant(
    'tiny-nemotron-h',
    'head32',
    { headDim: 32 },
    'F32',
    'nemotron_h with heads of 32 (≠ embedding_length / head_count)',
  ),
  variant(
    'tiny-qwen35',
    'yarn-sections',
    { ropeSections: [0, 2, 1, 0], yarn: { factor: 4, originalContext: 64 } },
    'F32',
    'qwen35 with YaRN (factor 4 over 64 positions) and wrapping sections: the fourth-section pair keeps YaRN magnitude, angle 0',
  ),
  variant(
    'tiny-nemotron-h-moe',
    'per-layer-experts',
    {
      experts: {
        ...expertsOf('tiny-nemotron-h-moe'),
        nUsedPerLayer: [2, 3, 2, 1, 2, 2],
        nFfPerLayer: [32, 32, 32, 16, 32, 48],
      },
    },
    'F32',
    'nemotron_h_moe with experts used and expert rows per layer (Nemotron 3 Puzzle): top-3 of 32 rows, top-1 of 16, top-2 of 48',
  ),
  variant(
    'tiny-nemotron-h-moe',
    'latent',
    { experts: { ...expertsOf('tiny-nemotron-h-moe'), latent: 32 } },
    'F32',
    'nemotron_h_moe with experts in a latent space of 32 (moe_latent_size, ffn_latent_down/up; Nemotron 3 Super)',
  ),
  variant(
    'tiny-deepseek2',
    'groups',
    { experts: { ...expertsOf('tiny-deepseek2'), groups: { n: 4, used: 2 } } },
    'F32',
    'deepseek2 with grouped expert selection (DeepSeek-V3): 4 groups of 2 experts, the best 2 groups eligible',
  ),
];
