// The one table of completion and sampling options. Each row gives an option's name (the
// library's, llama.node's), its type, its range or size, its default, and what llama.cpp,
// OpenAI and llama-server call it. Everything else derives from it:
//   - the library's option types (`CompletionOptionValues`, in types.ts),
//   - the runtime checks and their messages (`checkOptions`: OptionError naming the
//     option and the value, before anything is allocated),
//   - the sampling chain's settings (`resolveSampling`),
//   - the server's request mapping (`optionsFromRequest`: OpenAI and llama-server names),
//   - the CLI's sampling flags (`llamaCpp`: llama.cpp's flag names),
//   - the option reference in README.md.
// Sizes are bounded so no request can make the engine allocate without limit (a history
// of 1e9 tokens, a million sampler letters).
import type { ChatMessage, Tool } from '../chat/index.js';
import {
  DEFAULT_SAMPLERS,
  DEFAULT_SEED,
  eogTokens,
  type LogitBias,
  type ResolvedSamplingParams,
  SAMPLER_LETTERS,
  SAMPLER_NAMES,
  type SamplerName,
  SamplingError,
  type SamplingVocab,
} from '../sampling/index.js';
import { OptionError } from './errors.js';
import { PREFIX_KEY_HEADER, PREFIX_KEY_MAX_LENGTH, PREFIX_KEY_TOKENS } from './prefix-key.js';

export type OptionKind = 'number' | 'integer' | 'boolean' | 'string' | 'strings' | 'enum' | 'object' | 'custom';

/** The surface an option belongs to. */
export type OptionGroup = 'prompt' | 'chat' | 'generation' | 'sampling' | 'grammar' | 'output';

export interface OptionSpec {
  /** The library's name (llama.node's). */
  readonly name: string;
  /** Other names the library accepts for it (the first given wins). */
  readonly aliases?: readonly string[];
  readonly kind: OptionKind;
  readonly group: OptionGroup;
  /** Inclusive bounds of numbers. */
  readonly min?: number;
  readonly max?: number;
  /** Numbers must be above this (exclusive bound). */
  readonly above?: number;
  /** Most characters of a string, or most items of an array or keys of an object. */
  readonly size?: number;
  /** Most characters of each string of a list. */
  readonly itemSize?: number;
  /** The range or size in words, for rows whose kind does not say it (custom checks). */
  readonly sizeDoc?: string;
  /** The values an enum takes. */
  readonly values?: readonly (string | number)[];
  /** The default (undefined: none, or computed: see `doc`). */
  readonly default?: unknown;
  /** llama.cpp's command-line flag (common/arg.cpp), also `llama-ts run`'s. */
  readonly llamaCpp?: string;
  /** OpenAI's request field(s) for it (the server maps them). */
  readonly openai?: readonly string[];
  /** llama-server's request field for it (the server maps it). */
  readonly server?: string;
  /** Not accepted over HTTP (callbacks, signals, library-only switches). */
  readonly libraryOnly?: boolean;
  /** The HTTP request header the server takes it from (not a body field). */
  readonly header?: string;
  /** A llama-ts extension (neither llama.node nor llama-server has it). */
  readonly extension?: boolean;
  readonly doc: string;
  /** Checks beyond kind and range (shapes of composite values). */
  readonly check?: (value: unknown, name: string) => void;
}

/** A row that also carries its TypeScript type (T) and alias names (A), for the derived types. */
export interface TypedSpec<N extends string, T, A extends string> extends OptionSpec {
  readonly name: N;
  readonly __type?: T;
  readonly __alias?: A;
}

function row<T>() {
  return <const N extends string, const A extends readonly string[] = []>(
    name: N,
    spec: Omit<OptionSpec, 'name' | 'aliases'> & { aliases?: A },
  ): TypedSpec<N, T, A[number]> => ({ name, ...spec }) as TypedSpec<N, T, A[number]>;
}

const I32_MAX = 2147483647;
/** Token histories (penalties, DRY) look back at most this far. */
export const MAX_LOOKBACK = 1 << 20;

function fail(name: string, value: unknown, reason: string): never {
  throw new OptionError(name, value, reason);
}

function checkStringList(v: unknown, name: string, size: number, itemSize: number, allowString: boolean): void {
  const list = allowString && typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
    fail(name, v, allowString ? 'must be a string or an array of strings' : 'must be an array of strings');
  }
  if (list.length > size) fail(name, v, `must have at most ${size} items (got ${list.length})`);
  for (const s of list) {
    if (s.length > itemSize) fail(name, v, `each string must be at most ${itemSize} characters (one has ${s.length})`);
  }
}

// ---- composite checks ----

const MAX_BIAS = 100;

function checkBiasValue(name: string, option: unknown, b: unknown): void {
  if (b === false || b === -Infinity) return;
  if (typeof b !== 'number' || !Number.isFinite(b) || b < -MAX_BIAS || b > MAX_BIAS) {
    fail(name, option, `bias ${String(b)} must be a number in [-${MAX_BIAS}, ${MAX_BIAS}] or false (ban)`);
  }
}

function checkBiasKey(name: string, option: unknown, k: unknown): void {
  if (typeof k === 'number') {
    if (!Number.isInteger(k) || k < 0 || k > I32_MAX) fail(name, option, `token ${k} is not a token id`);
  } else if (typeof k === 'string') {
    if (k.length > 256) fail(name, option, 'a text key must be at most 256 characters');
  } else fail(name, option, 'entries must be [token id or text, bias] pairs');
}

const LOGIT_BIAS_SIZE = 65536;

function checkLogitBias(v: unknown, name: string): void {
  if (Array.isArray(v)) {
    if (v.length > LOGIT_BIAS_SIZE) fail(name, v, `must have at most ${LOGIT_BIAS_SIZE} entries (got ${v.length})`);
    for (const el of v) {
      if (!Array.isArray(el) || el.length !== 2) fail(name, v, 'entries must be [token id or text, bias] pairs');
      checkBiasKey(name, v, el[0]);
      checkBiasValue(name, v, el[1]);
    }
    return;
  }
  if (typeof v === 'object' && v !== null) {
    const entries = Object.entries(v as Record<string, unknown>);
    if (entries.length > LOGIT_BIAS_SIZE) {
      fail(name, v, `must have at most ${LOGIT_BIAS_SIZE} entries (got ${entries.length})`);
    }
    for (const [k, b] of entries) {
      checkBiasKey(name, v, k);
      checkBiasValue(name, v, b);
    }
    return;
  }
  fail(name, v, 'must be an array of [token, bias] pairs or an object');
}

