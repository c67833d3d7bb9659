// OpenAI's harmony format (gpt-oss): a reply is a sequence of messages, each
//   [<|start|>assistant[ to=RECIPIENT]]<|channel|>CHANNEL[ to=RECIPIENT][ [<|constrain|>]TYPE]<|message|>BODY<|end|>
// ending with a final message (its terminator <|return|>, or <|call|> after a tool call, is
// an end-of-generation token and not in the text). As llama.cpp's gpt-oss parser reads it:
// the `analysis` channel is reasoning (reasoning_content); `final`, and `commentary`
// without a recipient (a preamble), are content; a message addressed to `functions.NAME`
// (in the role or the channel header) is a tool call whose body is the JSON arguments;
// other recipients (built-in tools) are dropped. Text that is not harmony is content.

import { randomToolCallId } from './call-id.js';
import type { ParsedToolCalls, ParseToolCallsOptions } from './types.js';

const START = '<|start|>';
const CHANNEL = '<|channel|>';
const MESSAGE = '<|message|>';
const END = '<|end|>';
const CONSTRAIN = '<|constrain|>';
const TERMINATORS = [END, '<|return|>', '<|call|>'];

/** Whether a chat template speaks harmony (gpt-oss's). */
export function isHarmonyTemplate(template: string | undefined): boolean {
  return template?.includes(CHANNEL) === true && template.includes(MESSAGE) && template.includes(START);
}

interface HarmonyMessage {
  channel: string;
  recipient?: string;
  body: string;
}

/** The recipient named by ` to=NAME` in a header part, if any. */
function recipientOf(header: string): string | undefined {
  const m = /(?:^|\s)to=([^\s<]+)/.exec(header);
  return m?.[1];
}

/** Splits a reply into harmony messages; null when it holds no <|message|> at all. */
function messagesOf(text: string): HarmonyMessage[] | null {
  if (!text.includes(MESSAGE)) return null;
  const out: HarmonyMessage[] = [];
  let pos = 0;
  while (pos < text.length) {
    const m = text.indexOf(MESSAGE, pos);
    if (m < 0) break;
    // header: [<|start|>ROLE[ to=R]]<|channel|>NAME[ to=R][ <|constrain|>TYPE]
    let header = text.slice(pos, m);
    if (header.startsWith(START)) header = header.slice(START.length);
    // the last channel marker counts (gpt-oss sometimes opens with a stray `<|channel|>commentary`)
    const c = header.lastIndexOf(CHANNEL);
    const role = c >= 0 ? header.slice(0, c) : header;
    const chan = c >= 0 ? header.slice(c + CHANNEL.length).replace(CONSTRAIN, ' ') : '';
    const channel = /^[A-Za-z_]+/.exec(chan.trim())?.[0] ?? '';
    const recipient = recipientOf(chan) ?? recipientOf(role);
    let end = text.length;
    let next = text.length;
    for (const t of TERMINATORS) {
      const i = text.indexOf(t, m + MESSAGE.length);
      if (i >= 0 && i < end) {
        end = i;
        next = i + t.length;
      }
    }
    out.push({ channel, ...(recipient ? { recipient } : {}), body: text.slice(m + MESSAGE.length, end) });
    pos = next;
  }
  return out;
}

export interface ParsedHarmony extends ParsedToolCalls {
  /** The analysis channel's text (absent when there was none). */
  reasoning_content?: string;
}

/** Splits a gpt-oss reply into reasoning, content and tool calls. */
export function parseHarmony(text: string, opts: ParseToolCallsOptions = {}): ParsedHarmony {
  const messages = messagesOf(text);
  if (!messages) return { content: text, tool_calls: [] };
  const makeId = opts.makeId ?? randomToolCallId;
  const reasoning: string[] = [];
  const content: string[] = [];
  const out: ParsedHarmony = { content: '', tool_calls: [] };
  for (const msg of messages) {
    if (msg.recipient?.startsWith('functions.')) {
      const name = msg.recipient.slice('functions.'.length);
      const body = msg.body.trim();
      let args = body;
      try {
        args = JSON.stringify(JSON.parse(body));
      } catch {
        // arguments that are not JSON are passed on as written
      }
      out.tool_calls.push({ type: 'function', function: { name, arguments: args }, id: makeId() });
    } else if (msg.recipient !== undefined && msg.recipient !== 'assistant') {
      // a built-in tool (browser, python): not a function the caller offered
    } else if (msg.channel === 'analysis') reasoning.push(msg.body);
    else content.push(msg.body);
  }
  out.content = content.join('');
  if (reasoning.length > 0) out.reasoning_content = reasoning.join('');
  return out;
}
