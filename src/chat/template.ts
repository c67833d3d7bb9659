// ChatTemplate: a model's Jinja chat template (GGUF `tokenizer.chat_template`) rendered with
// @huggingface/jinja, with the built-in format detected from the same text as its fallback.
//
// Rendering gives templates what transformers and llama.cpp give them: `messages`,
// `add_generation_prompt`, `bos_token`, `eos_token`, `tools` (only when there are some),
// `raise_exception`, `strftime_now`, plus caller context (`enable_thinking`, …). Before the
// first render, a few probe renders find what the template can take (llama.cpp's minja does
// the same): a system turn (if not, system text is merged into the next user turn), string
// content (if not, typed parts are kept), tool-call arguments as objects or as JSON text.
import { Environment, Interpreter, Template } from '@huggingface/jinja';
import type { GGUFFile } from '../gguf/index.js';
import { logger } from '../log.js';
import type { Vocab } from '../vocab/index.js';
import { applyBuiltin, type BuiltinFormat, detectBuiltin, isBuiltinFormat } from './builtin.js';
import { joinTextParts, plainMessages, templateMessages } from './messages.js';
import { strftime, toDate } from './strftime.js';
import { detectToolCallFormat, type ToolCallFormat } from './tool-calls.js';
import type { ChatMessage, ChatMessagePart, Tool } from './types.js';

const log = logger('chat');

/** The template is missing, does not parse, or failed while rendering (raise_exception included). */
export class ChatTemplateError extends Error {
  override name = 'ChatTemplateError';
}

/** What `raise_exception(...)` throws inside a template, told apart from engine errors. */
class TemplateRaised extends Error {}

export interface ChatTemplateOptions {
  bosToken?: string;
  eosToken?: string;
  /** Names the template in messages (default "chat template"). */
  label?: string;
}

export interface RenderOptions {
  /** Open the assistant's turn at the end (default true). */
  addGenerationPrompt?: boolean;
  /** Function tools, OpenAI shape; passed to the template only when non-empty. */
  tools?: readonly Tool[];
  /** Further template variables (enable_thinking, date_string, chat_template_kwargs, …). */
  context?: Record<string, unknown>;
  /** The date `strftime_now` formats (default: now); seconds or ms since the epoch, or date text. */
  now?: Date | number | string;
  /** Throw ChatTemplateError instead of falling back to the built-in format. */
  strict?: boolean;
}

export interface RenderResult {
  prompt: string;
  /** 'jinja' when the template rendered, else the built-in format that wrote the prompt. */
  format: 'jinja' | BuiltinFormat;
  /** Why the Jinja template was not used, when it exists but failed. */
  fallbackReason?: string;
}

/** What probe renders found out about a template. */
export interface TemplateCaps {
  systemRole: boolean;
  typedContent: boolean;
  objectArguments: boolean;
}

const PROBE = '<__llama_ts_probe__>';

/** Python's range(). */
function range(start: number, stop?: number, step = 1): number[] {
  if (stop === undefined) [start, stop] = [0, start];
  if (step === 0) throw new Error('range() step must not be zero');
  const out: number[] = [];
  for (let i = start; step > 0 ? i < stop : i > stop; i += step) out.push(i);
  return out;
}

/**
 * Runs a parsed template with `vars` over Jinja's constants and range(). (Template.render
 * declares its own raise_exception and strftime_now, which cannot then be replaced.)
 */
