// Fidelity for what ../shared/fixtures/archs leaves out, against references made with
// llama.cpp (node-llama-cpp 3.21.1) for generated models (test/refs/swa/, made by
// test/refs/make-refs.mjs swa): Gemma 4's per-layer embeddings, shared-KV layers, full layers
// without attn_v and layer output scales; Phi-3's LongRoPE (short and long factors by
// context size) and its ignored sliding window; EmbeddingGemma's embeddings; a 512-token
// window cutting a prompt of ~860 tokens, evaluated in ubatches of 64 so the window's ring
// of cells wraps. Greedy tokens are generated one decode at a time through the cache, at
// 1, 2 and 3 threads with the same bits. No ../shared needed: the models are generated.

import { join } from 'node:path';
import { refModelTests } from './helpers/ref-models-test.js';
import { REPO_ROOT } from './helpers/shared.js';
import { REF_MODELS } from './helpers/swa-ref-models.js';

refModelTests(join(REPO_ROOT, 'test/refs/swa'), REF_MODELS);
