// A chat reply as it streams: reasoning, content and tool calls, for the library's token
// events and results and the server's deltas alike. `ChatOutputParser.update(text)` reads
// the reply so far and returns what can be known for sure:
//   - a <think> block's text (reasoning.ts) while it is written (trimmed, and the end tag
//     never shown half written);
//   - content up to where a tool call might begin (text that could be the start of a
//     call marker, and trailing whitespace that a call would trim, are held back);
//   - each tool call once its name is complete (a name cut short lists no call, as in
//     llama.cpp), with arguments `{` until they begin, then as compact JSON text as far as
//     written (a string of JSON arguments once complete), so every later state
//     extends the earlier one and `chatDelta` can stream the difference as OpenAI's
//     `delta.content` / `delta.reasoning_content` / `delta.tool_calls[i].function.arguments`.
// `update(text, true)` reads the reply as finished: what was held back is settled, and the
// result's content, reasoning and calls are that (so streamed and non-streamed replies are
// the same). `cut(text)` reads a reply stopped before its end (max_tokens): nothing is
// settled or completed, a call stays as far as written. Call ids are made once per call
// and kept.
//
// Formats (tool-calls.ts names them): hermes `<tool_call>{…}</tool_call>`, mistral
// `[TOOL_CALLS][{…}]` (or `name[ARGS]{…}`), llama3 (a reply that is call JSON, or
// `<|python_tag|>` then calls; Llama's builtin `tool.call(…)` / code forms at the end). A
// format this file does not read incrementally is parsed whole at the end (parseToolCalls).
import { compactJson, partialString, readArray, readObject, valueEnd } from './partial-json.js';
import { THINK_END, THINK_START } from './reasoning.js';
import { parseToolCalls, randomToolCallId, type ToolCallFormat } from './tool-calls.js';
import type { ToolCall } from './types.js';

export interface ChatOutputOptions {
  /** The tool-call format to read (undefined: the reply is content, no calls). */
  tools?: ToolCallFormat | undefined;
  /** Split a <think> block off into reasoning_content (reasoning_format other than 'none'). */
  reasoning?: boolean;
  /** The prompt opened the block: the reply starts inside it (when `reasoning`, it is split off). */
  thinkingForcedOpen?: boolean;
  thinkStart?: string;
  thinkEnd?: string;
  /** Id for a call that has none (default: 9 random letters and digits). */
  makeId?: () => string;
}

/** A reply as read so far (or as finished). */
export interface ChatOutput {
  content: string;
  reasoning_content?: string;
  tool_calls: ToolCall[];
}

/** One tool call's part of a delta (OpenAI's shape). */
export interface ChatToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments?: string };
}

/** What a reply gained between two reads (OpenAI's streaming delta, without its role). */
export interface ChatDelta {
  content?: string;
  reasoning_content?: string;
  tool_calls?: ChatToolCallDelta[];
}

/** A call as read so far: its name once complete, its arguments as far as written. */
interface PartialCall {
  name: string;
  args: string;
  id?: string;
}

/** Where reading stopped: calls found, content around them, and whether more may come. */
interface ToolRead {
  /** Content before the first call (untrimmed). */
  before: string;
  /** Content after calls (only known at the end). */
  after: string;
  calls: PartialCall[];
}

/** Length of the longest suffix of `text` that is a proper prefix of one of `words`. */
function heldSuffix(text: string, words: readonly string[]): number {
  let best = 0;
  for (const w of words) {
    for (let n = Math.min(w.length - 1, text.length); n > best; n--) {
      if (text.endsWith(w.slice(0, n))) {
        best = n;
        break;
      }
    }
  }
  return best;
}

/** A call object being written: name and arguments (keys `arguments` or `parameters`; OpenAI's nested `function` too). */
function readCall(text: string, start: number, final: boolean): PartialCall | undefined {
  const obj = readObject(text, start);
  let name: string | undefined;
  let args: string | undefined;
  let id: string | undefined;
  for (const m of obj.members) {
    const complete = m.valueEnd > m.valueStart;
    if (m.key === 'name' && complete && text[m.valueStart] === '"') {
      try {
        name = JSON.parse(text.slice(m.valueStart, m.valueEnd)) as string;
      } catch {}
    } else if (m.key === 'id' && complete && text[m.valueStart] === '"') {
      try {
        id = JSON.parse(text.slice(m.valueStart, m.valueEnd)) as string;
      } catch {}
    } else if (m.key === 'arguments' || m.key === 'parameters') {
      const raw = text.slice(m.valueStart, complete ? m.valueEnd : text.length);
      if (raw.startsWith('"')) {
        // arguments as a JSON string: shown once complete (its text is the arguments)
        if (complete || final) args = partialString(raw);
      } else args = compactJson(raw);
    } else if (m.key === 'function' && text[m.valueStart] === '{') {
      const inner = readCall(text, m.valueStart, final);
      if (inner) {
        name ??= inner.name;
        args ??= inner.args;
      }
    }
  }
  if (name === undefined || name === '') return undefined;
  return { name, args: args ?? (obj.end >= 0 || final ? '{}' : ''), ...(id !== undefined ? { id } : {}) };
}

