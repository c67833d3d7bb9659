// Messages between an UntrustedWorker (client.ts) and its worker thread (worker.ts). One
// job runs at a time; the client cancels the running job by storing its id in a shared
// Int32 the worker polls while rendering, and terminates the worker when it does not stop.
import type { RenderOptions } from '../chat/template.js';
import type { ToolGrammarRequest, ToolGrammarTrigger } from '../chat/tool-grammar.js';
import type { ChatMessage } from '../chat/types.js';
import type { LogLevel } from '../log.js';
import type { CompiledGrammar, GrammarLimits, GrammarSource } from '../sampling/grammar/compile.js';

/** A chat template as the worker rebuilds it (parsed and probed there, cached by these fields). */
export interface TemplateSpec {
  source: string;
  bosToken: string;
  eosToken: string;
  /** The vocabulary adds BOS / EOS itself (the template's own are cut). */
  addBos: boolean;
  addEos: boolean;
  label: string;
}

/** Render options as they cross (limits without their stop callback). */
export type RenderOptionsData = Omit<RenderOptions, 'limits'> & {
  limits?: Omit<NonNullable<RenderOptions['limits']>, 'shouldStop'>;
};

export type Job =
  | { op: 'render'; template: TemplateSpec; messages: readonly ChatMessage[]; opts: RenderOptionsData }
  | { op: 'compile'; source: GrammarSource; limits: GrammarLimits }
  | { op: 'toolGrammar'; request: ToolGrammarRequest; limits: GrammarLimits };

/** A compiled tool-call grammar (its GBNF built from the tools' schemas on the worker). */
export interface CompiledToolGrammar {
  compiled: CompiledGrammar;
  lazy: boolean;
  triggers: ToolGrammarTrigger[];
}

export type Request = { id: number } & Job;

/** An error as it crosses: enough to rebuild ChatTemplateError, GrammarError or SchemaError. */
export interface ErrorData {
  name: string;
  message: string;
  kind?: string;
  reason?: string;
  line?: number;
  column?: number;
  pointer?: string;
}

export type Reply =
  /** The job has begun (its time limit counts from here, not from a cold start of the worker). */
  | { id: number; started: true }
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: ErrorData }
  | { log: [LogLevel, string, string] };

/** What the worker is started with (workerData). */
export interface WorkerInit {
  /** Int32 [0]: the id of the job to stop. */
  cancel: SharedArrayBuffer;
}
