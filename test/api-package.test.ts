// The package entry points, as users load them: `require('llama-ts')` (the CommonJS
// facade, async loadModel) and `import ... from 'llama-ts'`, each in a child process that
// must exit by itself after release() (and also when a context is never released: the
// engine worker never keeps the process alive). The .d.cts types check with tsc.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const STORIES = sharedPath('models/stories260K.gguf');

function node(args: string[]) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 30000 });
  return { ...r, ms: performance.now() - t0 };
}

describe('entry points', { skip: STORIES ? false : missingShared('models/stories260K.gguf') }, () => {
  const body = (lib: string) => `
    const ctx = await ${lib}.loadModel({ model: ${JSON.stringify(STORIES)}, n_threads: 1, n_ctx: 64 });
    const r = await ctx.completion({ prompt: 'Once upon a time', n_predict: 6, temperature: 0 });
    console.log(JSON.stringify({ text: r.text, info: ctx.getSystemInfo().startsWith('llama-ts') }));`;

  test('require() (CommonJS): loadModel, completion, release; the process exits', () => {
    const r = node([
      '-e',
      `const llama = require('llama-ts');
       (async () => { ${body('llama')} await ctx.release();
         const m = await llama.load();
         console.log(typeof m.LlamaError, typeof llama.loadLlamaModelInfo);
       })().catch((e) => { console.error(e); process.exit(3); });`,
    ]);
    assert.equal(r.status, 0, r.stderr);
    const [json, kinds] = r.stdout.trim().split('\n');
    assert.deepEqual(JSON.parse(json!), { text: ', there was a little g', info: true });
    assert.equal(kinds, 'function function');
  });

  test('import (ES module); a context never released does not keep the process alive', () => {
    const r = node(['--input-type=module', '-e', `import * as llama from 'llama-ts'; ${body('llama')}`]);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { text: ', there was a little g', info: true });
    assert.ok(r.ms < 20000, `${r.ms} ms`);
  });

  test('errors reach CommonJS callers as LlamaErrors with a code', () => {
    const r = node([
      '-e',
      `require('llama-ts').loadModel({ model: '/nonexistent.gguf' }).catch((e) => console.log(e.name, e.code, e.message));`,
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout.trim(), 'LlamaError ERR_MODEL model file not found: /nonexistent.gguf');
  });

  test('TypeScript: a CommonJS consumer type-checks against cjs/index.d.cts', () => {
    const file = join(REPO_ROOT, 'dist', 'api-package-types.tmp.cts');
    writeFileSync(
      file,
      `import llama = require('llama-ts');
       async function main(): Promise<string> {
         const ctx: llama.LlamaContext = await llama.loadModel({ model: 'm.gguf', n_ctx: 64, embedding: false });
         const r: llama.LlamaCompletionResult = await ctx.completion({ prompt: 'hi', stop: ['\\n'] }, (t) => void t.token);
         const e: llama.EmbeddingResult = await ctx.embedding('x', { embd_normalize: -1 });
         const chat: string = ctx.getFormattedChat([{ role: 'user', text: 'hi' }]);
         return r.text + e.embedding.length + chat + ctx.getModelInfo().desc;
       }
       void main;`,
    );
    try {
      const tsc = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
      const r = node([
        tsc,
        '--noEmit',
        '--strict',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--types',
        'node',
        '--skipLibCheck',
        'false',
        file,
      ]);
      assert.equal(r.status, 0, r.stdout + r.stderr);
    } finally {
      rmSync(file, { force: true });
    }
  });
});

test('the published files leave out test-only code (the model generator, the op harness, the test buffer types)', () => {
  const r = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 60000,
  });
  assert.equal(r.status, 0, r.stderr);
  const files = (JSON.parse(r.stdout) as { files: { path: string }[] }[])[0]!.files.map((f) => f.path);
  assert.ok(files.includes('dist/src/index.js'), 'the entry point is published');
  assert.ok(files.includes('dist/src/backends/cpu/device.js'), 'the cpu device is published');
  const testOnly = files.filter(
    (f) => f.startsWith('dist/src/generator/') || f.startsWith('dist/src/backends/testing/'),
  );
  assert.deepEqual(testOnly, []);
  // nothing published imports what was left out
  for (const f of files.filter((p) => p.endsWith('.js'))) {
    const text = readFileSync(join(REPO_ROOT, f), 'utf8');
    assert.doesNotMatch(text, /from '[./]*(generator|backends\/testing|testing)\//, f);
  }
});