/** Call objects one after another (separated by whitespace, commas or semicolons) from `start`. */
function readCallSequence(text: string, start: number, final: boolean): { calls: PartialCall[]; end: number } {
  const calls: PartialCall[] = [];
  let i = start;
  for (;;) {
    while (i < text.length && /[\s,;]/.test(text[i]!)) i++;
    if (i >= text.length || text[i] !== '{') return { calls, end: i };
    const call = readCall(text, i, final);
    if (call) calls.push(call);
    const e = valueEnd(text, i);
    if (e < 0) return { calls, end: -1 };
    i = e;
  }
}

// ---- formats ----

const HERMES_OPEN = '<tool_call>';
const HERMES_CLOSE = '</tool_call>';

function readHermes(text: string, final: boolean): ToolRead {
  const first = text.indexOf(HERMES_OPEN);
  if (first < 0) {
    const held = final ? 0 : heldSuffix(text, [HERMES_OPEN]);
    return { before: text.slice(0, text.length - held), after: '', calls: [] };
  }
  const calls: PartialCall[] = [];
  let before = text.slice(0, first);
  let after = '';
  let at = first;
  while (at >= 0) {
    const bodyStart = at + HERMES_OPEN.length;
    const close = text.indexOf(HERMES_CLOSE, bodyStart);
    let body = close < 0 ? text.slice(bodyStart) : text.slice(bodyStart, close);
    // a fenced block (```json … ```) is read inside its fence
    const fence = /^\s*```(?:json)?/.exec(body);
    let offset = 0;
    if (fence) {
      offset = fence[0].length;
      body = body.replace(/```\s*$/, '');
    }
    const seq = readCallSequence(body, offset, final || close >= 0);
    if (close >= 0 && seq.calls.length === 0) {
      // a closed block that holds no call: it is content, as written
      const block = text.slice(at, close + HERMES_CLOSE.length);
      if (calls.length === 0) before += block;
      else after += block;
    } else calls.push(...seq.calls);
    if (close < 0) break;
    const next = text.indexOf(HERMES_OPEN, close + HERMES_CLOSE.length);
    const between = text.slice(close + HERMES_CLOSE.length, next < 0 ? text.length : next);
    if (calls.length === 0) before += between;
    else after += between;
    at = next;
  }
  return { before, after, calls };
}

const MISTRAL = '[TOOL_CALLS]';

function readMistral(text: string, final: boolean): ToolRead {
  const first = text.indexOf(MISTRAL);
  if (first < 0) {
    const held = final ? 0 : heldSuffix(text, [MISTRAL]);
    return { before: text.slice(0, text.length - held), after: '', calls: [] };
  }
  const calls: PartialCall[] = [];
  const rest = text.slice(first + MISTRAL.length);
  const lead = rest.length - rest.trimStart().length;
  if (rest[lead] === '[') {
    const arr = readArray(rest, lead);
    for (const item of arr.items) {
      if (rest[item.start] !== '{') break;
      const call = readCall(rest, item.start, final);
      if (call) calls.push(call);
    }
  } else {
    // the v11 tokenizer's form: name[ARGS]{…} or name[CALL_ID]id[ARGS]{…}, one per marker
    for (const segment of rest.split(MISTRAL)) {
      const head = /^\s*([A-Za-z0-9_.-]+)(?:\[CALL_ID\]([A-Za-z0-9]+))?\[ARGS\]/.exec(segment);
      if (!head) break;
      const s = head[0].length;
      const e = valueEnd(segment, s);
      const raw = segment.slice(s, e < 0 ? segment.length : e);
      calls.push({ name: head[1]!, args: compactJson(raw), ...(head[2] ? { id: head[2] } : {}) });
    }
  }
  return { before: text.slice(0, first), after: '', calls };
}

const PYTHON_TAG = '<|python_tag|>';

