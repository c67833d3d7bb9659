// Ollama's HTTP API beside the OpenAI one, so Ollama's clients (the `ollama` npm and
// Python packages, tools that speak to localhost:11434) can use a llama-ts server:
//
//   GET  /api/tags /api/ps /api/version        POST /api/show /api/chat /api/generate
//   POST /api/embed /api/embeddings /api/pull  DELETE /api/delete
//
// Chat and generate take the same path as /v1/chat/completions (the option table maps
// Ollama's `options`, `format`, `think` and `tools` to the library's options); answers
// are one JSON object, or NDJSON lines (`stream`, Ollama's default) with Ollama's timing
// fields in nanoseconds on the last. The server holds one model: `model` must name it
// (its alias or file name, `:latest` or not) or a 404 says it is not found. Pull and
// delete work on the download cache (src/download) with Hugging Face names,
// `hf.co/OWNER/REPO[:QUANT]`; /api/tags lists the served model and the cache's files.
// Errors take Ollama's shape: `{ "error": "..." }` with the HTTP status.
import { createHash } from 'node:crypto';
import { promises as fsp, statSync } from 'node:fs';
import type { ServerResponse } from 'node:http';
import { resolve } from 'node:path';
import type { LlamaCompletionOptions, LlamaCompletionResult, LlamaCompletionToken, ModelInfo } from '../api/index.js';
import type { ChatMessage, ChatMessagePart, Tool, ToolCall } from '../chat/index.js';
import {
  cachedModels,
  cachedQuant,
  cacheSpec,
  DownloadError,
  fileSha256,
  HubUnreachableError,
  pull,
  resolveHfRepo,
  splitHfSpec,
} from '../download/index.js';
import { openGGUF } from '../gguf/index.js';
import { fileTypeName } from '../quantize/ftypes.js';
import { Cancelled, type GenerationHost } from './host.js';
import { ApiError, type RequestContext, sendJson } from './http.js';
import * as oa from './openai.js';

type Body = oa.Body;

/** What Ollama's endpoints need of the server beyond generation (LlamaServer implements it). */
export interface OllamaHost extends GenerationHost {
  /** The download cache pull and delete work on. */
  readonly cacheDir: string;
  /** The model generates (else it only embeds). */
  readonly generates: boolean;
  /** The chat template the server was given in place of the model's (Jinja text or a built-in name), if any. */
  readonly chatTemplate: string | undefined;
  /** A 501 unless the server embeds. */
  requireEmbeddings(): void;
  /** Embeddings of the inputs (normalized by llama.cpp's embd_normalize), and their tokens; undefined when the client went away. */
  embed(
    inputs: (string | number[])[],
    normalize: number,
    res: ServerResponse,
  ): Promise<{ vectors: Float32Array[]; nTokens: number } | undefined>;
}

export interface Endpoint {
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  handler: (c: RequestContext) => Promise<void> | void;
  /** Answered while the model loads too. */
  whileLoading?: boolean;
}

/** An error in Ollama's shape. */
export function errorBody(e: ApiError): unknown {
  return { error: e.message };
}

export function endpoints(host: OllamaHost): Endpoint[] {
  return [
    {
      method: 'GET',
      path: '/api/version',
      handler: (c) => sendJson(c.res, 200, { version: host.version }),
      whileLoading: true,
    },
    { method: 'GET', path: '/api/tags', handler: (c) => tags(host, c) },
    { method: 'GET', path: '/api/ps', handler: (c) => ps(host, c) },
    { method: 'POST', path: '/api/show', handler: (c) => show(host, c) },
    { method: 'POST', path: '/api/chat', handler: (c) => chat(host, c) },
    { method: 'POST', path: '/api/generate', handler: (c) => generate(host, c) },
    { method: 'POST', path: '/api/embed', handler: (c) => embed(host, c) },
    { method: 'POST', path: '/api/embeddings', handler: (c) => embeddingsLegacy(host, c) },
    { method: 'POST', path: '/api/pull', handler: (c) => pullModel(host.cacheDir, c) },
    { method: 'DELETE', path: '/api/delete', handler: (c) => deleteModel(host, c) },
  ];
}

const now = () => new Date().toISOString();

// ---- names ----

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

function bad(message: string): ApiError {
  return new ApiError(400, message);
}

export const withTag = (name: string) => (name.includes(':') ? name : `${name}:latest`);

/** The request's model name (`model`, or the older `name`). */
function requestName(b: Body): string {
  const v = b.model ?? b.name;
  if (typeof v !== 'string' || v.trim() === '') throw bad('model is required');
  return v.trim();
}

