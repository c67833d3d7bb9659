// `llama-ts serve` as a child process: it listens on the port it prints, answers, and
// shuts down cleanly on SIGTERM; bad usage exits 2.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { REPO_ROOT } from './helpers/shared.js';
import { chatModel } from './server-fixtures.js';

const BIN = `${REPO_ROOT}bin/llama-ts.js`;

test('serve: listens, answers, stops on SIGTERM; --api-key wins over LLAMA_API_KEY', { timeout: 60_000 }, async () => {
  const args = [BIN, 'serve', '-m', chatModel(), '--port', '0', '-np', '2', '-c', '1024', '--api-key', 'flag-key'];
  const p = spawn(process.execPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LLAMA_API_KEY: 'env-key' },
  });
  let err = '';
  const url = await new Promise<string>((resolve, reject) => {
    p.stderr.on('data', (d) => {
      err += d;
      const m = /ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    p.on('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/);
  const complete = (key: string) =>
    fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
      body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 4 }),
    });
  assert.equal((await complete('env-key')).status, 401);
  const r = await complete('flag-key');
  assert.equal(r.status, 200);
  // access log at info
  await new Promise((res) => setTimeout(res, 50));
  assert.match(err, /POST \/v1\/completions 200/);
  const code = await new Promise<number | null>((resolve) => {
    p.on('exit', (c) => resolve(c));
    p.kill('SIGTERM');
  });
  assert.equal(code, 0);
});

test('serve: bad usage exits 2', () => {
  const r = spawnSync(process.execPath, [BIN, 'serve', '--port', 'x'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--port/);
  for (const [flag, value] of [
    ['--timeout', '0'],
    ['--max-connections', 'x'],
    ['--max-body-memory', '2048'],
  ] as const) {
    const bad = spawnSync(process.execPath, [BIN, 'serve', flag, value], { encoding: 'utf8' });
    assert.equal(bad.status, 2, `${flag} ${value}`);
    assert.match(bad.stderr, new RegExp(flag));
  }
});

test('serve: an empty API key is refused (it would turn authentication off), even with LLAMA_API_KEY set', () => {
  const serve = (args: string[], env: Record<string, string>) =>
    spawnSync(process.execPath, [BIN, 'serve', '-m', '/nonexistent.gguf', ...args], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
  const flag = serve(['--api-key', ''], { LLAMA_API_KEY: 'secret' });
  assert.equal(flag.status, 2, flag.stderr);
  assert.match(flag.stderr, /--api-key must not be empty/);
  assert.equal(serve(['--api-key', '  '], {}).status, 2);
  const env = serve([], { LLAMA_API_KEY: '' });
  assert.equal(env.status, 2, env.stderr);
  assert.match(env.stderr, /LLAMA_API_KEY is set but empty/);
});
