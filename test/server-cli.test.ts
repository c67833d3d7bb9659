// `llama-ts serve` as a child process: it listens on the port it prints, answers, and
// shuts down cleanly on SIGTERM; bad usage exits 2.
import assert from 'node:assert/strict';
import { type ChildProcess, spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { BIN, startServe } from './helpers/serve-child.js';
import { chatModel } from './server-fixtures.js';

test('serve: listens, answers, stops on SIGTERM; --api-key wins over LLAMA_API_KEY', { timeout: 60_000 }, async () => {
  const {
    url,
    process: p,
    stderr,
  } = await startServe(['-m', chatModel(), '-np', '2', '-c', '1024', '--api-key', 'flag-key'], {
    ...process.env,
    LLAMA_API_KEY: 'env-key',
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
  assert.match(stderr(), /POST \/v1\/completions 200/);
  const code = await new Promise<number | null>((resolve) => {
    p.on('exit', (c) => resolve(c));
    p.kill('SIGTERM');
  });
  assert.equal(code, 0);
});

/** Starts `serve` (1 slot) and resolves with the process, its URL once ready, and its stderr so far. */
async function serve(extra: string[]): Promise<{ p: ChildProcess; url: string; err: () => string }> {
  const {
    process: p,
    url,
    stderr,
  } = await startServe(['-m', chatModel(), '-np', '1', '-c', '512', '-t', '1', ...extra]);
  return { p, url, err: stderr };
}

/** Starts a streamed chat request; resolves once its first event arrived, with a promise of its whole text. */
async function startStream(url: string, body: Record<string, unknown>): Promise<{ whole: Promise<string> }> {
  const r = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'Tell a story.' }], stream: true, ...body }),
  });
  assert.equal(r.status, 200);
  const reader = r.body!.getReader();
  const dec = new TextDecoder();
  let text = dec.decode((await reader.read()).value, { stream: true });
  const whole = (async () => {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return text;
      text += dec.decode(value, { stream: true });
    }
  })();
  whole.catch(() => {});
  return { whole };
}

const exited = (p: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (p.exitCode !== null) resolve(p.exitCode);
    else p.on('exit', (c) => resolve(c));
  });

test('serve: SIGTERM mid-stream: the port closes, the stream finishes, exit 0', { timeout: 60_000 }, async () => {
  const { p, url, err } = await serve([]);
  const { whole } = await startStream(url, { max_tokens: 300, ignore_eos: true });
  p.kill('SIGTERM');
  const code = exited(p);
  const text = await whole;
  assert.match(text, /"finish_reason":"length"/);
  assert.match(text, /data: \[DONE\]\n\n$/);
  assert.equal(await code, 0, err());
  assert.match(err(), /SIGTERM: shutting down/);
  await assert.rejects(fetch(`${url}/health`));
});

test('serve: past --shutdown-timeout a stream ends with finish_reason "abort"; a second signal exits at once', {
  timeout: 60_000,
}, async () => {
  {
    const { p, url } = await serve(['--shutdown-timeout', '1']);
    const { whole } = await startStream(url, { max_tokens: 1_000_000, ignore_eos: true });
    p.kill('SIGINT');
    const text = await whole;
    assert.match(text, /"finish_reason":"abort"/);
    assert.match(text, /data: \[DONE\]\n\n$/);
    assert.equal(await exited(p), 0);
  }
  {
    const { p, url, err } = await serve([]);
    const { whole } = await startStream(url, { max_tokens: 1_000_000, ignore_eos: true });
    p.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    const t0 = performance.now();
    p.kill('SIGTERM');
    assert.equal(await exited(p), 143, err());
    assert.ok(performance.now() - t0 < 10_000);
    assert.match(err(), /SIGTERM again: exiting now/);
    // the stream was cut, not finished
    const text = await whole.catch(() => '');
    assert.doesNotMatch(text, /\[DONE\]/);
  }
});

test('serve: bad usage exits 2', () => {
  const r = spawnSync(process.execPath, [BIN, 'serve', '--port', 'x'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--port/);
  for (const [flag, value] of [
    ['--timeout', '0'],
    ['--max-connections', 'x'],
    ['--max-body-memory', '2048'],
    ['--shutdown-timeout', '-1'],
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