/** Ollama's name of a cached download: hf.co/OWNER/REPO:QUANT when the quantization names it back, else :FILE. */
function cacheName(dir: string, path: string): string | undefined {
  const spec = cacheSpec(dir, path);
  return spec === undefined ? undefined : `hf.co/${spec}`;
}

/** The names the served model answers to: its id, and its cache name when it is a download. */
function servedNames(host: OllamaHost): string[] {
  const names = [withTag(host.modelId)];
  const c = cacheName(host.cacheDir, resolve(host.modelPath));
  if (c) names.push(c);
  return names;
}

/** A 404 unless `name` is the served model (`name`, `name:latest`, its cache name; case aside). */
function requireServed(host: OllamaHost, name: string): void {
  // the router picked this process by the name, and answers echo it as the client gave it
  if (routerChild()) return;
  const want = withTag(name).toLowerCase();
  if (servedNames(host).some((n) => n.toLowerCase() === want)) return;
  throw new ApiError(404, `model '${name}' not found`);
}

/** `hf.co/OWNER/REPO[:QUANT]` (or huggingface.co/…) as the downloader's `OWNER/REPO[:QUANT]`. */
export function hfSpec(name: string): string {
  const m = /^(?:https?:\/\/)?(?:hf\.co|huggingface\.co)\/([^:]+)(?::(.+))?$/i.exec(name);
  if (!m) {
    throw bad(
      `'${name}': only Hugging Face models can be pulled or deleted here, named hf.co/OWNER/REPO or hf.co/OWNER/REPO:QUANT`,
    );
  }
  const quant = m[2] && m[2].toLowerCase() !== 'latest' ? m[2] : undefined;
  return quant ? `${m[1]}:${quant}` : m[1]!;
}

// ---- model descriptions ----

interface Details {
  parent_model: string;
  format: string;
  family: string;
  families: string[];
  parameter_size: string;
  quantization_level: string;
}

function humanCount(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`;
  return String(n);
}

/** Details (and the parameter count) already read, by path, size and modification time (a header holds the whole vocabulary: parsed once). */
const detailsCache = new Map<string, { details: Details; params: number }>();

/** Ollama's `details` of a GGUF file, and its parameter count, from its header. */
function fileFacts(path: string): { details: Details; params: number } {
  const st = statSync(path);
  const key = `${path}\0${st.size}\0${st.mtimeMs}`;
  let d = detailsCache.get(key);
  if (!d) {
    d = readDetails(path);
    if (detailsCache.size >= 64) detailsCache.clear();
    detailsCache.set(key, d);
  }
  return d;
}

const details = (path: string): Details => fileFacts(path).details;

function readDetails(path: string): { details: Details; params: number } {
  const f = openGGUF(path);
  try {
    const arch = f.architecture;
    const ftype = f.getInt('general.file_type', -1);
    const params = f.tensors.reduce((n, t) => n + t.nElements, 0);
    const details = {
      parent_model: '',
      format: 'gguf',
      family: arch,
      families: [arch],
      parameter_size: humanCount(params),
      quantization_level: fileTypeName(ftype) ?? (ftype >= 0 ? `ftype ${ftype}` : 'unknown'),
    };
    return { details, params };
  } finally {
    f.close();
  }
}

/** An identifier of a file as it is on disk (path, size, modification time): Ollama's `digest` names a model, not its bytes. */
function fileDigest(path: string, size: number, mtimeMs: number): string {
  return createHash('sha256').update(`${path}\0${size}\0${mtimeMs}`).digest('hex');
}

export function modelEntry(name: string, path: string): Record<string, unknown> {
  const st = statSync(path);
  return {
    name,
    model: name,
    modified_at: st.mtime.toISOString(),
    size: st.size,
    digest: fileDigest(path, st.size, st.mtimeMs),
    details: details(path),
  };
}

async function tags(host: OllamaHost, c: RequestContext): Promise<void> {
  const served = resolve(host.modelPath);
  const models = [modelEntry(withTag(host.modelId), served)];
  for (const m of await cachedModels(host.cacheDir)) {
    if (m.path === served) continue;
    try {
      models.push(modelEntry(`hf.co/${m.spec}`, m.path));
    } catch {
      // not a readable GGUF file: not a model to list
    }
  }
  sendJson(c.res, 200, { models });
}

/** A keep-alive that never ends: the served model stays loaded for the server's life. */
export const FOREVER = '2318-01-01T00:00:00Z';

function ps(host: OllamaHost, c: RequestContext): void {
  const e = modelEntry(withTag(host.modelId), resolve(host.modelPath));
  sendJson(c.res, 200, {
    models: [{ ...e, expires_at: FOREVER, size_vram: 0, context_length: host.nCtxSlot }],
  });
}

/** A metadata value as JSON: numbers and booleans as such, the rest as text. */
function metaValue(v: string): unknown {
  if (v === 'true' || v === 'false') return v === 'true';
  if (v.trim() !== '' && Number.isFinite(Number(v))) return Number(v);
  return v;
}

function show(host: OllamaHost, c: RequestContext): void {
  const b = oa.asObject(c.body);
  requireServed(host, requestName(b));
  sendJson(c.res, 200, showBody(host));
}

/** What /api/show reads of a model: a loaded one's, or (router mode) its file's vocabulary-only context's. */
export interface ShowSource {
  readonly modelPath: string;
  readonly modelInfo: Pick<ModelInfo, 'metadata' | 'nParams' | 'chatTemplates'>;
  /** A template given in place of the model's (Jinja text or a built-in name). */
  readonly chatTemplate: string | undefined;
  readonly generates: boolean;
}

/** /api/show's answer. */
export function showBody(s: ShowSource): Body {
  const info = s.modelInfo;
  const path = resolve(s.modelPath);
  const template = s.chatTemplate ?? info.metadata['tokenizer.chat_template'] ?? '';
  const modelInfo: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(info.metadata)) if (k !== 'tokenizer.chat_template') modelInfo[k] = metaValue(v);
  // a vocabulary-only context counts none: the header's tensors do
  modelInfo['general.parameter_count'] = info.nParams || fileFacts(path).params;
  const capabilities = s.generates ? ['completion'] : ['embedding'];
  if (s.generates && (info.chatTemplates.minja.toolUse || /\btools\b/.test(template))) capabilities.push('tools');
  if (s.generates && /enable_thinking|<think>|reasoning_content/.test(template)) capabilities.push('thinking');
  return {
    license: info.metadata['general.license'] ?? '',
    modelfile: `# Modelfile of the model llama-ts serves\nFROM ${path}\n`,
    parameters: '',
    template,
    system: '',
    details: details(path),
    model_info: modelInfo,
    capabilities,
    modified_at: statSync(path).mtime.toISOString(),
  };
}