/** `tool.call(key="value", n=3)`: Llama 3.1's form for its builtin tools. */
function builtinCall(code: string): PartialCall | undefined {
  const m = /^([A-Za-z_][A-Za-z0-9_]*)\.call\(([\s\S]*)\)$/.exec(code);
  if (!m) return undefined;
  const args: Record<string, unknown> = {};
  const argRe = /\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^,]+?)\s*(?:,|$)/y;
  const body = m[2]!;
  let at = 0;
  while (at < body.length && body.slice(at).trim() !== '') {
    argRe.lastIndex = at;
    const a = argRe.exec(body);
    if (!a) return undefined;
    const raw = a[2]!;
    if (raw.startsWith("'")) args[a[1]!] = raw.slice(1, -1);
    else {
      try {
        args[a[1]!] = JSON.parse(raw);
      } catch {
        args[a[1]!] = raw;
      }
    }
    at = argRe.lastIndex;
  }
  return { name: m[1]!, args: JSON.stringify(args) };
}

function readLlama3(text: string, final: boolean): ToolRead {
  const lead = text.length - text.trimStart().length;
  if (text[lead] === '{') {
    // the whole reply is call JSON (or, when it holds no call, content)
    const seq = readCallSequence(text, lead, final);
    if (seq.calls.length === 0)
      return final ? { before: text, after: '', calls: [] } : { before: '', after: '', calls: [] };
    return { before: '', after: '', calls: seq.calls };
  }
  if (lead === text.length && !final) return { before: '', after: '', calls: [] };
  const at = text.indexOf(PYTHON_TAG);
  if (at < 0) {
    const held = final ? 0 : heldSuffix(text, [PYTHON_TAG]);
    return { before: text.slice(0, text.length - held), after: '', calls: [] };
  }
  const code = text.slice(at + PYTHON_TAG.length).replace(/<\|eom_id\|>\s*$/, '');
  const c = code.trimStart();
  const before = text.slice(0, at);
  if (c.startsWith('{')) return { before, after: '', calls: readCallSequence(c, 0, final).calls };
  if (!final) return { before, after: '', calls: [] };
  const t = c.trim();
  if (t === '') return { before, after: '', calls: [] };
  return { before, after: '', calls: [builtinCall(t) ?? { name: 'python', args: JSON.stringify({ code: t }) }] };
}

// ---- the parser ----

export class ChatOutputParser {
  private readonly ids: string[] = [];
  private readonly start: string;
  private readonly end: string;
  private readonly makeId: () => string;
  /** Where the end tag search may start (text before it holds no end tag). */
  private endFrom = 0;

  constructor(readonly opts: ChatOutputOptions = {}) {
    this.start = opts.thinkStart ?? THINK_START;
    this.end = opts.thinkEnd ?? THINK_END;
    this.makeId = opts.makeId ?? randomToolCallId;
  }

  /**
   * The reply `text` as it stood when generation stopped before the reply ended (a token
   * limit, the context, a stop request), read as llama.cpp reads such a reply (its final
   * parse is lenient, as its partial ones): nothing is completed. What was held back stays
   * held back (it may be the start of a call that never came), and a call is returned as
   * far as written, its arguments unterminated JSON (`{` when only its name was written),
   * never closed into a call that looks whole. A format read whole is read whole.
   */
  cut(text: string): ChatOutput {
    return this.opts.tools === 'harmony' ? this.update(text, true) : this.update(text);
  }

  /** The reply `text` as far as can be known (`final`: the reply is finished). */
  update(text: string, final = false): ChatOutput {
    let rest = text;
    let reasoning: string | undefined;
    if (this.opts.reasoning) {
      let from = -1;
      if (this.opts.thinkingForcedOpen) from = 0;
      else {
        const lead = text.length - text.trimStart().length;
        if (text.startsWith(this.start, lead)) from = lead + this.start.length;
        else if (!final && this.start.startsWith(text.slice(lead))) return { content: '', tool_calls: [] };
      }
      if (from >= 0) {
        const at = text.indexOf(this.end, Math.max(from, this.endFrom));
        if (at < 0) {
          this.endFrom = Math.max(from, text.length - this.end.length);
          const held = final ? 0 : heldSuffix(text, [this.end]);
          const r = text.slice(from, Math.max(from, text.length - held)).trim();
          return r ? { content: '', reasoning_content: r, tool_calls: [] } : { content: '', tool_calls: [] };
        }
        reasoning = text.slice(from, at).trim();
        rest = text.slice(at + this.end.length).replace(/^\s+/, '');
      }
    }
    const out = this.content(rest, final);
    if (reasoning) out.reasoning_content = reasoning;
    return out;
  }

