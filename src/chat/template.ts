// ChatTemplate: a model's Jinja chat template (GGUF `tokenizer.chat_template`) rendered with
// @huggingface/jinja, with the built-in format detected from the same text as its fallback.
//
// Rendering gives templates what transformers and llama.cpp give them: `messages`,
// `add_generation_prompt`, `bos_token`, `eos_token`, `tools` (only when there are some),
// `raise_exception`, `strftime_now`, plus caller context (`enable_thinking`, …). Before the
// first render, a few probe renders find what the template can take (llama.cpp's minja does
// the same): a system turn (if not, system text is merged into the next user turn), string
// content (if not, typed parts are kept), tool-call arguments as objects or as JSON text.
//
// A template is untrusted code (it comes with the model file): every render runs under a
// budget (TemplateLimits: time, evaluation steps, the longest string and list it may build,
// a stop flag), checked as the interpreter goes, so a template can neither loop for ever
// nor build a value large enough to crash the process (V8 aborts the whole process, worker
// threads included, when an array outgrows its maximum size). Rendering off the caller's
// thread, and killing a render, is src/untrusted's job; this file only keeps each render
// bounded.
import { Environment, Interpreter, Template } from '@huggingface/jinja';
import type { GGUFFile } from '../gguf/index.js';
import { logger } from '../log.js';
import type { Vocab } from '../vocab/index.js';
import { applyBuiltin, type BuiltinFormat, detectBuiltin, isBuiltinFormat } from './builtin.js';
import { joinTextParts, plainMessages, templateMessages } from './messages.js';
import { templateThinks } from './reasoning.js';
import { strftime, toDate } from './strftime.js';
import { detectToolCallFormat, type ToolCallFormat } from './tool-calls.js';
import type { ChatMessage, ChatMessagePart, Tool } from './types.js';

const log = logger('chat');

/**
 * Why a template could not be used: 'missing' (no Jinja text), 'parse' (does not parse),
 * 'render' (failed while rendering: something the interpreter cannot do), 'raise' (the
 * template called raise_exception: it refuses the input), 'limit' (it exceeded a limit of
 * TemplateLimits, or was stopped).
 */
export type ChatTemplateErrorKind = 'missing' | 'parse' | 'render' | 'raise' | 'limit';

/** The template is missing, does not parse, failed, refused the input, or hit a limit (`kind` says which). */
export class ChatTemplateError extends Error {
  override name = 'ChatTemplateError';
  constructor(
    message: string,
    readonly kind: ChatTemplateErrorKind = 'render',
  ) {
    super(message);
  }
}

/**
 * Bounds on one render (the probe renders before a template's first use count in it).
 * Every bound is checked while the template runs; exceeding one is a ChatTemplateError of
 * kind 'limit' naming the bound.
 */
export interface TemplateLimits {
  /** Wall-clock time, in ms. Default 5000. */
  timeMs?: number;
  /** Expressions and statements evaluated. Default 50,000,000. */
  maxSteps?: number;
  /** Longest string the template may build, its output included, in UTF-16 units. Default 16 Mi. */
  maxOutputChars?: number;
  /** Longest list it may build or iterate (range() included). Default 100,000. */
  maxItems?: number;
  /** Polled while rendering; true stops the render (a 'limit' error saying it was stopped). */
  shouldStop?: () => boolean;
}

export const DEFAULT_TEMPLATE_LIMITS = {
  timeMs: 5000,
  maxSteps: 50_000_000,
  maxOutputChars: 16 * 1024 * 1024,
  maxItems: 100_000,
} as const;

/** indent and tojson widths above this are refused (a width repeats on every line). */
const MAX_INDENT = 1024;

/** What `raise_exception(...)` throws inside a template, told apart from engine errors. */
class TemplateRaised extends Error {}

