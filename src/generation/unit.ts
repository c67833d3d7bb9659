// A generation unit: one request on one sequence, from options to result. It owns
//   - the prompt's tokens (messages through the chat template; a prompt longer than the
//     context cut in the middle, keeping n_keep, as llama.cpp's server does),
//   - reuse of the sequence's cached prefix (as much as the memory can keep),
//   - the sampling chain (grammar, logit bias, penalties that also saw the prompt),
//   - context shift when the context fills (n_keep kept, half of the rest dropped), if
//     the memory can shift and n_predict is set,
//   - text: StreamDecoder (never a split UTF-8 character) → StopStringMatcher (text that
//     could begin a stop string held back, so a stop string is never streamed) → onToken,
//   - with messages, the reply read as it streams (chat/output.ts): reasoning, content and
//     tool calls, as deltas on token events and whole on the result; a grammar that must
//     not constrain a reasoning block waits until the block ends; a thinking budget
//     forces the block's end tag when it runs out,
//   - n_probs / logprobs, finish reasons and timings.
// It never decodes: the batcher (batcher.ts) puts its next tokens into a shared batch,
// decodes, and hands it its row of logits.
//
//   queued ──begin──► prompt ──last prompt token decoded──► generating ──► done
//                       └──────────── stop / error / context full ──────────┘
import {
  assistantPrefill,
  CHAT_FORMATS,
  type ChatOutput,
  type ChatOutputOptions,
  ChatOutputParser,
  type ChatTemplates,
  chatDelta,
  type FormattedChatResult,
  type TemplateLimits,
  THINK_END,
  THINK_START,
  type Tool,
  type ToolCallFormat,
  type ToolGrammarTrigger,
} from '../chat/index.js';
import { type ActiveLora, ContextError, loraKey } from '../model/index.js';
import { type GrammarLimits, GrammarSampler, type LazyTriggers } from '../sampling/grammar/index.js';
import {
  buildSamplingChain,
  completionProbabilities,
  grammarConstraint,
  type ProbabilityRow,
  postSamplingProbabilities,
  type ResolvedSamplingParams,
  rawProbabilities,
  type SamplingChain,
  SamplingError,
  StopStringMatcher,
} from '../sampling/index.js';
import { type Draft, type DraftRequest, verifyDraft } from '../speculative/index.js';
import { compileSamplingGrammar, compileToolCallGrammar, formatChatOnWorker } from '../untrusted/index.js';
import type { StreamDecoder, Vocab } from '../vocab/index.js';
import { binaryToText, textToBinary } from '../vocab/unicode.js';
import { OptionError } from './errors.js';
import { commonPrefix, type SequenceMemory } from './memory.js';
import {
  type CompletionResponseFormat,
  checkOptions,
  type GrammarTrigger,
  get,
  namedTool,
  resolveSampling,
  responseFormatSchema,
  type ToolChoice,
  TRIGGER_PATTERN,
  TRIGGER_PATTERN_FULL,
  TRIGGER_TOKEN,
  TRIGGER_WORD,
} from './options.js';
import { prefixKey } from './prefix-key.js';
import type {
  CompletionProbability,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionToken,
  TokenLogprob,
} from './types.js';

/** What a unit needs from its context beyond the memory. */
export interface UnitEnvironment {
  readonly vocab: Vocab;
  /** The chat templates (only asked for when a request has messages). */
  templates(): ChatTemplates;
  /** Bounds on rendering a template and compiling a grammar (untrusted work); defaults when absent. */
  readonly templateLimits?: Omit<TemplateLimits, 'shouldStop'>;
  readonly grammarLimits?: GrammarLimits & { timeMs?: number };
  /**
   * Tokenizes a prompt text that holds media (mtmd's chunks): text tokens, and for each
   * position a media item takes its negative placeholder id (the batcher's PromptMedia
   * evaluates those runs). Absent: the vocabulary's tokenizer.
   */
  readonly tokenizeMedia?: (text: string) => number[];
}

/** What is known of a request once its prompt is rendered and tokenized (before it runs). */
export interface PromptInfo {
  /** Prompt tokens (before any cut to the context). */
  n_prompt_tokens: number;
  /** With the `prefix_key` option: the prompt's prefix key (prefix-key.ts). */
  prefix_key?: string;
}

export interface UnitHooks {
  onToken?: (t: LlamaCompletionToken) => void;
  /** Called once the request is prepared, before it is queued (the server's X-Prefix-Key header). */
  onPrompt?: (p: PromptInfo) => void;
  /** Polled before every step; true ends generation (interrupted). */
  shouldStop?: () => boolean;
}

/** A sequence: its id in the context and the tokens its memory holds, positions 0 … n-1. */
export interface Sequence {
  readonly seq: number;
  tokens: number[];
  /** The LoRA adapters (loraKey) its memory was computed with; '' or absent: none. */
  lora?: string;
}

/** What a unit runs with beyond its request: its context's adapters and speculative decoding. */
export interface UnitSettings {
  /** LoRA adapters applied while this unit decodes (units with other adapters wait for other steps). */
  loras?: readonly ActiveLora[];
  /** Speculative decoding, when the context drafts and the request wants it. */
  draft?: { max: number; min: number; pMin: number };
}

/** Where a unit runs: its sequence, the context it may use, and the memory's answers. */
export interface Placement {
  readonly sequence: Sequence;
  readonly memory: SequenceMemory;
  /** Tokens of context the sequence may hold. */
  readonly nCtx: number;
  /** Shift when the context fills, and cut a prompt that does not fit (else: refuse it). */
  readonly ctxShift: boolean;
}

// ---- the untrusted steps: chat templates and grammar compilation ----
// Both run on the untrusted-work worker (src/untrusted: bounded in time and size,
// terminable), each through one function here; `signal` ends them (a stop request).