  /**
   * Whether the reply so far is past its reasoning block (a grammar may hold from here),
   * and the text after it; whether or not the block is split off (reasoning_format).
   */
  pastReasoning(text: string): { past: boolean; content: string } {
    let from = -1;
    if (this.opts.thinkingForcedOpen) from = 0;
    else {
      const lead = text.length - text.trimStart().length;
      if (text.startsWith(this.start, lead)) from = lead + this.start.length;
      else if (this.start.startsWith(text.slice(lead))) return { past: false, content: '' };
      else return { past: true, content: text };
    }
    const at = text.indexOf(this.end, from);
    if (at < 0) return { past: false, content: '' };
    return { past: true, content: text.slice(at + this.end.length).replace(/^\s+/, '') };
  }

  private content(text: string, final: boolean): ChatOutput {
    const format = this.opts.tools;
    if (format === undefined) return { content: text, tool_calls: [] };
    let read: ToolRead;
    switch (format) {
      case 'hermes':
        read = readHermes(text, final);
        break;
      case 'mistral':
        read = readMistral(text, final);
        break;
      case 'llama3':
        read = readLlama3(text, final);
        break;
      default: {
        // a format read whole at the end
        if (!final) return { content: '', tool_calls: [] };
        const p = parseToolCalls(text, format, { makeId: this.makeId });
        const out: ChatOutput = { content: p.content, tool_calls: p.tool_calls.map((c, i) => this.withId(c, i)) };
        const r = (p as { reasoning_content?: string }).reasoning_content;
        if (r !== undefined) out.reasoning_content = r;
        return out;
      }
    }
    return {
      content: final ? (read.before + read.after).trim() : read.before.trim(),
      // a call whose arguments have not begun has `{` (llama.cpp's reading, which streams
      // the name and `{` in one delta)
      tool_calls: read.calls.map((c, i) => ({
        type: 'function',
        function: { name: c.name, arguments: c.args || '{' },
        id: this.idFor(i, c.id),
      })),
    };
  }

  private idFor(i: number, given?: string): string {
    this.ids[i] ??= given ?? this.makeId();
    return this.ids[i]!;
  }

  private withId(c: ToolCall, i: number): ToolCall {
    return { ...c, id: this.idFor(i, c.id) };
  }
}

/** What `next` adds to `prev` (undefined when nothing). Call ids and names come once, with the call's first delta. */
export function chatDelta(prev: ChatOutput, next: ChatOutput): ChatDelta | undefined {
  const d: ChatDelta = {};
  const grow = (a: string | undefined, b: string | undefined) =>
    b !== undefined && b.length > (a ?? '').length && b.startsWith(a ?? '') ? b.slice((a ?? '').length) : undefined;
  const r = grow(prev.reasoning_content, next.reasoning_content);
  if (r) d.reasoning_content = r;
  const c = grow(prev.content, next.content);
  if (c) d.content = c;
  const calls: ChatToolCallDelta[] = [];
  next.tool_calls.forEach((call, index) => {
    const before = prev.tool_calls[index];
    if (!before) {
      calls.push({
        index,
        ...(call.id !== undefined ? { id: call.id } : {}),
        type: 'function',
        function: { name: call.function.name, arguments: call.function.arguments },
      });
      return;
    }
    const more = grow(before.function.arguments, call.function.arguments);
    if (more) calls.push({ index, function: { arguments: more } });
  });
  if (calls.length > 0) d.tool_calls = calls;
  return d.content !== undefined || d.reasoning_content !== undefined || d.tool_calls ? d : undefined;
}

/** A delta added to an accumulated reply (llama.node's accumulated token fields). */
export function applyChatDelta(acc: ChatOutput, d: ChatDelta): ChatOutput {
  const out: ChatOutput = {
    content: acc.content + (d.content ?? ''),
    tool_calls: acc.tool_calls.map((c) => ({ ...c, function: { ...c.function } })),
  };
  const r = (acc.reasoning_content ?? '') + (d.reasoning_content ?? '');
  if (r) out.reasoning_content = r;
  for (const t of d.tool_calls ?? []) {
    const c = out.tool_calls[t.index];
    if (c) c.function.arguments += t.function.arguments ?? '';
    else {
      out.tool_calls[t.index] = {
        type: 'function',
        function: { name: t.function.name ?? '', arguments: t.function.arguments ?? '' },
        ...(t.id !== undefined ? { id: t.id } : {}),
      };
    }
  }
  return out;
}
