// OpenAI-compatible request checking and response shapes, as OpenAI's API and llama-server
// produce them: chat.completion(.chunk), text_completion, embeddings lists, logprobs, usage.
import { randomBytes } from 'node:crypto';
import type { ProbabilityRow, SamplingParams } from '../sampling/index.js';
import { completionProbabilities } from '../sampling/index.js';
import type { Vocab } from '../vocab/index.js';
import { ApiError } from './http.js';
import type { FinishReason, TaskResult } from './slots.js';

export type Body = Record<string, unknown>;

export function asObject(body: unknown): Body {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ApiError(400, 'the request body must be a JSON object');
  }
  return body as Body;
}

export function newId(prefix: string): string {
  return `${prefix}-${randomBytes(12).toString('base64url')}`;
}

function num(b: Body, key: string, min = -Infinity, max = Infinity): number | undefined {
  const v = b[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < min || v > max) {
    throw new ApiError(400, `'${key}' must be a number in [${min}, ${max}], got ${JSON.stringify(v)}`, undefined, key);
  }
  return v;
}

function int(b: Body, key: string, min = -Infinity, max = Infinity): number | undefined {
  const v = num(b, key, min, max);
  if (v !== undefined && !Number.isInteger(v)) throw new ApiError(400, `'${key}' must be an integer`, undefined, key);
  return v;
}

/** `stop`: a string or up to 16 strings. */
export function stopStrings(b: Body): string[] {
  const s = b.stop;
  if (s === undefined || s === null) return [];
  const list = typeof s === 'string' ? [s] : s;
  if (!Array.isArray(list) || !list.every((x) => typeof x === 'string') || list.length > 16) {
    throw new ApiError(400, "'stop' must be a string or an array of at most 16 strings", undefined, 'stop');
  }
  return list.filter((x) => x.length > 0);
}

/** max_tokens / max_completion_tokens / n_predict; -1: until the slot's context is full. */
export function nPredict(b: Body): number {
  const v = int(b, 'max_completion_tokens', -1) ?? int(b, 'max_tokens', -1) ?? int(b, 'n_predict', -1);
  return v ?? -1;
}

export function checkN(b: Body): void {
  const n = int(b, 'n', 1);
  if (n !== undefined && n !== 1)
    throw new ApiError(400, "only one choice per request is supported ('n': 1)", undefined, 'n');
}

/** OpenAI's logit_bias ({"token id": -100..100}) and llama-server's forms pass through to the chain. */
function logitBias(b: Body): SamplingParams['logit_bias'] | undefined {
  const v = b.logit_bias;
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'object')
    throw new ApiError(400, "'logit_bias' must be an object or an array", undefined, 'logit_bias');
  if (!Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (typeof x === 'number' && (x < -100 || x > 100) && /^\d+$/.test(k)) {
        throw new ApiError(400, `'logit_bias' values must be in [-100, 100]`, undefined, 'logit_bias');
      }
    }
  }
  return v as SamplingParams['logit_bias'];
}

const PASS_THROUGH = [
  'top_k',
  'min_p',
  'typical_p',
  'typ_p',
  'top_n_sigma',
  'xtc_probability',
  'xtc_threshold',
  'repeat_last_n',
  'repeat_penalty',
  'dry_multiplier',
  'dry_base',
  'dry_allowed_length',
  'dry_penalty_last_n',
  'dry_sequence_breakers',
  'mirostat',
  'mirostat_tau',
  'mirostat_eta',
  'dynatemp_range',
  'dynatemp_exponent',
  'ignore_eos',
  'grammar',
  'min_keep',
  'samplers',
  'post_sampling_probs',
] as const;

/** Sampling options of a request (OpenAI names, plus llama-server's extras). */
export function samplingParams(b: Body, nCtx: number): SamplingParams {
  const p: SamplingParams = { n_ctx: nCtx };
  const t = num(b, 'temperature', 0, 2e9);
  if (t !== undefined) p.temperature = t;
  const topP = num(b, 'top_p', 0, 1);
  if (topP !== undefined) p.top_p = topP;
  const fp = num(b, 'frequency_penalty', -2, 2);
  if (fp !== undefined) p.frequency_penalty = fp;
  const pp = num(b, 'presence_penalty', -2, 2);
  if (pp !== undefined) p.presence_penalty = pp;
  const seed = int(b, 'seed');
  if (seed !== undefined) p.seed = seed < 0 ? -1 : seed >>> 0;
  const bias = logitBias(b);
  if (bias !== undefined) p.logit_bias = bias;
  for (const k of PASS_THROUGH) {
    if (b[k] !== undefined && b[k] !== null) (p as Record<string, unknown>)[k] = b[k];
  }
  if (b.json_schema !== undefined && b.json_schema !== null) p.json_schema = b.json_schema;
  const rf = b.response_format;
  if (rf !== undefined && rf !== null) {
    if (typeof rf !== 'object')
      throw new ApiError(400, "'response_format' must be an object", undefined, 'response_format');
    const f = rf as Body;
    if (f.type === 'json_object') p.json_schema = f.schema ?? { type: 'object' };
    else if (f.type === 'json_schema') {
      const js = f.json_schema as Body | undefined;
      const schema = js?.schema ?? f.schema;
      if (schema === undefined) {
        throw new ApiError(400, "'response_format.json_schema.schema' is required", undefined, 'response_format');
      }
      p.json_schema = schema;
    } else if (f.type !== 'text') {
      throw new ApiError(
        400,
        `'response_format.type' must be 'text', 'json_object' or 'json_schema'`,
        undefined,
        'response_format',
      );
    }
  }
  return p;
}

