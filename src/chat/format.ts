// getFormattedChat as llama.node defines it: media parts → markers, then either the Jinja
// template ('jinja', with tools) or the built-in format ('llama-chat'). A model without a
// template is never Jinja-capable: it gets chatml through the built-in path, whatever
// `jinja` says (llama.node's snapshot for its template-less test model shows exactly that).
import type { GGUFFile } from '../gguf/index.js';
import { logger } from '../log.js';
import type { Vocab } from '../vocab/index.js';
import { extractMedia } from './messages.js';
import { THINK_END, THINK_START, thinkingForcedOpen } from './reasoning.js';
import { strftime, toDate } from './strftime.js';
import {
  ChatTemplate,
  type JinjaRenderer,
  type RenderOptions,
  type RenderResult,
  specialTokenTexts,
  type TemplateLimits,
} from './template.js';
import { type ParsedToolCalls, type ParseToolCallsOptions, parseToolCalls, type ToolCallFormat } from './tool-calls.js';
import type { ChatMessage, Tool } from './types.js';

const log = logger('chat');

/** A model's templates: the default one, and `tool_use` when the file has it (used with tools). */
export interface ChatTemplates {
  default: ChatTemplate;
  toolUse?: ChatTemplate;
}

/**
 * The templates of a GGUF file. `override` (llama.node's `chat_template` option: Jinja text
 * or a built-in name) replaces the file's.
 */
export function loadChatTemplates(file: GGUFFile, opts: { vocab?: Vocab; override?: string } = {}): ChatTemplates {
  if (opts.override !== undefined && opts.override !== '') {
    return {
      default: new ChatTemplate(opts.override, { ...specialTokenTexts(file, opts.vocab), label: 'chat template' }),
    };
  }
  const out: ChatTemplates = { default: ChatTemplate.fromGGUF(file, opts.vocab ? { vocab: opts.vocab } : {}) };
  if (file.has('tokenizer.chat_template.tool_use')) {
    out.toolUse = ChatTemplate.fromGGUF(file, { ...(opts.vocab ? { vocab: opts.vocab } : {}), name: 'tool_use' });
  }
  return out;
}

/** llama.node's isJinjaSupported: the model has a Jinja template. */
export function isJinjaSupported(templates: ChatTemplates): boolean {
  return templates.default.hasJinja || templates.toolUse?.hasJinja === true;
}

/**
 * `chat_format` numbers in formatted-chat results: 0 is plain content (no tool-call parsing);
 * the others name how tool calls are parsed from the reply.
 */
export const CHAT_FORMATS = ['content-only', 'mistral', 'llama3', 'hermes', 'harmony'] as const;
export type ChatFormatName = (typeof CHAT_FORMATS)[number];

export function chatFormatOf(format: ToolCallFormat): number {
  return CHAT_FORMATS.indexOf(format);
}

export interface GetFormattedChatParams {
  jinja?: boolean;
  response_format?: unknown;
  tools?: Tool[];
  parallel_tool_calls?: boolean;
  tool_choice?: string;
  enable_thinking?: boolean;
  /** Passed to templates that use it (gpt-oss: 'low', 'medium', 'high'). */
  reasoning_effort?: string;
  add_generation_prompt?: boolean;
  now?: string | number;
  chat_template_kwargs?: Record<string, unknown>;
  /** Bounds on the template's render (default: DEFAULT_TEMPLATE_LIMITS). */
  limits?: TemplateLimits;
}

export interface FormattedChatResult {
  type: 'jinja' | 'llama-chat';
  prompt: string;
  has_media: boolean;
  media_paths?: string[];
  // jinja results only:
  chat_format?: number;
  grammar?: string;
  grammar_lazy?: boolean;
  grammar_triggers?: Array<{ type: number; value: string; token: number }>;
  thinking_forced_open?: boolean;
  /** The template's reasoning tags, when it writes reasoning blocks. */
  thinking_start_tag?: string;
  thinking_end_tag?: string;
  preserved_tokens?: string[];
  additional_stops?: string[];
}

/** What getFormattedChat decides before rendering: a finished built-in result, or a Jinja render to do. */
type ChatPlan =
  | { done: FormattedChatResult }
  | {
      done?: undefined;
      tmpl: ChatTemplate;
      chat: ChatMessage[];
      opts: RenderOptions;
      tools: Tool[] | undefined;
      has_media: boolean;
      media_paths: string[] | undefined;
    };

