// Anthropic's Messages API (POST /v1/messages, /v1/messages/count_tokens) on the chat
// path, so tools written for Anthropic's SDK can point at a local model: `system`, text,
// tool_use and tool_result blocks (and thinking blocks) become chat messages; tools
// (`input_schema`), tool_choice (auto, any, tool, none) and `thinking` (a budget) map to
// the library's options; the reply is content blocks (thinking, text, tool_use) with
// Anthropic's stop reasons and usage, or its stream of events (message_start,
// content_block_start / _delta / _stop, message_delta, message_stop). Errors take
// Anthropic's shape ({ type: 'error', error: { type, message } }).
import type { LlamaCompletionResult, LlamaCompletionToken } from '../api/index.js';
import type { ChatDelta, ChatMessage, ChatMessagePart, Tool } from '../chat/index.js';
import { Cancelled, type GenerationHost } from './host.js';
import { ApiError, type RequestContext, sendJson } from './http.js';
import { checkMessageModalities } from './media.js';
import * as oa from './openai.js';
import { SseWriter } from './sse.js';

type Body = oa.Body;

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

function bad(message: string, param: string): ApiError {
  return new ApiError(400, message, undefined, param);
}

/** Anthropic's error types by HTTP status. */
function errorType(status: number): string {
  switch (status) {
    case 400:
    case 413:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 429:
      return 'rate_limit_error';
    case 503:
      return 'overloaded_error';
    default:
      return 'api_error';
  }
}

/** An error in Anthropic's shape. */
export function errorBody(e: ApiError): unknown {
  return { type: 'error', error: { type: errorType(e.status), message: e.message } };
}

/** Text of a content (a string, or text blocks). */
function blocksText(content: unknown, at: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad(`'${at}' must be a string or an array of blocks`, at);
  return content
    .map((b, i) => {
      if (isObject(b) && b.type === 'text' && typeof b.text === 'string') return b.text;
      throw bad(`'${at}[${i}]': only text blocks are supported here`, `${at}[${i}]`);
    })
    .join('');
}

/** `system` and `messages` as chat messages. */
export function chatMessages(b: Body): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (b.system !== undefined && b.system !== null)
    out.push({ role: 'system', content: blocksText(b.system, 'system') });
  // an empty list is accepted, as llama-server does (its template renders the generation prompt)
  if (!Array.isArray(b.messages)) throw bad("'messages' must be an array", 'messages');
  for (const [i, m] of b.messages.entries()) {
    const at = `messages[${i}]`;
    if (!isObject(m) || (m.role !== 'user' && m.role !== 'assistant')) {
      throw bad(`'${at}.role' must be 'user' or 'assistant'`, `${at}.role`);
    }
    if (typeof m.content === 'string') {
      out.push({ role: m.role, content: m.content });
      continue;
    }
    if (!Array.isArray(m.content)) throw bad(`'${at}.content' must be a string or an array of blocks`, `${at}.content`);
    let text = '';
    // images, in order with the text around them (OpenAI parts, as llama-server converts them)
    const parts: ChatMessagePart[] = [];
    let reasoning = '';
    const calls: NonNullable<ChatMessage['tool_calls']> = [];
    const results: ChatMessage[] = [];
    for (const [j, blk] of m.content.entries()) {
      const bat = `${at}.content[${j}]`;
      if (!isObject(blk)) throw bad(`'${bat}' must be a block`, bat);
      switch (blk.type) {
        case 'text':
          if (typeof blk.text !== 'string') throw bad(`'${bat}.text' must be a string`, `${bat}.text`);
          text += blk.text;
          if (parts.at(-1)?.type === 'text') (parts.at(-1) as ChatMessagePart).text += blk.text;
          else parts.push({ type: 'text', text: blk.text });
          break;
        case 'thinking':
          if (typeof blk.thinking === 'string') reasoning += blk.thinking;
          break;
        case 'redacted_thinking':
          break;
        case 'image':
          if (m.role !== 'user') throw bad(`'${bat}': image blocks belong to user messages`, bat);
          parts.push({ type: 'image_url', image_url: { url: imageSourceUrl(blk.source, `${bat}.source`) } });
          break;
        case 'tool_use':
          if (m.role !== 'assistant') throw bad(`'${bat}': tool_use blocks belong to assistant messages`, bat);
          if (typeof blk.id !== 'string' || typeof blk.name !== 'string') {
            throw bad(`'${bat}': tool_use needs id and name`, bat);
          }
          calls.push({
            id: blk.id,
            type: 'function',
            function: { name: blk.name, arguments: JSON.stringify(blk.input ?? {}) },
          });
          break;
        case 'tool_result':
          if (m.role !== 'user') throw bad(`'${bat}': tool_result blocks belong to user messages`, bat);
          if (typeof blk.tool_use_id !== 'string')
            throw bad(`'${bat}.tool_use_id' must be a string`, `${bat}.tool_use_id`);
          results.push({
            role: 'tool',
            tool_call_id: blk.tool_use_id,
            content: blk.content === undefined ? '' : blocksText(blk.content, `${bat}.content`),
          });
          break;
        default:
          throw bad(`'${bat}': blocks of type '${String(blk.type)}' are not supported`, `${bat}.type`);
      }
    }
    if (m.role === 'user') {
      out.push(...results);
      if (parts.some((p) => p.type === 'image_url')) out.push({ role: 'user', content: parts });
      else if (text !== '' || results.length === 0) out.push({ role: 'user', content: text });
    } else {
      const msg: ChatMessage = { role: 'assistant', content: text === '' && calls.length > 0 ? null : text };
      if (calls.length > 0) msg.tool_calls = calls;
      if (reasoning !== '') msg.reasoning_content = reasoning;
      out.push(msg);
    }
  }
  return out;
}

