// The chat page at `/` (webui/): its HTTP side (types, CSP, gzip, ETag, cache headers,
// --no-webui as llama-server's test_basic.py::test_no_webui expects) without a browser.
// The page itself, in chromium: webui-page.test.ts.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { get } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { loadModelMap, translateArgs } from '../bench/llama-server-suite/flags.js';
import { LlamaServer } from '../src/server/index.js';
import { tinyLlama } from './helpers/models.js';
import { BIN, startServe } from './helpers/serve-child.js';

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** GET with node:http (fetch would undo the gzip the test checks). */
function raw(url: string, headers: Record<string, string> = {}): Promise<Raw> {
  return new Promise((resolve, reject) => {
    get(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

describe('the chat page over HTTP', () => {
  let s: LlamaServer | undefined;
  let off: LlamaServer | undefined;
  before(async () => {
    s = await LlamaServer.listen({ model: tinyLlama(), port: 0, parallel: 1, nCtx: 256, apiKey: 'k' });
    off = await LlamaServer.listen({ model: tinyLlama(), port: 0, parallel: 1, nCtx: 256, webui: false });
  });
  after(async () => {
    await s?.close();
    await off?.close();
  });

  test('GET / is the page, with a strict CSP and no inline script, without the API key', async () => {
    const r = await raw(`${s!.url}/`);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'text/html; charset=utf-8');
    const html = r.body.toString('utf8');
    assert.ok(html.toLowerCase().includes('<!doctype html>'));
    const csp = String(r.headers['content-security-policy']);
    assert.match(csp, /default-src 'self'/);
    assert.match(csp, /script-src 'self'(;|$)/);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    assert.equal(r.headers['x-content-type-options'], 'nosniff');
    assert.equal(r.headers['cache-control'], 'no-cache');
    // every script comes from a file; no inline handlers
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/gi)];
    assert.ok(scripts.length > 0);
    for (const m of scripts) {
      assert.match(m[1]!, /\bsrc="\/webui\/[a-z]+\.js\?v=[\w-]+"/);
      assert.equal(m[2]!.trim(), '');
    }
    assert.doesNotMatch(html, /\son[a-z]+=/i);
    // the API itself still wants the key
    assert.equal((await raw(`${s!.url}/slots`)).status, 401);
  });

  test('assets: their types, gzip when accepted, 304 on a matching ETag, 404 for anything else', async () => {
    for (const [path, type] of [
      ['/webui/app.js', 'text/javascript; charset=utf-8'],
      ['/webui/math.js', 'text/javascript; charset=utf-8'],
      ['/webui/app.css', 'text/css; charset=utf-8'],
    ]) {
      const plain = await raw(`${s!.url}${path}`);
      assert.equal(plain.status, 200, path);
      assert.equal(plain.headers['content-type'], type, path);
      assert.equal(plain.headers['content-encoding'], undefined, path);
      assert.equal(Number(plain.headers['content-length']), plain.body.length);
      assert.ok(plain.body.length > 1000, path);
      const gz = await raw(`${s!.url}${path}`, { 'Accept-Encoding': 'br, gzip;q=0.8' });
      assert.equal(gz.headers['content-encoding'], 'gzip', path);
      assert.match(String(gz.headers.vary), /Accept-Encoding/);
      assert.ok(gz.body.length < plain.body.length / 2, `${path}: ${gz.body.length} gzip vs ${plain.body.length}`);
      assert.deepEqual(gunzipSync(gz.body), plain.body);
      // gzip;q=0 refuses it
      const refused = await raw(`${s!.url}${path}`, { 'Accept-Encoding': 'gzip;q=0' });
      assert.equal(refused.headers['content-encoding'], undefined, path);
      const etag = String(plain.headers.etag);
      const again = await raw(`${s!.url}${path}`, { 'If-None-Match': etag });
      assert.equal(again.status, 304, path);
      assert.equal(again.body.length, 0);
    }
    const js = (await raw(`${s!.url}/webui/app.js`)).body.toString('utf8');
    assert.match(js, /export\s*\{[^}]*renderMarkdown/);
    for (const path of [
      '/webui/',
      '/webui/../package.json',
      '/webui/main.tsx',
      '/webui/src/app.tsx',
      '/app.js',
      '/favicon.ico',
    ]) {
      assert.equal((await raw(`${s!.url}${path}`)).status, 404, path);
    }
  });

  test("cache headers: the page's asset URLs carry the build id and are immutable; others revalidate", async () => {
    const html = (await raw(`${s!.url}/`)).body.toString('utf8');
    const urls = [...html.matchAll(/(?:src|href)="(\/webui\/[^"]+)"/g)].map((m) => m[1]!);
    assert.equal(urls.length, 2, html);
    const v = new URL(urls[0]!, s!.url).searchParams.get('v');
    assert.match(String(v), /^[\w-]{16}$/);
    for (const u of urls) {
      assert.equal(new URL(u, s!.url).searchParams.get('v'), v, u);
      const r = await raw(`${s!.url}${u}`);
      assert.equal(r.status, 200, u);
      assert.equal(r.headers['cache-control'], 'public, max-age=31536000, immutable', u);
    }
    // another build's id (or none) is not cached for good
    assert.equal((await raw(`${s!.url}/webui/app.js?v=0000000000000000`)).headers['cache-control'], 'no-cache');
    assert.equal((await raw(`${s!.url}/webui/math.js`)).headers['cache-control'], 'no-cache');
    assert.equal((await raw(`${s!.url}/?v=${v}`)).headers['cache-control'], 'no-cache');
  });

  test('webui: false: / and its assets are 404s', async () => {
    for (const path of ['/', '/index.html', '/webui/app.js', '/webui/app.css']) {
      assert.equal((await raw(`${off!.url}${path}`)).status, 404, path);
    }
    assert.notEqual((await raw(`${off!.url}/health`)).status, 404);
  });
});

test("serve --no-webui: test_basic.py::test_no_webui's expectation, and the suite's shim passes the flag", async () => {
  // the shim passes --no-webui on when `serve --help` lists it
  const help = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' }).stdout;
  const flags = new Set(help.match(/--[a-z][a-z0-9-]*/g) ?? []);
  const t = translateArgs(['--model', tinyLlama(), '--no-webui'], flags, loadModelMap(), '/models', '/suite');
  assert.ok(t.argv.includes('--no-webui'), t.argv.join(' '));
  for (const [extra, status] of [
    [[], 200],
    [['--no-webui'], 404],
  ] as const) {
    const child = await startServe(['-m', tinyLlama(), '-np', '1', '-c', '256', '-t', '1', ...extra]);
    try {
      const r = await fetch(`${child.url}/`);
      assert.equal(r.status, status, `serve ${extra.join(' ')}`);
      const body = await r.text();
      if (status === 200) assert.ok(body.toLowerCase().includes('<!doctype html>'));
    } finally {
      await new Promise((res) => {
        child.process.once('exit', res);
        child.process.kill('SIGTERM');
      });
    }
  }
});
