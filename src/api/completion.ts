// The completion loop (llama.cpp server's slot logic for one sequence): prompt → tokens
// (truncated to the context, keeping n_keep), reuse of the cached common prefix, prompt
// evaluation in n_batch chunks, then sample → stream → decode until end of generation, a
// stop string, n_predict, a full context (or a context shift), or a stop request.
//
// Text is streamed through StreamDecoder (no split UTF-8 characters) and StopStringMatcher
// (text that could begin a stop string is held back, so a stop string is never streamed);
// the onToken pieces concatenate to the result's `text`.
import type { Batch, Context } from '../model/index.js';
import {
  createSamplingChain,
  type ProbabilityRow,
  postSamplingProbabilities,
  rawProbabilities,
  StopStringMatcher,
} from '../sampling/index.js';
import { compileSamplingGrammar, formatChatOnWorker } from '../untrusted/index.js';
import type { Vocab } from '../vocab/index.js';
import { type ChatTemplates, parseChatOutput } from './chat/index.js';
import { LlamaError } from './errors.js';
import { boolOption, intOption, optionError } from './options.js';
import type {
  CompletionProbability,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionToken,
} from './types.js';

/** What the loop needs from a context. `tokens` mirrors sequence 0 of the KV cache. */
export interface CompletionState {
  readonly ctx: Context;
  /** ctx.decode, possibly serialized with other contexts' evaluations. */
  decode(batch: Batch): Promise<void>;
  readonly vocab: Vocab;
  tokens: number[];
  readonly ctxShift: boolean;
  templates(): ChatTemplates;
}

export interface CompletionHooks {
  onToken?: (t: LlamaCompletionToken) => void;
  /** Polled before every step; true ends generation (interrupted). */
  shouldStop?: () => boolean;
}

/** Options the loop handles itself; everything else goes to the sampling chain. */
const OWN_OPTIONS = new Set([
  'prompt',
  'messages',
  'jinja',
  'chat_template',
  'tools',
  'parallel_tool_calls',
  'tool_choice',
  'enable_thinking',
  'chat_template_kwargs',
  'response_format',
  'n_predict',
  'max_tokens',
  'max_length',
  'n_keep',
  'stop',
  'signal',
  'grammar_triggers',
  'preserved_tokens',
]);

/** The JSON Schema a response_format asks for, or undefined for plain text. */
export function responseFormatSchema(rf: unknown): unknown {
  if (rf === undefined || rf === null) return undefined;
  if (typeof rf !== 'object') throw optionError('response_format', rf, "must be an object with a 'type'");
  const f = rf as { type?: unknown; schema?: unknown; json_schema?: { schema?: unknown } };
  switch (f.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return f.schema ?? {};
    case 'json_schema': {
      const s = f.json_schema?.schema ?? f.schema;
      if (s === undefined || s === null) throw optionError('response_format', rf, 'json_schema.schema is required');
      return s;
    }
    default:
      throw optionError('response_format.type', f.type, "must be 'text', 'json_object' or 'json_schema'");
  }
}

function stopStrings(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  const list = typeof v === 'string' ? [v] : v;
  if (!Array.isArray(list) || !list.every((s) => typeof s === 'string')) {
    throw optionError('stop', v, 'must be an array of strings');
  }
  return list.filter((s) => s !== '');
}

function commonPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}

/** How often a stop request is looked for while a template or grammar is worked on (ms). */
const STOP_POLL_MS = 20;

/**
 * Runs `fn` with an AbortSignal raised when `shouldStop()` turns true (polled), for work
 * on the untrusted-work worker; undefined when it was stopped.
 */
