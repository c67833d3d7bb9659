// `llama-ts web`'s server without a browser: COOP/COEP (or not), the example at /, only the
// served folders, the bare imports (jinja, the audio decoders) pointed at /vendor/, models with ranges
// (206, 416), ETags and If-Range; the command's usage errors.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { serveWeb, type WebServer } from '../src/cli/web.js';
import { tinyLlama } from './helpers/models.js';
import { BIN } from './helpers/serve-child.js';

describe('llama-ts web (the server)', () => {
  let s: WebServer;
  let open: WebServer;
  const model = tinyLlama();
  const size = statSync(model).size;
  before(async () => {
    s = await serveWeb({ port: 0, models: { 'm.gguf': model } });
    open = await serveWeb({ port: 0, isolated: false });
  });
  after(async () => {
    await s?.close();
    await open?.close();
  });

  test('cross-origin isolation headers, the example at /, nothing outside the served folders', async () => {
    const root = await fetch(`${s.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/examples/browser/');
    const page = await fetch(`${s.url}/examples/browser/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<script type="module" src="app\.js">/);
    assert.equal(page.headers.get('cross-origin-opener-policy'), 'same-origin');
    assert.equal(page.headers.get('cross-origin-embedder-policy'), 'require-corp');
    const plain = await fetch(`${open.url}/examples/browser/`);
    assert.equal(plain.headers.get('cross-origin-embedder-policy'), null);
    for (const p of [
      '/src/api/index.ts',
      '/test/web-browser.test.ts',
      '/dist/src/../../package-lock.json',
      '/%2e%2e/etc/passwd',
    ])
      assert.equal((await fetch(`${s.url}${p}`)).status, 404, p);
    const tpl = await (await fetch(`${s.url}/dist/src/chat/template.js`)).text();
    assert.match(tpl, /from '\/vendor\/jinja\.js'/);
    assert.doesNotMatch(tpl, /'@huggingface\/jinja'/);
    assert.equal((await fetch(`${s.url}/vendor/jinja.js`)).status, 200);
    // the audio decoders: imported on demand, pointed at their browser bundles
    const audio = await (await fetch(`${s.url}/dist/src/media/compressed.js`)).text();
    assert.match(audio, /import\('\/vendor\/flac\.js'\)/);
    assert.match(audio, /import\('\/vendor\/mpg123\.js'\)/);
    assert.doesNotMatch(audio, /'@wasm-audio-decoders\/flac'|'mpg123-decoder'/);
    // libwebp likewise, and the .wasm its glue fetches beside itself, as WebAssembly
    const webp = await (await fetch(`${s.url}/dist/src/media/webp.js`)).text();
    assert.match(webp, /import\('\/vendor\/webp\.js'\)/);
    assert.doesNotMatch(webp, /import\('@jsquash/);
    const wasm = await fetch(`${s.url}/vendor/webp_dec.wasm`);
    assert.equal(wasm.headers.get('content-type'), 'application/wasm');
    assert.deepEqual([...new Uint8Array(await wasm.arrayBuffer()).subarray(0, 4)], [0, 0x61, 0x73, 0x6d]);
    for (const v of ['flac.js', 'mpg123.js', 'webp.js']) {
      const r = await fetch(`${s.url}/vendor/${v}`);
      assert.equal(r.status, 200, v);
      // self-contained: no import a browser could not resolve
      assert.doesNotMatch(await r.text(), /\bfrom\s*["'][^"'./]|\bimport\s*\(\s*["'][^"'./]/, v);
    }
    for (const v of ['constructor', 'LICENSES.txt', '..%2fpackage.json'])
      assert.equal((await fetch(`${s.url}/vendor/${v}`)).status, 404, v);
    assert.deepEqual(await (await fetch(`${s.url}/models.json`)).json(), ['/models/m.gguf']);
  });

  test("mounts: another folder's files at /<prefix>/ (bench:web's peers), nothing above it", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'llama-ts-mount-'));
    const inner = join(dir, 'pkg');
    const m = await serveWeb({ port: 0, mounts: { peers: inner } });
    try {
      writeFileSync(join(dir, 'secret.txt'), 'no');
      mkdirSync(join(inner, 'wasm'), { recursive: true });
      writeFileSync(join(inner, 'wasm', 'x.wasm'), new Uint8Array([0, 97, 115, 109]));
      const r = await fetch(`${m.url}/peers/wasm/x.wasm`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), 'application/wasm');
      assert.equal(r.headers.get('cross-origin-embedder-policy'), 'require-corp');
      assert.deepEqual(new Uint8Array(await r.arrayBuffer()), new Uint8Array([0, 97, 115, 109]));
      for (const p of ['/peers/../secret.txt', '/peers/%2e%2e/secret.txt', '/peers/wasm/none.wasm', '/peers/wasm'])
        assert.equal((await fetch(`${m.url}${p}`)).status, 404, p);
    } finally {
      await m.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('models: whole, by range (206), past the end (416), If-Range with another version (200)', async () => {
    const whole = await fetch(`${s.url}/models/m.gguf`);
    assert.equal(whole.status, 200);
    assert.equal((await whole.arrayBuffer()).byteLength, size);
    const etag = whole.headers.get('etag')!;
    const part = await fetch(`${s.url}/models/m.gguf`, { headers: { range: 'bytes=100-' } });
    assert.equal(part.status, 206);
    assert.equal(part.headers.get('content-range'), `bytes 100-${size - 1}/${size}`);
    assert.equal((await part.arrayBuffer()).byteLength, size - 100);
    const same = await fetch(`${s.url}/models/m.gguf`, { headers: { range: 'bytes=100-', 'if-range': etag } });
    assert.equal(same.status, 206);
    await same.arrayBuffer();
    const other = await fetch(`${s.url}/models/m.gguf`, { headers: { range: 'bytes=100-', 'if-range': '"other"' } });
    assert.equal(other.status, 200);
    await other.arrayBuffer();
    const past = await fetch(`${s.url}/models/m.gguf`, { headers: { range: `bytes=${size}-` } });
    assert.equal(past.status, 416);
    assert.equal(past.headers.get('content-range'), `bytes */${size}`);
    assert.equal((await fetch(`${s.url}/models/none.gguf`)).status, 404);
  });

  test('usage errors', () => {
    const r = spawnSync(process.execPath, [BIN, 'web', '--port', 'x'], { encoding: 'utf8' });
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--port: not a port: 'x'/);
    const m = spawnSync(process.execPath, [BIN, 'web', '-m', '/no/such.gguf'], { encoding: 'utf8' });
    assert.equal(m.status, 2);
    assert.match(m.stderr, /--model: no such file: \/no\/such\.gguf/);
  });
});
