// The llama-server test-suite harness (bench/llama-server-suite): llama-server's command line
// as llama.cpp's tools/server/tests/utils.py writes it becomes serve's, with the Hugging Face
// names mapped to local files; pytest's JUnit report becomes per-file counts; the pytest
// plugin skips what is not available offline.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadModelMap, ShimError, translateArgs } from '../bench/llama-server-suite/flags.js';
import { countJUnit } from '../bench/llama-server-suite/run.js';
import { REPO_ROOT } from './helpers/shared.js';

const MODELS = loadModelMap();

test("utils.py's tinyllama2 preset becomes serve's flags", () => {
  const argv = [
    '--host', '127.0.0.1', '--port', '8080', '--temp', '0.8', '--seed', '42',
    '--hf-repo', 'ggml-org/test-model-stories260K', '--batch-size', '32', '--no-slots',
    '--alias', 'tinyllama-2', '--ctx-size', '512', '--parallel', '2', '--n-predict', '64', '--no-jinja',
  ]; // biome-ignore format: one utils.py command line
  const none = translateArgs(argv, new Set(), MODELS, '/models', '/suite');
  assert.deepEqual(none.argv, [
    '--host', '127.0.0.1', '--port', '8080', '--batch-size', '32', '--alias', 'tinyllama-2',
    '--ctx-size', '512', '--parallel', '2', '--no-context-shift', '--model', '/models/stories260K.gguf',
  ]); // biome-ignore format: the translation
  assert.deepEqual(none.notes, [
    '--temp dropped: serve has no such option yet',
    '--seed dropped: serve has no such option yet',
    '--no-slots dropped: serve has no such option yet',
    '--n-predict dropped: serve has no such option yet',
    '--no-jinja ignored: chat templates always run as Jinja',
  ]);
  // once serve lists a flag in its help, it is passed on
  const some = translateArgs(argv, new Set(['--temp', '--seed', '--n-predict']), MODELS, '/models', '/suite');
  assert.deepEqual(some.argv.slice(4, 8), ['--temp', '0.8', '--seed', '42']);
  assert.ok(some.argv.join(' ').includes('--n-predict 64'));
});

test('context shift, model files, chat template files, aliases', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-suite-'));
  writeFileSync(join(dir, 't.jinja'), '{{ messages[0].content }}');
  const t = translateArgs(
    [
      '--model',
      'm.gguf',
      '--context-shift',
      '--chat-template-file',
      't.jinja',
      '-ctk',
      'q8_0',
      '--embedding',
      '--draft',
      '4',
    ],
    new Set(),
    MODELS,
    '/models',
    dir,
  );
  assert.deepEqual(t.argv, [
    '--chat-template',
    '{{ messages[0].content }}',
    '--embeddings',
    '--draft-max',
    '4',
    '--model',
    join(dir, 'm.gguf'),
  ]);
  const split = translateArgs(
    ['--hf-repo', 'ggml-org/models', '--hf-file', 'tinyllamas/stories260K.gguf'],
    new Set(),
    MODELS,
    '/m',
    '/',
  );
  assert.deepEqual(split.argv, ['--no-context-shift', '--model', '/m/stories260K.gguf']);
});

