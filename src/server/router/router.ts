// llama-server's router mode: one HTTP front for many models, each served by a child
// process of its own (instance.ts) that the router starts on demand and forwards to.
// A request's `model` (the JSON body's; `?model=` on GETs) picks the model; /models and
// /v1/models list every model with its status; POST /models/load and /models/unload
// drive them by hand. At most `modelsMax` run at once: loading another first unloads
// the least recently used one with no request in flight (waiting for one to free up
// when all are busy). A child that dies fails its own requests (502, or an error event
// ending a stream) and is started again by the next request for it.
//
// Answers are the children's, passed through byte for byte (streams included); /metrics
// without `?model=` is every loaded model's, each sample labelled model="NAME".
import { randomBytes } from 'node:crypto';
import { promises as fsp } from 'node:fs';
import { type IncomingMessage, request, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { loadModel } from '../../api/index.js';
import { logger } from '../../log.js';
import { projectorModalities } from '../../multimodal/mmproj.js';
import { VERSION } from '../build.js';
import { ApiError, createHttpServer, type RequestContext, type Route, sendJson } from '../http.js';
import * as ollama from '../ollama.js';
import { modelFacts } from '../server.js';
import { serveWebui, WEBUI_PATHS } from '../webui.js';
import { ModelInstance, type SpawnSpec } from './instance.js';
import { modelsFromCache, type RouterModel } from './sources.js';

const log = logger('router');

export interface RouterOptions {
  models: RouterModel[];
  /** How a model's process starts (its module and the serve options all get). */
  spawn: SpawnSpec;
  host?: string;
  port?: number;
  /** Models running at once, at most (llama-server's --models-max; 0: no limit). Default 4. */
  modelsMax?: number;
  /** Load a model a request names when it is not loaded (--models-autoload; `?autoload=` per request). Default true. */
  autoload?: boolean;
  apiKey?: string;
  cors?: string;
  maxBodyBytes?: number;
  maxPendingBodyBytes?: number;
  timeout?: number;
  maxConnections?: number;
  /** Seconds shutdown() gives requests in flight (the children drain with the same). Default 30. */
  shutdownTimeout?: number;
  webui?: boolean;
  /** The download cache: its models are listed as they come (Ollama's /api/pull puts them there, /api/delete removes them). */
  cacheDir?: string;
  /** Ollama's keep_alive when a request gives none (ms; Infinity: until --models-max needs the room). Default 5 min, as Ollama's. */
  ollamaKeepAlive?: number;
}

export type RouterState = 'ready' | 'draining' | 'closed';

/** POST endpoints forwarded by the body's `model`, GET ones by `?model=` (llama-server's router table). */
const POST_PATHS = [
  '/v1/chat/completions',
  '/chat/completions',
  '/v1/completions',
  '/completion',
  '/completions',
  '/v1/responses',
  '/responses',
  '/v1/messages',
  '/v1/messages/count_tokens',
  '/infill',
  '/v1/embeddings',
  '/embedding',
  '/embeddings',
  '/v1/rerank',
  '/rerank',
  '/v1/reranking',
  '/reranking',
  '/tokenize',
  '/detokenize',
  '/apply-template',
  '/lora-adapters',
  '/slots/:id',
  '/props',
];
const GET_PATHS = ['/slots', '/lora-adapters'];
/** Ollama's endpoints that name a model in their body. */
const OLLAMA_POST_PATHS = ['/api/show', '/api/chat', '/api/generate', '/api/embed', '/api/embeddings'];

/** Response headers not passed on: hop-by-hop ones, and CORS (the router's HTTP layer sets its own). */
const DROP_RESPONSE = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'server']);
/** Request headers not passed on (the children have no key; the body is sent anew). */
const DROP_REQUEST = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'authorization',
  'x-api-key',
  'accept-encoding',
  'origin',
  ollama.LOAD_DURATION_HEADER,
]);

/** setTimeout's longest delay: a longer keep_alive waits in steps. */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** A model's Ollama keep_alive: how long it stays loaded once idle, and when that ends. */
interface KeepAlive {
  ms: number;
  /** Epoch ms at which it is unloaded (set when it goes idle). */
  deadline?: number;
  timer?: NodeJS.Timeout;
}

