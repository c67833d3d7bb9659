// Replicas behind nginx (docs/replicas.md's configuration): aggregate generation throughput
// of 3 `llama-ts serve` replicas vs 1, with concurrent multi-turn chat clients, and the
// prompt tokens each turn re-evaluates with and without prefix affinity. Four runs, each
// on fresh replicas: 1 replica; 3 with clients sending X-Prefix-Key back; 3 with them
// sending nginx's X-Session-Id back; 3 with them sending neither.
//
//   npm run bench:replicas [-- -m MODEL.gguf] [--seconds 60] [--clients 12] [--slots N]
//       [--tokens 24] [-t 1] [--json]
//
// A client holds one conversation at a time: a system prompt and an opening of its own,
// then a new user message per turn, until the next turn would not fit a slot; then it
// starts another. Re-evaluated tokens of a turn: the previous turn's prompt and reply
// (less its last token, never decoded) minus what this turn found cached; 0 for a first
// turn. Default model: ../shared/models/stories260K.gguf, else a generated tiny llama.
// Needs nginx (Debian: apt-get install -y nginx; or LLAMA_TS_NGINX).
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { generateModel, presetSpec } from '../src/generator/index.js';
import { findNginx, NO_NGINX, startNginx } from '../test/helpers/nginx.js';
import { REPO_ROOT, sharedPath } from '../test/helpers/shared.js';

const { values: o } = parseArgs({
  options: {
    model: { type: 'string', short: 'm' },
    seconds: { type: 'string', default: '60' },
    clients: { type: 'string', default: '12' },
    // per replica; default: one per client, so that a replica holds every conversation
    // placement may give it. With fewer, a replica that gets more conversations than slots
    // evicts the least recently used, which in a round of turns is the next one to come
    // back: every turn there misses, affinity or not (and that replica, slower for it,
    // keeps its conversations longer, so more pile up there)
    slots: { type: 'string' },
    tokens: { type: 'string', default: '24' },
    threads: { type: 'string', short: 't', default: '1' },
    json: { type: 'boolean', default: false },
  },
});

const SECONDS = Number(o.seconds);
const CLIENTS = Number(o.clients);
const SLOTS = o.slots === undefined ? Number(o.clients) : Number(o.slots);
const TOKENS = Number(o.tokens);

function modelPath(): string {
  if (o.model) return o.model;
  const p = sharedPath('models/stories260K.gguf');
  if (p) return p;
  const path = join(mkdtempSync(join(tmpdir(), 'llama-ts-bench-')), 'tiny-llama.gguf');
  generateModel(presetSpec('tiny-llama', 'Q8_0'), path);
  process.stderr.write('../shared/models/stories260K.gguf is absent: using a generated tiny llama\n');
  return path;
}

interface Replica {
  p: ChildProcess;
  url: string;
}

