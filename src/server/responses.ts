// OpenAI's Responses API (POST /v1/responses) on the chat path: `input` (text, or items:
// messages, function calls and their outputs) and `instructions` become chat messages;
// function tools, tool_choice and `text.format` (a JSON schema) map to the library's
// options; the reply comes back as output items (reasoning, message, function calls), or
// as the API's stream of events (response.created, output_item.added,
// output_text.delta, function_call_arguments.delta, …, response.completed). Stateless:
// nothing is stored, so `previous_response_id` is a 400 that says to send the whole
// conversation.
import type { LlamaCompletionResult, LlamaCompletionToken } from '../api/index.js';
import type { ChatDelta, ChatMessage, ChatMessagePart, Tool } from '../chat/index.js';
import { Cancelled, type GenerationHost } from './host.js';
import { ApiError, type RequestContext, sendJson } from './http.js';
import * as oa from './openai.js';
import { SseWriter } from './sse.js';

type Body = oa.Body;

function bad(message: string, param: string): ApiError {
  return new ApiError(400, message, undefined, param);
}

const isObject = (v: unknown): v is Body => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Text of content parts (input_text, output_text, text, refusal), or a string. */
function partsText(content: unknown, param: string): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw bad(`'${param}' must be a string or an array of content parts`, param);
  let out = '';
  for (const [i, p] of content.entries()) {
    if (!isObject(p)) throw bad(`'${param}[${i}]' must be a content part`, `${param}[${i}]`);
    if (typeof p.text === 'string') out += p.text;
    else if (typeof p.refusal === 'string') out += p.refusal;
    else
      throw bad(`'${param}[${i}]': content of type '${String(p.type)}' is not supported (text only)`, `${param}[${i}]`);
  }
  return out;
}

const hasImage = (c: unknown) => Array.isArray(c) && c.some((p) => isObject(p) && p.type === 'input_image');

/** A user message's parts with images: input_image as OpenAI image_url parts, text as text parts. */
function userParts(content: unknown[], param: string): ChatMessagePart[] {
  return content.map((p, i) => {
    const at = `${param}[${i}]`;
    if (isObject(p) && p.type === 'input_image') {
      if (typeof p.image_url !== 'string')
        throw bad(
          `'${at}.image_url' must be a URL (file_id references need stored files, and this server stores none)`,
          `${at}.image_url`,
        );
      return { type: 'image_url', image_url: { url: p.image_url } };
    }
    return { type: 'text', text: partsText([p], param) };
  });
}