function checkSamplers(v: unknown, name: string): void {
  if (typeof v === 'string') {
    if (v.length > 64) fail(name, v, `must be at most 64 letters (got ${v.length})`);
    for (const ch of v) if (!SAMPLER_LETTERS[ch]) fail(name, v, `unknown sampler letter '${ch}' (known: edskypmxt)`);
    return;
  }
  if (!Array.isArray(v)) fail(name, v, 'must be an array of sampler names or a string of letters');
  if (v.length > 64) fail(name, v, `must have at most 64 names (got ${v.length})`);
  for (const s of v) {
    if (typeof s !== 'string' || !SAMPLER_NAMES[s]) {
      fail(name, v, `unknown sampler ${JSON.stringify(s)} (known: ${DEFAULT_SAMPLERS.join(', ')})`);
    }
  }
}

function checkPrompt(v: unknown, name: string): void {
  if (typeof v === 'string') {
    if (v.length > 1 << 26) fail(name, v, `must be at most ${1 << 26} characters`);
    return;
  }
  if (Array.isArray(v)) {
    if (v.length > 1 << 20) fail(name, v, `must have at most ${1 << 20} token ids`);
    if (!v.every((t) => Number.isInteger(t) && t >= 0 && t <= I32_MAX)) fail(name, v, 'token ids must be integers ≥ 0');
    return;
  }
  fail(name, v, 'a completion needs a prompt (string, or token ids) or messages (array)');
}

function checkExtra(v: unknown, name: string): void {
  if (!Array.isArray(v)) fail(name, v, 'must be an array of {filename, text} chunks');
  if (v.length > 1000) fail(name, v, `must have at most 1000 chunks (got ${v.length})`);
  for (const c of v) {
    const o = c as { filename?: unknown; text?: unknown };
    if (typeof o !== 'object' || o === null || typeof o.text !== 'string')
      fail(name, v, 'each chunk needs a `text` string');
    if (o.filename !== undefined && typeof o.filename !== 'string') fail(name, v, 'a chunk filename must be a string');
  }
}

function checkArray(size: number, what: string) {
  return (v: unknown, name: string) => {
    if (!Array.isArray(v)) fail(name, v, `must be an array of ${what}`);
    if (v.length > size) fail(name, v, `must have at most ${size} items (got ${v.length})`);
  };
}

function checkResponseFormat(v: unknown, name: string): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) fail(name, v, "must be an object with a 'type'");
  const t = (v as { type?: unknown }).type;
  if (t !== 'text' && t !== 'json_object' && t !== 'json_schema') {
    fail(`${name}.type`, t, "must be 'text', 'json_object' or 'json_schema'");
  }
}

function checkSchema(v: unknown, name: string): void {
  if (typeof v === 'string') {
    if (v.length > 1 << 20) fail(name, v, `must be at most ${1 << 20} characters of JSON`);
    return;
  }
  if (typeof v !== 'object' && typeof v !== 'boolean') fail(name, v, 'must be a JSON Schema (object or JSON text)');
}

function checkSignal(v: unknown, name: string): void {
  if (!(v instanceof AbortSignal)) fail(name, v, 'must be an AbortSignal');
}

/** What starts a lazy grammar, as llama.cpp's common_grammar_trigger. */
export interface GrammarTrigger {
  /** 0 token, 1 word, 2 pattern (anywhere), 3 pattern matching the whole output. */
  type: 0 | 1 | 2 | 3;
  /** The word or pattern (for a token: its text, when `token` is not given). */
  value?: string;
  token?: number;
}

export const TRIGGER_TOKEN = 0;
export const TRIGGER_WORD = 1;
export const TRIGGER_PATTERN = 2;
export const TRIGGER_PATTERN_FULL = 3;

function checkTriggers(v: unknown, name: string): void {
  if (!Array.isArray(v)) fail(name, v, 'must be an array of triggers');
  if (v.length > 100) fail(name, v, `must have at most 100 triggers (got ${v.length})`);
  for (const t of v) {
    if (typeof t !== 'object' || t === null) fail(name, v, 'each trigger must be an object {type, value, token}');
    const { type, value, token } = t as Record<string, unknown>;
    if (type !== 0 && type !== 1 && type !== 2 && type !== 3) {
      fail(
        name,
        v,
        `trigger type ${JSON.stringify(type)} must be 0 (token), 1 (word), 2 (pattern) or 3 (full pattern)`,
      );
    }
    if (value !== undefined && (typeof value !== 'string' || value.length > 1024)) {
      fail(name, v, 'a trigger value must be a string of at most 1024 characters');
    }
    if (type === 0) {
      if (token !== undefined && !(Number.isInteger(token) && (token as number) >= 0 && (token as number) <= I32_MAX)) {
        fail(name, v, `token ${String(token)} is not a token id`);
      }
      if (token === undefined && (value === undefined || value === ''))
        fail(name, v, 'a token trigger needs a token id or its text');
    } else {
      if (typeof value !== 'string' || value === '') fail(name, v, 'a word or pattern trigger needs a non-empty value');
      if (type !== 1) {
        try {
          new RegExp(value);
        } catch (e) {
          fail(name, v, `pattern ${JSON.stringify(value)} is not a regular expression: ${(e as Error).message}`);
        }
      }
    }
  }
}

/** tool_choice: a mode, or one function by name (OpenAI's object form). */
export type ToolChoice = 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

function checkToolChoice(v: unknown, name: string): void {
  if (v === 'auto' || v === 'none' || v === 'required') return;
  if (typeof v === 'object' && v !== null && !Array.isArray(v)) {
    const o = v as { type?: unknown; function?: { name?: unknown }; name?: unknown };
    const fn = typeof o.function === 'object' && o.function !== null ? o.function.name : o.name;
    if ((o.type === 'function' || o.type === undefined) && typeof fn === 'string' && fn !== '' && fn.length <= 256) {
      return;
    }
    fail(name, v, "an object must be { type: 'function', function: { name } }");
  }
  fail(name, v, "must be 'auto', 'none', 'required' or { type: 'function', function: { name } }");
}