async function spawnReplica(model: string): Promise<Replica> {
  const args = [`${REPO_ROOT}bin/llama-ts.js`, 'serve', '-m', model, '--port', '0', '-np', String(SLOTS)];
  args.push('-c', String(SLOTS * 512), '-t', String(o.threads), '--log-level', 'warn');
  const p = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  p.stderr!.on('data', (d) => {
    err += d;
  });
  const url = await new Promise<string>((resolve, reject) => {
    p.stderr!.on('data', () => {
      const m = /ready on (http:\/\/\S+)/.exec(err);
      if (m) resolve(m[1]!);
    });
    p.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${err}`)));
  });
  return { p, url };
}

/** CPU seconds a process (all its threads) has used, from /proc (Linux); NaN elsewhere. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields 14 and 15 (utime, stime) in clock ticks, 100 per second on Linux
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return Number.NaN;
  }
}

type Affinity = 'key' | 'session' | 'none';

interface Turn {
  ok: boolean;
  promptTokens: number;
  cached: number;
  completion: number;
  key: string;
  session: string;
  /** The replica that answered (nginx's X-Upstream, the last tried). */
  upstream: string;
}

async function turn(base: string, messages: { role: string; content: string }[], headers: Record<string, string>) {
  const t: Turn = { ok: false, promptTokens: 0, cached: 0, completion: 0, key: '', session: '', upstream: '' };
  try {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...headers },
      body: JSON.stringify({
        messages,
        max_tokens: TOKENS,
        temperature: 0.8,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    t.key = r.headers.get('x-prefix-key') ?? '';
    t.session = r.headers.get('x-session-id') ?? '';
    t.upstream = (r.headers.get('x-upstream') ?? '').split(', ').at(-1)!;
    if (r.status !== 200) return { t, text: '' };
    const body = await r.text();
    let text = '';
    for (const line of body.split('\n\n')) {
      if (!line.startsWith('data: {')) continue;
      const e = JSON.parse(line.slice(6)) as {
        choices: { delta?: { content?: string | null }; finish_reason?: string | null }[];
        usage?: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details: { cached_tokens: number } };
      };
      text += e.choices?.[0]?.delta?.content ?? '';
      if (e.usage) {
        t.promptTokens = e.usage.prompt_tokens;
        t.completion = e.usage.completion_tokens;
        t.cached = e.usage.prompt_tokens_details.cached_tokens;
        t.ok = body.endsWith('data: [DONE]\n\n');
      }
    }
    return { t, text };
  } catch {
    return { t, text: '' };
  }
}

interface Run {
  name: string;
  replicas: number;
  affinity: Affinity;
  seconds: number;
  turns: number;
  conversations: number;
  failed: number;
  tokens: number;
  tps: number;
  /** Prompt tokens evaluated per turn (prompt - cached). */
  evaluatedPerTurn: number;
  /** Tokens of the previous turn evaluated again, per turn (first turns count 0), and per later turn. */
  reevaluatedPerTurn: number;
  reevaluatedPerLaterTurn: number;
  /** Later turns answered by another replica than the turn before: second turns, and after. */
  movedSecondTurns: number;
  movedLaterTurns: number;
  /** Re-evaluated tokens per turn on the previous turn's replica (its slot was taken) and after a move. */
  reevaluatedInPlacePerTurn: number;
  reevaluatedAfterMovePerTurn: number;
  cpuSeconds: number;
  tokensPerCpuSecond: number;
  loadBefore: number;
  loadAfter: number;
}

async function run(model: string, nginx: string, name: string, replicas: number, affinity: Affinity): Promise<Run> {
  const loadBefore = loadavg()[0]!;
  const rs = await Promise.all(Array.from({ length: replicas }, () => spawnReplica(model)));
  const proxy = await startNginx(
    nginx,
    rs.map((r) => Number(new URL(r.url).port)),
  );
  try {
    const nCtx = ((await (await fetch(`${rs[0]!.url}/slots`)).json()) as { n_ctx: number }[])[0]!.n_ctx;
    // warm-up: one request on each replica
    await Promise.all(rs.map((r) => turn(r.url, [{ role: 'user', content: 'Hello.' }], {})));
    const cpu0 = rs.map((r) => cpuSeconds(r.p.pid!));
    let turns = 0;
    let later = 0;
    let conversations = 0;
    let failed = 0;
    let tokens = 0;
    let evaluated = 0;
    let reevaluated = 0;
    let movedSecond = 0;
    let movedLater = 0;
    let reevaluatedMoved = 0;
    const t0 = performance.now();
    const deadline = t0 + SECONDS * 1000;
    const client = async (w: number) => {
      for (let c = 0; performance.now() < deadline; c++) {
        conversations++;
        const messages = [
          { role: 'system', content: `You are storyteller ${w}.${c}.` },
          {
            role: 'user',
            content: `Tell me a story about a ${['cat', 'dog', 'bird', 'fox'][(w + c) % 4]} number ${c}.`,
          },
        ];
        let prev: Turn | undefined;
        let key = '';
        let session = '';
        for (let i = 0; performance.now() < deadline; i++) {
          const headers: Record<string, string> = {};
          if (affinity === 'key' && key) headers['X-Prefix-Key'] = key;
          if (affinity === 'session' && session) headers['X-Session-Id'] = session;
          const { t, text } = await turn(proxy.url, messages, headers);
          if (!t.ok) {
            failed++;
            break;
          }
          turns++;
          tokens += t.completion;
          evaluated += t.promptTokens - t.cached;
          if (prev) {
            later++;
            const lost = Math.max(0, prev.promptTokens + prev.completion - 1 - t.cached);
            reevaluated += lost;
            if (t.upstream !== prev.upstream) {
              if (i === 1) movedSecond++;
              else movedLater++;
              reevaluatedMoved += lost;
            }
          }
          key = t.key;
          if (i === 0) session = t.session;
          prev = t;
          messages.push({ role: 'assistant', content: text }, { role: 'user', content: `What happened next (${i})?` });
          // the next turn would not fit a slot: a new conversation
          if (t.promptTokens + t.completion + 2 * TOKENS + 32 > nCtx) break;
        }
      }
    };
    await Promise.all(Array.from({ length: CLIENTS }, (_, w) => client(w)));
    const seconds = (performance.now() - t0) / 1000;
    const cpu = rs.reduce((s, r, i) => s + cpuSeconds(r.p.pid!) - cpu0[i]!, 0);
    return {
      name,
      replicas,
      affinity,
      seconds,
      turns,
      conversations,
      failed,
      tokens,
      tps: tokens / seconds,
      evaluatedPerTurn: evaluated / turns,
      reevaluatedPerTurn: reevaluated / turns,
      reevaluatedPerLaterTurn: reevaluated / Math.max(1, later),
      movedSecondTurns: movedSecond,
      movedLaterTurns: movedLater,
      reevaluatedInPlacePerTurn: (reevaluated - reevaluatedMoved) / turns,
      reevaluatedAfterMovePerTurn: reevaluatedMoved / turns,
      cpuSeconds: cpu,
      tokensPerCpuSecond: tokens / cpu,
      loadBefore,
      loadAfter: loadavg()[0]!,
    };
  } finally {
    await proxy.stop();
    await Promise.all(
      rs.map(
        (r) =>
          new Promise<void>((res) => {
            if (r.p.exitCode !== null) return res();
            r.p.once('exit', () => res());
            r.p.kill('SIGTERM');
          }),
      ),
    );
  }
}

const nginx = findNginx();
if (!nginx) {
  process.stderr.write(`bench:replicas: ${NO_NGINX}\n`);
  process.exit(1);
}
const model = modelPath();
const rows: Run[] = [];
for (const [name, n, affinity] of [
  ['1 replica', 1, 'key'],
  ['3 replicas, X-Prefix-Key sent back', 3, 'key'],
  ['3 replicas, X-Session-Id sent back', 3, 'session'],
  ['3 replicas, no affinity', 3, 'none'],
] as const) {
  process.stderr.write(`bench:replicas: ${name}…\n`);
  rows.push(await run(model, nginx, name, n, affinity));
}
const none = rows[3]!;
const summary = {
  model,
  clients: CLIENTS,
  slotsPerReplica: SLOTS,
  tokensPerTurn: TOKENS,
  threadsPerReplica: Number(o.threads),
  seconds: SECONDS,
  throughput3vs1: rows[1]!.tps / rows[0]!.tps,
  reevaluatedKeyVsNone: rows[1]!.reevaluatedPerTurn / none.reevaluatedPerTurn,
  reevaluatedSessionVsNone: rows[2]!.reevaluatedPerTurn / none.reevaluatedPerTurn,
  runs: rows,
};
if (o.json) {
  process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
} else {
  const f = (x: number, d = 1) => x.toFixed(d);
  process.stdout.write(
    `model ${model}; ${CLIENTS} chat clients, ${SLOTS} slots and ${o.threads} thread(s) per replica, ≤ ${TOKENS} tokens per reply, ${SECONDS} s per run\n\n`,
  );
  process.stdout.write(
    '| run | turns | conversations | failed | generated t/s (aggregate) | t/CPU-s | prompt tokens evaluated / turn | re-evaluated / turn | re-evaluated / later turn | of which: in place / after a move | moved: 2nd turns / later turns | load avg (1 min) before → after |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|\n',
  );
  for (const r of rows) {
    process.stdout.write(
      `| ${r.name} | ${r.turns} | ${r.conversations} | ${r.failed} | ${f(r.tps)} | ${f(r.tokensPerCpuSecond)} | ${f(r.evaluatedPerTurn)} | ${f(r.reevaluatedPerTurn)} | ${f(r.reevaluatedPerLaterTurn)} | ${f(r.reevaluatedInPlacePerTurn)} / ${f(r.reevaluatedAfterMovePerTurn)} | ${r.movedSecondTurns} / ${r.movedLaterTurns} | ${f(r.loadBefore, 2)} → ${f(r.loadAfter, 2)} |\n`,
    );
  }
  process.stdout.write(
    `\n3 replicas vs 1: ${f(summary.throughput3vs1, 2)}x aggregate generation throughput\n` +
      `re-evaluated prompt tokens per turn, with vs without affinity: X-Prefix-Key ${f(100 * summary.reevaluatedKeyVsNone)}%, X-Session-Id ${f(100 * summary.reevaluatedSessionVsNone)}% (target ≤ 20%)\n`,
  );
}
