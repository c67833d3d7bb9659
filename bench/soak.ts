// Soak: `llama-ts serve --parallel 4 --queue Q` in a child process on loopback, 64
// concurrent streaming clients for 60 s, mixed with a hostile minority (slow and stalled
// bodies, disconnects mid-stream, oversized options, grammar and schema requests). It
// prints requests served, failures of well-formed requests (a 503 is one), every hostile
// outcome, /health latency (p50, p99, max) sampled every 100 ms, and the server's RSS
// at start (after a warm-up), at its peak and at the end (idle again).
// Targets: 0 failed well-formed requests, /health p99 < 100 ms, RSS growth < 10 %.
// A benchmark that prints figures, not a CI test: the exit code is 0 whatever they are.
//
//   npm run bench:soak [-- -m MODEL.gguf] [--clients 64] [--seconds 60] [--queue 72]
//       [--hostile 8] [--kinds slow,disconnect,oversized,grammar] [--scale 1]
//       [--warmup 60] [-t THREADS] [--log FILE] [--json]
//
// Default model: ../shared/models/stories260K.gguf, else a generated tiny llama. --scale
// multiplies the hostile sizes (GBNF rules, schema properties, option lengths). The start
// RSS is taken after --warmup seconds of the same mix (hostile requests included), so that
// the growth measures what the run keeps (a leak), not what serving it needs.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { REPO_ROOT, sharedPath } from '../test/helpers/shared.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', short: 'm' },
    clients: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '60' },
    // 64 for the well-formed clients, and room for the hostile requests that hold a place
    queue: { type: 'string', default: '72' },
    hostile: { type: 'string', default: '8' },
    // which hostile kinds, in turn: slow (bodies), disconnect, oversized, grammar
    kinds: { type: 'string', default: 'slow,disconnect,oversized,grammar' },
    warmup: { type: 'string', default: '60' },
    // the server's stderr, to read after the run
    log: { type: 'string' },
    scale: { type: 'string', default: '1' },
    threads: { type: 'string', short: 't', default: '2' },
    json: { type: 'boolean', default: false },
  },
});
const CLIENTS = Number(o.clients);
const SECONDS = Number(o.seconds);
const HOSTILE = Number(o.hostile);
const SCALE = Number(o.scale);

