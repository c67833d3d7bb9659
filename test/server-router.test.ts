// serve's router mode (llama-server's): three generated models and a broken file in a
// models folder, at most two loaded. Each model answers as the library does on its own
// (greedy text, embedding vector); loading a third unloads the least recently used idle
// model, never one streaming; a killed model process fails its own stream and comes back
// on the next request while the others answer; concurrent first requests start one
// process; the broken file is listed as failed with its error.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../src/api/index.js';
import { routerBaseArgs } from '../src/cli/serve.js';
import {
  applyPreset,
  LlamaRouter,
  labelMetrics,
  type ModelInstance,
  modelsFromDir,
  parseIni,
} from '../src/server/index.js';
import { tinyBert, tinyLlama, tinyQwen2 } from './helpers/models.js';
import { startServe } from './helpers/serve-child.js';

const ENTRY = fileURLToPath(new URL('../src/cli/serve-child.js', import.meta.url));
const BASE_ARGS = ['-c', '512', '--parallel', '2', '--threads', '1'];

const post = (url: string, body: unknown) =>
  fetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

interface ModelRow {
  id: string;
  capabilities: string[];
  status: { value: string; failed?: boolean; exit_code?: number; error?: string; args?: string[]; preset?: string };
}

async function models(url: string): Promise<Map<string, ModelRow>> {
  const r = await fetch(`${url}/models`);
  assert.equal(r.status, 200);
  const b = (await r.json()) as { object: string; data: ModelRow[] };
  assert.equal(b.object, 'list');
  return new Map(b.data.map((m) => [m.id, m]));
}

const statusOf = async (url: string, id: string) => (await models(url)).get(id)!.status.value;

/** A stream's `data:` events as they come (parsed; '[DONE]' as is), `onEvent` on each. */
async function readStream(r: Response, onEvent: (e: unknown, n: number) => void): Promise<unknown[]> {
  const events: unknown[] = [];
  const dec = new TextDecoder();
  let buf = '';
  try {
    for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
      buf += dec.decode(chunk, { stream: true });
      let i = buf.indexOf('\n\n');
      while (i >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (line.startsWith('data: ')) {
          const data = line.slice(6);
          events.push(data === '[DONE]' ? data : JSON.parse(data));
          onEvent(events.at(-1), events.length);
        }
        i = buf.indexOf('\n\n');
      }
    }
  } catch (e) {
    if ((e as Error).name !== 'AbortError') throw e;
  }
  return events;
}

