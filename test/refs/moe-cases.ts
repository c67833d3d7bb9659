// The generated mixture-of-experts models whose llama.cpp answers are kept in
// test/refs/moe/ (model-moe.test.ts) and test/refs/gemma4-moe/ (model-gemma4-moe.test.ts),
// made by make-moe-refs.ts with node-llama-cpp 3.21.1 through ../shared/tools/ref.mjs: each
// exercises a routing or attention variant that the shared fixtures do not.

import { type ModelSpec, presetSpec } from '../../src/generator/index.js';

export interface MoeRefCase {
  /** File stem of the reference (test/refs/<dir>/<name>.ref.json). */
  name: string;
  /** Folder under test/refs (default 'moe'; 'gemma4-moe': model-gemma4-moe.test.ts's). */
  dir?: 'moe' | 'gemma4-moe';
  what: string;
  spec: ModelSpec;
}

function variant(preset: string, fileType: ModelSpec['fileType'], edit: (s: ModelSpec) => void): ModelSpec {
  const s = presetSpec(preset, fileType, { seed: 11 });
  edit(s);
  return s;
}

export const MOE_REF_CASES: readonly MoeRefCase[] = [
  {
    name: 'qwen2moe-F32',
    what: 'qwen2moe: softmax top-2 without renormalisation, a shared expert gated by silu(g)/g',
    spec: variant('tiny-qwen2moe', 'F32', () => {}),
  },
  {
    name: 'qwen2moe-Q8_0',
    what: 'qwen2moe in Q8_0 (expert stacks Q8_0, shared expert and router as llama-quantize leaves them)',
    spec: variant('tiny-qwen2moe', 'Q8_0', () => {}),
  },
  {
    name: 'deepseek2-sigmoid-F32',
    what: 'deepseek2 (V3/GLM routing): sigmoid scores, selection bias exp_probs_b, renormalised, scaled by 2.5; q-LoRA, a dense first layer, a shared expert',
    spec: variant('tiny-deepseek2', 'F32', () => {}),
  },
  {
    name: 'deepseek2-yarn-F32',
    what: 'deepseek2-Lite shape (27 layers, no q-LoRA), softmax routing, YaRN x4 with a log multiplier (scores scaled by mscale², rope magnitude cancelled)',
    spec: variant('tiny-deepseek2', 'F32', (s) => {
      // llama.cpp reads no q_lora_rank only for the -Lite layer counts
      s.shape.nLayer = 27;
      s.shape.mla = { ...s.shape.mla!, qLoraRank: 0 };
      s.shape.experts = {
        ...s.shape.experts!,
        gating: 'softmax',
        probsBias: false,
        weightsScale: 1,
        weightsNorm: false,
      };
      s.shape.yarn = { factor: 4, originalContext: 64, logMultiplier: 0.0707 };
    }),
  },
  {
    name: 'qwen3moe-ties-F32',
    what: 'qwen3moe with 32 experts, top-4 and a zero router: every expert ties, so the choice is std::sort’s order of equal keys (introsort past 16)',
    spec: variant('tiny-qwen3moe', 'F32', (s) => {
      s.shape.experts = { nExpert: 32, nUsed: 4, nFf: 32, routerStd: 0 };
    }),
  },
  {
    name: 'qwen3moe-Q4_K_M',
    what: 'qwen3moe 256 wide in Q4_K_M: expert stacks Q4_K, ffn_down Q6_K in the use_more_bits layers, 4-row interleaved K-quant experts',
    spec: variant('tiny-qwen3moe', 'Q4_K_M', (s) => {
      s.shape = { ...s.shape, nEmbd: 256, headDim: 64, nFf: 256, experts: { nExpert: 8, nUsed: 2, nFf: 256 } };
    }),
  },
  {
    name: 'mixtral-Q4_0',
    what: 'llama with 8 experts in Q4_0 (attn_k/attn_v Q8_0 as llama-quantize gives 8-expert models; interleaved Q4_0 expert stacks)',
    spec: variant('tiny-mixtral', 'Q4_0', () => {}),
  },
  {
    name: 'gpt-oss-MXFP4_MOE',
    what: 'gpt-oss as llama-quantize MXFP4_MOE writes it (expert stacks MXFP4, the rest Q8_0): sinks, window 8 on even layers, YaRN x32 from 128',
    spec: variant('tiny-gpt-oss', 'MXFP4_MOE', () => {}),
  },
  {
    name: 'gemma4-moe-F32',
    dir: 'gemma4-moe',
    what: 'gemma4 with experts (26B-A4B layers): a dense GeGLU beside 8 GeGLU experts top-2, each between its own norms; router on rmsnorm(h)/√n_embd·scale, softmax renormalised; fused gate_up stacks, per-expert down scales; window 8 on even layers',
    spec: variant('tiny-gemma4-moe', 'F32', () => {}),
  },
  {
    name: 'gemma4-moe-Q8_0',
    dir: 'gemma4-moe',
    what: 'gemma4 with experts in Q8_0 (router, its scale and the per-expert scales F32 as llama-quantize leaves them)',
    spec: variant('tiny-gemma4-moe', 'Q8_0', () => {}),
  },
  {
    name: 'gemma4-moe-split-F32',
    dir: 'gemma4-moe',
    what: 'gemma4 with experts as separate ffn_gate_exps / ffn_up_exps stacks and no per-expert scale',
    spec: variant('tiny-gemma4-moe', 'F32', (s) => {
      s.shape.experts = { ...s.shape.experts!, gateUpFused: false, downScale: false };
    }),
  },
];
