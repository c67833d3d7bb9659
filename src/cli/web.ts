// `llama-ts web [--port N] [--model FILE]`: serves the browser example (examples/browser/)
// and the built modules with the headers that make a page cross-origin isolated
// (COOP/COEP: SharedArrayBuffer, so the CPU kernels run on several workers). Models given
// with --model are served at /models/<name> with range requests (resumable downloads).
// The tests and the browser benchmark start the same server (serveWeb).
import { createReadStream, existsSync, readFileSync, statSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { basename, extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { UsageError, usageError } from './options.js';

const HELP = `usage: llama-ts web [--port N] [--host H] [--model FILE]...

Serve the in-browser example (chat with a model picker: a URL or a local file; the engine
runs in the page's workers) with the headers for cross-origin isolation (COOP/COEP).

      --port N        port (default 8090; 0: any free one)
      --host H        address to listen on (default 127.0.0.1)
  -m, --model FILE    also serve this GGUF file at /models/<its name> (repeatable)
  -h, --help          show this help
`;

/** The package's root (where dist/, src/backends/cpu/wasm/ and node_modules/ are). */
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** What is served from the package: the example, the compiled modules, the kernels, the one bare dependency. */
const SERVED = ['examples/browser/', 'dist/src/', 'src/backends/cpu/wasm/', 'package.json'];
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.wasm': 'application/wasm',
  '.png': 'image/png',
};
/**
 * Browsers resolve no bare module names: the compiled modules' dependencies are served at
 * /vendor/: jinja's own ES module build (wherever the package manager put it), the audio
 * decoders and libwebp's as the browser bundles `npm run build` makes (dist/vendor/, see
 * webui/build.mjs), and libwebp's .wasm from its package.
 * The modules' static and dynamic imports of them are rewritten to those paths.
 */
const VENDOR: Record<string, { file: string; from: string }> = {
  'jinja.js': { file: fileURLToPath(import.meta.resolve('@huggingface/jinja')), from: '@huggingface/jinja' },
  'flac.js': { file: join(ROOT, 'dist/vendor/flac.js'), from: '@wasm-audio-decoders/flac' },
  'mpg123.js': { file: join(ROOT, 'dist/vendor/mpg123.js'), from: 'mpg123-decoder' },
  'webp.js': { file: join(ROOT, 'dist/vendor/webp.js'), from: '@jsquash/webp/decode.js' },
  // fetched by webp.js beside itself (no module imports it by name)
  'webp_dec.wasm': {
    file: fileURLToPath(import.meta.resolve('@jsquash/webp/codec/dec/webp_dec.wasm')),
    from: '@jsquash/webp/codec/dec/webp_dec.wasm',
  },
};
const BARE: [RegExp, string][] = Object.entries(VENDOR).flatMap(([name, { from }]) => {
  const q = from.replace(/[/.]/g, '\\$&');
  return [
    [new RegExp(`from '${q}'`, 'g'), `from '/vendor/${name}'`],
    [new RegExp(`import\\('${q}'\\)`, 'g'), `import('/vendor/${name}')`],
  ] as [RegExp, string][];
});

export interface WebServerOptions {
  port?: number;
  host?: string;
  /** Models served at /models/<name>: name → file. */
  models?: Record<string, string>;
  /** Send COOP/COEP (default true); false serves a page that is not cross-origin isolated. */
  isolated?: boolean;
  /** Other folders served read-only at /<prefix>/ (bench:web's peer engines): prefix → folder. */
  mounts?: Record<string, string>;
}

export interface WebServer {
  readonly url: string;
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(body);
}

/** A file with range requests (206, 416), as a model download resumes. */
function sendFile(req: IncomingMessage, res: ServerResponse, file: string, type: string): void {
  const st = statSync(file);
  const size = st.size;
  // a version tag, so a resumed download of a file that changed starts over (If-Range)
  const etag = `"${size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
  res.setHeader('etag', etag);
  const ifRange = req.headers['if-range'];
  const range = /^bytes=(\d*)-(\d*)$/.exec(req.headers.range ?? '');
  if (req.headers.range && range && (ifRange === undefined || ifRange === etag)) {
    const start = range[1] === '' ? Math.max(0, size - Number(range[2])) : Number(range[1]);
    const end = range[1] !== '' && range[2] !== '' ? Math.min(Number(range[2]), size - 1) : size - 1;
    if (start >= size || start > end) {
      res.writeHead(416, { 'content-range': `bytes */${size}` });
      res.end();
      return;
    }
    res.writeHead(206, {
      'content-type': type,
      'content-length': end - start + 1,
      'content-range': `bytes ${start}-${end}/${size}`,
      'accept-ranges': 'bytes',
    });
    if (req.method === 'HEAD') res.end();
    else createReadStream(file, { start, end }).pipe(res);
    return;
  }
  res.writeHead(200, { 'content-type': type, 'content-length': size, 'accept-ranges': 'bytes' });
  if (req.method === 'HEAD') res.end();
  else createReadStream(file).pipe(res);
}

export function serveWeb(options: WebServerOptions = {}): Promise<WebServer> {
  const models = options.models ?? {};
  const isolated = options.isolated !== false;
  const server = createServer((req, res) => {
    if (isolated) {
      res.setHeader('cross-origin-opener-policy', 'same-origin');
      res.setHeader('cross-origin-embedder-policy', 'require-corp');
    }
    res.setHeader('cross-origin-resource-policy', 'same-origin');
    res.setHeader('cache-control', 'no-cache');
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, 'GET only');
    let path: string;
    try {
      path = decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname);
    } catch {
      return send(res, 400, 'bad path');
    }
    if (path === '/') {
      // the example's own folder, so its relative links resolve
      res.writeHead(302, { location: '/examples/browser/' });
      res.end();
      return;
    }
    if (path.endsWith('/')) path += 'index.html';
    if (path === '/blank.html') {
      // an empty page on this origin (the tests and the browser benchmark drive the engine from it)
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><meta charset="utf-8"><title>llama-ts</title>');
      return;
    }
    if (path === '/models.json') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(Object.keys(models).map((n) => `/models/${n}`)));
      return;
    }
    if (path.startsWith('/vendor/')) {
      const name = path.slice('/vendor/'.length);
      const v = Object.hasOwn(VENDOR, name) ? VENDOR[name] : undefined;
      if (!v || !existsSync(v.file)) return send(res, 404, 'not found');
      return sendFile(req, res, v.file, TYPES[extname(name)] ?? TYPES['.js']!);
    }
    if (path === '/favicon.ico') {
      res.writeHead(204);
      res.end();
      return;
    }
    if (path.startsWith('/models/')) {
      const file = models[path.slice('/models/'.length)];
      if (!file || !existsSync(file)) return send(res, 404, 'no such model');
      return sendFile(req, res, file, 'application/octet-stream');
    }
    const rel = normalize(path.slice(1));
    const mount = Object.entries(options.mounts ?? {}).find(([p]) => rel.startsWith(`${p}/`));
    if (mount) {
      const file = join(mount[1], rel.slice(mount[0].length + 1));
      if (rel.includes('..') || !existsSync(file) || !statSync(file).isFile()) return send(res, 404, 'not found');
      return sendFile(req, res, file, TYPES[extname(file)] ?? 'application/octet-stream');
    }
    if (rel.startsWith('..') || !SERVED.some((p) => rel === p || (p.endsWith('/') && rel.startsWith(p)))) {
      return send(res, 404, 'not found');
    }
    const file = join(ROOT, rel);
    if (!existsSync(file) || !statSync(file).isFile()) return send(res, 404, 'not found');
    const type = TYPES[extname(file)] ?? 'application/octet-stream';
    if (extname(file) === '.js' && rel.startsWith('dist/')) {
      let text = readFileSync(file, 'utf8');
      for (const [re, to] of BARE) text = text.replace(re, to);
      res.writeHead(200, { 'content-type': type });
      res.end(text);
      return;
    }
    sendFile(req, res, file, type);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 8090, options.host ?? '127.0.0.1', () => {
      const a = server.address() as AddressInfo;
      const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
      resolve({
        url: `http://${host}:${a.port}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

export async function webCommand(argv: string[]): Promise<number> {
  let values: { port?: string; host?: string; model?: string[]; help?: boolean };
  try {
    values = parseArgs({
      args: argv,
      strict: true,
      options: {
        port: { type: 'string' },
        host: { type: 'string' },
        model: { type: 'string', short: 'm', multiple: true },
        help: { type: 'boolean', short: 'h' },
      },
    }).values;
    if (values.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (values.port !== undefined && !/^\d+$/.test(values.port))
      throw new UsageError(`--port: not a port: '${values.port}'`);
    for (const m of values.model ?? []) if (!existsSync(m)) throw new UsageError(`--model: no such file: ${m}`);
  } catch (e) {
    return usageError('web', HELP, (e as Error).message);
  }
  const models = Object.fromEntries((values.model ?? []).map((m) => [basename(m), m]));
  const s = await serveWeb({
    port: values.port === undefined ? 8090 : Number(values.port),
    ...(values.host ? { host: values.host } : {}),
    models,
  });
  process.stdout.write(`llama-ts web: ${s.url}/ (cross-origin isolated)\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await s.close();
  return 0;
}