/** The function a tool_choice names, if any. */
export function namedTool(choice: ToolChoice | undefined): string | undefined {
  if (typeof choice !== 'object' || choice === null) return undefined;
  const o = choice as { function?: { name?: string }; name?: string };
  return o.function?.name ?? o.name;
}

/** response_format: plain text, any JSON object, or JSON following a schema. */
export interface CompletionResponseFormat {
  type: 'text' | 'json_object' | 'json_schema';
  json_schema?: { strict?: boolean; schema?: Record<string, unknown>; name?: string };
  /** For 'json_object': an optional schema. */
  schema?: Record<string, unknown>;
}

export type LogitBiasOption = [number | string, number | boolean][] | Record<string, number | boolean>;

/** A request's scale for one of the context's LoRA adapters (llama-server's `lora` entries). */
export interface LoraScale {
  id: number;
  scale: number;
}

/** LoRA adapters a context holds, at most. */
export const MAX_LORA = 64;
/** Tokens drafted per step, at most. */
export const MAX_DRAFT = 256;

function checkLora(v: unknown, name: string): void {
  if (!Array.isArray(v)) fail(name, v, 'must be an array of { id, scale }');
  if (v.length > MAX_LORA) fail(name, v, `must have at most ${MAX_LORA} entries (got ${v.length})`);
  for (const e of v) {
    const id = (e as LoraScale | null)?.id;
    const scale = (e as LoraScale | null)?.scale;
    if (typeof e !== 'object' || e === null || !Number.isInteger(id) || (id as number) < 0) {
      fail(name, v, 'each entry must be { id: an adapter index ≥ 0, scale: a number }');
    }
    if (typeof scale !== 'number' || !Number.isFinite(scale))
      fail(name, v, `the scale of adapter ${id} must be a finite number`);
  }
}

// ---- the table ----

