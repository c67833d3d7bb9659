// The HTTP layer on node:http: routing by method and path, the API key (checked in
// constant time), opt-in CORS, OpenAI-style error JSON and access logs, and the limits
// that keep hostile or broken clients from holding the server:
//   - a request body limit (413), and a bound on the bytes of bodies still arriving across
//     all connections (503 beyond it), so slow uploads cannot pin memory;
//   - a timeout (llama-server's --timeout, default 600 s) on receiving a whole request and
//     on any connection where nothing moves while the server waits on the client
//     (reading a request, or writing a response the client does not read); time spent
//     generating an answer does not count;
//   - a connection cap: at it, the connection that has waited longest on its client (a
//     stalled upload, an idle keep-alive; idle for 1 s at least) is closed to make room,
//     else the new connection gets a 503 and is closed at once, so file descriptors never
//     run out (when they do, every new connection fails, /health included).
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { logger } from '../log.js';

const log = logger('server');

/** An error answered as `{ error: { message, type, code } }` with an HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = errorType(status),
    readonly param: string | null = null,
    /** More fields of the error object (llama-server's n_prompt_tokens / n_ctx). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

function errorType(status: number): string {
  switch (status) {
    case 400:
    case 413:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 405:
      return 'invalid_request_error';
    case 429:
    case 503:
      return 'unavailable_error';
    case 501:
      return 'not_supported_error';
    default:
      return 'server_error';
  }
}

export function errorBody(e: ApiError): {
  error: { message: string; type: string; code: number; param: string | null };
} {
  return { error: { message: e.message, type: e.type, code: e.status, param: e.param, ...e.extra } };
}

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** The parsed JSON body (POST, DELETE), else undefined. */
  body: unknown;
  /** Values of the route's `:name` path segments. */
  params: Record<string, string>;
}

export type Handler = (c: RequestContext) => Promise<void> | void;

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  /** The path; a segment `:name` matches any one segment (its value in `RequestContext.params`). */
  path: string;
  handler: Handler;
  /** Reachable without the API key (llama-server's public endpoints: health, models). */
  public?: boolean;
  /** The body an error gets on this route (default: OpenAI's `{ error: { message, type, code } }`). */
  errorBody?: (e: ApiError) => unknown;
}

export interface HttpOptions {
  apiKey?: string | undefined;
  /** Allowed origin for CORS ('*' or one origin); off when undefined. */
  cors?: string | undefined;
  /** Largest request body in bytes. */
  maxBodyBytes: number;
  /** Bytes of request bodies still arriving, over all connections, at most (default 128 MiB); beyond: 503. */
  maxPendingBodyBytes?: number | undefined;
  /** Seconds to receive a whole request, and that a connection may stall while the server waits on the client (default 600). */
  timeout?: number | undefined;
  /** Open connections at most (default 512); a new one beyond it gets a 503 and is closed. */
  maxConnections?: number | undefined;
  /** Headers of the API's own that clients send and read (CORS allows and exposes them). */
  exposeHeaders?: string[];
  onRequest?: () => void;
  onErrorStatus?: () => void;
  /** A connection refused at the cap. */
  onConnectionRejected?: () => void;
}

export const HTTP_DEFAULTS = {
  timeout: 600,
  maxConnections: 512,
  maxPendingBodyBytes: 128 * 1024 * 1024,
  maxBodyBytes: 10 * 1024 * 1024,
} as const;

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

/** The request's API key (Authorization: Bearer KEY, or x-api-key) against the expected one, in constant time. */
export function keyMatches(req: IncomingMessage, expected: string): boolean {
  const auth = req.headers.authorization;
  let given: string | undefined;
  if (typeof auth === 'string' && /^bearer\s+/i.test(auth)) given = auth.replace(/^bearer\s+/i, '').trim();
  else if (typeof req.headers['x-api-key'] === 'string') given = req.headers['x-api-key'];
  // hashing first makes both sides the same length, so the comparison time says nothing
  const ok = timingSafeEqual(digest(given ?? ''), digest(expected));
  return ok && given !== undefined;
}

/** Bytes of request bodies still arriving, across all connections, against a bound. */
export class BodyBudget {
  used = 0;
  constructor(readonly limit: number) {}

  take(n: number): boolean {
    if (this.used + n > this.limit) return false;
    this.used += n;
    return true;
  }

  give(n: number): void {
    this.used -= n;
  }
}