/** `instructions` and `input` as chat messages. */
export function inputMessages(b: Body): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (b.instructions !== undefined && b.instructions !== null) {
    if (typeof b.instructions !== 'string') throw bad("'instructions' must be a string", 'instructions');
    out.push({ role: 'system', content: b.instructions });
  }
  const input = b.input;
  if (typeof input === 'string') {
    out.push({ role: 'user', content: input });
    return out;
  }
  if (!Array.isArray(input) || input.length === 0) {
    throw bad("'input' must be a string or a non-empty array of items", 'input');
  }
  let reasoning: string | undefined;
  const lastAssistant = (): ChatMessage => {
    const last = out[out.length - 1];
    if (last?.role === 'assistant') return last;
    const m: ChatMessage = { role: 'assistant', content: null };
    out.push(m);
    return m;
  };
  for (const [i, item] of input.entries()) {
    const at = `input[${i}]`;
    if (!isObject(item)) throw bad(`'${at}' must be an item object`, at);
    const type = item.type ?? (item.role !== undefined ? 'message' : undefined);
    switch (type) {
      case 'message': {
        const role = item.role === 'developer' ? 'system' : item.role;
        if (role !== 'user' && role !== 'assistant' && role !== 'system') {
          throw bad(`'${at}.role' must be user, assistant, system or developer`, `${at}.role`);
        }
        if (role === 'user' && hasImage(item.content)) {
          out.push({ role, content: userParts(item.content as unknown[], `${at}.content`) });
          break;
        }
        const text = partsText(item.content, `${at}.content`);
        if (role === 'assistant') {
          const m = lastAssistant();
          m.content = (typeof m.content === 'string' ? m.content : '') + text;
          if (reasoning !== undefined) {
            m.reasoning_content = reasoning;
            reasoning = undefined;
          }
        } else out.push({ role, content: text });
        break;
      }
      case 'function_call': {
        if (typeof item.name !== 'string' || typeof item.call_id !== 'string') {
          throw bad(`'${at}': a function_call needs name and call_id`, at);
        }
        const m = lastAssistant();
        m.tool_calls = [
          ...(m.tool_calls ?? []),
          {
            id: item.call_id,
            type: 'function',
            function: { name: item.name, arguments: typeof item.arguments === 'string' ? item.arguments : '{}' },
          },
        ];
        break;
      }
      case 'function_call_output': {
        if (typeof item.call_id !== 'string') throw bad(`'${at}': a function_call_output needs call_id`, at);
        out.push({ role: 'tool', tool_call_id: item.call_id, content: partsText(item.output ?? '', `${at}.output`) });
        break;
      }
      case 'reasoning': {
        const parts = Array.isArray(item.content) ? item.content : Array.isArray(item.summary) ? item.summary : [];
        reasoning = parts.map((p) => (isObject(p) && typeof p.text === 'string' ? p.text : '')).join('');
        break;
      }
      case 'item_reference':
        throw bad(`'${at}': item references need stored responses, and this server stores none`, at);
      default:
        throw bad(`'${at}': items of type '${String(type)}' are not supported`, `${at}.type`);
    }
  }
  if (!out.some((m) => m.role !== 'system')) throw bad("'input' has no message", 'input');
  return out;
}

/** Function tools in the Responses shape ({type, name, parameters}) as chat tools. */
function chatTools(v: unknown): Tool[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) throw bad("'tools' must be an array", 'tools');
  return v.map((t, i) => {
    if (!isObject(t) || t.type !== 'function') {
      throw bad(
        `'tools[${i}]': only function tools are supported (not '${String(isObject(t) ? t.type : t)}')`,
        `tools[${i}]`,
      );
    }
    if (typeof t.name !== 'string' || t.name === '')
      throw bad(`'tools[${i}].name' must be a string`, `tools[${i}].name`);
    return {
      type: 'function',
      function: {
        name: t.name,
        ...(typeof t.description === 'string' ? { description: t.description } : {}),
        ...(isObject(t.parameters) ? { parameters: t.parameters } : {}),
      },
    };
  });
}

function toolChoice(v: unknown): unknown {
  if (v === undefined || v === null || typeof v === 'string') return v;
  if (isObject(v) && v.type === 'function' && typeof v.name === 'string') {
    return { type: 'function', function: { name: v.name } };
  }
  throw bad("'tool_choice' must be 'auto', 'none', 'required' or { type: 'function', name }", 'tool_choice');
}

function responseFormat(text: unknown): unknown {
  if (text === undefined || text === null) return undefined;
  if (!isObject(text)) throw bad("'text' must be an object", 'text');
  const f = text.format;
  if (f === undefined || f === null) return undefined;
  if (!isObject(f)) throw bad("'text.format' must be an object", 'text.format');
  if (f.type === 'text') return undefined;
  if (f.type === 'json_object') return { type: 'json_object' };
  if (f.type === 'json_schema') {
    if (!isObject(f.schema)) throw bad("'text.format.schema' must be a JSON schema", 'text.format.schema');
    return { type: 'json_schema', json_schema: { name: f.name, schema: f.schema, strict: f.strict } };
  }
  throw bad(`'text.format.type' ${JSON.stringify(f.type)} is not supported`, 'text.format.type');
}

/** Fields of the Responses API that are not the option table's names (kept out of its mapping). */
const OWN = [
  'input',
  'instructions',
  'text',
  'reasoning',
  'tools',
  'tool_choice',
  'max_output_tokens',
  'stream',
  'store',
  'metadata',
  'user',
  'truncation',
  'include',
  'previous_response_id',
  'conversation',
  'top_logprobs',
  'prompt',
  'messages',
  'n',
  'response_format',
  'max_tokens',
];