export const OPTIONS = [
  // prompt and chat
  row<string | number[]>()('prompt', {
    sizeDoc: 'text of ≤ 2^26 chars, or ≤ 2^20 token ids',
    kind: 'custom',
    group: 'prompt',
    check: checkPrompt,
    llamaCpp: '--prompt',
    openai: ['prompt'],
    server: 'prompt',
    size: 1 << 26,
    doc: 'The prompt: text (tokenized with BOS, special tokens parsed) or token ids (a llama-server form). Either this or `messages`.',
  }),
  row<string>()('input_prefix', {
    kind: 'string',
    group: 'prompt',
    size: 1 << 24,
    server: 'input_prefix',
    doc: "Fill in the middle (llama-server's /infill): the text before the gap; the prompt is built with the model's FIM tokens (`prompt`, if any, starts the middle).",
  }),
  row<string>()('input_suffix', {
    kind: 'string',
    group: 'prompt',
    size: 1 << 24,
    server: 'input_suffix',
    doc: 'Fill in the middle: the text after the gap.',
  }),
  row<{ filename?: string; text: string }[]>()('input_extra', {
    sizeDoc: '≤ 1000 {filename, text} chunks',
    kind: 'custom',
    group: 'prompt',
    size: 1000,
    check: checkExtra,
    server: 'input_extra',
    doc: 'Fill in the middle: more context (other files), put before the prefix with the FIM separator tokens.',
  }),
  row<ChatMessage[]>()('messages', {
    sizeDoc: '≤ 100000 messages',
    kind: 'custom',
    group: 'chat',
    check: checkArray(100000, 'chat messages'),
    size: 100000,
    openai: ['messages'],
    server: 'messages',
    doc: "A conversation, formatted with the model's chat template. Messages take `content` (or `text`).",
  }),
  row<string | string[]>()('media_paths', {
    sizeDoc: '≤ 64 paths or data: URLs',
    kind: 'custom',
    group: 'prompt',
    check: (v, name) => {
      const list = typeof v === 'string' ? [v] : v;
      if (!Array.isArray(list) || !list.every((x) => typeof x === 'string')) {
        fail(name, v, 'must be a path (or data: URL) or an array of them');
      }
      if (list.length > 64) fail(name, v, `must have at most 64 items (got ${list.length})`);
    },
    libraryOnly: true,
    doc: 'Images for a multimodal model (after initMultimodal): file paths, file: URLs or base64 data: URLs, one per `<__media__>` marker of the prompt in order (appended after the prompt where it has fewer markers). Default: the `image_url` parts of `messages`.',
  }),
  row<boolean>()('jinja', {
    kind: 'boolean',
    group: 'chat',
    default: true,
    libraryOnly: true,
    doc: 'Use the Jinja chat template (when the model has one).',
  }),
  row<string>()('chat_template', {
    kind: 'string',
    group: 'chat',
    size: 1 << 20,
    libraryOnly: true,
    llamaCpp: '--chat-template',
    doc: "A chat template (Jinja text or a built-in format name) replacing the context's for this completion.",
  }),
  row<Tool[]>()('tools', {
    sizeDoc: '≤ 1000 tools',
    kind: 'custom',
    group: 'chat',
    check: checkArray(1000, 'tools'),
    size: 1000,
    openai: ['tools'],
    server: 'tools',
    doc: 'Tools the model may call (OpenAI function tools); the reply is parsed into `tool_calls`.',
  }),
  row<boolean>()('parallel_tool_calls', {
    kind: 'boolean',
    group: 'chat',
    openai: ['parallel_tool_calls'],
    server: 'parallel_tool_calls',
    doc: 'Allow several tool calls in one reply (templates that support it).',
  }),
  row<ToolChoice>()('tool_choice', {
    sizeDoc: "'auto', 'none', 'required', or { type: 'function', function: { name } }",
    kind: 'custom',
    group: 'chat',
    check: checkToolChoice,
    openai: ['tool_choice'],
    server: 'tool_choice',
    doc: "'auto' (default): a grammar holds once the model begins a call (lazy, at the template's tool-call trigger); 'required' or a named function: a call from the first token; 'none': no tools. A template with no tool-call syntax (or none) gets no grammar: its reply is content, as llama.cpp's.",
  }),
  row<boolean>()('enable_thinking', {
    kind: 'boolean',
    group: 'chat',
    server: 'enable_thinking',
    doc: 'Passed to templates that have a thinking switch.',
  }),
  row<string>()('reasoning_format', {
    kind: 'enum',
    group: 'chat',
    values: ['auto', 'deepseek', 'deepseek-legacy', 'none'],
    default: 'auto',
    llamaCpp: '--reasoning-format',
    server: 'reasoning_format',
    doc: "With messages: 'auto' / 'deepseek' put a reply's <think> block in `reasoning_content` (and stream it apart); 'none' leaves it in the content.",
  }),
  row<string>()('reasoning_effort', {
    kind: 'enum',
    group: 'chat',
    values: ['none', 'minimal', 'low', 'medium', 'high', 'xhigh'],
    openai: ['reasoning_effort'],
    server: 'reasoning_effort',
    doc: 'Passed to templates that use it (gpt-oss: low / medium / high; harmony replies parsed apart).',
  }),
  row<number>()('thinking_budget_tokens', {
    kind: 'integer',
    group: 'chat',
    aliases: ['reasoning_budget'],
    min: -1,
    max: I32_MAX,
    default: -1,
    llamaCpp: '--reasoning-budget',
    server: 'thinking_budget_tokens',
    doc: 'Tokens a reasoning block may hold; then its end tag (after `thinking_budget_message`) is forced. -1: no limit.',
  }),
  row<string>()('thinking_budget_message', {
    kind: 'string',
    group: 'chat',
    size: 4096,
    server: 'thinking_budget_message',
    doc: 'Text written before the forced end of a reasoning block when its budget runs out.',
  }),
  row<Record<string, unknown>>()('chat_template_kwargs', {
    kind: 'object',
    group: 'chat',
    size: 256,
    server: 'chat_template_kwargs',
    doc: 'Extra variables for the chat template.',
  }),
  row<CompletionResponseFormat>()('response_format', {
    sizeDoc: "object with type 'text', 'json_object' or 'json_schema'",
    kind: 'custom',
    group: 'grammar',
    check: checkResponseFormat,
    openai: ['response_format'],
    server: 'response_format',
    doc: "Constrain the output to JSON ('json_object') or a JSON Schema ('json_schema').",
  }),

  // generation
  row<number>()('n_predict', {
    kind: 'integer',
    group: 'generation',
    aliases: ['max_tokens'],
    min: -1,
    max: I32_MAX,
    default: -1,
    llamaCpp: '--n-predict',
    openai: ['max_completion_tokens', 'max_tokens'],
    server: 'n_predict',
    doc: 'Tokens to generate; -1: until end of text or a full context.',
  }),
  row<number>()('max_length', {
    kind: 'integer',
    group: 'generation',
    min: -1,
    max: I32_MAX,
    libraryOnly: true,
    doc: 'Accepted for llama.node compatibility (no effect).',
  }),
  row<number>()('n_keep', {
    kind: 'integer',
    group: 'generation',
    min: -1,
    max: I32_MAX,
    default: 0,
    llamaCpp: '--keep',
    server: 'n_keep',
    doc: 'Prompt tokens kept when the context shifts or a prompt is cut (-1: all of the prompt); BOS is always kept.',
  }),
  row<number>()('n_cmpl', {
    kind: 'integer',
    group: 'generation',
    min: 1,
    max: 32,
    default: 1,
    openai: ['n'],
    server: 'n_cmpl',
    doc: 'Completions of the one prompt (parallel mode, one slot each): the prompt is evaluated once and its cache copied to each; the result holds them all in `choices`, token events carry their `index`. A fixed seed gives choice i the seed + i.',
  }),
  row<boolean>()('cache_prompt', {
    kind: 'boolean',
    group: 'generation',
    default: true,
    server: 'cache_prompt',
    doc: "Reuse the slot's cached prefix of the prompt (false: evaluate all of it again).",
  }),
  row<number>()('id_slot', {
    kind: 'integer',
    group: 'generation',
    min: -1,
    max: 31,
    default: -1,
    server: 'id_slot',
    doc: 'Parallel mode: run in this slot (waiting until it is free); -1: the free slot with the longest cached prefix.',
  }),
  row<string[]>()('stop', {
    kind: 'strings',
    group: 'generation',
    size: 64,
    itemSize: 4096,
    default: [],
    openai: ['stop'],
    server: 'stop',
    doc: 'Generation ends before any of these strings (a string or an array); they never reach the streamed text.',
  }),
  row<boolean>()('truncate_prompt', {
    kind: 'boolean',
    group: 'generation',
    extension: true,
    libraryOnly: true,
    doc: "Cut a prompt longer than the context in the middle (keeping n_keep), as llama.node does; false refuses it (ERR_CONTEXT), as llama-server and llama-cli do. Default: the context's ctx_shift.",
  }),
  row<boolean>()('llama_server_context', {
    kind: 'boolean',
    group: 'generation',
    extension: true,
    libraryOnly: true,
    doc: "(llama-ts) A full context as llama-server handles it (the server sets it): the reply stops, or the context shifts, when one cell is left (one token earlier than llama.node), and `truncated` also reports a shift or a full context. Default: false (llama.node's).",
  }),
  row<boolean>()('prefill_assistant', {
    kind: 'boolean',
    group: 'generation',
    extension: true,
    libraryOnly: true,
    doc: "(llama-ts) With messages ending in an assistant message: continue that reply, as llama-server does (the template renders the messages before it and the generation prompt; the reply's text follows). Default: false (the template renders it as a whole turn, as llama.node). The server sets it.",
  }),
  row<boolean>()('ignore_eos', {
    kind: 'boolean',
    group: 'sampling',
    default: false,
    llamaCpp: '--ignore-eos',
    server: 'ignore_eos',
    doc: 'Keep generating past end-of-generation tokens (they are banned).',
  }),
  row<AbortSignal>()('signal', {
    sizeDoc: 'an AbortSignal',
    kind: 'custom',
    group: 'generation',
    check: checkSignal,
    libraryOnly: true,
    doc: 'Stops generation (the result has `interrupted: true`), like stopCompletion().',
  }),
  row<LoraScale[]>()('lora', {
    sizeDoc: `≤ ${MAX_LORA} entries { id: integer ≥ 0, scale: finite number }`,
    kind: 'custom',
    group: 'generation',
    check: checkLora,
    size: MAX_LORA,
    server: 'lora',
    doc: "This request's scales of the context's LoRA adapters, by id (their order in `lora_list`); adapters left out get 0. Default: the context's scales.",
  }),
  row<number>()('draft_max', {
    kind: 'integer',
    group: 'generation',
    min: 0,
    max: MAX_DRAFT,
    server: 'speculative.n_max',
    doc: "Tokens drafted per step at most, when the context drafts (`model_draft`, or `spec_type` 'ngram'); 0: no speculative decoding for this request. Default: the context's `draft_max`.",
  }),
  row<number>()('draft_min', {
    kind: 'integer',
    group: 'generation',
    min: 0,
    max: MAX_DRAFT,
    server: 'speculative.n_min',
    doc: "Drafts shorter than this are not used. Default: the context's `draft_min`.",
  }),
  row<number>()('draft_p_min', {
    kind: 'number',
    group: 'generation',
    min: 0,
    max: 1,
    server: 'speculative.p_min',
    doc: "A draft model's draft ends at a token it gives less than this probability (among its top 10). Default: the context's `draft_p_min`.",
  }),

  // output
  row<number>()('n_probs', {
    kind: 'integer',
    group: 'output',
    min: 0,
    max: 100,
    default: 0,
    server: 'n_probs',
    doc: 'Top-N token probabilities per generated token (`completion_probabilities`).',
  }),
  row<boolean>()('post_sampling_probs', {
    kind: 'boolean',
    group: 'output',
    default: false,
    server: 'post_sampling_probs',
    doc: "Probabilities from the chain's final candidates instead of the raw distribution.",
  }),
  row<boolean>()('logprobs', {
    kind: 'boolean',
    group: 'output',
    default: false,
    extension: true,
    libraryOnly: true,
    doc: "Report every generated token with its log-probability and n_probs alternatives in llama-server's shape (`{id, token, bytes, logprob, top_logprobs}`), in events and as the result's `logprobs`.",
  }),
  row<boolean>()('return_progress', {
    kind: 'boolean',
    group: 'output',
    default: false,
    server: 'return_progress',
    doc: "Streaming: token events with `prompt_progress` (`{ total, cache, processed, time_ms }`, llama-server's) and empty text before the prompt's first batch and after each.",
  }),
  row<boolean>()('return_tokens', {
    kind: 'boolean',
    group: 'output',
    default: false,
    server: 'return_tokens',
    doc: 'The result also holds the evaluated prompt (`prompt_tokens`) and the generated token ids (`tokens`).',
  }),
  row<string>()('prefix_key', {
    kind: 'string',
    group: 'output',
    size: PREFIX_KEY_MAX_LENGTH,
    extension: true,
    header: PREFIX_KEY_HEADER,
    doc: `The result's \`prefix_key\`: a hash of the rendered prompt's first tokens (at most ${PREFIX_KEY_TOKENS}) (\`<L>-<hex>\`), for load balancers (docs/replicas.md). Give the previous turn's key ('' for none): it is kept while the prompt still begins with the tokens it covers; otherwise, or when malformed, a new key is made. Without this option no key is made.`,
  }),
  row<number>()('top_logits', {
    kind: 'integer',
    group: 'output',
    min: 0,
    max: 1000,
    default: 0,
    extension: true,
    libraryOnly: true,
    doc: 'The result also holds the K highest raw next-token logits after the prompt (`top_logits`: [id, logit] pairs).',
  }),

  // sampling (llama.cpp's common_params_sampling)
  row<number>()('temperature', {
    kind: 'number',
    group: 'sampling',
    min: -1e6,
    max: 1e6,
    default: 0.8,
    llamaCpp: '--temp',
    openai: ['temperature'],
    server: 'temperature',
    doc: 'Temperature; ≤ 0: greedy.',
  }),
  row<number>()('dynatemp_range', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1e6,
    default: 0,
    llamaCpp: '--dynatemp-range',
    server: 'dynatemp_range',
    doc: 'Dynamic temperature: ± this range around `temperature`, by entropy; 0: off.',
  }),
  row<number>()('dynatemp_exponent', {
    kind: 'number',
    group: 'sampling',
    min: -1e6,
    max: 1e6,
    default: 1,
    llamaCpp: '--dynatemp-exp',
    server: 'dynatemp_exponent',
    doc: 'Dynamic temperature exponent.',
  }),
  row<number>()('top_k', {
    kind: 'integer',
    group: 'sampling',
    min: -1,
    max: I32_MAX,
    default: 40,
    llamaCpp: '--top-k',
    server: 'top_k',
    doc: 'Keep the K most likely tokens; ≤ 0: off.',
  }),
  row<number>()('top_p', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1,
    default: 0.95,
    llamaCpp: '--top-p',
    openai: ['top_p'],
    server: 'top_p',
    doc: 'Nucleus sampling; 1: off.',
  }),
  row<number>()('min_p', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1,
    default: 0.05,
    llamaCpp: '--min-p',
    server: 'min_p',
    doc: "Drop tokens below this fraction of the best one's probability; 0: off.",
  }),
  row<number>()('typical_p', {
    kind: 'number',
    group: 'sampling',
    aliases: ['typ_p'],
    min: 0,
    max: 1,
    default: 1,
    llamaCpp: '--typical',
    server: 'typical_p',
    doc: 'Locally typical sampling; 1: off.',
  }),
  row<number>()('top_n_sigma', {
    kind: 'number',
    group: 'sampling',
    min: -1e6,
    max: 1e6,
    default: -1,
    llamaCpp: '--top-nsigma',
    server: 'top_n_sigma',
    doc: 'Keep tokens within N standard deviations of the best logit; ≤ 0: off.',
  }),
  row<number>()('xtc_probability', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1,
    default: 0,
    llamaCpp: '--xtc-probability',
    server: 'xtc_probability',
    doc: 'Chance that XTC removes the top tokens; 0: off.',
  }),
  row<number>()('xtc_threshold', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1,
    default: 0.1,
    llamaCpp: '--xtc-threshold',
    server: 'xtc_threshold',
    doc: 'XTC removes tokens above this probability (but the last); above 0.5: off.',
  }),
  row<number>()('penalty_last_n', {
    kind: 'integer',
    group: 'sampling',
    aliases: ['repeat_last_n'],
    min: -1,
    max: MAX_LOOKBACK,
    default: 64,
    llamaCpp: '--repeat-last-n',
    server: 'repeat_last_n',
    doc: 'Tokens the penalties look back over; 0: off; -1: the context size.',
  }),
  row<number>()('penalty_repeat', {
    kind: 'number',
    group: 'sampling',
    aliases: ['repeat_penalty'],
    above: 0,
    max: 1e6,
    default: 1,
    llamaCpp: '--repeat-penalty',
    server: 'repeat_penalty',
    doc: 'Repetition penalty; 1: off.',
  }),
  row<number>()('penalty_freq', {
    kind: 'number',
    group: 'sampling',
    aliases: ['frequency_penalty'],
    min: -100,
    max: 100,
    default: 0,
    llamaCpp: '--frequency-penalty',
    openai: ['frequency_penalty'],
    server: 'frequency_penalty',
    doc: 'Frequency penalty; 0: off.',
  }),
  row<number>()('penalty_present', {
    kind: 'number',
    group: 'sampling',
    aliases: ['presence_penalty'],
    min: -100,
    max: 100,
    default: 0,
    llamaCpp: '--presence-penalty',
    openai: ['presence_penalty'],
    server: 'presence_penalty',
    doc: 'Presence penalty; 0: off.',
  }),
  row<number>()('dry_multiplier', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1e6,
    default: 0,
    llamaCpp: '--dry-multiplier',
    server: 'dry_multiplier',
    doc: 'DRY repetition penalty strength; 0: off.',
  }),
  row<number>()('dry_base', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1e6,
    default: 1.75,
    llamaCpp: '--dry-base',
    server: 'dry_base',
    doc: "DRY base (values below 1 fall back to 1.75, as llama-server's).",
  }),
  row<number>()('dry_allowed_length', {
    kind: 'integer',
    group: 'sampling',
    min: 0,
    max: MAX_LOOKBACK,
    default: 2,
    llamaCpp: '--dry-allowed-length',
    server: 'dry_allowed_length',
    doc: 'Repeats up to this length are not penalized by DRY.',
  }),
  row<number>()('dry_penalty_last_n', {
    kind: 'integer',
    group: 'sampling',
    min: -1,
    max: MAX_LOOKBACK,
    default: -1,
    llamaCpp: '--dry-penalty-last-n',
    server: 'dry_penalty_last_n',
    doc: 'Tokens DRY looks back over; 0: off; -1: the context size.',
  }),
  row<string[]>()('dry_sequence_breakers', {
    kind: 'strings',
    group: 'sampling',
    size: 64,
    itemSize: 256,
    default: ['\n', ':', '"', '*'],
    llamaCpp: '--dry-sequence-breaker',
    server: 'dry_sequence_breakers',
    doc: 'Texts that end a DRY repeat (a non-empty array).',
    check: (v, name) => {
      if ((v as unknown[]).length === 0) fail(name, v, 'must be a non-empty array of strings');
    },
  }),
  row<number>()('mirostat', {
    kind: 'enum',
    group: 'sampling',
    values: [0, 1, 2],
    default: 0,
    llamaCpp: '--mirostat',
    server: 'mirostat',
    doc: 'Mirostat: 0 off, 1 or 2 (replaces the chain after temperature).',
  }),
  row<number>()('mirostat_tau', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1e6,
    default: 5,
    llamaCpp: '--mirostat-ent',
    server: 'mirostat_tau',
    doc: 'Mirostat target entropy.',
  }),
  row<number>()('mirostat_eta', {
    kind: 'number',
    group: 'sampling',
    min: 0,
    max: 1e6,
    default: 0.1,
    llamaCpp: '--mirostat-lr',
    server: 'mirostat_eta',
    doc: 'Mirostat learning rate.',
  }),
  row<number>()('seed', {
    kind: 'integer',
    group: 'sampling',
    min: -1,
    max: 0xffffffff,
    default: -1,
    llamaCpp: '--seed',
    openai: ['seed'],
    server: 'seed',
    doc: 'Sampling seed, an unsigned 32-bit number; -1 (or 4294967295): random.',
  }),
  row<LogitBiasOption>()('logit_bias', {
    sizeDoc: '≤ 65536 entries; bias in [-100, 100], false or -Infinity; text keys ≤ 256 chars',
    kind: 'custom',
    group: 'sampling',
    check: checkLogitBias,
    size: LOGIT_BIAS_SIZE,
    openai: ['logit_bias'],
    server: 'logit_bias',
    doc: `[token id or text, bias] pairs or { "id" | "text": bias }: biases in [-${MAX_BIAS}, ${MAX_BIAS}], false (or -Infinity) bans.`,
  }),
  row<number>()('min_keep', {
    kind: 'integer',
    group: 'sampling',
    min: 0,
    max: I32_MAX,
    default: 0,
    llamaCpp: '--min-keep',
    server: 'min_keep',
    doc: 'Tokens the truncating samplers always keep.',
  }),
  row<string[] | string>()('samplers', {
    sizeDoc: '≤ 64 names, or ≤ 64 letters',
    kind: 'custom',
    group: 'sampling',
    check: checkSamplers,
    size: 64,
    default: [...DEFAULT_SAMPLERS],
    llamaCpp: '--samplers',
    server: 'samplers',
    doc: "Step order: names, or llama.cpp's letters (edskypmxt).",
  }),

  // grammars
  row<string>()('grammar', {
    kind: 'string',
    group: 'grammar',
    size: 1 << 20,
    default: '',
    llamaCpp: '--grammar',
    server: 'grammar',
    doc: 'A GBNF grammar the output must follow.',
  }),
  row<unknown>()('json_schema', {
    sizeDoc: 'object, or ≤ 2^20 chars of JSON',
    kind: 'custom',
    group: 'grammar',
    check: checkSchema,
    llamaCpp: '--json-schema',
    server: 'json_schema',
    doc: 'A JSON Schema (object or JSON text) the output must follow.',
  }),
  row<boolean>()('grammar_lazy', {
    kind: 'boolean',
    group: 'grammar',
    default: false,
    server: 'grammar_lazy',
    doc: '`grammar` holds only from the first of `grammar_triggers` in the output on (fed the text from the trigger).',
  }),
  row<GrammarTrigger[]>()('grammar_triggers', {
    sizeDoc: '≤ 100 triggers: {type: 0 token | 1 word | 2 pattern | 3 full pattern, value, token}',
    kind: 'custom',
    group: 'grammar',
    check: checkTriggers,
    size: 100,
    server: 'grammar_triggers',
    doc: "What starts a lazy grammar (llama.cpp's types): a token id, a word, a regular expression anywhere, or one matching the whole output. Over HTTP only tokens and words (a request's regular expression could stall the engine).",
  }),
  row<string[]>()('preserved_tokens', {
    kind: 'strings',
    group: 'grammar',
    size: 1000,
    itemSize: 256,
    server: 'preserved_tokens',
    doc: 'Accepted for llama.node and llama-server compatibility (special tokens are always kept whole here).',
  }),
] as const;