/** The client went away before its request body ended: nothing to answer. */
export class ClientGoneError extends Error {}

/**
 * Reads the body up to `limit` bytes; a larger one is a 413 (by Content-Length, or once it
 * passes the limit). The bytes held count against `budget` until the body is complete (or
 * fails): past it, a 503. A client that goes away mid-body is a ClientGoneError.
 */
export function readBody(req: IncomingMessage, limit: number, budget?: BodyBudget): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new ApiError(413, `the request body is ${declared} bytes; the limit is ${limit}`));
      return;
    }
    const chunks: Buffer[] = [];
    let n = 0;
    let settled = false;
    const finish = (err?: Error) => {
      if (settled) return;
      settled = true;
      budget?.give(n);
      req.off('data', onData);
      if (err) {
        chunks.length = 0;
        reject(err);
      } else resolve(Buffer.concat(chunks, n));
    };
    const onData = (c: Buffer) => {
      if (settled) return;
      if (n + c.length > limit) {
        finish(new ApiError(413, `the request body is over the limit of ${limit} bytes`));
        return;
      }
      if (budget && !budget.take(c.length)) {
        finish(
          new ApiError(
            503,
            `the server holds ${budget.used} bytes of unfinished request bodies (the limit is ${budget.limit}); retry later`,
          ),
        );
        return;
      }
      n += c.length;
      chunks.push(c);
    };
    req.on('data', onData);
    req.on('end', () => finish());
    req.on('error', (e) => finish(new ClientGoneError(`the request body ended early (${e.message}) after ${n} bytes`)));
    req.on('close', () =>
      finish(new ClientGoneError(`the connection closed during the request body, after ${n} bytes`)),
    );
  });
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, e: ApiError, shape: (e: ApiError) => unknown = errorBody): void {
  const headers: Record<string, string> = {};
  if (e.status === 503 || e.status === 429) headers['Retry-After'] = '1';
  if (e.status === 401) headers['WWW-Authenticate'] = 'Bearer';
  sendJson(res, e.status, shape(e), headers);
}

/** A route's path as segments, `:name` ones matching any segment. */
function matchPath(pattern: string, path: string): Record<string, string> | undefined {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return undefined;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.startsWith(':')) {
      if (b[i] === '') return undefined;
      params[a[i]!.slice(1)] = decodeURIComponent(b[i]!);
    } else if (a[i] !== b[i]) return undefined;
  }
  return params;
}

/** Turns anything thrown by a handler into an ApiError (500 for the unexpected). */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  log.error(`internal error: ${(e as Error)?.stack ?? String(e)}`);
  return new ApiError(500, (e as Error)?.message ?? String(e));
}

/** What a socket is doing, for the idle timeout: waiting on the client, or on the server's own work. */
interface SocketState {
  /** A request was read whole and its handler runs (generation time is not the client's). */
  busy: boolean;
  /** Bytes read and written when last seen, and when either last moved. */
  read: number;
  written: number;
  active: number;
}

const REJECT_BODY = JSON.stringify(
  errorBody(new ApiError(503, 'the server has too many open connections; retry later')),
);
const REJECT_RESPONSE =
  'HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=utf-8\r\n' +
  `Content-Length: ${Buffer.byteLength(REJECT_BODY)}\r\nRetry-After: 1\r\nConnection: close\r\n\r\n${REJECT_BODY}`;