/** Number of top probabilities per token a chat request asks for (logprobs/top_logprobs), or -1 for none. */
export function chatLogprobs(b: Body): number {
  const lp = b.logprobs;
  if (lp === undefined || lp === null || lp === false) {
    if (b.top_logprobs !== undefined && b.top_logprobs !== null) {
      throw new ApiError(400, "'top_logprobs' needs 'logprobs': true", undefined, 'top_logprobs');
    }
    return int(b, 'n_probs', 0, 100) ?? -1;
  }
  if (lp !== true) throw new ApiError(400, "'logprobs' must be a boolean", undefined, 'logprobs');
  return int(b, 'top_logprobs', 0, 20) ?? 0;
}

/** Legacy completions: `logprobs` is the number of top tokens (0-5 in OpenAI's API; up to 100 here). */
export function completionLogprobs(b: Body): number {
  const v = int(b, 'logprobs', 0, 100);
  if (v !== undefined) return v;
  return int(b, 'n_probs', 0, 100) ?? -1;
}

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usage(r: TaskResult): Usage {
  return {
    prompt_tokens: r.promptTokens,
    completion_tokens: r.tokens.length,
    total_tokens: r.promptTokens + r.tokens.length,
  };
}

export function timings(r: TaskResult): Record<string, number> {
  const t = r.timings;
  return {
    cache_n: t.cache_n,
    prompt_n: t.prompt_n,
    prompt_ms: t.prompt_ms,
    prompt_per_second: t.prompt_ms > 0 ? (t.prompt_n * 1000) / t.prompt_ms : 0,
    predicted_n: t.predicted_n,
    predicted_ms: t.predicted_ms,
    predicted_per_second: t.predicted_ms > 0 ? (t.predicted_n * 1000) / t.predicted_ms : 0,
  };
}

/** Chat logprobs content entries (OpenAI's shape; llama-server's extra `id`). */
export function chatLogprobContent(vocab: Vocab, rows: readonly ProbabilityRow[]): unknown[] {
  return completionProbabilities(rows, (id) => vocab.pieceBytes(id, false)).map((e) => ({
    id: e.id,
    token: e.token,
    bytes: e.bytes,
    logprob: e.logprob,
    top_logprobs: (e.top_logprobs ?? []).map((t) => ({ id: t.id, token: t.token, bytes: t.bytes, logprob: t.logprob })),
  }));
}

/** Legacy completions logprobs: tokens, token_logprobs, top_logprobs (token → logprob), text_offset. */
export function completionLogprobObject(vocab: Vocab, rows: readonly ProbabilityRow[], textOffset0 = 0): unknown {
  const entries = completionProbabilities(rows, (id) => vocab.pieceBytes(id, false));
  const offsets: number[] = [];
  let off = textOffset0;
  for (const e of entries) {
    offsets.push(off);
    off += e.token.length;
  }
  return {
    tokens: entries.map((e) => e.token),
    token_logprobs: entries.map((e) => e.logprob),
    top_logprobs: entries.map((e) => Object.fromEntries((e.top_logprobs ?? []).map((t) => [t.token, t.logprob]))),
    text_offset: offsets,
  };
}

export function chatFinishReason(r: FinishReason, toolCalls: boolean): string {
  return toolCalls ? 'tool_calls' : r;
}

/** A chat.completion.chunk. */
export function chatChunk(
  id: string,
  model: string,
  created: number,
  delta: Record<string, unknown>,
  finish: string | null,
  extra: Record<string, unknown> = {},
): unknown {
  return {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish, ...extra }],
  };
}

export function completionChunk(
  id: string,
  model: string,
  created: number,
  text: string,
  finish: string | null,
  logprobs: unknown = null,
): unknown {
  return {
    id,
    object: 'text_completion',
    created,
    model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ text, index: 0, logprobs, finish_reason: finish }],
  };
}

export const SYSTEM_FINGERPRINT = 'llama-ts';

/** Prompt of /v1/completions: a string, token ids, or a one-element array of either. */
export function completionPrompt(b: Body): string | number[] {
  let p = b.prompt;
  if (Array.isArray(p) && p.length === 1 && (typeof p[0] === 'string' || Array.isArray(p[0]))) p = p[0];
  if (typeof p === 'string') return p;
  if (Array.isArray(p) && p.length > 0 && p.every((x) => Number.isInteger(x))) return p as number[];
  if (Array.isArray(p) && p.length > 1) {
    throw new ApiError(400, "only one prompt per request is supported ('prompt' arrays of one)", undefined, 'prompt');
  }
  throw new ApiError(400, "'prompt' must be a string or an array of token ids", undefined, 'prompt');
}

/** Inputs of /v1/embeddings: text or token ids, one or many. */
export function embeddingInputs(b: Body): (string | number[])[] {
  const v = b.input ?? b.content;
  if (typeof v === 'string') return [v];
  if (Array.isArray(v) && v.length > 0) {
    if (v.every((x) => Number.isInteger(x))) return [v as number[]];
    if (v.every((x) => typeof x === 'string' || (Array.isArray(x) && x.every((y) => Number.isInteger(y))))) {
      return v as (string | number[])[];
    }
  }
  throw new ApiError(400, "'input' must be a string, an array of strings, or token ids", undefined, 'input');
}

/** A float vector as OpenAI's base64 encoding (little-endian float32). */
export function base64Floats(v: Float32Array): string {
  const b = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) b.writeFloatLE(v[i]!, i * 4);
  return b.toString('base64');
}
