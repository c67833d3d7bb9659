// LlamaContext: llama.node's context object, as a thin proxy on the main thread. Every
// method that computes posts a request to the engine worker; getSystemInfo, getModelInfo
// and getFormattedChat answer synchronously from what the worker sent at load.
import {
  type ChatMessage,
  type ChatTemplates,
  type FormattedChatResult,
  type GetFormattedChatParams,
  getFormattedChat,
} from '../chat/index.js';
import { tokenAccumulator } from '../generation/index.js';
import { formatChatOnWorker } from '../untrusted/index.js';
import { binaryToText, textToBinary } from '../vocab/unicode.js';
import type { EngineClient } from './client.js';
import type { ContextInfo } from './engine.js';
import { asLlamaError, LlamaError } from './errors.js';
import { templateCaps, templatesFromTexts } from './info.js';
import { optionError } from './options.js';
import { LlamaParallelAPI, rankedDocuments } from './parallel.js';
import type {
  EmbeddingParams,
  EmbeddingResult,
  LlamaCompletionOptions,
  LlamaCompletionResult,
  LlamaCompletionToken,
  LoraAdapterOption,
  ModelInfo,
  RerankedDocument,
  RerankParams,
  RerankResult,
  SessionLoadResult,
  TokenizeOptions,
  TokenizeResult,
} from './types.js';

/** Options as they cross to the worker: no signal, no functions. */
function transferable(o: LlamaCompletionOptions): LlamaCompletionOptions {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(o)) if (k !== 'signal' && typeof v !== 'function') out[k] = v;
  return out as LlamaCompletionOptions;
}

/** A file as a page gives one (llama-ts/web): its URL, a Blob or File, or its bytes. */
export type FileSource = string | URL | ArrayBuffer | ArrayBufferView | { readonly size: number; slice(): unknown };

/**
 * Turns a FileSource into the name the engine worker opens it by and the Blob it reads
 * (the web entry's: URLs downloaded as models are). `what` names the option in errors. @internal
 */
export type FileResolver = (source: FileSource, what: string) => Promise<[string, unknown]>;

export class LlamaContext {
  readonly #client: EngineClient;
  readonly #id: number;
  readonly #info: ContextInfo;
  readonly #stop: Int32Array;
  #templates: ChatTemplates | undefined;
  #modelInfo: ModelInfo | undefined;
  /** Request id of the running completion, 0 when none. */
  #current = 0;
  #released = false;
  #releasing: Promise<void> | undefined;
  #loras: { path: string; scaled: number }[];
  /** What the projector loaded by initMultimodal supports; null when none is loaded. */
  #multimodal: { vision: boolean; audio: boolean } | null = null;
  /** The web entry's: files given as URLs, Blobs or bytes (undefined on Node: paths). */
  readonly #resolveFile: FileResolver | undefined;
  /** llama.node 1.x's parallel decoding: enable({ n_parallel }), then completion() queues requests. */
  readonly parallel: LlamaParallelAPI;

  /** @internal Use loadModel(). */
  constructor(
    client: EngineClient,
    id: number,
    info: ContextInfo,
    stop: SharedArrayBuffer | ArrayBuffer,
    resolveFile?: FileResolver,
  ) {
    this.#client = client;
    this.#resolveFile = resolveFile;
    this.#id = id;
    this.#info = info;
    this.#stop = new Int32Array(stop);
    this.#loras = info.loras.map((a) => ({ ...a }));
    this.parallel = new LlamaParallelAPI({ client, ctx: id, check: () => this.#check() });
  }

  #check(): void {
    if (this.#released) throw new LlamaError('ERR_RELEASED', 'the context was released');
  }

  #request<T>(
    body: Parameters<EngineClient['request']>[0],
    onEvent?: (e: string, v: unknown) => void,
    beforePost?: (id: number) => void,
  ) {
    return this.#client.request<T>(body, onEvent, beforePost);
  }

  /** Context size in tokens. */
  get nCtx(): number {
    return this.#info.nCtx;
  }

  /** Whether a completion is running. */
  get busy(): boolean {
    return this.#current !== 0;
  }

  /** llama.cpp's system-info line: version, devices and their kernels, threads. */
  getSystemInfo(): string {
    return this.#info.systemInfo;
  }

  #chat(): ChatTemplates {
    this.#templates ??= templatesFromTexts(this.#info.templates);
    return this.#templates;
  }