export class LlamaRouter {
  private http!: Server;
  readonly instances: ModelInstance[];
  private readonly byName = new Map<string, ModelInstance>();
  private readonly modelsMax: number;
  private readonly autoload: boolean;
  private stateValue: RouterState = 'ready';
  private waiters: (() => void)[] = [];
  /** Settles when the load whose turn it is ends (loadTurn). */
  private turn: Promise<void> = Promise.resolve();
  private shuttingDown: Promise<void> | undefined;
  readonly created = Math.floor(Date.now() / 1000);
  /** The key the models' processes require (SpawnSpec.childKey). */
  private readonly childKey: string;
  /** How each model's process starts (the key and shutdown timeout added): models added later start so too. */
  private readonly spawn: SpawnSpec;
  /** Capabilities by file (read from the header once). */
  private readonly facts = new Map<string, string[]>();
  /** Ollama's keep_alive by model; a model without one stays until --models-max needs its room (llama-server's way). */
  private readonly keepAlives = new Map<ModelInstance, KeepAlive>();

  private constructor(readonly opts: RouterOptions) {
    this.modelsMax = opts.modelsMax ?? 4;
    this.autoload = opts.autoload ?? true;
    // the models drain as the router does, and answer the router only
    this.childKey = opts.spawn.childKey ?? randomBytes(24).toString('hex');
    this.spawn = {
      ...opts.spawn,
      childKey: this.childKey,
      baseArgs:
        opts.shutdownTimeout === undefined
          ? opts.spawn.baseArgs
          : [...opts.spawn.baseArgs, '--shutdown-timeout', String(opts.shutdownTimeout)],
    };
    this.instances = opts.models.map((m) => new ModelInstance(m, this.spawn, () => this.changed()));
    for (const i of this.instances) {
      if (this.byName.has(i.name)) throw new Error(`two models are named '${i.name}'`);
      this.byName.set(i.name, i);
    }
  }

  /** Opens the port (the router is ready at once: models load on demand) and loads the `load-on-startup` ones. */
  static async listen(opts: RouterOptions): Promise<LlamaRouter> {
    const r = new LlamaRouter(opts);
    const startup = r.instances.filter((i) => i.model.loadOnStartup);
    if (r.modelsMax > 0 && startup.length > r.modelsMax) {
      throw new Error(`${startup.length} models load on startup, more than --models-max ${r.modelsMax}`);
    }
    r.http = createHttpServer(r.routes(), {
      apiKey: opts.apiKey,
      cors: opts.cors,
      maxBodyBytes: opts.maxBodyBytes ?? 10 * 1024 * 1024,
      maxPendingBodyBytes: opts.maxPendingBodyBytes,
      timeout: opts.timeout,
      maxConnections: opts.maxConnections,
      exposeHeaders: ['X-Prefix-Key'],
    });
    await new Promise<void>((resolve, reject) => {
      r.http.once('error', reject);
      r.http.listen(opts.port ?? 8080, opts.host ?? '127.0.0.1', () => {
        r.http.off('error', reject);
        resolve();
      });
    });
    log.info(
      `router listening on ${r.url} with ${r.instances.length} model(s), at most ${r.modelsMax || 'any'} loaded`,
    );
    for (const i of startup) r.ensureLoaded(i).catch(() => {});
    return r;
  }

  get state(): RouterState {
    return this.stateValue;
  }

  get url(): string {
    const a = this.http.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    return `http://${host}:${a.port}`;
  }

  get port(): number {
    return (this.http.address() as AddressInfo).port;
  }

  // ---- models ----

  /**
   * The model a request names: its id or an alias, with `.gguf`, Ollama's `:latest` or
   * `hf.co/` or not; exact first, then case aside.
   */
  find(name: string): ModelInstance | undefined {
    const forms = [name];
    if (name.toLowerCase().endsWith('.gguf')) forms.push(name.slice(0, -5));
    if (name.endsWith(':latest')) forms.push(name.slice(0, -7));
    const hf = /^(?:https?:\/\/)?(?:hf\.co|huggingface\.co)\/(.+)$/i.exec(name);
    if (hf) forms.push(hf[1]!);
    for (const exact of [true, false]) {
      for (const f of forms) {
        const key = exact ? f : f.toLowerCase();
        for (const i of this.instances) {
          const names = [i.name, ...i.model.aliases];
          if (names.some((n) => (exact ? n : n.toLowerCase()) === key)) return i;
        }
      }
    }
    return undefined;
  }

  /** Loads `inst` unless it is (one load for concurrent callers); rejects with its error. */
  ensureLoaded(inst: ModelInstance): Promise<void> {
    if (inst.status === 'loaded' && !inst.isStopping) return Promise.resolve();
    if (this.stateValue !== 'ready') return Promise.reject(new ApiError(503, 'the server is shutting down'));
    return inst.load(() => this.loadTurn(inst));
  }

