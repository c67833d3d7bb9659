// The package entry points, as users load them: `require('llama-ts')` (the CommonJS
// facade, async loadModel) and `import ... from 'llama-ts'`, each in a child process that
// must exit by itself after release() (and also when a context is never released: the
// engine worker never keeps the process alive). The .d.cts types check with tsc.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { Engine } from '../src/api/engine.js';
import { checkModelOptions } from '../src/api/options.js';
import { WEBUI_FILES } from '../src/server/webui.js';
import { tinyLlama } from './helpers/models.js';
import { REPO_ROOT } from './helpers/shared.js';

const MODEL = tinyLlama();

/** The text the children must print: the same completion in this process (the in-process engine). */
async function expectedText(): Promise<string> {
  const engine = new Engine();
  try {
    const ec = await engine.createContext(checkModelOptions({ model: MODEL, n_threads: 1, n_ctx: 64 }));
    return (await ec.completion({ prompt: 'Once upon a time', n_predict: 6, temperature: 0 })).text;
  } finally {
    await engine.close();
  }
}

function node(args: string[], timeout = 30000) {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout });
  return { ...r, ms: performance.now() - t0 };
}

describe('entry points', () => {
  const body = (lib: string) => `
    const ctx = await ${lib}.loadModel({ model: ${JSON.stringify(MODEL)}, n_threads: 1, n_ctx: 64 });
    const r = await ctx.completion({ prompt: 'Once upon a time', n_predict: 6, temperature: 0 });
    console.log(JSON.stringify({ text: r.text, info: ctx.getSystemInfo().startsWith('llama-ts') }));`;

  test('require() (CommonJS): loadModel, completion, release; the process exits', async () => {
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
    assert.deepEqual(JSON.parse(json!), { text: await expectedText(), info: true });
    assert.equal(kinds, 'function function');
  });

  test('import (ES module); a context never released does not keep the process alive', async () => {
    const r = node(['--input-type=module', '-e', `import * as llama from 'llama-ts'; ${body('llama')}`]);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout.trim()), { text: await expectedText(), info: true });
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
         const on: boolean = await ctx.parallel.enable({ n_parallel: 2 });
         const q = await ctx.parallel.completion({ prompt: 'hi', seed: 1 }, (id: number, t) => void (id + t.token));
         const pr: llama.LlamaParallelCompletionResult = await q.promise;
         const st: llama.ParallelStatus = ctx.parallel.getStatus();
         return r.text + e.embedding.length + chat + ctx.getModelInfo().desc + on + pr.requestId + st.n_parallel;
       }
       void main;`,
    );
    try {
      const tsc = join(REPO_ROOT, 'node_modules/typescript/bin/tsc');
      const r = node(
        [
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
        ],
        180000,
      );
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
  for (const f of ['flac.js', 'mpg123.js', 'LICENSES.txt'])
    assert.ok(files.includes(`dist/vendor/${f}`), `dist/vendor/${f} (llama-ts web's audio decoders) is published`);
  const testOnly = files.filter(
    (f) => f.startsWith('dist/src/generator/') || f.startsWith('dist/src/backends/testing/'),
  );
  assert.deepEqual(testOnly, []);
  // the chat page ships prebuilt: every file serve answers with, none of its sources
  for (const f of [...WEBUI_FILES, 'dist/webui/LICENSES.txt']) assert.ok(files.includes(f), `${f} is published`);
  assert.deepEqual(
    files.filter((f) => f.startsWith('webui/') && !WEBUI_FILES.includes(f)),
    [],
  );
  // nothing published imports what was left out
  for (const f of files.filter((p) => p.endsWith('.js'))) {
    const text = readFileSync(join(REPO_ROOT, f), 'utf8');
    assert.doesNotMatch(text, /from '[./]*(generator|backends\/testing|testing)\//, f);
  }
});