function modelPath(): string {
  if (o.model) return o.model;
  const p = sharedPath('models/stories260K.gguf');
  if (p) return p;
  const path = join(mkdtempSync(join(tmpdir(), 'llama-ts-soak-')), 'tiny-llama.gguf');
  generateModel(presetSpec('tiny-llama', 'Q8_0'), path);
  process.stderr.write('../shared/models/stories260K.gguf is absent: using a generated tiny llama\n');
  return path;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// ---- the server, in its own process ----

interface Served {
  proc: ChildProcess;
  url: string;
  port: number;
  log: () => string;
}

async function startServer(model: string): Promise<Served> {
  const args = [
    join(REPO_ROOT, 'bin', 'llama-ts.js'),
    'serve',
    '-m',
    model,
    '--port',
    '0',
    '-np',
    '4',
    '--queue',
    String(o.queue),
    '-c',
    String(4 * 512),
    '-t',
    String(o.threads),
    '--log-level',
    'warn',
  ];
  const proc = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr!.on('data', (d) => (log += d));
  const url = await new Promise<string>((resolve, reject) => {
    const check = () => {
      const m = /ready on (http:\/\/\S+)/.exec(log);
      if (m) resolve(m[1]!);
    };
    proc.stderr!.on('data', check);
    proc.once('exit', (code) => reject(new Error(`the server exited with ${code}: ${log}`)));
  });
  return { proc, url, port: Number(new URL(url).port), log: () => log };
}

/** The server's resident set in bytes (Linux /proc, else ps). */
function rss(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return Number(execFileSync('ps', ['-o', 'rss=', '-p', String(pid)], { encoding: 'utf8' }).trim()) * 1024;
}

// ---- well-formed streaming clients ----

interface Tally {
  served: number;
  tokens: number;
  failures: Map<string, number>;
  firstFailures: string[];
}

const wellFormed: Tally = { served: 0, tokens: 0, failures: new Map(), firstFailures: [] };
const hostile = new Map<string, Map<string, number>>();

function countFailure(t: Tally, kind: string, detail: string): void {
  t.failures.set(kind, (t.failures.get(kind) ?? 0) + 1);
  if (t.firstFailures.length < 8) t.firstFailures.push(`${kind}: ${detail.slice(0, 200)}`);
}

function countHostile(kind: string, outcome: string): void {
  const m = hostile.get(kind) ?? new Map<string, number>();
  m.set(outcome, (m.get(outcome) ?? 0) + 1);
  hostile.set(kind, m);
}

/** Reads an SSE response to the end: the finish reason, completion tokens, or an error event. */
async function readStream(r: Response): Promise<{ finish: string | null; tokens: number; error?: string }> {
  const reader = r.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  let finish: string | null = null;
  let tokens = 0;
  let done = false;
  for (;;) {
    const { value, done: end } = await reader.read();
    if (end) break;
    buf += dec.decode(value, { stream: true });
    let i = buf.indexOf('\n\n');
    while (i >= 0) {
      const ev = buf.slice(0, i);
      buf = buf.slice(i + 2);
      i = buf.indexOf('\n\n');
      if (!ev.startsWith('data: ')) continue;
      const data = ev.slice(6);
      if (data === '[DONE]') {
        done = true;
        continue;
      }
      const j = JSON.parse(data) as {
        error?: { message: string };
        choices?: { finish_reason?: string | null }[];
        usage?: { completion_tokens: number };
      };
      if (j.error) return { finish, tokens, error: j.error.message };
      const f = j.choices?.[0]?.finish_reason;
      if (f) finish = f;
      if (j.usage) tokens = j.usage.completion_tokens;
    }
  }
  if (!done) return { finish, tokens, error: 'the stream ended without [DONE]' };
  return { finish, tokens };
}

async function wellFormedClient(url: string, w: number, deadline: number): Promise<void> {
  for (let i = 0; performance.now() < deadline; i++) {
    const chat = (w + i) % 2 === 0;
    const maxTokens = 8 + ((w * 7 + i * 13) % 41);
    const body = chat
      ? {
          messages: [{ role: 'user', content: `Story ${w}.${i}: once upon a time` }],
          max_tokens: maxTokens,
          temperature: 0.8,
          seed: w * 1000 + i,
          stream: true,
        }
      : {
          prompt: `Once upon a time, ${w} little birds`,
          max_tokens: maxTokens,
          temperature: 0.8,
          seed: w * 1000 + i,
          stream: true,
          ...(i % 3 === 0 ? { stop: ['\n\n'], logprobs: 2 } : {}),
        };
    try {
      const r = await fetch(`${url}/v1/${chat ? 'chat/completions' : 'completions'}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(180_000),
      });
      if (r.status !== 200) {
        countFailure(wellFormed, `HTTP ${r.status}`, await r.text());
        continue;
      }
      const s = await readStream(r);
      if (s.error) countFailure(wellFormed, 'stream error', s.error);
      else if (!s.finish) countFailure(wellFormed, 'no finish_reason', '');
      else {
        wellFormed.served++;
        wellFormed.tokens += s.tokens;
      }
    } catch (e) {
      const err = e as Error & { cause?: { code?: string } };
      countFailure(
        wellFormed,
        err.name === 'TimeoutError' ? 'timeout' : 'network',
        `${err.message} ${err.cause?.code ?? ''}`,
      );
    }
  }
}

// ---- /health probe ----

const healthMs: number[] = [];
let healthFailures = 0;

async function healthProbe(url: string, deadline: number): Promise<void> {
  while (performance.now() < deadline) {
    const t0 = performance.now();
    try {
      const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(30_000) });
      await r.arrayBuffer();
      if (r.status === 200) healthMs.push(performance.now() - t0);
      else healthFailures++;
    } catch {
      healthFailures++;
      healthMs.push(performance.now() - t0);
    }
    await sleep(100);
  }
}

// ---- the hostile minority ----

function rawSocket(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => resolve(s));
    s.once('error', reject);
  });
}

/** Answers the status line (or 'closed') of a raw connection, within ms. */
function statusOf(s: Socket, ms: number): Promise<string> {
  return new Promise((resolve) => {
    let text = '';
    const done = (v: string) => {
      clearTimeout(t);
      resolve(v);
    };
    const t = setTimeout(() => done('no answer'), ms);
    s.on('data', (d) => {
      text += d.toString('latin1');
      const m = /^HTTP\/1\.1 (\d+)/.exec(text);
      if (m) done(`HTTP ${m[1]}`);
    });
    s.on('close', () => done(text ? 'closed' : 'closed, no answer'));
    s.on('error', () => {});
  });
}

const postHead = (path: string, extra: string) =>
  `POST ${path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n${extra}\r\n`;

/** A body that stalls (held for 10 s, then dropped), or one dribbled a byte per 100 ms. */
async function slowBody(port: number, h: number, deadline: number): Promise<void> {
  for (let i = 0; performance.now() < deadline; i++) {
    const s = await rawSocket(port).catch(() => undefined);
    if (!s) {
      countHostile('slow body', 'connect failed');
      await sleep(500);
      continue;
    }
    const answer = statusOf(s, 30_000);
    if ((h + i) % 2 === 0) {
      s.write(`${postHead('/v1/completions', 'Content-Length: 100000\r\n')}{"prompt": "Once upon`);
      await sleep(10_000);
      s.destroy();
      countHostile('stalled body (held 10 s, dropped)', 'held');
      continue;
    }
    const body = JSON.stringify({ prompt: 'Once upon a time', max_tokens: 8 });
    s.write(postHead('/v1/completions', `Content-Length: ${body.length}\r\n`));
    for (const ch of body) {
      if (s.destroyed) break;
      s.write(ch);
      await sleep(100);
    }
    countHostile('dribbled body (1 byte / 100 ms)', await answer);
    s.destroy();
  }
}

/** A stream dropped after its first chunks. */
async function disconnect(url: string, h: number, deadline: number): Promise<void> {
  for (let i = 0; performance.now() < deadline; i++) {
    const ac = new AbortController();
    try {
      const r = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ prompt: `Once upon a time ${h}.${i}`, max_tokens: 300, ignore_eos: true, stream: true }),
        signal: ac.signal,
      });
      if (r.status !== 200) {
        countHostile('disconnect mid-stream', `HTTP ${r.status}`);
        await r.arrayBuffer();
        continue;
      }
      const reader = r.body!.getReader();
      await reader.read();
      await reader.read();
      ac.abort();
      countHostile('disconnect mid-stream', 'dropped after 2 chunks');
    } catch (e) {
      countHostile('disconnect mid-stream', (e as Error).name);
    }
    await sleep(200);
  }
}

