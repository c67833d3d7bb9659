// llama.node's token events carry the reply so far (accumulated_text, and for chats the
// content, reasoning and tool calls read from it). The engine sends only what is new (the
// token's text and its chat delta); the caller's side adds the accumulated fields here, so
// the worker does not copy the whole reply into every event.
import { applyChatDelta, type ChatOutput } from '../chat/index.js';
import type { LlamaCompletionToken } from './types.js';

/** A function that adds the accumulated fields to each event of one request, in order. */
export function tokenAccumulator(): (t: LlamaCompletionToken) => LlamaCompletionToken {
  const acc = new Map<number, { text: string; chat: ChatOutput | undefined }>();
  return (t) => {
    const k = t.index ?? 0;
    let a = acc.get(k);
    if (!a) {
      a = { text: '', chat: undefined };
      acc.set(k, a);
    }
    a.text += t.token;
    const out: LlamaCompletionToken = { ...t, accumulated_text: a.text };
    if (t.delta) a.chat = applyChatDelta(a.chat ?? { content: '', tool_calls: [] }, t.delta);
    if (a.chat) {
      out.content = a.chat.content;
      if (a.chat.reasoning_content !== undefined) out.reasoning_content = a.chat.reasoning_content;
      if (a.chat.tool_calls.length > 0) out.tool_calls = a.chat.tool_calls;
    }
    return out;
  };
}
