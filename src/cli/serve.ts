// `llama-ts serve`: the OpenAI-compatible HTTP server (llama-server's endpoints) with
// continuous batching over --parallel slots. Access logs and status go to stderr.
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { POOLING_TYPES } from '../api/options.js';
import { cacheDir, DownloadError, resolveModelArg } from '../download/index.js';
import { type LogLevel, setLogCallback } from '../log.js';
import {
  applyPreset,
  LlamaRouter,
  LlamaServer,
  modelsFromCache,
  modelsFromDir,
  RouterConfigError,
  type RouterModel,
  type ServerOptions,
} from '../server/index.js';
import type { ChildMessage } from '../server/router/index.js';
import { MMPROJ_OPTIONS, MMPROJ_SPELLINGS, mmprojOnGpu, projectorArg } from './multimodal.js';
import {
  ADAPTER_HELP,
  adapterModelOptions,
  commandOptions,
  DEFAULT_THREADS,
  deviceOption,
  extractAdapterArgs,
  flashAttnOption,
  gpuLayersOption,
  intOption,
  normalizeArgv,
  normalizeSpeculativeArgv,
  reportError,
  SHARED_HELP,
  SPECULATIVE_OPTIONS,
  threadsOption,
  UsageError,
  usageError,
} from './options.js';

