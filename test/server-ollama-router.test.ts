// Ollama's API in serve's router mode, through the official `ollama` npm client (0.6.4)
// on loopback: two generated models in a models folder (a chat model with a Hermes tool
// template, an embedding model) and a third pulled from a local mirror of the Hugging
// Face download path into the cache. `model` picks the model; /api/tags lists the folder's
// and the cache's, /api/ps the loaded ones with when keep_alive unloads them; an empty
// generate loads a model (load_duration), keep_alive 0 unloads it, a duration unloads it
// once idle; a pulled model is listed and runs at once, /api/delete refuses it while a
// request uses it and then removes it.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Ollama } from 'ollama';
import { LlamaRouter, modelsFromCache, modelsFromDir } from '../src/server/index.js';
import { keepAlive } from '../src/server/ollama.js';
import { ADD_TOOL, clientModel, THINKING_HERMES, WEATHER_TOOL } from './helpers/clients.js';
import { type HubMirror, startHubMirror } from './helpers/hub-mirror.js';
import { tinyBert, tinyLlama } from './helpers/models.js';

const ENTRY = fileURLToPath(new URL('../src/cli/serve-child.js', import.meta.url));
const THINK_SWITCH = THINKING_HERMES.replace('{%- if think %}', '{%- if enable_thinking %}');
const REPO = 'test-owner/Tiny-GGUF';
const PULLED = `hf.co/${REPO}:Q8_0`;
/** Ollama's "forever" in /api/ps: a model kept until its room is needed. */
const FOREVER = '2318-01-01T00:00:00Z';

// biome-ignore lint/suspicious/noExplicitAny: answers read field by field, as documented by Ollama
type Json = Record<string, any>;

let dir: string;
let cache: string;
let hub: HubMirror;
let router: LlamaRouter;
let ol: Ollama;
/** /api/show of llama before it was ever loaded. */
let shownUnloaded: Json;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'llama-ts-ollama-router-'));
  cache = mkdtempSync(join(tmpdir(), 'llama-ts-ollama-router-cache-'));
  copyFileSync(clientModel(), join(dir, 'llama.gguf'));
  copyFileSync(tinyBert(), join(dir, 'bert.gguf'));
  hub = await startHubMirror(REPO, ['tiny-q8_0.gguf'], readFileSync(tinyLlama()));
  process.env.LLAMA_TS_HF_ENDPOINT = hub.url;
  const models = [...(await modelsFromCache(cache)), ...modelsFromDir(dir)];
  models.find((m) => m.name === 'llama')!.presetArgs = ['--chat-template', THINK_SWITCH];
  router = await LlamaRouter.listen({
    models,
    spawn: { entry: ENTRY, baseArgs: ['-c', '4096', '--parallel', '2', '--threads', '1'] },
    port: 0,
    modelsMax: 2,
    cacheDir: cache,
    shutdownTimeout: 5,
  });
  ol = new Ollama({ host: router.url });
});