type Row = (typeof OPTIONS)[number];

/** The option values the table describes, by library name and alias (all optional). */
export type CompletionOptionValues = { [S in Row as S['name']]?: NonNullable<S['__type']> } & {
  [S in Row as NonNullable<S['__alias']>]?: NonNullable<S['__type']>;
};

export type OptionName = Row['name'];

export const OPTION_BY_NAME: ReadonlyMap<string, OptionSpec> = new Map(OPTIONS.map((s) => [s.name, s]));

function rangeText(s: OptionSpec): string {
  const lo = s.above !== undefined ? `(${s.above}` : s.min !== undefined ? `[${s.min}` : '(-Infinity';
  const hi = s.max !== undefined ? `${s.max}]` : 'Infinity)';
  return `${lo}, ${hi}`;
}

/** Checks one value against its row; `name` is the name the caller used. Throws OptionError. */
export function checkValue(s: OptionSpec, value: unknown, name = s.name): void {
  if (value === undefined || value === null) return;
  switch (s.kind) {
    case 'number':
    case 'integer': {
      const what = s.kind === 'integer' ? 'an integer' : 'a number';
      if (typeof value !== 'number' || Number.isNaN(value)) fail(name, value, `must be ${what} in ${rangeText(s)}`);
      if (!Number.isFinite(value)) fail(name, value, `must be a finite number in ${rangeText(s)}`);
      if (s.kind === 'integer' && !Number.isInteger(value)) fail(name, value, `must be an integer in ${rangeText(s)}`);
      if ((s.min !== undefined && value < s.min) || (s.max !== undefined && value > s.max)) {
        fail(name, value, `must be ${what} in ${rangeText(s)}`);
      }
      if (s.above !== undefined && !(value > s.above)) fail(name, value, `must be ${what} in ${rangeText(s)}`);
      break;
    }
    case 'boolean':
      if (typeof value !== 'boolean') fail(name, value, 'must be true or false');
      break;
    case 'string':
      if (typeof value !== 'string') fail(name, value, 'must be a string');
      if (s.size !== undefined && value.length > s.size) {
        fail(name, value, `must be at most ${s.size} characters (got ${value.length})`);
      }
      break;
    case 'strings':
      checkStringList(value, name, s.size ?? 1024, s.itemSize ?? 4096, s.name === 'stop');
      break;
    case 'enum':
      if (!s.values!.includes(value as string | number)) {
        fail(name, value, `must be one of ${s.values!.map((x) => JSON.stringify(x)).join(', ')}`);
      }
      break;
    case 'object':
      if (typeof value !== 'object' || Array.isArray(value)) fail(name, value, 'must be an object');
      if (s.size !== undefined && Object.keys(value).length > s.size) {
        fail(name, value, `must have at most ${s.size} keys`);
      }
      break;
    case 'custom':
      break;
  }
  s.check?.(value, name);
}