const HELP = `usage: llama-ts serve [-m MODEL.gguf | -hf REPO[:QUANT]] [options]

An OpenAI-compatible HTTP server: /v1/chat/completions, /v1/completions, /v1/embeddings,
/v1/rerank, /v1/models, /health, /metrics, /slots, /tokenize, /detokenize, /lora-adapters;
and Ollama's API (/api/chat, /api/generate, /api/embed, /api/tags, /api/show, /api/ps,
/api/pull and /api/delete of hf.co/REPO[:QUANT] in --cache-dir, /api/version); a chat
page at / (--no-webui: none). It listens at once and answers 503 (/health:
{"status":"loading model"}) until the model is loaded; answers carry an X-Prefix-Key
header for load balancers (docs/replicas.md).

  -m, --model FILE|hf://REPO/FILE.gguf   the GGUF model (default: ${'Qwen2.5-0.5B-Instruct Q4_K_M'},
                          downloaded on first use)
      -hf, --hf-repo REPO[:QUANT]   a model from Hugging Face (e.g. Qwen/Qwen2.5-0.5B-Instruct-GGUF:q4_k_m)
      --host HOST         address to listen on (default 127.0.0.1)
      --port N            port (default 8080; 0: any free port)
  -np, --parallel N       slots decoded together (default 4)
  -c, --ctx-size N        total context in tokens, shared by the slots (default 4096 per slot,
                          at most the model's training context per slot)
  -b, --batch-size N      tokens per decode call (default 512)
  -t, --threads N         kernel threads (default ${DEFAULT_THREADS}: the cores, at most 4)
${SHARED_HELP.device}
${SHARED_HELP['n-gpu-layers']}
      --api-key KEY       require 'Authorization: Bearer KEY' (env LLAMA_API_KEY)
      --cors ORIGIN       allow cross-origin requests from ORIGIN only (default '*': any origin,
                          as llama-server: the request's Origin is allowed, preflights answered)
      --no-cors           no CORS headers (browsers then refuse cross-origin requests)
      --queue N           requests waiting for a slot, at most (default 64); beyond: 503
      --max-body BYTES    request body limit (default 10485760); beyond: 413
      --max-body-memory BYTES  bytes of request bodies still arriving, over all
                          connections (default 134217728); beyond: 503
      --timeout SECONDS   to receive a whole request, and for a connection where nothing
                          moves while the server waits on the client (default 600)
      --max-connections N open connections at most (default 512); beyond: 503, closed
      --shutdown-timeout SECONDS  on SIGTERM or SIGINT, how long requests in flight may
                          finish (default 30); then streams end with finish_reason
                          "abort". A second signal exits at once.
  -a, --alias NAMES       the model's names (comma-separated) in /v1/models (and Ollama's /api/tags); its id is the
                          first in sorted order (default: the file name)
      --tags TAGS         informational tags (comma-separated) listed by /v1/models
      --temp T            default temperature of requests that give none (default 0.8)
  -s, --seed S            default sampling seed of requests that give none (default -1: random)
  -n, --n-predict N       default tokens to generate of requests that give no limit (-1: until
                          the end of text or a full context; default -1)
      --reasoning-budget N  0: thinking off (templates get enable_thinking false); N > 0:
                          each reply's thinking_budget_tokens; -1 (default): no limit
      --slots, --no-slots GET /slots served or not (a 501) (default: served)
      --no-webui          no chat page at / (default: served, README "Chat page")
  -kvu, --kv-unified      each slot may use the whole context, the slots sharing its cells
                          (when full: idle slots' caches are dropped, then requests fail)
      --pooling TYPE      embedding pooling: none, mean, cls, last, rank (default: the model's);
                          none: per-token vectors on /embeddings, refused by /v1/embeddings
      --sleep-idle-seconds S  unload the model after S seconds without requests; the next
                          request that needs it loads it again (/props: is_sleeping)
  -v, --verbose           log at debug level; OpenAI-shaped answers carry __verbose
      --embeddings        serve /v1/embeddings with a generative model too
      --reranking, --rerank  serve /v1/rerank (a model with pooling_type rank does anyway)
      --no-context-shift  end a reply when its slot's context fills (default: shift, keeping n_keep)
      --swa-full          sliding-window layers get a full-size KV cache (any cached prefix
                          stays reusable; more memory)
  -fa, --flash-attn V     on, off or auto (default auto: on): attention as one fused op
      --chat-template T   chat template override (Jinja text or a built-in name)
      --slot-save-path DIR  allow POST /slots/ID?action=save|restore|erase, files in DIR
  -mm, --mmproj FILE      a multimodal projector: image_url / input_audio parts (Anthropic image,
                          Responses input_image, multimodal_data) as data URLs or base64
      --no-mmproj         no projector, not even the -hf repository's own (default: -hf takes
                          the repository's mmproj file when it has one)
      --no-mmproj-offload  the projector on the CPU (default: on the model's GPU device, when it
                          has one: --device webgpu)
      --allow-remote-media  fetch http(s) image URLs of requests (default: refused; 10 MB, 10 s
                          each); file:// URLs are always refused
      --cache-dir DIR     download cache, and /api/pull's (default ~/.cache/llama-ts; env LLAMA_TS_CACHE)
      --log-level LEVEL   debug, info (default: access logs), warn, error
  -h, --help              show this help

Router mode (llama-server's; any --models-* option and no -m / -hf): many models, each
served by a process of its own started when a request names it (\`model\` in the body,
?model= on GETs); GET /models lists them with their status, POST /models/load and
/models/unload drive them. The other options above apply to every model. Ollama's API
covers them all: keep_alive unloads an idle model (default 5m, as Ollama's; 0 at once),
/api/pull adds to the cache's models, /api/delete removes one.
      --models-dir DIR    models: DIR/NAME.gguf, and DIR/NAME/ folders holding a model
                          (and its mmproj*); the download cache's are listed too (OWNER/REPO:QUANT)
      --models-preset FILE  INI file: [NAME] sections of serve options for a model (model = PATH
                          for one of its own), [*] for all; load-on-startup, stop-timeout
      --models-max N      models loaded at once, at most (default 4; 0: no limit); the least
                          recently used one with no request in flight is unloaded first
      --models-autoload, --no-models-autoload  load the model a request names (default: on;
                          ?autoload=false|true per request)

${ADAPTER_HELP}
`;

