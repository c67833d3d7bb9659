// The chat page (webui/ at the package root; its sources bundled into dist/webui/ by
// `npm run build`, shipped prebuilt): a fixed table of files, so no request path ever
// reaches the file system. Each file is read once, kept with its gzip form and an ETag;
// answers carry a strict CSP (scripts and styles from this origin only, nothing inline).
// The page names its assets with `?v=<build id>` (a hash of them all): such a request is
// cached for a year, immutable; any other answer is revalidated (no-cache + ETag → 304).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ROOT } from './build.js';
import { ApiError, type RequestContext } from './http.js';

const HTML = 'text/html; charset=utf-8';
const JS = 'text/javascript; charset=utf-8';

/** URL path → file under the package root, and its type. */
const FILES: Record<string, { file: string; type: string }> = {
  '/': { file: 'webui/index.html', type: HTML },
  '/index.html': { file: 'webui/index.html', type: HTML },
  '/webui/app.css': { file: 'dist/webui/app.css', type: 'text/css; charset=utf-8' },
  '/webui/app.js': { file: 'dist/webui/app.js', type: JS },
  '/webui/math.js': { file: 'dist/webui/math.js', type: JS },
};

/** The files the page loads (versioned with the build id). */
const ASSETS = ['dist/webui/app.css', 'dist/webui/app.js', 'dist/webui/math.js'];

export const WEBUI_PATHS = Object.keys(FILES);
/** The files behind them, relative to the package root (each must be published). */
export const WEBUI_FILES = [...new Set(Object.values(FILES).map((f) => f.file))];

/** The page's Content-Security-Policy: this origin only, no inline script or style, no framing. */
export const WEBUI_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

interface Loaded {
  body: Buffer;
  gzip: Buffer;
  etag: string;
}

const cache = new Map<string, Loaded>();
let buildId: string | undefined;

function read(file: string): Buffer {
  try {
    return readFileSync(join(ROOT, file));
  } catch (e) {
    throw new ApiError(
      500,
      `the chat page's ${file} is missing (${(e as Error).message}); build it with \`npm run build\` or run serve with --no-webui`,
    );
  }
}

/** A hash of every asset: it changes whenever one does, so a versioned URL never goes stale. */
function currentBuildId(): string {
  if (buildId === undefined) {
    const h = createHash('sha256');
    for (const f of ASSETS) h.update(load(f).etag);
    buildId = h.digest('base64url').slice(0, 16);
  }
  return buildId;
}

function load(file: string): Loaded {
  let hit = cache.get(file);
  if (hit) return hit;
  let body = read(file);
  if (file.endsWith('.html')) {
    // the page's own asset URLs carry the build id
    const v = currentBuildId();
    body = Buffer.from(body.toString('utf8').replace(/"\/webui\/(app\.(?:js|css))"/g, `"/webui/$1?v=${v}"`));
  }
  hit = {
    body,
    gzip: gzipSync(body, { level: 9 }),
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`,
  };
  cache.set(file, hit);
  return hit;
}

/** Whether the request's Accept-Encoding takes gzip (and does not refuse it with q=0). */
function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  return header.split(',').some((part) => {
    const [name, ...params] = part.trim().split(';');
    if (name?.trim().toLowerCase() !== 'gzip' && name?.trim() !== '*') return false;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    return q === undefined || Number(q.slice(2)) > 0;
  });
}

/** Answers GET for one of the page's paths. */
export function serveWebui(c: RequestContext): void {
  const entry = FILES[c.url.pathname];
  if (!entry) throw new ApiError(404, `no endpoint ${c.url.pathname}`);
  const f = load(entry.file);
  const headers: Record<string, string> = {
    'Content-Type': entry.type,
    'Cache-Control':
      entry.type !== HTML && c.url.searchParams.get('v') === currentBuildId()
        ? 'public, max-age=31536000, immutable'
        : 'no-cache',
    ETag: f.etag,
    Vary: [c.res.getHeader('Vary'), 'Accept-Encoding'].filter(Boolean).join(', '),
    'Content-Security-Policy': WEBUI_CSP,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'Cross-Origin-Opener-Policy': 'same-origin',
  };
  if (c.req.headers['if-none-match'] === f.etag) {
    c.res.writeHead(304, headers);
    c.res.end();
    return;
  }
  const gz = acceptsGzip(c.req.headers['accept-encoding']);
  const body = gz ? f.gzip : f.body;
  if (gz) headers['Content-Encoding'] = 'gzip';
  headers['Content-Length'] = String(body.length);
  c.res.writeHead(200, headers);
  c.res.end(body);
}
