// Fidelity for what ../shared/fixtures/archs leaves out of the recurrent and hybrid
// architectures, against references made with llama.cpp (node-llama-cpp 3.21.1) for
// generated models (test/refs/recurrent/, made by test/refs/make-refs.mjs recurrent): nemotron_h
// (Mamba-2 with groups, squared-ReLU feed-forward, attention without RoPE), the mixtures
// of experts lfm2moe, granitehybrid with experts and nemotron_h_moe, the generator's
// qwen35 / qwen35moe / lfm2 / granitehybrid files, and an 864-token prompt evaluated in
// ubatches of 64 (the recurrent states carried across ubatches; llama.cpp evaluated it in
// its own batches). Greedy tokens are generated one decode at a time through the state,
// at 1, 2 and 3 threads with the same bits; and one run per long model is saved to a
// session mid-generation, loaded into a fresh context and continued, matching llama.cpp's
// greedy tokens too. No ../shared needed: the models are generated.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { modelIdentity } from '../src/api/info.js';
import { loadSession, saveSession } from '../src/api/session.js';
import { openGGUF } from '../src/gguf/index.js';
import { Context, type Model } from '../src/model/index.js';
import { argmax, type RefCase } from './helpers/arch-refs.js';
import { REF_MODELS } from './helpers/recurrent-ref-models.js';
import { refModelTests } from './helpers/ref-models-test.js';
import { REPO_ROOT } from './helpers/shared.js';

// after the 1-thread run of a long prompt: its first case saved mid-generation and restored
const { dir } = refModelTests(join(REPO_ROOT, 'test/refs/recurrent'), REF_MODELS, async (model, cases, r) => {
  if (r.ctx <= 256) return;
  const checked = await sessionRun(model, cases[0], r.tol, r.ctx, 7);
  process.stdout.write(`# ${r.file}: saved after 8 greedy tokens, restored, ${checked} steps checked\n`);
});

/**
 * Prompt, then greedy: after `cut` tokens the sequence is saved to a session file, which a
 * fresh context loads and continues from (the next token, sampled before saving, is
 * decoded there). Each step's argmax is held to llama.cpp's greedy token where its gap
 * allows, and fed back as llama.cpp's (teacher forcing).
 */
async function sessionRun(model: Model, c: RefCase, tol: number, ctxN: number, cut: number): Promise<number> {
  const file = join(dir, `${model.hp.arch}-${cut}.session`);
  const identity = modelIdentity(openGGUF(model.path), model);
  let ctx = new Context(model, { nCtx: ctxN, nUbatch: 64 });
  let checked = 0;
  try {
    await ctx.decode({ tokens: c.tokens });
    let logits = ctx.getLogits(-1);
    const seen = [...c.tokens];
    for (let s = 0; s < c.greedy.length; s++) {
      if (c.greedy_gap[s] > 2 * tol) {
        assert.equal(argmax(logits), c.greedy[s], `session run: step ${s} (cut after ${cut})`);
        checked++;
      }
      if (s === cut) {
        await saveSession(file, ctx, seen, identity);
        ctx.free();
        ctx = new Context(model, { nCtx: ctxN, nUbatch: 64 });
        assert.deepEqual(await loadSession(file, ctx, identity), seen);
      }
      if (s + 1 < c.greedy.length) {
        await ctx.decode({ tokens: [c.greedy[s]] });
        seen.push(c.greedy[s]);
        logits = ctx.getLogits(-1);
      }
    }
  } finally {
    ctx.free();
  }
  return checked;
}