export function createHttpServer(routes: Route[], opts: HttpOptions): Server {
  if (opts.apiKey !== undefined && opts.apiKey.trim() === '') {
    // an empty key would let a request with an empty x-api-key in
    throw new Error('the API key must not be empty');
  }
  const timeoutMs = Math.round((opts.timeout ?? HTTP_DEFAULTS.timeout) * 1000);
  if (!(timeoutMs > 0)) throw new Error(`the timeout must be > 0 seconds, got ${opts.timeout}`);
  const maxConnections = opts.maxConnections ?? HTTP_DEFAULTS.maxConnections;
  const budget = new BodyBudget(opts.maxPendingBodyBytes ?? HTTP_DEFAULTS.maxPendingBodyBytes);
  const byPath = new Map<string, Route[]>();
  const patterns: Route[] = [];
  for (const r of routes) {
    if (r.path.includes('/:')) {
      patterns.push(r);
      continue;
    }
    const list = byPath.get(r.path) ?? [];
    list.push(r);
    byPath.set(r.path, list);
  }
  /** The routes of a path, and the values of its `:name` segments. */
  const lookup = (path: string): { list: Route[]; params: Record<string, string> } | undefined => {
    const exact = byPath.get(path);
    if (exact) return { list: exact, params: {} };
    let params: Record<string, string> | undefined;
    const list: Route[] = [];
    for (const r of patterns) {
      const p = matchPath(r.path, path);
      if (!p) continue;
      params ??= p;
      list.push(r);
    }
    return params ? { list, params } : undefined;
  };
  const sockets = new Map<Socket, SocketState>();
  const rejected = new WeakSet<Socket>();
  const server = createServer(
    // how often node checks requestTimeout / headersTimeout (default every 30 s)
    { connectionsCheckingInterval: Math.min(30_000, Math.max(100, Math.floor(timeoutMs / 4))) },
    async (req, res) => {
      // refused at the cap: its 503 is on the way, the socket closes by itself
      if (rejected.has(req.socket)) return;
      const t0 = performance.now();
      opts.onRequest?.();
      res.on('finish', () => {
        if (res.statusCode >= 400) opts.onErrorStatus?.();
        log.info(
          `${req.socket.remoteAddress ?? '-'} ${req.method} ${req.url} ${res.statusCode} ${(performance.now() - t0).toFixed(1)} ms`,
        );
      });
      // CORS as llama-server's: the request's origin is allowed (with '*', any origin;
      // else the one given), credentials too, and a preflight on any path is answered
      // without the API key
      const origin = req.headers.origin;
      const corsOk = opts.cors !== undefined && (origin === undefined || opts.cors === '*' || origin === opts.cors);
      if (corsOk) {
        res.setHeader('Access-Control-Allow-Origin', opts.cors === '*' ? (origin ?? '*') : opts.cors!);
        res.setHeader('Access-Control-Allow-Credentials', 'true');
        res.setHeader('Vary', 'Origin');
        if (opts.exposeHeaders?.length) res.setHeader('Access-Control-Expose-Headers', opts.exposeHeaders.join(', '));
      }
      const state = sockets.get(req.socket);
      let shape: ((e: ApiError) => unknown) | undefined;
      try {
        const url = new URL(req.url ?? '/', 'http://localhost');
        if (req.method === 'OPTIONS' && opts.cors !== undefined) {
          // llama-server's preflight answer: 200, any request header (browsers do not let
          // '*' cover Authorization on credentialed requests, as with llama-server)
          res.writeHead(corsOk ? 200 : 403, {
            ...(corsOk
              ? {
                  // llama-server's GET, POST; DELETE too for a preflight that asks for it
                  // (Ollama's /api/delete)
                  'Access-Control-Allow-Methods':
                    req.headers['access-control-request-method'] === 'DELETE' ? 'GET, POST, DELETE' : 'GET, POST',
                  'Access-Control-Allow-Headers': '*',
                  'Access-Control-Max-Age': '600',
                }
              : {}),
            'Content-Length': '0',
          });
          res.end();
          return;
        }
        const found = lookup(url.pathname);
        if (!found) throw new ApiError(404, `no endpoint ${url.pathname}`);
        const candidates = found.list;
        const route = candidates.find((r) => r.method === req.method);
        shape = (route ?? candidates[0])?.errorBody;
        if (!route) {
          res.setHeader('Allow', candidates.map((r) => r.method).join(', '));
          throw new ApiError(405, `${req.method} is not allowed on ${url.pathname}`);
        }
        if (opts.apiKey !== undefined && !route.public && !keyMatches(req, opts.apiKey)) {
          throw new ApiError(401, 'invalid API key');
        }
        let body: unknown;
        // DELETE carries a JSON body too (Ollama's /api/delete)
        if (req.method === 'POST' || req.method === 'DELETE') {
          const raw = await readBody(req, opts.maxBodyBytes, budget);
          try {
            body = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'));
          } catch (e) {
            throw new ApiError(400, `the request body is not valid JSON: ${(e as Error).message}`);
          }
        }
        if (state) state.busy = true;
        try {
          await route.handler({ req, res, url, body, params: found.params });
        } finally {
          if (state) state.busy = false;
        }
      } catch (e) {
        if (e instanceof ClientGoneError) {
          // one line, no stack: an aborted upload is the client's business
          log.info(`${req.socket.remoteAddress ?? '-'} ${req.method} ${req.url}: ${e.message}`);
          res.destroy();
          return;
        }
        const err = toApiError(e);
        // the rest of a refused body is not read: close rather than drain it
        if (err.status === 413 || (err.status === 503 && !req.complete)) res.setHeader('Connection', 'close');
        sendError(res, err, shape);
      }
    },
  );
  /** Whether bytes moved on `socket` since last seen (and notes when they did). */
  const moved = (socket: Socket, st: SocketState, now: number): boolean => {
    if (socket.bytesRead === st.read && socket.bytesWritten === st.written) return false;
    st.read = socket.bytesRead;
    st.written = socket.bytesWritten;
    st.active = now;
    return true;
  };
  /**
   * At the cap: the connection that has waited longest on its client (no handler running,
   * nothing moved for at least a second: a stalled upload, an idle keep-alive) makes room,
   * so stalled clients cannot keep everyone else out until the timeout.
   */
  const evictStalest = (now: number): boolean => {
    let stalest: [Socket, SocketState] | undefined;
    for (const [socket, st] of sockets) {
      if (st.busy || moved(socket, st, now)) continue;
      if (!stalest || st.active < stalest[1].active) stalest = [socket, st];
    }
    if (!stalest || now - stalest[1].active < 1000) return false;
    const [socket, st] = stalest;
    log.info(
      `${socket.remoteAddress ?? '-'}: closing a connection idle for ${((now - st.active) / 1000).toFixed(1)} s to make room (${maxConnections} connections open)`,
    );
    socket.destroy();
    sockets.delete(socket);
    return true;
  };
  server.on('connection', (socket: Socket) => {
    if (sockets.size >= maxConnections && !evictStalest(performance.now())) {
      rejected.add(socket);
      opts.onConnectionRejected?.();
      noteRejection(maxConnections);
      socket.on('error', () => {});
      socket.end(REJECT_RESPONSE);
      // a client that never reads its answer does not keep the descriptor
      setTimeout(() => socket.destroy(), 1000).unref();
      return;
    }
    sockets.set(socket, { busy: false, read: 0, written: 0, active: performance.now() });
    socket.once('close', () => sockets.delete(socket));
  });
  // The idle timeout, by polling each socket's byte counters (the HTTP parser consumes the
  // socket natively, and node re-arms socket timeouts for keep-alive): a connection where
  // nothing moved for `timeout` is closed if an answer waits to be read, or it waits on its
  // client; not while the server itself works on the answer with nothing to write.
  const watchdog = setInterval(
    () => {
      const now = performance.now();
      for (const [socket, st] of sockets) {
        if (moved(socket, st, now)) continue;
        const idle = now - st.active;
        // an answer the client does not read; or, as a backstop, a connection waiting on
        // its client past node's own request timeout (which answers 408 first)
        const unread = socket.writableLength > 0 && idle >= timeoutMs;
        const waiting = !st.busy && idle >= timeoutMs + 1000;
        if (!unread && !waiting) continue;
        log.info(
          `${socket.remoteAddress ?? '-'}: closing a connection where nothing moved for ${(idle / 1000).toFixed(1)} s ${unread ? '(the client does not read its answer)' : '(waiting for its request)'}`,
        );
        socket.destroy();
        sockets.delete(socket);
      }
    },
    // often enough that `active` is at most half a second late (eviction looks at it too)
    Math.min(500, Math.max(50, Math.floor(timeoutMs / 4))),
  );
  watchdog.unref();
  server.once('close', () => clearInterval(watchdog));
  // a whole request (headers and body) within the timeout; headers within 30 s
  server.requestTimeout = timeoutMs;
  server.headersTimeout = Math.min(30_000, timeoutMs);
  server.keepAliveTimeout = 5_000;
  return server;
}

let rejections = 0;
let lastRejectionLog = 0;
/** Connections refused at the cap: one log line per 5 s at most. */
function noteRejection(max: number): void {
  rejections++;
  const now = Date.now();
  if (now - lastRejectionLog < 5000) return;
  log.warn(`${rejections} connection(s) refused with 503: ${max} connections are open (the limit)`);
  lastRejectionLog = now;
  rejections = 0;
}

/** `?name` or `?name=1|true` (llama-server's query flags, e.g. fail_on_no_slot). */
export function queryFlag(url: URL, name: string): boolean {
  const v = url.searchParams.get(name);
  return v !== null && v !== '0' && v.toLowerCase() !== 'false';
}
