// The HTTP layer's limits against hostile or broken clients, on a real LlamaServer with
// small limits: an unfinished body (stalled, or dribbled) is dropped after the timeout,
// while a request waiting on the server's own work is not; connections beyond the cap get
// a 503 at once; bytes of unfinished bodies are bounded across connections; an aborted
// upload logs one line; an empty API key is refused.
import assert from 'node:assert/strict';
import { type IncomingHttpHeaders, request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import { LlamaServer } from '../src/server/index.js';
import { chatModel } from './server-fixtures.js';

const MODEL = chatModel();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw connection: what it received, and whether it closed. */
interface Raw {
  socket: Socket;
  received: () => string;
  closed: Promise<void>;
}

async function raw(port: number, head?: string): Promise<Raw> {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  socket.on('data', (d) => (text += d.toString('latin1')));
  socket.on('error', () => {});
  const closed = new Promise<void>((r) => socket.once('close', () => r()));
  await new Promise<void>((r, j) => {
    socket.once('connect', () => r());
    socket.once('error', j);
  });
  if (head !== undefined) socket.write(head);
  return { socket, received: () => text, closed };
}

/** Resolves true when `p` settles within `ms`, false otherwise. */
async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  let t: NodeJS.Timeout | undefined;
  const r = await Promise.race([p.then(() => true), new Promise<boolean>((res) => (t = setTimeout(res, ms, false)))]);
  clearTimeout(t);
  return r;
}

async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) return false;
    await sleep(20);
  }
  return true;
}

/** A GET on a connection of its own (fetch would reuse pooled ones, which the cap counts). */
function get(port: number, path: string): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const postHead = (path: string, extra: string) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}\r\n`;

describe('server limits', () => {
  let server: LlamaServer;
  const logs: string[] = [];
  before(async () => {
    setLogCallback((level, message, source) => {
      logs.push(`${source}: ${level}: ${message}`);
    });
    server = await LlamaServer.start({
      model: MODEL,
      port: 0,
      parallel: 1,
      nCtx: 512,
      maxQueue: 8,
      timeout: 1,
      maxConnections: 32,
      maxBodyBytes: 48 * 1024,
      maxPendingBodyBytes: 64 * 1024,
    });
  });
  after(async () => {
    await server?.close();
    setLogCallback(null);
  });

  test('an unfinished body is answered 408 and closed after the timeout, stalled or dribbled', async () => {
    const stalled = await raw(
      server.port,
      `${postHead('/v1/completions', 'Transfer-Encoding: chunked\r\n')}5\r\n{"pro\r\n`,
    );
    // one byte every 200 ms: never idle, but the whole request takes too long
    const dribbled = await raw(server.port, postHead('/v1/completions', 'Content-Length: 1000\r\n'));
    const drip = setInterval(() => dribbled.socket.write(' '), 200);
    try {
      assert.ok(await within(stalled.closed, 8000), 'the stalled upload is still open');
      assert.ok(await within(dribbled.closed, 8000), 'the dribbled upload is still open');
    } finally {
      clearInterval(drip);
      stalled.socket.destroy();
      dribbled.socket.destroy();
    }
    assert.match(stalled.received(), /^HTTP\/1\.1 408/);
    assert.match(dribbled.received(), /^HTTP\/1\.1 408/);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
  });

  test('waiting on the server (a queued, non-streamed request) is not a client timeout', async () => {
    // one slot: the later requests wait in the queue, with no bytes moving, for longer
    // than the 1 s timeout
    const t0 = Date.now();
    const all = await Promise.all(
      Array.from({ length: 4 }, () =>
        fetch(`${server.url}/v1/completions`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true, temperature: 0 }),
        }).then(async (r) => ({
          status: r.status,
          body: (await r.json()) as { usage?: { completion_tokens: number } },
        })),
      ),
    );
    const took = Date.now() - t0;
    for (const r of all) {
      assert.equal(r.status, 200);
      assert.equal(r.body.usage?.completion_tokens, 400);
    }
    if (took < 1500) process.stderr.write(`# note: the queue drained in ${took} ms, under the 1 s timeout\n`);
  });

  test('bytes of unfinished bodies are bounded across connections (503), and freed when they end', async () => {
    const part = 'x'.repeat(40 * 1024);
    const a = await raw(server.port, `${postHead('/tokenize', 'Content-Length: 49152\r\n')}${part}`);
    await sleep(300);
    const b = await raw(server.port, `${postHead('/tokenize', 'Content-Length: 49152\r\n')}${part}`);
    try {
      // the second passes the 64 KiB bound (or the first does, if its bytes came later)
      assert.ok(
        await until(() => /^HTTP\/1\.1 503/.test(a.received()) || /^HTTP\/1\.1 503/.test(b.received()), 5000),
        'no 503',
      );
      const refused = /^HTTP\/1\.1 503/.test(b.received()) ? b : a;
      assert.match(refused.received(), /unfinished request bodies/);
      assert.match(refused.received(), /connection: close/i);
      // a small request still fits meanwhile
      const r = await fetch(`${server.url}/tokenize`, { method: 'POST', body: JSON.stringify({ content: 'hi' }) });
      assert.equal(r.status, 200);
    } finally {
      a.socket.destroy();
      b.socket.destroy();
    }
    // once those connections are gone, a 40 KiB body fits again
    await sleep(100);
    const big = await fetch(`${server.url}/tokenize`, {
      method: 'POST',
      body: JSON.stringify({ content: 'y'.repeat(40 * 1024) }),
    });
    assert.equal(big.status, 200);
  });

  test('an aborted upload logs one line, not a stack trace', async () => {
    logs.length = 0;
    const c = await raw(server.port, `${postHead('/v1/completions', 'Content-Length: 5000\r\n')}{"prompt": "Once`);
    await sleep(200);
    c.socket.destroy();
    assert.ok(await until(() => logs.some((l) => /request body/.test(l)), 5000), logs.join('\n'));
    await sleep(100);
    const lines = logs.filter((l) => /\/v1\/completions/.test(l) || /internal error/.test(l));
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(
      lines[0]!,
      /server: info: .*POST \/v1\/completions: the (request body ended early|connection closed during the request body)/,
    );
    assert.ok(!logs.some((l) => /\n\s+at /.test(l)), logs.join('\n'));
  });
});

