// Fidelity of the recurrent and hybrid architectures against llama.cpp's answers in
// ../shared/fixtures/archs/{qwen35,qwen35moe,lfm2,granitehybrid}-{F32,Q8_0} (Gated DeltaNet, short
// convolutions, Mamba-2, each beside attention layers): prompt tokens, top-10 logits
// relative to llama.cpp's top-1 within 0.02 (F32) / 0.1 (Q8_0), greedy tokens generated
// one decode at a time through the recurrent state (llama.cpp's references re-evaluate
// prompt + prefix at every step; identical except at near-ties), on the default device at
// 1, 2 and 3 threads with bit-identical logits at every step, and on the reference kernels.

import { archFixtureTests } from './helpers/arch-fixture-tests.js';

archFixtureTests('recurrent', ['qwen35', 'qwen35moe', 'lfm2', 'granitehybrid']);
