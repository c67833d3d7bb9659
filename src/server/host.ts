// What the endpoint modules (openai.ts shapes aside: responses.ts, anthropic.ts,
// native.ts) need of the server: the model, the library context, and submit() (a request
// into a slot, stopped when its client goes away). LlamaServer (server.ts) is the one
// implementation; the modules import only this, so nothing imports the server back.
import type { ServerResponse } from 'node:http';
import type {
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionToken,
  LlamaContext,
  ModelInfo,
} from '../api/index.js';
import type { TemplateLimits } from '../chat/index.js';
import type { MediaPolicy, Modalities } from './media.js';

/** The chat template and special tokens (/props). */
export interface ChatTemplateInfo {
  chat_template: string;
  bos_token: string;
  eos_token: string;
}

export interface GenerationHost {
  readonly modelId: string;
  /** The GGUF file served. */
  readonly modelPath: string;
  /** llama-ts's version (build_info). */
  readonly version: string;
  readonly modelInfo: ModelInfo;
  readonly ctx: LlamaContext;
  /** The chat template and special tokens (kept while the model sleeps). */
  readonly chatTemplateInfo: ChatTemplateInfo;
  /** The model is unloaded for idleness (--sleep-idle-seconds). */
  readonly sleeping: boolean;
  /** Server-wide request defaults by library option name (--temp, --seed, --n-predict, --reasoning-budget). */
  readonly requestDefaults: Readonly<LlamaCompletionOptions>;
  /** GET /slots is served (--slots; default). */
  readonly slotsEndpoint: boolean;
  /** OpenAI-shaped answers carry `__verbose` (--verbose). */
  readonly verbose: boolean;
  /** Tokens of context per slot. */
  readonly nCtxSlot: number;
  readonly parallel: number;
  /** Bounds on rendering the chat template (untrusted work). */
  readonly templateLimits: Omit<TemplateLimits, 'shouldStop'> | undefined;
  /** What the projector (--mmproj) takes: images, audio; neither without one. */
  readonly modalities: Modalities;
  /** How request media are read (remote URLs, size and time bounds). */
  readonly mediaPolicy: MediaPolicy;
  /** Throws a 501 for an embedding model. */
  requireGenerator(): void;
  /**
   * Sends a request to a slot: a 503 at once when every slot and the queue are taken; a
   * client that goes away stops it. `done` rejects with `Cancelled` then.
   */
  submit(
    options: LlamaCompletionOptions,
    res: ServerResponse,
    onToken?: (t: LlamaCompletionToken) => void,
  ): Promise<{ done: Promise<LlamaCompletionResult> }>;
  /** The result, or undefined when the client went away (nothing to answer). */
  result(done: Promise<LlamaCompletionResult>): Promise<LlamaCompletionResult | undefined>;
  /** A library error as the HTTP error it is (400 for bad options, exceed_context_size_error, …). */
  apiError(e: unknown): unknown;
}

/** A request whose client went away. */
export class Cancelled extends Error {}
