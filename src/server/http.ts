// The HTTP layer on node:http: routing by method and path, a request body limit, the API
// key (checked in constant time), opt-in CORS, OpenAI-style error JSON and access logs.
import { createHash, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { logger } from '../log.js';

const log = logger('server');

/** An error answered as `{ error: { message, type, code } }` with an HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = errorType(status),
    readonly param: string | null = null,
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
  return { error: { message: e.message, type: e.type, code: e.status, param: e.param } };
}

export interface RequestContext {
  req: IncomingMessage;
  res: ServerResponse;
  url: URL;
  /** The parsed JSON body (POST), else undefined. */
  body: unknown;
}

export type Handler = (c: RequestContext) => Promise<void> | void;

export interface Route {
  method: 'GET' | 'POST';
  path: string;
  handler: Handler;
  /** Reachable without the API key (llama-server's public endpoints: health, models). */
  public?: boolean;
}

export interface HttpOptions {
  apiKey?: string | undefined;
  /** Allowed origin for CORS ('*' or one origin); off when undefined. */
  cors?: string | undefined;
  /** Largest request body in bytes. */
  maxBodyBytes: number;
  onRequest?: () => void;
  onErrorStatus?: () => void;
}

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

/** Reads the body up to `limit` bytes; a larger one is a 413 (by Content-Length, or once it passes the limit). */
export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > limit) {
      reject(new ApiError(413, `the request body is ${declared} bytes; the limit is ${limit}`));
      return;
    }
    const chunks: Buffer[] = [];
    let n = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      if (over) return;
      n += c.length;
      if (n > limit) {
        over = true;
        reject(new ApiError(413, `the request body is over the limit of ${limit} bytes`));
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (!over) resolve(Buffer.concat(chunks));
    });
    req.on('error', (e) => reject(e));
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

export function sendError(res: ServerResponse, e: ApiError): void {
  const headers: Record<string, string> = {};
  if (e.status === 503 || e.status === 429) headers['Retry-After'] = '1';
  if (e.status === 401) headers['WWW-Authenticate'] = 'Bearer';
  sendJson(res, e.status, errorBody(e), headers);
}

/** Turns anything thrown by a handler into an ApiError (500 for the unexpected). */
export function toApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  log.error(`internal error: ${(e as Error)?.stack ?? String(e)}`);
  return new ApiError(500, (e as Error)?.message ?? String(e));
}

export function createHttpServer(routes: Route[], opts: HttpOptions): Server {
  const byPath = new Map<string, Route[]>();
  for (const r of routes) {
    const list = byPath.get(r.path) ?? [];
    list.push(r);
    byPath.set(r.path, list);
  }
  const server = createServer(async (req, res) => {
    const t0 = performance.now();
    opts.onRequest?.();
    res.on('finish', () => {
      if (res.statusCode >= 400) opts.onErrorStatus?.();
      log.info(
        `${req.socket.remoteAddress ?? '-'} ${req.method} ${req.url} ${res.statusCode} ${(performance.now() - t0).toFixed(1)} ms`,
      );
    });
    if (opts.cors) {
      res.setHeader('Access-Control-Allow-Origin', opts.cors);
      if (opts.cors !== '*') res.setHeader('Vary', 'Origin');
    }
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      const candidates = byPath.get(url.pathname);
      if (req.method === 'OPTIONS' && opts.cors && candidates) {
        res.writeHead(204, {
          'Access-Control-Allow-Methods': candidates.map((r) => r.method).join(', '),
          'Access-Control-Allow-Headers': 'Authorization, Content-Type, X-Api-Key',
          'Access-Control-Max-Age': '600',
        });
        res.end();
        return;
      }
      if (!candidates) throw new ApiError(404, `no endpoint ${url.pathname}`);
      const route = candidates.find((r) => r.method === req.method);
      if (!route) {
        res.setHeader('Allow', candidates.map((r) => r.method).join(', '));
        throw new ApiError(405, `${req.method} is not allowed on ${url.pathname}`);
      }
      if (opts.apiKey !== undefined && !route.public && !keyMatches(req, opts.apiKey)) {
        throw new ApiError(401, 'invalid API key');
      }
      let body: unknown;
      if (req.method === 'POST') {
        const raw = await readBody(req, opts.maxBodyBytes);
        try {
          body = raw.length === 0 ? {} : JSON.parse(raw.toString('utf8'));
        } catch (e) {
          throw new ApiError(400, `the request body is not valid JSON: ${(e as Error).message}`);
        }
      }
      await route.handler({ req, res, url, body });
    } catch (e) {
      const err = toApiError(e);
      if (err.status === 413) res.setHeader('Connection', 'close');
      sendError(res, err);
    }
  });
  // slow or idle clients do not hold sockets forever
  server.headersTimeout = 30_000;
  server.requestTimeout = 0;
  server.keepAliveTimeout = 5_000;
  return server;
}