const newId = (prefix: string) => oa.newId(prefix).replace('-', '_');

/** The response object around its output (status, usage, and the request's settings echoed). */
function responseObject(
  b: Body,
  id: string,
  model: string,
  created: number,
  status: string,
  output: unknown[],
  r?: LlamaCompletionResult,
): Record<string, unknown> {
  const incomplete = status === 'incomplete';
  const u = r ? oa.usage(r) : undefined;
  return {
    id,
    object: 'response',
    created_at: created,
    status,
    background: false,
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: typeof b.instructions === 'string' ? b.instructions : null,
    max_output_tokens: typeof b.max_output_tokens === 'number' ? b.max_output_tokens : null,
    model,
    output,
    parallel_tool_calls: b.parallel_tool_calls === true,
    previous_response_id: null,
    reasoning: { effort: isObject(b.reasoning) ? (b.reasoning.effort ?? null) : null, summary: null },
    store: false,
    temperature: typeof b.temperature === 'number' ? b.temperature : 1,
    text: isObject(b.text) ? b.text : { format: { type: 'text' } },
    tool_choice: b.tool_choice ?? 'auto',
    tools: Array.isArray(b.tools) ? b.tools : [],
    top_p: typeof b.top_p === 'number' ? b.top_p : 1,
    truncation: 'disabled',
    usage: u
      ? {
          input_tokens: u.prompt_tokens,
          input_tokens_details: { cached_tokens: u.prompt_tokens_details.cached_tokens },
          output_tokens: u.completion_tokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: u.total_tokens,
        }
      : null,
    metadata: isObject(b.metadata) ? b.metadata : {},
    user: typeof b.user === 'string' ? b.user : null,
  };
}

function logprobsOf(r: LlamaCompletionResult | undefined): unknown[] {
  return (r?.logprobs ?? []).map((e) => ({
    token: e.token,
    logprob: e.logprob,
    bytes: e.bytes,
    top_logprobs: (e.top_logprobs ?? []).map((t) => ({ token: t.token, logprob: t.logprob, bytes: t.bytes })),
  }));
}

/**
 * 'incomplete' for a reply stopped by max_output_tokens or the context, whatever it was
 * writing (a function call cut there is unfinished), as OpenAI's Responses API; else 'completed'.
 */
function responseStatus(r: LlamaCompletionResult): 'incomplete' | 'completed' {
  return oa.finishReason(r) === 'length' ? 'incomplete' : 'completed';
}

/** Output items, as the stream built them (same ids) or from a result. */
class Output {
  readonly items: Record<string, unknown>[] = [];
  reasoning: { index: number; text: string } | undefined;
  message: { index: number; text: string } | undefined;
  calls: { index: number; name: string; args: string; callId: string; itemId: string }[] = [];
  private seq = 0;
  /** The reply was cut (max_output_tokens): the item it was writing when cut closes 'incomplete'. */
  private cut = false;

  constructor(private readonly emit?: (type: string, data: Record<string, unknown>) => void) {}

  private send(type: string, data: Record<string, unknown>): void {
    this.emit?.(type, { type, sequence_number: this.seq++, ...data });
  }

  get sequence(): number {
    return this.seq;
  }

  event(type: string, data: Record<string, unknown>): void {
    this.send(type, data);
  }

  /** An item's status as it closes: 'incomplete' for the last one of a cut reply (OpenAI's). */
  private closedStatus(index: number): string {
    return this.cut && index === this.items.length - 1 ? 'incomplete' : 'completed';
  }

  private closed(index: number): boolean {
    const s = this.items[index]!.status;
    return s === 'completed' || s === 'incomplete';
  }

  private reasoningItem(done: boolean): Record<string, unknown> {
    const r = this.reasoning!;
    return {
      type: 'reasoning',
      id: this.items[r.index]!.id,
      summary: [],
      content: done ? [{ type: 'reasoning_text', text: r.text }] : [],
      ...(done ? { status: this.closedStatus(r.index) } : {}),
    };
  }

