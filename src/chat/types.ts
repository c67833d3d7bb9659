// The chat data model, in the OpenAI / llama.node shape: messages with string or typed
// content, tools with JSON-schema parameters, and tool calls whose arguments are JSON text.

/** One part of a typed message content (`{ type: 'text', text }`, images and audio for media). */
export interface ChatMessagePart {
  type: string;
  text?: string;
  image_url?: { url?: string };
  input_audio?: { format: string; data?: string; url?: string };
  [key: string]: unknown;
}

/** A tool call as the OpenAI API writes it: `arguments` is JSON text. */
export interface ToolCall {
  type: 'function';
  function: { name: string; arguments: string };
  id?: string;
}

/** A tool call as given by a caller: `arguments` may also be an object already. */
export interface ToolCallInput {
  type?: 'function';
  function: { name: string; arguments?: string | Record<string, unknown> };
  id?: string;
}

export interface ChatMessage {
  role: string;
  /** Text, typed parts, or null (an assistant turn that only calls tools). */
  content?: string | ChatMessagePart[] | null;
  /** Alias of `content` (llama-ts 0.3.3 typed messages with `text`). */
  text?: string;
  tool_calls?: ToolCallInput[];
  tool_call_id?: string;
  name?: string;
  [key: string]: unknown;
}

export interface Tool {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown>; [key: string]: unknown };
}

/** A message reduced to role and flat text: what the built-in formats take. */
export type PlainMessage = { role: string; content: string };

/** A model reply split into its text and its tool calls (chat/tool-calls.ts). */
export interface ParsedToolCalls {
  /** The reply's text without its tool calls (the whole text when none parsed). */
  content: string;
  tool_calls: ToolCall[];
  /** The model's reasoning, for formats that keep it apart (harmony's analysis channel). */
  reasoning_content?: string;
}

export interface ParseToolCallsOptions {
  /** Id for a call that has none; default: 9 random letters and digits (Mistral's form). */
  makeId?: () => string;
}