function run(program: Template, vars: Record<string, unknown>): string {
  const env = new Environment();
  const all: Record<string, unknown> = {
    true: true,
    false: false,
    none: null,
    True: true,
    False: false,
    None: null,
    range,
    ...vars,
  };
  for (const [k, v] of Object.entries(all)) env.set(k, v);
  const out = new Interpreter(env).run(program.parsed) as unknown as { value: unknown };
  return String(out.value);
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * Merges system turns into the next user turn (joined by a newline) for templates without a
 * system role; system text with no user turn after it becomes a user turn of its own.
 */
function mergeSystemTurns(messages: Record<string, unknown>[]): Record<string, unknown>[] {
  const text = (c: unknown) =>
    typeof c === 'string' ? c : Array.isArray(c) ? joinTextParts(c as ChatMessagePart[]) : '';
  const out: Record<string, unknown>[] = [];
  let pending = '';
  const flush = () => {
    if (pending === '') return;
    out.push({ role: 'user', content: pending });
    pending = '';
  };
  for (const m of messages) {
    if (m.role === 'system') {
      pending = pending === '' ? text(m.content) : `${pending}\n${text(m.content)}`;
      continue;
    }
    if (m.role === 'user' && pending !== '') {
      const own = text(m.content);
      out.push({ ...m, content: own === '' ? pending : `${pending}\n${own}` });
      pending = '';
      continue;
    }
    flush();
    out.push(m);
  }
  flush();
  return out;
}

export class ChatTemplate {
  /** The Jinja text; undefined when the template is only a built-in format (or absent). */
  readonly source: string | undefined;
  /** The format used without Jinja: named, detected from the text, or chatml. */
  readonly builtin: BuiltinFormat;
  /** Whether `builtin` was named or recognized, rather than the chatml default. */
  readonly builtinDetected: boolean;
  readonly bosToken: string;
  readonly eosToken: string;
  readonly label: string;
  /** How this model writes tool calls, read from the template text. */
  readonly toolCallFormat: ToolCallFormat;
  private readonly program: Template | undefined;
  private readonly parseError: string | undefined;
  private caps: TemplateCaps | undefined;
  private warned = false;

  /**
   * `template`: Jinja text, a built-in format name ('chatml', 'llama3', …), or undefined/''
   * for a model without one (then chatml, llama.cpp's default).
   */
  constructor(template: string | undefined, opts: ChatTemplateOptions = {}) {
    const text = template === undefined || template.trim() === '' ? undefined : template;
    const named = text !== undefined && isBuiltinFormat(text.trim()) ? (text.trim() as BuiltinFormat) : undefined;
    this.source = named ? undefined : text;
    const detected = named ?? (text === undefined ? undefined : detectBuiltin(text));
    this.builtin = detected ?? 'chatml';
    this.builtinDetected = detected !== undefined;
    this.bosToken = opts.bosToken ?? '';
    this.eosToken = opts.eosToken ?? '';
    this.label = opts.label ?? 'chat template';
    this.toolCallFormat = detectToolCallFormat(this.source);
    if (this.source !== undefined) {
      try {
        this.program = new Template(this.source);
      } catch (e) {
        this.parseError = errorText(e);
      }
    }
  }

  /**
   * The template stored in a GGUF file (`tokenizer.chat_template`, or
   * `tokenizer.chat_template.<name>`), with BOS/EOS texts from `vocab` when given, else
   * from the file's token list.
   */
  static fromGGUF(file: GGUFFile, opts: { vocab?: Vocab; name?: string } = {}): ChatTemplate {
    const key = opts.name ? `tokenizer.chat_template.${opts.name}` : 'tokenizer.chat_template';
    const text = file.getString(key, null) ?? undefined;
    return new ChatTemplate(text, { ...specialTokenTexts(file, opts.vocab), label: `chat template '${key}'` });
  }

  /** True when there is a Jinja text (it may still fail to parse or render). */
  get hasJinja(): boolean {
    return this.source !== undefined;
  }

  /** The probe results (computed once). */
  capabilities(): TemplateCaps {
    if (this.caps) return this.caps;
    const program = this.program;
    const probe = (messages: unknown[]): string => {
      if (!program) return '';
      try {
        return run(program, {
          messages,
          add_generation_prompt: false,
          bos_token: '',
          eos_token: '',
          raise_exception: (m: unknown) => {
            throw new TemplateRaised(String(m));
          },
          strftime_now: (f: unknown) => strftime(new Date(2024, 0, 1), String(f)),
        });
      } catch {
        return '';
      }
    };
    const user = { role: 'user', content: 'Hey' };
    const call = (args: unknown) => [
      user,
      {
        role: 'assistant',
        content: '',
        tool_calls: [{ id: 'call00001', type: 'function', function: { name: 'ipython', arguments: args } }],
      },
    ];
    const shown = `"code": "print('${PROBE}')"`;
    const asText = probe(call(`{"code": "print('${PROBE}')"}`)).includes(shown);
    const asObject = probe(call({ code: `print('${PROBE}')` })).includes(shown);
    const stringContent = probe([{ role: 'user', content: PROBE }]).includes(PROBE);
    const typed = probe([{ role: 'user', content: [{ type: 'text', text: PROBE }] }]).includes(PROBE);
    this.caps = {
      systemRole: probe([{ role: 'system', content: PROBE }, user]).includes(PROBE),
      typedContent: !stringContent && typed,
      objectArguments: !(asText && !asObject),
    };
    return this.caps;
  }

  /** Renders the Jinja template; throws ChatTemplateError naming the problem. */
  renderJinja(messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
    if (this.source === undefined) {
      throw new ChatTemplateError(`${this.label}: no Jinja template (built-in format '${this.builtin}')`);
    }
    if (!this.program) throw new ChatTemplateError(`${this.label} does not parse: ${this.parseError}`);
    const caps = this.capabilities();
    let msgs = templateMessages(messages, { typedContent: caps.typedContent, objectArguments: caps.objectArguments });
    if (!caps.systemRole && msgs.some((m) => m.role === 'system')) msgs = mergeSystemTurns(msgs);
    const date = toDate(opts.now);
    const ctx: Record<string, unknown> = {
      messages: msgs,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      bos_token: this.bosToken,
      eos_token: this.eosToken,
      raise_exception: (m: unknown) => {
        throw new TemplateRaised(String(m));
      },
      strftime_now: (f: unknown) => strftime(date, String(f)),
    };
    if (opts.tools && opts.tools.length > 0) ctx.tools = opts.tools;
    if (opts.context) Object.assign(ctx, opts.context);
    try {
      return run(this.program, ctx);
    } catch (e) {
      if (e instanceof TemplateRaised) throw new ChatTemplateError(`${this.label} raised an exception: ${e.message}`);
      throw new ChatTemplateError(`${this.label} failed to render: ${errorText(e)}`);
    }
  }

  /**
   * The prompt for a conversation: the Jinja template when it renders, else the built-in
   * format (with one warning per template saying why).
   */
  apply(messages: readonly ChatMessage[], opts: RenderOptions = {}): RenderResult {
    let fallbackReason: string | undefined;
    if (this.source !== undefined) {
      try {
        return { prompt: this.renderJinja(messages, opts), format: 'jinja' };
      } catch (e) {
        if (opts.strict || !(e instanceof ChatTemplateError)) throw e;
        fallbackReason = e.message;
        const note = `${e.message}; using the built-in '${this.builtin}' format instead`;
        if (this.warned) log.debug(note);
        else log.warn(note);
        this.warned = true;
      }
    }
    const prompt = this.renderBuiltin(messages, opts.addGenerationPrompt ?? true);
    return fallbackReason === undefined
      ? { prompt, format: this.builtin }
      : { prompt, format: this.builtin, fallbackReason };
  }

  /** `apply(...).prompt`. */
  render(messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
    return this.apply(messages, opts).prompt;
  }

  /** The conversation in this template's built-in format (no Jinja). */
  renderBuiltin(messages: readonly ChatMessage[], addGenerationPrompt = true): string {
    return applyBuiltin(this.builtin, plainMessages(messages), addGenerationPrompt);
  }
}

/**
 * BOS and EOS as template text: the vocabulary's pieces (llama.cpp renders them with
 * special tokens shown), or the token list's entries; '' when a file has no such token.
 */
export function specialTokenTexts(file: GGUFFile, vocab?: Vocab): { bosToken: string; eosToken: string } {
  if (vocab) {
    const piece = (id: number) => (id >= 0 && id < vocab.nTokens ? vocab.tokenToPiece(id, true) : '');
    return { bosToken: piece(vocab.bos), eosToken: piece(vocab.eos) };
  }
  const tokens = file.getStringArray('tokenizer.ggml.tokens', [] as string[]);
  const text = (key: string) => {
    const id = file.getInt(key, -1);
    return id >= 0 && id < tokens.length ? tokens[id]! : '';
  };
  return { bosToken: text('tokenizer.ggml.bos_token_id'), eosToken: text('tokenizer.ggml.eos_token_id') };
}

/** The names of a file's extra templates (`tokenizer.chat_template.<name>`, e.g. tool_use). */
export function chatTemplateNames(file: GGUFFile): string[] {
  const prefix = 'tokenizer.chat_template.';
  return [...file.metadata.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
}
