// Untrusted work off the calling thread: chat-template rendering and grammar / JSON-schema
// compilation in one bounded, terminable worker (client.ts). Each thread that asks gets
// one shared UntrustedWorker (`untrustedWorker()`); the library's engine and the server
// both go through it.
import type { ChatTemplates, FormattedChatResult, GetFormattedChatParams } from '../chat/format.js';
import { formatChat } from '../chat/format.js';
import type { JinjaRenderer } from '../chat/template.js';
import type { ToolGrammarRequest } from '../chat/tool-grammar.js';
import type { ChatMessage } from '../chat/types.js';
import { SamplingError } from '../sampling/errors.js';
import type { CompiledGrammar, GrammarLimits } from '../sampling/grammar/compile.js';
import { type GrammarOptions, grammarSource } from '../sampling/params.js';
import { type JobOptions, UntrustedWorker } from './client.js';
import type { CompiledToolGrammar } from './protocol.js';

export {
  type CompileJobOptions,
  type JobOptions,
  type RenderJobOptions,
  UntrustedBusyError,
  UntrustedWorker,
  type UntrustedWorkerOptions,
} from './client.js';
export type { CompiledToolGrammar } from './protocol.js';

let shared: UntrustedWorker | undefined;

/** This thread's UntrustedWorker (made on first use). */
export function untrustedWorker(): UntrustedWorker {
  shared ??= new UntrustedWorker();
  return shared;
}

/** A JinjaRenderer that renders on `worker` (for ChatTemplate.applyWith and formatChat). */
export function workerRenderer(worker: UntrustedWorker, job: JobOptions = {}): JinjaRenderer {
  return (template, messages, opts) => worker.renderChatTemplate(template, messages, opts, job);
}

/** getFormattedChat, with the template rendered on the worker (bounded, abortable by `job.signal`). */
export function formatChatOnWorker(
  templates: ChatTemplates,
  messages: readonly ChatMessage[],
  template: string | undefined,
  params: GetFormattedChatParams,
  job: JobOptions & { worker?: UntrustedWorker } = {},
): Promise<FormattedChatResult> {
  const worker = job.worker ?? untrustedWorker();
  return formatChat(templates, messages, template, params, workerRenderer(worker, job));
}

/**
 * The grammar or JSON schema of sampling options, compiled on the worker; undefined when
 * the options have none. Pass the result to createSamplingChain. Errors are SamplingErrors
 * naming the option (AbortError and UntrustedBusyError pass through).
 */
export async function compileSamplingGrammar(
  params: GrammarOptions,
  job: JobOptions & { worker?: UntrustedWorker; limits?: GrammarLimits; timeMs?: number } = {},
): Promise<CompiledGrammar | undefined> {
  const source = grammarSource(params);
  if (!source) return undefined;
  const worker = job.worker ?? untrustedWorker();
  try {
    return await worker.compileGrammar(source, job);
  } catch (e) {
    const name = (e as Error)?.name;
    if (name !== 'GrammarError' && name !== 'SchemaError') throw e;
    const option = 'grammar' in source ? 'grammar' : 'json_schema';
    throw new SamplingError(option, 'grammar' in source ? source.grammar : source.jsonSchema, (e as Error).message, {
      cause: e,
    });
  }
}

/**
 * The grammar of tool calls (the tools' schemas, in a format) built and compiled on the
 * worker. Errors are SamplingErrors naming `tools` (AbortError and UntrustedBusyError pass
 * through).
 */
export async function compileToolCallGrammar(
  request: ToolGrammarRequest,
  job: JobOptions & { worker?: UntrustedWorker; limits?: GrammarLimits; timeMs?: number } = {},
): Promise<CompiledToolGrammar> {
  const worker = job.worker ?? untrustedWorker();
  try {
    return await worker.compileToolGrammar(request, job);
  } catch (e) {
    const name = (e as Error)?.name;
    if (name !== 'GrammarError' && name !== 'SchemaError') throw e;
    throw new SamplingError(
      'tools',
      request.tools.map((t) => t.function?.name),
      (e as Error).message,
      { cause: e },
    );
  }
}