  private messageItem(done: boolean, logprobs: unknown[] = []): Record<string, unknown> {
    const m = this.message!;
    return {
      type: 'message',
      id: this.items[m.index]!.id,
      status: done ? this.closedStatus(m.index) : 'in_progress',
      role: 'assistant',
      content: done ? [{ type: 'output_text', text: m.text, annotations: [], logprobs }] : [],
    };
  }

  private open(item: Record<string, unknown>): number {
    const index = this.items.length;
    this.items.push(item);
    this.send('response.output_item.added', { output_index: index, item });
    return index;
  }

  private closeReasoning(): void {
    const r = this.reasoning;
    if (!r || this.closed(r.index)) return;
    const id = this.items[r.index]!.id as string;
    this.send('response.reasoning_text.done', { item_id: id, output_index: r.index, content_index: 0, text: r.text });
    this.items[r.index] = this.reasoningItem(true);
    this.send('response.output_item.done', { output_index: r.index, item: this.items[r.index] });
  }

  private closeMessage(logprobs: unknown[] = []): void {
    const m = this.message;
    if (!m || this.closed(m.index)) return;
    const id = this.items[m.index]!.id as string;
    const part = { type: 'output_text', text: m.text, annotations: [], logprobs };
    this.send('response.output_text.done', {
      item_id: id,
      output_index: m.index,
      content_index: 0,
      text: m.text,
      logprobs,
    });
    this.send('response.content_part.done', { item_id: id, output_index: m.index, content_index: 0, part });
    this.items[m.index] = this.messageItem(true, logprobs);
    this.send('response.output_item.done', { output_index: m.index, item: this.items[m.index] });
  }

  private closeCall(i: number): void {
    const c = this.calls[i]!;
    const item = this.items[c.index]!;
    if (this.closed(c.index)) return;
    this.send('response.function_call_arguments.done', {
      item_id: c.itemId,
      output_index: c.index,
      name: c.name,
      arguments: c.args,
    });
    this.items[c.index] = { ...item, arguments: c.args, status: this.closedStatus(c.index) };
    this.send('response.output_item.done', { output_index: c.index, item: this.items[c.index] });
  }

  private openMessage(): void {
    if (this.message) return;
    this.message = { index: -1, text: '' };
    this.message.index = this.open({
      type: 'message',
      id: newId('msg'),
      status: 'in_progress',
      role: 'assistant',
      content: [],
    });
    this.send('response.content_part.added', {
      item_id: this.items[this.message.index]!.id,
      output_index: this.message.index,
      content_index: 0,
      part: { type: 'output_text', text: '', annotations: [], logprobs: [] },
    });
  }

  /** A chat delta: items opened, grown and closed in order. */
  add(d: ChatDelta): void {
    if (d.reasoning_content) {
      if (!this.reasoning) {
        this.reasoning = { index: -1, text: '' };
        this.reasoning.index = this.open({ type: 'reasoning', id: newId('rs'), summary: [], content: [] });
      }
      this.reasoning.text += d.reasoning_content;
      this.send('response.reasoning_text.delta', {
        item_id: this.items[this.reasoning.index]!.id,
        output_index: this.reasoning.index,
        content_index: 0,
        delta: d.reasoning_content,
      });
    }
    if (d.content) {
      this.closeReasoning();
      this.openMessage();
      this.message!.text += d.content;
      this.send('response.output_text.delta', {
        item_id: this.items[this.message!.index]!.id,
        output_index: this.message!.index,
        content_index: 0,
        delta: d.content,
        logprobs: [],
      });
    }
    for (const t of d.tool_calls ?? []) {
      let c = this.calls[t.index];
      if (!c) {
        this.closeReasoning();
        this.closeMessage();
        if (t.index > 0) this.closeCall(t.index - 1);
        const itemId = newId('fc');
        const callId = t.id ?? newId('call');
        const name = t.function.name ?? '';
        c = { index: -1, name, args: '', callId, itemId };
        this.calls[t.index] = c;
        c.index = this.open({
          type: 'function_call',
          id: itemId,
          call_id: callId,
          name,
          arguments: '',
          status: 'in_progress',
        });
      }
      const more = t.function.arguments ?? '';
      if (more) {
        c.args += more;
        this.send('response.function_call_arguments.delta', { item_id: c.itemId, output_index: c.index, delta: more });
      }
    }
  }

