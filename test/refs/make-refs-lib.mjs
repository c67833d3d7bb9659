// What test/refs/swa/make-refs.mjs and test/refs/variants/make-refs.mjs share: generate
// each model of a RefModel list with llama-ts's seeded generator into a temporary folder,
// record its SHA-256 in the folder's models.json, and ask llama.cpp (node-llama-cpp 3.21.1)
// for each reference: ref.mjs for logits, top-10 and teacher-forced greedy tokens,
// embed-ref.mjs (test/refs/swa/) for pooled embeddings. Run after `npm run build`.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/**
 * here: the references' folder; models: its RefModel list; refTool / embedTool: paths of
 * ref.mjs and embed-ref.mjs (defaults: ../shared/tools/ref.mjs, test/refs/swa/embed-ref.mjs).
 */
export async function makeRefs(here, models, refTool, embedTool) {
  const { generateModel } = await import(join(root, 'dist/src/generator/index.js'));
  refTool ??= join(root, '../shared/tools/ref.mjs');
  embedTool ??= join(root, 'test/refs/swa/embed-ref.mjs');
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-refs-'));
  const manifest = {};
  try {
    for (const m of models) {
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
        process.stderr.write(`${r.file}: node ${args.map((a) => a.replace(dir, '$TMP')).join(' ')}\n`);
        execFileSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'] });
      }
    }
    writeFileSync(join(here, 'models.json'), `${JSON.stringify(manifest, null, 1)}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
