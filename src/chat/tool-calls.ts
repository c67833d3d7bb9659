// Tool calls in model output → OpenAI-shaped tool_calls. One parser per output format:
//   hermes   <tool_call>{"name": …, "arguments": {…}}</tool_call>, repeated (Hermes 2 Pro, Qwen 2.5/3)
//   llama3   {"name": …, "parameters": {…}} as the whole reply, or after <|python_tag|>
//            (Llama 3.1/3.2; `<|python_tag|>tool.call(k="v")` builtin calls, bare code → python)
//   mistral  [TOOL_CALLS][{"name": …, "arguments": {…}, "id": …}] or [TOOL_CALLS]name[ARGS]{…}
//   harmony  gpt-oss's channels (harmony.ts): analysis → reasoning, final → content,
//            commentary to=functions.NAME → calls
// Output that does not parse as a call is left in `content` untouched. A template with none
// of these syntaxes has no tool-call format: as llama.cpp (its differential autoparser finds
// no call syntax in such a template), its replies are content only, tools or not.
import { randomToolCallId } from './call-id.js';
import { parseHarmony } from './harmony.js';
import type { ParsedToolCalls, ParseToolCallsOptions } from './types.js';

export { randomToolCallId } from './call-id.js';
export type { ParsedToolCalls, ParseToolCallsOptions } from './types.js';

export type ToolCallFormat = 'hermes' | 'llama3' | 'mistral' | 'harmony';

/** The tool-call format a chat template teaches its model, by markers in its text; undefined when it has none. */
export function detectToolCallFormat(template: string | undefined): ToolCallFormat | undefined {
  if (!template) return undefined;
  if (template.includes('<|channel|>') && template.includes('<|message|>')) return 'harmony';
  if (template.includes('<tool_call>')) return 'hermes';
  if (template.includes('[TOOL_CALLS]')) return 'mistral';
  if (template.includes('<|python_tag|>')) return 'llama3';
  if (template.includes('<|start_header_id|>') && template.includes('"parameters"')) return 'llama3';
  return undefined;
}

interface RawCall {
  name: string;
  args: unknown;
  id?: string;
}