// ---- generation ----

/** Ollama's `options` by the option table's (llama-server's) names; the rest (num_ctx, num_gpu, num_thread, …) have no meaning for a loaded server and are ignored. */
const OPTION_NAMES: Record<string, string> = {
  num_predict: 'n_predict',
  temperature: 'temperature',
  top_k: 'top_k',
  top_p: 'top_p',
  min_p: 'min_p',
  typical_p: 'typical_p',
  repeat_penalty: 'repeat_penalty',
  repeat_last_n: 'repeat_last_n',
  presence_penalty: 'presence_penalty',
  frequency_penalty: 'frequency_penalty',
  seed: 'seed',
  mirostat: 'mirostat',
  mirostat_tau: 'mirostat_tau',
  mirostat_eta: 'mirostat_eta',
  num_keep: 'n_keep',
};

/** The request's sampling and output options (`options`, `format`, `think`, `logprobs`) as option-table fields. */
function samplingFields(b: Body): Body {
  const out: Body = {};
  keepAlive(b); // checked here; the router acts on it
  const o = b.options;
  if (o !== undefined && o !== null) {
    if (!isObject(o)) throw bad('options must be an object');
    for (const [k, v] of Object.entries(o)) {
      if (v === null || v === undefined) continue;
      if (k === 'stop') {
        if (!Array.isArray(v) || !v.every((s) => typeof s === 'string')) {
          throw bad(`options.stop must be an array of strings, got ${JSON.stringify(v)}`);
        }
        out.stop = v;
        continue;
      }
      const name = OPTION_NAMES[k];
      if (!name) continue;
      if (typeof v !== 'number' || !Number.isFinite(v))
        throw bad(`options.${k} must be a number, got ${JSON.stringify(v)}`);
      // Ollama's -2: fill the context; the option table's -1 stops at the context's end too
      out[name] = k === 'num_predict' && v < -1 ? -1 : v;
    }
  }
  const f = b.format;
  if (f === 'json') out.response_format = { type: 'json_object' };
  else if (isObject(f)) out.response_format = { type: 'json_schema', json_schema: { schema: f } };
  else if (f !== undefined && f !== null && f !== '')
    throw bad(`invalid format: expected "json" or a JSON schema, got ${JSON.stringify(f)}`);
  const think = b.think;
  if (think === true || think === false) out.enable_thinking = think;
  else if (think === 'high' || think === 'medium' || think === 'low') {
    out.enable_thinking = true;
    out.reasoning_effort = think;
  } else if (think !== undefined && think !== null) throw bad(`think must be a boolean or "high", "medium", "low"`);
  return out;
}

