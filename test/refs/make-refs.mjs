// Regenerates the references of one set of generated models (test/refs/<set>/): generates
// each model with llama-ts's seeded generator (the specs its test uses, from
// test/helpers/<set>-ref-models.ts), then asks llama.cpp through node-llama-cpp 3.21.1 for
// its answers. Run from the repository root after `npm run build`:
//   node test/refs/make-refs.mjs <swa|q8|variants|variants-b|recurrent> [REF_MJS] [EMBED_REF_MJS] [--only NAME,...]
// REF_MJS: ../shared/tools/ref.mjs or a copy (logits, top-10, teacher-forced greedy);
// EMBED_REF_MJS: test/refs/swa/embed-ref.mjs (pooled embeddings). Both expect node-llama-cpp
// where `npm run bench:vs` installs it (NLC_DIR). --only: remake just these models' (or
// ../shared models') references, keeping the others' and their manifest entries. Models go
// to a temporary folder; the set's models.json gets their SHA-256 (and that of the ../shared
// models a set also has references for).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

// per set: its module in dist/test/helpers/, the generated models, and references of
// ../shared models (their SHA-256 too)
const SETS = {
  swa: ['swa-ref-models', 'REF_MODELS'],
  q8: ['q8-ref-models', 'Q8_REF_MODELS', 'Q8_FIXTURE_REFS'],
  variants: ['variant-ref-models', 'VARIANT_MODELS'],
  'variants-b': ['variants-b-ref-models', 'REF_MODELS'],
  recurrent: ['recurrent-ref-models', 'REF_MODELS'],
};
const argv = process.argv.slice(2);
const onlyAt = argv.indexOf('--only');
const only = onlyAt >= 0 ? new Set(argv.splice(onlyAt, 2)[1].split(',')) : null;
const set = argv[0];
if (!(set in SETS)) {
  throw new Error(`usage: make-refs.mjs <${Object.keys(SETS).join('|')}> [REF_MJS] [EMBED_REF_MJS] [--only NAME,...]`);
}
const root = join(fileURLToPath(new URL('.', import.meta.url)), '../..');
const here = join(root, 'test/refs', set);
const { generateModel } = await import(join(root, 'dist/src/generator/index.js'));
const [file, modelsName, fixturesName] = SETS[set];
const mod = await import(join(root, `dist/test/helpers/${file}.js`));
const models = mod[modelsName];
const fixtures = fixturesName ? mod[fixturesName] : [];
const refTool = argv[1] ?? join(root, '../shared/tools/ref.mjs');
const embedTool = argv[2] ?? join(root, 'test/refs/swa/embed-ref.mjs');
const manifestPath = join(here, 'models.json');
const old = only ? JSON.parse(readFileSync(manifestPath, 'utf8')) : {};
const manifest = {};
/** With --only, whether `name` is left as it is (its old manifest entry kept). */
const skip = (name) => {
  if (!only || only.has(name)) return false;
  if (old[name]) manifest[name] = old[name];
  return true;
};
const run = (file, args, tmp) => {
  process.stderr.write(`${file}: node ${args.map((a) => (tmp ? a.replace(tmp, '$TMP') : a)).join(' ')}\n`);
  execFileSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
};
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-refs-'));
try {
  for (const m of models) {
    if (skip(m.name)) continue;
    const path = join(dir, `${m.name}.gguf`);
    generateModel(m.spec, path);
    const sha256 = createHash('sha256').update(readFileSync(path)).digest('hex');
    manifest[m.name] = { sha256 };
    for (const r of m.refs) {
      const out = join(here, r.file);
      const input = join(here, r.input);
      const args =
        r.kind === 'embedding'
          ? [embedTool, path, input, out, '--ctx', String(r.ctx)]
          : [refTool, path, input, out, '--ctx', String(r.ctx), '--no-second'];
      run(r.file, args, dir);
    }
  }
  for (const f of fixtures) {
    if (skip(f.shared)) continue;
    const path = join(root, '../shared', f.shared);
    manifest[f.shared] = { sha256: createHash('sha256').update(readFileSync(path)).digest('hex') };
    run(f.file, [refTool, path, join(here, 'prompts.json'), join(here, f.file), '--ctx', '256', '--no-second']);
  }
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