export interface ChatTemplateOptions {
  bosToken?: string;
  eosToken?: string;
  /**
   * The vocabulary adds BOS (EOS) when tokenizing: a leading BOS text (trailing EOS text)
   * the template writes is cut from the prompt, as llama.cpp does, so it is not doubled.
   */
  addBos?: boolean;
  addEos?: boolean;
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
  /** Bounds on the render (defaults: DEFAULT_TEMPLATE_LIMITS). */
  limits?: TemplateLimits;
}

export interface RenderResult {
  prompt: string;
  /** 'jinja' when the template rendered, else the built-in format that wrote the prompt. */
  format: 'jinja' | BuiltinFormat;
  /** Why the Jinja template was not used, when it exists but failed. */
  fallbackReason?: string;
}

/** Renders a template's Jinja text (ChatTemplate.renderJinja's contract), possibly elsewhere. */
export type JinjaRenderer = (
  template: ChatTemplate,
  messages: readonly ChatMessage[],
  opts: RenderOptions,
) => Promise<string>;

/** What probe renders found out about a template. */
export interface TemplateCaps {
  systemRole: boolean;
  typedContent: boolean;
  objectArguments: boolean;
}

const PROBE = '<__llama_ts_probe__>';

/** A render's remaining allowance (shared by the probe renders and the render itself). */
class Budget {
  steps = 0;
  readonly deadline: number;
  readonly timeMs: number;
  readonly maxSteps: number;
  readonly maxOutputChars: number;
  readonly maxItems: number;
  readonly shouldStop: (() => boolean) | undefined;

  constructor(
    limits: TemplateLimits,
    readonly label: string,
  ) {
    this.timeMs = limits.timeMs ?? DEFAULT_TEMPLATE_LIMITS.timeMs;
    this.maxSteps = limits.maxSteps ?? DEFAULT_TEMPLATE_LIMITS.maxSteps;
    this.maxOutputChars = limits.maxOutputChars ?? DEFAULT_TEMPLATE_LIMITS.maxOutputChars;
    this.maxItems = limits.maxItems ?? DEFAULT_TEMPLATE_LIMITS.maxItems;
    this.shouldStop = limits.shouldStop;
    this.deadline = performance.now() + this.timeMs;
  }

  exceeded(what: string): ChatTemplateError {
    return new ChatTemplateError(`${this.label} ${what}`, 'limit');
  }

  /** Called per evaluation; checks the clock and the stop flag every 1024 steps. */
  step(): void {
    if (++this.steps > this.maxSteps)
      throw this.exceeded(`took more than ${this.maxSteps} evaluation steps (maxSteps)`);
    if ((this.steps & 1023) === 0) {
      if (performance.now() > this.deadline)
        throw this.exceeded(`took longer than ${this.timeMs} ms to render (timeMs)`);
      if (this.shouldStop?.()) throw this.exceeded('rendering was stopped');
    }
  }

  checkItems(n: number): void {
    if (n > this.maxItems) throw this.exceeded(`built a list of more than ${this.maxItems} items (maxItems)`);
  }

  checkChars(n: number): void {
    if (n > this.maxOutputChars) {
      throw this.exceeded(`built a string of more than ${this.maxOutputChars} characters (maxOutputChars)`);
    }
  }
}

/** Python's range(), refusing more than the budget's items before making any. */
function boundedRange(budget: Budget) {
  return (start: number, stop?: number, step = 1): number[] => {
    if (stop === undefined) [start, stop] = [0, start];
    if (![start, stop, step].every(Number.isFinite)) throw new Error('range() arguments must be finite numbers');
    if (step === 0) throw new Error('range() step must not be zero');
    const n = Math.max(0, Math.ceil((stop - start) / step));
    budget.checkItems(n);
    const out: number[] = new Array(n);
    for (let k = 0; k < n; k++) out[k] = start + k * step;
    return out;
  };
}

/** A runtime value as the interpreter holds it (its classes are not exported). */
interface Value {
  type: string;
  value: unknown;
}

