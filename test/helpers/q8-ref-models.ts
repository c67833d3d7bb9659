// The generated models whose llama.cpp references live in test/refs/q8/ (made by
// test/refs/make-refs.mjs q8): Gemma 2 and DeepSeek-2 at shapes the shared fixtures do not
// have, in F32 and Q8_0, over 44 prompts, for model-q8-refs.test.ts. node-llama-cpp runs
// both without flash attention (see oracleParams in arch-refs.ts). The manifest there holds
// each generated file's SHA-256.

import { type ModelSpec, presetSpec } from '../../src/generator/index.js';
import type { RefModel } from './swa-ref-models.js';

function gemma2(t: 'F32' | 'Q8_0'): ModelSpec {
  // 96 wide, 6 heads of 16 over 2 KV heads, 3 layers (sliding, global, sliding), n_ff 192;
  // embeddings of std 0.1: top-1 probabilities of 0.02-0.1 (the default 96^-0.25 predicts
  // the last token back at ~1)
  return presetSpec('tiny-gemma2', t, {
    shape: { nEmbd: 96, nLayer: 3, nHead: 6, nHeadKv: 2, nFf: 192, embdStd: 0.1 },
  });
}

function deepseek2(t: 'F32' | 'Q8_0'): ModelSpec {
  // the preset's V3-style routing (sigmoid, selection bias, scaled weights) over 8 experts,
  // q-LoRA 32, 3 layers with a dense first one; an SPM vocabulary, which adds the BOS that
  // ref.mjs puts in front
  return presetSpec('tiny-deepseek2', t, { vocab: { kind: 'synthetic-spm', size: 512 } });
}

const tol = (t: 'F32' | 'Q8_0') => (t === 'F32' ? 0.02 : 0.1);

export const Q8_REF_MODELS: RefModel[] = (['F32', 'Q8_0'] as const).flatMap((t): RefModel[] => [
  {
    name: `q8-gemma2-${t}`,
    spec: gemma2(t),
    covers: 'gemma2 96 wide, 3 layers, GQA 6/2: soft-capped scores and logits, window 8, GeGLU',
    refs: [{ file: `q8-gemma2-${t}.ref.json`, input: 'prompts.json', ctx: 256, kind: 'logits', tol: tol(t) }],
  },
  {
    name: `q8-deepseek2-${t}`,
    spec: deepseek2(t),
    covers:
      'deepseek2 latent attention (q-LoRA 32, kv_lora_rank 32), 8 experts top-2 with sigmoid routing and a shared one',
    refs: [{ file: `q8-deepseek2-${t}.ref.json`, input: 'prompts.json', ctx: 256, kind: 'logits', tol: tol(t) }],
  },
]);

/** The shared fixtures the same prompts run on (references in test/refs/q8/fixture-*). */
export interface FixtureRef {
  /** Reference file in test/refs/q8/. */
  file: string;
  /** The model, under ../shared/. */
  shared: string;
  tol: number;
}

export const Q8_FIXTURE_REFS: FixtureRef[] = ['gemma2-F32', 'gemma2-Q8_0', 'deepseek2-F32'].map((stem) => ({
  file: `fixture-${stem}.ref.json`,
  shared: `fixtures/archs/${stem}.gguf`,
  tol: stem.endsWith('F32') ? 0.02 : 0.1,
}));