/** Top log-probabilities per token asked (`logprobs`, `top_logprobs`), or -1 for none. */
function logprobCount(b: Body): number {
  if (b.logprobs !== true) return -1;
  const n = b.top_logprobs ?? 0;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > 20)
    throw bad('top_logprobs must be an integer in [0, 20]');
  return n;
}

function logprobsOf(entries: readonly NonNullable<LlamaCompletionResult['logprobs']>[number][]): unknown[] {
  return entries.map((e) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes,
    top_logprobs: (e.top_logprobs ?? []).map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
}

/**
 * A message's `images` (base64, as Ollama's): each checked, then refused for a model whose
 * projector takes no images (as Ollama refuses them for a model without vision), else
 * passed on as image_url parts.
 */
function images(host: OllamaHost, images: unknown, at: string): ChatMessagePart[] {
  if (images === undefined || images === null) return [];
  if (!Array.isArray(images)) throw bad(`${at} must be an array of base64 strings`);
  images.forEach((img, i) => {
    if (typeof img !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(img.replace(/\s/g, '')) || img.length % 4 === 1) {
      throw bad(`${at}[${i}]: illegal base64 data`);
    }
  });
  if (images.length === 0) return [];
  if (!host.modalities.vision) {
    throw bad(
      `${at}: ${host.modelId} is a text-only model: it does not take images (no multimodal projector is loaded)`,
    );
  }
  return (images as string[]).map((data) => ({ type: 'image_url', image_url: { url: `data:image/*;base64,${data}` } }));
}

function parseArgs(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
}

/** Ollama's tool calls: arguments as an object, not JSON text. */
function toolCalls(calls: readonly ToolCall[]): unknown[] {
  return calls.map((t, index) => ({
    ...(t.id ? { id: t.id } : {}),
    function: { index, name: t.function.name, arguments: parseArgs(t.function.arguments) },
  }));
}

/** Ollama's messages as chat messages (thinking → reasoning_content, tool_calls' object arguments as JSON text, tool_name). */
function chatMessages(host: OllamaHost, raw: unknown): ChatMessage[] {
  if (!Array.isArray(raw)) throw bad('messages must be an array');
  return raw.map((m, i) => {
    const at = `messages[${i}]`;
    if (!isObject(m) || typeof m.role !== 'string') throw bad(`${at}: a message needs a role`);
    if (m.content !== undefined && m.content !== null && typeof m.content !== 'string') {
      throw bad(`${at}.content must be a string`);
    }
    const pics = images(host, m.images, `${at}.images`);
    const text = (m.content as string | undefined) ?? '';
    // the images first, then the text (Ollama's order in a message)
    const out: ChatMessage = { role: m.role, content: pics.length > 0 ? [...pics, { type: 'text', text }] : text };
    if (typeof m.thinking === 'string' && m.thinking !== '') out.reasoning_content = m.thinking;
    if (typeof m.tool_name === 'string') out.name = m.tool_name;
    if (typeof m.tool_call_id === 'string') out.tool_call_id = m.tool_call_id;
    if (m.tool_calls !== undefined && m.tool_calls !== null) {
      if (!Array.isArray(m.tool_calls)) throw bad(`${at}.tool_calls must be an array`);
      out.tool_calls = m.tool_calls.map((t, j) => {
        const fn = isObject(t) && isObject(t.function) ? t.function : undefined;
        if (!fn || typeof fn.name !== 'string') throw bad(`${at}.tool_calls[${j}] needs function.name`);
        const args = fn.arguments;
        return {
          ...(isObject(t) && typeof t.id === 'string' ? { id: t.id } : {}),
          type: 'function' as const,
          function: { name: fn.name, arguments: typeof args === 'string' ? args : JSON.stringify(args ?? {}) },
        };
      });
    }
    return out;
  });
}

function chatTools(raw: unknown): Tool[] | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (!Array.isArray(raw)) throw bad('tools must be an array');
  return raw.map((t, i) => {
    const fn = isObject(t) && isObject(t.function) ? t.function : undefined;
    if (!fn || typeof fn.name !== 'string') throw bad(`tools[${i}] needs function.name`);
    return { type: 'function', function: fn as Tool['function'] };
  });
}

/** This process serves one model of router mode (serve.ts's routerChild). */
const routerChild = () => process.env.LLAMA_TS_ROUTER_CHILD === '1';

/** The header in which the router tells a model's process how long loading it for this request took (ns). */
export const LOAD_DURATION_HEADER = 'x-llama-ts-load-duration';

/**
 * Nanoseconds this request waited for its model to load: the router's figure in a model's
 * process of router mode; 0 on a server that holds one model (loaded before it listens).
 */
function loadDuration(c: RequestContext): number {
  if (!routerChild()) return 0;
  const n = Number(c.req.headers[LOAD_DURATION_HEADER]);
  return Number.isSafeInteger(n) && n > 0 ? n : 0;
}

