// A generation unit: one request on one sequence, from options to result. It owns
//   - the prompt's tokens (messages through the chat template; a prompt longer than the
//     context cut in the middle, keeping n_keep, as llama.cpp's server does),
//   - reuse of the sequence's cached prefix (as much as the memory can keep),
//   - the sampling chain (grammar, logit bias, penalties that also saw the prompt),
//   - context shift when the context fills (n_keep kept, half of the rest dropped), if
//     the memory can shift and n_predict is set,
//   - text: StreamDecoder (never a split UTF-8 character) → StopStringMatcher (text that
//     could begin a stop string held back, so a stop string is never streamed) → onToken,
//   - n_probs / logprobs, finish reasons and timings.
// It never decodes: the batcher (batcher.ts) puts its next tokens into a shared batch,
// decodes, and hands it its row of logits.
//
//   queued ──begin──► prompt ──last prompt token decoded──► generating ──► done
//                       └──────────── stop / error / context full ──────────┘
import {
  type ChatTemplates,
  type FormattedChatResult,
  parseChatOutput,
  parseToolCalls,
  type TemplateLimits,
} from '../chat/index.js';
import { type ActiveLora, ContextError, loraKey } from '../model/index.js';
import type { GrammarLimits, GrammarSampler } from '../sampling/grammar/index.js';
import {
  buildSamplingChain,
  completionProbabilities,
  grammarConstraint,
  type ProbabilityRow,
  postSamplingProbabilities,
  type ResolvedSamplingParams,
  rawProbabilities,
  type SamplingChain,
  StopStringMatcher,
} from '../sampling/index.js';
import { type Draft, type DraftRequest, verifyDraft } from '../speculative/index.js';
import { compileSamplingGrammar, formatChatOnWorker } from '../untrusted/index.js';
import type { StreamDecoder, Vocab } from '../vocab/index.js';
import { OptionError } from './errors.js';
import { commonPrefix, type SequenceMemory } from './memory.js';
import { type CompletionResponseFormat, checkOptions, get, resolveSampling, responseFormatSchema } from './options.js';
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
}

export interface UnitHooks {
  onToken?: (t: LlamaCompletionToken) => void;
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
  tools: LlamaCompletionOptions['tools'],
  signal?: AbortSignal,
): Promise<FormattedChatResult> {
  return formatChatOnWorker(
    env.templates(),
    o.messages!,
    o.chat_template,
    {
      jinja: o.jinja ?? true,
      ...(tools ? { tools } : {}),
      ...(o.parallel_tool_calls !== undefined ? { parallel_tool_calls: o.parallel_tool_calls } : {}),
      ...(o.tool_choice !== undefined ? { tool_choice: o.tool_choice } : {}),
      ...(o.enable_thinking !== undefined ? { enable_thinking: o.enable_thinking } : {}),
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
}

function encodePrompt(vocab: Vocab, p: string | number[]): number[] {
  if (Array.isArray(p)) {
    for (const t of p) {
      if (t >= vocab.nTokens)
        throw new OptionError('prompt', p, `token ${t} is not a token id (0..${vocab.nTokens - 1})`);
    }
    return [...p];
  }
  const t = vocab.encode(p, { addSpecial: true, parseSpecial: true });
  // a template (or prompt) that writes the BOS text itself: keep one BOS
  if (t.length > 1 && vocab.addBos && t[0] === vocab.bos && t[1] === vocab.bos) t.shift();
  return t;
}

/** The context a request will run in: a sequence's size, and whether it shifts (and cuts prompts). */
export interface ContextLimits {
  readonly nCtx: number;
  readonly ctxShift: boolean;
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
  const tools = o.tool_choice !== 'none' && o.tools && o.tools.length > 0 ? o.tools : undefined;
  let chatFormat = 0;
  let prompt: number[];
  if (withMessages) {
    const fmt = await formatChat(env, o, tools, signal);
    chatFormat = fmt.chat_format ?? 0;
    for (const s of fmt.additional_stops ?? []) if (s !== '' && !stopList.includes(s)) stopList.push(s);
    prompt = encodePrompt(vocab, fmt.prompt);
  } else {
    if (o.prompt === undefined || o.prompt === null) {
      throw new OptionError('prompt', o.prompt, 'a completion needs a prompt (string) or messages (array)');
    }
    prompt = encodePrompt(vocab, o.prompt);
  }
  if (prompt.length === 0) throw new OptionError('prompt', o.prompt ?? '', 'the prompt is empty (no tokens)');
  if (prompt.length >= nCtx && !(o.truncate_prompt ?? limits.ctxShift)) throw promptTooLong(prompt.length, nCtx);

  const sampling: Record<string, unknown> = { ...o };
  const schema = responseFormatSchema(o.response_format as CompletionResponseFormat | undefined);
  if (schema !== undefined) {
    if ((o.grammar !== undefined && o.grammar !== '') || (o.json_schema !== undefined && o.json_schema !== null)) {
      throw new OptionError('response_format', o.response_format, 'cannot be combined with grammar or json_schema');
    }
    sampling.json_schema = schema;
  }
  const r = resolveSampling(sampling, vocab, nCtx);
  const chain = buildSamplingChain(r, vocab, await compileConstraint(env, r, signal));
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
    let reuse = (s.lora ?? '') === this.loraKey ? Math.min(commonPrefix(s.tokens, tokens), tokens.length - 1) : 0;
    s.lora = this.loraKey;
    reuse = Math.max(0, Math.min(reuse, memory.reusablePrefix(s.seq, reuse)));
    memory.remove(s.seq, reuse, -1);
    s.tokens.length = reuse;
    this.cached = reuse;
    this.pending = tokens.slice(reuse);
    this.state = 'prompt';
  }

  /** Whether a stop was asked for (flag, hook): then the unit finishes, interrupted. */
  checkStop(): boolean {
    if (this.state === 'done') return true;
    if (this.stopRequested || this.hooks.shouldStop?.()) {
      this.interrupted = true;
      this.finish();
      return true;
    }
    return false;
  }

  /** Prompt tokens for the next batch, at most `room`; `last` when they end the prompt. */
  takePrompt(room: number): { tokens: number[]; last: boolean } {
    const tokens = this.pending.splice(0, room);
    return { tokens, last: this.pending.length === 0 };
  }

  /**
   * The token to evaluate next, after shifting the context when it is full; -1 when the
   * unit finished instead (the context is full and cannot shift).
   */
  nextToken(): number {
    const p = this.place!;
    const s = p.sequence;
    if (s.tokens.length >= p.nCtx) {
      const nPast = s.tokens.length;
      const keep = this.keep;
      const nDiscard = Math.floor((nPast - keep) / 2);
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
    for (const t of this.prompt) this.request.chain.accept(t, false);
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
    const id = chain.choose(logits);
    chain.accept(id);
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
      r.prompt_tokens = [...this.prompt];
      r.tokens = [...this.generated];
    }
    if (this.top) r.top_logits = this.top;
    if (q.withMessages) {
      const parsed =
        q.withTools && q.chatFormat === 0
          ? parseToolCalls(this.text, 'generic')
          : parseChatOutput(this.text, q.chatFormat);
      r.content = parsed.content;
      if (q.withTools) r.tool_calls = parsed.tool_calls;
    }
    return r;
  }
}