  /**
   * Closes every open item; a reply with nothing gets an empty message. `cut`: the reply
   * stopped at max_output_tokens (the item being written is incomplete, a call in it too).
   */
  finish(r: LlamaCompletionResult, cut: boolean): void {
    this.cut = cut;
    if (!this.message && this.calls.length === 0) {
      this.closeReasoning();
      this.openMessage();
    }
    this.closeReasoning();
    this.closeMessage(logprobsOf(r));
    for (let i = 0; i < this.calls.length; i++) this.closeCall(i);
  }
}

export async function create(host: GenerationHost, c: RequestContext): Promise<void> {
  const b = oa.asObject(c.body);
  host.requireGenerator();
  for (const key of ['previous_response_id', 'conversation']) {
    if (b[key] !== undefined && b[key] !== null) {
      throw bad(
        `'${key}': this server stores no responses; send the whole conversation in 'input' (with 'store': false)`,
        key,
      );
    }
  }
  const messages = inputMessages(b);
  const tools = chatTools(b.tools);
  const body: Body = {};
  for (const [k, v] of Object.entries(b)) if (!OWN.includes(k)) body[k] = v;
  body.messages = messages;
  if (tools) body.tools = tools;
  const choice = toolChoice(b.tool_choice);
  if (choice !== undefined) body.tool_choice = choice;
  const rf = responseFormat(b.text);
  if (rf) body.response_format = rf;
  if (b.max_output_tokens !== undefined && b.max_output_tokens !== null) body.max_tokens = b.max_output_tokens;
  if (isObject(b.reasoning) && typeof b.reasoning.effort === 'string') body.reasoning_effort = b.reasoning.effort;
  const wantLogprobs = Array.isArray(b.include) && b.include.includes('message.output_text.logprobs');
  const top = b.top_logprobs;
  if (top !== undefined && top !== null && (!Number.isInteger(top) || (top as number) < 0 || (top as number) > 20)) {
    throw bad("'top_logprobs' must be an integer in [0, 20]", 'top_logprobs');
  }
  const options = oa.generationOptions(body, wantLogprobs || top !== undefined ? ((top as number) ?? 0) : -1);

  const id = newId('resp');
  const created = Math.floor(Date.now() / 1000);
  const model = host.modelId;
  const res = c.res;
  if (b.stream === true) {
    const sse = new SseWriter(res, undefined, (e) => ({
      type: 'error',
      code: e.type,
      message: e.message,
      param: e.param,
      sequence_number: 0,
    }));
    const out = new Output((type, data) => sse.send(data, type));
    const start = () => {
      if (sse.opened) return;
      const shell = responseObject(b, id, model, created, 'in_progress', []);
      out.event('response.created', { response: shell });
      out.event('response.in_progress', { response: shell });
    };
    const onToken = (ev: LlamaCompletionToken) => {
      if (!ev.delta) return;
      start();
      out.add(ev.delta);
    };
    const { done } = await host.submit(options, res, onToken);
    try {
      const r = await done;
      start();
      const status = responseStatus(r);
      out.finish(r, status === 'incomplete');
      out.event(`response.${status}`, { response: responseObject(b, id, model, created, status, out.items, r) });
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
  const out = new Output();
  if (r.reasoning_content) out.add({ reasoning_content: r.reasoning_content });
  if (r.content) out.add({ content: r.content });
  for (const [index, call] of (r.tool_calls ?? []).entries()) {
    out.add({
      tool_calls: [
        {
          index,
          ...(call.id ? { id: call.id } : {}),
          type: 'function',
          function: { name: call.function.name, arguments: call.function.arguments },
        },
      ],
    });
  }
  const status = responseStatus(r);
  out.finish(r, status === 'incomplete');
  const response = responseObject(b, id, model, created, status, out.items, r);
  const text = out.message?.text;
  sendJson(res, 200, text !== undefined ? { ...response, output_text: text } : response);
}
