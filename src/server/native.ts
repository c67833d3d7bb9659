// llama-server's own endpoints, in its own shapes (tools/server/README.md):
//   POST /completion, /completions   `prompt` (text, token ids, a mix, or several prompts),
//        n_predict, cache_prompt, id_slot, return_tokens, n_probs, stream (data: lines, the
//        last with "stop": true, no [DONE]), and every sampling field of the option table
//   POST /infill          fill in the middle: input_prefix / input_suffix / input_extra
//                         around the model's FIM tokens (the library builds the prompt)
//   POST /apply-template  the chat template applied to `messages`: { prompt }
//   GET  /props           default generation settings, slots, template, special tokens
//   GET  /slots           each slot: id, n_ctx, is_processing, params, next_token
//   POST /slots/:id?action=save|restore|erase   a slot's cache to and from a file in
//                         --slot-save-path (file names only: no folders, no "..")
import { join } from 'node:path';
import type {
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionToken,
  TokenLogprob,
} from '../api/index.js';
import type { ChatMessage, Tool } from '../chat/index.js';
import { assistantPrefill } from '../chat/index.js';
import { OPTIONS, type OptionSpec } from '../generation/index.js';
import { Cancelled, type GenerationHost } from './host.js';
import { ApiError, queryFlag, type RequestContext, sendJson } from './http.js';
import { checkMessageModalities } from './media.js';
import * as oa from './openai.js';
import { SseWriter } from './sse.js';

type Body = oa.Body;

function bad(message: string, param: string): ApiError {
  return new ApiError(400, message, undefined, param);
}

/**
 * The prompts of a request (llama-server's rules, for /completion's `prompt` and the
 * embeddings' `input`): text, token ids, ids and text mixed in one prompt, a
 * `{ prompt_string }` object, or a list of those (`many`; an array with any number in it
 * is one prompt). At most `max` prompts.
 */
export async function requestPrompts(
  host: GenerationHost,
  p: unknown,
  field: string,
  max: number,
  media = false,
): Promise<{ list: Prompt[]; many: boolean }> {
  const one = async (x: unknown, at: string): Promise<Prompt> => {
    if (typeof x === 'string') return x;
    if (typeof x === 'object' && x !== null && !Array.isArray(x))
      return objectPrompt(host, x as Body, at, field, media);
    if (Array.isArray(x) && x.length > 0 && x.every((t) => Number.isInteger(t))) return x as number[];
    if (Array.isArray(x) && x.length > 0 && x.every((t) => Number.isInteger(t) || typeof t === 'string')) {
      // a mix: text pieces tokenized (special tokens parsed), the first with BOS
      const out: number[] = [];
      for (const [i, t] of x.entries()) {
        if (typeof t === 'number') out.push(t);
        else out.push(...(await host.ctx.tokenize(t, { add_special: i === 0, parse_special: true })).tokens);
      }
      return out;
    }
    throw bad(`'${at}' must be text, token ids, or a mix of both`, field);
  };
  if (Array.isArray(p) && p.length > 0 && !p.some((x) => typeof x === 'number')) {
    if (p.length > max) throw bad(`'${field}': at most ${max} prompts per request`, field);
    return { list: await Promise.all(p.map((x, i) => one(x, `${field}[${i}]`))), many: true };
  }
  if (p === undefined || p === null) throw bad(`'${field}' is required`, field);
  return { list: [await one(p, field)], many: false };
}

/** One prompt: text, token ids, or text with media (its `<__media__>` markers place them, in order). */
export type Prompt = string | number[] | { text: string; media: string[] };

/**
 * llama-server's JSON-object prompt: `{ prompt_string, multimodal_data }` (base64 images or
 * audio). Media need a projector (llama-server's words without one) and a generation request
 * (`media`); they are checked when the request is submitted.
 */