/** The interpreter methods bounded here (private in its typings, so patched per instance). */
interface InterpreterInternals {
  evaluate(node: unknown, env: unknown): Value;
  evaluateBlock(statements: unknown, env: unknown): Value;
  applyFilter(operand: Value, filter: { type: string; callee?: { type: string; value?: string } }, env: unknown): Value;
  evaluateArguments(args: unknown, env: unknown): [Value[], Map<string, Value>];
  evaluateFor(node: unknown, env: unknown): Value;
  evaluateBinaryExpression(node: unknown, env: unknown): Value;
}

type ForNode = { iterable: { type: string; lhs?: unknown } };
type BinaryNode = { operator: { value: string }; left: unknown; right: unknown };

/** A node standing for a value already evaluated (handed back to the interpreter's own operators). */
const EVALUATED = 'llama-ts:Evaluated';

/**
 * An Interpreter whose every evaluation spends from `budget`: each value it produces is
 * checked against the string and list bounds, and indent/tojson widths are capped (they
 * multiply: a width is repeated on every line).
 */
function boundedInterpreter(env: Environment, budget: Budget): Interpreter {
  const it = new Interpreter(env);
  const inner = it as unknown as InterpreterInternals;
  const evaluate = inner.evaluate.bind(inner);
  const evaluateBlock = inner.evaluateBlock.bind(inner);
  const applyFilter = inner.applyFilter.bind(inner);
  const evaluateArguments = inner.evaluateArguments.bind(inner);
  const evaluateFor = inner.evaluateFor.bind(inner);
  const evaluateBinary = inner.evaluateBinaryExpression.bind(inner);
  let widthArgs = false;
  inner.evaluate = (node, e) => {
    if ((node as { type?: unknown } | undefined)?.type === EVALUATED) return (node as { value: Value }).value;
    budget.step();
    const v = evaluate(node, e);
    if (v.type === 'StringValue') budget.checkChars((v.value as string).length);
    else if (v.type === 'ArrayValue' || v.type === 'TupleValue') budget.checkItems((v.value as unknown[]).length);
    return v;
  };
  // a loop runs its body through evaluateBlock, once per item, even when the body is empty
  inner.evaluateBlock = (statements, e) => {
    budget.step();
    const v = evaluateBlock(statements, e);
    budget.checkChars((v.value as string).length);
    return v;
  };
  inner.applyFilter = (operand, filter, e) => {
    const name = filter.type === 'CallExpression' ? filter.callee?.value : undefined;
    const saved = widthArgs;
    widthArgs = name === 'indent' || name === 'tojson';
    try {
      return applyFilter(operand, filter, e);
    } finally {
      widthArgs = saved;
    }
  };
  inner.evaluateArguments = (args, e) => {
    const check = widthArgs;
    widthArgs = false;
    const r = evaluateArguments(args, e);
    widthArgs = check;
    if (check) {
      for (const v of [...r[0], ...r[1].values()]) {
        if (v.type === 'IntegerValue' && Math.abs(v.value as number) > MAX_INDENT) {
          throw budget.exceeded(`asked for an indent of ${v.value as number} (at most ${MAX_INDENT})`);
        }
      }
    }
    return r;
  };
  // a for loop over an undefined value runs zero times (Jinja and llama.cpp's engine
  // iterate an undefined as empty; Phi-4-mini's template loops over `message.tool_calls`
  // whatever the message)
  inner.evaluateFor = (node, e) => {
    const n = node as ForNode;
    const target = n.iterable.type === 'SelectExpression' ? n.iterable.lhs : n.iterable;
    if (inner.evaluate(target, new Environment(e as Environment)).type !== 'UndefinedValue')
      return evaluateFor(node, e);
    const empty = { type: 'ArrayLiteral', value: [] };
    const iterable = n.iterable.type === 'SelectExpression' ? { ...n.iterable, lhs: empty } : empty;
    return evaluateFor({ ...(node as object), iterable }, e);
  };
  // llama.cpp's engine joins a string and a null or undefined with + or ~ as if the latter
  // were '' (FireFunction v2's template adds a `functions` it is never given)
  const nullish = (v: Value) => v.type === 'UndefinedValue' || v.type === 'NullValue';
  inner.evaluateBinaryExpression = (node, e) => {
    const n = node as BinaryNode;
    if (n.operator.value !== '+' && n.operator.value !== '~') return evaluateBinary(node, e);
    const left = inner.evaluate(n.left, e);
    const right = inner.evaluate(n.right, e);
    if ((nullish(left) && right.type === 'StringValue') || (nullish(right) && left.type === 'StringValue')) {
      const text = (nullish(left) ? '' : (left.value as string)) + (nullish(right) ? '' : (right.value as string));
      return inner.evaluate({ type: 'StringLiteral', value: text }, e);
    }
    const done = (value: Value) => ({ type: EVALUATED, value });
    return evaluateBinary({ ...n, left: done(left), right: done(right) }, e);
  };
  return it;
}

