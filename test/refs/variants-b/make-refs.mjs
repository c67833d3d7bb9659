// Regenerates the references in this folder: generates each model with llama-ts's seeded
// generator (the same specs test/model-variants-b-refs.test.ts uses), then asks llama.cpp
// through node-llama-cpp 3.21.1 for its answers. Run from the repository root after
// `npm run build`:
//   NLC_DIR=~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1 node test/refs/variants-b/make-refs.mjs [REF_MJS] [--only NAME,...]
// REF_MJS: ../shared/tools/ref.mjs (logits, top-10, teacher-forced greedy). --only: remake
// just these models' references (e.g. tiny-qwen35-sections-wrap-F32), keeping the others' and their
// manifest entries. Models go to a temporary folder.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '../../..');
const { generateModel } = await import(join(root, 'dist/src/generator/index.js'));
const { REF_MODELS } = await import(join(root, 'dist/test/helpers/variants-b-ref-models.js'));
const args = process.argv.slice(2);
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? new Set(args.splice(onlyAt, 2)[1].split(',')) : null;
const refTool = args[0] ?? join(root, '../shared/tools/ref.mjs');
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-variants-b-refs-'));
const manifestPath = join(here, 'models.json');
const old = only ? JSON.parse(readFileSync(manifestPath, 'utf8')) : {};
const manifest = {};
try {
  for (const m of REF_MODELS) {
    if (only && !only.has(m.name)) {
      if (old[m.name]) manifest[m.name] = old[m.name];
      continue;
    }
    const path = join(dir, `${m.name}.gguf`);
    generateModel(m.spec, path);
    const sha256 = createHash('sha256').update(readFileSync(path)).digest('hex');
    manifest[m.name] = { sha256 };
    for (const r of m.refs) {
      const out = join(here, r.file);
      const input = join(here, r.input);
      const cmd = [refTool, path, input, out, '--ctx', String(r.ctx), '--no-second'];
      process.stderr.write(`${r.file}: node ${cmd.map((a) => a.replace(dir, '$TMP')).join(' ')}\n`);
      execFileSync(process.execPath, cmd, { stdio: ['ignore', 'inherit', 'inherit'] });
    }
  }
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
