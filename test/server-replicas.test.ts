// Three replicas behind nginx on loopback, with docs/replicas.md's configuration: two
// `llama-ts serve` processes and one server in this process that is still loading at
// first. Checks: a replica still loading (503) makes no request fail; every streamed
// request completes through the proxy; a conversation that sends its X-Prefix-Key back
// lands on one replica from its second turn and reuses its cached prompt there (from the
// first turn with a session header: its own, or the one nginx returned), moving only off a
// replica where an attempt failed (nginx's passive health, by design); SIGTERM to
// a replica under load loses no accepted request (its streams finish, new requests go to
// the others) and it exits 0. Skips when nginx is not installed.
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { LlamaServer } from '../src/server/index.js';
import { findNginx, type NginxProxy, NO_NGINX, startNginx } from './helpers/nginx.js';
import { REPO_ROOT } from './helpers/shared.js';
import { chatModel } from './server-fixtures.js';

const NGINX = findNginx();
if (!NGINX) process.stderr.write(`# ${NO_NGINX}; skipping the replica tests\n`);
// more slots than the 5 conversations of the affinity test, so none evicts another
const SLOTS = 6;
// 512 tokens a slot: the most the generated tiny llama allows (its training context), when
// ../shared is absent; the longest conversation here is 4 turns, about 350 tokens
const CTX = 512 * SLOTS;

interface Replica {
  p: ChildProcess;
  url: string;
  addr: string;
  err: () => string;
}