/** The value of an option under its name or an alias (the first given), with the name used. */
export function optionValue(o: Readonly<Record<string, unknown>>, s: OptionSpec): [string, unknown] {
  const v = o[s.name];
  if (v !== undefined && v !== null) return [s.name, v];
  for (const a of s.aliases ?? []) {
    const x = o[a];
    if (x !== undefined && x !== null) return [a, x];
  }
  return [s.name, undefined];
}

/** Checks every option the table knows (others are ignored, as llama.node ignores them). Throws OptionError. */
export function checkOptions(o: unknown): asserts o is CompletionOptionValues {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) fail('options', o, 'must be an object');
  const r = o as Record<string, unknown>;
  for (const s of OPTIONS) {
    const [name, v] = optionValue(r, s);
    checkValue(s, v, name);
  }
}

/** An option's value (after checkOptions), or its default. */
export function get<T>(o: Readonly<Record<string, unknown>>, name: OptionName): T {
  const s = OPTION_BY_NAME.get(name)!;
  const [, v] = optionValue(o, s);
  return (v === undefined ? s.default : v) as T;
}

// ---- sampling settings ----

function samplerOrder(v: string | readonly string[]): SamplerName[] {
  if (typeof v === 'string') return Array.from(v, (ch) => SAMPLER_LETTERS[ch]!);
  return v.map((n) => SAMPLER_NAMES[n]!);
}