/** Renders a conversation with the model's chat template, on the untrusted-work worker. */
export function formatChat(
  env: UnitEnvironment,
  o: LlamaCompletionOptions,
  tools: readonly Tool[] | undefined,
  signal?: AbortSignal,
): Promise<FormattedChatResult> {
  const choice = o.tool_choice as ToolChoice | undefined;
  return formatChatOnWorker(
    env.templates(),
    o.messages!,
    o.chat_template,
    {
      jinja: o.jinja ?? true,
      ...(tools ? { tools: [...tools] } : {}),
      ...(o.parallel_tool_calls !== undefined ? { parallel_tool_calls: o.parallel_tool_calls } : {}),
      ...(choice !== undefined ? { tool_choice: typeof choice === 'string' ? choice : 'required' } : {}),
      ...(o.enable_thinking !== undefined ? { enable_thinking: o.enable_thinking } : {}),
      ...(o.reasoning_effort !== undefined ? { reasoning_effort: o.reasoning_effort } : {}),
      ...(o.chat_template_kwargs !== undefined ? { chat_template_kwargs: o.chat_template_kwargs } : {}),
      ...(env.templateLimits ? { limits: env.templateLimits } : {}),
    },
    signal ? { signal } : {},
  );
}

/**
 * The grammar constraint (GBNF or JSON Schema) of checked sampling settings for a
 * vocabulary: compiled on the untrusted-work worker, then checked against the
 * vocabulary (a grammar no token can satisfy is an error).
 */
export async function compileConstraint(
  env: UnitEnvironment,
  r: ResolvedSamplingParams,
  signal?: AbortSignal,
): Promise<GrammarSampler | undefined> {
  const { timeMs, ...limits } = env.grammarLimits ?? {};
  const compiled = await compileSamplingGrammar(r, {
    ...(signal ? { signal } : {}),
    limits,
    ...(timeMs !== undefined ? { timeMs } : {}),
  });
  return grammarConstraint(r, env.vocab, compiled);
}

/** Lazy-grammar triggers as the sampler takes them (words and patterns as regular expressions, tokens by id). */
export function lazyTriggers(
  triggers: readonly (GrammarTrigger | ToolGrammarTrigger)[],
  vocab: Vocab,
  option = 'grammar_triggers',
): LazyTriggers {
  const patterns: RegExp[] = [];
  const tokens: number[] = [];
  const escapeRe = (w: string) => w.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  for (const t of triggers) {
    const value = (t as { value?: string }).value ?? '';
    switch (t.type) {
      case TRIGGER_TOKEN: {
        const id = (t as GrammarTrigger).token ?? -1;
        if (id >= 0) {
          if (id >= vocab.nTokens)
            throw new OptionError(option, t, `token ${id} is not a token id (0..${vocab.nTokens - 1})`);
          tokens.push(id);
          break;
        }
        const ids = vocab.encode(value, { addSpecial: false, parseSpecial: true });
        if (ids.length !== 1)
          throw new OptionError(option, t, `${JSON.stringify(value)} is not one token (it is ${ids.length})`);
        tokens.push(ids[0]!);
        break;
      }
      case TRIGGER_WORD:
        patterns.push(new RegExp(escapeRe(value)));
        break;
      case TRIGGER_PATTERN:
        patterns.push(new RegExp(value));
        break;
      case TRIGGER_PATTERN_FULL:
        patterns.push(new RegExp(`${value.startsWith('^') ? '' : '^'}${value}${value.endsWith('$') ? '' : '$'}`));
        break;
    }
  }
  return { patterns, tokens };
}

/** What the tools of a request are: the format the reply is read in, the tools, and the grammar's mode. */
export interface ToolUse {
  format: ToolCallFormat;
  tools: readonly Tool[];
  mode: 'auto' | 'required';
  parallel: boolean;
}

/**
 * The grammar of a request's tool calls, built and compiled on the untrusted-work worker
 * from the tools' schemas, checked against the vocabulary; lazy for tool_choice 'auto'.
 */
export async function compileToolConstraint(
  env: UnitEnvironment,
  use: ToolUse,
  signal?: AbortSignal,
): Promise<GrammarSampler> {
  const { timeMs, ...limits } = env.grammarLimits ?? {};
  const g = await compileToolCallGrammar(
    {
      format: use.format,
      tools: use.tools,
      mode: use.mode,
      parallel: use.parallel,
    },
    { ...(signal ? { signal } : {}), limits, ...(timeMs !== undefined ? { timeMs } : {}) },
  );
  let sampler: GrammarSampler;
  try {
    sampler = GrammarSampler.fromCompiled(g.compiled, env.vocab);
  } catch (e) {
    throw new SamplingError(
      'tools',
      use.tools.map((t) => t.function.name),
      (e as Error).message,
      { cause: e },
    );
  }
  if (g.lazy) sampler.setLazy(lazyTriggers(g.triggers, env.vocab, 'tools'));
  return sampler;
}

// ---- preparation ----

/** A request ready to run: everything that needs no context memory. */
export interface PreparedRequest {
  readonly options: LlamaCompletionOptions;
  /** Prompt tokens (before any cut to the context). */
  readonly prompt: number[];
  readonly chatFormat: number;
  readonly withMessages: boolean;
  readonly withTools: boolean;
  readonly stops: string[];
  readonly nPredict: number;
  readonly nKeep: number;
  readonly chain: SamplingChain;
  /** With the `prefix_key` option: the prompt's key. */
  readonly prefixKey?: string;
  /** With messages: how the reply is read (reasoning, tool calls). */
  readonly chat?: ChatOutputOptions;
  /** The grammar holds only after the reply's reasoning block (detached until then). */
  readonly grammarAfterReasoning: boolean;
  /** A thinking budget: tokens a reasoning block may hold, and the tokens that end it. */
  readonly thinkingBudget?: { tokens: number; forced: number[] };
  /** Reuse the slot's cached prefix (cache_prompt). */
  readonly cachePrompt: boolean;
  /** The slot asked for (id_slot), -1: any. */
  readonly idSlot: number;
  /** Completions of this prompt (n_cmpl). */
  readonly nCmpl: number;
}

