// Router mode and projectors: a --models-dir subfolder holding a model and an *mmproj* file
// (llama-server's rule) runs its process with --mmproj, so /v1/models lists it multimodal
// (vision, from the projector's header, before it loads) and a chat request with an image
// through the router answers as `serve -m MODEL --mmproj MMPROJ` does directly. The mtmd
// fixture pair gemma3 (../shared/fixtures/mtmd), linked into a temporary models folder.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { modelsFromDir } from '../src/server/router/sources.js';
import { type ServeChild, startServe } from './helpers/serve-child.js';
import { missingShared, sharedPath } from './helpers/shared.js';

// biome-ignore lint/suspicious/noExplicitAny: bodies are read by shape
type Json = any;

const fixtures = sharedPath('fixtures/mtmd/gemma3.mmproj.gguf') ? sharedPath('fixtures/mtmd/') : undefined;
const ARGS = ['-c', '2048', '-np', '1', '-t', '1'];

async function stop(s: ServeChild | undefined): Promise<void> {
  if (!s || s.process.exitCode !== null) return;
  await new Promise((res) => {
    s.process.once('exit', res);
    s.process.kill('SIGTERM');
  });
}

async function chat(url: string, model: string | undefined): Promise<{ status: number; json: Json }> {
  const png = readFileSync(`${fixtures}img/gray-40x40.png`).toString('base64');
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      ...(model ? { model } : {}),
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'What is in the picture ' },
            { type: 'image_url', image_url: { url: `data:image/png;base64,${png}` } },
            { type: 'text', text: ' today?' },
          ],
        },
      ],
      max_tokens: 6,
      temperature: 0,
      logprobs: true,
      top_logprobs: 3,
    }),
  });
  return { status: r.status, json: await r.json() };
}

describe('router mode: a folder model with an mmproj file', {
  skip: fixtures ? false : missingShared('fixtures/mtmd'),
}, () => {
  let dir: string;
  let direct: Json;
  let router: ServeChild | undefined;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-mmproj-'));
    const folder = join(dir, 'models', 'gemma3');
    mkdirSync(folder, { recursive: true });
    symlinkSync(`${fixtures}gemma3.gguf`, join(folder, 'gemma3.gguf'));
    symlinkSync(`${fixtures}gemma3.mmproj.gguf`, join(folder, 'gemma3.mmproj.gguf'));
    // the direct answer first, one process at a time
    const one = await startServe([
      '-m',
      `${fixtures}gemma3.gguf`,
      '--mmproj',
      `${fixtures}gemma3.mmproj.gguf`,
      ...ARGS,
    ]);
    try {
      const r = await chat(one.url, undefined);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      direct = r.json;
    } finally {
      await stop(one);
    }
    router = await startServe(['--models-dir', join(dir, 'models'), '--cache-dir', join(dir, 'cache'), ...ARGS]);
  });
  after(async () => {
    await stop(router);
    rmSync(dir, { recursive: true, force: true });
  });

  test('listed once, with its projector and vision, before it loads', async () => {
    const list: Json = await (await fetch(`${router!.url}/v1/models`)).json();
    assert.deepEqual(
      list.data.map((m: Json) => m.id),
      ['gemma3'],
    );
    const m = list.data[0];
    assert.equal(m.status.value, 'unloaded');
    assert.equal(m.mmproj, join(dir, 'models', 'gemma3', 'gemma3.mmproj.gguf'));
    assert.deepEqual(m.capabilities, ['completion', 'multimodal', 'vision']);
  });

  test('an image_url part through the router: the direct answer; its process runs --mmproj', async () => {
    const r = await chat(router!.url, 'gemma3');
    assert.equal(r.status, 200, JSON.stringify(r.json));
    assert.equal(r.json.choices[0].message.content, direct.choices[0].message.content);
    assert.deepEqual(r.json.choices[0].logprobs, direct.choices[0].logprobs);
    assert.equal(r.json.usage.prompt_tokens, direct.usage.prompt_tokens);
    const list: Json = await (await fetch(`${router!.url}/v1/models`)).json();
    const args: string[] = list.data[0].status.args;
    assert.equal(args[args.indexOf('--mmproj') + 1], join(dir, 'models', 'gemma3', 'gemma3.mmproj.gguf'));
    const props: Json = await (await fetch(`${router!.url}/props?model=gemma3`)).json();
    assert.deepEqual(props.modalities, { vision: true, audio: false });
  });
});

test("a models folder's projectors, by llama-server's rule: mmproj anywhere in a subfolder file's name", () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-mmproj-dir-'));
  try {
    for (const f of ['a/a.gguf', 'a/a.mmproj.gguf', 'b/mmproj-F16.gguf', 'b/b-Q8_0.gguf', 'c/c.gguf', 'top.gguf']) {
      mkdirSync(join(dir, f, '..'), { recursive: true });
      writeFileSync(join(dir, f), '');
    }
    // a top-level projector is no model of its own
    writeFileSync(join(dir, 'top-mmproj.gguf'), '');
    const models = modelsFromDir(dir).map((m) => [
      m.name,
      m.path.slice(dir.length + 1),
      m.mmproj?.slice(dir.length + 1),
    ]);
    assert.deepEqual(models, [
      ['a', 'a/a.gguf', 'a/a.mmproj.gguf'],
      ['b', 'b/b-Q8_0.gguf', 'b/mmproj-F16.gguf'],
      ['c', 'c/c.gguf', undefined],
      ['top', 'top.gguf', undefined],
    ]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