describe('serve router mode', () => {
  let dir: string;
  let router: LlamaRouter;
  let url: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-'));
    copyFileSync(tinyLlama(), join(dir, 'llama.gguf'));
    mkdirSync(join(dir, 'qwen'));
    copyFileSync(tinyQwen2(), join(dir, 'qwen', 'qwen-Q8_0.gguf'));
    copyFileSync(tinyBert(), join(dir, 'bert.gguf'));
    // a GGUF magic and version, then nothing: the header is cut short
    writeFileSync(join(dir, 'broken.gguf'), Buffer.from('GGUF\x03\x00\x00\x00garbage', 'latin1'));
    router = await LlamaRouter.listen({
      models: modelsFromDir(dir),
      spawn: { entry: ENTRY, baseArgs: BASE_ARGS },
      port: 0,
      modelsMax: 2,
      shutdownTimeout: 5,
    });
    url = router.url;
  });

  after(async () => {
    await router?.shutdown();
    rmSync(dir, { recursive: true, force: true });
  });

  test('lists every model unloaded, with its capabilities (a subfolder by its name)', async () => {
    const m = await models(url);
    assert.deepEqual([...m.keys()].sort(), ['bert', 'broken', 'llama', 'qwen']);
    for (const row of m.values()) assert.equal(row.status.value, 'unloaded');
    assert.deepEqual(m.get('llama')!.capabilities, ['completion']);
    assert.deepEqual(m.get('qwen')!.capabilities, ['completion']);
    assert.deepEqual(m.get('bert')!.capabilities, ['embedding']);
    assert.deepEqual(m.get('broken')!.capabilities, []);
  });

  test('each model answers as the library does on its own', async () => {
    const prompt = 'Once upon a time';
    const r1 = await post(`${url}/v1/completions`, { model: 'llama.gguf', prompt, max_tokens: 8, temperature: 0 });
    assert.equal(r1.status, 200);
    const b1 = (await r1.json()) as { model: string; choices: { text: string }[] };
    assert.equal(b1.model, 'llama');
    const r2 = await post(`${url}/v1/embeddings`, { model: 'bert', input: 'hello world' });
    assert.equal(r2.status, 200);
    const b2 = (await r2.json()) as { model: string; data: { embedding: number[] }[] };
    assert.equal(b2.model, 'bert');
    const r3 = await post(`${url}/v1/chat/completions`, {
      model: 'qwen',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 4,
    });
    assert.equal(r3.status, 200);
    assert.equal(((await r3.json()) as { model: string }).model, 'qwen');
    // the reference: the same files in this process
    const ctx = await loadModel({ model: join(dir, 'llama.gguf'), n_ctx: 256 });
    try {
      const ref = await ctx.completion({ prompt, n_predict: 8, temperature: 0 });
      assert.equal(b1.choices[0]!.text, ref.text);
    } finally {
      await ctx.release();
    }
    const ectx = await loadModel({ model: join(dir, 'bert.gguf') });
    try {
      const ref = await ectx.embedding('hello world', { embd_normalize: 2 });
      const got = b2.data[0]!.embedding;
      assert.equal(got.length, ref.embedding.length);
      for (const [i, v] of got.entries()) assert.ok(Math.abs(v - ref.embedding[i]!) < 1e-6, `embedding[${i}]`);
    } finally {
      await ectx.release();
    }
    // --models-max 2: llama, used first, went for qwen
    const m = await models(url);
    assert.equal(m.get('llama')!.status.value, 'unloaded');
    assert.equal(m.get('bert')!.status.value, 'loaded');
    assert.equal(m.get('qwen')!.status.value, 'loaded');
  });

  test('loading another model unloads the least recently used idle one, not one streaming', async () => {
    const ac = new AbortController();
    // llama streams (loaded now: bert, the least recently used, goes)
    const r = await fetch(`${url}/v1/completions`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ model: 'llama', prompt: 'a', max_tokens: 100000, ignore_eos: true, stream: true }),
      signal: ac.signal,
    });
    assert.equal(r.status, 200);
    let afterSwitch = -1;
    let seen = 0;
    let switched: Promise<void> | undefined;
    const events = readStream(r, (_e, n) => {
      seen = n;
      if (n === 2) {
        switched = (async () => {
          assert.equal(await statusOf(url, 'bert'), 'unloaded');
          // qwen is used after llama began: llama is the least recently used, but busy
          assert.equal((await post(`${url}/tokenize`, { model: 'qwen', content: 'x' })).status, 200);
          const e = await post(`${url}/v1/embeddings`, { model: 'bert', input: 'x' });
          assert.equal(e.status, 200);
          const m = await models(url);
          assert.equal(m.get('llama')!.status.value, 'loaded');
          assert.equal(m.get('qwen')!.status.value, 'unloaded');
          assert.equal(m.get('bert')!.status.value, 'loaded');
          afterSwitch = seen;
        })();
      }
      // the stream goes on after the switch; then the client leaves
      if (afterSwitch > 0 && n > afterSwitch + 20) ac.abort();
    });
    const got = await events;
    await switched;
    assert.ok(afterSwitch > 0 && got.length > afterSwitch + 20, `events after the switch: ${got.length - afterSwitch}`);
    for (const e of got.slice(1))
      assert.equal((e as { choices: { finish_reason: null }[] }).choices[0]!.finish_reason, null);
  });

  test('a killed model fails its own stream, the others answer, the next request restarts it', async () => {
    const llama = router.instances.find((i) => i.name === 'llama')!;
    const starts = llama.starts;
    const r = await post(`${url}/v1/completions`, {
      model: 'llama',
      prompt: 'a',
      max_tokens: 100000,
      ignore_eos: true,
      stream: true,
    });
    assert.equal(r.status, 200);
    const events = await readStream(r, (_e, n) => {
      if (n === 3) process.kill(llama.pid!, 'SIGKILL');
    });
    const last = events.at(-1) as { error?: { message: string } };
    assert.match(last.error?.message ?? '', /llama.*killed by SIGKILL.*restarts on the next request/);
    const row = (await models(url)).get('llama')!;
    assert.equal(row.status.value, 'unloaded');
    assert.equal(row.status.failed, true);
    assert.equal(row.status.exit_code, 137);
    // a model's own port answers the router only
    const direct = await fetch(`${router.instances.find((i) => i.name === 'bert')!.url}/v1/embeddings`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ input: 'x' }),
    });
    assert.equal(direct.status, 401);
    const e = await post(`${url}/v1/embeddings`, { model: 'bert', input: 'still here' });
    assert.equal(e.status, 200);
    const again = await post(`${url}/v1/completions`, { model: 'llama', prompt: 'a', max_tokens: 2 });
    assert.equal(again.status, 200);
    assert.equal(llama.starts, starts + 1);
    const row2 = (await models(url)).get('llama')!;
    assert.equal(row2.status.value, 'loaded');
    assert.equal(row2.status.failed, undefined);
  });

  test('concurrent first requests to an unloaded model start one process', async () => {
    const qwen = router.instances.find((i) => i.name === 'qwen')!;
    assert.equal(await statusOf(url, 'qwen'), 'unloaded');
    const starts = qwen.starts;
    const rs = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        post(`${url}/v1/completions`, { model: 'qwen', prompt: `p${i}`, max_tokens: 2 }).then(async (r) => {
          await r.arrayBuffer();
          return r.status;
        }),
      ),
    );
    assert.deepEqual(rs, [200, 200, 200, 200]);
    assert.equal(qwen.starts, starts + 1);
  });

  test('the broken file is failed with its error; a request to it says why', async () => {
    const r = await post(`${url}/v1/completions`, { model: 'broken', prompt: 'a' });
    assert.equal(r.status, 500);
    const b = (await r.json()) as { error: { message: string } };
    assert.match(b.error.message, /model 'broken' failed to load: .*broken\.gguf.*truncated/);
    const row = (await models(url)).get('broken')!;
    assert.equal(row.status.value, 'unloaded');
    assert.equal(row.status.failed, true);
    assert.equal(row.status.exit_code, 1);
    assert.equal(row.status.error, b.error.message);
  });

  test('names, load / unload, autoload per request, errors', async () => {
    assert.equal((await post(`${url}/v1/completions`, { prompt: 'a' })).status, 400);
    const nf = await post(`${url}/v1/completions`, { model: 'nope', prompt: 'a' });
    assert.equal(nf.status, 400);
    assert.match(((await nf.json()) as { error: { message: string } }).error.message, /model 'nope' not found/);
    assert.equal((await post(`${url}/v1/embeddings`, { model: 'bert', input: 'x' })).status, 200);
    const u = await post(`${url}/models/unload`, { model: 'bert' });
    assert.equal(u.status, 200);
    assert.deepEqual(await u.json(), { success: true });
    for (let i = 0; i < 100 && (await statusOf(url, 'bert')) !== 'unloaded'; i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(await statusOf(url, 'bert'), 'unloaded');
    const no = await post(`${url}/v1/embeddings?autoload=false`, { model: 'bert', input: 'x' });
    assert.equal(no.status, 400);
    assert.equal((await post(`${url}/models/load`, { model: 'bert' })).status, 200);
    for (let i = 0; i < 200 && (await statusOf(url, 'bert')) !== 'loaded'; i++)
      await new Promise((r) => setTimeout(r, 50));
    assert.equal(await statusOf(url, 'bert'), 'loaded');
    assert.equal((await post(`${url}/models/load`, { model: 'bert' })).status, 400);
    assert.equal((await post(`${url}/v1/embeddings?autoload=false`, { model: 'bert', input: 'x' })).status, 200);
  });

  test('/metrics labels each loaded model; Ollama lists and runs them', async () => {
    const text = await (await fetch(`${url}/metrics`)).text();
    const loaded = router.instances.filter((i) => i.status === 'loaded').map((i) => i.name);
    assert.equal(loaded.length, 2);
    for (const n of loaded) assert.match(text, new RegExp(`^llamacpp:requests_processing\\{model="${n}"\\} \\d`, 'm'));
    assert.equal(text.match(/^# TYPE llamacpp:requests_processing /gm)?.length, 1);
    const tags = (await (await fetch(`${url}/api/tags`)).json()) as { models: { name: string }[] };
    assert.deepEqual(tags.models.map((m) => m.name).sort(), ['bert:latest', 'llama:latest', 'qwen:latest']);
    const ps = (await (await fetch(`${url}/api/ps`)).json()) as { models: { name: string }[] };
    assert.deepEqual(ps.models.map((m) => m.name).sort(), loaded.map((n) => `${n}:latest`).sort());
    const chat = await post(`${url}/api/generate`, {
      model: 'llama:latest',
      prompt: 'a',
      stream: false,
      options: { num_predict: 2 },
    });
    assert.equal(chat.status, 200);
    assert.deepEqual(
      Object.entries((await chat.json()) as { model: string; done: boolean }).filter(
        ([k]) => k === 'model' || k === 'done',
      ),
      [
        ['model', 'llama:latest'],
        ['done', true],
      ],
    );
    const missing = await post(`${url}/api/chat`, { model: 'nope', messages: [] });
    assert.equal(missing.status, 404);
    assert.deepEqual(await missing.json(), { error: "model 'nope' not found" });
  });
});

test('--models-max 1: first requests to two models at once both load in turn (no deadlock)', {
  timeout: 60000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-max1-'));
  copyFileSync(tinyLlama(), join(dir, 'a.gguf'));
  copyFileSync(tinyQwen2(), join(dir, 'b.gguf'));
  const router = await LlamaRouter.listen({
    models: modelsFromDir(dir),
    spawn: { entry: ENTRY, baseArgs: BASE_ARGS },
    port: 0,
    modelsMax: 1,
  });
  try {
    const ask = (model: string) =>
      post(`${router.url}/v1/completions`, { model, prompt: 'a', max_tokens: 2 }).then(async (r) => {
        const b = (await r.json()) as { model: string };
        return `${r.status} ${b.model}`;
      });
    // both loads begin in the same tick: each is `loading` before either looks for room
    const [a, b] = router.instances as [ModelInstance, ModelInstance];
    let timer: NodeJS.Timeout | undefined;
    const both = Promise.all([router.ensureLoaded(a), router.ensureLoaded(b)]);
    const late = new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error('the two loads waited on each other')), 30000);
    });
    await Promise.race([both, late]).finally(() => clearTimeout(timer));
    assert.deepEqual([a.status, b.status], ['unloaded', 'loaded']);
    assert.deepEqual(await Promise.all([ask('a'), ask('b'), ask('a')]), ['200 a', '200 b', '200 a']);
    assert.equal(router.instances.filter((i) => i.running).length, 1);
  } finally {
    await router.shutdown();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('shutdown drains: a stream in flight runs to the shutdown timeout, then ends with "abort"; no process is left', {
  timeout: 60000,
}, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-drain-'));
  copyFileSync(tinyLlama(), join(dir, 'a.gguf'));
  const router = await LlamaRouter.listen({
    models: modelsFromDir(dir),
    spawn: { entry: ENTRY, baseArgs: BASE_ARGS },
    port: 0,
    shutdownTimeout: 1,
  });
  const url = router.url;
  try {
    const r = await post(`${url}/v1/completions`, {
      model: 'a',
      prompt: 'a',
      max_tokens: 1000000,
      ignore_eos: true,
      stream: true,
    });
    assert.equal(r.status, 200);
    const a = router.instances[0]!;
    const pid = a.pid!;
    assert.ok(
      a.args
        .join(' ')
        .endsWith(
          '--shutdown-timeout 1 --model ' +
            join(dir, 'a.gguf') +
            ' --alias a --host 127.0.0.1 --port 0 --no-webui --log-level warn',
        ),
    );
    let stopping: Promise<void> | undefined;
    let t0 = 0;
    const events = await readStream(r, (_e, n) => {
      if (n === 3) {
        t0 = performance.now();
        stopping = router.shutdown();
      }
    });
    const waited = performance.now() - t0;
    await stopping;
    type Chunk = { choices: { finish_reason: string | null }[] };
    const chunks = events.filter((e): e is Chunk => typeof e === 'object' && e !== null && 'choices' in e);
    assert.equal(chunks.at(-1)!.choices[0]!.finish_reason, 'abort');
    assert.ok(waited >= 900, `the stream ran ${waited.toFixed(0)} ms into the shutdown`);
    assert.equal((await fetch(`${url}/health`).catch(() => undefined))?.status, undefined, 'the port is closed');
    assert.equal(router.state, 'closed');
    assert.throws(() => process.kill(pid, 0), /ESRCH/);
  } finally {
    await router.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('labelMetrics: one HELP/TYPE per family, each sample labelled by its model', () => {
  const a = '# HELP x_total X.\n# TYPE x_total counter\nx_total 1\n# HELP s S.\n# TYPE s gauge\ns{slot="0"} 2\n';
  const b = '# HELP x_total X.\n# TYPE x_total counter\nx_total 3\n';
  assert.equal(
    labelMetrics([
      { name: 'a', text: a },
      { name: 'b"', text: b },
    ]),
    '# HELP x_total X.\n# TYPE x_total counter\nx_total{model="a"} 1\nx_total{model="b\\""} 3\n' +
      '# HELP s S.\n# TYPE s gauge\ns{model="a",slot="0"} 2\n',
  );
});

test('presets: [*] under [name] under the command line; a section of its own names its file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-preset-'));
  try {
    writeFileSync(join(dir, 'a.gguf'), '');
    const ini = join(dir, 'p.ini');
    writeFileSync(
      ini,
      'version = 1\n[*]\nc = 1024\nno-slots = true\n[a]\n; a comment\nc = 2048\nalias = x, y\nload-on-startup = true\n[b]\nmodel = a.gguf\nstop-timeout = 3\n',
    );
    assert.equal(parseIni('[s]\nk = "v"\n', 'f').get('s')!.get('k'), 'v');
    const m = applyPreset(modelsFromDir(dir), ini, dir);
    const a = m.find((x) => x.name === 'a')!;
    const b = m.find((x) => x.name === 'b')!;
    assert.deepEqual(a.presetArgs, ['-c', '1024', '--no-slots', '-c', '2048']);
    assert.deepEqual(a.aliases, ['x', 'y']);
    assert.equal(a.loadOnStartup, true);
    assert.equal(b.path, join(dir, 'a.gguf'));
    assert.equal(b.stopTimeout, 3);
    assert.deepEqual(b.presetArgs, ['-c', '1024', '--no-slots']);
    writeFileSync(ini, '[ghost]\nc = 1\n');
    assert.throws(() => applyPreset(modelsFromDir(dir), ini, dir), /\[ghost\] is no model.*model = PATH/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(
    routerBaseArgs(['--models-dir', 'd', '--port=1', '-c', '64', '--no-models-autoload', '--api-key', 'k', '-np', '2']),
    ['-c', '64', '-np', '2'],
  );
});

test('serve --models-dir: the CLI starts a router; SIGTERM stops it and its models', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-router-cli-'));
  try {
    copyFileSync(tinyLlama(), join(dir, 'm.gguf'));
    const s = await startServe(['--models-dir', dir, '--cache-dir', join(dir, 'cache'), ...BASE_ARGS]);
    try {
      const r = await post(`${s.url}/v1/completions`, { model: 'm', prompt: 'a', max_tokens: 2 });
      assert.equal(r.status, 200);
      const row = (await models(s.url)).get('m')!;
      assert.deepEqual(row.status.args?.slice(0, 2), ['llama-ts', 'serve']);
      assert.ok(row.status.args?.join(' ').includes(BASE_ARGS.join(' ')), row.status.args?.join(' '));
      const exited = new Promise<number | null>((res) => s.process.on('exit', res));
      s.process.kill('SIGTERM');
      assert.equal(await exited, 0);
      assert.match(s.stderr(), /model m unloaded/);
      // no process of the model is left
      const ps = spawnSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).stdout;
      assert.ok(!ps.includes(join(dir, 'm.gguf')), 'the model process exited');
    } finally {
      // a failure above leaves the router running: its models' processes follow it out
      if (s.process.exitCode === null) s.process.kill('SIGKILL');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