function encodePrompt(vocab: Vocab, p: string | number[], media?: (text: string) => number[]): number[] {
  if (Array.isArray(p)) {
    for (const t of p) {
      if (t >= vocab.nTokens)
        throw new OptionError('prompt', p, `token ${t} is not a token id (0..${vocab.nTokens - 1})`);
    }
    return [...p];
  }
  const t = media ? media(p) : vocab.encode(p, { addSpecial: true, parseSpecial: true });
  // a template (or prompt) that writes the BOS text itself: keep one BOS
  if (t.length > 1 && vocab.addBos && t[0] === vocab.bos && t[1] === vocab.bos) t.shift();
  return t;
}

/** The context a request will run in: a sequence's size, and whether it shifts (and cuts prompts). */
export interface ContextLimits {
  readonly nCtx: number;
  readonly ctxShift: boolean;
  /** Tokens per decode (fill-in-the-middle takes a batch's worth of prefix and suffix). Default 2048. */
  readonly nBatch?: number;
}

/**
 * A fill-in-the-middle prompt as llama-server's /infill builds it (format_infill): extra
 * chunks (with FIM_REP / FIM_SEP when the model has them), then FIM_PRE, the prefix's end
 * (up to 3/4 of a batch) and the prompt, FIM_SUF and the suffix's start, FIM_MID.
 */
export function infillPrompt(
  vocab: Vocab,
  o: LlamaCompletionOptions,
  nCtx: number,
  nBatch: number,
  nPredict: number,
): number[] {
  if (vocab.fimPre < 0 || vocab.fimSuf < 0 || vocab.fimMid < 0) {
    throw new OptionError(
      'input_prefix',
      o.input_prefix ?? '',
      'the model has no fill-in-the-middle tokens (FIM_PRE, FIM_SUF, FIM_MID)',
    );
  }
  if (o.messages)
    throw new OptionError(
      'messages',
      o.messages,
      'fill in the middle takes input_prefix and input_suffix, not messages',
    );
  if (Array.isArray(o.prompt)) throw new OptionError('prompt', o.prompt, 'fill in the middle takes the prompt as text');
  const tok = (t: string) => vocab.encode(t, { addSpecial: false, parseSpecial: false });
  const extra: number[] = [];
  if (vocab.fimRep >= 0) extra.push(vocab.fimRep, ...tok('myproject\n'));
  for (const chunk of o.input_extra ?? []) {
    if (vocab.fimSep >= 0) extra.push(vocab.fimSep, ...tok(chunk.filename ?? 'tmp'));
    else extra.push(...tok('\n\n--- snip ---\n\n'));
    extra.push(...tok(chunk.text));
  }
  if (vocab.fimSep >= 0) extra.push(vocab.fimSep, ...tok('filename'));
  let prefix = tok(o.input_prefix ?? '');
  let suffix = tok(o.input_suffix ?? '');
  const prompt = tok(typeof o.prompt === 'string' ? o.prompt : '');
  const nPrefix = Math.min(prefix.length, 3 * Math.floor(nBatch / 4));
  const nSuffix = Math.min(suffix.length, Math.max(0, Math.floor(nBatch / 4) - (2 + prompt.length)));
  const nExtra = Math.min(Math.max(0, nCtx - nBatch - 2 * Math.max(0, nPredict)), extra.length);
  prefix = [vocab.fimPre, ...prefix.slice(prefix.length - nPrefix), ...prompt];
  suffix = [vocab.fimSuf, ...suffix.slice(0, nSuffix)];
  const out = [...(vocab.addBos ? [vocab.bos] : []), ...prefix];
  return [...extra.slice(extra.length - nExtra), ...out, ...suffix, vocab.fimMid];
}

function promptTooLong(n: number, nCtx: number): ContextError {
  return new ContextError(`the prompt is ${n} tokens; the context holds ${nCtx} (raise n_ctx, or cut the prompt)`);
}

/**
 * Checks the options (the option table; OptionError names a bad one), formats messages,
 * tokenizes the prompt and builds the sampling chain. A prompt that cannot fit the
 * context (and is not to be cut) fails here, before the request is queued.
 */