/** Ollama's timing and count fields, in nanoseconds (the load, waited for before t0, counts in the total). */
function timingFields(r: LlamaCompletionResult, t0: bigint, load: number): Record<string, number> {
  return {
    total_duration: Number(process.hrtime.bigint() - t0) + load,
    load_duration: load,
    prompt_eval_count: r.tokens_evaluated,
    prompt_eval_duration: Math.round(r.timings.prompt_ms * 1e6),
    eval_count: oa.completionTokens(r),
    eval_duration: Math.round(r.timings.predicted_ms * 1e6),
  };
}

/** "stop" (end of generation, a stop string, a finished tool call), "length" (num_predict or the context). */
function doneReason(r: LlamaCompletionResult): string {
  return oa.finishReason(r);
}

/** NDJSON lines; the headers go out with the first, so an error before it is a plain HTTP error. */
class NdjsonWriter {
  opened = false;
  constructor(private readonly res: ServerResponse) {}
  line(obj: unknown): void {
    if (!this.opened) {
      this.opened = true;
      this.res.writeHead(200, {
        'Content-Type': 'application/x-ndjson',
        'Cache-Control': 'no-cache',
        'X-Accel-Buffering': 'no',
      });
    }
    if (this.res.writable) this.res.write(`${JSON.stringify(obj)}\n`);
  }
  end(): void {
    if (this.res.writable) this.res.end();
  }
  /** An error after the stream began: Ollama's `{ error }` line, then the end. */
  fail(e: unknown): void {
    const err = e instanceof ApiError ? e : new ApiError(500, (e as Error)?.message ?? String(e));
    this.line({ error: err.message });
    this.end();
  }
}

/** Ollama's default keep_alive: a model idle this long is unloaded (router mode; one served model stays). */
export const DEFAULT_KEEP_ALIVE_MS = 5 * 60_000;

const DURATION_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, µs: 1e-3, ms: 1, s: 1e3, m: 60e3, h: 3600e3 };

/**
 * The request's `keep_alive` in milliseconds: a number is seconds, a string a Go duration
 * ("5m", "1h30m", "0") or seconds; negative is forever (Infinity); undefined when absent.
 */
