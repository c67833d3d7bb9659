// What a generation unit takes and gives, in @fugood/llama.node's shapes (the library's
// public types re-export these). The options come from the one table (options.ts).
import type { ChatDelta, ToolCall } from '../chat/index.js';
import type { CompletionProbability as ServerProbability } from '../sampling/index.js';
import type { CompletionOptionValues } from './options.js';

/** Completion options: every row of the option table, by its library name and aliases. */
export type LlamaCompletionOptions = CompletionOptionValues;

/** One token's probability (llama.node's shape). */
export interface TokenProbability {
  tok_str: string;
  prob: number;
}

/** A generated piece of text with the top-N candidates at its position (llama.node's shape). */
export interface CompletionProbability {
  content: string;
  probs: TokenProbability[];
}

/** A token's log-probability and alternatives in llama-server's (and OpenAI's) shape. */
export type TokenLogprob = ServerProbability;

export interface LlamaCompletionTimings {
  prompt_n: number;
  prompt_ms: number;
  prompt_per_token_ms: number;
  prompt_per_second: number;
  predicted_n: number;
  predicted_ms: number;
  predicted_per_token_ms: number;
  predicted_per_second: number;
  /** With speculative decoding: tokens drafted, and how many of them the model accepted (llama-server's). */
  draft_n?: number;
  draft_n_accepted?: number;
}

export interface LlamaCompletionResult {
  /** The generated text (stop strings excluded). */
  text: string;
  /** With messages: the reply without its reasoning and tool calls; with a prompt: the text. */
  content?: string;
  /** With messages: the reasoning apart from the reply (a <think> block with reasoning_format 'auto' / 'deepseek', gpt-oss's analysis channel). */
  reasoning_content?: string;
  /** With tools: the calls parsed from the text. */
  tool_calls?: ToolCall[];
  /** The chat format the reply was parsed with (0: content only). */
  chat_format: number;
  /** Tokens sampled (an end-of-generation token counts). */
  tokens_predicted: number;
  /** Prompt tokens (after truncation). */
  tokens_evaluated: number;
  /** Prompt tokens reused from the cache (not evaluated again). */
  tokens_cached: number;
  /** The prompt did not fit the context and was cut. */
  truncated: boolean;
  stopped_eos: boolean;
  /** A stop string ended generation (`stopping_word`). */
  stopped_word: boolean;
  /** n_predict (or the context, with n_predict -1) ended generation. */
  stopped_limit: boolean;
  stopping_word: string;
  /** The context filled up and could not shift. */
  context_full: boolean;
  /** stopCompletion(), the signal or a parallel request's stop() ended generation. */
  interrupted: boolean;
  /** Later llama.node names of stopped_word / stopped_limit. */
  stopped_words: boolean;
  stopped_limited: boolean;
  /** The slot (sequence) it ran in (llama-server's id_slot); -1 when it never ran. */
  id_slot?: number;
  completion_probabilities?: CompletionProbability[];
  /** With `logprobs`: every generated token (end of generation excluded), llama-server's shape. */
  logprobs?: TokenLogprob[];
  /** With `return_tokens`: the prompt as evaluated (after truncation) and the generated ids. */
  prompt_tokens?: number[];
  tokens?: number[];
  /** With `top_logits`: the K highest raw next-token logits after the prompt, [id, logit]. */
  top_logits?: [number, number][];
  /** With the `prefix_key` option: the prompt's prefix key (for load balancers). */
  prefix_key?: string;
  timings: LlamaCompletionTimings;
  /** n_cmpl > 1: every completion of the prompt (the result's own fields are the first's). */
  choices?: LlamaCompletionResult[];
}

/** What onToken receives: text in order; concatenated it is the result's `text`. */
export interface LlamaCompletionToken {
  token: string;
  /** n_cmpl > 1: which completion this token belongs to. */
  index?: number;
  /** With messages: what the reply gained (reasoning, content, tool-call arguments), OpenAI's delta shape. */
  delta?: ChatDelta;
  /** With messages (llama.node's): the reply so far, read as content, reasoning and calls. */
  content?: string;
  reasoning_content?: string;
  tool_calls?: ToolCall[];
  /** The text so far (llama.node's). */
  accumulated_text?: string;
  completion_probabilities?: CompletionProbability[];
  /** With `logprobs`: the tokens this text came from (llama-server's shape). */
  logprobs?: TokenLogprob[];
  /** With `return_progress`: how far the prompt's evaluation is (the event's text is empty). */
  prompt_progress?: PromptProgress;
}

/** llama-server's prompt_progress: prompt tokens in all, reused from the cache, in memory so far; ms since the prompt began. */
export interface PromptProgress {
  total: number;
  cache: number;
  processed: number;
  time_ms: number;
}