  /** The model: description, size, parameters, metadata, chat-template support (llama.node's shape). */
  getModelInfo(): ModelInfo {
    if (!this.#modelInfo) {
      const t = this.#chat();
      const llamaChat = t.default.hasJinja && t.default.builtinDetected;
      const m = this.#info.model;
      this.#modelInfo = {
        desc: m.desc,
        size: m.size,
        nEmbd: m.nEmbd,
        nParams: m.nParams,
        chatTemplates: {
          llamaChat,
          minja: {
            default: t.default.hasJinja,
            defaultCaps: templateCaps(t.default),
            toolUse: t.toolUse?.hasJinja === true,
            ...(t.toolUse ? { toolUseCaps: templateCaps(t.toolUse) } : {}),
          },
        },
        metadata: { ...m.metadata },
        isChatTemplateSupported: llamaChat || t.default.hasJinja,
        is_hybrid: false,
        is_recurrent: false,
        nVocab: m.nVocab,
        vocabType: m.vocabType,
        nCtxTrain: m.nCtxTrain,
        fileSize: m.fileSize,
      };
    }
    return structuredClone(this.#modelInfo);
  }

  /**
   * The prompt for a conversation. As llama.node 0.3.3: `getFormattedChat(messages)` returns
   * the prompt text. With `params.jinja` (later llama.node) it returns the full result
   * (type, prompt, chat_format, …); getFormattedChatResult always does.
   */
  getFormattedChat(messages: ChatMessage[]): string;
  getFormattedChat(
    messages: ChatMessage[],
    template?: string,
    params?: GetFormattedChatParams,
  ): string | FormattedChatResult;
  getFormattedChat(
    messages: ChatMessage[],
    template?: string,
    params?: GetFormattedChatParams,
  ): string | FormattedChatResult {
    const r = this.getFormattedChatResult(messages, template, params);
    return params?.jinja ? r : r.prompt;
  }

