// Regenerates test/refs/gemma4-text/*.ref.json: llama.cpp build 10257's answers (through
// @fugood/llama.node 1.7.15, CPU, one process per call: ../mtmd/oracle-case.mjs with no
// projector) for a generated Gemma 4 text model, under three settings of the KV cache and
// flash attention. Each case keeps the prompt's tokens and the first token's top-10 as
// [token text, log-probability] (llama.node names tokens by text; the test maps them back).
// Run from the repository root after `npm run build`:
//   node test/refs/gemma4-text/make-refs.mjs
// LLAMA_NODE_DIR: where llama.node is installed (default ~/.cache/llama-ts/oracles/llama.node).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const here = join(root, 'test/refs/gemma4-text');
const lnDir = process.env.LLAMA_NODE_DIR ?? join(homedir(), '.cache/llama-ts/oracles/llama.node');
const lnVersion = JSON.parse(readFileSync(join(lnDir, 'node_modules/@fugood/llama.node/package.json'), 'utf8')).version;
const { generateModel, presetSpec } = await import(join(root, 'dist/src/generator/index.js'));

// the settings llama.cpp runs by default on the CPU (an F16 cache, flash attention on), an
// F32 cache without flash attention (no F16 rounding anywhere), and an F32 cache with it
// (llama.cpp casts the F32 K/V to F16 before flash attention)
const SETTINGS = {
  default: { flash_attn_type: 'auto' },
  'f32-cache': { cache_type_k: 'f32', cache_type_v: 'f32', flash_attn_type: 'off' },
  'f32-cache-flash': { cache_type_k: 'f32', cache_type_v: 'f32', flash_attn_type: 'on' },
};
const PROMPTS = [
  'Once upon a time',
  'The little dog ran to the park and',
  'Lily and Ben were friends. One day they',
  'He said, "I want to play!"',
];
// seed 20: the text half of the gemma4v pair (test/helpers/mtmd-gen-pairs.ts), here with the
// synthetic vocabulary
const models = [{ name: 'tiny-gemma4-s20-F32', spec: presetSpec('tiny-gemma4', 'F32', { seed: 20 }) }];

const dir = mkdtempSync(join(tmpdir(), 'llama-ts-gemma4-text-'));
try {
  for (const { name, spec } of models) {
    const path = join(dir, `${name}.gguf`);
    generateModel(spec, path);
    const settings = {};
    for (const [key, s] of Object.entries(SETTINGS)) {
      settings[key] = {
        loadModel: s,
        cases: PROMPTS.map((prompt) => {
          const text = execFileSync(
            process.execPath,
            [
              join(root, 'test/refs/mtmd/oracle-case.mjs'),
              lnDir,
              path,
              '-',
              JSON.stringify({ prompt }),
              'top10',
              JSON.stringify(s),
            ],
            { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 26 },
          );
          const line = text.split('\n').find((l) => l.startsWith('@@RESULT '));
          if (!line) throw new Error(`${name}/${key} '${prompt}': no result from the oracle`);
          const r = JSON.parse(line.slice(9));
          return { prompt, tokens: r.prompt_tokens, top10: r.top10.map(([t, p]) => [t, +Math.log(p).toFixed(6)]) };
        }),
      };
      process.stderr.write(`${name}: ${key}\n`);
    }
    const ref = {
      what: 'gemma4 text (E2B-like): per-layer embeddings, 2 shared-KV layers, full layers without attn_v, layer output scales, window 8',
      spec,
      sha256: createHash('sha256').update(readFileSync(path)).digest('hex'),
      oracle: `@fugood/llama.node@${lnVersion} (prebuilt llama.cpp), CPU, n_threads 1, n_ctx 4096`,
      notes: [
        'tokens: llama.node tokenize() (no BOS; completion() adds it). top10: [token text, ln p] of the first generated token (temperature 1, no truncation).',
        'settings: loadModel options over ../mtmd/oracle-case.mjs defaults.',
      ],
      settings,
    };
    writeFileSync(join(here, `${name}.ref.json`), `${JSON.stringify(ref, null, 1)}\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
// in the repository's JSON style (npm run lint checks it)
execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', here], { stdio: 'ignore' });
