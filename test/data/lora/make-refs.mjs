// Regenerates the LoRA references in this folder from llama.cpp, through node-llama-cpp
// 3.21.1 (installed outside the repository: NLC_DIR, default
// ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1) and its context `lora` option. Needs
// `npm run build` first. For every entry of specs.ts: the generated model (ensureModel,
// the shared model cache), its generated adapters (generateLora, written to a temporary
// folder), and for each adapter set and prompt the top-10 next-token log-probabilities
// [id, logprob, prob] at temperature 1 after evaluating the prompt (one thread, F16 cache).
//   node test/data/lora/make-refs.mjs [NAME...]      -> <name>.json per entry (or those named)
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const nlcDir = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const { getLlama, LlamaLogLevel } = await import(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
const { ensureModel, generateLora } = await import(`${root}dist/src/generator/index.js`);
const { LORA_REFS } = await import(`${root}dist/test/data/lora/specs.js`);

const sha = (p) => createHash('sha256').update(readFileSync(p)).digest('hex');
const tmp = mkdtempSync(join(tmpdir(), 'lora-refs-'));
try {
  const only = process.argv.slice(2);
  for (const spec of LORA_REFS.filter((s) => only.length === 0 || only.includes(s.name))) {
    const modelPath = ensureModel(spec.preset, spec.type);
    const files = {};
    for (const [name, s] of Object.entries(spec.adapters))
      files[name] = generateLora(modelPath, s, join(tmp, `${name}.gguf`)).path;
    const model = await llama.loadModel({ modelPath, gpuLayers: 0, useMmap: false });
    const out = [];
    for (const combo of spec.combos) {
      const adapters = combo.map(([name, scale]) => ({ filePath: files[name], scale }));
      const ctx = await model.createContext({
        contextSize: 128,
        batchSize: 128,
        threads: 1,
        sequences: 1,
        ...(adapters.length > 0 ? { lora: { adapters } } : {}),
      });
      const seq = ctx.getSequence();
      const cases = [];
      for (const tokens of spec.prompts) {
        await seq.clearHistory();
        const input = tokens.map((t, i) =>
          i === tokens.length - 1
            ? [t, { generateNext: { probabilities: true, options: { temperature: 1, topK: 0, topP: 1, minP: 0 } } }]
            : t,
        );
        const res = await seq.controlledEvaluate(input);
        const probs = [...res[tokens.length - 1].next.probabilities.entries()].sort(
          (a, b) => b[1] - a[1] || a[0] - b[0],
        );
        cases.push({ tokens, top10: probs.slice(0, 10).map(([t, p]) => [t, +Math.log(p).toFixed(6), +p.toFixed(6)]) });
      }
      await ctx.dispose();
      out.push({ adapters: combo.map(([name, scale]) => ({ name, scale })), cases });
    }
    await model.dispose();
    const doc = {
      reference: `llama.cpp via node-llama-cpp 3.21.1 (bundled ${llama.llamaCppRelease.repo}@${llama.llamaCppRelease.release}, CPU, 1 thread), context option lora.adapters; top10: [id, logprob, prob]`,
      model: { preset: spec.preset, type: spec.type, sha256: sha(modelPath) },
      adapters: Object.fromEntries(
        Object.entries(files).map(([n, p]) => [n, { spec: spec.adapters[n], sha256: sha(p) }]),
      ),
      combos: out,
    };
    writeFileSync(join(here, `${spec.name}.json`), `${JSON.stringify(doc, null, 1)}\n`);
    console.log(`${spec.name}.json: ${out.length} adapter sets`);
  }
} finally {
  rmSync(tmp, { recursive: true, force: true });
}
