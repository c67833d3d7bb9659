// OpenAI-compatible requests and response shapes, as OpenAI's API and llama-server produce
// them: chat.completion(.chunk), text_completion, embeddings lists, logprobs, usage. The
// generation options come from the option table (src/generation/options.ts), which knows
// every field's OpenAI and llama-server names, range and size.
import { randomBytes } from 'node:crypto';
import type { LlamaCompletionOptions, LlamaCompletionResult, TokenLogprob } from '../api/index.js';
import type { ChatDelta } from '../chat/index.js';
import { OptionError, optionsFromRequest, showValue } from '../generation/index.js';
import { SYSTEM_FINGERPRINT } from './build.js';
import { ApiError } from './http.js';

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
    throw new ApiError(400, `'${key}' must be a number in [${min}, ${max}], got ${showValue(v)}`, undefined, key);
  }
  return v;
}

function int(b: Body, key: string, min = -Infinity, max = Infinity): number | undefined {
  const v = num(b, key, min, max);
  if (v !== undefined && !Number.isInteger(v)) throw new ApiError(400, `'${key}' must be an integer`, undefined, key);
  return v;
}

/** An option error (from the option table) as a 400 naming the field. */
export function optionApiError(e: unknown): never {
  if (e instanceof OptionError) throw new ApiError(400, e.message, undefined, e.option);
  throw e;
}

/**
 * The library's completion options for a request: every field the option table maps
 * (OpenAI's names, then llama-server's), checked there, plus the log-probability form
 * the OpenAI shapes need when `nProbs` ≥ 0.
 */
export function generationOptions(b: Body, nProbs: number): LlamaCompletionOptions {
  let o: Record<string, unknown>;
  try {
    o = optionsFromRequest(b);
  } catch (e) {
    optionApiError(e);
  }
  delete o.n_probs;
  if (Array.isArray(b.messages)) checkChatMessages(b.messages);
  // a request's regular expression would run on every token in the engine: words and tokens only
  const triggers = o.grammar_triggers as { type?: unknown }[] | undefined;
  if (triggers?.some((t) => t.type === 2 || t.type === 3)) {
    throw new ApiError(
      400,
      'grammar_triggers: pattern triggers (types 2 and 3) are not accepted over HTTP; use words (1) or tokens (0)',
      undefined,
      'grammar_triggers',
    );
  }
  // llama-server refuses a prompt longer than a slot's context (the library would cut it)
  o.truncate_prompt = false;
  // and handles a full context its way (one token earlier; `truncated` after a shift)
  o.llama_server_context = true;
  // and continues a conversation's last assistant message (its prefill_assistant)
  if (Array.isArray(b.messages)) o.prefill_assistant = true;
  if (nProbs >= 0) {
    o.logprobs = true;
    o.n_probs = nProbs;
  }
  return o as LlamaCompletionOptions;
}

/**
 * What llama-server refuses in a conversation before applying its template: more than one
 * assistant message at its end (one is a reply to continue). Its media are checked against
 * the model's projector where the request is submitted (media.ts).
 */
export function checkChatMessages(messages: readonly unknown[]): void {
  const role = (i: number) => (messages[i] as { role?: unknown } | null)?.role;
  if (messages.length >= 2 && role(messages.length - 1) === 'assistant' && role(messages.length - 2) === 'assistant') {
    throw new ApiError(400, 'Cannot have 2 or more assistant messages at the end of the list.', undefined, 'messages');
  }
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
  /** Prompt tokens reused from the slot's cache (OpenAI's shape). */
  prompt_tokens_details: { cached_tokens: number };
}

/** Tokens generated, the end-of-generation token left out (as `logprobs` lists them); every choice's. */
export function completionTokens(r: LlamaCompletionResult): number {
  return (r.choices ?? [r]).reduce((n, x) => n + x.tokens_predicted - (x.stopped_eos ? 1 : 0), 0);
}

/** Usage: the prompt once (evaluated once for every choice), what it reused from the cache, the tokens generated. */
export function usage(r: LlamaCompletionResult): Usage {
  const n = completionTokens(r);
  return {
    prompt_tokens: r.tokens_evaluated,
    completion_tokens: n,
    total_tokens: r.tokens_evaluated + n,
    prompt_tokens_details: { cached_tokens: r.tokens_cached },
  };
}

export type FinishReason = 'stop' | 'length' | 'abort';