async function stoppable<T>(
  shouldStop: () => boolean,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T | undefined> {
  const ac = new AbortController();
  if (shouldStop()) return undefined;
  const timer = setInterval(() => {
    if (shouldStop()) ac.abort();
  }, STOP_POLL_MS);
  try {
    return await fn(ac.signal);
  } catch (e) {
    if (ac.signal.aborted) return undefined;
    throw e;
  } finally {
    clearInterval(timer);
  }
}

/** The result of a completion stopped before its prompt was evaluated. */
function stoppedEarly(chatFormat: number): LlamaCompletionResult {
  const zero = { prompt_n: 0, prompt_ms: 0, prompt_per_token_ms: 0, prompt_per_second: 0 };
  return {
    text: '',
    chat_format: chatFormat,
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

export async function runCompletion(
  st: CompletionState,
  o: LlamaCompletionOptions,
  hooks: CompletionHooks = {},
): Promise<LlamaCompletionResult> {
  if (o === null || typeof o !== 'object') throw optionError('options', o, 'must be an object');
  const { ctx, vocab } = st;
  const shouldStop = hooks.shouldStop ?? (() => false);

  // ---- options ----
  const nPredict = intOption('n_predict', o.n_predict ?? o.max_tokens, -1, -1);
  const nKeepOpt = intOption('n_keep', o.n_keep, 0, -1);
  const stops = stopStrings(o.stop);
  let chatFormat = 0;
  let prompt: string;
  const withMessages = o.messages !== undefined && o.messages !== null;
  if (withMessages) {
    if (!Array.isArray(o.messages)) throw optionError('messages', o.messages, 'must be an array of chat messages');
    if (o.tools !== undefined && o.tools !== null && !Array.isArray(o.tools)) {
      throw optionError('tools', o.tools, 'must be an array of tools');
    }
    // the template renders on the untrusted-work worker (bounded; a stop request ends it)
    const messages = o.messages;
    const fmt = await stoppable(shouldStop, (signal) =>
      formatChatOnWorker(
        st.templates(),
        messages,
        o.chat_template,
        {
          jinja: boolOption('jinja', o.jinja, true),
          tools: o.tools,
          parallel_tool_calls: o.parallel_tool_calls,
          tool_choice: o.tool_choice,
          enable_thinking: o.enable_thinking,
          chat_template_kwargs: o.chat_template_kwargs,
        },
        { signal },
      ),
    );
    if (!fmt) return stoppedEarly(0);
    prompt = fmt.prompt;
    chatFormat = fmt.chat_format ?? 0;
    for (const s of fmt.additional_stops ?? []) if (s !== '' && !stops.includes(s)) stops.push(s);
  } else {
    if (typeof o.prompt !== 'string') {
      throw optionError('prompt', o.prompt, 'a completion needs a prompt (string) or messages (array)');
    }
    prompt = o.prompt;
  }
  const sampling: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (!OWN_OPTIONS.has(k)) sampling[k] = v;
  const schema = responseFormatSchema(o.response_format);
  if (schema !== undefined) {
    if ((o.grammar !== undefined && o.grammar !== '') || (o.json_schema !== undefined && o.json_schema !== null)) {
      throw optionError('response_format', o.response_format, 'cannot be combined with grammar or json_schema');
    }
    sampling.json_schema = schema;
  }
  sampling.n_ctx = ctx.nCtx;
  // a grammar or JSON schema compiles on the untrusted-work worker too
  const compiled = await stoppable(shouldStop, async (signal) => ({
    grammar: await compileSamplingGrammar(sampling, { signal }),
  }));
  if (!compiled) return stoppedEarly(chatFormat);
  const chain = createSamplingChain(sampling, vocab, compiled.grammar);
  const nProbs = chain.params.n_probs;
  const postProbs = chain.params.post_sampling_probs;
  const matcher = stops.length > 0 ? new StopStringMatcher(stops) : undefined;

  // ---- prompt tokens, truncated to the context ----
  let tokens = vocab.encode(prompt, { addSpecial: true, parseSpecial: true });
  if (tokens.length === 0) throw optionError('prompt', prompt, 'the prompt is empty (no tokens)');
  const bos = vocab.addBos ? 1 : 0;
  let keep = nKeepOpt < 0 ? tokens.length : nKeepOpt + bos;
  let truncated = false;
  if (tokens.length >= ctx.nCtx) {
    if (!st.ctxShift) {
      throw new LlamaError(
        'ERR_CONTEXT',
        `the prompt is ${tokens.length} tokens; the context holds ${ctx.nCtx} (enable ctx_shift to truncate, or raise n_ctx)`,
      );
    }
    const keepT = Math.max(0, Math.min(keep, ctx.nCtx - 4));
    const nLeft = ctx.nCtx - keepT;
    const block = Math.max(1, Math.floor(nLeft / 2));
    const erased = Math.floor((tokens.length - keepT - block) / block);
    tokens = [...tokens.slice(0, keepT), ...tokens.slice(keepT + erased * block)];
    keep = keepT;
    truncated = true;
  }

  // ---- reuse the cached prefix, evaluate the rest ----
  let cached = commonPrefix(st.tokens, tokens);
  if (cached === tokens.length) cached--; // one token is evaluated again for its logits
  ctx.seqRm(0, cached, -1);
  st.tokens.length = cached;
  const tPrompt = performance.now();
  let interrupted = false;
  for (let i = cached; i < tokens.length; i += ctx.nBatch) {
    if (shouldStop()) {
      interrupted = true;
      break;
    }
    const chunk = tokens.slice(i, Math.min(tokens.length, i + ctx.nBatch));
    await st.decode({ tokens: chunk });
    st.tokens.push(...chunk);
  }
  const promptMs = performance.now() - tPrompt;
  const promptN = st.tokens.length - cached;
  // penalties and DRY see the prompt (not the grammar), as llama.cpp's server does
  if (!interrupted) for (const t of tokens) chain.accept(t, false);

  // ---- generation ----
  const stream = vocab.streamDecoder();
  let text = '';
  let nDecoded = 0;
  let stoppedEos = false;
  let stoppedWord = false;
  let stoppedLimit = nPredict === 0;
  let contextFull = false;
  let stoppingWord = '';
  const allProbs: CompletionProbability[] = [];
  let pendingProbs: CompletionProbability[] = [];
  const probEntry = (row: ProbabilityRow): CompletionProbability => ({
    content: vocab.tokenToPiece(row.id, true),
    probs: row.top.map((t) => ({ tok_str: vocab.tokenToPiece(t.id, true), prob: t.prob })),
  });
  const emit = (piece: string): void => {
    if (piece === '') return; // probabilities wait for the text they belong to
    text += piece;
    const ev: LlamaCompletionToken = { token: piece };
    if (nProbs > 0) ev.completion_probabilities = pendingProbs;
    pendingProbs = [];
    hooks.onToken?.(ev);
  };
  const push = (piece: string): void => {
    if (!matcher) {
      emit(piece);
      return;
    }
    const m = matcher.push(piece);
    emit(m.text);
    if (m.stop !== undefined) {
      stoppedWord = true;
      stoppingWord = m.stop;
    }
  };

  const tGen = performance.now();
  while (!interrupted && !stoppedLimit) {
    if (shouldStop()) {
      interrupted = true;
      break;
    }
    const logits = ctx.getLogits(-1);
    const id = chain.choose(logits);
    chain.accept(id);
    nDecoded++;
    if (vocab.isEog(id)) {
      stoppedEos = true;
      break;
    }
    if (nProbs > 0) {
      const row = postProbs
        ? postSamplingProbabilities(chain.candidates, id, nProbs)
        : rawProbabilities(logits, id, nProbs);
      const e = probEntry(row);
      allProbs.push(e);
      pendingProbs.push(e);
    }
    push(stream.push(id));
    if (stoppedWord) break;
    if (nPredict >= 0 && nDecoded >= nPredict) {
      stoppedLimit = true;
      break;
    }
    if (st.tokens.length >= ctx.nCtx) {
      // context shift: drop half of what follows the kept prefix
      const nPast = st.tokens.length;
      const nDiscard = Math.floor((nPast - keep) / 2);
      if (!st.ctxShift || nPredict < 0 || nDiscard <= 0) {
        contextFull = true;
        stoppedLimit = true;
        break;
      }
      ctx.seqRm(0, keep, keep + nDiscard);
      ctx.seqAdd(0, keep + nDiscard, nPast, -nDiscard);
      st.tokens.splice(keep, nDiscard);
    }
    await st.decode({ tokens: [id] });
    st.tokens.push(id);
  }
  const genMs = performance.now() - tGen;
  if (!stoppedWord) {
    push(stream.flush());
    if (!stoppedWord && matcher) emit(matcher.flush());
  }

  const result: LlamaCompletionResult = {
    text,
    chat_format: chatFormat,
    tokens_predicted: nDecoded,
    tokens_evaluated: tokens.length,
    tokens_cached: cached,
    truncated,
    stopped_eos: stoppedEos,
    stopped_word: stoppedWord,
    stopped_limit: stoppedLimit && !stoppedEos && !stoppedWord,
    stopping_word: stoppingWord,
    context_full: contextFull,
    interrupted,
    stopped_words: stoppedWord,
    stopped_limited: stoppedLimit && !stoppedEos && !stoppedWord,
    timings: {
      prompt_n: promptN,
      prompt_ms: round3(promptMs),
      prompt_per_token_ms: promptN > 0 ? round3(promptMs / promptN) : 0,
      prompt_per_second: promptMs > 0 ? round3((promptN * 1000) / promptMs) : 0,
      predicted_n: nDecoded,
      predicted_ms: round3(genMs),
      predicted_per_token_ms: nDecoded > 0 ? round3(genMs / nDecoded) : 0,
      predicted_per_second: genMs > 0 ? round3((nDecoded * 1000) / genMs) : 0,
    },
  };
  if (nProbs > 0) result.completion_probabilities = allProbs;
  if (withMessages) {
    const parsed = parseChatOutput(text, chatFormat);
    result.content = parsed.content;
    if (o.tools && o.tools.length > 0) result.tool_calls = parsed.tool_calls;
  }
  return result;
}