  getFormattedChatResult(
    messages: ChatMessage[],
    template?: string,
    params: GetFormattedChatParams = {},
  ): FormattedChatResult {
    this.#check();
    if (!Array.isArray(messages)) throw optionError('messages', messages, 'must be an array of chat messages');
    try {
      return getFormattedChat(this.#chat(), messages, template || undefined, params);
    } catch (e) {
      throw asLlamaError(e);
    }
  }

  /**
   * The chat template in use (the chat_template option's, else the file's; '' when the
   * model has none) and the special tokens' text it is given (llama-server's /props).
   */
  getChatTemplateInfo(): { chat_template: string; bos_token: string; eos_token: string } {
    this.#check();
    const t = this.#info.templates;
    return { chat_template: t.override ?? t.default ?? '', bos_token: t.bosToken, eos_token: t.eosToken };
  }

  /**
   * getFormattedChatResult with the template rendered on the untrusted-work worker
   * (bounded by `params.limits`, off this thread): what a server formats requests with.
   */
  async formatChat(
    messages: ChatMessage[],
    template?: string | null,
    params: GetFormattedChatParams = {},
  ): Promise<FormattedChatResult> {
    this.#check();
    if (!Array.isArray(messages)) throw optionError('messages', messages, 'must be an array of chat messages');
    try {
      return await formatChatOnWorker(this.#chat(), messages, template || undefined, params);
    } catch (e) {
      throw asLlamaError(e);
    }
  }

  /**
   * Generate text. `onToken` receives the text as it is produced, in order; the pieces
   * concatenate to the result's `text`. One completion runs at a time per context: a second
   * call while one runs rejects with a LlamaError of code 'ERR_BUSY'. stopCompletion() or
   * `options.signal` end generation within one token step; the promise then resolves
   * with what was generated and `interrupted: true`.
   */
  async completion(
    options: LlamaCompletionOptions,
    onToken?: (token: LlamaCompletionToken) => void,
  ): Promise<LlamaCompletionResult> {
    this.#check();
    if (options === null || typeof options !== 'object') throw optionError('options', options, 'must be an object');
    if (onToken !== undefined && typeof onToken !== 'function')
      throw optionError('onToken', onToken, 'must be a function');
    const signal = options.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      throw optionError('signal', signal, 'must be an AbortSignal');
    }
    if (this.#current !== 0) {
      throw new LlamaError(
        'ERR_BUSY',
        'a completion is already running on this context; await it (or call stopCompletion()) before starting another, or use another context on the same model',
      );
    }
    let callbackError: unknown;
    let id = 0;
    const accumulate = tokenAccumulator();
    const { id: rid, promise } = this.#request<LlamaCompletionResult>(
      { op: 'completion', ctx: this.#id, options: transferable(options), stream: onToken !== undefined },
      (event, value) => {
        if (event !== 'token' || callbackError !== undefined) return;
        try {
          onToken?.(accumulate(value as LlamaCompletionToken));
        } catch (e) {
          // a throwing callback ends generation; the completion rejects with its error
          callbackError = e;
          this.#raiseStop(id);
        }
      },
      // An already-aborted signal must stop the request before the worker starts on it.
      (rid) => {
        if (signal?.aborted) this.#raiseStop(rid);
      },
    );
    id = rid;
    this.#current = id;
    const stop = () => this.#raiseStop(id);
    if (!signal?.aborted) signal?.addEventListener('abort', stop, { once: true });
    try {
      const result = await promise;
      if (callbackError !== undefined) throw callbackError;
      return result;
    } finally {
      signal?.removeEventListener('abort', stop);
      this.#current = 0;
    }
  }

  /** Ends the running completion within one token step (it resolves with `interrupted: true`). */
  stopCompletion(): void {
    if (this.#current !== 0) this.#raiseStop(this.#current);
  }

  /** Stops completion `id`: through the shared word, or (not shared: a page that is not cross-origin isolated) a message. */
  #raiseStop(id: number): void {
    Atomics.store(this.#stop, 0, id);
    if (!(this.#stop.buffer instanceof ArrayBuffer)) return;
    this.#request({ op: 'stop', ctx: this.#id, target: id }).promise.catch(() => {});
  }

  /**
   * Token ids of a text: as llama.node, no BOS/EOS added and special tokens not parsed;
   * `options` (a llama-ts extension) can ask for both, and for each token's text.
   */
  async tokenize(text: string, options: TokenizeOptions | string[] = {}): Promise<TokenizeResult> {
    this.#check();
    // llama.node's second argument is a list of media paths (its wrapper's: { media_paths })
    let media: string[] | undefined;
    if (Array.isArray(options)) {
      media = options;
      options = {};
    } else if (options && Array.isArray((options as { media_paths?: unknown }).media_paths)) {
      media = (options as { media_paths: string[] }).media_paths;
    }
    if (media && media.length > 0) {
      const r = await this.#request<{
        tokens: number[];
        has_media: boolean;
        bitmap_hashes: string[];
        chunk_pos: number[];
        chunk_pos_media: number[];
      }>({ op: 'tokenize', ctx: this.#id, text, options: {}, media }).promise;
      return { ...r, tokens: Int32Array.from(r.tokens) };
    }
    const r = await this.#request<{ tokens: Int32Array; pieces?: string[] }>({
      op: 'tokenize',
      ctx: this.#id,
      text,
      options: options ?? {},
    }).promise;
    const out: TokenizeResult = { tokens: r.tokens, has_media: false };
    if (r.pieces) {
      out.pieces = r.pieces.map((bytes) => {
        const t = binaryToText(bytes);
        return textToBinary(t) === bytes ? t : Array.from(bytes, (c) => c.charCodeAt(0));
      });
    }
    return out;
  }

  // ---- multimodal ----

  /**
   * Loads a multimodal projector (mmproj GGUF) for this context's model (llama.node's
   * initMultimodal; here asynchronous: the projector loads in the engine worker). Then
   * completion() takes `media_paths` (paths, file: URLs, base64 data: URLs) or messages
   * with `image_url` parts, each placed at a `<__media__>` marker of the prompt (or after
   * it when there is none). Resolves true; rejects naming what is wrong with the file.
   * In a browser (llama-ts/web) `path` is the projector as a model is given: a URL
   * (downloaded and cached as models are), a Blob or File, or its bytes.
   */
  async initMultimodal(options: {
    path: FileSource;
    use_gpu?: boolean;
    image_min_tokens?: number;
    image_max_tokens?: number;
  }): Promise<boolean> {
    this.#check();
    if (options === null || typeof options !== 'object') throw optionError('options', options, 'must be an object');
    let file: [string, unknown] | undefined;
    if (this.#resolveFile) file = await this.#resolveFile(options.path, 'path');
    else if (typeof options.path !== 'string')
      throw new LlamaError(
        'ERR_OPTION',
        `path: a ${(options.path as object | null)?.constructor?.name ?? typeof options.path} where the path of a multimodal projector (mmproj) GGUF file is expected (URLs, Blobs and bytes are for llama-ts/web)`,
      );
    this.#multimodal = await this.#request<{ vision: boolean; audio: boolean }>({
      op: 'initMultimodal',
      ctx: this.#id,
      options: { ...options, path: file ? file[0] : (options.path as string) },
      ...(file ? { files: [file] } : {}),
    }).promise;
    return true;
  }

  /** Whether a projector is loaded (initMultimodal). */
  isMultimodalEnabled(): boolean {
    return this.#multimodal !== null;
  }

  /** What the loaded projector takes: { vision, audio } (both false without one). */
  getMultimodalSupport(): { vision: boolean; audio: boolean } {
    return this.#multimodal ? { ...this.#multimodal } : { vision: false, audio: false };
  }

  /** Frees the projector (prompts cached with media are dropped). */
  async releaseMultimodal(): Promise<void> {
    if (this.#released || this.#multimodal === null) return;
    this.#multimodal = null;
    await this.#request<void>({ op: 'releaseMultimodal', ctx: this.#id }).promise;
  }

  /** Text of token ids (special tokens rendered). */
  async detokenize(tokens: number[] | Int32Array): Promise<string> {
    this.#check();
    if (!Array.isArray(tokens) && !(tokens instanceof Int32Array)) {
      throw optionError('tokens', tokens, 'must be an array of token ids');
    }
    return this.#request<string>({ op: 'detokenize', ctx: this.#id, tokens: Array.from(tokens) }).promise;
  }

  /**
   * A text's embedding: pooled as the model says (`pooling_type` overrides; mean for
   * generative models) and normalized by `embd_normalize` (default 2 = L2; -1 = none,
   * as llama.node 0.3.3 returned it).
   */
  async embedding(text: string | number[], params: EmbeddingParams = {}): Promise<EmbeddingResult> {
    this.#check();
    return this.#request<EmbeddingResult>({ op: 'embedding', ctx: this.#id, text, params: params ?? {} }).promise;
  }

  /**
   * Relevance scores of `documents` for `query` with a reranker (pooling_type rank: a BERT
   * cross-encoder with a classification head, or Qwen3-Reranker through its prompt), best
   * first: [{ score, index, document }], as llama.node. `normalize` > 0 maps scores into
   * [0, 1] by a sigmoid (a softmax head's are already); by default they are raw.
   */
  async rerank(query: string, documents: string[], params: RerankParams = {}): Promise<RerankedDocument[]> {
    this.#check();
    const r = await this.#request<RerankResult[]>({
      op: 'rerank',
      ctx: this.#id,
      query,
      documents,
      params: params ?? {},
    }).promise;
    return rankedDocuments(r, documents);
  }

  /**
   * llama.node's applyLoraAdapters: these LoRA adapters ([{ path, scaled }]) replace the
   * context's from the next request on (a running completion keeps its own). Resolves once
   * they are loaded; a file that is not an adapter for this model rejects (ERR_MODEL).
   */
  async applyLoraAdapters(adapters: LoraAdapterOption[]): Promise<void> {
    this.#check();
    const list = Array.isArray(adapters) ? adapters.map((a) => ({ ...a })) : adapters;
    this.#loras = await this.#request<{ path: string; scaled: number }[]>({
      op: 'applyLora',
      ctx: this.#id,
      adapters: list,
    }).promise;
  }

  /** llama.node's removeLoraAdapters: no adapters from the next request on. */
  async removeLoraAdapters(): Promise<void> {
    await this.applyLoraAdapters([]);
  }

  /** llama.node's getLoadedLoraAdapters: the adapters applied, [{ path, scaled }]. */
  getLoadedLoraAdapters(): { path: string; scaled: number }[] {
    return this.#loras.map((a) => ({ ...a }));
  }

  /**
   * Writes the context's tokens and KV cache to a file (waits for a running completion);
   * without a path (the browser), returns them as bytes for loadSession.
   */
  saveSession(path: string): Promise<undefined>;
  saveSession(): Promise<Uint8Array>;
  async saveSession(path?: string): Promise<Uint8Array | undefined> {
    this.#check();
    const r = await this.#request<Uint8Array | undefined>({ op: 'saveSession', ctx: this.#id, path }).promise;
    return path === undefined ? r : undefined;
  }

  /** Restores tokens and KV cache saved from the same model (a file, or saveSession()'s bytes); the next completion reuses them. */
  async loadSession(source: string | Uint8Array): Promise<SessionLoadResult> {
    this.#check();
    return this.#request<SessionLoadResult>({ op: 'loadSession', ctx: this.#id, path: source }).promise;
  }

  /**
   * Frees the context (a running completion is stopped first). The model's weights are
   * freed with its last context, and the engine worker with the process's last context.
   */
  release(): Promise<void> {
    if (!this.#releasing) {
      this.stopCompletion();
      this.#released = true;
      this.#client.onStatus(this.#id, undefined);
      this.#releasing = this.#request<void>({ op: 'release', ctx: this.#id })
        .promise.catch(() => {})
        .then(() => this.#client.closed());
    }
    return this.#releasing;
  }
}