const N = (n: number) => Math.max(1, Math.round(n * SCALE));

/** Requests whose options are far beyond any sensible size (each should be a prompt 400). */
function oversized(): [string, string][] {
  return [
    ['samplers of 20,000 letters', JSON.stringify({ prompt: 'x', max_tokens: 2, samplers: 'k'.repeat(N(20_000)) })],
    ['repeat_last_n 1e9', JSON.stringify({ prompt: 'x', max_tokens: 2, repeat_last_n: 1e9 })],
    ['dry_penalty_last_n 1e9', JSON.stringify({ prompt: 'x', max_tokens: 2, dry_penalty_last_n: 1e9 })],
    ['n_probs 1e6', JSON.stringify({ prompt: 'x', max_tokens: 2, n_probs: 1e6 })],
    ['seed 2^64', '{"prompt":"x","max_tokens":2,"seed":18446744073709551616}'],
    ['temperature 1e400', '{"prompt":"x","max_tokens":2,"temperature":1e400}'],
    [
      'logit_bias of 50,000 pairs',
      JSON.stringify({
        prompt: 'x',
        max_tokens: 2,
        logit_bias: Array.from({ length: N(50_000) }, (_, i) => [i, 1e308]),
      }),
    ],
    [
      'stop with 10,000 strings',
      JSON.stringify({ prompt: 'x', max_tokens: 2, stop: Array.from({ length: N(10_000) }, (_, i) => `s${i}`) }),
    ],
  ];
}