function objectPrompt(host: GenerationHost, x: Body, at: string, field: string, allowMedia: boolean): Prompt {
  if (typeof x.prompt_string !== 'string') throw bad(`'${at}.prompt_string' must be a string`, field);
  const media = x.multimodal_data;
  if (media === undefined || media === null || (Array.isArray(media) && media.length === 0)) return x.prompt_string;
  if (!host.modalities.vision && !host.modalities.audio)
    throw bad('Multimodal data provided, but model does not support multimodal requests.', `${at}.multimodal_data`);
  if (!allowMedia) throw bad(`'${at}.multimodal_data': media are taken in completions only`, `${at}.multimodal_data`);
  if (!Array.isArray(media) || !media.every((m) => typeof m === 'string'))
    throw bad(`'${at}.multimodal_data' must be an array of base64 strings`, `${at}.multimodal_data`);
  return { text: x.prompt_string, media: media as string[] };
}

/** llama-server's generation_settings: every sampling and generation field by its llama-server name. */
export function generationSettings(o: Record<string, unknown>, nCtx: number): Record<string, unknown> {
  const out: Record<string, unknown> = { n_ctx: nCtx };
  for (const s of OPTIONS as readonly OptionSpec[]) {
    if (!s.server || s.libraryOnly || (s.group !== 'sampling' && s.group !== 'generation' && s.group !== 'output')) {
      continue;
    }
    const v = o[s.name];
    out[s.server] = v !== undefined && v !== null ? v : (s.default ?? null);
  }
  out.max_tokens = out.n_predict;
  return out;
}

function stopType(r: LlamaCompletionResult): string {
  if (r.stopped_eos) return 'eos';
  if (r.stopped_word) return 'word';
  if (r.stopped_limit) return 'limit';
  return 'none';
}

/** A finished completion in llama-server's shape. */
function nativeResult(
  host: GenerationHost,
  r: LlamaCompletionResult,
  index: number,
  options: LlamaCompletionOptions,
  prompt: string,
  withProbs: boolean,
): Record<string, unknown> {
  return {
    index,
    content: r.text,
    tokens: options.return_tokens ? (r.tokens ?? []) : [],
    id_slot: r.id_slot ?? -1,
    stop: true,
    model: host.modelId,
    tokens_predicted: r.tokens_predicted,
    tokens_evaluated: r.tokens_evaluated,
    generation_settings: generationSettings(options as Record<string, unknown>, host.nCtxSlot),
    prompt,
    has_new_line: r.text.includes('\n'),
    truncated: r.truncated,
    stop_type: stopType(r),
    stopping_word: r.stopping_word,
    tokens_cached: r.tokens_cached,
    timings: { cache_n: r.tokens_cached, ...r.timings },
    ...(withProbs ? { completion_probabilities: probabilities(r.logprobs ?? [], options) } : {}),
  };
}

/**
 * `completion_probabilities` as llama-server writes them: log-probabilities, or with
 * post_sampling_probs the probabilities themselves (`prob`, `top_probs`).
 */
function probabilities(entries: readonly TokenLogprob[], options: LlamaCompletionOptions): unknown[] {
  if (!options.post_sampling_probs) return entries as unknown[];
  // ln 0 is written as the lowest float (JSON has no -Infinity)
  const p = (lp: number | undefined) => (lp === undefined || lp <= -3.4e38 ? 0 : Math.exp(lp));
  return entries.map((e) => ({
    id: e.id,
    token: e.token,
    bytes: e.bytes,
    prob: p(e.logprob),
    top_probs: (e.top_logprobs ?? []).map((t) => ({ id: t.id, token: t.token, bytes: t.bytes, prob: p(t.logprob) })),
  }));
}

/**
 * llama-server's response_fields: only the fields named, each by its path ("a/b" reaches
 * into objects) and under that path as its key; paths that lead nowhere are left out.
 */
export function pickFields(fields: readonly string[], obj: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const path of fields) {
    let cur: unknown = obj;
    let found = true;
    for (const k of path.split('/')) {
      if (typeof cur === 'object' && cur !== null && !Array.isArray(cur) && Object.hasOwn(cur, k)) {
        cur = (cur as Record<string, unknown>)[k];
      } else {
        found = false;
        break;
      }
    }
    if (found) out[path] = cur;
  }
  return out;
}

