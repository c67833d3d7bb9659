// Regenerates test/refs/moe/*.ref.json and test/refs/gemma4-moe/*.ref.json: each case's model is generated (seeded) into a
// temporary folder and evaluated by llama.cpp through ../shared/tools/ref.mjs
// (node-llama-cpp 3.21.1, installed where bench:vs puts it); @fugood/llama.node 1.7.15
// (LN_DIR, default /work/oracles/llama-node) adds its own top-10 after each prompt
// (`llama_node_top10`: [token text, log-probability]), a second llama.cpp build. The
// reference records the spec and the file's SHA-256, so the test regenerates exactly that
// file.
//   node dist/test/refs/make-moe-refs.js [NAME...]

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateModel } from '../../src/generator/index.js';
import { openGGUF } from '../../src/gguf/index.js';
import { readVocab, Vocab } from '../../src/vocab/index.js';
import { MOE_REF_CASES } from './moe-cases.js';

export const PROMPTS = [
  'Once upon a time',
  'The little dog ran to the park and',
  'Lily and Ben were friends. One day,',
  'He said, "I want to play!"',
];

/**
 * llama.node's top-10 next tokens (text, log-probability) after a prompt. Its completion
 * takes text only: when ref.mjs's tokens start with a BOS the vocabulary does not add, the
 * BOS's text goes in front (parsed as special); the tokens are checked to be the same (its
 * tokenize() adds no BOS, so up to a leading one) and as many.
 */
const LLAMA_NODE_TOP10 = `
import { createRequire } from 'node:module';
const { loadModel } = createRequire(import.meta.url)(process.env.LN_DIR + '/node_modules/@fugood/llama.node/lib/index.js');
const [model, text, tokens] = process.argv.slice(1);
const want = JSON.parse(tokens);
const ctx = await loadModel({ model, n_ctx: 256, n_threads: 1, n_gpu_layers: 0, use_mmap: false });
const same = (a) => a.length === want.length && a.every((t, i) => t === want[i]);
const got = Array.from((await ctx.tokenize(text)).tokens);
if (!same(got) && !same([want[0], ...got])) throw new Error('llama.node tokens ' + JSON.stringify(got) + ' for ' + JSON.stringify(want));
const r = await ctx.completion({ prompt: text, n_predict: 1, temperature: 1, top_k: 0, top_p: 1, min_p: 0, n_probs: 10, seed: 1 });
if (r.tokens_evaluated !== want.length) throw new Error('llama.node evaluated ' + r.tokens_evaluated + ' tokens, not ' + want.length);
console.log('TOP10 ' + JSON.stringify(r.completion_probabilities[0].probs.map((p) => [p.tok_str, Math.log(p.prob)])));
await ctx.release();
process.exit(0);
`;

const FIXTURES = [
  'qwen3moe-F32',
  'qwen3moe-Q8_0',
  'llama-moe-F32',
  'llama-moe-Q8_0',
  'deepseek2-F32',
  'deepseek2-Q8_0',
  'gpt-oss-F32',
  'gpt-oss-Q8_0',
  'gpt-oss-MXFP4',
];

/** One process per prompt, retried: llama.node 1.7.15 sometimes crashes reloading a model. */
function llamaNodeTop10(model: string, cases: { prompt: string; tokens: number[] }[]): [string, number][][] {
  const file = openGGUF(model);
  const vocab = new Vocab(readVocab(file));
  file.close();
  return cases.map(({ prompt, tokens }) => {
    const bosText = !vocab.addBos && tokens[0] === vocab.bos ? vocab.tokenText(vocab.bos) : '';
    for (let attempt = 1; ; attempt++) {
      try {
        const out = execFileSync(
          process.execPath,
          ['--input-type=module', '-e', LLAMA_NODE_TOP10, model, bosText + prompt, JSON.stringify(tokens)],
          {
            encoding: 'utf8',
            stdio: ['ignore', 'pipe', 'pipe'],
            env: { ...process.env, LN_DIR: process.env.LN_DIR ?? '/work/oracles/llama-node' },
            maxBuffer: 1 << 28,
          },
        );
        return JSON.parse(
          out
            .split('\n')
            .find((l) => l.startsWith('TOP10 '))!
            .slice(6),
        ) as [string, number][];
      } catch (e) {
        if (attempt >= 4) throw e;
      }
    }
  });
}

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const refTool = process.env.REF_TOOL ?? join(repo, '..', 'shared', 'tools', 'ref.mjs');
const refsDir = join(repo, 'test', 'refs');
const outDir = join(refsDir, 'moe');
const only = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), 'moe-refs-'));
try {
  writeFileSync(join(dir, 'prompts.json'), JSON.stringify(PROMPTS));
  // llama.node's answers for the shared MoE fixtures too (test/refs/moe/llama-node-fixtures.json)
  const shared = join(repo, '..', 'shared', 'fixtures', 'archs');
  const fixtures: Record<string, [string, number][][]> = {};
  if (only.length === 0 || only.includes('fixtures')) {
    for (const stem of FIXTURES) {
      const model = join(shared, `${stem}.gguf`);
      const ref = JSON.parse(readFileSync(join(shared, `${stem}.ref.json`), 'utf8')) as {
        cases: { prompt: string; tokens: number[] }[];
      };
      fixtures[stem] = llamaNodeTop10(model, ref.cases);
      process.stdout.write(`${stem}: llama.node answers\n`);
    }
    writeFileSync(join(outDir, 'llama-node-fixtures.json'), `${JSON.stringify(fixtures)}\n`);
  }
  for (const c of MOE_REF_CASES) {
    if (only.length > 0 && !only.includes(c.name)) continue;
    const model = join(dir, `${c.name}.gguf`);
    generateModel(c.spec, model);
    const sha256 = createHash('sha256').update(readFileSync(model)).digest('hex');
    const out = join(dir, `${c.name}.json`);
    execFileSync(process.execPath, [refTool, model, join(dir, 'prompts.json'), out, '--no-second'], {
      stdio: 'inherit',
    });
    const ref = JSON.parse(readFileSync(out, 'utf8'));
    const second = llamaNodeTop10(model, ref.cases);
    ref.cases.forEach((c: { llama_node_top10?: [string, number][] }, i: number) => {
      c.llama_node_top10 = second[i];
    });
    writeFileSync(
      join(refsDir, c.dir ?? 'moe', `${c.name}.ref.json`),
      `${JSON.stringify({ what: c.what, spec: c.spec, sha256, ...ref }, null, 1)}\n`,
    );
    process.stdout.write(`${c.name}: written\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
