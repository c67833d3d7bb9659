// Model downloads from Hugging Face's resolve endpoint into a local cache:
//
//   <endpoint>/<owner>/<name>/resolve/<revision>/<file>  ──►  <cache>/<owner>/<name>/<file>
//
// A transfer writes `<file>.part` and resumes it with an HTTP Range request (after an
// interruption, within the same pull or a later one); `<file>.lock` (created with O_EXCL,
// refreshed while the transfer runs, taken over when its owner is gone or it goes stale)
// keeps two processes from writing the same file; the result is checked against the
// size and the sha256 the server names (X-Linked-Etag / ETag of an LFS file) before it is
// renamed into place. Endpoint: LLAMA_TS_HF_ENDPOINT (default https://huggingface.co);
// cache: --cache-dir, else LLAMA_TS_CACHE, else ~/.cache/llama-ts; token: HF_TOKEN.
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fsp } from 'node:fs';
import { homedir, hostname } from 'node:os';
import { dirname, join, normalize, sep } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { logger } from '../log.js';

const log = logger('download');

/** The default chat model (downloaded on first use by `chat` and `serve` without -m). */
export const DEFAULT_MODEL = { repo: 'Qwen/Qwen2.5-0.5B-Instruct-GGUF', file: 'qwen2.5-0.5b-instruct-q4_k_m.gguf' };

export class DownloadError extends Error {
  override name = 'DownloadError';
}

/** The endpoint cannot be reached at all (no name resolution, no route, connection refused): retrying will not help. */
export class HubUnreachableError extends DownloadError {}

// connection-level failures (the request never reached a server), as undici reports them in `cause`
const UNREACHABLE = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'ECONNREFUSED',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'EHOSTDOWN',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/** fetch; a request that could not connect at all becomes a HubUnreachableError naming the origin and the cause. */
async function fetchOrUnreachable(f: typeof fetch, url: string, init: RequestInit): Promise<Response> {
  try {
    return await f(url, init);
  } catch (e) {
    const cause = (e as { cause?: { code?: unknown; message?: unknown } })?.cause;
    if (typeof cause?.code === 'string' && UNREACHABLE.has(cause.code)) {
      const origin = new URL(url).origin;
      const what = origin === 'https://huggingface.co' ? 'the Hugging Face Hub' : `the Hugging Face endpoint`;
      throw new HubUnreachableError(`cannot reach ${what} at ${origin} (${String(cause.message ?? cause.code)})`);
    }
    throw e;
  }
}

export function hfEndpoint(): string {
  return (process.env.LLAMA_TS_HF_ENDPOINT || 'https://huggingface.co').replace(/\/+$/, '');
}

export function cacheDir(flag?: string): string {
  return flag || process.env.LLAMA_TS_CACHE || join(homedir(), '.cache', 'llama-ts');
}

export interface HfFile {
  repo: string;
  file: string;
  revision: string;
}

const REPO_RE = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;
const REVISION_RE = /^[\w.-]+$/;

/**
 * One path component that may reach the file system: not empty, not `.` or `..`, no
 * separator (either slash), NUL or other control character. Every name that becomes part
 * of a cache path (owner, repository, revision, each folder of a file name, whether typed
 * by the user or taken from a repository listing) passes through here.
 */
function checkComponent(part: string): boolean {
  return part !== '' && part !== '.' && part !== '..' && !/[/\\\x00-\x1f\x7f]/.test(part);
}

function checkRepo(repo: string): void {
  if (!REPO_RE.test(repo) || !repo.split('/').every(checkComponent) || repo.includes('..'))
    throw new DownloadError(`'${repo}' is not a Hugging Face repository (owner/name)`);
}

function checkRevision(revision: string): void {
  if (!REVISION_RE.test(revision) || !checkComponent(revision) || revision.includes('..'))
    throw new DownloadError(`bad revision '${revision}' (letters, digits, '_', '-' and '.', not '..')`);
}

function checkFile(file: string): void {
  if (file.startsWith('/') || !file.split('/').every(checkComponent)) {
    throw new DownloadError(`'${file}' is not a file path inside a repository`);
  }
}