export async function prepareRequest(
  env: UnitEnvironment,
  options: LlamaCompletionOptions,
  limits: ContextLimits,
  /** Ends the untrusted work (template, grammar) early: the promise rejects with an AbortError. */
  signal?: AbortSignal,
): Promise<PreparedRequest> {
  const nCtx = limits.nCtx;
  checkOptions(options);
  const o = options;
  const vocab = env.vocab;
  const stops = get<string[] | string>(o, 'stop');
  const stopList = (typeof stops === 'string' ? [stops] : [...stops]).filter((s) => s !== '');
  const withMessages = o.messages !== undefined && o.messages !== null;
  const choice = (o.tool_choice ?? 'auto') as ToolChoice;
  let tools = choice !== 'none' && o.tools && o.tools.length > 0 ? o.tools : undefined;
  const named = namedTool(choice);
  if (named !== undefined) {
    const t = (o.tools ?? []).filter((x) => x?.function?.name === named);
    if (t.length === 0) {
      const known = (o.tools ?? []).map((x) => x?.function?.name).join(', ');
      throw new OptionError('tool_choice', choice, `no tool is named '${named}' (tools: ${known || 'none'})`);
    }
    tools = t;
  } else if (choice === 'required' && !tools) {
    throw new OptionError('tool_choice', choice, "'required' needs tools");
  }
  if (tools && !withMessages) throw new OptionError('tools', o.tools, 'tools need messages (a chat), not a prompt');
  let chatFormat = 0;
  let prompt: number[];
  let chat: ChatOutputOptions | undefined;
  let toolUse: ToolUse | undefined;
  if (withMessages) {
    const prefill = o.prefill_assistant === true ? assistantPrefill(o.messages!) : undefined;
    if (prefill && o.enable_thinking === true) {
      throw new OptionError(
        'enable_thinking',
        true,
        'continuing an assistant message (prefill_assistant) cannot think first',
      );
    }
    const fmt = await formatChat(env, prefill ? { ...o, messages: prefill.messages } : o, tools, signal);
    chatFormat = fmt.chat_format ?? 0;
    for (const s of fmt.additional_stops ?? []) if (s !== '' && !stopList.includes(s)) stopList.push(s);
    prompt = encodePrompt(vocab, fmt.prompt + (prefill?.text ?? ''), env.tokenizeMedia);
    const reasoning = get<string>(o, 'reasoning_format') !== 'none';
    // a template with no call syntax (or none rendered: jinja false) reads its reply as
    // content, tools or not, with no grammar: llama.cpp's, whose parser finds no call format
    const name = fmt.type === 'jinja' && chatFormat > 0 ? CHAT_FORMATS[chatFormat] : undefined;
    if (tools && name !== undefined && name !== 'content-only') {
      toolUse = {
        format: name,
        tools,
        mode: choice === 'auto' ? 'auto' : 'required',
        parallel: o.parallel_tool_calls === true,
      };
    }
    // a harmony reply (gpt-oss) is always read for its channels, tools or not
    const harmony = fmt.type === 'jinja' && CHAT_FORMATS[chatFormat] === 'harmony';
    chat = {
      ...(toolUse ? { tools: toolUse.format } : harmony ? { tools: 'harmony' as ToolCallFormat } : {}),
      reasoning,
      thinkingForcedOpen: fmt.thinking_forced_open === true,
      thinkStart: fmt.thinking_start_tag ?? THINK_START,
      thinkEnd: fmt.thinking_end_tag ?? THINK_END,
    };
  } else if (o.input_prefix !== undefined || o.input_suffix !== undefined) {
    prompt = infillPrompt(vocab, o, nCtx, limits.nBatch ?? 2048, get<number>(o, 'n_predict'));
  } else {
    if (o.prompt === undefined || o.prompt === null) {
      throw new OptionError('prompt', o.prompt, 'a completion needs a prompt (string) or messages (array)');
    }
    prompt = encodePrompt(vocab, o.prompt, env.tokenizeMedia);
  }
  if (prompt.length > 0 && prompt[prompt.length - 1]! < 0) {
    throw new OptionError('prompt', o.prompt ?? '', 'the prompt ends with media: its last token must be text');
  }
  if (prompt.length === 0) throw new OptionError('prompt', o.prompt ?? '', 'the prompt is empty (no tokens)');
  if (prompt.length >= nCtx && !(o.truncate_prompt ?? limits.ctxShift)) throw promptTooLong(prompt.length, nCtx);

  const sampling: Record<string, unknown> = { ...o };
  const schema = responseFormatSchema(o.response_format as CompletionResponseFormat | undefined);
  const userGrammar =
    (o.grammar !== undefined && o.grammar !== '') || (o.json_schema !== undefined && o.json_schema !== null);
  if (schema !== undefined) {
    if (userGrammar) {
      throw new OptionError('response_format', o.response_format, 'cannot be combined with grammar or json_schema');
    }
    if (!toolUse) sampling.json_schema = schema;
    else {
      throw new OptionError(
        'response_format',
        o.response_format,
        `cannot be combined with tools here (the ${toolUse.format} call format, tool_choice ${JSON.stringify(choice)}); leave one out, or use tool_choice 'none'`,
      );
    }
  }
  const r = resolveSampling(sampling, vocab, nCtx);
  let grammar: GrammarSampler | undefined;
  // the caller's grammar wins over the tool-call grammar (llama.node); calls are still read
  // from the reply (llama-server refuses the pair: the server checks before this)
  if (toolUse && !userGrammar) grammar = await compileToolConstraint(env, toolUse, signal);
  else {
    grammar = await compileConstraint(env, r, signal);
    if (grammar && get<boolean>(o, 'grammar_lazy')) {
      const triggers = (o.grammar_triggers ?? []) as GrammarTrigger[];
      if (triggers.length === 0)
        throw new OptionError('grammar_triggers', triggers, 'a lazy grammar needs at least one trigger');
      grammar.setLazy(lazyTriggers(triggers, vocab));
    }
  }
  const chain = buildSamplingChain(r, vocab, grammar);
  // a grammar must not hold inside a reasoning block: a lazy one (it would see triggers
  // there) or one that starts where a block the prompt opened ends
  const grammarAfterReasoning =
    grammar !== undefined && chat !== undefined && (chat.thinkingForcedOpen === true || grammar.awaitingTrigger);
  let thinkingBudget: PreparedRequest['thinkingBudget'];
  const budget = get<number>(o, 'thinking_budget_tokens');
  if (chat && budget >= 0) {
    const message = o.thinking_budget_message ?? '';
    const forced = vocab.encode(`${message}${chat.thinkEnd ?? THINK_END}`, { addSpecial: false, parseSpecial: true });
    thinkingBudget = { tokens: budget, forced };
  }
  const nCmpl = get<number>(o, 'n_cmpl');
  return {
    options: o,
    prompt,
    chatFormat,
    withMessages,
    withTools: tools !== undefined,
    stops: stopList,
    nPredict: get<number>(o, 'n_predict'),
    nKeep: get<number>(o, 'n_keep'),
    chain,
    ...(o.prefix_key !== undefined && o.prefix_key !== null ? { prefixKey: prefixKey(prompt, o.prefix_key) } : {}),
    ...(chat ? { chat } : {}),
    grammarAfterReasoning,
    ...(thinkingBudget ? { thinkingBudget } : {}),
    cachePrompt: get<boolean>(o, 'cache_prompt'),
    idSlot: get<number>(o, 'id_slot'),
    nCmpl,
  };
}