  /**
   * One load at a time: waits for the turn, makes room, and returns the turn's release.
   * Loads taking turns is what keeps two models from each waiting for the other's room.
   */
  private async loadTurn(inst: ModelInstance): Promise<() => void> {
    const previous = this.turn;
    let release!: () => void;
    this.turn = new Promise<void>((res) => {
      release = res;
    });
    await previous;
    try {
      if (this.stateValue !== 'ready') throw new ApiError(503, 'the server is shutting down');
      await this.makeRoom(inst);
    } catch (e) {
      release();
      throw e;
    }
    return release;
  }

  /** Until another model fits: unloads the least recently used idle one, or waits for one to be idle. */
  private async makeRoom(inst: ModelInstance): Promise<void> {
    if (this.modelsMax <= 0) return;
    for (;;) {
      const others = this.instances.filter((i) => i !== inst && i.running);
      if (others.length < this.modelsMax) return;
      if (this.stateValue !== 'ready') throw new ApiError(503, 'the server is shutting down');
      const idle = others
        .filter((i) => i.status === 'loaded' && i.inFlight === 0)
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (idle) {
        log.info(`--models-max ${this.modelsMax} reached: unloading ${idle.name}, the least recently used`);
        await idle.stop();
      } else {
        log.info(`--models-max ${this.modelsMax} reached and every loaded model is busy: ${inst.name} waits`);
        await new Promise<void>((res) => this.waiters.push(res));
      }
    }
  }

  /** A model stopped or a request ended: room may be free. */
  private changed(): void {
    const w = this.waiters;
    this.waiters = [];
    for (const f of w) f();
  }

  /**
   * A model's capabilities, from its header ([] when unreadable); with a projector its
   * process runs (--mmproj), 'multimodal' as the process's own /v1/models says, and
   * 'vision' / 'audio' from the projector's header (the page offers attachments by them
   * before the model is loaded).
   */
  private capabilities(m: RouterModel): string[] {
    const key = `${m.path}\0${m.mmproj ?? ''}`;
    let caps = this.facts.get(key);
    if (!caps) {
      try {
        const f = modelFacts(m.path);
        caps = f.generative ? ['completion'] : f.ranks ? ['rerank'] : ['embedding'];
      } catch {
        caps = [];
      }
      if (m.mmproj && caps.includes('completion')) {
        try {
          const p = projectorModalities(m.mmproj);
          if (p.vision || p.audio) caps.push('multimodal');
          if (p.vision) caps.push('vision');
          if (p.audio) caps.push('audio');
        } catch {}
      }
      this.facts.set(key, caps);
    }
    return caps;
  }

  /** /models and /v1/models: llama-server's router list, with capabilities. */
  private listModels(c: RequestContext): void {
    const t = Math.floor(Date.now() / 1000);
    sendJson(c.res, 200, {
      object: 'list',
      data: this.instances.map((i) => ({
        id: i.name,
        aliases: i.model.aliases,
        tags: i.model.tags,
        object: 'model',
        owned_by: 'llama-ts',
        created: t,
        in_cache: i.model.source === 'cache',
        path: i.model.path,
        ...(i.model.mmproj ? { mmproj: i.model.mmproj } : {}),
        capabilities: this.capabilities(i.model),
        status: {
          value: i.status,
          ...(i.active || i.failed ? { args: ['llama-ts', 'serve', ...i.args] } : {}),
          ...(i.model.preset ? { preset: i.model.preset } : {}),
          ...(i.failed ? { failed: true, exit_code: i.exitCode, error: i.error } : {}),
        },
      })),
    });
  }

  /** The model a request is for: found, and (autoload) loaded. */
  private async target(c: RequestContext, name: unknown, notFound = 400): Promise<ModelInstance> {
    if (typeof name !== 'string' || name.trim() === '') {
      throw new ApiError(400, 'model name is missing from the request', undefined, 'model');
    }
    const inst = this.find(name.trim());
    if (!inst) throw new ApiError(notFound, `model '${name}' not found`, undefined, 'model');
    const q = c.url.searchParams.get('autoload');
    const autoload = q === null || q === '' ? this.autoload : q === 'true' || q === '1';
    if (!autoload && (inst.status !== 'loaded' || inst.isStopping)) {
      throw new ApiError(
        400,
        `model '${inst.name}' is not loaded (load it with POST /models/load)`,
        undefined,
        'model',
      );
    }
    return inst;
  }