/** An image block's source as a URL: base64 data as a data URL, or the block's own URL. */
function imageSourceUrl(src: unknown, at: string): string {
  if (!isObject(src)) throw bad(`'${at}' must be an object`, at);
  if (src.type === 'base64') {
    if (typeof src.data !== 'string' || typeof src.media_type !== 'string')
      throw bad(`'${at}': a base64 source needs media_type and data`, at);
    return `data:${src.media_type};base64,${src.data}`;
  }
  if (src.type === 'url' && typeof src.url === 'string') return src.url;
  throw bad(`'${at}.type' must be 'base64' or 'url'`, `${at}.type`);
}

function chatTools(v: unknown): Tool[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad("'tools' must be an array", 'tools');
  return v.map((t, i) => {
    if (!isObject(t) || typeof t.name !== 'string' || (t.type !== undefined && t.type !== 'custom')) {
      throw bad(`'tools[${i}]': only custom tools ({ name, description, input_schema }) are supported`, `tools[${i}]`);
    }
    return {
      type: 'function',
      function: {
        name: t.name,
        ...(typeof t.description === 'string' ? { description: t.description } : {}),
        parameters: isObject(t.input_schema) ? t.input_schema : { type: 'object' },
      },
    };
  });
}

/** The request's options (as chat-completion fields for the option table). */
function requestBody(b: Body, forCount = false): Body {
  const body: Body = { messages: chatMessages(b) };
  const tools = chatTools(b.tools);
  if (tools && tools.length > 0) body.tools = tools;
  const tc = b.tool_choice;
  if (tc !== undefined && tc !== null) {
    if (!isObject(tc)) throw bad("'tool_choice' must be an object", 'tool_choice');
    switch (tc.type) {
      case 'auto':
        body.tool_choice = 'auto';
        break;
      case 'any':
        body.tool_choice = 'required';
        break;
      case 'none':
        body.tool_choice = 'none';
        break;
      case 'tool':
        if (typeof tc.name !== 'string') throw bad("'tool_choice.name' must be a string", 'tool_choice.name');
        body.tool_choice = { type: 'function', function: { name: tc.name } };
        break;
      default:
        throw bad("'tool_choice.type' must be auto, any, tool or none", 'tool_choice.type');
    }
    if (tc.disable_parallel_tool_use === true) body.parallel_tool_calls = false;
  }
  // Anthropic allows several tool_use blocks in a reply unless told not to
  if (tools && body.parallel_tool_calls === undefined) body.parallel_tool_calls = true;
  // passed on as llama-server does (a template switch changes the prompt, so the count too)
  if (b.chat_template_kwargs !== undefined) body.chat_template_kwargs = b.chat_template_kwargs;
  if (forCount) return body;
  if (!Number.isInteger(b.max_tokens) || (b.max_tokens as number) < 1) {
    throw bad("'max_tokens' is required: a positive integer", 'max_tokens');
  }
  body.max_tokens = b.max_tokens;
  if (b.stop_sequences !== undefined) body.stop = b.stop_sequences;
  for (const k of ['temperature', 'top_p', 'top_k']) if (b[k] !== undefined) body[k] = b[k];
  const th = b.thinking;
  if (isObject(th)) {
    if (th.type === 'enabled') {
      body.enable_thinking = true;
      if (b.thinking && typeof th.budget_tokens === 'number') body.thinking_budget_tokens = th.budget_tokens;
    } else if (th.type === 'disabled') body.enable_thinking = false;
  }
  return body;
}

/** tool_use only for a reply that ended with its calls; one cut by max_tokens is max_tokens (a call in it unfinished). */
function stopReason(r: LlamaCompletionResult, stops: unknown): { reason: string; sequence: string | null } {
  if (!r.stopped_eos && !r.stopped_word) return { reason: 'max_tokens', sequence: null };
  if ((r.tool_calls ?? []).length > 0) return { reason: 'tool_use', sequence: null };
  if (r.stopped_word) {
    const asked = Array.isArray(stops) ? stops : typeof stops === 'string' ? [stops] : [];
    if (asked.includes(r.stopping_word)) return { reason: 'stop_sequence', sequence: r.stopping_word };
    return { reason: 'end_turn', sequence: null };
  }
  return { reason: 'end_turn', sequence: null };
}

function usageOf(r: LlamaCompletionResult): Record<string, number> {
  const u = oa.usage(r);
  return {
    input_tokens: u.prompt_tokens - r.tokens_cached,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: r.tokens_cached,
    output_tokens: u.completion_tokens,
  };
}

