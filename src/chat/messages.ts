// Message normalization: what callers pass (content or its `text` alias, typed parts, tool
// calls with string or object arguments, media parts) → what templates and built-in formats read.
import type { ChatMessage, ChatMessagePart, PlainMessage, ToolCallInput } from './types.js';

/** Stands for one image or audio clip in the prompt text (llama.cpp's mtmd default marker). */
export const MEDIA_MARKER = '<__media__>';

export class ChatMessageError extends TypeError {
  override name = 'ChatMessageError';
}

function checkMessage(m: unknown, i: number): ChatMessage {
  if (m === null || typeof m !== 'object') throw new ChatMessageError(`chat message ${i} is not an object`);
  const msg = m as ChatMessage;
  if (typeof msg.role !== 'string') throw new ChatMessageError(`chat message ${i} has no string role`);
  const c = msg.content;
  if (c !== undefined && c !== null && typeof c !== 'string' && !Array.isArray(c)) {
    throw new ChatMessageError(`chat message ${i} (${msg.role}): content must be a string or an array of parts`);
  }
  if (msg.text !== undefined && typeof msg.text !== 'string') {
    throw new ChatMessageError(`chat message ${i} (${msg.role}): text must be a string`);
  }
  if (msg.tool_calls !== undefined && !Array.isArray(msg.tool_calls)) {
    throw new ChatMessageError(`chat message ${i} (${msg.role}): tool_calls must be an array`);
  }
  return msg;
}

/** `content`, or its `text` alias when content is absent. */
function rawContent(m: ChatMessage): string | ChatMessagePart[] | null | undefined {
  return m.content !== undefined ? m.content : m.text;
}

/** Text parts joined by newlines (other parts are skipped), as llama.cpp flattens typed content. */
export function joinTextParts(parts: readonly ChatMessagePart[]): string {
  let out = '';
  for (const p of parts) {
    if (p?.type !== 'text' || typeof p.text !== 'string') continue;
    if (out !== '') out += '\n';
    out += p.text;
  }
  return out;
}

/** A message's flat text: its string content, or its text parts joined by newlines. */
export function messageText(m: ChatMessage): string {
  const c = rawContent(m);
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return joinTextParts(c);
  return '';
}

/** Role and flat text of each message, checked: the built-in formats' input. */
export function plainMessages(messages: readonly ChatMessage[]): PlainMessage[] {
  return messages.map((m, i) => {
    const msg = checkMessage(m, i);
    return { role: msg.role, content: messageText(msg) };
  });
}

export interface TemplateMessageOptions {
  /** Keep content arrays as typed parts (templates that iterate over them); else join the text. */
  typedContent?: boolean;
  /** Give templates tool-call arguments as objects (most do `arguments | tojson`); else JSON text. */
  objectArguments?: boolean;
}

function toolCallForTemplate(tc: ToolCallInput, i: number, objectArguments: boolean): Record<string, unknown> {
  if (!tc || typeof tc !== 'object' || !tc.function || typeof tc.function.name !== 'string') {
    throw new ChatMessageError(`tool call ${i} has no function name`);
  }
  let args: unknown = tc.function.arguments ?? {};
  if (objectArguments && typeof args === 'string') {
    try {
      const parsed: unknown = JSON.parse(args);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) args = parsed;
    } catch {
      // not JSON: the template gets the text as it is
    }
  } else if (!objectArguments && typeof args !== 'string') {
    args = JSON.stringify(args);
  }
  const out: Record<string, unknown> = { type: tc.type ?? 'function' };
  if (tc.id !== undefined) out.id = tc.id;
  out.function = { name: tc.function.name, arguments: args };
  return out;
}

/**
 * Messages as a Jinja template reads them. Keys the caller did not give stay absent (templates
 * test `'tool_calls' in message`); `text` becomes `content`; an assistant turn with tool calls
 * and no content gets `content: null`, any other message without content gets ''.
 */
export function templateMessages(
  messages: readonly ChatMessage[],
  opts: TemplateMessageOptions = {},
): Record<string, unknown>[] {
  return messages.map((m, i) => {
    const msg = checkMessage(m, i);
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(msg)) {
      if (k === 'text' || v === undefined) continue;
      out[k] = v;
    }
    const c = rawContent(msg);
    if (Array.isArray(c)) out.content = opts.typedContent ? c.map((p) => ({ ...p })) : joinTextParts(c);
    else if (typeof c === 'string') out.content = c;
    // absent or null content renders as '' (llama.cpp hands templates its parsed messages, whose
    // content is a string: templates testing `'x' in content` fail on null)
    else out.content = '';
    if (msg.tool_calls) {
      out.tool_calls = msg.tool_calls.map((tc, j) => toolCallForTemplate(tc, j, opts.objectArguments ?? true));
    }
    return out;
  });
}

export interface MediaExtraction {
  messages: ChatMessage[];
  has_media: boolean;
  media_paths: string[];
}

/**
 * Replaces image and audio parts by text parts holding MEDIA_MARKER and collects their paths
 * or data, in order (llama.node's formatMediaChat).
 */
export function extractMedia(messages: readonly ChatMessage[]): MediaExtraction {
  const media: string[] = [];
  const out = messages.map((m, i) => {
    const msg = checkMessage(m, i);
    const c = rawContent(msg);
    if (!Array.isArray(c)) return msg;
    const parts = c.map((p): ChatMessagePart => {
      if (p?.type === 'image_url') {
        media.push(p.image_url?.url ?? '');
        return { type: 'text', text: MEDIA_MARKER };
      }
      if (p?.type === 'input_audio') {
        const audio = p.input_audio;
        if (!audio) throw new ChatMessageError(`chat message ${i}: input_audio part without input_audio`);
        if (audio.format !== 'wav' && audio.format !== 'mp3') {
          throw new ChatMessageError(`chat message ${i}: unsupported audio format ${JSON.stringify(audio.format)}`);
        }
        if (audio.url) media.push(audio.url.replace(/^file:\/\//, ''));
        else if (audio.data) media.push(audio.data);
        return { type: 'text', text: MEDIA_MARKER };
      }
      return p;
    });
    const copy: ChatMessage = { ...msg, content: parts };
    delete copy.text;
    return copy;
  });
  return { messages: out, has_media: media.length > 0, media_paths: media };
}

/**
 * A conversation ending with an assistant message, as llama-server continues it (its
 * prefill_assistant): the template renders the messages before it with the generation
 * prompt, and the reply's text so far (string content, or its text parts joined as they
 * are) follows. Undefined when the last message is not the assistant's.
 */
export function assistantPrefill(
  messages: readonly ChatMessage[],
): { messages: ChatMessage[]; text: string } | undefined {
  const last = messages[messages.length - 1];
  if (last?.role !== 'assistant') return undefined;
  const c = rawContent(last);
  let text = '';
  if (typeof c === 'string') text = c;
  else if (Array.isArray(c)) for (const p of c) if (p?.type === 'text' && typeof p.text === 'string') text += p.text;
  return { messages: messages.slice(0, -1), text };
}