const RANK: Record<string, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export async function serveCommand(argv: string[]): Promise<number> {
  // llama.cpp's two-letter short options
  argv = joinNegativeValues(normalizeSpeculativeArgv(normalizeArgv(argv)).map((a) => SERVE_SPELLINGS[a] ?? a));
  let o: ReturnType<typeof parse>['values'];
  let extras: Record<string, unknown>;
  let port: number;
  let parallel: number;
  let nCtx: number | undefined;
  let threads: number;
  let nBatch: number;
  let maxQueue: number;
  let maxBody: number;
  let maxBodyMemory: number;
  let timeout: number;
  let maxConnections: number;
  let shutdownTimeout: number;
  let apiKey: string | undefined;
  let defaults: NonNullable<ServerOptions['defaults']>;
  let reasoningBudget: number | undefined;
  let sleepIdleSeconds: number | undefined;
  try {
    const adapters = extractAdapterArgs(argv);
    const args = parse(adapters.argv);
    o = args.values;
    extras = adapterModelOptions(o, adapters.lora);
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    port = intOption('--port', o.port, 8080);
    if (port > 65535) throw new UsageError(`--port must be ≤ 65535, got ${port}`);
    parallel = intOption('--parallel', o.parallel, 4, 1);
    if (parallel > 32) throw new UsageError('--parallel must be ≤ 32');
    nCtx = o['ctx-size'] === undefined ? undefined : intOption('-c', o['ctx-size'], 0, 1);
    threads = threadsOption(o.threads);
    nBatch = intOption('-b', o['batch-size'], 512, 1);
    maxQueue = intOption('--queue', o.queue, 64, 0);
    maxBody = intOption('--max-body', o['max-body'], 10 * 1024 * 1024, 1024);
    maxBodyMemory = intOption('--max-body-memory', o['max-body-memory'], 128 * 1024 * 1024, 1024);
    if (maxBodyMemory < maxBody) {
      throw new UsageError(`--max-body-memory (${maxBodyMemory}) must be at least --max-body (${maxBody})`);
    }
    timeout = intOption('--timeout', o.timeout, 600, 1);
    maxConnections = intOption('--max-connections', o['max-connections'], 512, 1);
    shutdownTimeout = intOption('--shutdown-timeout', o['shutdown-timeout'], 30, 0);
    apiKey = apiKeyOption(o['api-key'], process.env.LLAMA_API_KEY);
    defaults = {
      ...(o.temp !== undefined ? { temperature: numberOption('--temp', o.temp, 0) } : {}),
      ...(o.seed !== undefined ? { seed: seedOption(o.seed) } : {}),
      ...(o['n-predict'] !== undefined ? { n_predict: intOption('--n-predict', o['n-predict'], -1, -1) } : {}),
    };
    reasoningBudget =
      o['reasoning-budget'] === undefined ? undefined : intOption('--reasoning-budget', o['reasoning-budget'], -1, -1);
    sleepIdleSeconds =
      o['sleep-idle-seconds'] === undefined ? undefined : numberOption('--sleep-idle-seconds', o['sleep-idle-seconds']);
    // llama-server's -1: never
    if (sleepIdleSeconds === -1) sleepIdleSeconds = undefined;
    else if (sleepIdleSeconds !== undefined && !(sleepIdleSeconds > 0)) {
      throw new UsageError(`--sleep-idle-seconds must be > 0 (or -1: never), got '${o['sleep-idle-seconds']}'`);
    }
    if (o.pooling !== undefined && !(POOLING_TYPES as readonly string[]).includes(o.pooling)) {
      throw new UsageError(`--pooling must be one of ${POOLING_TYPES.join(', ')}, got '${o.pooling}'`);
    }
    if (o.cors !== undefined && o['no-cors']) throw new UsageError('--cors and --no-cors contradict each other');
    if (o['log-level'] !== undefined && !(o['log-level'] in RANK)) {
      throw new UsageError(`--log-level must be debug, info, warn or error`);
    }
  } catch (e) {
    return usageError('serve', HELP, (e as Error).message);
  }
  const min = RANK[o['log-level'] ?? (o.verbose ? 'debug' : 'info')]!;
  let last = 1;
  setLogCallback((level: LogLevel, message: string, source: string) => {
    const rank = level === 'cont' ? last : RANK[level]!;
    if (level !== 'cont') last = rank;
    if (rank < min) return;
    process.stderr.write(level === 'cont' ? message : `llama-ts ${source}: ${level}: ${message}\n`);
  });
  const routerMode =
    o.model === undefined &&
    o['hf-repo'] === undefined &&
    (o['models-dir'] !== undefined ||
      o['models-preset'] !== undefined ||
      o['models-max'] !== undefined ||
      o['models-autoload'] !== undefined ||
      o['no-models-autoload'] !== undefined);
  if (routerMode) {
    return serveRouter(o, argv, {
      port,
      apiKey,
      maxBody,
      maxBodyMemory,
      timeout,
      maxConnections,
      shutdownTimeout,
    });
  }
  let server: LlamaServer | undefined;
  try {
    const device = deviceOption(o.device);
    const nGpuLayers = gpuLayersOption(o['n-gpu-layers']);
    const flashAttn = flashAttnOption(o['flash-attn']);
    const model = await resolveModelArg({
      model: o.model,
      hfRepo: o['hf-repo'],
      cacheDir: o['cache-dir'],
      useDefault: true,
    });
    const mmproj = await projectorArg(o);
    server = await LlamaServer.listen({
      model,
      host: o.host ?? '127.0.0.1',
      port,
      parallel,
      ...(nCtx !== undefined ? { nCtx } : {}),
      nBatch,
      threads,
      ...(device ? { devices: [device] } : {}),
      ...(nGpuLayers !== undefined ? { nGpuLayers } : {}),
      ctxShift: !o['no-context-shift'],
      ...(o['swa-full'] ? { swaFull: true } : {}),
      ...(flashAttn ? { flashAttn } : {}),
      ...(apiKey !== undefined ? { apiKey } : {}),
      // llama-server's policy unless told otherwise: any origin
      ...(o['no-cors'] ? {} : { cors: o.cors ?? '*' }),
      maxQueue,
      maxBodyBytes: maxBody,
      maxPendingBodyBytes: maxBodyMemory,
      timeout,
      maxConnections,
      ...(o.alias !== undefined ? { alias: o.alias } : {}),
      ...(o.tags !== undefined ? { tags: o.tags } : {}),
      ...(Object.keys(defaults).length > 0 ? { defaults } : {}),
      ...(reasoningBudget !== undefined ? { reasoningBudget } : {}),
      ...(o['no-slots'] ? { slots: false } : {}),
      ...(o['no-webui'] ? { webui: false } : {}),
      ...(o.verbose ? { verbose: true } : {}),
      ...(o['kv-unified'] ? { kvUnified: true } : {}),
      ...(o.pooling !== undefined ? { pooling: o.pooling as NonNullable<ServerOptions['pooling']> } : {}),
      ...(sleepIdleSeconds !== undefined ? { sleepIdleSeconds } : {}),
      ...(o.embeddings ? { embeddings: true } : {}),
      ...(o['chat-template'] !== undefined ? { chatTemplate: o['chat-template'] } : {}),
      shutdownTimeout,
      ...(o['slot-save-path'] !== undefined ? { slotSavePath: o['slot-save-path'] } : {}),
      ...(extras.lora_list ? { lora: extras.lora_list as { path: string; scaled: number }[] } : {}),
      ...(extras.model_draft !== undefined ? { modelDraft: extras.model_draft as string } : {}),
      ...(extras.spec_type !== undefined ? { specType: extras.spec_type as 'draft' | 'ngram' } : {}),
      ...(extras.draft_max !== undefined ? { draftMax: extras.draft_max as number } : {}),
      ...(extras.draft_min !== undefined ? { draftMin: extras.draft_min as number } : {}),
      ...(extras.draft_p_min !== undefined ? { draftPMin: extras.draft_p_min as number } : {}),
      ...(o.reranking ? { reranking: true } : {}),
      ...(o['cache-dir'] !== undefined ? { cacheDir: o['cache-dir'] } : {}),
      ...(mmproj !== undefined ? { mmproj, mmprojOffload: mmprojOnGpu(o) } : {}),
      ...(o['allow-remote-media'] ? { allowRemoteMedia: true } : {}),
    });
    process.stderr.write(`llama-ts serve: listening on ${server.url} (loading the model)\n`);
    const s = server;
    const router = routerChannel();
    router?.({ type: 'listening', url: s.url });
    // the first SIGTERM / SIGINT drains (graceful shutdown); a second one exits at once
    let signals = 0;
    const stopped = new Promise<void>((resolve) => {
      const onSignal = (sig: NodeJS.Signals) => {
        signals++;
        if (signals > 1) {
          process.stderr.write(`llama-ts serve: ${sig} again: exiting now\n`);
          process.exit(128 + (sig === 'SIGINT' ? 2 : 15));
        }
        process.stderr.write(
          `llama-ts serve: ${sig}: shutting down (requests in flight have ${shutdownTimeout} s; a second signal exits now)\n`,
        );
        s.shutdown().then(resolve, resolve);
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
      // a model's process in router mode: the router's `shutdown` drains as SIGTERM does
      if (router) process.on('message', (m: { type?: string }) => m?.type === 'shutdown' && onSignal('SIGTERM'));
    });
    try {
      await s.load();
      process.stderr.write(`llama-ts serve: ready on ${s.url}\n`);
      router?.({ type: 'ready', url: s.url });
    } catch (e) {
      // a signal while loading: not a failure
      if (s.state === 'failed') throw e;
    }
    await stopped;
    process.stderr.write('llama-ts serve: stopped\n');
    return 0;
  } catch (e) {
    if (e instanceof UsageError) return usageError('serve', HELP, e.message);
    await server?.close();
    if (e instanceof DownloadError) {
      process.stderr.write(`llama-ts serve: ${e.message}\n`);
      return 1;
    }
    return reportError('serve', e);
  }
}

/**
 * In a model's process of router mode (forked with an IPC channel and
 * LLAMA_TS_ROUTER_CHILD=1): a function that reports to the router; the process exits when
 * the channel closes (the router is gone), as llama-server's children do on EOF.
 */
function routerChannel(): ((m: ChildMessage) => void) | undefined {
  if (process.env.LLAMA_TS_ROUTER_CHILD !== '1' || !process.send) return undefined;
  process.on('disconnect', () => process.exit(1));
  return (m) => process.send?.(m);
}

/** Router-level options' values (parsed by serveCommand). */
interface RouterLimits {
  port: number;
  apiKey: string | undefined;
  maxBody: number;
  maxBodyMemory: number;
  timeout: number;
  maxConnections: number;
  shutdownTimeout: number;
}

/** The router's own options (with a value, then without): not passed to the models' processes. */
const ROUTER_ONLY_VALUE = new Set([
  '--models-dir',
  '--models-preset',
  '--models-max',
  '--host',
  '--port',
  '--api-key',
  '--cors',
  '--max-connections',
  '--max-body',
  '--max-body-memory',
  '--alias',
  '-a',
  '--tags',
  // the router passes its own on (RouterOptions.shutdownTimeout)
  '--shutdown-timeout',
]);
const ROUTER_ONLY_FLAG = new Set(['--models-autoload', '--no-models-autoload', '--no-cors', '--no-webui']);

/** serve's argv less the router's own options: what every model's process gets. */
export function routerBaseArgs(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const name = a.startsWith('--') && a.includes('=') ? a.slice(0, a.indexOf('=')) : a;
    if (ROUTER_ONLY_FLAG.has(name)) continue;
    if (ROUTER_ONLY_VALUE.has(name)) {
      if (name === a) i++;
      continue;
    }
    out.push(a);
  }
  return out;
}