/** 'abort': ended by the server's shutdown (a request whose client left gets no answer). */
export function finishReason(r: LlamaCompletionResult): FinishReason {
  if (r.interrupted) return 'abort';
  return r.stopped_eos || r.stopped_word ? 'stop' : 'length';
}

export function timings(r: LlamaCompletionResult): Record<string, number> {
  const t = r.timings;
  return {
    cache_n: r.tokens_cached,
    prompt_n: t.prompt_n,
    prompt_ms: t.prompt_ms,
    prompt_per_second: t.prompt_ms > 0 ? (t.prompt_n * 1000) / t.prompt_ms : 0,
    predicted_n: t.predicted_n,
    predicted_ms: t.predicted_ms,
    predicted_per_second: t.predicted_ms > 0 ? (t.predicted_n * 1000) / t.predicted_ms : 0,
    // speculative decoding (llama-server's names)
    ...(t.draft_n !== undefined ? { draft_n: t.draft_n, draft_n_accepted: t.draft_n_accepted ?? 0 } : {}),
  };
}

/** Chat logprobs content entries (OpenAI's shape; llama-server's extra `id`). */
export function chatLogprobContent(entries: readonly TokenLogprob[]): unknown[] {
  return entries.map((e) => ({
    id: e.id,
    token: e.token,
    bytes: e.bytes,
    logprob: e.logprob,
    top_logprobs: (e.top_logprobs ?? []).map((t) => ({ id: t.id, token: t.token, bytes: t.bytes, logprob: t.logprob })),
  }));
}

/** Legacy completions logprobs: tokens, token_logprobs, top_logprobs (token → logprob), text_offset. */
export function completionLogprobObject(entries: readonly TokenLogprob[], textOffset0 = 0): unknown {
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

/**
 * A chat choice's finish_reason: 'tool_calls' only for a reply that ended with its calls;
 * one stopped by max_tokens or the context is 'length' whatever it was writing (a call
 * cut there is unfinished; OpenAI's and llama-server's rule, and clients' length error).
 */
export function chatFinishReason(r: FinishReason, toolCalls: boolean): string {
  return r === 'stop' && toolCalls ? 'tool_calls' : r;
}

/** A chat reply as OpenAI's assistant message: content (null when only calls), reasoning_content (llama-server's), tool_calls. */
export function chatMessage(r: LlamaCompletionResult): Record<string, unknown> {
  const calls = r.tool_calls ?? [];
  const content = r.content ?? r.text;
  const m: Record<string, unknown> = { role: 'assistant', content: calls.length > 0 && !content ? null : content };
  if (r.reasoning_content !== undefined) m.reasoning_content = r.reasoning_content;
  if (calls.length > 0) m.tool_calls = calls;
  return m;
}

/** A token event's chat delta as a chunk's delta fields (undefined when it adds nothing). */
export function chatDeltaFields(d: ChatDelta | undefined): Record<string, unknown> | undefined {
  if (!d) return undefined;
  const out: Record<string, unknown> = {};
  if (d.reasoning_content) out.reasoning_content = d.reasoning_content;
  if (d.content) out.content = d.content;
  if (d.tool_calls) out.tool_calls = d.tool_calls;
  return Object.keys(out).length > 0 ? out : undefined;
}

/** A chat.completion.chunk. */
export function chatChunk(
  id: string,
  model: string,
  created: number,
  delta: Record<string, unknown>,
  finish: string | null,
  extra: Record<string, unknown> = {},
  index = 0,
): unknown {
  return {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ index, delta, logprobs: null, finish_reason: finish, ...extra }],
  };
}

export function completionChunk(
  id: string,
  model: string,
  created: number,
  text: string,
  finish: string | null,
  logprobs: unknown = null,
  index = 0,
): unknown {
  return {
    id,
    object: 'text_completion',
    created,
    model,
    system_fingerprint: SYSTEM_FINGERPRINT,
    choices: [{ text, index, logprobs, finish_reason: finish }],
  };
}

export { SYSTEM_FINGERPRINT };

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

/** A float vector as OpenAI's base64 encoding (little-endian float32). */
export function base64Floats(v: Float32Array): string {
  const b = Buffer.alloc(v.length * 4);
  for (let i = 0; i < v.length; i++) b.writeFloatLE(v[i]!, i * 4);
  return b.toString('base64');
}
