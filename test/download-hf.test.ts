// Downloads against a local HTTP server that behaves like Hugging Face's resolve endpoint
// (302 to a "CDN" with X-Linked-Etag / X-Linked-Size, Range requests, ETag), on 127.0.0.1
// only: redirects, resume after an interrupted transfer (same pull and a later one), the
// sha256 check, the lock between concurrent pulls (and a stale lock), -hf quant choice,
// hf:// model arguments and the `pull` command.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, beforeEach, test } from 'node:test';
import {
  cachePath,
  DownloadError,
  HubUnreachableError,
  parseHfPath,
  pickMmproj,
  pull,
  resolveHfRepo,
  resolveModelArg,
  resolveUrl,
} from '../src/download/index.js';
import { REPO_ROOT } from './helpers/shared.js';

const DATA = randomBytes(300_000);
const SHA = createHash('sha256').update(DATA).digest('hex');
const REPO = 'test-owner/Tiny-GGUF';
const FILE = 'tiny-q4_k_m.gguf';
/** A repository whose file list names a path that climbs out of its cache folder. */
const EVIL = 'evil-owner/Evil-GGUF';

interface Hit {
  path: string;
  range: string | undefined;
  auth: string | undefined;
}
const hits: Hit[] = [];
/** Transfers to cut off after this many bytes (one entry per upcoming CDN response). */
let cuts: number[] = [];
let announcedSha = SHA;
let slow = 0;

let server: Server;
let endpoint: string;
let dir: string;

before(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    hits.push({ path: url.pathname, range: req.headers.range, auth: req.headers.authorization });
    if (url.pathname === `/api/models/${EVIL}`) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ siblings: [{ rfilename: 'sub/../../../q4_k_m.gguf' }] }));
      return;
    }
    if (url.pathname === `/api/models/${REPO}`) {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(
        JSON.stringify({
          siblings: [
            { rfilename: 'README.md' },
            { rfilename: 'tiny-q8_0.gguf' },
            { rfilename: FILE },
            { rfilename: 'mmproj-tiny-q4_k_m.gguf' },
          ],
        }),
      );
      return;
    }
    const resolve = `/${REPO}/resolve/main/`;
    if (url.pathname.startsWith(resolve)) {
      const file = url.pathname.slice(resolve.length);
      if (file !== FILE && file !== 'other.gguf') {
        res.writeHead(404).end('Entry not found');
        return;
      }
      res.writeHead(302, {
        Location: `/cdn/${file}?sig=abc`,
        'X-Linked-Etag': `"${announcedSha}"`,
        'X-Linked-Size': String(DATA.length),
        ETag: '"not-the-sha"',
      });
      res.end();
      return;
    }
    if (url.pathname.startsWith('/cdn/')) {
      let start = 0;
      const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
      if (m) start = Number(m[1]);
      if (start >= DATA.length) {
        res.writeHead(416, { 'Content-Range': `bytes */${DATA.length}` }).end();
        return;
      }
      const body = DATA.subarray(start);
      const headers: Record<string, string> = {
        'Content-Length': String(body.length),
        ETag: `"${SHA}"`,
        'Accept-Ranges': 'bytes',
      };
      if (m) headers['Content-Range'] = `bytes ${start}-${DATA.length - 1}/${DATA.length}`;
      res.writeHead(m ? 206 : 200, headers);
      const cut = cuts.shift();
      if (cut !== undefined) {
        // an interrupted transfer: part of the body, then the connection drops
        // (a half-close, so that what was written arrives before the connection ends)
        res.write(body.subarray(0, cut), () => setTimeout(() => res.socket?.end(), 20));
        return;
      }
      if (slow > 0) {
        let off = 0;
        const tick = () => {
          if (off >= body.length) return void res.end();
          res.write(body.subarray(off, off + 50_000));
          off += 50_000;
          setTimeout(tick, slow);
        };
        tick();
        return;
      }
      res.end(body);
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.LLAMA_TS_HF_ENDPOINT = endpoint;
});

after(async () => {
  server.closeAllConnections();
  await new Promise<void>((r) => server.close(() => r()));
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'llama-ts-dl-'));
  hits.length = 0;
  cuts = [];
  announcedSha = SHA;
  slow = 0;
});