function logitBiasEntries(v: LogitBiasOption | undefined, vocab: SamplingVocab | undefined): LogitBias[] {
  if (v === undefined) return [];
  const out: LogitBias[] = [];
  const add = (key: number | string, b: number | boolean) => {
    const bias = b === false ? -Infinity : (b as number);
    if (typeof key === 'number') {
      if (vocab && key >= vocab.nTokens) {
        throw new OptionError('logit_bias', v, `token ${key} is not a token id (0..${vocab.nTokens - 1})`);
      }
      out.push({ token: key, bias });
      return;
    }
    if (!vocab) throw new OptionError('logit_bias', v, 'biasing text needs a vocabulary');
    for (const token of vocab.encode(key, { addSpecial: false, parseSpecial: false })) out.push({ token, bias });
  };
  if (Array.isArray(v)) for (const [k, b] of v) add(k, b);
  else for (const [k, b] of Object.entries(v)) add(/^\s*[+-]?\d+$/.test(k) ? Number(k) : k, b);
  return out;
}

/**
 * The sampling chain's settings from checked options (checkOptions first), with the
 * table's defaults. `vocab` resolves text in logit_bias and ignore_eos's tokens; `nCtx`
 * is what -1 means for penalty_last_n and dry_penalty_last_n.
 */
