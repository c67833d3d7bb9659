// The library API's error: one class with a code, so callers can tell a bad option from a
// missing file or a busy context without matching messages. Errors raised inside the
// engine worker cross to the main thread as plain data and are rebuilt here.

export type LlamaErrorCode =
  /** An option has a bad value (the message names it). */
  | 'ERR_OPTION'
  /** The model file is missing, unreadable or not a model llama-ts can run. */
  | 'ERR_MODEL'
  /** A completion is already running on this context. */
  | 'ERR_BUSY'
  /** A request was cancelled before it ended (a parallel request's stop()). */
  | 'ERR_CANCELLED'
  /** The context was released. */
  | 'ERR_RELEASED'
  /** A session file is unreadable or belongs to another model. */
  | 'ERR_SESSION'
  /** The operation does not fit the context or the model (too long, wrong kind of model). */
  | 'ERR_CONTEXT'
  /** Loading was aborted. */
  | 'ABORT_ERR'
  /** Anything else: a bug or an environment failure. */
  | 'ERR_INTERNAL';

export class LlamaError extends Error {
  override name = 'LlamaError';

  constructor(
    readonly code: LlamaErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** An error as it crosses the worker boundary. */
export interface SerializedError {
  name: string;
  code: LlamaErrorCode;
  message: string;
  stack?: string;
}

const CODE_BY_NAME: Record<string, LlamaErrorCode> = {
  OptionError: 'ERR_OPTION',
  SamplingError: 'ERR_OPTION',
  GrammarError: 'ERR_OPTION',
  SchemaError: 'ERR_OPTION',
  ChatMessageError: 'ERR_OPTION',
  ChatTemplateError: 'ERR_OPTION',
  StopStringError: 'ERR_OPTION',
  GGUFError: 'ERR_MODEL',
  ModelError: 'ERR_MODEL',
  VocabError: 'ERR_MODEL',
  ContextError: 'ERR_CONTEXT',
  SpeculativeError: 'ERR_MODEL',
  AbortError: 'ABORT_ERR',
  UntrustedBusyError: 'ERR_BUSY',
  SlotBusyError: 'ERR_BUSY',
};

/** Any thrown value → the data the main thread rebuilds it from. */
export function serializeError(e: unknown): SerializedError {
  if (e instanceof LlamaError) return { name: e.name, code: e.code, message: e.message, stack: e.stack };
  if (e instanceof Error || (e && typeof e === 'object' && 'message' in e)) {
    const err = e as Error;
    const name = err.name ?? 'Error';
    return { name, code: CODE_BY_NAME[name] ?? 'ERR_INTERNAL', message: String(err.message), stack: err.stack };
  }
  return { name: 'Error', code: 'ERR_INTERNAL', message: String(e) };
}

/** The main thread's error for serialized data (AbortError keeps its name). */
export function deserializeError(s: SerializedError): LlamaError {
  const e = new LlamaError(s.code, s.message);
  if (s.code === 'ABORT_ERR') e.name = 'AbortError';
  if (s.stack) e.stack = `${e.name}: ${e.message}\n${s.stack.split('\n').slice(1).join('\n')}`;
  return e;
}

/** Any error → a LlamaError with a code (the original as its cause). */
export function asLlamaError(e: unknown): LlamaError {
  if (e instanceof LlamaError) return e;
  const s = serializeError(e);
  const out = new LlamaError(s.code, s.message, { cause: e });
  if (s.code === 'ABORT_ERR') out.name = 'AbortError';
  return out;
}
