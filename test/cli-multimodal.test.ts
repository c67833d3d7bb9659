// The CLI with a projector, on the mtmd fixture pair gemma3 (../shared/fixtures/mtmd): `run --mmproj
// --image` evaluates llama.cpp's prompt (28 positions, 16 of them the image) and its first greedy
// tokens; `chat` attaches files with /image and /audio; flags are checked before any model loads.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;
const dir = sharedPath('fixtures/mtmd/gemma3.mmproj.gguf') ? sharedPath('fixtures/mtmd/') : undefined;

function cli(input: string, ...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { input, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

describe('CLI with a projector (gemma3 fixture pair)', { skip: dir ? false : missingShared('fixtures/mtmd') }, () => {
  test("run --mmproj --image: llama.cpp's prompt and first greedy tokens", () => {
    const ref = JSON.parse(readFileSync(`${dir}gemma3.ref.json`, 'utf8'));
    const c = ref.cases.find((x: { name: string }) => x.name === 'mid');
    const r = cli(
      '',
      'run',
      '-m',
      `${dir}gemma3.gguf`,
      '-mm',
      `${dir}gemma3.mmproj.gguf`,
      '--image',
      `${dir}img/${c.images[0]}`,
      '-p',
      c.prompt,
      '-n',
      '4',
      '--temp',
      '0',
      '--json',
    );
    assert.equal(r.code, 0, r.stderr);
    const out = JSON.parse(r.stdout);
    assert.equal(out.prompt_tokens.length, c.n_tokens);
    assert.equal(out.prompt_tokens.filter((t: number) => t === -1).length, c.image_token_counts[0]);
    assert.deepEqual(out.generated_tokens, c.greedy_ids.slice(0, 4));
  });

  test('chat: /image attaches to the next message; /audio without audio support is named', () => {
    const r = cli(
      `/image ${dir}img/gray-40x40.png\n/audio ${dir}img/gray-40x40.png\nWhat is in the picture?\n/image /nonexistent.png\n/exit\n`,
      'chat',
      '-m',
      `${dir}gemma3.gguf`,
      '--mmproj',
      `${dir}gemma3.mmproj.gguf`,
      '-n',
      '2',
      '--temp',
      '0',
    );
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /\(image .*gray-40x40\.png attached to the next message\)/);
    assert.match(r.stdout, /no audio input: the projector takes none/);
    assert.match(r.stdout, /\/image \/nonexistent\.png: ENOENT/);
  });

  test('chat without a projector: /image says how to get one', () => {
    const r = cli(`/image ${dir}img/gray-40x40.png\n/exit\n`, 'chat', '-m', `${dir}gemma3.gguf`, '-n', '1');
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /no image input: start chat with --mmproj FILE/);
  });
});

test('run: media flags are checked before a model loads', () => {
  const png = `${REPO_ROOT}test/fixtures/media/os2.bmp`;
  const noProjector = cli('', 'run', '-m', 'm.gguf', '--image', png, '-p', 'x');
  assert.equal(noProjector.code, 2);
  assert.match(noProjector.stderr, /--image and --audio need a multimodal projector \(--mmproj FILE\)/);
  const wrongKind = cli('', 'run', '-m', 'm.gguf', '--mmproj', 'p.gguf', '--audio', png, '-p', 'x');
  assert.equal(wrongKind.code, 2);
  assert.match(wrongKind.stderr, /--audio .*os2\.bmp: the file is not audio/);
  const missing = cli('', 'run', '-m', 'm.gguf', '--mmproj', 'p.gguf', '--image', '/nonexistent.png', '-p', 'x');
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /--image \/nonexistent\.png: ENOENT/);
});