after(async () => {
  await router?.shutdown();
  await hub?.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

const isDate = (s: unknown) => typeof s === 'string' && !Number.isNaN(Date.parse(s)) && /^\d{4}-\d\d-\d\dT/.test(s);

/** /api/ps by name (read raw: the client types expires_at as a Date but passes the JSON string). */
async function ps(): Promise<Map<string, Json>> {
  const r = (await (await fetch(`${router.url}/api/ps`)).json()) as { models: Json[] };
  return new Map(r.models.map((m) => [m.name as string, m]));
}

/** Ollama's timing and count fields on a final answer. */
function assertFinal(r: Json): void {
  assert.equal(r.done, true);
  assert.ok(['stop', 'length'].includes(r.done_reason), r.done_reason);
  assert.ok(isDate(r.created_at));
  for (const k of ['total_duration', 'load_duration', 'prompt_eval_count', 'prompt_eval_duration', 'eval_count']) {
    assert.ok(Number.isInteger(r[k]) && r[k] >= 0, `${k} = ${r[k]}`);
  }
  assert.ok(r.prompt_eval_count > 0 && r.eval_count > 0);
  assert.ok(r.total_duration >= r.load_duration + r.prompt_eval_duration + r.eval_duration);
}

/** Rejects with the client's ResponseError: its message and status. */
async function rejects(p: Promise<unknown>, status: number, message: RegExp): Promise<void> {
  await assert.rejects(p, (e: { status_code?: number; message: string }) => {
    assert.equal(e.status_code, status, e.message);
    assert.match(e.message, message);
    return true;
  });
}

async function until(what: string, f: () => Promise<boolean>, ms = 8000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await f())) {
    if (Date.now() > end) assert.fail(`timed out waiting: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('Ollama API in router mode', () => {
  test('version; list names every model of the folder, in Ollama shape; nothing loaded', async () => {
    assert.match((await ol.version()).version, /\d/);
    const list = (await ol.list()).models as unknown as Json[];
    assert.deepEqual(list.map((m) => m.name).sort(), ['bert:latest', 'llama:latest']);
    for (const m of list) {
      assert.equal(m.model, m.name);
      assert.ok(isDate(m.modified_at) && m.size > 0 && /^[0-9a-f]{64}$/.test(m.digest));
      assert.equal(m.details.format, 'gguf');
      assert.match(m.details.parameter_size, /^\d+(\.\d)?[KMB]?$/);
    }
    assert.deepEqual(list.find((m) => m.name === 'bert:latest')!.details.family, 'bert');
    // show loads nothing (as Ollama's): the file's header, the preset's template
    shownUnloaded = (await ol.show({ model: 'llama' })) as unknown as Json;
    assert.equal(shownUnloaded.template, THINK_SWITCH);
    assert.deepEqual(shownUnloaded.capabilities, ['completion', 'tools', 'thinking']);
    assert.ok(shownUnloaded.model_info['general.parameter_count'] > 0);
    assert.deepEqual((await ol.show({ model: 'bert' })).capabilities, ['embedding']);
    assert.equal((await ps()).size, 0);
    assert.equal(router.find('llama')!.starts, 0);
  });

  test('an empty generate loads (5 min keep_alive), keep_alive 0 unloads, a duration unloads once idle', async () => {
    const t = Date.now();
    const load = (await ol.generate({ model: 'llama', prompt: '' })) as unknown as Json;
    assert.deepEqual(Object.keys(load).sort(), ['created_at', 'done', 'done_reason', 'model', 'response']);
    assert.equal(load.done_reason, 'load');
    let p = (await ps()).get('llama:latest');
    assert.ok(p, 'llama is loaded');
    assert.equal(p.size_vram, 0);
    assert.equal(p.context_length, 2048);
    const expires = Date.parse(p.expires_at);
    assert.ok(expires >= t + 299_000 && expires <= Date.now() + 301_000, p.expires_at);
    // keep_alive 0 with nothing to generate: unloaded at once
    const unload = await ol.generate({ model: 'llama:latest', prompt: '', keep_alive: 0 });
    assert.equal(unload.done_reason, 'unload');
    assert.equal((await ps()).has('llama:latest'), false);
    assert.equal(router.find('llama')!.status, 'unloaded');
    // the request that loads it says how long that took; it stays 1 s once idle
    const r = (await ol.generate({
      model: 'llama',
      prompt: 'Once upon a time',
      raw: true,
      stream: false,
      keep_alive: '1s',
      options: { temperature: 0, num_predict: 6 },
    })) as unknown as Json;
    assertFinal(r);
    assert.ok(r.load_duration > 1e6, `load_duration ${r.load_duration}`);
    assert.ok(Array.isArray(r.context) && r.context.length > r.prompt_eval_count);
    p = (await ps()).get('llama:latest');
    assert.ok(p && Date.parse(p.expires_at) <= Date.now() + 1000);
    await until('llama unloaded after its keep_alive', async () => !(await ps()).has('llama:latest'));
    // streamed: the last line has the load; a loaded model's next answer has none
    const lines: Json[] = [];
    const stream = await ol.generate({
      model: 'llama',
      prompt: 'Once upon a time',
      raw: true,
      stream: true,
      options: { temperature: 0, num_predict: 6 },
    });
    for await (const l of stream) lines.push(l as unknown as Json);
    const last = lines.at(-1)!;
    assertFinal(last);
    assert.ok(last.load_duration > 1e6);
    assert.equal(
      lines
        .slice(0, -1)
        .map((l) => l.response)
        .join(''),
      r.response,
    );
    const again = (await ol.generate({
      model: 'llama',
      prompt: 'Once upon a time',
      raw: true,
      options: { temperature: 0, num_predict: 6 },
    })) as unknown as Json;
    assert.equal(again.load_duration, 0);
    assert.equal(again.response, r.response);
    // an OpenAI request last: kept as llama-server keeps models, until the room is needed
    const oa = await fetch(`${router.url}/v1/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'llama', prompt: 'x', max_tokens: 1 }),
    });
    assert.equal(oa.status, 200);
    assert.equal((await ps()).get('llama:latest')!.expires_at, FOREVER);
    await rejects(ol.generate({ model: 'llama', prompt: 'x', keep_alive: 'soon' }), 400, /keep_alive/);
    // longer than a timer holds (2^31 ms): still loaded a moment later, expiring in 1000 h
    await ol.generate({ model: 'llama', prompt: '', keep_alive: '1000h' });
    await new Promise((r) => setTimeout(r, 200));
    p = (await ps()).get('llama:latest');
    assert.ok(p && Math.abs(Date.parse(p.expires_at) - Date.now() - 3.6e9) < 10_000, p?.expires_at);
  });

  test('keep_alive values as Ollama reads them', () => {
    const ms = (v: unknown) => keepAlive({ keep_alive: v });
    assert.equal(ms(undefined), undefined);
    assert.equal(ms(300), 300_000);
    assert.equal(ms(2.5), 2500);
    assert.equal(ms('90'), 90_000);
    assert.equal(ms('1h30m'), 5_400_000);
    assert.equal(ms('1.5s'), 1500);
    assert.equal(ms('500ms'), 500);
    assert.equal(ms('0'), 0);
    assert.equal(ms('0s'), 0);
    assert.equal(ms(-1), Number.POSITIVE_INFINITY);
    assert.equal(ms('-1m'), Number.POSITIVE_INFINITY);
    for (const bad of ['5 minutes', '', true, {}, '5x']) assert.throws(() => ms(bad), /keep_alive/);
  });

  test('chat streamed and not, with tools and a JSON schema', async () => {
    const base = {
      model: 'llama:latest',
      messages: [{ role: 'user', content: 'Hello there' }],
      think: false,
      options: { temperature: 0, num_predict: 10 },
    };
    const whole = (await ol.chat({ ...base, stream: false })) as unknown as Json;
    // loaded, its process describes it: as its file did
    assert.deepEqual(await ol.show({ model: 'llama' }), shownUnloaded);
    assertFinal(whole);
    assert.equal(whole.model, 'llama:latest');
    assert.equal(whole.message.role, 'assistant');
    let text = '';
    for await (const ch of await ol.chat({ ...base, stream: true })) text += ch.message.content;
    assert.equal(text, whole.message.content);
    const tools = (await ol.chat({
      ...base,
      messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
      tools: [WEATHER_TOOL, ADD_TOOL],
      tool_choice: 'required',
      parallel_tool_calls: false,
      options: { temperature: 0, num_predict: 120 },
    } as never)) as unknown as Json;
    const calls = tools.message.tool_calls as Json[];
    assert.equal(calls.length, 1, JSON.stringify(tools.message));
    assert.ok(['get_weather', 'add'].includes(calls[0]!.function.name));
    assert.equal(typeof calls[0]!.function.arguments, 'object');
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 8 }, age: { type: 'integer', minimum: 0, maximum: 99 } },
      required: ['name', 'age'],
    };
    const json = await ol.chat({ ...base, format: schema, options: { temperature: 0, num_predict: 200 } });
    const v = JSON.parse(json.message.content) as { name: string; age: number };
    assert.deepEqual(Object.keys(v).sort(), ['age', 'name']);
    await rejects(
      ol.chat({ ...base, messages: [{ role: 'user', content: 'x', images: ['aGk='] }] }),
      400,
      /does not take images/,
    );
  });

  test('embed on the other model; both loaded in /api/ps', async () => {
    const e = (await ol.embed({ model: 'bert', input: ['hello world', 'bye'] })) as unknown as Json;
    assert.equal(e.model, 'bert');
    assert.equal(e.embeddings.length, 2);
    const norm = Math.hypot(...(e.embeddings[0] as number[]));
    assert.ok(Math.abs(norm - 1) < 1e-5);
    assert.ok(e.load_duration > 0 && e.total_duration >= e.load_duration && e.prompt_eval_count > 0);
    const old = await ol.embeddings({ model: 'bert:latest', prompt: 'hello world' });
    const k = Math.hypot(...old.embedding);
    for (let i = 0; i < 4; i++) assert.ok(Math.abs(old.embedding[i]! / k - e.embeddings[0][i]) < 1e-5);
    assert.deepEqual([...(await ps()).keys()].sort(), ['bert:latest', 'llama:latest']);
  });

  test('pull into the cache: listed and run at once; delete refused while in use, then removed', async () => {
    const lines: Json[] = [];
    for await (const l of await ol.pull({ model: PULLED, stream: true })) lines.push(l as unknown as Json);
    assert.equal(lines[0]!.status, 'pulling manifest');
    assert.deepEqual(
      lines.slice(-3).map((l) => l.status),
      ['verifying sha256 digest', 'writing manifest', 'success'],
    );
    assert.ok(lines.some((l) => l.status === `pulling ${hub.sha.slice(0, 12)}` && l.completed === l.total));
    const path = join(cache, ...REPO.split('/'), 'tiny-q8_0.gguf');
    assert.ok(existsSync(path));
    assert.ok((await ol.list()).models.some((m) => m.name === PULLED));
    // runs under the name it was pulled by; --models-max 2 unloads the least recently used (llama)
    const r = (await ol.generate({
      model: PULLED,
      prompt: 'Once upon a time',
      raw: true,
      options: { temperature: 0, num_predict: 4 },
    })) as unknown as Json;
    assertFinal(r);
    assert.deepEqual([...(await ps()).keys()].sort(), ['bert:latest', PULLED]);
    await rejects(ol.delete({ model: 'llama' }), 400, /not a download/);
    // a request waiting for its load is in flight: no delete
    await ol.generate({ model: PULLED, prompt: '', keep_alive: 0 });
    const pending = ol.generate({ model: PULLED, prompt: 'x', raw: true, options: { num_predict: 2 } });
    await until('the load began', async () => router.find(PULLED)!.status !== 'unloaded', 2000);
    await rejects(ol.delete({ model: PULLED }), 409, /in flight/);
    assert.equal((await pending).done, true);
    assert.deepEqual(await ol.delete({ model: PULLED }), { status: 'success' });
    assert.equal(existsSync(path), false);
    assert.equal((await ps()).has(PULLED), false);
    assert.ok(!(await ol.list()).models.some((m) => m.name === PULLED));
    await rejects(ol.generate({ model: PULLED, prompt: 'x' }), 404, /not found/);
    await rejects(ol.delete({ model: PULLED }), 404, /not found/);
  });

  test('errors in Ollama shape', async () => {
    const r = await fetch(`${router.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'nope', messages: [{ role: 'user', content: 'x' }] }),
    });
    assert.equal(r.status, 404);
    assert.deepEqual(await r.json(), { error: "model 'nope' not found" });
    const none = await fetch(`${router.url}/api/generate`, { method: 'POST', body: JSON.stringify({ prompt: 'x' }) });
    assert.equal(none.status, 400);
    assert.deepEqual(await none.json(), { error: 'model is required' });
    await rejects(ol.pull({ model: 'llama3' }), 400, /only Hugging Face models/);
  });
});
