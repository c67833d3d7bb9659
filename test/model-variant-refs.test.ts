// Tensor layouts llama.cpp's loaders take for the dense and embedding architectures besides
// the one its converters write, against references made with llama.cpp (node-llama-cpp
// 3.21.1) for generated models (test/refs/variants/, made by test/refs/make-refs.mjs variants): q/k/v
// fused into attn_qkv or separate (phi3), biases on every projection (llama), LongRoPE on
// llama, qwen2's output bias, for llama, phi3, qwen2, qwen3, smollm3, gemma2, gemma3, bert and
// EmbeddingGemma. Logits, teacher-forced greedy tokens and pooled embeddings at 1, 2 and 3
// threads with the same bits. No ../shared needed: the models are generated.

import { join } from 'node:path';
import { refModelTests } from './helpers/ref-models-test.js';
import { REPO_ROOT } from './helpers/shared.js';
import { VARIANT_MODELS } from './helpers/variant-ref-models.js';

refModelTests(join(REPO_ROOT, 'test/refs/variants'), VARIANT_MODELS);
