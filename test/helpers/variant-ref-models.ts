// The generated models whose llama.cpp references live in test/refs/variants/ (made by
// test/refs/make-refs.mjs variants): tensor layouts llama.cpp's loaders take besides the one
// its converters write for the dense and embedding architectures (the projections of
// ModelShape): q/k/v fused into attn_qkv or separate, biases on projections that usually
// have none, LongRoPE on llama, qwen2's output bias; and a gemma3 sliding-window pattern
// given as an array, which llama.cpp's gemma3 loader passes over.

import { type ModelShape, type ModelSpec, presetSpec } from '../../src/generator/index.js';
import type { RefModel } from './swa-ref-models.js';

const ALL_BIASES = ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'];
const QKV_BIASES = ['attn_q', 'attn_k', 'attn_v'];

function variant(preset: string, t: 'F32' | 'Q8_0', shape: Partial<ModelShape>): ModelSpec {
  return presetSpec(preset, t, { shape });
}

/** A logits reference at the usual tolerance of the file type. */
function logits(name: string, t: 'F32' | 'Q8_0', ctx = 256, suffix = ''): RefModel['refs'][number] {
  return {
    file: `${name}${suffix}.ref.json`,
    input: 'prompts.json',
    ctx,
    kind: 'logits',
    tol: t === 'F32' ? 0.02 : 0.1,
  };
}

export const VARIANT_MODELS: RefModel[] = [
  ...(['F32', 'Q8_0'] as const).map(
    (t): RefModel => ({
      name: `tiny-llama-biases-${t}`,
      spec: variant('tiny-llama', t, { projections: { biases: ALL_BIASES } }),
      covers: 'llama with a bias on every projection (q, k, v, output, gate, up, down)',
      refs: [logits(`tiny-llama-biases-${t}`, t)],
    }),
  ),
  {
    name: 'tiny-llama-qkv-longrope-F32',
    spec: variant('tiny-llama', 'F32', {
      projections: { qkv: 'fused', biases: QKV_BIASES },
      longRope: { nCtxOrig: 512, attnFactor: 1.19 },
    }),
    covers: 'llama with fused attn_qkv (+ bias) and LongRoPE (short factors at 256 cells, long at 1024)',
    refs: [
      logits('tiny-llama-qkv-longrope-F32', 'F32', 256, '-ctx256'),
      logits('tiny-llama-qkv-longrope-F32', 'F32', 1024, '-ctx1024'),
    ],
  },
  {
    name: 'tiny-llama-head32-freqs-F32',
    spec: variant('tiny-llama', 'F32', { headDim: 32, ropeFreqs: true }),
    covers: 'llama with head size 32 (attention.key_length > n_embd / n_head) and rope_freqs (Llama 3.1)',
    refs: [logits('tiny-llama-head32-freqs-F32', 'F32')],
  },
  ...(['F32', 'Q8_0'] as const).map(
    (t): RefModel => ({
      name: `tiny-phi3-split-${t}`,
      spec: variant('tiny-phi3', t, { projections: { qkv: 'split', biases: QKV_BIASES } }),
      covers: 'phi3 with separate attn_q/k/v (+ biases) instead of attn_qkv',
      refs: [logits(`tiny-phi3-split-${t}`, t)],
    }),
  ),
  {
    name: 'tiny-qwen2-qkv-F32',
    spec: variant('tiny-qwen2', 'F32', {
      tiedEmbeddings: false,
      projections: { qkv: 'fused', biases: ['output'] },
    }),
    covers: 'qwen2 with fused attn_qkv (+ bias), an untied output with output.bias',
    refs: [logits('tiny-qwen2-qkv-F32', 'F32')],
  },
  {
    name: 'tiny-qwen3-qkv-F32',
    spec: variant('tiny-qwen3', 'F32', { projections: { qkv: 'fused', biases: QKV_BIASES } }),
    covers: 'qwen3 with fused attn_qkv (+ bias), head size 32 > n_embd / n_head',
    refs: [logits('tiny-qwen3-qkv-F32', 'F32')],
  },
  {
    name: 'tiny-qwen3-yarn-F32',
    spec: variant('tiny-qwen3', 'F32', { yarn: { factor: 4, originalContext: 128 } }),
    covers: 'qwen3 with YaRN (factor 4 over an original context of 128)',
    refs: [logits('tiny-qwen3-yarn-F32', 'F32')],
  },
  {
    name: 'tiny-smollm3-biases-F32',
    spec: variant('tiny-smollm3', 'F32', { projections: { biases: QKV_BIASES } }),
    covers: 'smollm3 with q/k/v biases',
    refs: [logits('tiny-smollm3-biases-F32', 'F32')],
  },
  ...(['gemma2', 'gemma3'] as const).map(
    (a): RefModel => ({
      name: `tiny-${a}-qkv-F32`,
      spec: variant(`tiny-${a}`, 'F32', { projections: { qkv: 'fused', biases: QKV_BIASES } }),
      covers: `${a} with fused attn_qkv (+ bias)`,
      refs: [logits(`tiny-${a}-qkv-F32`, 'F32')],
    }),
  ),
  {
    name: 'tiny-gemma3-swa-array-F32',
    spec: variant('tiny-gemma3', 'F32', { swaPattern: [false, true, false, true, false, true] }),
    covers: 'gemma3 with sliding_window_pattern as a per-layer array, which llama.cpp passes over (period 6)',
    refs: [logits('tiny-gemma3-swa-array-F32', 'F32')],
  },
  ...(['bert', 'gemma-embedding'] as const).map(
    (a): RefModel => ({
      name: `tiny-${a}-qkv-F32`,
      spec: variant(`tiny-${a}`, 'F32', { projections: { qkv: 'fused', biases: QKV_BIASES } }),
      covers: `${a} embeddings with fused attn_qkv (+ bias)`,
      refs: [{ file: `tiny-${a}-qkv-F32.ref.json`, input: 'texts.json', ctx: 256, kind: 'embedding', tol: 1e-4 }],
    }),
  ),
];