/** End (exclusive) of the JSON object or array starting at `start`, or -1 when unbalanced. */
export function scanJson(text: string, start: number): number {
  const open = text[start];
  if (open !== '{' && open !== '[') return -1;
  let depth = 0;
  let inString = false;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') depth++;
    else if (c === '}' || c === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** A {name, arguments|parameters} object as a call, or undefined. */
function callOf(v: unknown): RawCall | undefined {
  if (!isObject(v)) return undefined;
  const fn = isObject(v.function) ? v.function : v;
  if (typeof fn.name !== 'string' || fn.name === '') return undefined;
  const args = fn.arguments ?? fn.parameters ?? {};
  if (!isObject(args) && typeof args !== 'string') return undefined;
  const call: RawCall = { name: fn.name, args };
  if (typeof v.id === 'string') call.id = v.id;
  return call;
}

/**
 * JSON objects one after another (separated by whitespace, commas or semicolons) filling
 * all of `text`, each a call; undefined when anything else is there.
 */
function callSequence(text: string): RawCall[] | undefined {
  const calls: RawCall[] = [];
  let i = 0;
  for (;;) {
    while (i < text.length && /[\s,;]/.test(text[i]!)) i++;
    if (i >= text.length) break;
    const end = scanJson(text, i);
    if (end < 0 || text[i] !== '{') return undefined;
    const call = callOf(parseJson(text.slice(i, end)));
    if (!call) return undefined;
    calls.push(call);
    i = end;
  }
  return calls.length > 0 ? calls : undefined;
}

interface Found {
  content: string;
  calls: RawCall[];
}

function parseHermes(text: string): Found | undefined {
  const re = /<tool_call>([\s\S]*?)(?:<\/tool_call>|$)/g;
  const calls: RawCall[] = [];
  let content = '';
  let last = 0;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    let body = m[1]!.trim();
    const fenced = /^```(?:json)?\s*([\s\S]*?)\s*```$/.exec(body);
    if (fenced) body = fenced[1]!;
    const found = callSequence(body);
    if (!found) continue; // malformed: this block stays in the content
    calls.push(...found);
    content += text.slice(last, m.index);
    last = m.index + m[0].length;
  }
  if (calls.length === 0) return undefined;
  content += text.slice(last);
  return { content: content.trim(), calls };
}

function parseMistral(text: string): Found | undefined {
  const marker = '[TOOL_CALLS]';
  const first = text.indexOf(marker);
  if (first < 0) return undefined;
  const calls: RawCall[] = [];
  const rest = text.slice(first + marker.length).trimStart();
  if (rest.startsWith('[')) {
    const end = scanJson(rest, 0);
    const list = end < 0 ? undefined : parseJson(rest.slice(0, end));
    if (!Array.isArray(list) || list.length === 0) return undefined;
    for (const item of list) {
      const call = callOf(item);
      if (!call) return undefined;
      calls.push(call);
    }
    if (rest.slice(end).trim() !== '') return undefined;
  } else {
    // the v11 tokenizer's form: name[ARGS]{…} or name[CALL_ID]id[ARGS]{…}, one per marker
    for (const segment of rest.split(marker)) {
      const head = /^\s*([A-Za-z0-9_.-]+)(?:\[CALL_ID\]([A-Za-z0-9]+))?\[ARGS\]/.exec(segment);
      if (!head) return undefined;
      const at = head[0].length;
      const end = scanJson(segment, at);
      const args = end < 0 ? undefined : parseJson(segment.slice(at, end));
      if (!isObject(args) || segment.slice(end).trim() !== '') return undefined;
      const call: RawCall = { name: head[1]!, args };
      if (head[2]) call.id = head[2];
      calls.push(call);
    }
  }
  return { content: text.slice(0, first).trim(), calls };
}

/** `tool.call(key="value", n=3)`: Llama 3.1's form for its builtin tools. */
function builtinCall(code: string): RawCall | undefined {
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
    else args[a[1]!] = parseJson(raw) ?? raw;
    at = argRe.lastIndex;
  }
  return { name: m[1]!, args };
}

function parseLlama3(text: string): Found | undefined {
  const tag = '<|python_tag|>';
  const at = text.indexOf(tag);
  if (at >= 0) {
    const code = text
      .slice(at + tag.length)
      .replace(/<\|eom_id\|>\s*$/, '')
      .trim();
    const content = text.slice(0, at).trim();
    if (code.startsWith('{')) {
      const calls = callSequence(code);
      return calls ? { content, calls } : undefined;
    }
    const call = builtinCall(code);
    if (call) return { content, calls: [call] };
    if (code === '') return undefined;
    return { content, calls: [{ name: 'python', args: { code } }] };
  }
  const trimmed = text.trim();
  if (!trimmed.startsWith('{')) return undefined;
  const calls = callSequence(trimmed);
  return calls ? { content: '', calls } : undefined;
}

const PARSERS: Record<Exclude<ToolCallFormat, 'harmony'>, (text: string) => Found | undefined> = {
  hermes: parseHermes,
  mistral: parseMistral,
  llama3: parseLlama3,
};

/** Splits model output into content and tool calls, read in `format` (detectToolCallFormat's). */
export function parseToolCalls(
  text: string,
  format: ToolCallFormat,
  opts: ParseToolCallsOptions = {},
): ParsedToolCalls {
  if (format === 'harmony') return parseHarmony(text, opts);
  const found = PARSERS[format](text);
  if (!found) return { content: text, tool_calls: [] };
  const makeId = opts.makeId ?? randomToolCallId;
  return {
    content: found.content,
    tool_calls: found.calls.map((c) => ({
      type: 'function',
      function: { name: c.name, arguments: typeof c.args === 'string' ? c.args : JSON.stringify(c.args) },
      id: c.id ?? makeId(),
    })),
  };
}