test('connections beyond the cap get a 503 at once, and /health answers again when they close', async () => {
  const server = await LlamaServer.start({
    model: MODEL,
    port: 0,
    parallel: 1,
    nCtx: 512,
    maxQueue: 8,
    maxConnections: 8,
  });
  // eight connections whose requests the server is working on (one generating, seven
  // queued): none of them waits on its client, so none makes room
  const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 400, ignore_eos: true });
  const busy: Raw[] = [];
  try {
    for (let i = 0; i < 8; i++) {
      busy.push(await raw(server.port, `${postHead('/v1/completions', `Content-Length: ${body.length}\r\n`)}${body}`));
    }
    await sleep(300);
    const t0 = performance.now();
    const r = await get(server.port, '/health');
    const ms = performance.now() - t0;
    assert.equal(r.status, 503);
    assert.equal(r.headers['retry-after'], '1');
    const json = JSON.parse(r.body) as { error: { message: string; code: number } };
    assert.equal(json.error.code, 503);
    assert.match(json.error.message, /too many open connections/);
    assert.ok(ms < 2000, `${ms} ms`);
    for (const c of busy) c.socket.destroy();
    await sleep(200);
    assert.equal((await get(server.port, '/health')).status, 200);
  } finally {
    for (const c of busy) c.socket.destroy();
    await server.close();
  }
});

test('at the cap, the connection stalled longest makes room for a new one', async () => {
  const server = await LlamaServer.start({
    model: MODEL,
    port: 0,
    parallel: 1,
    nCtx: 256,
    timeout: 60,
    maxConnections: 4,
  });
  const stalled: Raw[] = [];
  try {
    for (let i = 0; i < 4; i++) {
      stalled.push(await raw(server.port, `${postHead('/v1/completions', 'Content-Length: 1000\r\n')}{"prompt"`));
      await sleep(50);
    }
    await sleep(2000);
    assert.equal((await get(server.port, '/health')).status, 200);
    // the first (the stalest) was closed for it, the others are still open
    assert.ok(await within(stalled[0]!.closed, 2000), 'the stalest connection is still open');
    assert.ok(!stalled[3]!.socket.destroyed && stalled[3]!.socket.readyState === 'open');
  } finally {
    for (const c of stalled) c.socket.destroy();
    await server.close();
  }
});

test('an empty API key is refused by the server itself', async () => {
  await assert.rejects(LlamaServer.start({ model: MODEL, port: 0, apiKey: '' }), /API key must not be empty/);
});
