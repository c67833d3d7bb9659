// Regenerates test/refs/moe/*.ref.json: each case's model is generated (seeded) into a
// temporary folder and evaluated by llama.cpp through ../shared/tools/ref.mjs
// (node-llama-cpp 3.21.1, installed where bench:vs puts it). The reference records the
// spec and the file's SHA-256, so the test regenerates exactly that file.
//   node dist/test/refs/make-moe-refs.js [NAME...]

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateModel } from '../../src/generator/index.js';
import { MOE_REF_CASES } from './moe-cases.js';

export const PROMPTS = [
  'Once upon a time',
  'The little dog ran to the park and',
  'Lily and Ben were friends. One day,',
  'He said, "I want to play!"',
];

const repo = fileURLToPath(new URL('../../../', import.meta.url));
const refTool = process.env.REF_TOOL ?? join(repo, '..', 'shared', 'tools', 'ref.mjs');
const outDir = join(repo, 'test', 'refs', 'moe');
const only = process.argv.slice(2);
const dir = mkdtempSync(join(tmpdir(), 'moe-refs-'));
try {
  writeFileSync(join(dir, 'prompts.json'), JSON.stringify(PROMPTS));
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
    writeFileSync(
      join(outDir, `${c.name}.ref.json`),
      `${JSON.stringify({ what: c.what, spec: c.spec, sha256, ...ref }, null, 1)}\n`,
    );
    process.stdout.write(`${c.name}: written\n`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