test('an unavailable model or an unknown flag is an error, not a silent default', () => {
  const t = (argv: string[]) => () => translateArgs(argv, new Set(), MODELS, '/m', '/');
  assert.throws(t(['--hf-repo', 'ggml-org/models', '--hf-file', 'bert-bge-small/ggml-model-f16.gguf']), ShimError);
  assert.throws(
    t(['--hf-repo', 'ggml-org/models', '--hf-file', 'bert-bge-small/ggml-model-f16.gguf']),
    /not available offline/,
  );
  assert.throws(t(['--frobnicate']), /not in the shim's table/);
  assert.throws(t(['--port']), /needs a value/);
});

test("utils.py's router preset (no model) becomes serve's router mode, the suite's names in a preset", () => {
  const argv = [
    '--host',
    '127.0.0.1',
    '--port',
    '8080',
    '--models-max',
    '2',
    '--no-models-autoload',
    '--ctx-size',
    '1024',
  ];
  const r = translateArgs(
    argv,
    new Set(),
    { 'ggml-org/x-GGUF:Q8_0': 'x.gguf', 'ggml-org/models/y.gguf': 'y.gguf' },
    '/m',
    '/',
  );
  const i = r.argv.indexOf('--models-preset');
  assert.deepEqual(r.argv.slice(0, i), [...argv, '--no-context-shift']);
  // a repository name is a model; a REPO/FILE key is an --hf-file pair, not a name
  assert.equal(
    readFileSync(r.argv[i + 1]!, 'utf8').replace(/^;.*\n/, ''),
    'version = 1\n\n[ggml-org/x-GGUF:Q8_0]\nmodel = /m/x.gguf\n',
  );
  rmSync(r.argv[i + 1]!);
});

test("pytest's JUnit report as per-file counts", () => {
  const xml = `<testsuite>
<testcase classname="unit.test_basic" name="test_a" time="1"/>
<testcase classname="unit.test_basic" name="test_b" time="1"><failure message="assert -1 == 42&#10;more">x</failure></testcase>
<testcase classname="unit.test_basic" name="test_c" time="1"><skipped message="model"/></testcase>
<testcase classname="unit.test_tokenize" name="test_d" time="1"><error message="boom &amp; bust">y</error></testcase>
</testsuite>`;
  const c = countJUnit(xml);
  assert.deepEqual(c.get('unit/test_basic.py'), {
    passed: 1,
    failed: 1,
    skipped: 1,
    failures: ['test_b: assert -1 == 42'],
  });
  assert.deepEqual(c.get('unit/test_tokenize.py'), {
    passed: 0,
    failed: 1,
    skipped: 0,
    failures: ['test_d: boom & bust'],
  });
});

const PYTHON = '/usr/bin/python3';
const HAS_PYTEST = existsSync(PYTHON) && spawnSync(PYTHON, ['-c', 'import pytest'], { stdio: 'ignore' }).status === 0;

test('the pytest plugin: a download the suite would fetch is a skip when the file is not at hand, used when it is', {
  skip: HAS_PYTEST ? false : `needs ${PYTHON} with pytest`,
}, () => {
  // a stand-in suite: utils.py with what the plugin patches, and a test that downloads in its setup
  const dir = mkdtempSync(join(tmpdir(), 'suite-plugin-'));
  writeFileSync(
    join(dir, 'utils.py'),
    [
      'class ServerPreset:',
      '    @staticmethod',
      '    def load_all(): raise RuntimeError("would download every preset")',
      'class ServerProcess:',
      '    def start(self): pass',
      'def download_file(url, output_file_path=None):',
      '    raise RuntimeError("network")',
      '',
    ].join('\n'),
  );
  writeFileSync(
    join(dir, 'test_dl.py'),
    [
      'import os, utils',
      'def test_missing():',
      '    utils.download_file("https://example.invalid/a/missing.gguf")',
      'def test_present():',
      '    open(os.path.join("tmp", "present.gguf"), "w").close()',
      '    try:',
      '        utils.download_file("https://example.invalid/a/present.gguf")',
      '    except RuntimeError as e:',
      '        assert str(e) == "network"  # the real download_file, reached: the file was at hand',
      '',
    ].join('\n'),
  );
  const xml = join(dir, 'report.xml');
  const r = spawnSync(
    PYTHON,
    [
      '-m',
      'pytest',
      '-p',
      'llama_ts_suite',
      '-p',
      'no:cacheprovider',
      `--junitxml=${xml}`,
      '-o',
      'junit_family=xunit1',
      'test_dl.py',
    ],
    {
      cwd: dir,
      encoding: 'utf8',
      env: { ...process.env, PYTHONPATH: join(REPO_ROOT, 'bench', 'llama-server-suite') },
    },
  );
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const body = readFileSync(xml, 'utf8');
  assert.match(body, /name="test_missing"[^>]*>\s*<skipped[^>]*message="[^"]*missing\.gguf \(not available offline\)/);
  assert.deepEqual(countJUnit(body).get('test_dl.py'), { passed: 1, failed: 0, skipped: 1, failures: [] });
});