/** The request's response_fields (empty: the whole answer). */
function responseFields(b: Body): string[] {
  const f = b.response_fields;
  if (f === undefined || f === null) return [];
  if (!Array.isArray(f) || f.length > 256 || !f.every((x) => typeof x === 'string' && x.length <= 1024)) {
    throw bad("'response_fields' must be an array of at most 256 field paths", 'response_fields');
  }
  return f as string[];
}

/**
 * llama-server's `__verbose` (--verbose): an OpenAI-shaped answer's result in the
 * /completion shape, the prompt as evaluated included (the request ran with return_tokens).
 */
export async function verboseResult(
  host: GenerationHost,
  r: LlamaCompletionResult,
  options: LlamaCompletionOptions,
): Promise<Record<string, unknown>> {
  const prompt = r.prompt_tokens ? await host.ctx.detokenize(r.prompt_tokens) : '';
  return nativeResult(host, r, 0, options, prompt, (r.logprobs?.length ?? 0) > 0);
}

/** The request's options: the option table's llama-server (and OpenAI) names; n_probs as llama-server's probabilities. */
function nativeOptions(b: Body): { options: LlamaCompletionOptions; withProbs: boolean } {
  const nProbs = b.n_probs;
  if (nProbs !== undefined && (!Number.isInteger(nProbs) || (nProbs as number) < 0 || (nProbs as number) > 100)) {
    throw bad("'n_probs' must be an integer in [0, 100]", 'n_probs');
  }
  const withProbs = typeof nProbs === 'number' && nProbs > 0;
  // a streamed chunk's token ids (llama-server's `tokens`) come from the probability entries
  const wantEntries = withProbs || b.stream === true;
  const options = oa.generationOptions(
    { ...b, prompt: undefined, messages: undefined, logprobs: undefined, n: undefined },
    wantEntries ? ((nProbs as number) ?? 0) : -1,
  );
  return { options, withProbs };
}

/** Runs one request for each prompt and answers in llama-server's shape (a list for several prompts). */
async function run(
  host: GenerationHost,
  c: RequestContext,
  b: Body,
  { list, many }: { list: Prompt[]; many: boolean },
  extra: LlamaCompletionOptions = {},
): Promise<void> {
  const { options: base, withProbs } = nativeOptions(b);
  const res = c.res;
  // the prompt as evaluated (llama-server echoes its tokens as text, BOS included)
  const texts = await Promise.all(
    list.map(async (p) => {
      const text = typeof p === 'string' ? p : Array.isArray(p) ? undefined : p.text;
      return host.ctx.detokenize(
        text !== undefined
          ? (await host.ctx.tokenize(text, { add_special: true, parse_special: true })).tokens
          : (p as number[]),
      );
    }),
  );
  const fields = responseFields(b);
  const stream = b.stream === true;
  const sse = stream ? new SseWriter(res) : undefined;
  const counts = list.map(() => 0);
  const jobs = [];
  for (const [i, p] of list.entries()) {
    const options: LlamaCompletionOptions =
      typeof p === 'string' || Array.isArray(p)
        ? { ...base, ...extra, prompt: p }
        : ({ ...base, ...extra, prompt: p.text, media_paths: p.media } as LlamaCompletionOptions);
    const onToken =
      sse &&
      ((ev: LlamaCompletionToken) => {
        if (ev.prompt_progress) {
          sse.send({
            index: i,
            content: '',
            tokens: [],
            stop: false,
            id_slot: -1,
            tokens_predicted: 0,
            tokens_evaluated: ev.prompt_progress.total,
            prompt_progress: ev.prompt_progress,
          });
          return;
        }
        counts[i]! += ev.logprobs?.length ?? 1;
        sse.send({
          index: i,
          content: ev.token,
          tokens: (ev.logprobs ?? []).map((e) => e.id),
          stop: false,
          // llama-server leaves a partial result's slot unset (-1); the final chunk names it
          id_slot: -1,
          tokens_predicted: counts[i],
          tokens_evaluated: 0,
          ...(withProbs && ev.logprobs ? { completion_probabilities: probabilities(ev.logprobs, options) } : {}),
        });
      });
    jobs.push(host.submit(options, res, onToken).then(({ done }) => ({ done, options })));
  }
  const started = await Promise.all(jobs);
  if (sse) {
    try {
      for (const [i, { done, options }] of started.entries()) {
        const r = await done;
        const full = nativeResult(host, r, i, options, texts[i]!, false);
        sse.send({ ...full, content: '' });
      }
      sse.done(true);
    } catch (e) {
      if (e instanceof Cancelled) return;
      if (!sse.opened) throw e;
      const err = host.apiError(e);
      sse.fail(err instanceof ApiError ? err : new ApiError(500, (e as Error)?.message ?? String(e)));
    }
    return;
  }
  const results: Record<string, unknown>[] = [];
  for (const [i, { done, options }] of started.entries()) {
    const r = await host.result(done);
    if (!r) return;
    const full = nativeResult(host, r, i, options, texts[i]!, withProbs);
    results.push(fields.length > 0 ? pickFields(fields, full) : full);
  }
  sendJson(res, 200, many ? results : results[0]);
}