function parseInput(args: string): unknown {
  try {
    const v = JSON.parse(args);
    return typeof v === 'object' && v !== null ? v : {};
  } catch {
    return {};
  }
}

export async function messages(host: GenerationHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  host.requireGenerator();
  const body = requestBody(b);
  const options = oa.generationOptions(body, -1);
  const id = oa.newId('msg').replace('-', '_');
  const model = host.modelId;
  const res = c.res;
  const base = { id, type: 'message', role: 'assistant', model };
  if (b.stream === true) {
    // message_start reports the prompt's size (llama-server's), known here before generation starts
    const inputTokens = await promptTokens(host, body);
    const sse = new SseWriter(res, undefined, errorBody);
    let block = -1;
    let kind: 'thinking' | 'text' | 'tool_use' | undefined;
    const send = (type: string, data: Record<string, unknown>) => sse.send({ type, ...data }, type);
    const start = () => {
      if (sse.opened) return;
      send('message_start', {
        message: {
          ...base,
          content: [],
          stop_reason: null,
          stop_sequence: null,
          usage: {
            input_tokens: inputTokens,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: 0,
          },
        },
      });
      send('ping', {});
    };
    const open = (k: NonNullable<typeof kind>, contentBlock: Record<string, unknown>) => {
      if (kind !== undefined) send('content_block_stop', { index: block });
      block++;
      kind = k;
      send('content_block_start', { index: block, content_block: contentBlock });
    };
    const add = (d: ChatDelta) => {
      if (d.reasoning_content) {
        if (kind !== 'thinking') open('thinking', { type: 'thinking', thinking: '', signature: '' });
        send('content_block_delta', { index: block, delta: { type: 'thinking_delta', thinking: d.reasoning_content } });
      }
      if (d.content) {
        if (kind !== 'text') open('text', { type: 'text', text: '' });
        send('content_block_delta', { index: block, delta: { type: 'text_delta', text: d.content } });
      }
      for (const t of d.tool_calls ?? []) {
        if (t.function.name !== undefined) {
          open('tool_use', { type: 'tool_use', id: t.id ?? oa.newId('toolu'), name: t.function.name, input: {} });
        }
        if (t.function.arguments) {
          send('content_block_delta', {
            index: block,
            delta: { type: 'input_json_delta', partial_json: t.function.arguments },
          });
        }
      }
    };
    const onToken = (ev: LlamaCompletionToken) => {
      if (!ev.delta) return;
      start();
      add(ev.delta);
    };
    const { done } = await host.submit(options, res, onToken);
    try {
      const r = await done;
      start();
      if (kind === undefined) open('text', { type: 'text', text: '' });
      send('content_block_stop', { index: block });
      const stop = stopReason(r, b.stop_sequences);
      send('message_delta', { delta: { stop_reason: stop.reason, stop_sequence: stop.sequence }, usage: usageOf(r) });
      send('message_stop', {});
      sse.done(true);
    } catch (e) {
      if (e instanceof Cancelled) return;
      if (!sse.opened) throw e;
      const err = host.apiError(e);
      sse.fail(err instanceof ApiError ? err : new ApiError(500, (e as Error)?.message ?? String(e)), 'error');
    }
    return;
  }
  const { done } = await host.submit(options, res);
  const r = await host.result(done);
  if (!r) return;
  const content: Record<string, unknown>[] = [];
  if (r.reasoning_content) content.push({ type: 'thinking', thinking: r.reasoning_content, signature: '' });
  const calls = r.tool_calls ?? [];
  if (r.content || calls.length === 0) content.push({ type: 'text', text: r.content ?? r.text });
  for (const call of calls) {
    content.push({
      type: 'tool_use',
      id: call.id ?? oa.newId('toolu'),
      name: call.function.name,
      input: parseInput(call.function.arguments),
    });
  }
  const stop = stopReason(r, b.stop_sequences);
  sendJson(res, 200, { ...base, content, stop_reason: stop.reason, stop_sequence: stop.sequence, usage: usageOf(r) });
}

/** The prompt's tokens (the chat template, tools included), as Anthropic's count_tokens. */
export async function countTokens(host: GenerationHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  sendJson(c.res, 200, { input_tokens: await promptTokens(host, requestBody(b, true)) });
}

/** How many tokens the request's prompt is (its messages and tools through the chat template). */
async function promptTokens(host: GenerationHost, body: Body): Promise<number> {
  const choice = body.tool_choice;
  const tools = choice === 'none' ? undefined : (body.tools as Tool[] | undefined);
  checkMessageModalities(body.messages as unknown[], host.modalities);
  const f = await host.ctx.formatChat(body.messages as ChatMessage[], null, {
    jinja: true,
    ...(tools ? { tools, generic_tool_system: true } : {}),
    ...(typeof choice === 'string' ? { tool_choice: choice } : {}),
    ...(host.templateLimits ? { limits: host.templateLimits } : {}),
  });
  const { tokens } = await host.ctx.tokenize(f.prompt, { add_special: true, parse_special: true });
  return tokens.length;
}