export function keepAlive(b: Body): number | undefined {
  const v = b.keep_alive;
  if (v === undefined || v === null) return undefined;
  let ms: number | undefined;
  if (typeof v === 'number' && Number.isFinite(v)) ms = v * 1000;
  else if (typeof v === 'string') {
    const t = v.trim();
    if (t !== '' && Number.isFinite(Number(t))) ms = Number(t) * 1000;
    else if (/^[-+]?(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/.test(t)) {
      ms = 0;
      for (const [, n, , unit] of t.matchAll(/(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)/g))
        ms += Number(n) * DURATION_UNITS[unit!]!;
      if (t.startsWith('-')) ms = -ms;
    }
  }
  if (ms === undefined) {
    throw bad(`keep_alive: expected seconds or a duration such as "5m" or "1h30m", got ${JSON.stringify(v)}`);
  }
  return ms < 0 ? Number.POSITIVE_INFINITY : ms;
}

/** A chat or generate request with nothing to generate: Ollama's way to load (or, keep_alive 0, unload) a model. */
export function nothingToGenerate(path: string, b: Body): boolean {
  if (path === '/api/chat') return !Array.isArray(b.messages) || b.messages.length === 0;
  if (path !== '/api/generate') return false;
  const noContext = !Array.isArray(b.context) || b.context.length === 0;
  return (b.prompt === undefined || b.prompt === null || b.prompt === '') && noContext;
}

/** Ollama's answer to a request with nothing to generate: `done_reason` "load", or "unload" (keep_alive 0). */
export function nothingAnswer(path: string, b: Body, model: unknown): Body {
  const reason = keepAlive(b) === 0 ? 'unload' : 'load';
  const out = path === '/api/chat' ? { message: { role: 'assistant', content: '' } } : { response: '' };
  return { model, created_at: now(), ...out, done: true, done_reason: reason };
}

interface Shape {
  /** A streamed piece: the message or response fields it adds. */
  piece(content: string, thinking: string): Body;
  /** The final answer's own fields (message / response, context). */
  final(r: LlamaCompletionResult, streamed: boolean): Body;
}

/**
 * Runs a generation and answers in Ollama's shapes, streamed (NDJSON) or whole. Tool
 * calls go out whole (Ollama's clients read complete calls), in a line of their own before
 * the last when streamed.
 */
async function run(
  host: OllamaHost,
  c: RequestContext,
  b: Body,
  options: LlamaCompletionOptions,
  shape: Shape,
  chatDeltas: boolean,
): Promise<void> {
  const t0 = process.hrtime.bigint();
  const model = b.model ?? b.name;
  const res = c.res;
  const stream = b.stream !== false;
  const out = stream ? new NdjsonWriter(res) : undefined;
  const onToken =
    out &&
    ((ev: LlamaCompletionToken) => {
      const content = chatDeltas ? (ev.delta?.content ?? '') : ev.token;
      const thinking = chatDeltas ? (ev.delta?.reasoning_content ?? '') : '';
      const lp = ev.logprobs ? { logprobs: logprobsOf(ev.logprobs) } : {};
      if (content === '' && thinking === '' && !ev.logprobs) return;
      out.line({ model, created_at: now(), ...shape.piece(content, thinking), done: false, ...lp });
    });
  const { done } = await host.submit(options, res, onToken);
  if (out) {
    try {
      const r = await done;
      const calls = r.tool_calls ?? [];
      if (calls.length > 0) {
        out.line({ model, created_at: now(), ...shape.piece('', ''), ...toolCallPiece(shape, calls), done: false });
      }
      out.line({
        model,
        created_at: now(),
        ...shape.final(r, true),
        done: true,
        done_reason: doneReason(r),
        ...timingFields(r, t0, loadDuration(c)),
      });
      out.end();
    } catch (e) {
      if (e instanceof Cancelled) return;
      if (!out.opened) throw e;
      out.fail(host.apiError(e));
    }
    return;
  }
  const r = await host.result(done);
  if (!r) return;
  sendJson(res, 200, {
    model,
    created_at: now(),
    ...shape.final(r, false),
    done: true,
    done_reason: doneReason(r),
    ...timingFields(r, t0, loadDuration(c)),
    ...(r.logprobs ? { logprobs: logprobsOf(r.logprobs) } : {}),
  });
}

function toolCallPiece(shape: Shape, calls: readonly ToolCall[]): Body {
  const p = shape.piece('', '');
  return isObject(p.message) ? { message: { ...p.message, tool_calls: toolCalls(calls) } } : {};
}

async function chat(host: OllamaHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  requireServed(host, requestName(b));
  host.requireGenerator();
  const messages = chatMessages(host, b.messages ?? []);
  if (messages.length === 0) {
    // one served model: it stays loaded whatever keep_alive says
    sendJson(c.res, 200, nothingAnswer('/api/chat', b, b.model));
    return;
  }
  const tools = chatTools(b.tools);
  const body: Body = { messages, ...samplingFields(b) };
  if (tools && tools.length > 0) {
    body.tools = tools;
    // Ollama takes several calls in a reply; beyond its fields, OpenAI's tool_choice
    // ('required', a named function, 'none') and parallel_tool_calls (false: one call)
    body.parallel_tool_calls = b.parallel_tool_calls !== false;
    if (b.tool_choice !== undefined) body.tool_choice = b.tool_choice;
  }
  const options = oa.generationOptions(body, logprobCount(b));
  const message = (content: string, thinking: string): Body => ({
    role: 'assistant',
    content,
    ...(thinking !== '' ? { thinking } : {}),
  });
  await run(
    host,
    c,
    b,
    options,
    {
      piece: (content, thinking) => ({ message: message(content, thinking) }),
      final: (r, streamed) => {
        if (streamed) return { message: message('', '') };
        const calls = r.tool_calls ?? [];
        const m = message(r.content ?? r.text, r.reasoning_content ?? '');
        return { message: calls.length > 0 ? { ...m, tool_calls: toolCalls(calls) } : m };
      },
    },
    true,
  );
}

async function generate(host: OllamaHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  requireServed(host, requestName(b));
  host.requireGenerator();
  const pics = images(host, b.images, 'images');
  for (const k of ['prompt', 'system', 'template', 'suffix'] as const) {
    if (b[k] !== undefined && b[k] !== null && typeof b[k] !== 'string') throw bad(`${k} must be a string`);
  }
  if (b.template)
    throw bad(
      'template: Ollama (Go) templates are not supported; the model’s own chat template is used (or raw: true)',
    );
  if (b.suffix) throw bad('suffix: fill in the middle is not served on /api/generate; use /infill');
  const prompt = (b.prompt as string | undefined) ?? '';
  const context = b.context ?? [];
  if (!Array.isArray(context) || !context.every((t) => Number.isInteger(t) && t >= 0)) {
    throw bad('context must be an array of token ids');
  }
  if (pics.length > 0 && context.length > 0) {
    // the earlier turns come as token ids, which hold no media: a conversation with images is /api/chat's
    throw bad('images with context: token ids cannot carry images; send the conversation through /api/chat');
  }
  if (prompt === '' && context.length === 0 && pics.length === 0) {
    sendJson(c.res, 200, nothingAnswer('/api/generate', b, b.model));
    return;
  }
  const raw = b.raw === true;
  const messages: ChatMessage[] = [];
  if (typeof b.system === 'string' && b.system !== '') messages.push({ role: 'system', content: b.system });
  // the images first, then the text, as a message of /api/chat
  messages.push({ role: 'user', content: pics.length > 0 ? [...pics, { type: 'text', text: prompt }] : prompt });
  const body: Body = { ...samplingFields(b), return_tokens: true };
  // a prompt through the chat template (its reply read as thinking and text), or as is (raw)
  let chatDeltas = !raw;
  if (context.length > 0) {
    // Ollama's older conversation memory: the earlier prompt and reply's tokens, then this prompt's
    const text = raw
      ? prompt
      : (
          await host.ctx.formatChat(messages, null, {
            jinja: true,
            ...(typeof body.enable_thinking === 'boolean' ? { enable_thinking: body.enable_thinking } : {}),
            ...(host.templateLimits ? { limits: host.templateLimits } : {}),
          })
        ).prompt;
    const { tokens } = await host.ctx.tokenize(text, { add_special: false, parse_special: true });
    body.prompt = [...(context as number[]), ...tokens];
    chatDeltas = false;
  } else if (raw) {
    body.prompt = prompt;
  } else body.messages = messages;
  const options = oa.generationOptions(body, logprobCount(b));
  // raw: as /completion's multimodal_data, at the prompt's <__media__> markers, else after it
  if (raw && pics.length > 0) {
    (options as { media_paths?: string[] }).media_paths = (b.images as string[]).map((x) => x.replace(/\s/g, ''));
  }
  await run(
    host,
    c,
    b,
    options,
    {
      piece: (content, thinking) => ({ response: content, ...(thinking !== '' ? { thinking } : {}) }),
      final: (r, streamed) => {
        const ctx = [...(r.prompt_tokens ?? []), ...(r.tokens ?? [])];
        if (streamed) return { response: '', context: ctx };
        const thinking = chatDeltas && r.reasoning_content ? { thinking: r.reasoning_content } : {};
        return { response: chatDeltas ? (r.content ?? r.text) : r.text, ...thinking, context: ctx };
      },
    },
    chatDeltas,
  );
}

// ---- embeddings ----

/** Keeps the first `n` dimensions and normalizes again (Ollama's `dimensions`). */
function truncateDims(v: Float32Array, n: number): Float32Array {
  const out = v.slice(0, n);
  let s = 0;
  for (const x of out) s += x * x;
  const k = s > 0 ? 1 / Math.sqrt(s) : 0;
  for (let i = 0; i < out.length; i++) out[i]! *= k;
  return out;
}

async function embed(host: OllamaHost, c: RequestContext): Promise<void> {
  const t0 = process.hrtime.bigint();
  const b = oa.asObject(c.body);
  requireServed(host, requestName(b));
  host.requireEmbeddings();
  const input = b.input;
  const inputs = typeof input === 'string' ? [input] : input;
  if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((x) => typeof x === 'string')) {
    throw bad('input must be a string or a non-empty array of strings');
  }
  const dims = b.dimensions;
  if (dims !== undefined && dims !== null && (typeof dims !== 'number' || !Number.isInteger(dims) || dims < 1)) {
    throw bad('dimensions must be a positive integer');
  }
  if (b.truncate !== undefined && b.truncate !== null && typeof b.truncate !== 'boolean') {
    throw bad('truncate must be a boolean');
  }
  let out: Awaited<ReturnType<OllamaHost['embed']>>;
  try {
    out = await host.embed(inputs as string[], 2, c.res);
  } catch (e) {
    // Ollama's truncate (default true): an input longer than the model takes loses its end
    const limit = Number(/embeddings take at most (\d+)/.exec((e as Error)?.message ?? '')?.[1]);
    if (b.truncate === false || !(limit > 0)) throw e;
    out = await host.embed(await truncated(host, inputs as string[], limit), 2, c.res);
  }
  if (!out) return;
  const n = out.vectors[0]?.length ?? 0;
  if (typeof dims === 'number' && dims > n) throw bad(`dimensions: the model's embeddings have ${n}, ${dims} asked`);
  sendJson(c.res, 200, {
    model: b.model,
    embeddings: out.vectors.map((v) => Array.from(typeof dims === 'number' ? truncateDims(v, dims) : v)),
    total_duration: Number(process.hrtime.bigint() - t0) + loadDuration(c),
    load_duration: loadDuration(c),
    prompt_eval_count: out.nTokens,
  });
}