  /**
   * Forwards the request to its model's process, loading it first when needed; the model
   * counts as in use until the answer ends. `update` marks it used (POSTs, as llama-server).
   */
  private async forward(c: RequestContext, inst: ModelInstance, body: unknown, update: boolean): Promise<void> {
    inst.inFlight++;
    this.pauseExpiry(inst);
    try {
      if (update) inst.lastUsed = Date.now();
      const loaded = inst.status === 'loaded' && !inst.isStopping;
      const t0 = process.hrtime.bigint();
      try {
        await this.ensureLoaded(inst);
      } catch (e) {
        if (e instanceof ApiError) throw e;
        throw new ApiError(500, (e as Error).message);
      }
      // Ollama's load_duration: what this request waited for its model
      const load = loaded ? undefined : String(process.hrtime.bigint() - t0);
      await this.proxy(c, inst, body, load);
    } finally {
      inst.inFlight--;
      if (update) inst.lastUsed = Date.now();
      this.changed();
      this.scheduleExpiry(inst);
    }
  }

  /** Sets how long `inst` stays once idle (undefined: until its room is needed); the clock starts when it is idle. */
  private setKeepAlive(inst: ModelInstance, ms: number | undefined): void {
    this.pauseExpiry(inst);
    if (ms === undefined) this.keepAlives.delete(inst);
    else this.keepAlives.set(inst, { ms });
  }

  /** A request began: the model's keep_alive counts from when it is idle again. */
  private pauseExpiry(inst: ModelInstance): void {
    const k = this.keepAlives.get(inst);
    if (k?.timer) clearTimeout(k.timer);
    if (k) k.timer = k.deadline = undefined;
  }

  /** The model is idle: unloads it once its keep_alive has passed (at once for 0). */
  private scheduleExpiry(inst: ModelInstance): void {
    const k = this.keepAlives.get(inst);
    if (!k || inst.inFlight > 0 || !inst.active) return;
    this.pauseExpiry(inst);
    if (k.ms === Number.POSITIVE_INFINITY) return;
    k.deadline = Date.now() + k.ms;
    const tick = () => {
      const left = (k.deadline ?? 0) - Date.now();
      if (left > 0) {
        k.timer = setTimeout(tick, Math.min(left, MAX_TIMER_MS)).unref();
        return;
      }
      k.timer = k.deadline = undefined;
      if (inst.inFlight > 0 || !inst.active || inst.isStopping) return;
      log.info(`model ${inst.name}: keep_alive of ${k.ms / 1000} s idle ended: unloading`);
      inst.stop().catch(() => {});
    };
    tick();
  }