export async function completion(host: GenerationHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  host.requireGenerator();
  await run(host, c, b, await requestPrompts(host, b.prompt, 'prompt', 64, true));
}

export async function infill(host: GenerationHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  host.requireGenerator();
  for (const k of ['input_prefix', 'input_suffix']) {
    if (b[k] !== undefined && typeof b[k] !== 'string') throw bad(`'${k}' must be a string`, k);
  }
  if (b.prompt !== undefined && typeof b.prompt !== 'string') throw bad("'prompt' must be a string", 'prompt');
  const prompt = (b.prompt as string | undefined) ?? '';
  await run(
    host,
    c,
    { ...b, prompt },
    { list: [prompt], many: false },
    {
      input_prefix: (b.input_prefix as string | undefined) ?? '',
      input_suffix: (b.input_suffix as string | undefined) ?? '',
    },
  );
}

export async function applyTemplate(host: GenerationHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  if (!Array.isArray(b.messages)) throw bad("'messages' must be an array", 'messages');
  oa.checkChatMessages(b.messages);
  checkMessageModalities(b.messages, host.modalities);
  // a last assistant message is a reply to continue, as in a chat request (llama-server's prefill)
  const prefill = assistantPrefill(b.messages as ChatMessage[]);
  const tools =
    Array.isArray(b.tools) && b.tools.length > 0 && b.tool_choice !== 'none' ? (b.tools as Tool[]) : undefined;
  const f = await host.ctx.formatChat(prefill?.messages ?? (b.messages as ChatMessage[]), null, {
    jinja: true,
    ...(tools ? { tools, generic_tool_system: true } : {}),
    ...(typeof b.tool_choice === 'string' ? { tool_choice: b.tool_choice } : {}),
    ...(typeof b.enable_thinking === 'boolean'
      ? { enable_thinking: b.enable_thinking }
      : host.requestDefaults.enable_thinking !== undefined
        ? { enable_thinking: host.requestDefaults.enable_thinking }
        : {}),
    ...(typeof b.chat_template_kwargs === 'object' && b.chat_template_kwargs !== null
      ? { chat_template_kwargs: b.chat_template_kwargs as Record<string, unknown> }
      : {}),
    ...(typeof b.add_generation_prompt === 'boolean' ? { add_generation_prompt: b.add_generation_prompt } : {}),
    ...(host.templateLimits ? { limits: host.templateLimits } : {}),
  });
  sendJson(c.res, 200, { prompt: f.prompt + (prefill?.text ?? '') });
}