/** `owner/name/path/file.gguf` or `hf://owner/name/path/file.gguf` (optionally `owner/name@rev/file`). */
export function parseHfPath(spec: string): HfFile {
  const s = spec.replace(/^hf:\/\//, '');
  const parts = s.split('/');
  if (parts.length < 3) throw new DownloadError(`'${spec}' must be <owner>/<repo>/<file>.gguf`);
  let [owner, name] = parts as [string, string];
  let revision = 'main';
  const at = name.indexOf('@');
  if (at >= 0) {
    revision = name.slice(at + 1);
    name = name.slice(0, at);
    checkRevision(revision);
  }
  const repo = `${owner}/${name}`;
  const file = parts.slice(2).join('/');
  checkRepo(repo);
  checkFile(file);
  return { repo, file, revision };
}

export function resolveUrl(f: HfFile, endpoint = hfEndpoint()): string {
  checkRepo(f.repo);
  checkRevision(f.revision);
  checkFile(f.file);
  const file = f.file.split('/').map(encodeURIComponent).join('/');
  return `${endpoint}/${f.repo}/resolve/${encodeURIComponent(f.revision)}/${file}`;
}

/**
 * `<cache>/<owner>/<name>[/@<revision>]/<file>`. The only place names become paths: every
 * part is checked here, wherever it came from, and the result must lie inside that
 * repository's (and revision's) own folder.
 */
export function cachePath(f: HfFile, dir = cacheDir()): string {
  checkRepo(f.repo);
  checkRevision(f.revision);
  checkFile(f.file);
  const home = normalize(join(dir, ...f.repo.split('/'), ...(f.revision === 'main' ? [] : [`@${f.revision}`])));
  const p = normalize(join(home, ...f.file.split('/')));
  if (!p.startsWith(home + sep)) throw new DownloadError(`'${f.file}' leaves the repository's cache folder ${home}`);
  return p;
}

function authHeaders(url: string): Record<string, string> {
  const token = process.env.HF_TOKEN;
  if (!token) return {};
  // the token goes to the Hugging Face endpoint only, never to a host a redirect names
  return new URL(url).origin === new URL(hfEndpoint()).origin ? { Authorization: `Bearer ${token}` } : {};
}

/** `owner/name[:quant]` as the repository and the lower-case quantization (default q4_k_m). */
export function splitHfSpec(spec: string): { repo: string; quant: string } {
  const colon = spec.lastIndexOf(':');
  const repo = colon > 0 ? spec.slice(0, colon) : spec;
  const quant = (colon > 0 ? spec.slice(colon + 1) : 'Q4_K_M').toLowerCase();
  checkRepo(repo);
  return { repo, quant };
}

/** The GGUF file for `quant` among `names` (not a projector; a single file before a split one). */
export function pickQuant(names: readonly string[], quant: string): string | undefined {
  const files = names.filter((n) => n.toLowerCase().endsWith('.gguf') && !/mmproj/i.test(n));
  const matches = files.filter((n) => n.toLowerCase().includes(quant));
  return matches.find((n) => !/-\d{5}-of-\d{5}\.gguf$/i.test(n)) ?? matches[0];
}

/**
 * The multimodal projector among a repository's files, as -hf takes one with the model (llama-server
 * gets it from the Hub's manifest): a .gguf whose name has "mmproj", the one for the model's
 * quantization if there is one, else F16, BF16, Q8_0, F32, else the first by name.
 */
export function pickMmproj(names: readonly string[], quant: string): string | undefined {
  const files = names.filter((n) => n.toLowerCase().endsWith('.gguf') && /mmproj/i.test(n)).sort();
  for (const q of [quant, 'f16', 'bf16', 'q8_0', 'f32']) {
    const hit = files.find((n) => n.toLowerCase().includes(q));
    if (hit) return hit;
  }
  return files[0];
}

/** `-hf owner/name[:quant]`: the repository's GGUF file for the quantization (default Q4_K_M), by its file list, and its projector if it has one. */
export async function resolveHfRepo(
  spec: string,
  fetchImpl: typeof fetch = fetch,
): Promise<HfFile & { mmproj?: string }> {
  const { repo, quant } = splitHfSpec(spec);
  const url = `${hfEndpoint()}/api/models/${repo}`;
  let res: Response;
  try {
    res = await fetchOrUnreachable(fetchImpl, url, { headers: authHeaders(url) });
  } catch (e) {
    if (e instanceof DownloadError) throw e;
    throw new DownloadError(`${url}: ${(e as Error).message}`);
  }
  if (!res.ok) throw new DownloadError(`${url}: HTTP ${res.status}`);
  let info: { siblings?: unknown };
  try {
    info = (await res.json()) as { siblings?: unknown };
  } catch (e) {
    throw new DownloadError(`${url}: the file list is not JSON (${(e as Error).message})`);
  }
  const siblings = Array.isArray(info?.siblings) ? (info.siblings as { rfilename?: unknown }[]) : [];
  const files = siblings.map((s) => (typeof s?.rfilename === 'string' ? s.rfilename : ''));
  const pick = pickQuant(files, quant);
  if (!pick) {
    const ggufs = files.filter((n) => n.toLowerCase().endsWith('.gguf') && !/mmproj/i.test(n));
    throw new DownloadError(
      `${repo} has no GGUF file for '${quant}'; it has: ${ggufs.join(', ') || '(no GGUF files)'}`,
    );
  }
  if (/-\d{5}-of-\d{5}\.gguf$/i.test(pick))
    throw new DownloadError(`${pick} is a split model; split files are not supported`);
  try {
    checkFile(pick);
  } catch {
    throw new DownloadError(`${repo}'s file list names '${pick}', which is not a file path inside a repository`);
  }
  const mmproj = pickMmproj(files, quant);
  if (mmproj !== undefined) checkFile(mmproj);
  return { repo, file: pick, revision: 'main', ...(mmproj !== undefined ? { mmproj } : {}) };
}

export interface Progress {
  file: string;
  received: number;
  total: number | undefined;
  /** The file's sha256 (hex) when the server names it (an LFS file's X-Linked-Etag / ETag). */
  sha256?: string;
}

export interface PullOptions {
  cacheDir?: string;
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
  /** Attempts after an interrupted transfer (each resumes). Default 5. */
  retries?: number;
  /** A lock older than this (not refreshed) is taken over. Default 60 s. */
  staleLockMs?: number;
  fetchImpl?: typeof fetch;
}

function isSha256(s: string | undefined): s is string {
  return s !== undefined && /^[0-9a-f]{64}$/i.test(s);
}

function etagValue(h: string | null): string | undefined {
  if (!h) return undefined;
  return h.replace(/^W\//, '').replace(/"/g, '').trim();
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Takes `<path>.lock` (O_EXCL); waits while another live process holds it. Returns the release function. */
async function lock(path: string, staleMs: number, signal?: AbortSignal): Promise<() => Promise<void>> {
  const lockPath = `${path}.lock`;
  const me = JSON.stringify({ pid: process.pid, host: hostname(), time: Date.now() });
  let waited = false;
  for (;;) {
    signal?.throwIfAborted();
    try {
      const fh = await fsp.open(lockPath, 'wx');
      await fh.writeFile(me);
      await fh.close();
      const beat = setInterval(
        () => {
          const now = new Date();
          fsp.utimes(lockPath, now, now).catch(() => {});
        },
        Math.max(250, Math.floor(staleMs / 4)),
      );
      beat.unref();
      return async () => {
        clearInterval(beat);
        await fsp.rm(lockPath, { force: true });
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    // someone holds it: take it over when its owner is gone, or it has not been refreshed
    let stale = false;
    try {
      const [text, st] = await Promise.all([fsp.readFile(lockPath, 'utf8'), fsp.stat(lockPath)]);
      let owner: { pid?: number; host?: string } = {};
      try {
        owner = JSON.parse(text);
      } catch {
        // written but not yet filled in: judge by age only
      }
      if (owner.host === hostname() && typeof owner.pid === 'number' && !pidAlive(owner.pid)) stale = true;
      if (Date.now() - st.mtimeMs > staleMs) stale = true;
    } catch {
      continue; // it went away meanwhile
    }
    if (stale) {
      log.warn(`taking over the stale lock ${lockPath}`);
      await fsp.rm(lockPath, { force: true });
      continue;
    }
    if (!waited) log.info(`waiting for another process downloading ${path}`);
    waited = true;
    await sleep(100);
  }
}

async function exists(p: string): Promise<boolean> {
  try {
    await fsp.access(p);
    return true;
  } catch {
    return false;
  }
}

/** A file's sha256, hex. */
export async function fileSha256(path: string): Promise<string> {
  const h = createHash('sha256');
  await pipeline(createReadStream(path), h);
  return h.digest('hex');
}

interface Target {
  url: string;
  sha256: string | undefined;
  size: number | undefined;
}

/**
 * GET with a Range from `offset`, following redirects by hand so that the first
 * response's X-Linked-Etag / X-Linked-Size (the LFS object's sha256 and size) are seen.
 */
async function open(
  url: string,
  offset: number,
  f: typeof fetch,
  signal?: AbortSignal,
): Promise<{ res: Response; target: Target }> {
  const target: Target = { url, sha256: undefined, size: undefined };
  let cur = url;
  for (let hop = 0; hop < 10; hop++) {
    const headers: Record<string, string> = { ...authHeaders(cur), 'User-Agent': 'llama-ts' };
    if (offset > 0) headers.Range = `bytes=${offset}-`;
    const res = await fetchOrUnreachable(f, cur, { headers, redirect: 'manual', ...(signal ? { signal } : {}) });
    const linked = etagValue(res.headers.get('x-linked-etag'));
    if (isSha256(linked)) target.sha256 ??= linked.toLowerCase();
    const linkedSize = Number(res.headers.get('x-linked-size'));
    if (Number.isFinite(linkedSize) && linkedSize > 0) target.size ??= linkedSize;
    if (res.status >= 300 && res.status < 400 && res.headers.get('location')) {
      await res.body?.cancel();
      cur = new URL(res.headers.get('location')!, cur).toString();
      continue;
    }
    const etag = etagValue(res.headers.get('etag'));
    if (isSha256(etag)) target.sha256 ??= etag.toLowerCase();
    return { res, target };
  }
  throw new DownloadError(`${url}: too many redirects`);
}

/** Downloads one file of a repository into the cache (if not there yet); returns its path. */
export async function pull(f: HfFile, opts: PullOptions = {}): Promise<string> {
  const dest = cachePath(f, cacheDir(opts.cacheDir));
  if (await exists(dest)) return dest;
  await fsp.mkdir(dirname(dest), { recursive: true });
  const release = await lock(dest, opts.staleLockMs ?? 60_000, opts.signal);
  try {
    if (await exists(dest)) return dest; // another process finished it while we waited
    await transfer(resolveUrl(f), dest, f.file, opts);
    return dest;
  } finally {
    await release();
  }
}

async function transfer(url: string, dest: string, name: string, opts: PullOptions): Promise<void> {
  const part = `${dest}.part`;
  const fetchImpl = opts.fetchImpl ?? fetch;
  const retries = opts.retries ?? 5;
  let expected: Target | undefined;
  for (let attempt = 0; ; attempt++) {
    let offset = 0;
    try {
      offset = (await fsp.stat(part)).size;
    } catch {
      // no partial file
    }
    try {
      const { res, target } = await open(url, offset, fetchImpl, opts.signal);
      if (expected?.sha256 && target.sha256 && expected.sha256 !== target.sha256) {
        // the file changed upstream between attempts: start over
        await fsp.rm(part, { force: true });
        await res.body?.cancel();
        expected = target;
        continue;
      }
      expected = target;
      let append = false;
      if (res.status === 416 && offset > 0) {
        // the partial file may already be whole
        await res.body?.cancel();
        if (target.size === offset) break;
        await fsp.rm(part, { force: true });
        continue;
      }
      if (res.status === 206) {
        const m = /bytes (\d+)-/.exec(res.headers.get('content-range') ?? '');
        if (!m || Number(m[1]) !== offset) throw new DownloadError(`${url}: the server resumed at the wrong offset`);
        append = true;
        const total = /\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
        if (total) target.size ??= Number(total[1]);
      } else if (res.status === 200) {
        const len = Number(res.headers.get('content-length'));
        if (Number.isFinite(len) && len >= 0 && res.headers.get('content-length') !== null) target.size ??= len;
      } else {
        await res.body?.cancel();
        const hint = res.status === 401 || res.status === 403 ? ' (a gated or private repository needs HF_TOKEN)' : '';
        throw new DownloadError(`${url}: HTTP ${res.status}${hint}`);
      }
      if (!res.body) throw new DownloadError(`${url}: empty response`);
      let received = append ? offset : 0;
      const report = opts.onProgress;
      const sha = target.sha256 ? { sha256: target.sha256 } : {};
      report?.({ file: name, received, total: target.size, ...sha });
      const body = Readable.fromWeb(res.body as unknown as WebReadableStream<Uint8Array>);
      body.on('data', (c: Buffer) => {
        received += c.length;
        report?.({ file: name, received, total: target.size, ...sha });
      });
      await pipeline(body, createWriteStream(part, { flags: append ? 'a' : 'w' }));
      if (target.size !== undefined && received < target.size)
        throw new Interrupted(`${received} of ${target.size} bytes`);
      break;
    } catch (e) {
      if (opts.signal?.aborted) throw e;
      // an endpoint that cannot be reached at all fails at once; after part of the file
      // arrived, it is a dropped connection like any other, retried
      if (e instanceof DownloadError && !(e instanceof HubUnreachableError && attempt > 0)) throw e;
      if (attempt >= retries)
        throw e instanceof DownloadError ? e : new DownloadError(`${url}: ${(e as Error).message}`);
      log.warn(`download of ${name} interrupted (${(e as Error).message}); resuming (${attempt + 1}/${retries})`);
      await sleep(Math.min(200 * 2 ** attempt, 5000));
    }
  }
  const st = await fsp.stat(part);
  if (expected?.size !== undefined && st.size !== expected.size) {
    await fsp.rm(part, { force: true });
    throw new DownloadError(`${name}: ${st.size} bytes downloaded, the server announced ${expected.size}`);
  }
  if (expected?.sha256) {
    const got = await fileSha256(part);
    if (got !== expected.sha256) {
      await fsp.rm(part, { force: true });
      throw new DownloadError(`${name}: sha256 ${got} does not match the server's ${expected.sha256}`);
    }
  }
  await fsp.rename(part, dest);
  log.info(`downloaded ${name} (${st.size} bytes)${expected?.sha256 ? ', sha256 verified' : ''}`);
}

class Interrupted extends Error {}

export interface ModelArg {
  /** -m: a path, or hf://owner/name/file.gguf. */
  model?: string | undefined;
  /** -hf owner/name[:quant]. */
  hfRepo?: string | undefined;
  cacheDir?: string | undefined;
  /** With neither: download the default chat model. */
  useDefault?: boolean;
  onProgress?: (p: Progress) => void;
}

/** Progress on a terminal only: one rewritten line on stderr. */
export function ttyProgress(): ((p: Progress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let last = 0;
  return (p) => {
    const now = Date.now();
    const done = p.total !== undefined && p.received >= p.total;
    if (now - last < 100 && !done) return;
    last = now;
    const mb = (n: number) => (n / 1048576).toFixed(1);
    const pct = p.total ? ` ${((100 * p.received) / p.total).toFixed(1)}%` : '';
    process.stderr.write(
      `\r${p.file}: ${mb(p.received)}${p.total ? `/${mb(p.total)}` : ''} MiB${pct}${done ? '\n' : ''}`,
    );
  };
}

/** The local path for -m / -hf (downloading what is needed), or the default model. */
export async function resolveModelArg(a: ModelArg): Promise<string> {
  const progress = a.onProgress ?? ttyProgress();
  const dir = cacheDir(a.cacheDir);
  const opts: PullOptions = {
    ...(a.cacheDir ? { cacheDir: a.cacheDir } : {}),
    ...(progress ? { onProgress: progress } : {}),
  };
  if (a.model !== undefined && a.hfRepo !== undefined) throw new DownloadError('give either -m or -hf, not both');
  if (a.model?.startsWith('hf://')) {
    const f = parseHfPath(a.model);
    return offline(pull(f, opts), `${f.repo}/${f.file} is not in the cache (${cachePath(f, dir)})`);
  }
  if (a.model !== undefined) return a.model;
  if (a.hfRepo !== undefined) {
    let f: HfFile;
    try {
      f = await resolveHfRepo(a.hfRepo);
    } catch (e) {
      if (!(e instanceof HubUnreachableError)) throw e;
      // offline: a file of that repository and quantization pulled before will do
      const { repo, quant } = splitHfSpec(a.hfRepo);
      const cached = await cachedQuant(dir, repo, quant);
      if (cached) {
        log.warn(`${e.message}; using the cached ${cached}`);
        return cached;
      }
      throw offlineError(
        e,
        `no GGUF file of ${repo} for '${quant}' is in the cache (${join(dir, ...repo.split('/'))})`,
      );
    }
    return offline(pull(f, opts), `${f.repo}/${f.file} is not in the cache (${cachePath(f, dir)})`);
  }
  if (!a.useDefault) throw new DownloadError('a model is required (-m MODEL.gguf or -hf REPO[:QUANT])');
  log.info(`no model given: using ${DEFAULT_MODEL.repo}/${DEFAULT_MODEL.file}`);
  const f = { ...DEFAULT_MODEL, revision: 'main' };
  return offline(pull(f, opts), `the default model ${f.repo}/${f.file} is not in the cache (${cachePath(f, dir)}) yet`);
}

/**
 * The projector -hf brings with the model (llama-server's --mmproj-auto): the repository's mmproj
 * file, downloaded once; undefined when the repository has none. Offline, one pulled before will do.
 */
export async function resolveMmprojArg(a: {
  hfRepo: string;
  cacheDir?: string | undefined;
  onProgress?: (p: Progress) => void;
}): Promise<string | undefined> {
  const progress = a.onProgress ?? ttyProgress();
  const dir = cacheDir(a.cacheDir);
  let f: Awaited<ReturnType<typeof resolveHfRepo>>;
  try {
    f = await resolveHfRepo(a.hfRepo);
  } catch (e) {
    if (!(e instanceof HubUnreachableError)) throw e;
    const { repo, quant } = splitHfSpec(a.hfRepo);
    const home = join(dir, ...repo.split('/'));
    const names = await fsp.readdir(home, { recursive: true }).catch(() => [] as string[]);
    const pick = pickMmproj(
      names.map((n) => n.split(sep).join('/')).filter((n) => !n.startsWith('@')),
      quant,
    );
    return pick === undefined ? undefined : join(home, ...pick.split('/'));
  }
  if (f.mmproj === undefined) return undefined;
  const file: HfFile = { repo: f.repo, file: f.mmproj, revision: f.revision };
  return pull(file, { ...(a.cacheDir ? { cacheDir: a.cacheDir } : {}), ...(progress ? { onProgress: progress } : {}) });
}

/** An unreachable Hub, said with what is missing locally and how to run without it. */
function offlineError(e: HubUnreachableError, missing: string): HubUnreachableError {
  return new HubUnreachableError(
    `${e.message}, and ${missing}. Connect to download it once, or run a local file: -m FILE.gguf`,
  );
}

async function offline(p: Promise<string>, missing: string): Promise<string> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof HubUnreachableError) throw offlineError(e, missing);
    throw e;
  }
}

/** A finished download of `repo` for `quant` in the cache, as the repository listing would pick it. */
export async function cachedQuant(dir: string, repo: string, quant: string): Promise<string | undefined> {
  const home = join(dir, ...repo.split('/'));
  let names: string[];
  try {
    names = await fsp.readdir(home, { recursive: true });
  } catch {
    return undefined;
  }
  // the main revision only (revisions live in @rev folders)
  const pick = pickQuant(
    names.map((n) => n.split(sep).join('/')).filter((n) => !n.startsWith('@')),
    quant,
  );
  return pick === undefined ? undefined : join(home, ...pick.split('/'));
}