/**
 * Runs a parsed template with `vars` over Jinja's constants and range(), within `budget`.
 * (Template.render declares its own raise_exception and strftime_now, which cannot then be
 * replaced.)
 */
function run(program: Template, vars: Record<string, unknown>, budget: Budget): string {
  const env = new Environment();
  const all: Record<string, unknown> = {
    true: true,
    false: false,
    none: null,
    True: true,
    False: false,
    None: null,
    range: boundedRange(budget),
    ...vars,
  };
  for (const [k, v] of Object.entries(all)) env.set(k, v);
  const out = boundedInterpreter(env, budget).run(program.parsed) as unknown as { value: unknown };
  return String(out.value);
}

/**
 * llama.cpp's Gemma 4 rewrite: an assistant turn with tool calls, the `tool` messages after
 * it and a final assistant answer become one assistant message with `tool_calls`,
 * `tool_responses` ({name, response}: the result parsed as JSON when it is JSON) and
 * `content`.
 */
function gemma4ToolResponses(messages: Record<string, unknown>[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const calls = (m: Record<string, unknown> | undefined) =>
    Array.isArray(m?.tool_calls) ? (m.tool_calls as Record<string, unknown>[]) : [];
  for (let i = 0; i < messages.length; ) {
    const m = messages[i];
    if (m.role !== 'assistant' || calls(m).length === 0) {
      out.push(m);
      i++;
      continue;
    }
    const toolCalls = calls(m);
    const responses: { name: string; response: unknown }[] = [];
    i++;
    for (; i < messages.length && messages[i].role === 'tool'; i++) {
      const t = messages[i];
      let response: unknown = t.content;
      if (typeof response === 'string') {
        try {
          response = JSON.parse(response);
        } catch {
          // not JSON: the text as it is
        }
      }
      const fn = toolCalls[responses.length]?.function as { name?: unknown } | undefined;
      const name = typeof fn?.name === 'string' && fn.name !== '' ? fn.name : String(t.tool_call_id ?? '');
      responses.push({ name, response });
    }
    const msg: Record<string, unknown> = { role: 'assistant', tool_calls: toolCalls };
    if (responses.length > 0) msg.tool_responses = responses;
    const next = messages[i];
    const text = next?.content;
    if (
      next?.role === 'assistant' &&
      calls(next).length === 0 &&
      ((typeof text === 'string' && text !== '') || (Array.isArray(text) && text.length > 0))
    ) {
      msg.content = text;
      i++;
    }
    if (typeof m.reasoning_content === 'string') msg.reasoning_content = m.reasoning_content;
    out.push(msg);
  }
  return out;
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
  readonly addBos: boolean;
  readonly addEos: boolean;
  readonly label: string;
  /** How this model writes tool calls, read from the template text (undefined: no call syntax). */
  readonly toolCallFormat: ToolCallFormat | undefined;
  private program: Template | undefined;
  private parseError: string | undefined;
  private caps: TemplateCaps | undefined;
  private warned = false;
  /**
   * Gemma 4's first templates take tool results as a `tool_responses` field of the model's
   * turn, not as `tool` messages; llama.cpp rewrites the messages for them (templates
   * from before the "OpenAI Chat Completions" comment), and so does this.
   */
  private readonly gemma4ToolTurns: boolean;

  /**
   * `template`: Jinja text, a built-in format name ('chatml', 'llama3', …), or undefined/''
   * for a model without one (then chatml, llama.cpp's default). The text is parsed on first
   * use, so a template made on one thread and rendered on another is parsed only there.
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
    this.addBos = opts.addBos ?? false;
    this.addEos = opts.addEos ?? false;
    this.label = opts.label ?? 'chat template';
    this.toolCallFormat = detectToolCallFormat(this.source);
    const src = this.source ?? '';
    this.gemma4ToolTurns = src.includes("'<|tool_call>call:'") && !src.includes('{#- OpenAI Chat Completions:');
  }

  /** The parsed program; throws ChatTemplateError ('missing' or 'parse'). */
  private parsed(): Template {
    if (this.source === undefined) {
      throw new ChatTemplateError(`${this.label}: no Jinja template (built-in format '${this.builtin}')`, 'missing');
    }
    if (!this.program && this.parseError === undefined) {
      try {
        this.program = new Template(this.source);
      } catch (e) {
        this.parseError = errorText(e);
      }
    }
    if (!this.program) throw new ChatTemplateError(`${this.label} does not parse: ${this.parseError}`, 'parse');
    return this.program;
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

  /** Whether the template writes <think> reasoning blocks (their text is then split off replies). */
  get thinks(): boolean {
    return this.source !== undefined && templateThinks(this.source);
  }

  /** The probe results (computed once; within `limits`, a ChatTemplateError of kind 'limit' beyond them). */
  capabilities(limits: TemplateLimits = {}): TemplateCaps {
    return this.probe(new Budget(limits, this.label));
  }

  private probe(budget: Budget): TemplateCaps {
    if (this.caps) return this.caps;
    let program: Template | undefined;
    try {
      program = this.parsed();
    } catch {
      program = undefined;
    }
    const probe = (messages: unknown[]): string => {
      if (!program) return '';
      try {
        return run(
          program,
          {
            messages,
            add_generation_prompt: false,
            bos_token: '',
            eos_token: '',
            raise_exception: (m: unknown) => {
              throw new TemplateRaised(String(m));
            },
            strftime_now: (f: unknown) => strftime(new Date(2024, 0, 1), String(f)),
          },
          budget,
        );
      } catch (e) {
        if (e instanceof ChatTemplateError && e.kind === 'limit') throw e;
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
    // (a template that reads the object's value shows it in any form: JSON, Gemma 4's key:value)
    const asObject = probe(call({ code: `print('${PROBE}')` })).includes(PROBE);
    const stringContent = probe([{ role: 'user', content: PROBE }]).includes(PROBE);
    const typed = probe([{ role: 'user', content: [{ type: 'text', text: PROBE }] }]).includes(PROBE);
    this.caps = {
      systemRole: probe([{ role: 'system', content: PROBE }, user]).includes(PROBE),
      typedContent: !stringContent && typed,
      objectArguments: !(asText && !asObject),
    };
    return this.caps;
  }

  /**
   * Renders the Jinja template (within `opts.limits`); throws ChatTemplateError naming the
   * problem, its `kind` saying which.
   */
  renderJinja(messages: readonly ChatMessage[], opts: RenderOptions = {}): string {
    const program = this.parsed();
    const budget = new Budget(opts.limits ?? {}, this.label);
    const caps = this.probe(budget);
    let msgs = templateMessages(messages, { typedContent: caps.typedContent, objectArguments: caps.objectArguments });
    if (!caps.systemRole && msgs.some((m) => m.role === 'system')) msgs = mergeSystemTurns(msgs);
    if (this.gemma4ToolTurns) msgs = gemma4ToolResponses(msgs);
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
      let out = run(program, ctx, budget);
      // the tokenizer adds these itself (llama.cpp's common_chat_template_direct_apply)
      if (this.addBos && this.bosToken !== '' && out.startsWith(this.bosToken)) out = out.slice(this.bosToken.length);
      if (this.addEos && this.eosToken !== '' && out.endsWith(this.eosToken)) {
        out = out.slice(0, out.length - this.eosToken.length);
      }
      return out;
    } catch (e) {
      if (e instanceof ChatTemplateError) throw e;
      if (e instanceof TemplateRaised) {
        throw new ChatTemplateError(`${this.label} raised an exception: ${e.message}`, 'raise');
      }
      throw new ChatTemplateError(`${this.label} failed to render: ${errorText(e)}`, 'render');
    }
  }

  /**
   * The prompt for a conversation: the Jinja template when it renders, else the built-in
   * format. A template that does not parse or that the interpreter fails on falls back
   * (one warning per template saying why); one that raises (refusing the conversation,
   * as llama-server reports it) or exceeds a limit is an error.
   */
  apply(messages: readonly ChatMessage[], opts: RenderOptions = {}): RenderResult {
    if (this.source === undefined) return this.builtinResult(messages, opts);
    try {
      return { prompt: this.renderJinja(messages, opts), format: 'jinja' };
    } catch (e) {
      return this.fallBack(e, messages, opts);
    }
  }

  /** `apply` with the Jinja render done by `render` (on another thread: see src/untrusted). */
  async applyWith(messages: readonly ChatMessage[], opts: RenderOptions, render: JinjaRenderer): Promise<RenderResult> {
    if (this.source === undefined) return this.builtinResult(messages, opts);
    try {
      return { prompt: await render(this, messages, opts), format: 'jinja' };
    } catch (e) {
      return this.fallBack(e, messages, opts);
    }
  }

  private builtinResult(messages: readonly ChatMessage[], opts: RenderOptions): RenderResult {
    return { prompt: this.renderBuiltin(messages, opts.addGenerationPrompt ?? true), format: this.builtin };
  }

  private fallBack(e: unknown, messages: readonly ChatMessage[], opts: RenderOptions): RenderResult {
    if (opts.strict || !(e instanceof ChatTemplateError) || e.kind === 'raise' || e.kind === 'limit') throw e;
    const note = `${e.message}; using the built-in '${this.builtin}' format instead`;
    if (this.warned) log.debug(note);
    else log.warn(note);
    this.warned = true;
    return { ...this.builtinResult(messages, opts), fallbackReason: e.message };
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
export function specialTokenTexts(
  file: GGUFFile,
  vocab?: Vocab,
): { bosToken: string; eosToken: string; addBos: boolean; addEos: boolean } {
  if (vocab) {
    const piece = (id: number) => (id >= 0 && id < vocab.nTokens ? vocab.tokenToPiece(id, true) : '');
    return { bosToken: piece(vocab.bos), eosToken: piece(vocab.eos), addBos: vocab.addBos, addEos: vocab.addEos };
  }
  const tokens = file.getStringArray('tokenizer.ggml.tokens', [] as string[]);
  const text = (key: string) => {
    const id = file.getInt(key, -1);
    return id >= 0 && id < tokens.length ? tokens[id]! : '';
  };
  // without the vocabulary: its explicit flags, else SentencePiece's defaults (BOS, no EOS)
  const spm = file.getString('tokenizer.ggml.model', '') === 'llama';
  return {
    bosToken: text('tokenizer.ggml.bos_token_id'),
    eosToken: text('tokenizer.ggml.eos_token_id'),
    addBos: file.getBool('tokenizer.ggml.add_bos_token', spm),
    addEos: file.getBool('tokenizer.ggml.add_eos_token', false),
  };
}

/** The names of a file's extra templates (`tokenizer.chat_template.<name>`, e.g. tool_use). */
export function chatTemplateNames(file: GGUFFile): string[] {
  const prefix = 'tokenizer.chat_template.';
  return [...file.metadata.keys()].filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length));
}