/** Each input as tokens, cut to `limit`; an end token the tokenizer appends (BERT's [SEP], an EOS) is kept. */
async function truncated(host: OllamaHost, inputs: readonly string[], limit: number): Promise<number[][]> {
  return Promise.all(
    inputs.map(async (x) => {
      const all = Array.from((await host.ctx.tokenize(x, { add_special: true, parse_special: true })).tokens);
      if (all.length <= limit) return all;
      const plain = Array.from((await host.ctx.tokenize(x, { add_special: false, parse_special: true })).tokens);
      const end = all.at(-1)!;
      return end !== plain.at(-1) ? [...all.slice(0, limit - 1), end] : all.slice(0, limit);
    }),
  );
}

/** The older /api/embeddings: one `prompt`, its embedding as the model gives it (not normalized, as Ollama's). */
async function embeddingsLegacy(host: OllamaHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  requireServed(host, requestName(b));
  host.requireEmbeddings();
  if (typeof b.prompt !== 'string') throw bad('prompt must be a string');
  if (b.prompt === '') {
    sendJson(c.res, 200, { embedding: [] });
    return;
  }
  const out = await host.embed([b.prompt], -1, c.res);
  if (!out) return;
  sendJson(c.res, 200, { embedding: Array.from(out.vectors[0]!) });
}