const spec = { repo: REPO, file: FILE, revision: 'main' };
const cdnHits = () => hits.filter((h) => h.path.startsWith('/cdn/'));

test('names: hf paths, resolve URL, cache path; bad names refused', () => {
  assert.deepEqual(parseHfPath(`${REPO}/${FILE}`), spec);
  assert.deepEqual(parseHfPath(`hf://${REPO}/sub/${FILE}`), { ...spec, file: `sub/${FILE}` });
  assert.deepEqual(parseHfPath(`test-owner/Tiny-GGUF@v1.0/${FILE}`), { ...spec, revision: 'v1.0' });
  assert.equal(resolveUrl(spec, 'https://huggingface.co'), `https://huggingface.co/${REPO}/resolve/main/${FILE}`);
  assert.equal(cachePath(spec, '/c'), `/c/test-owner/Tiny-GGUF/${FILE}`);
  assert.throws(() => parseHfPath(`${REPO}/../../etc/passwd`), DownloadError);
  assert.throws(() => parseHfPath('just-a-file.gguf'), DownloadError);
  assert.throws(() => parseHfPath(`../x/${FILE}`), DownloadError);
});

test('every name that reaches the file system is checked: revisions, listed file names', async () => {
  // a revision of '..' (its URL would resolve to another path, its folder is '@..')
  assert.throws(() => parseHfPath(`${REPO}@../${FILE}`), /bad revision/);
  assert.throws(() => parseHfPath(`${REPO}@./${FILE}`), /bad revision/);
  assert.throws(() => cachePath({ ...spec, revision: '..' }, '/c'), /bad revision/);
  assert.throws(() => resolveUrl({ ...spec, revision: '..' }), /bad revision/);
  await assert.rejects(pull({ ...spec, revision: '..' }, { cacheDir: dir }), /bad revision/);
  // names that stay inside the cache but leave the repository's folder, or use a backslash
  for (const file of ['sub/../../../q4_k_m.gguf', 'a/../b.gguf', 'x\\..\\y.gguf', 'a//b.gguf', 'a\u0000.gguf']) {
    assert.throws(() => cachePath({ ...spec, file }, '/c'), DownloadError, file);
  }
  assert.throws(() => cachePath({ ...spec, repo: 'a/..' }, '/c'), DownloadError);
  // -hf REPO:QUANT takes the name from the repository's listing: checked the same way
  await assert.rejects(resolveHfRepo(`${EVIL}:Q4_K_M`), /file list names 'sub\/\.\.\/\.\.\/\.\.\/q4_k_m\.gguf'/);
  await assert.rejects(resolveModelArg({ hfRepo: EVIL, cacheDir: dir }), DownloadError);
  assert.ok(!existsSync(join(dir, 'q4_k_m.gguf')) && !existsSync(join(dir, 'q4_k_m.gguf.lock')));
});

test('offline: an unreachable Hub is said at once, with what is not cached and how to run a local file', async () => {
  // a port that was free a moment ago: the connection is refused
  const closed = createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const dead = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
  await new Promise<void>((r) => closed.close(() => r()));
  process.env.LLAMA_TS_HF_ENDPOINT = dead;
  try {
    const t0 = Date.now();
    await assert.rejects(
      resolveModelArg({ cacheDir: dir, useDefault: true }),
      (e: unknown) =>
        e instanceof HubUnreachableError &&
        /^cannot reach the Hugging Face endpoint at http:\/\/127\.0\.0\.1:\d+ \(.*ECONNREFUSED.*\), and the default model Qwen\/.*\.gguf is not in the cache \(.*\).*-m FILE\.gguf/.test(
          e.message,
        ),
    );
    // no retries (five of them took 6 s): the Hub is not there
    assert.ok(Date.now() - t0 < 1500, `${Date.now() - t0} ms`);
    await assert.rejects(resolveModelArg({ hfRepo: `${REPO}:Q8_0`, cacheDir: dir }), /no GGUF file of .* in the cache/);
    await assert.rejects(resolveModelArg({ model: `hf://${REPO}/${FILE}`, cacheDir: dir }), /is not in the cache/);
    // a file of that repository and quantization pulled before is used offline
    mkdirSync(join(dir, 'test-owner', 'Tiny-GGUF'), { recursive: true });
    writeFileSync(join(dir, 'test-owner', 'Tiny-GGUF', 'tiny-q8_0.gguf'), 'x');
    assert.equal(
      await resolveModelArg({ hfRepo: `${REPO}:Q8_0`, cacheDir: dir }),
      join(dir, 'test-owner', 'Tiny-GGUF', 'tiny-q8_0.gguf'),
    );
    // the command line: `llama-ts chat` with its default model, offline
    const r = spawnSync(process.execPath, [join(REPO_ROOT, 'bin', 'llama-ts.js'), 'chat', '--cache-dir', dir], {
      encoding: 'utf8',
      input: '',
      env: { ...process.env, LLAMA_TS_HF_ENDPOINT: dead },
      timeout: 30_000,
    });
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, /cannot reach .* not in the cache .*-m FILE\.gguf/);
    assert.doesNotMatch(r.stderr, /fetch failed|resuming/);
  } finally {
    process.env.LLAMA_TS_HF_ENDPOINT = endpoint;
  }
});