export function resolveSampling(
  o: Readonly<Record<string, unknown>>,
  vocab?: SamplingVocab,
  nCtx?: number,
): ResolvedSamplingParams {
  const g = <T>(n: OptionName) => get<T>(o, n);
  const grammar = g<string>('grammar');
  const schema = g<unknown>('json_schema');
  if (schema !== undefined && grammar !== '') {
    throw new OptionError('json_schema', schema, 'either json_schema or grammar can be given, not both');
  }
  if (g<boolean>('grammar_lazy') && grammar === '') {
    throw new OptionError('grammar_lazy', true, 'a lazy grammar needs `grammar` (GBNF) and `grammar_triggers`');
  }
  const bias = logitBiasEntries(g<LogitBiasOption | undefined>('logit_bias'), vocab);
  const ignoreEos = g<boolean>('ignore_eos');
  if (ignoreEos) {
    if (!vocab) throw new OptionError('ignore_eos', true, 'needs a vocabulary (to know the end-of-generation tokens)');
    for (const token of eogTokens(vocab)) bias.push({ token, bias: -Infinity });
  }
  const dryBase = g<number>('dry_base');
  const seed = g<number>('seed');
  return {
    temperature: g('temperature'),
    dynatemp_range: g('dynatemp_range'),
    dynatemp_exponent: g('dynatemp_exponent'),
    top_k: g('top_k'),
    top_p: g('top_p'),
    min_p: g('min_p'),
    typical_p: g('typical_p'),
    top_n_sigma: g('top_n_sigma'),
    xtc_probability: g('xtc_probability'),
    xtc_threshold: g('xtc_threshold'),
    penalty_last_n: g('penalty_last_n'),
    penalty_repeat: g('penalty_repeat'),
    penalty_freq: g('penalty_freq'),
    penalty_present: g('penalty_present'),
    dry_multiplier: g('dry_multiplier'),
    dry_base: dryBase < 1 ? 1.75 : dryBase,
    dry_allowed_length: g('dry_allowed_length'),
    dry_penalty_last_n: g('dry_penalty_last_n'),
    dry_sequence_breakers: [...g<string[]>('dry_sequence_breakers')],
    mirostat: g<0 | 1 | 2>('mirostat'),
    mirostat_tau: g('mirostat_tau'),
    mirostat_eta: g('mirostat_eta'),
    seed: seed < 0 ? DEFAULT_SEED : seed >>> 0,
    logit_bias: bias,
    ignore_eos: ignoreEos,
    grammar,
    json_schema: schema,
    n_probs: g('n_probs'),
    post_sampling_probs: g('post_sampling_probs'),
    min_keep: g('min_keep'),
    samplers: samplerOrder(g<string | string[]>('samplers')),
    n_ctx: nCtx,
  };
}

/** The JSON Schema a response_format asks for, or undefined for plain text (after checkOptions). */
export function responseFormatSchema(rf: CompletionResponseFormat | undefined): unknown {
  if (rf === undefined || rf === null) return undefined;
  switch (rf.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return rf.schema ?? {};
    case 'json_schema': {
      const s = rf.json_schema?.schema ?? rf.schema;
      if (s === undefined || s === null) {
        throw new OptionError('response_format', rf, 'json_schema.schema is required');
      }
      return s;
    }
  }
}

// ---- the server's names ----

/**
 * A request body's options under their library names: every row's llama-server and
 * OpenAI fields (the first present wins; library-only rows are not read). Fields the
 * table does not know are left out. Values are checked: OptionError names the field as
 * the client spelled it.
 */
export function optionsFromRequest(body: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of OPTIONS as readonly OptionSpec[]) {
    if (s.libraryOnly) continue;
    const names = [...(s.openai ?? []), ...(s.server ? [s.server] : [])];
    for (const n of names) {
      const v = body[n];
      if (v === undefined || v === null) continue;
      checkValue(s, v, n);
      out[s.name] = v;
      break;
    }
  }
  return out;
}

/** Is this a sampling error (a bad option value found while building the chain)? */
export function isOptionFailure(e: unknown): e is OptionError | SamplingError {
  return e instanceof OptionError || e instanceof SamplingError;
}

// ---- the reference in README.md ----

function rangeCell(s: OptionSpec): string {
  switch (s.kind) {
    case 'number':
    case 'integer':
      return `${s.kind === 'integer' ? 'integer ' : ''}${rangeText(s)}`;
    case 'boolean':
      return 'true / false';
    case 'enum':
      return s.values!.map((v) => JSON.stringify(v)).join(', ');
    case 'string':
      return `≤ ${s.size} chars`;
    case 'strings':
      return `≤ ${s.size} strings of ≤ ${s.itemSize} chars`;
    case 'object':
      return `object, ≤ ${s.size} keys`;
    case 'custom':
      return s.sizeDoc ?? '';
  }
}

/** The option table as README.md shows it (a test keeps the two the same). */
export function optionsMarkdown(): string {
  const esc = (t: string) => t.replace(/\|/g, '\\|');
  const lines = [
    '| option (aliases) | range / size | default | llama.cpp | OpenAI / llama-server | what it does |',
    '|---|---|---|---|---|---|',
  ];
  for (const s of OPTIONS as readonly OptionSpec[]) {
    const name = `\`${s.name}\`${s.aliases?.length ? ` (${s.aliases.map((a) => `\`${a}\``).join(', ')})` : ''}`;
    const def = s.default === undefined ? '' : `\`${JSON.stringify(s.default)}\``;
    const http = s.libraryOnly
      ? 'library only'
      : s.header
        ? `header \`${s.header}\``
        : [...new Set([...(s.openai ?? []), ...(s.server ? [s.server] : [])])].map((n) => `\`${n}\``).join(', ');
    const flag = s.llamaCpp ? `\`${s.llamaCpp}\`` : '';
    const doc = `${s.extension ? '(llama-ts) ' : ''}${s.doc}`;
    lines.push(`| ${name} | ${esc(rangeCell(s))} | ${esc(def)} | ${flag} | ${http} | ${esc(doc)} |`);
  }
  return lines.join('\n');
}
