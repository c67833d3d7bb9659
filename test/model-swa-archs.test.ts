// Fidelity of the sliding-window architectures and their relatives against llama.cpp's
// answers in ../shared/fixtures/archs/{gemma2,gemma3,gemma4,phi3,smollm3}-{F32,Q8_0}
// (windows of 8 tokens, smaller than prompt + 16 generated tokens, so they cut): prompt
// tokens, top-10 logits relative to llama.cpp's top-1 within 0.02 (F32) / 0.1 (Q8_0),
// greedy tokens generated one decode at a time through the cache (identical except at
// near-ties), on the default device at 1, 2 and 3 threads with bit-identical logits at
// every step, and on the reference kernels (ggml-cpu numerics).

import { archFixtureTests } from './helpers/arch-fixture-tests.js';

archFixtureTests('swa', ['gemma2', 'gemma3', 'gemma4', 'phi3', 'smollm3']);