/** Grammar and schema requests: big, slow to compile, or unsatisfiable. */
function grammars(): [string, string][] {
  const rules = N(3000);
  const chain = Array.from({ length: rules }, (_, k) =>
    k === rules - 1 ? `r${k} ::= "y"` : `r${k} ::= "x" r${k + 1} | "y"`,
  );
  const props = N(500);
  const schema = {
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: props }, (_, k) => [`p${k}`, { type: 'string' }])),
  };
  return [
    [
      `GBNF chain of ${rules} rules`,
      JSON.stringify({ prompt: 'x', max_tokens: 4, grammar: `root ::= r0\n${chain.join('\n')}` }),
    ],
    [
      `JSON schema of ${props} optional properties`,
      JSON.stringify({ prompt: 'x', max_tokens: 4, json_schema: schema }),
    ],
    [
      `enum of ${N(20_000)} values`,
      JSON.stringify({
        prompt: 'x',
        max_tokens: 4,
        json_schema: { enum: Array.from({ length: N(20_000) }, (_, i) => `v${i}`) },
      }),
    ],
    [
      'unsatisfiable grammar root ::= "\\x00"',
      JSON.stringify({ prompt: 'x', max_tokens: 4, grammar: 'root ::= "\\x00"' }),
    ],
    [
      'allOf string and integer',
      JSON.stringify({ prompt: 'x', max_tokens: 4, json_schema: { allOf: [{ type: 'string' }, { type: 'integer' }] } }),
    ],
  ];
}

async function badRequests(
  url: string,
  label: string,
  list: () => [string, string][],
  h: number,
  deadline: number,
): Promise<void> {
  const reqs = list();
  for (let i = h; performance.now() < deadline; i++) {
    const [what, body] = reqs[i % reqs.length]!;
    const t0 = performance.now();
    let outcome: string;
    try {
      const r = await fetch(`${url}/v1/completions`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
        signal: AbortSignal.timeout(60_000),
      });
      await r.arrayBuffer();
      outcome = `HTTP ${r.status}`;
    } catch (e) {
      outcome = (e as Error).name === 'TimeoutError' ? 'no answer in 60 s' : 'network error';
    }
    const ms = performance.now() - t0;
    countHostile(`${label}: ${what}`, `${outcome}${ms > 1000 ? ' (> 1 s)' : ''}`);
    await sleep(500);
  }
}

// ---- run ----