  /** Passes the request to the child and its answer back, as it comes (streams too). */
  private proxy(c: RequestContext, inst: ModelInstance, body: unknown, loadNs?: string): Promise<void> {
    const url = inst.url;
    if (!url) throw new ApiError(503, `model '${inst.name}' is not running; retry`);
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(c.req.headers)) {
      if (typeof v === 'string' && !DROP_REQUEST.has(k)) headers[k] = v;
    }
    headers.authorization = `Bearer ${this.childKey}`;
    if (loadNs !== undefined) headers[ollama.LOAD_DURATION_HEADER] = loadNs;
    if (payload) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(payload.length);
    }
    return new Promise<void>((resolve, reject) => {
      const up = request(`${url}${c.url.pathname}${c.url.search}`, {
        method: c.req.method,
        headers,
        agent: inst.agent,
      });
      const res = c.res;
      let sse = false;
      // the client went away: the child sees its connection close and stops the request
      const onClose = () => {
        if (!res.writableFinished) up.destroy();
        resolve();
      };
      res.on('close', onClose);
      up.on('response', (r: IncomingMessage) => {
        const out: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(r.headers)) {
          if (v !== undefined && !DROP_RESPONSE.has(k) && !k.startsWith('access-control-')) out[k] = v;
        }
        res.writeHead(r.statusCode ?? 502, out);
        // SSE events go out as they come
        res.flushHeaders();
        r.on('data', (d: Buffer) => {
          if (!res.write(d)) {
            r.pause();
            res.once('drain', () => r.resume());
          }
        });
        r.on('end', () => res.end());
        sse = String(r.headers['content-type'] ?? '').includes('text/event-stream');
        // the child's exit may come a moment after its socket closed: its reason goes in the error
        const fail = () => inst.settled(1000).then(() => failMidway(res, inst, sse));
        r.on('error', fail);
        r.on('aborted', fail);
      });
      up.on('error', (e) => {
        res.off('close', onClose);
        if (res.headersSent) {
          inst.settled(1000).then(() => {
            failMidway(res, inst, sse);
            resolve();
          });
          return;
        }
        if (res.destroyed) {
          resolve();
          return;
        }
        // the child died (or is dying) before answering
        inst
          .settled(1000)
          .then(() =>
            reject(
              new ApiError(
                502,
                `${inst.error ?? `model '${inst.name}' did not answer (${e.message})`}; it restarts on the next request`,
              ),
            ),
          );
      });
      up.end(payload);
    });
  }

  // ---- routes ----

  private routes(): Route[] {
    const r: Route[] = [];
    const guard =
      (h: Route['handler']): Route['handler'] =>
      async (c) => {
        if (this.stateValue !== 'ready') {
          c.res.setHeader('Connection', 'close');
          throw new ApiError(503, 'the server is shutting down; retry on another');
        }
        await h(c);
      };
    const add = (method: Route['method'], paths: string[], h: Route['handler'], pub = false) => {
      for (const path of paths) r.push({ method, path, handler: guard(h), public: pub });
    };
    for (const path of ['/health', '/v1/health']) {
      r.push({ method: 'GET', path, public: true, handler: (c) => this.health(c) });
    }
    if (this.opts.webui !== false) {
      for (const path of WEBUI_PATHS) r.push({ method: 'GET', path, handler: serveWebui, public: true });
    }
    add('GET', ['/v1/models', '/models'], (c) => this.listModels(c), true);
    add('POST', ['/models/load'], (c) => this.loadRoute(c));
    add('POST', ['/models/unload'], (c) => this.unloadRoute(c));
    add('GET', ['/props'], (c) => this.props(c));
    add('GET', ['/metrics'], (c) => this.metrics(c));
    const post = async (c: RequestContext) => {
      const b = asBody(c.body);
      const inst = await this.target(c, b.model);
      // the last request sets how long a model stays: here llama-server's, until its room is needed
      this.setKeepAlive(inst, undefined);
      await this.forward(c, inst, { ...b, model: inst.name }, true);
    };
    add('POST', POST_PATHS, post);
    const get = async (c: RequestContext) => {
      const inst = await this.target(c, c.url.searchParams.get('model'));
      await this.forward(c, inst, undefined, false);
    };
    add('GET', GET_PATHS, get);
    // Ollama's endpoints: the model in `model` (or `name`), errors in Ollama's shape
    const ollamaRoute = (method: Route['method'], path: string, h: Route['handler']) =>
      r.push({ method, path, handler: guard(h), errorBody: ollama.errorBody });
    for (const path of OLLAMA_POST_PATHS) ollamaRoute('POST', path, (c) => this.ollamaPost(c, path));
    ollamaRoute('GET', '/api/tags', (c) => this.ollamaTags(c));
    ollamaRoute('GET', '/api/ps', (c) => this.ollamaPs(c));
    ollamaRoute('POST', '/api/pull', (c) => ollama.pullModel(this.cacheDir(), c, () => this.refreshCache()));
    ollamaRoute('DELETE', '/api/delete', (c) => this.ollamaDelete(c));
    ollamaRoute('GET', '/api/version', (c) => sendJson(c.res, 200, { version: VERSION }));
    return r;
  }

  private async loadRoute(c: RequestContext): Promise<void> {
    const b = asBody(c.body);
    const inst = typeof b.model === 'string' ? this.find(b.model) : undefined;
    if (!inst) throw new ApiError(404, `model ${JSON.stringify(b.model ?? null)} is not found`, undefined, 'model');
    if (inst.status === 'loaded' && !inst.isStopping) throw new ApiError(400, `model '${inst.name}' is already loaded`);
    // as llama-server: the answer comes at once, the status says when it is loaded
    this.ensureLoaded(inst).catch(() => {});
    sendJson(c.res, 200, { success: true });
  }

  private async unloadRoute(c: RequestContext): Promise<void> {
    const b = asBody(c.body);
    const inst = typeof b.model === 'string' ? this.find(b.model) : undefined;
    if (!inst) throw new ApiError(400, `model ${JSON.stringify(b.model ?? null)} is not found`, undefined, 'model');
    if (!inst.active) throw new ApiError(400, `model '${inst.name}' is not loaded`);
    inst.stop().catch(() => {});
    sendJson(c.res, 200, { success: true });
  }

  /** llama-server's router /health: up while the router runs (models load on demand). */
  private health(c: RequestContext): void {
    if (this.stateValue !== 'ready') {
      sendJson(c.res, 503, { status: 'shutting down' }, { 'Cache-Control': 'no-store', Connection: 'close' });
      return;
    }
    sendJson(c.res, 200, { status: 'ok' }, { 'Cache-Control': 'no-store' });
  }

  /** /props: the router's own (role "router"), or with ?model= the model's. */
  private async props(c: RequestContext): Promise<void> {
    if (c.url.searchParams.get('model') !== null) {
      const inst = await this.target(c, c.url.searchParams.get('model'));
      await this.forward(c, inst, undefined, false);
      return;
    }
    sendJson(c.res, 200, {
      role: 'router',
      max_instances: this.modelsMax,
      model_alias: 'llama-ts',
      model_path: 'none',
      default_generation_settings: { params: {}, n_ctx: 0 },
      build_info: VERSION,
    });
  }

  /** /metrics?model=NAME: that model's; else every loaded model's, labelled model="NAME". */
  private async metrics(c: RequestContext): Promise<void> {
    if (c.url.searchParams.get('model') !== null) {
      const inst = await this.target(c, c.url.searchParams.get('model'));
      await this.forward(c, inst, undefined, false);
      return;
    }
    const loaded = this.instances.filter((i) => i.status === 'loaded' && !i.isStopping);
    const texts = await Promise.all(
      loaded.map(async (i) => ({
        name: i.name,
        text: await fetchText(`${i.url}/metrics`, this.childKey).catch(() => ''),
      })),
    );
    const active = this.instances.filter((i) => i.active).length;
    const own =
      '# HELP llamats:router_models_loaded Models whose process runs (loading or loaded).\n' +
      `# TYPE llamats:router_models_loaded gauge\nllamats:router_models_loaded ${active}\n` +
      '# HELP llamats:router_models_max Models that may run at once (0: no limit).\n' +
      `# TYPE llamats:router_models_max gauge\nllamats:router_models_max ${this.modelsMax}\n`;
    c.res.writeHead(200, { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8' });
    c.res.end(own + labelMetrics(texts));
  }

  // ---- Ollama's API ----

  /** A model's name in Ollama's lists: a download as hf.co/OWNER/REPO:QUANT, a file as NAME:latest. */
  private ollamaName(i: ModelInstance): string {
    return i.model.source === 'cache' ? `hf.co/${i.name}` : ollama.withTag(i.name);
  }

  /** The model an Ollama name is: as find(), and hf.co/OWNER/REPO as its default quantization (Q4_K_M, as Ollama's and the downloader's). */
  private ollamaFind(name: string): ModelInstance | undefined {
    const found = this.find(name);
    if (found || !/^(?:https?:\/\/)?(?:hf\.co|huggingface\.co)\//i.test(name)) return found;
    const spec = ollama.hfSpec(name);
    return this.find(spec) ?? (spec.includes(':') ? undefined : this.find(`${spec}:Q4_K_M`));
  }

  private cacheDir(): string {
    if (this.opts.cacheDir === undefined) throw new ApiError(501, 'this router has no download cache');
    return this.opts.cacheDir;
  }

  /** Adds the cache's models the router does not have yet (pulled, or downloaded by another process). */
  private async refreshCache(): Promise<void> {
    if (this.opts.cacheDir === undefined) return;
    for (const m of await modelsFromCache(this.opts.cacheDir)) {
      if (this.byName.has(m.name) || this.instances.some((i) => i.model.path === m.path)) continue;
      const inst = new ModelInstance(m, this.spawn, () => this.changed());
      this.instances.push(inst);
      this.byName.set(m.name, inst);
      log.info(`model ${m.name} added from the download cache`);
    }
  }

  /**
   * Ollama's model endpoints: `model` picks the model; keep_alive sets how long it stays
   * loaded once idle (5 min by default, as Ollama's); a chat or generate with nothing to
   * generate loads it, or with keep_alive 0 unloads it.
   */
  private async ollamaPost(c: RequestContext, path: string): Promise<void> {
    const b = asBody(c.body);
    const name = b.model ?? b.name;
    if (typeof name !== 'string' || name.trim() === '') throw new ApiError(400, 'model is required');
    const ms = path === '/api/show' ? undefined : ollama.keepAlive(b);
    if (ms === 0 && ollama.nothingToGenerate(path, b)) {
      const inst = this.ollamaFind(name.trim());
      if (!inst) throw new ApiError(404, `model '${name}' not found`);
      // requests in flight finish first: the last one's end unloads it
      this.setKeepAlive(inst, 0);
      if (inst.inFlight === 0) await inst.stop();
      sendJson(c.res, 200, ollama.nothingAnswer(path, b, name));
      return;
    }
    if (path === '/api/show') {
      const found = this.ollamaFind(name.trim());
      if (!found) throw new ApiError(404, `model '${name}' not found`);
      // as Ollama's, show loads nothing: a model not loaded is described from its file
      if (found.status !== 'loaded' || found.isStopping) {
        await this.showFromFile(c, found);
        return;
      }
    }
    const inst = await this.target(c, this.ollamaFind(name.trim())?.name ?? name, 404);
    if (path !== '/api/show') this.setKeepAlive(inst, ms ?? this.opts.ollamaKeepAlive ?? ollama.DEFAULT_KEEP_ALIVE_MS);
    // the name as the client gave it: Ollama's answers echo it
    await this.forward(c, inst, b, true);
  }

  /**
   * /api/show of a model not loaded: its file's header through a vocabulary-only context
   * (metadata, chat template; no weights), with the template its serve options give.
   */
  private async showFromFile(c: RequestContext, inst: ModelInstance): Promise<void> {
    const args = inst.args;
    const at = args.lastIndexOf('--chat-template');
    const chatTemplate = at >= 0 ? args[at + 1] : undefined;
    let ctx: Awaited<ReturnType<typeof loadModel>>;
    try {
      ctx = await loadModel({
        model: inst.model.path,
        vocab_only: true,
        ...(chatTemplate !== undefined ? { chat_template: chatTemplate } : {}),
      });
    } catch (e) {
      throw new ApiError(500, `model '${inst.name}': ${(e as Error).message}`);
    }
    try {
      const body = ollama.showBody({
        modelPath: inst.model.path,
        modelInfo: ctx.getModelInfo(),
        chatTemplate,
        generates: this.capabilities(inst.model).includes('completion'),
      });
      sendJson(c.res, 200, body);
    } finally {
      await ctx.release();
    }
  }

  /** Ollama's /api/tags: every model with a readable file, the download cache's as it is now. */
  private async ollamaTags(c: RequestContext): Promise<void> {
    await this.refreshCache();
    const models: unknown[] = [];
    for (const i of this.instances) {
      try {
        models.push(ollama.modelEntry(this.ollamaName(i), i.model.path));
      } catch {
        // not a readable GGUF file: not a model to list
      }
    }
    sendJson(c.res, 200, { models });
  }

  /** Ollama's /api/ps: the loaded models, with when keep_alive unloads them (the context length from each process). */
  private async ollamaPs(c: RequestContext): Promise<void> {
    const loaded = this.instances.filter((i) => i.status === 'loaded' && !i.isStopping);
    const models = await Promise.all(
      loaded.map(async (i) => {
        let ctx: unknown;
        try {
          const own = JSON.parse(await fetchText(`${i.url}/api/ps`, this.childKey)) as {
            models: { context_length?: number }[];
          };
          ctx = own.models[0]?.context_length;
        } catch {
          // gone meanwhile: listed without it
        }
        const k = this.keepAlives.get(i);
        const expires =
          !k || k.ms === Number.POSITIVE_INFINITY ? ollama.FOREVER : new Date(k.deadline ?? Date.now() + k.ms);
        return {
          ...ollama.modelEntry(this.ollamaName(i), i.model.path),
          expires_at: typeof expires === 'string' ? expires : expires.toISOString(),
          size_vram: 0,
          ...(typeof ctx === 'number' ? { context_length: ctx } : {}),
        };
      }),
    );
    sendJson(c.res, 200, { models });
  }

  /** Ollama's /api/delete: a downloaded model, unloaded first; refused while a request uses it. */
  private async ollamaDelete(c: RequestContext): Promise<void> {
    const b = asBody(c.body);
    const name = b.model ?? b.name;
    if (typeof name !== 'string' || name.trim() === '') throw new ApiError(400, 'model is required');
    const inst = this.ollamaFind(name.trim());
    if (!inst) throw new ApiError(404, `model '${name}' not found`);
    if (inst.model.source !== 'cache') {
      throw new ApiError(400, `'${name}' is ${inst.model.path}, not a download: remove it from its folder`);
    }
    if (inst.inFlight > 0) {
      throw new ApiError(409, `model '${name}' has ${inst.inFlight} request(s) in flight: delete it once they end`);
    }
    // out of the lists first, so that no new request finds it
    this.instances.splice(this.instances.indexOf(inst), 1);
    this.byName.delete(inst.name);
    this.setKeepAlive(inst, undefined);
    await inst.stop();
    await fsp.rm(inst.model.path, { force: true });
    log.info(`model ${inst.name} deleted (${inst.model.path})`);
    c.res.writeHead(200, { 'Content-Length': '0' });
    c.res.end();
  }

  // ---- life ----

  /**
   * Graceful shutdown: stops accepting, tells every model's process to drain (their
   * requests in flight finish within the shutdown timeout; streams then end with
   * finish_reason "abort"), waits for them, and closes.
   */
  shutdown(): Promise<void> {
    this.shuttingDown ??= (async () => {
      this.stateValue = 'draining';
      this.changed();
      const closed = new Promise<void>((res) => this.http.close(() => res()));
      this.http.closeIdleConnections();
      const idle = setInterval(() => this.http.closeIdleConnections(), 100);
      // each drains for the shutdown timeout; killed a little after it
      const grace = (this.opts.shutdownTimeout ?? 30) + 5;
      await Promise.all(this.instances.map((i) => i.stop(grace).catch(() => {})));
      // the children's answers have ended: what is left open is idle or dead
      await Promise.race([closed, new Promise((res) => setTimeout(res, 2000).unref())]);
      clearInterval(idle);
      this.http.closeAllConnections();
      await closed;
      this.stateValue = 'closed';
    })();
    return this.shuttingDown;
  }

  /** Closes at once: children killed, connections cut. */
  async close(): Promise<void> {
    this.stateValue = 'draining';
    this.changed();
    const closed = new Promise<void>((res) => this.http.close(() => res()));
    this.http.closeAllConnections();
    await Promise.all(this.instances.map((i) => i.kill()));
    await closed;
    this.stateValue = 'closed';
  }
}

type Body = Record<string, unknown>;

function asBody(v: unknown): Body {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new ApiError(400, 'the request body must be a JSON object');
  }
  return v as Body;
}

/** A stream that has begun and whose model died: an error event, then the end. */
function failMidway(res: ServerResponse, inst: ModelInstance, sse: boolean): void {
  if (res.writableEnded) return;
  if (sse) {
    const message = `${inst.error ?? `the process of model '${inst.name}' ended`}; it restarts on the next request`;
    res.end(`data: ${JSON.stringify({ error: { code: 502, message, type: 'server_error' } })}\n\n`);
  } else res.destroy();
}

function fetchText(url: string, key: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', timeout: 5000, headers: { authorization: `Bearer ${key}` } }, (res) => {
      let s = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        s += d;
      });
      res.on('end', () => (res.statusCode === 200 ? resolve(s) : reject(new Error(`${url}: ${res.statusCode}`))));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Prometheus texts of several models as one: each family's HELP and TYPE once, then its
 * samples from every model, a model="NAME" label added.
 */
export function labelMetrics(texts: readonly { name: string; text: string }[]): string {
  const families = new Map<string, { head: string[]; samples: string[] }>();
  const family = (n: string) => {
    let f = families.get(n);
    if (!f) {
      f = { head: [], samples: [] };
      families.set(n, f);
    }
    return f;
  };
  for (const { name, text } of texts) {
    const label = `model="${name.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    for (const line of text.split('\n')) {
      if (line.trim() === '') continue;
      const meta = /^# (HELP|TYPE) (\S+)/.exec(line);
      if (meta) {
        const f = family(meta[2]!);
        if (!f.head.some((h) => h.startsWith(`# ${meta[1]} `))) f.head.push(line);
        continue;
      }
      if (line.startsWith('#')) continue;
      const m = /^([^\s{]+)(\{([^}]*)\})?\s+(.*)$/.exec(line);
      if (!m) continue;
      const labels = m[3] ? `${label},${m[3]}` : label;
      family(m[1]!).samples.push(`${m[1]}{${labels}} ${m[4]}`);
    }
  }
  let out = '';
  for (const f of families.values()) out += [...f.head, ...f.samples].map((l) => `${l}\n`).join('');
  return out;
}
