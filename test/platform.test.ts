// The platform seam (src/platform): the engine's layers reach node:* only through it, and
// the web implementation's parts that run here (SHA-256 in JavaScript, Blob-backed model
// files, Web Workers are not) give what the Node implementation gives.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { test } from 'node:test';
import { nodePlatform } from '../src/platform/node.js';
import { jsSha256 } from '../src/platform/sha256.js';
import { provideFile, webPlatform } from '../src/platform/web.js';
import { REPO_ROOT } from './helpers/shared.js';

/**
 * Where node:* and Buffer may still be used outside src/platform: the Node-facing front
 * ends (CLI, server, downloads) and the Node-only tools (generator, quantizer, GGUF
 * writer). Everything else runs in browsers too (the web entry, src/web/).
 */
const NODE_FACING = [
  /^cli\//,
  /^server\//,
  /^download\//,
  /^generator\//,
  /^quantize\//,
  /^gguf\/writer\.ts$/,
  /^backends\/testing\//, // test doubles (they set env switches for the tests)
];

test('the engine layers import node:* (and use Buffer) only through src/platform', () => {
  const src = join(REPO_ROOT, 'src');
  const offenders: string[] = [];
  const walk = (dir: string) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.name.endsWith('.ts')) {
        const rel = relative(src, p);
        if (rel.startsWith('platform/') || NODE_FACING.some((r) => r.test(rel))) continue;
        const text = readFileSync(p, 'utf8');
        for (const m of text.matchAll(/(?:from|import\()\s*'(node:[\w/]+)'/g)) offenders.push(`${rel}: ${m[1]}`);
        if (/\bprocess\.(env|versions|hrtime|execArgv)\b/.test(text)) offenders.push(`${rel}: process.*`);
        if (/\bBuffer\.(from|alloc|concat|isBuffer|byteLength)\b/.test(text)) offenders.push(`${rel}: Buffer`);
        if (/\bsetImmediate\(/.test(text)) offenders.push(`${rel}: setImmediate`);
      }
    }
  };
  walk(src);
  assert.deepEqual(offenders, []);
});

test('SHA-256 in JavaScript equals node:crypto for every padding case and any chunking', () => {
  const lengths = [0, 1, 3, 55, 56, 57, 63, 64, 65, 119, 120, 128, 1000, 65_537, 1 << 20];
  for (const n of lengths) {
    const data = new Uint8Array(randomBytes(n));
    const want = createHash('sha256').update(data).digest('hex');
    assert.equal(Buffer.from(jsSha256().update(data).digest()).toString('hex'), want, `${n} bytes at once`);
    // the same bytes in uneven pieces
    const h = jsSha256();
    for (let at = 0, k = 1; at < n; k = (k * 7 + 3) % 97) {
      h.update(data.subarray(at, at + k));
      at += k;
    }
    assert.equal(Buffer.from(h.digest()).toString('hex'), want, `${n} bytes in pieces`);
    assert.equal(Buffer.from(nodePlatform.sha256().update(data).digest()).toString('hex'), want);
  }
  assert.equal(
    Buffer.from(jsSha256().update(new TextEncoder().encode('abc')).digest()).toString('hex'),
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  );
});

test('a Blob given to provideFile reads by position as the file on disk does', async () => {
  const bytes = new Uint8Array(randomBytes(300_001));
  provideFile('model.gguf', new Blob([bytes]));
  assert.deepEqual(webPlatform.fileInfo('model.gguf'), { isFile: true, key: 'model.gguf' });
  assert.equal(webPlatform.fileInfo('other.gguf'), undefined);
  assert.throws(() => webPlatform.openFile('other.gguf'), /other\.gguf: no such file .*provideFile/);
  const f = webPlatform.openFile('model.gguf');
  assert.equal(f.size, bytes.length);
  for (const [pos, len] of [
    [0, 16],
    [12_345, 70_000],
    [299_990, 64], // past the end: the bytes that are there
  ] as const) {
    const dst = new Uint8Array(len);
    const n = await f.readAsync(dst, pos);
    const want = bytes.subarray(pos, pos + len);
    assert.equal(n, want.length);
    assert.deepEqual(dst.subarray(0, n), want);
  }
  // synchronous reads need FileReaderSync (workers); Node's main thread has none
  assert.throws(() => f.readSync(new Uint8Array(4), 0), /synchronous reads need a worker/);
  f.close();
  await assert.rejects(f.readAsync(new Uint8Array(4), 0), /model\.gguf: file is closed/);
});

test("the Node platform's ports: a message sent is there at once for receiveNow", () => {
  const [a, b] = nodePlatform.channel();
  const receiveNow = nodePlatform.receiveNow!;
  assert.equal(receiveNow(b), undefined);
  a.postMessage({ x: 1 });
  assert.deepEqual(receiveNow(b), { message: { x: 1 } });
  a.close();
  b.close();
  // the web has none: its CPU workers take their arenas from their event loop
  assert.equal(webPlatform.receiveNow, undefined);
});

test("the web platform reads V8's version from Chromium's user agent (the Q4_0 layout depends on it), none elsewhere", () => {
  const had = Object.getOwnPropertyDescriptor(globalThis, 'navigator');
  const as = (userAgent: string) =>
    Object.defineProperty(globalThis, 'navigator', { value: { userAgent }, configurable: true, writable: true });
  try {
    as(
      'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) HeadlessChrome/156.0.8078.114 Safari/537.36',
    );
    assert.equal(webPlatform.v8Version(), '15.6');
    as('Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0.0.0 Safari/537.36');
    assert.equal(webPlatform.v8Version(), '12.0');
    as('Mozilla/5.0 (X11; Linux x86_64; rv:140.0) Gecko/20100101 Firefox/140.0');
    assert.equal(webPlatform.v8Version(), undefined);
  } finally {
    if (had) Object.defineProperty(globalThis, 'navigator', had);
    else delete (globalThis as { navigator?: unknown }).navigator;
  }
});