function pct(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const model = modelPath();
const load0 = loadavg();
const srv = await startServer(model);
const pid = srv.proc.pid!;
try {
  const byName: Record<string, (h: number, deadline: number) => Promise<void>> = {
    slow: (h, d) => slowBody(srv.port, h, d),
    disconnect: (h, d) => disconnect(srv.url, h, d),
    oversized: (h, d) => badRequests(srv.url, 'oversized', oversized, h, d),
    grammar: (h, d) => badRequests(srv.url, 'grammar', grammars, h, d),
  };
  const kinds = o.kinds.split(',').map((k) => {
    const f = byName[k];
    if (!f) throw new Error(`--kinds: no kind '${k}' (slow, disconnect, oversized, grammar)`);
    return f;
  });
  const mix = (deadline: number): Promise<void>[] => {
    const tasks: Promise<void>[] = [];
    for (let w = 0; w < CLIENTS; w++) tasks.push(wellFormedClient(srv.url, w, deadline));
    for (let h = 0; h < HOSTILE; h++) tasks.push(kinds[h % kinds.length]!(Math.floor(h / kinds.length), deadline));
    return tasks;
  };
  // warm-up: the same mix, hostile requests included, so the start RSS includes what
  // steady serving allocates (the untrusted-work worker, grammar caches, the heap's
  // high-water mark) and the growth measures what the run keeps
  await Promise.all(mix(performance.now() + Number(o.warmup) * 1000));
  const warmServed = wellFormed.served;
  wellFormed.served = 0;
  wellFormed.tokens = 0;
  hostile.clear();
  if (wellFormed.failures.size > 0) {
    process.stderr.write(`warm-up failures: ${[...wellFormed.failures].join(', ')}\n`);
    wellFormed.failures.clear();
    wellFormed.firstFailures.length = 0;
  }
  await sleep(2000);
  const rssStart = rss(pid);
  let rssPeak = rssStart;
  const sampler = setInterval(() => {
    try {
      rssPeak = Math.max(rssPeak, rss(pid));
    } catch {
      // exited
    }
  }, 1000);

  const t0 = performance.now();
  const deadline = t0 + SECONDS * 1000;
  const tasks = mix(deadline);
  tasks.push(healthProbe(srv.url, deadline));
  await Promise.all(tasks);
  const elapsed = (performance.now() - t0) / 1000;
  clearInterval(sampler);
  await sleep(2000);
  const rssEnd = rss(pid);
  const load1 = loadavg();

  const health = healthMs.slice().sort((a, b) => a - b);
  const failed = [...wellFormed.failures.values()].reduce((s, n) => s + n, 0);
  const serverLog = srv.log();
  const stackLines = serverLog.split('\n').filter((l) => /^\s+at /.test(l)).length;
  const result = {
    model,
    clients: CLIENTS,
    hostile: HOSTILE,
    seconds: Number(elapsed.toFixed(1)),
    queue: Number(o.queue),
    warmupServed: warmServed,
    served: wellFormed.served,
    tokens: wellFormed.tokens,
    failedWellFormed: failed,
    failures: Object.fromEntries(wellFormed.failures),
    firstFailures: wellFormed.firstFailures,
    health: {
      samples: health.length,
      failures: healthFailures,
      p50: Number(pct(health, 50).toFixed(1)),
      p99: Number(pct(health, 99).toFixed(1)),
      max: Number((health.at(-1) ?? Number.NaN).toFixed(1)),
    },
    rssMiB: {
      start: Number((rssStart / 2 ** 20).toFixed(1)),
      peak: Number((rssPeak / 2 ** 20).toFixed(1)),
      end: Number((rssEnd / 2 ** 20).toFixed(1)),
    },
    rssGrowthPct: Number(((100 * (rssEnd - rssStart)) / rssStart).toFixed(1)),
    hostileOutcomes: Object.fromEntries([...hostile].map(([k, m]) => [k, Object.fromEntries(m)])),
    serverLog: {
      warnings: (serverLog.match(/: warn: /g) ?? []).length,
      errors: (serverLog.match(/: error: /g) ?? []).length,
      stackTraceLines: stackLines,
    },
    loadavg: { start: load0.map((x) => Number(x.toFixed(2))), end: load1.map((x) => Number(x.toFixed(2))) },
  };
  if (o.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  else {
    const w = (s: string) => process.stdout.write(`${s}\n`);
    const mark = (ok: boolean) => (ok ? 'ok' : 'MISSED');
    w(
      `soak: ${CLIENTS} streaming clients + ${HOSTILE} hostile for ${result.seconds} s, --parallel 4 --queue ${o.queue}`,
    );
    w(`model ${model}`);
    w(`load average ${result.loadavg.start.join(' ')} at start, ${result.loadavg.end.join(' ')} at end`);
    w('');
    w(`well-formed requests served: ${result.served} (${result.tokens} tokens)`);
    w(`well-formed requests failed: ${failed} ${mark(failed === 0)} ${JSON.stringify(result.failures)}`);
    for (const f of result.firstFailures) w(`  e.g. ${f}`);
    w(
      `/health: ${health.length} samples, p50 ${result.health.p50} ms, p99 ${result.health.p99} ms ${mark(result.health.p99 < 100)}, max ${result.health.max} ms, ${healthFailures} failed`,
    );
    w(
      `server RSS: ${result.rssMiB.start} MiB at start, ${result.rssMiB.peak} MiB peak, ${result.rssMiB.end} MiB at end: ${result.rssGrowthPct >= 0 ? '+' : ''}${result.rssGrowthPct} % ${mark(result.rssGrowthPct < 10)}`,
    );
    w(
      `server log: ${result.serverLog.warnings} warnings, ${result.serverLog.errors} errors, ${stackLines} stack-trace lines`,
    );
    w('');
    w('hostile requests (outcome: count):');
    for (const [k, m] of Object.entries(result.hostileOutcomes)) w(`  ${k}: ${JSON.stringify(m)}`);
  }
} finally {
  if (o.log) writeFileSync(o.log, srv.log());
  srv.proc.kill('SIGTERM');
  await new Promise((r) => {
    const t = setTimeout(() => {
      srv.proc.kill('SIGKILL');
      r(undefined);
    }, 10_000);
    srv.proc.once('exit', () => {
      clearTimeout(t);
      r(undefined);
    });
  });
}