export function props(host: GenerationHost, c: RequestContext): void {
  const t = host.chatTemplateInfo;
  sendJson(c.res, 200, {
    default_generation_settings: {
      id: 0,
      id_task: -1,
      n_ctx: host.nCtxSlot,
      speculative: false,
      is_processing: false,
      params: generationSettings(host.requestDefaults as Record<string, unknown>, host.nCtxSlot),
    },
    total_slots: host.parallel,
    model_alias: host.modelId,
    model_path: host.modelPath,
    modalities: host.modalities,
    endpoint_slots: host.slotsEndpoint,
    chat_template: t.chat_template,
    bos_token: t.bos_token,
    eos_token: t.eos_token,
    build_info: `llama-ts ${host.version}`,
    is_sleeping: host.sleeping,
  });
}

/** GET /slots: llama-server's slot list (is_processing and the running request's counts from the parallel status). */
export async function slots(host: GenerationHost, c: RequestContext): Promise<void> {
  if (!host.slotsEndpoint) {
    throw new ApiError(
      501,
      'this server does not serve slot information: start it with --slots',
      'not_supported_error',
    );
  }
  host.requireGenerator();
  const st = await host.ctx.parallel.fetchStatus();
  // a balancer's probe: a 503 while every slot is busy
  if (queryFlag(c.url, 'fail_on_no_slot') && st.slots.every((s) => s.is_processing)) {
    throw new ApiError(503, 'no slot available');
  }
  sendJson(
    c.res,
    200,
    st.slots.map((s) => ({
      id: s.id,
      id_task: s.request_id,
      n_ctx: s.n_ctx,
      speculative: false,
      is_processing: s.is_processing,
      // llama-ts: where the slot is, and what its memory holds
      state: s.state,
      n_prompt_tokens: s.n_prompt_tokens,
      n_cached: s.n_cached,
      // as llama-server: a slot's params once it holds a request
      ...(s.is_processing ? { params: generationSettings({}, s.n_ctx) } : {}),
      next_token: [
        {
          has_next_token: s.state === 'generating',
          has_new_line: false,
          n_remain: -1,
          n_decoded: s.n_decoded,
          stopping_word: '',
        },
      ],
    })),
  );
}

/** A file name in the slot folder: a plain name (no folders, no "..", no control characters). */
function slotFile(dir: string, filename: unknown): string {
  if (typeof filename !== 'string' || filename === '' || filename.length > 255) {
    throw bad("'filename' must be a file name", 'filename');
  }
  if (
    [...filename].some((ch) => ch === '/' || ch === '\\' || ch.charCodeAt(0) < 0x20) ||
    filename === '.' ||
    filename === '..' ||
    filename.startsWith('.')
  ) {
    throw bad(
      `'filename' ${JSON.stringify(filename)} is not a plain file name (no folders, no leading dot)`,
      'filename',
    );
  }
  return join(dir, filename);
}

export async function slotAction(host: GenerationHost, c: RequestContext, dir: string | undefined): Promise<void> {
  host.requireGenerator();
  if (!dir) {
    throw new ApiError(501, 'slot actions are off: start the server with --slot-save-path DIR', 'not_supported_error');
  }
  const id = Number(c.params.id);
  if (!Number.isInteger(id) || id < 0 || id >= host.parallel) {
    throw bad(`no slot ${JSON.stringify(c.params.id)} (slots 0..${host.parallel - 1})`, 'id_slot');
  }
  const action = c.url.searchParams.get('action');
  const b = c.body === undefined ? {} : oa.asObject(c.body);
  if (action === 'erase') {
    const r = await host.ctx.parallel.slotAction('erase', id);
    sendJson(c.res, 200, { id_slot: id, n_erased: r.n_erased ?? 0 });
    return;
  }
  if (action !== 'save' && action !== 'restore') {
    throw bad("'action' must be save, restore or erase", 'action');
  }
  const path = slotFile(dir, b.filename);
  const r = await host.ctx.parallel.slotAction(action, id, path);
  const ms = Math.round((r.ms ?? 0) * 1000) / 1000;
  if (action === 'save') {
    sendJson(c.res, 200, { id_slot: id, filename: b.filename, n_saved: r.n_saved, timings: { save_ms: ms } });
  } else {
    sendJson(c.res, 200, { id_slot: id, filename: b.filename, n_restored: r.n_restored, timings: { restore_ms: ms } });
  }
}