function planFormattedChat(
  templates: ChatTemplates,
  messages: readonly ChatMessage[],
  template: string | undefined,
  params: GetFormattedChatParams,
): ChatPlan {
  const media = extractMedia(messages);
  const chat = media.messages;
  const { has_media, media_paths } = media;
  const useJinja = isJinjaSupported(templates) && (params.jinja ?? true);
  const tools = params.tools && params.tools.length > 0 ? params.tools : undefined;
  const base = templates.default;
  let tmpl: ChatTemplate;
  if (template) {
    const { bosToken, eosToken, addBos, addEos } = base;
    tmpl = new ChatTemplate(template, { bosToken, eosToken, addBos, addEos });
  } else if (tools && templates.toolUse?.hasJinja) tmpl = templates.toolUse;
  else tmpl = base;
  const addGenerationPrompt = params.add_generation_prompt ?? true;

  if (!useJinja) {
    if (tmpl.hasJinja && !tmpl.builtinDetected) {
      // llama.cpp refuses a template it cannot recognize without Jinja; rendering it is better
      log.warn(`${tmpl.label} matches no built-in format; rendering it with Jinja`);
    } else {
      return {
        done: { type: 'llama-chat', prompt: tmpl.renderBuiltin(chat, addGenerationPrompt), has_media, media_paths },
      };
    }
  }

  // the date values llama.cpp gives every template (Llama 3.x's "Today Date", FireFunction's)
  const date = toDate(params.now);
  const context: Record<string, unknown> = {
    date_string: strftime(date, '%d %b %Y'),
    datetime: strftime(date, '%b %d %Y'),
    enable_thinking: params.enable_thinking ?? true,
  };
  if (params.reasoning_effort !== undefined) context.reasoning_effort = params.reasoning_effort;
  if (params.tool_choice !== undefined) context.tool_choice = params.tool_choice;
  if (params.parallel_tool_calls !== undefined) context.parallel_tool_calls = params.parallel_tool_calls;
  if (params.chat_template_kwargs) Object.assign(context, params.chat_template_kwargs);
  const opts: RenderOptions = {
    addGenerationPrompt,
    ...(tools ? { tools } : {}),
    ...(params.now !== undefined ? { now: params.now } : {}),
    context,
    ...(params.limits ? { limits: params.limits } : {}),
  };
  return { tmpl, chat, opts, tools, has_media, media_paths };
}

/**
 * The render of the generation prompt, when one is needed for thinking_forced_open (a
 * template writing <think> blocks, rendered without the generation prompt); else undefined.
 */
function needsGenerationRender(plan: Exclude<ChatPlan, { done: FormattedChatResult }>, res: RenderResult) {
  return res.format === 'jinja' && plan.tmpl.thinks && !plan.opts.addGenerationPrompt
    ? { ...plan.opts, addGenerationPrompt: true }
    : undefined;
}

function finishFormattedChat(
  plan: Exclude<ChatPlan, { done: FormattedChatResult }>,
  res: RenderResult,
  /** The prompt with the generation prompt (when `res` was rendered without it). */
  genPrompt?: string,
) {
  const { tmpl, tools, has_media, media_paths } = plan;
  if (res.format !== 'jinja') return { type: 'llama-chat' as const, prompt: res.prompt, has_media, media_paths };
  // a harmony reply always needs parsing (its channels), tools or not; a template with no
  // call syntax is content only with tools too (chat_format 0, no grammar), as llama.cpp
  const toolFormat = tools || tmpl.toolCallFormat === 'harmony' ? tmpl.toolCallFormat : undefined;
  const thinks = tmpl.thinks;
  // as llama.cpp: whether the generation prompt opens a <think> block (with or without it here)
  const forcedOpen = thinks && thinkingForcedOpen(genPrompt ?? res.prompt);
  const out: FormattedChatResult = {
    type: 'jinja',
    prompt: res.prompt,
    has_media,
    media_paths,
    chat_format: toolFormat ? chatFormatOf(toolFormat) : 0,
    grammar: '',
    grammar_lazy: false,
    grammar_triggers: [],
    thinking_forced_open: forcedOpen,
    ...(thinks ? { thinking_start_tag: THINK_START, thinking_end_tag: THINK_END } : {}),
    preserved_tokens: [
      ...(toolFormat === 'hermes' ? ['<tool_call>', '</tool_call>'] : []),
      ...(toolFormat === 'harmony' ? ['<|channel|>', '<|constrain|>', '<|message|>', '<|start|>', '<|end|>'] : []),
      ...(thinks ? [THINK_START, THINK_END] : []),
    ],
    additional_stops: [],
  };
  return out;
}

/**
 * Formats a conversation the way llama.node's `LlamaContext.getFormattedChat(messages,
 * template?, params?)` does. Messages take `content` (or its alias `text`). The template
 * renders on this thread, within `params.limits`.
 */
export function getFormattedChat(
  templates: ChatTemplates,
  messages: readonly ChatMessage[],
  template?: string,
  params: GetFormattedChatParams = {},
): FormattedChatResult {
  const plan = planFormattedChat(templates, messages, template, params);
  if (plan.done) return plan.done;
  const res = plan.tmpl.apply(plan.chat, plan.opts);
  const gen = needsGenerationRender(plan, res);
  return finishFormattedChat(plan, res, gen && plan.tmpl.apply(plan.chat, gen).prompt);
}

/**
 * getFormattedChat with the Jinja render done by `render` (src/untrusted renders it in
 * its worker, bounded and abortable).
 */
export async function formatChat(
  templates: ChatTemplates,
  messages: readonly ChatMessage[],
  template: string | undefined,
  params: GetFormattedChatParams,
  render: JinjaRenderer,
): Promise<FormattedChatResult> {
  const plan = planFormattedChat(templates, messages, template, params);
  if (plan.done) return plan.done;
  const res = await plan.tmpl.applyWith(plan.chat, plan.opts, render);
  const gen = needsGenerationRender(plan, res);
  return finishFormattedChat(plan, res, gen && (await plan.tmpl.applyWith(plan.chat, gen, render)).prompt);
}

/**
 * A reply split by a formatted chat's `chat_format`: tool calls parsed for a tool format,
 * the whole text as content for 0 (content only).
 */
export function parseChatOutput(text: string, chatFormat = 0, opts: ParseToolCallsOptions = {}): ParsedToolCalls {
  const name = CHAT_FORMATS[chatFormat];
  if (name === undefined || name === 'content-only') return { content: text, tool_calls: [] };
  return parseToolCalls(text, name, opts);
}
