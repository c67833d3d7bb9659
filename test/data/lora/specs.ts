// The generated models, adapters and scales the LoRA references were made for (read by
// test/model-lora.test.ts and by make-refs.mjs, which writes one JSON per entry).
import type { FileTypeName, LoraSpec } from '../../../src/generator/index.js';

export interface LoraRefSpec {
  name: string;
  preset: string;
  type: FileTypeName;
  /** Allowed difference of top-10 logits relative to the top token. */
  tolerance: number;
  adapters: Record<string, LoraSpec>;
  /** Adapter sets to compare, each [name, scale] pairs ([] = the base model). */
  combos: [string, number][][];
  /** Prompts as token ids (BOS first). */
  prompts: number[][];
}

const COMBOS: [string, number][][] = [
  [],
  [['A', 0.5]],
  [['A', 1]],
  [['B', 1]],
  [
    ['A', 1],
    ['B', 0.5],
  ],
];

export const LORA_REFS: LoraRefSpec[] = [
  {
    name: 'tiny-llama-F32',
    preset: 'tiny-llama',
    type: 'F32',
    tolerance: 0.02,
    adapters: {
      A: {
        targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down', 'output'],
        rank: 8,
        alpha: 16,
        seed: 11,
      },
      B: { targets: ['attn_q', 'ffn_down', 'token_embd'], rank: 4, alpha: 0, type: 'F16', seed: 12 },
    },
    combos: COMBOS,
    prompts: [
      [1, 300, 301, 302, 310, 400, 290, 280],
      [1, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 500, 501, 502],
    ],
  },
  {
    name: 'tiny-qwen2-F32',
    preset: 'tiny-qwen2',
    type: 'F32',
    tolerance: 0.02,
    adapters: {
      // (tied output: nothing to adapt there)
      A: {
        targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'],
        rank: 8,
        alpha: 8,
        seed: 31,
      },
      B: { targets: ['attn_v', 'ffn_up'], rank: 4, alpha: 8, type: 'BF16', seed: 32 },
    },
    combos: COMBOS,
    prompts: [
      [300, 301, 302, 310, 400, 290, 280],
      [270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 500, 501, 502],
    ],
  },
  {
    name: 'tiny-llama-Q8_0',
    preset: 'tiny-llama',
    type: 'Q8_0',
    tolerance: 0.1,
    adapters: {
      // A's rows (64 wide) are Q8_0; B's (8 wide) fall back to F16
      A: {
        targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down', 'output'],
        rank: 8,
        alpha: 8,
        type: 'Q8_0',
        seed: 21,
      },
      B: { targets: ['attn_v', 'ffn_up', 'token_embd'], rank: 4, alpha: 8, seed: 22 },
    },
    combos: COMBOS,
    prompts: [
      [1, 300, 301, 302, 310, 400, 290, 280],
      [1, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 500, 501, 502],
    ],
  },
  // the sliding-window and fused-projection architectures' products (builder mm/linear)
  {
    name: 'tiny-gemma3-F32',
    preset: 'tiny-gemma3',
    type: 'F32',
    tolerance: 0.02,
    adapters: {
      // (tied output: llama.cpp would apply a token_embd pair to the output product too, and
      // fails on its shape, so none here)
      A: {
        targets: ['attn_q', 'attn_k', 'attn_v', 'attn_output', 'ffn_gate', 'ffn_up', 'ffn_down'],
        rank: 8,
        alpha: 16,
        seed: 41,
      },
      B: { targets: ['attn_q', 'ffn_down'], rank: 4, alpha: 0, type: 'F16', seed: 42 },
    },
    combos: COMBOS,
    prompts: [
      [2, 300, 301, 302, 310, 400, 290, 280],
      [2, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 500, 501, 502],
    ],
  },
  {
    name: 'tiny-phi3-F32',
    preset: 'tiny-phi3',
    type: 'F32',
    tolerance: 0.02,
    adapters: {
      // fused attn_qkv and gate+up (ffn_up). (B in BF16 differs by 0.024 on one prompt at
      // scale 1, where F16 differs by 1e-4: ggml-cpu's BF16 dot products on this CPU
      // (AVX512-BF16) likely round otherwise; tiny-qwen2 keeps a BF16 adapter, within 0.006)
      A: { targets: ['attn_qkv', 'attn_output', 'ffn_up', 'ffn_down'], rank: 8, alpha: 16, seed: 51 },
      B: { targets: ['attn_qkv', 'ffn_down'], rank: 4, alpha: 8, type: 'F16', seed: 52 },
    },
    combos: COMBOS,
    prompts: [
      [1, 300, 301, 302, 310, 400, 290, 280],
      [1, 270, 271, 272, 273, 274, 275, 276, 277, 278, 279, 500, 501, 502],
    ],
  },
];