test('pull: follows the redirect, checks the sha256, caches', async () => {
  const seen: number[] = [];
  const path = await pull(spec, { cacheDir: dir, onProgress: (p) => seen.push(p.received) });
  assert.equal(path, join(dir, 'test-owner', 'Tiny-GGUF', FILE));
  assert.ok(readFileSync(path).equals(DATA));
  assert.ok(!existsSync(`${path}.part`) && !existsSync(`${path}.lock`));
  assert.equal(seen.at(-1), DATA.length);
  assert.ok(seen.every((v, i) => i === 0 || v >= seen[i - 1]!));
  const n = hits.length;
  assert.equal(await pull(spec, { cacheDir: dir }), path);
  assert.equal(hits.length, n, 'a cached file is not fetched again');
});

test('an interrupted transfer resumes with a Range request in the same pull', async () => {
  cuts = [120_000];
  const path = await pull(spec, { cacheDir: dir });
  assert.ok(readFileSync(path).equals(DATA));
  const cdn = cdnHits();
  assert.equal(cdn.length, 2);
  assert.equal(cdn[0]!.range, undefined);
  const resumedAt = Number(/^bytes=(\d+)-$/.exec(cdn[1]!.range ?? '')?.[1]);
  assert.ok(resumedAt > 0 && resumedAt <= 120_000, cdn[1]!.range);
});

test('a failed pull leaves a .part file that the next pull resumes', async () => {
  cuts = [100_000];
  await assert.rejects(pull(spec, { cacheDir: dir, retries: 0 }));
  const dest = cachePath(spec, dir);
  const partSize = statSync(`${dest}.part`).size;
  assert.ok(partSize > 0 && partSize <= 100_000, `part of ${partSize} bytes`);
  assert.ok(!existsSync(`${dest}.lock`));
  hits.length = 0;
  const path = await pull(spec, { cacheDir: dir });
  assert.ok(readFileSync(path).equals(DATA));
  assert.equal(cdnHits()[0]!.range, `bytes=${partSize}-`);
});

test('a sha256 mismatch is an error and leaves nothing behind', async () => {
  announcedSha = 'a'.repeat(64);
  await assert.rejects(
    pull(spec, { cacheDir: dir }),
    (e: unknown) => e instanceof DownloadError && /sha256/.test(String(e)),
  );
  const dest = cachePath(spec, dir);
  assert.ok(!existsSync(dest) && !existsSync(`${dest}.part`) && !existsSync(`${dest}.lock`));
});

test('a missing file is a clear error', async () => {
  await assert.rejects(pull({ ...spec, file: 'nope.gguf' }, { cacheDir: dir }), /HTTP 404/);
});

test('two pulls of the same file at once: one transfer, both get the file', async () => {
  slow = 20;
  const [a, b] = await Promise.all([pull(spec, { cacheDir: dir }), pull(spec, { cacheDir: dir })]);
  assert.equal(a, b);
  assert.ok(readFileSync(a).equals(DATA));
  assert.equal(cdnHits().length, 1);
});

