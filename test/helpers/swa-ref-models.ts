// The generated models whose llama.cpp references live in test/refs/swa/ (made by
// test/refs/make-refs.mjs swa): what the shared fixtures leave out of the sliding-window
// architectures. The manifest there holds each generated file's SHA-256, so a change to
// the generator shows as a mismatch instead of as a wrong comparison.

import { type ModelSpec, presetSpec } from '../../src/generator/index.js';

export interface RefFile {
  file: string;
  /** JSON array of prompts (logits) or texts (embeddings), in the set's folder under test/refs/. */
  input: string;
  /** Context size llama.cpp ran with (and the test runs with). */
  ctx: number;
  kind: 'logits' | 'embedding';
  /** Tolerance on relative logits (logits) or 1 - cosine (embeddings). */
  tol: number;
}

export interface RefModel {
  name: string;
  spec: ModelSpec;
  /** What the model exercises. */
  covers: string;
  refs: RefFile[];
}

function gemma3Window512(): ModelSpec {
  const s = presetSpec('tiny-gemma3', 'F32');
  s.shape = { ...s.shape, slidingWindow: 512, qkNormScale: 3 };
  return s;
}

export const REF_MODELS: RefModel[] = [
  ...(['F32', 'Q8_0'] as const).map(
    (t): RefModel => ({
      name: `tiny-gemma4-${t}`,
      spec: presetSpec('tiny-gemma4', t),
      covers: 'gemma4 per-layer embeddings, 2 shared-KV layers, full layers without attn_v, layer output scales',
      refs: [
        {
          file: `tiny-gemma4-${t}.ref.json`,
          input: 'prompts.json',
          ctx: 256,
          kind: 'logits',
          tol: t === 'F32' ? 0.02 : 0.1,
        },
      ],
    }),
  ),
  ...(['F32', 'Q8_0'] as const).map(
    (t): RefModel => ({
      name: `tiny-phi3-${t}`,
      spec: presetSpec('tiny-phi3', t),
      covers:
        'phi3 LongRoPE (short factors at 256 cells, long at 1024), partial rotary, a sliding window llama.cpp ignores',
      refs: [
        {
          file: `tiny-phi3-${t}-ctx256.ref.json`,
          input: 'prompts.json',
          ctx: 256,
          kind: 'logits',
          tol: t === 'F32' ? 0.02 : 0.1,
        },
        {
          file: `tiny-phi3-${t}-ctx1024.ref.json`,
          input: 'prompts.json',
          ctx: 1024,
          kind: 'logits',
          tol: t === 'F32' ? 0.02 : 0.1,
        },
      ],
    }),
  ),
  ...(['F32', 'Q8_0'] as const).map(
    (t): RefModel => ({
      name: `tiny-gemma-embedding-${t}`,
      spec: presetSpec('tiny-gemma-embedding', t),
      covers: 'EmbeddingGemma: bidirectional attention, symmetric window, mean pooling, dense projections',
      refs: [
        { file: `tiny-gemma-embedding-${t}.ref.json`, input: 'texts.json', ctx: 256, kind: 'embedding', tol: 1e-4 },
      ],
    }),
  ),
  {
    name: 'tiny-gemma3-w512-F32',
    spec: gemma3Window512(),
    covers: 'a 512-token window cutting a prompt of ~860 tokens, evaluated in ubatches of 64',
    refs: [
      { file: 'tiny-gemma3-w512-F32-long.ref.json', input: 'long-prompt.json', ctx: 1024, kind: 'logits', tol: 0.02 },
    ],
  },
];