// ---- the download cache ----

/** A download error's HTTP status: the model or file is not there (404), the Hub cannot be reached (502), else 500. */
function downloadStatus(e: DownloadError): number {
  if (e instanceof HubUnreachableError) return 502;
  return /HTTP 404|has no GGUF file|not a Hugging Face repository/.test(e.message) ? 404 : 500;
}

/**
 * /api/pull of `hf.co/OWNER/REPO[:QUANT]` into the download cache `dir`, with Ollama's
 * progress lines; `pulled` runs once the file is there, before `success` goes out (the
 * router lists it from then on).
 */
export async function pullModel(
  dir: string,
  c: RequestContext,
  pulled?: (path: string) => Promise<void> | void,
): Promise<void> {
  const b = oa.asObject(c.body);
  const name = requestName(b);
  const spec = hfSpec(name);
  const res = c.res;
  const stream = b.stream !== false;
  const out = stream ? new NdjsonWriter(res) : undefined;
  const send = (obj: Body) => out?.line(obj);
  const abort = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) abort.abort();
  });
  try {
    send({ status: 'pulling manifest' });
    const f = await resolveHfRepo(spec);
    let last = 0;
    let digest: string | undefined;
    let verifying = false;
    const path = await pull(f, {
      cacheDir: dir,
      signal: abort.signal,
      onProgress: (p) => {
        digest = p.sha256 ?? digest;
        const whole = p.total !== undefined && p.received >= p.total;
        const t = Date.now();
        // at most ten lines a second, and the first and last
        if (!whole && p.received > 0 && t - last < 100) return;
        last = t;
        send({
          status: `pulling ${digest ? digest.slice(0, 12) : p.file}`,
          digest: digest ? `sha256:${digest}` : '',
          total: p.total ?? 0,
          completed: p.received,
        });
        if (whole && !verifying) {
          verifying = true;
          send({ status: 'verifying sha256 digest' });
        }
      },
    });
    if (!verifying) {
      // in the cache already: its digest and size, as Ollama shows a layer it has
      const size = (await fsp.stat(path)).size;
      digest ??= await fileSha256(path);
      send({ status: `pulling ${digest.slice(0, 12)}`, digest: `sha256:${digest}`, total: size, completed: size });
      send({ status: 'verifying sha256 digest' });
    }
    send({ status: 'writing manifest' });
    await pulled?.(path);
    if (out) {
      out.line({ status: 'success' });
      out.end();
    } else sendJson(res, 200, { status: 'success' });
  } catch (e) {
    if (abort.signal.aborted) return;
    const err = e instanceof DownloadError ? new ApiError(downloadStatus(e), e.message) : e;
    if (out?.opened) out.fail(err);
    else throw err;
  }
}

async function deleteModel(host: OllamaHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  const name = requestName(b);
  if (servedNames(host).some((n) => n.toLowerCase() === withTag(name).toLowerCase())) {
    throw bad(`'${name}' is the model this server runs: it cannot be deleted while served`);
  }
  const spec = hfSpec(name);
  let path: string | undefined;
  try {
    const { repo, quant } = splitHfSpec(spec);
    path = await cachedQuant(host.cacheDir, repo, quant);
  } catch (e) {
    if (!(e instanceof DownloadError)) throw e;
  }
  if (!path) throw new ApiError(404, `model '${name}' not found`);
  await fsp.rm(path);
  c.res.writeHead(200, { 'Content-Length': '0' });
  c.res.end();
}