/** The result of a request stopped before its prompt was evaluated (while being prepared). */
export function interruptedResult(): LlamaCompletionResult {
  const zero = { prompt_n: 0, prompt_ms: 0, prompt_per_token_ms: 0, prompt_per_second: 0 };
  return {
    text: '',
    chat_format: 0,
    tokens_predicted: 0,
    tokens_evaluated: 0,
    tokens_cached: 0,
    truncated: false,
    stopped_eos: false,
    stopped_word: false,
    stopped_limit: false,
    stopping_word: '',
    context_full: false,
    interrupted: true,
    stopped_words: false,
    stopped_limited: false,
    timings: { ...zero, predicted_n: 0, predicted_ms: 0, predicted_per_token_ms: 0, predicted_per_second: 0 },
  };
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** The k highest [id, logit] pairs of a row, highest first (ties: lower id). */
export function topLogits(logits: ArrayLike<number>, k: number): [number, number][] {
  const ids = Array.from({ length: logits.length }, (_, i) => i);
  ids.sort((a, b) => logits[b]! - logits[a]! || a - b);
  return ids.slice(0, k).map((id) => [id, logits[id]!]);
}

export type UnitState = 'queued' | 'prompt' | 'generating' | 'done';

let nextUnitId = 1;

export class GenerationUnit {
  readonly id: number;
  state: UnitState = 'queued';
  readonly done: Promise<LlamaCompletionResult>;
  private resolve!: (r: LlamaCompletionResult) => void;
  private reject!: (e: unknown) => void;
  private place: Placement | undefined;

  // prompt
  private prompt: number[];
  private keep = 0;
  private truncated = false;
  private cached = 0;
  /** return_progress: a batch of the prompt was taken; its progress goes out after the decode. */
  private progressDue = false;
  /** Prompt tokens still to evaluate. */
  private pending: number[] = [];
  /** The token sampled last, evaluated in the next step (-1: none). */
  private next = -1;

  // generation
  private readonly stream: StreamDecoder;
  private readonly matcher: StopStringMatcher | undefined;
  private text = '';
  private nDecoded = 0;
  private readonly generated: number[] = [];
  private stoppedEos = false;
  private stoppedWord = false;
  private stoppedLimit = false;
  private contextFull = false;
  private interrupted = false;
  private stoppingWord = '';
  private stopRequested = false;
  private readonly probs: CompletionProbability[] = [];
  private pendingProbs: CompletionProbability[] = [];
  private readonly logprobs: TokenLogprob[] = [];
  private pendingLogprobs: TokenLogprob[] = [];
  private top: [number, number][] | undefined;
  private readonly nProbs: number;
  private readonly wantLogprobs: boolean;

  // timings
  private tStart = 0;
  private tPromptDone = 0;

  // adapters and speculative decoding
  readonly loras: readonly ActiveLora[];
  /** Names the adapters (and scales): units decoded together share it. */
  readonly loraKey: string;
  readonly draft: { max: number; min: number; pMin: number } | undefined;
  /** Tokens drafted for this unit, and accepted. */
  draftN = 0;
  draftAccepted = 0;

  // the reply read as it streams (messages only)
  private readonly parser: ChatOutputParser | undefined;
  private chatOut: ChatOutput = { content: '', tool_calls: [] };
  /** The grammar, while it waits for the reasoning block to end. */
  private heldGrammar: GrammarSampler | undefined;
  /** Bytes of every generated token (what a grammar attached later must catch up on). */
  private rawBytes = '';
  private reasoningTokens = 0;
  /** Tokens forced next (a thinking budget's end), in order. */
  private forced: number[] = [];
  private budgetSpent = false;

  /** n_cmpl: the unit whose evaluated prompt this one copies (undefined: it evaluates its own). */
  leader: GenerationUnit | undefined;
  /** n_cmpl: the units that copy this one's prompt. */
  readonly followers: GenerationUnit[] = [];
  /** The choice this unit is (n_cmpl), on its events. */
  choiceIndex: number | undefined;

  constructor(
    readonly request: PreparedRequest,
    private readonly vocab: Vocab,
    private readonly hooks: UnitHooks = {},
    /** The request's id (status reports); default: a new one. */
    id?: number,
    settings: UnitSettings = {},
  ) {
    this.id = id ?? nextUnitId++;
    this.loras = (settings.loras ?? []).filter((l) => l.scale !== 0);
    this.loraKey = loraKey(this.loras);
    this.draft = settings.draft && settings.draft.max > 0 ? settings.draft : undefined;
    this.prompt = request.prompt;
    this.stream = vocab.streamDecoder();
    this.matcher = request.stops.length > 0 ? new StopStringMatcher(request.stops) : undefined;
    this.nProbs = request.chain.params.n_probs;
    this.wantLogprobs = request.options.logprobs === true;
    this.stoppedLimit = request.nPredict === 0;
    if (request.chat) this.parser = new ChatOutputParser(request.chat);
    if (request.grammarAfterReasoning) {
      this.heldGrammar = request.chain.grammar;
      request.chain.grammar = undefined;
    }
    this.done = new Promise((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    this.done.catch(() => {});
  }

  /** The prompt's length (after a cut, once begun). */
  get promptLength(): number {
    return this.prompt.length;
  }

  get tokensGenerated(): number {
    return this.nDecoded;
  }

  /** Milliseconds spent on the prompt and on generation so far. */
  get elapsed(): { prompt: number; generation: number } {
    if (!this.tStart) return { prompt: 0, generation: 0 };
    const now = performance.now();
    if (!this.tPromptDone) return { prompt: now - this.tStart, generation: 0 };
    return { prompt: this.tPromptDone - this.tStart, generation: now - this.tPromptDone };
  }

  /** Whether the unit has ended (resolved or failed). */
  get finished(): boolean {
    return this.state === 'done';
  }

  get sequence(): Sequence | undefined {
    return this.place?.sequence;
  }

  /** Ask the unit to end at its next step (it resolves with `interrupted: true`). */
  stop(): void {
    this.stopRequested = true;
  }

  /** Cached tokens of a sequence this unit's prompt shares (to pick the best sequence). */
  sharedPrefix(s: Sequence): number {
    // (a cache computed with other adapters shares nothing)
    if ((s.lora ?? '') !== this.loraKey) return 0;
    return commonPrefix(s.tokens, this.prompt);
  }

  /**
   * Takes a sequence: cuts a prompt that does not fit, keeps as much of the cached prefix
   * as the memory allows (at least one token is evaluated again, for its logits) and
   * drops the rest. Throws (and the unit fails) when the prompt cannot fit.
   */
  begin(place: Placement): void {
    this.place = place;
    this.tStart = performance.now();
    const { sequence: s, memory, nCtx } = place;
    const bos = this.vocab.addBos ? 1 : 0;
    let tokens = this.prompt;
    let keep = this.request.nKeep < 0 ? tokens.length : this.request.nKeep + bos;
    if (tokens.length >= nCtx) {
      if (!(this.request.options.truncate_prompt ?? place.ctxShift)) throw promptTooLong(tokens.length, nCtx);
      const keepT = Math.max(0, Math.min(keep, nCtx - 4));
      const nLeft = nCtx - keepT;
      const block = Math.max(1, Math.floor(nLeft / 2));
      const erased = Math.floor((tokens.length - keepT - block) / block);
      tokens = [...tokens.slice(0, keepT), ...tokens.slice(keepT + erased * block)];
      keep = keepT;
      this.truncated = true;
    }
    this.prompt = tokens;
    this.keep = keep;
    // a cache computed with other adapters is of no use
    let reuse =
      this.request.cachePrompt && (s.lora ?? '') === this.loraKey
        ? Math.min(commonPrefix(s.tokens, tokens), tokens.length - 1)
        : 0;
    s.lora = this.loraKey;
    // (never keeping part of a media item: its run is evaluated whole)
    for (let before = -1; before !== reuse; ) {
      before = reuse;
      reuse = Math.max(0, Math.min(reuse, memory.reusablePrefix(s.seq, reuse)));
      while (reuse > 0 && tokens[reuse]! < 0 && tokens[reuse - 1] === tokens[reuse]) reuse--;
    }
    memory.remove(s.seq, reuse, -1);
    s.tokens.length = reuse;
    this.cached = reuse;
    this.pending = tokens.slice(reuse);
    this.state = 'prompt';
  }

  /**
   * n_cmpl: takes a sequence that will get the leader's evaluated prompt (copied when the
   * leader's last prompt token is decoded: copyPrompt); nothing is evaluated meanwhile.
   */
  beginFollower(place: Placement): void {
    this.place = place;
    this.tStart = performance.now();
    place.memory.remove(place.sequence.seq, -1, -1);
    place.sequence.tokens.length = 0;
    this.pending = [];
    this.state = 'prompt';
  }

  /** n_cmpl: the leader's prompt is in its sequence: copy it (cells and tokens) into this one's. */
  copyPrompt(leader: GenerationUnit): void {
    const from = leader.place!.sequence;
    const to = this.place!.sequence;
    this.place!.memory.copy(from.seq, to.seq, 0, -1);
    to.tokens = [...from.tokens];
    to.lora = from.lora;
    this.prompt = leader.prompt;
    this.keep = leader.keep;
    this.truncated = leader.truncated;
    this.cached = leader.cached;
  }

  /** Whether a stop was asked for (flag, hook): then the unit finishes, interrupted. */
  checkStop(): boolean {
    if (this.state === 'done') return true;
    if (this.stopRequested || this.hooks.shouldStop?.()) {
      this.interrupted = true;
      this.finish();
      return true;
    }
    // a follower whose leader ended before its prompt was evaluated: nothing to copy
    if (this.leader && this.state === 'prompt' && this.leader.state === 'done') {
      this.interrupted = true;
      this.finish();
      return true;
    }
    return false;
  }

  /** Prompt tokens for the next batch, at most `room`; `last` when they end the prompt. */
  takePrompt(room: number): { tokens: number[]; last: boolean } {
    const progress = this.request.options.return_progress === true;
    // return_progress: where the prompt starts (the cache reused), before its first batch
    if (progress && !this.progressDue && this.pending.length + this.cached === this.prompt.length) {
      this.emitProgress();
    }
    // text up to the next media item (evaluated on its own: takeMedia)
    let n = Math.min(room, this.pending.length);
    const media = this.pending.findIndex((t) => t < 0);
    if (media >= 0) n = Math.min(n, media);
    const tokens = this.pending.splice(0, n);
    if (progress) this.progressDue = true;
    return { tokens, last: this.pending.length === 0 };
  }

  /** The placeholder id of the media item the pending prompt starts with, or undefined. */
  get nextMedia(): number | undefined {
    const t = this.pending[0];
    return this.state === 'prompt' && t !== undefined && t < 0 ? t : undefined;
  }

  /** Takes the next media item's `n` placeholder positions off the pending prompt. */
  takeMedia(n: number): number[] {
    return this.pending.splice(0, n);
  }

  /** After a decode: return_progress's event for the prompt tokens it evaluated (before any text). */
  reportProgress(): void {
    if (!this.progressDue || this.state === 'done') return;
    this.progressDue = false;
    this.emitProgress();
  }

  private emitProgress(): void {
    const ev: LlamaCompletionToken = {
      token: '',
      prompt_progress: {
        total: this.prompt.length,
        cache: this.cached,
        processed: this.prompt.length - this.pending.length,
        time_ms: Math.round(performance.now() - this.tStart),
      },
    };
    if (this.choiceIndex !== undefined) ev.index = this.choiceIndex;
    this.hooks.onToken?.(ev);
  }

  /**
   * The token to evaluate next, after shifting the context when it is full; -1 when the
   * unit finished instead (the context is full and cannot shift).
   */
  nextToken(): number {
    const p = this.place!;
    const s = p.sequence;
    // llama-server keeps one cell free: it stops or shifts when the sequence holds n_ctx - 1 tokens
    const server = this.request.options.llama_server_context === true;
    if (s.tokens.length >= p.nCtx - (server ? 1 : 0)) {
      const nPast = s.tokens.length;
      const keep = this.keep;
      const nDiscard = Math.floor((nPast - keep) / 2);
      if (server) this.truncated = true;
      if (!p.ctxShift || !p.memory.canShift || this.request.nPredict < 0 || nDiscard <= 0) {
        this.contextFull = true;
        this.stoppedLimit = true;
        this.finish();
        return -1;
      }
      p.memory.remove(s.seq, keep, keep + nDiscard);
      p.memory.shift(s.seq, keep + nDiscard, nPast, -nDiscard);
      s.tokens.splice(keep, nDiscard);
    }
    return this.next;
  }

  /** The prompt's last token was decoded (at `t`): penalties and DRY see the prompt. */
  promptDone(t: number): void {
    this.tPromptDone = t;
    this.state = 'generating';
    // as llama.cpp's server: the chain accepts the prompt (not the grammar)
    for (const t of this.prompt) if (t >= 0) this.request.chain.accept(t, false);
  }

  /** A row of logits for this unit's last token: sample, stream, and decide whether to go on. */
  onLogits(logits: Float32Array): void {
    if (this.state === 'done') return;
    if (this.stoppedLimit) {
      // n_predict 0: nothing to generate
      this.finish();
      return;
    }
    if (this.request.options.top_logits && this.top === undefined) {
      this.top = topLogits(logits, this.request.options.top_logits);
    }
    const chain = this.request.chain;
    const forced = this.forced.shift();
    const id = forced ?? chain.choose(logits);
    chain.accept(id, forced === undefined || chain.grammar?.allows(id) !== false);
    this.take(id, logits);
  }

  /**
   * The draft to evaluate after this unit's next token, when it drafts: `tokens` are the
   * sequence's tokens and that next one; `room` the tokens the batch and context still
   * take. Undefined: no drafting this step.
   */
  draftRequest(seq: number, tokens: readonly number[], room: number): DraftRequest | undefined {
    const d = this.draft;
    if (!d || this.state !== 'generating') return undefined;
    // a reasoning block that may still attach a grammar or force its end (a thinking
    // budget) changes how each token is chosen mid-draft: such a unit does not draft
    if (this.heldGrammar || this.forced.length > 0 || (this.request.thinkingBudget && !this.budgetSpent)) {
      return undefined;
    }
    // (the verification adds one token of its own, so the last one left is never drafted)
    const left = this.request.nPredict >= 0 ? this.request.nPredict - this.nDecoded - 1 : Number.POSITIVE_INFINITY;
    const nMax = Math.min(d.max, room, left);
    if (nMax < Math.max(1, d.min)) return undefined;
    return {
      seq,
      tokens,
      nMax,
      nMin: d.min,
      pMin: d.pMin,
      ...(this.request.chain.grammar ? { grammar: this.request.chain.grammar } : {}),
    };
  }

  /**
   * The rows of logits after this unit's last token and after each drafted token:
   * verification keeps the drafted tokens the model agrees with, then its own token; each
   * goes through the same steps as onLogits'. Returns the drafted tokens accepted (the
   * batcher drops the others from the memory).
   */
  onDraftLogits(row: (i: number) => Float32Array, draft: Draft): number {
    if (this.state === 'done') return 0;
    const r = verifyDraft(this.request.chain, row, draft, {
      onToken: (t, i) => this.take(t, row(i)) && !this.stopRequested,
    });
    this.draftN += draft.tokens.length;
    this.draftAccepted += r.accepted;
    return r.accepted;
  }

  /** A token was chosen (and accepted by the chain): stream it and decide whether to go on. */
  private take(id: number, logits: Float32Array): boolean {
    const chain = this.request.chain;
    this.nDecoded++;
    if (this.vocab.isEog(id)) {
      this.stoppedEos = true;
      this.finish();
      return false;
    }
    this.generated.push(id);
    if (this.nProbs > 0 || this.wantLogprobs) {
      const row: ProbabilityRow = chain.params.post_sampling_probs
        ? postSamplingProbabilities(chain.candidates, id, this.nProbs)
        : rawProbabilities(logits, id, this.nProbs);
      this.recordProbs(row);
    }
    this.push(this.stream.push(id));
    if (this.parser) this.afterChatToken(id);
    if (this.finished || this.stoppedWord) {
      this.finish();
      return false;
    }
    if (this.request.nPredict >= 0 && this.nDecoded >= this.request.nPredict) {
      this.stoppedLimit = true;
      this.finish();
      return false;
    }
    this.next = id;
    return true;
  }

  /**
   * Reasoning bookkeeping after a token of a chat reply: the grammar held until the
   * reasoning block ends is attached (and fed what came after the block), and a spent
   * thinking budget queues the block's end.
   */
  private afterChatToken(id: number): void {
    const g = this.heldGrammar;
    if (!g && !this.request.thinkingBudget) return;
    this.rawBytes += (g ?? this.request.chain.grammar)?.index.pieces[id] ?? this.vocab.pieceBytes(id, true);
    const decoded = binaryToText(this.rawBytes);
    const r = this.parser!.pastReasoning(decoded);
    if (!r.past) {
      this.reasoningTokens++;
      const b = this.request.thinkingBudget;
      if (b && !this.budgetSpent && this.reasoningTokens >= b.tokens) {
        this.budgetSpent = true;
        this.forced.push(...b.forced);
      }
      return;
    }
    if (g) {
      this.heldGrammar = undefined;
      this.request.chain.grammar = g;
      g.acceptText(textToBinary(r.content));
    }
  }

  private recordProbs(row: ProbabilityRow): void {
    const v = this.vocab;
    if (this.wantLogprobs) {
      const e = completionProbabilities([row], (id) => v.pieceBytes(id, false))[0]!;
      this.logprobs.push(e);
      this.pendingLogprobs.push(e);
    } else {
      const e: CompletionProbability = {
        content: v.tokenToPiece(row.id, true),
        probs: row.top.map((t) => ({ tok_str: v.tokenToPiece(t.id, true), prob: t.prob })),
      };
      this.probs.push(e);
      this.pendingProbs.push(e);
    }
  }

  private emit(piece: string): void {
    if (piece === '') return; // probabilities wait for the text they belong to
    this.text += piece;
    const ev: LlamaCompletionToken = { token: piece };
    if (this.choiceIndex !== undefined) ev.index = this.choiceIndex;
    if (this.parser) {
      const next = this.parser.update(this.text);
      const d = chatDelta(this.chatOut, next);
      this.chatOut = next;
      if (d) ev.delta = d;
    }
    if (this.wantLogprobs) {
      ev.logprobs = this.pendingLogprobs;
      this.pendingLogprobs = [];
    } else if (this.nProbs > 0) {
      ev.completion_probabilities = this.pendingProbs;
      this.pendingProbs = [];
    }
    this.hooks.onToken?.(ev);
  }

  private push(piece: string): void {
    if (!this.matcher) {
      this.emit(piece);
      return;
    }
    const m = this.matcher.push(piece);
    this.emit(m.text);
    if (m.stop !== undefined) {
      this.stoppedWord = true;
      this.stoppingWord = m.stop;
    }
  }

  /** Ends the unit with an error (a failed decode, a bad prompt). */
  fail(e: unknown): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.reject(e);
  }

  /** Ends the unit: flushes held-back text and resolves with the result. */
  finish(): void {
    if (this.state === 'done') return;
    const now = performance.now();
    const promptDone = this.tPromptDone || now;
    this.state = 'done';
    try {
      if (!this.stoppedWord) {
        this.push(this.stream.flush());
        if (!this.stoppedWord && this.matcher) this.emit(this.matcher.flush());
      }
      if (this.parser) {
        // a reply that ended (end-of-generation, a stop word) is read as finished: what was
        // held back is settled; one stopped before its end (n_predict, the context, a stop
        // request) is read as cut: a call it was writing stays unfinished (llama.cpp's)
        const ended = this.stoppedEos || this.stoppedWord;
        const final = ended ? this.parser.update(this.text, true) : this.parser.cut(this.text);
        const d = chatDelta(this.chatOut, final);
        this.chatOut = final;
        if (d) {
          const ev: LlamaCompletionToken = { token: '', delta: d };
          if (this.choiceIndex !== undefined) ev.index = this.choiceIndex;
          this.hooks.onToken?.(ev);
        }
      }
    } catch (e) {
      // an onToken callback threw: the unit still ends with its result
      this.reject(e);
      return;
    }
    this.resolve(this.result(now, promptDone));
  }

  private result(now: number, promptDone: number): LlamaCompletionResult {
    const q = this.request;
    const promptN = this.tPromptDone ? this.prompt.length - this.cached : 0;
    const promptMs = this.tStart ? promptDone - this.tStart : 0;
    const genMs = this.tPromptDone ? now - this.tPromptDone : 0;
    const n = this.nDecoded;
    const limit = this.stoppedLimit && !this.stoppedEos && !this.stoppedWord;
    const r: LlamaCompletionResult = {
      text: this.text,
      chat_format: q.chatFormat,
      tokens_predicted: n,
      tokens_evaluated: this.prompt.length,
      tokens_cached: this.cached,
      truncated: this.truncated,
      stopped_eos: this.stoppedEos,
      stopped_word: this.stoppedWord,
      stopped_limit: limit,
      stopping_word: this.stoppingWord,
      context_full: this.contextFull,
      interrupted: this.interrupted,
      stopped_words: this.stoppedWord,
      stopped_limited: limit,
      id_slot: this.place?.sequence.seq ?? -1,
      timings: {
        prompt_n: promptN,
        prompt_ms: round3(promptMs),
        prompt_per_token_ms: promptN > 0 ? round3(promptMs / promptN) : 0,
        prompt_per_second: promptMs > 0 ? round3((promptN * 1000) / promptMs) : 0,
        predicted_n: n,
        predicted_ms: round3(genMs),
        predicted_per_token_ms: n > 0 ? round3(genMs / n) : 0,
        predicted_per_second: genMs > 0 ? round3((n * 1000) / genMs) : 0,
        ...(this.draft ? { draft_n: this.draftN, draft_n_accepted: this.draftAccepted } : {}),
      },
    };
    if (this.nProbs > 0 && !this.wantLogprobs) r.completion_probabilities = this.probs;
    if (this.wantLogprobs) r.logprobs = this.logprobs;
    if (q.options.return_tokens) {
      r.prompt_tokens = this.prompt.map((t) => (t < 0 ? -1 : t));
      r.tokens = [...this.generated];
    }
    if (this.top) r.top_logits = this.top;
    if (q.prefixKey !== undefined) r.prefix_key = q.prefixKey;
    if (this.parser) {
      const out = this.chatOut;
      // a reply read as nothing (no content, reasoning or call: a call marker or name cut
      // short, say) is its raw text, as llama-server's message falls back to the text when
      // the parse is empty; the streamed deltas stay as read (none)
      const empty = out.content === '' && !out.reasoning_content && out.tool_calls.length === 0;
      r.content = empty ? this.text : out.content;
      if (out.reasoning_content !== undefined) r.reasoning_content = out.reasoning_content;
      if (q.withTools) r.tool_calls = out.tool_calls;
    } else {
      // a prompt's result carries its text as content too (llama.node's)
      r.content = this.text;
    }
    return r;
  }
}