async function spawnReplica(model: string): Promise<Replica> {
  const args = [`${REPO_ROOT}bin/llama-ts.js`, 'serve', '-m', model, '--port', '0', '-np', String(SLOTS)];
  args.push('-c', String(CTX), '-t', '1', '--log-level', 'warn');
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
  return { p, url, addr: url.replace('http://', ''), err: () => err };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Message = { role: string; content: string };

/** A streamed chat answer through the proxy. */
interface Answer {
  status: number;
  /** The replica that answered (the last of nginx's X-Upstream). */
  upstream: string;
  key: string;
  /** nginx's X-Session-Id: what placed the request. */
  session: string;
  text: string;
  finish: string | null | undefined;
  done: boolean;
  promptTokens: number;
  cached: number;
  error?: string;
  started: number;
  ended: number;
}

async function chat(
  base: string,
  messages: Message[],
  opts: { headers?: Record<string, string>; maxTokens?: number } = {},
): Promise<Answer> {
  const a: Answer = {
    status: 0,
    upstream: '',
    key: '',
    session: '',
    text: '',
    finish: undefined,
    done: false,
    promptTokens: 0,
    cached: 0,
    started: performance.now(),
    ended: 0,
  };
  try {
    const r = await fetch(`${base}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...opts.headers },
      body: JSON.stringify({
        messages,
        max_tokens: opts.maxTokens ?? 24,
        temperature: 0.7,
        seed: 1,
        stream: true,
        stream_options: { include_usage: true },
      }),
    });
    a.status = r.status;
    // the replica that answered: the last one nginx tried
    a.upstream = (r.headers.get('x-upstream') ?? '').split(', ').at(-1)!;
    a.key = r.headers.get('x-prefix-key') ?? '';
    a.session = r.headers.get('x-session-id') ?? '';
    if (r.status !== 200) {
      a.error = await r.text();
      return a;
    }
    const dec = new TextDecoder();
    let buf = '';
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
      buf += dec.decode(chunk, { stream: true });
      for (let i = buf.indexOf('\n\n'); i >= 0; i = buf.indexOf('\n\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (!line.startsWith('data: ')) continue;
        if (line === 'data: [DONE]') {
          a.done = true;
          continue;
        }
        const e = JSON.parse(line.slice(6)) as {
          choices: { delta?: { content?: string | null }; finish_reason?: string | null }[];
          usage?: { prompt_tokens: number; prompt_tokens_details: { cached_tokens: number } };
          error?: unknown;
        };
        if (e.error) a.error = JSON.stringify(e.error);
        const c = e.choices?.[0];
        if (c?.delta?.content) a.text += c.delta.content;
        if (c?.finish_reason) a.finish = c.finish_reason;
        if (e.usage) {
          a.promptTokens = e.usage.prompt_tokens;
          a.cached = e.usage.prompt_tokens_details.cached_tokens;
        }
      }
    }
  } catch (e) {
    a.error = (e as Error).message;
  }
  a.ended = performance.now();
  return a;
}

/** Why an answer is not a complete stream ('' when it is). */
function incomplete(a: Answer): string {
  if (a.status !== 200) return `status ${a.status}: ${a.error}`;
  if (a.error) return a.error;
  if (!a.finish) return 'no finish_reason';
  if (a.finish === 'abort') return 'aborted';
  if (!a.done) return 'no [DONE]';
  return '';
}

describe('3 replicas behind nginx', { skip: NGINX ? false : NO_NGINX, timeout: 600_000 }, () => {
  const model = chatModel();
  let a: Replica;
  let b: Replica;
  let c: LlamaServer;
  let cAddr: string;
  let proxy: NginxProxy;
  /** Access-log lines before the loading replica joined (its 503s are the first test's). */
  let joined = 0;
  before(async () => {
    [a, b] = await Promise.all([spawnReplica(model), spawnReplica(model)]);
    // the third listens but loads only when the first test says so
    c = await LlamaServer.listen({ model, port: 0, parallel: SLOTS, nCtx: CTX, threads: 1 });
    cAddr = `127.0.0.1:${c.port}`;
    proxy = await startNginx(NGINX!, [a, b].map((r) => Number(r.addr.split(':')[1])).concat(c.port), {
      failTimeout: '1s',
    });
  });
  after(async () => {
    await proxy?.stop();
    for (const r of [a, b]) if (r && r.p.exitCode === null) r.p.kill('SIGKILL');
    await c?.close();
  });

  test('a replica still loading (503) makes no request fail: nginx tries another', async () => {
    const failures: string[] = [];
    let tried = 0;
    for (let round = 0; round < 40 && tried === 0; round++) {
      const answers = await Promise.all(
        [0, 1, 2].map((i) => chat(proxy.url, [{ role: 'user', content: `Story ${round}.${i}` }], { maxTokens: 6 })),
      );
      for (const x of answers) if (incomplete(x)) failures.push(incomplete(x));
      tried = proxy.routed().filter((r) => r.upstreams.includes(cAddr)).length;
    }
    assert.deepEqual(failures, []);
    assert.ok(tried > 0, 'no request was sent to the loading replica: nothing was tested');
    for (const r of proxy.routed().filter((x) => x.upstreams.includes(cAddr))) {
      assert.equal(r.status, 200);
      assert.equal(r.upstreamStatuses[r.upstreams.indexOf(cAddr)], '503');
      assert.notEqual(r.upstreams.at(-1), cAddr);
    }
    assert.equal(c.state, 'loading');
    await c.load();
    // Back in rotation once fail_timeout (1 s) lapses, counted on nginx's clock of whole
    // seconds: a replica taken out during second T is skipped through second T + 1. Until
    // then the keys that hash to it go to the next replica and come back to it later, cold
    // (which once moved a conversation in the next tests). So wait past that, then until a
    // request is seen on it.
    await sleep(2100);
    for (let i = 0; i < 60 && !proxy.routed().some((r) => r.status === 200 && r.upstreams.at(-1) === cAddr); i++) {
      const x = await chat(proxy.url, [{ role: 'user', content: `Probe ${i}.` }], { maxTokens: 1 });
      assert.equal(incomplete(x), '', `probe ${i}`);
    }
    assert.ok(
      proxy.routed().some((r) => r.status === 200 && r.upstreams.at(-1) === cAddr),
      'the loaded replica never got a request',
    );
    joined = proxy.routed().length;
  });

  test('every streaming request completes through the proxy, spread over the replicas', async () => {
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        chat(proxy.url, [{ role: 'user', content: `Tell story number ${i}.` }], { maxTokens: 16 + i }),
      ),
    );
    assert.deepEqual(
      answers.map(incomplete).filter((e) => e !== ''),
      [],
    );
    for (const x of answers) assert.match(x.key, /^\d+-[0-9a-f]{16}$/);
    const used = new Set(answers.map((x) => x.upstream));
    assert.ok(used.size >= 2, `12 requests without a key all went to ${[...used]}`);
  });

  test("a conversation's later turns land on one replica and reuse its cached prompt", async () => {
    const TURNS = 4;
    // 'key': sends X-Prefix-Key back; 'own': its own X-Session-Id from the first turn (and
    // the key back); 'minted': sends back the X-Session-Id nginx gave its first turn
    const converse = async (n: number, mode: 'key' | 'own' | 'minted') => {
      const messages: Message[] = [
        { role: 'system', content: `You are storyteller number ${n}.` },
        { role: 'user', content: `Tell me about animal ${n}.` },
      ];
      const turns: Answer[] = [];
      let key = '';
      let session = mode === 'own' ? `conversation-${n}` : '';
      for (let t = 0; t < TURNS; t++) {
        // nginx prefers the session header when both are sent
        const headers: Record<string, string> = {
          ...(key && mode !== 'minted' ? { 'X-Prefix-Key': key } : {}),
          ...(session ? { 'X-Session-Id': session } : {}),
        };
        const x = await chat(proxy.url, messages, { headers, maxTokens: 20 });
        assert.equal(incomplete(x), '', `conversation ${n}, turn ${t + 1}`);
        turns.push(x);
        key = x.key;
        if (mode === 'minted' && t === 0) session = x.session;
        messages.push({ role: 'assistant', content: x.text }, { role: 'user', content: `And then (${t})?` });
      }
      return turns;
    };
    const modes = ['key', 'key', 'key', 'own', 'minted'] as const;
    const convs = await Promise.all(modes.map((m, n) => converse(n + 1, m)));
    // replicas where an attempt failed since all three were up (an error or a 503): nginx's
    // passive health takes such a replica out for fail_timeout; its keys move on by design
    const failedOn = new Set(
      proxy
        .routed()
        .slice(joined)
        .flatMap((r) => r.upstreams.filter((_, i) => r.upstreamStatuses[i] !== '200')),
    );
    const report = convs.map((turns) =>
      turns.map((x) => `${x.upstream} ${x.cached}/${x.promptTokens} ${x.key}`).join(' | '),
    );
    process.stderr.write(
      `# conversations (replica cached/prompt key, per turn):\n${report.map((r) => `#   ${r}\n`).join('')}`,
    );
    if (proxy.errors()) process.stderr.write(`# nginx's error log:\n${proxy.errors().replace(/^/gm, '#   ')}\n`);
    const moved: string[] = [];
    for (const [n, turns] of convs.entries()) {
      const withSession = modes[n] !== 'key';
      // on failure: where nginx sent each of this conversation's requests, and its error log
      const key = turns[0]!.key;
      const routes = proxy
        .routed()
        .filter((r) => r.affinity === key || r.affinity === turns[0]!.session || r.affinity === `conversation-${n + 1}`)
        .map((r) => `${r.status} ${r.upstreams.join(',')} ${r.upstreamStatuses.join(',')}`);
      const why = `conversation ${n + 1}: ${report[n]}\nnginx: ${routes.join(' | ')}\n${proxy.errors()}`;
      // one key for the whole conversation that sends it back
      if (modes[n] !== 'minted') assert.equal(new Set(turns.map((x) => x.key)).size, 1, why);
      else assert.match(turns[0]!.session, /^[0-9a-f]{32}$/, 'nginx names the first turn');
      // from the second turn (the first, with a session header), one replica, unless an
      // attempt failed on it (then the rest of the conversation stays on the next one)
      const from = withSession ? 0 : 1;
      for (let t = 1; t < TURNS; t++) {
        const prev = turns[t - 1]!.upstream;
        const same = turns[t]!.upstream === prev;
        if (!same && t > from) {
          assert.ok(failedOn.has(prev), `turn ${t + 1} left ${prev}, where no attempt failed: ${why}`);
          moved.push(`conversation ${n + 1} turn ${t + 1} left ${prev} after an attempt failed there`);
        }
        // on the replica of the previous turn, the whole previous prompt is reused
        if (same) assert.ok(turns[t]!.cached >= turns[t - 1]!.promptTokens, `turn ${t + 1}: ${why}`);
      }
    }
    if (moved.length) process.stderr.write(`# ${moved.join('\n# ')}\n${proxy.errors().replace(/^/gm, '#   ')}\n`);
    // affinity was exercised: most conversations never left their replica
    const steady = convs.filter((_, n) => !moved.some((m) => m.startsWith(`conversation ${n + 1} `)));
    assert.ok(steady.length >= 3, moved.join('; '));
  });

  test('SIGTERM to a replica under load loses no accepted request; it exits 0', async () => {
    const answers: Answer[] = [];
    let stop = false;
    const client = async (w: number) => {
      for (let i = 0; !stop; i++) {
        answers.push(await chat(proxy.url, [{ role: 'user', content: `Client ${w}, story ${i}.` }], { maxTokens: 40 }));
      }
    };
    const clients = Array.from({ length: 9 }, (_, w) => client(w));
    // SIGTERM once A is at work
    let busy = false;
    for (let i = 0; i < 400 && !busy; i++) {
      await sleep(25);
      const slots = (await (await fetch(`${a.url}/slots`)).json()) as { is_processing: boolean }[];
      busy = slots.some((s) => s.is_processing);
    }
    assert.ok(busy, 'replica A never got a request');
    const signalled = performance.now();
    a.p.kill('SIGTERM');
    const code = await new Promise<number | null>((res) => a.p.once('exit', (x) => res(x)));
    const exited = performance.now();
    await sleep(1500);
    stop = true;
    await Promise.all(clients);
    const failed = answers.map(incomplete).filter((e) => e !== '');
    assert.deepEqual(failed, [], `${failed.length} of ${answers.length} requests failed`);
    assert.equal(code, 0, a.err());
    const finishedOnA = answers.filter((x) => x.upstream === a.addr && x.ended > signalled);
    assert.ok(finishedOnA.length > 0, 'no stream of A was in flight at the signal');
    const afterExit = answers.filter((x) => x.started > exited);
    assert.ok(afterExit.length > 0);
    for (const x of afterExit) assert.notEqual(x.upstream, a.addr);
    process.stderr.write(
      `# replicas: ${answers.length} requests, ${finishedOnA.length} of A's finished after its SIGTERM, ${afterExit.length} after it exited (on ${[...new Set(afterExit.map((x) => x.upstream))].join(', ')})\n`,
    );
  });
});