/** The router's models: the download cache's, the models folder's (same name: the folder's), then the preset's. */
async function routerModels(o: ReturnType<typeof parse>['values']): Promise<RouterModel[]> {
  const byName = new Map<string, RouterModel>();
  for (const m of await modelsFromCache(cacheDir(o['cache-dir']))) byName.set(m.name, m);
  if (o['models-dir'] !== undefined) for (const m of modelsFromDir(o['models-dir'])) byName.set(m.name, m);
  const models = [...byName.values()];
  return o['models-preset'] !== undefined ? applyPreset(models, o['models-preset'], process.cwd()) : models;
}

/** `serve` in router mode: listens, runs until a signal, then drains every model's process. */
async function serveRouter(o: ReturnType<typeof parse>['values'], argv: string[], l: RouterLimits): Promise<number> {
  let router: LlamaRouter;
  try {
    if (o['models-autoload'] && o['no-models-autoload']) {
      throw new UsageError('--models-autoload and --no-models-autoload contradict each other');
    }
    const modelsMax = intOption('--models-max', o['models-max'], 4, 0);
    const models = await routerModels(o);
    router = await LlamaRouter.listen({
      models,
      spawn: {
        entry: fileURLToPath(new URL('./serve-child.js', import.meta.url)),
        baseArgs: routerBaseArgs(argv),
        onLog: (line) => process.stderr.write(`${line}\n`),
      },
      host: o.host ?? '127.0.0.1',
      port: l.port,
      modelsMax,
      autoload: !o['no-models-autoload'],
      ...(l.apiKey !== undefined ? { apiKey: l.apiKey } : {}),
      ...(o['no-cors'] ? {} : { cors: o.cors ?? '*' }),
      maxBodyBytes: l.maxBody,
      maxPendingBodyBytes: l.maxBodyMemory,
      timeout: l.timeout,
      maxConnections: l.maxConnections,
      shutdownTimeout: l.shutdownTimeout,
      ...(o['no-webui'] ? { webui: false } : {}),
      cacheDir: cacheDir(o['cache-dir']),
    });
  } catch (e) {
    if (e instanceof UsageError || e instanceof RouterConfigError) return usageError('serve', HELP, e.message);
    return reportError('serve', e);
  }
  const names = router.instances.map((i) => i.name);
  process.stderr.write(
    `llama-ts serve: router with ${names.length} model(s)${names.length > 0 ? `: ${names.join(', ')}` : ''}\n`,
  );
  process.stderr.write(`llama-ts serve: ready on ${router.url}\n`);
  let signals = 0;
  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals) => {
      signals++;
      if (signals > 1) {
        process.stderr.write(`llama-ts serve: ${sig} again: exiting now\n`);
        router.close().finally(() => process.exit(128 + (sig === 'SIGINT' ? 2 : 15)));
        return;
      }
      process.stderr.write(
        `llama-ts serve: ${sig}: shutting down the router and its models (requests in flight have ${l.shutdownTimeout} s)\n`,
      );
      router.shutdown().then(resolve, resolve);
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
  process.stderr.write('llama-ts serve: stopped\n');
  return 0;
}