test('two processes pulling the same file at once', async () => {
  slow = 20;
  const script = join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js');
  const runPull = () =>
    new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import('${script}').then(m => m.main(process.argv.slice(1))).then(c => process.exit(c))`,
          'pull',
          `${REPO}/${FILE}`,
          '--cache-dir',
          dir,
        ],
        { env: { ...process.env, LLAMA_TS_HF_ENDPOINT: endpoint } },
      );
      let out = '';
      p.stdout.on('data', (d) => (out += d));
      p.on('close', (code) => resolve({ code, out }));
    });
  const [a, b] = await Promise.all([runPull(), runPull()]);
  assert.equal(a.code, 0);
  assert.equal(b.code, 0);
  assert.equal(a.out.trim(), cachePath(spec, dir));
  assert.equal(b.out.trim(), a.out.trim());
  assert.ok(readFileSync(a.out.trim()).equals(DATA));
  assert.equal(cdnHits().length, 1);
});

test('a stale lock (its process is gone) is taken over', async () => {
  const dest = cachePath(spec, dir);
  mkdirSync(join(dir, 'test-owner', 'Tiny-GGUF'), { recursive: true });
  // a pid that is not running on this host
  writeFileSync(`${dest}.lock`, JSON.stringify({ pid: 2 ** 22 + 12345, host: (await import('node:os')).hostname() }));
  const path = await pull(spec, { cacheDir: dir });
  assert.ok(readFileSync(path).equals(DATA));
  // and one that is merely old
  rmSync(path);
  writeFileSync(`${dest}.lock`, '{}');
  const t = new Date(Date.now() - 120_000);
  (await import('node:fs')).utimesSync(`${dest}.lock`, t, t);
  assert.ok(readFileSync(await pull(spec, { cacheDir: dir, staleLockMs: 60_000 })).equals(DATA));
});

test("-hf picks the repository's projector with the model (llama-server's --mmproj-auto)", async () => {
  assert.equal((await resolveHfRepo(REPO)).mmproj, 'mmproj-tiny-q4_k_m.gguf');
  const files = [
    'm-Q4_K_M.gguf',
    'mmproj-model-f32.gguf',
    'mmproj-model-F16.gguf',
    'mmproj-model-Q8_0.gguf',
    'README.md',
  ];
  assert.equal(pickMmproj(files, 'q4_k_m'), 'mmproj-model-F16.gguf', 'F16 before Q8_0 and F32');
  assert.equal(pickMmproj(files, 'q8_0'), 'mmproj-model-Q8_0.gguf', "the model's own quantization first");
  assert.equal(pickMmproj(['mmproj-b.gguf', 'mmproj-a.gguf'], 'q4_k_m'), 'mmproj-a.gguf');
  assert.equal(pickMmproj(['m-Q4_K_M.gguf', 'mmproj.bin'], 'q4_k_m'), undefined);
});

test('-hf repo[:quant] picks the file from the repository listing; hf:// model arguments', async () => {
  assert.equal((await resolveHfRepo(REPO)).file, FILE);
  assert.equal((await resolveHfRepo(`${REPO}:Q8_0`)).file, 'tiny-q8_0.gguf');
  await assert.rejects(resolveHfRepo(`${REPO}:IQ1_S`), /no GGUF file for 'iq1_s'/);
  const p = await resolveModelArg({ model: `hf://${REPO}/${FILE}`, cacheDir: dir });
  assert.ok(readFileSync(p).equals(DATA));
  assert.equal(await resolveModelArg({ hfRepo: REPO, cacheDir: dir }), p);
  assert.equal(await resolveModelArg({ model: '/some/local.gguf' }), '/some/local.gguf');
  await assert.rejects(resolveModelArg({ cacheDir: dir }), /a model is required/);
});

test('HF_TOKEN goes to the endpoint, not to the redirect target', async () => {
  process.env.HF_TOKEN = 'hf_test';
  try {
    // the CDN here is the same origin, so check the header is sent to the resolve URL at least
    await pull(spec, { cacheDir: dir });
    assert.equal(hits.find((h) => h.path.includes('/resolve/'))!.auth, 'Bearer hf_test');
  } finally {
    delete process.env.HF_TOKEN;
  }
});