/** llama-server's other spellings of serve's flags. */
const SERVE_SPELLINGS: Record<string, string> = {
  '--rerank': '--reranking',
  '--predict': '--n-predict',
  '-kvu': '--kv-unified',
  ...MMPROJ_SPELLINGS,
};

/** Flags whose value may be negative (-1: llama-server's "none" / "never"). */
const NEGATIVE_OK = new Set(['--seed', '-s', '--n-predict', '-n', '--reasoning-budget', '--sleep-idle-seconds']);

/** `--seed -1` → `--seed=-1`: parseArgs would take "-1" for an option. */
function joinNegativeValues(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    if (NEGATIVE_OK.has(a) && next !== undefined && /^-\d/.test(next)) {
      out.push(`${a.startsWith('--') ? a : `--${SHORT_NAMES[a]}`}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}
const SHORT_NAMES: Record<string, string> = { '-s': 'seed', '-n': 'n-predict' };

/** A number option ≥ min, or a usage error. */
function numberOption(name: string, v: string, min = -Infinity): number {
  const n = v.trim() === '' ? Number.NaN : Number(v);
  if (!Number.isFinite(n) || n < min) {
    throw new UsageError(`${name} must be a number${min > -Infinity ? ` ≥ ${min}` : ''}, got '${v}'`);
  }
  return n;
}

/** --seed: an unsigned 32-bit seed, or -1 (random). */
function seedOption(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < -1 || n > 0xffffffff) {
    throw new UsageError(`--seed must be an integer in [-1, 4294967295], got '${v}'`);
  }
  return n;
}

/**
 * The API key: --api-key, else LLAMA_API_KEY, else none. An empty or blank key is a usage
 * error wherever it comes from: it would otherwise switch authentication off (or make it
 * unsatisfiable) without a word, e.g. `--api-key "$KEY"` with KEY unset.
 */
export function apiKeyOption(flag: string | undefined, env: string | undefined): string | undefined {
  if (flag !== undefined) {
    if (flag.trim() === '') throw new UsageError('--api-key must not be empty (leave it out to serve without a key)');
    return flag;
  }
  if (env !== undefined) {
    if (env.trim() === '') throw new UsageError('LLAMA_API_KEY is set but empty (unset it to serve without a key)');
    return env;
  }
  return undefined;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: commandOptions(
      [
        'model',
        'hf-repo',
        'cache-dir',
        'ctx-size',
        'batch-size',
        'threads',
        'device',
        'n-gpu-layers',
        'flash-attn',
        'help',
      ],
      {
        host: { type: 'string' },
        port: { type: 'string' },
        parallel: { type: 'string' },
        'api-key': { type: 'string' },
        cors: { type: 'string' },
        queue: { type: 'string' },
        'max-body': { type: 'string' },
        'max-body-memory': { type: 'string' },
        timeout: { type: 'string' },
        'max-connections': { type: 'string' },
        'shutdown-timeout': { type: 'string' },
        alias: { type: 'string', short: 'a' },
        tags: { type: 'string' },
        temp: { type: 'string' },
        seed: { type: 'string', short: 's' },
        'n-predict': { type: 'string', short: 'n' },
        'reasoning-budget': { type: 'string' },
        slots: { type: 'boolean' },
        'no-slots': { type: 'boolean' },
        'no-webui': { type: 'boolean' },
        'kv-unified': { type: 'boolean' },
        pooling: { type: 'string' },
        'sleep-idle-seconds': { type: 'string' },
        verbose: { type: 'boolean', short: 'v' },
        'no-cors': { type: 'boolean' },
        embeddings: { type: 'boolean' },
        'no-context-shift': { type: 'boolean' },
        'swa-full': { type: 'boolean' },
        'chat-template': { type: 'string' },
        'slot-save-path': { type: 'string' },
        'log-level': { type: 'string' },
        reranking: { type: 'boolean' },
        'models-dir': { type: 'string' },
        'models-preset': { type: 'string' },
        'models-max': { type: 'string' },
        'models-autoload': { type: 'boolean' },
        'no-models-autoload': { type: 'boolean' },
        ...MMPROJ_OPTIONS,
        'mmproj-auto': { type: 'boolean' },
        'allow-remote-media': { type: 'boolean' },
        ...SPECULATIVE_OPTIONS,
      } as const,
    ),
  });
}
