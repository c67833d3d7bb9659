// The engine worker: one per process, started by the first loadModel(). It owns the
// Engine (models and contexts); the CPU device's kernel pool is spawned from here, so the
// main thread only posts requests and receives tokens and results.
import { setLogCallback } from '../log.js';
import { relayNativeAudio } from '../media/index.js';
import { type NativeAudio, platform } from '../platform/index.js';
import { Engine, type EngineContext, readModelInfo, type VocabOnlyContext } from './engine.js';
import { LlamaError, serializeError } from './errors.js';
import type { Reply, Request } from './protocol.js';

const port = (await platform.workerSide())?.parent;
if (!port) throw new Error('llama-ts: src/api/worker.js runs as a worker thread');

const post = (r: Reply) => port.postMessage(r);
setLogCallback((level, message, source) => post({ log: [level, message, source] }));

// A browser decodes audio in pages only (no OfflineAudioContext in workers): ask the page.
const decoding = new Map<number, { resolve: (a: NativeAudio) => void; reject: (e: Error) => void }>();
let nextDecode = 0;
if (platform.name === 'web' && !platform.decodeAudioNative)
  relayNativeAudio(
    (bytes, mime, sampleRate) =>
      new Promise((resolve, reject) => {
        const id = ++nextDecode;
        decoding.set(id, { resolve, reject });
        post({ decode: id, bytes, mime, sampleRate });
      }),
  );

const engine = new Engine();
const contexts = new Map<number, { ec: EngineContext | VocabOnlyContext; stop: Int32Array }>();
const loads = new Map<number, AbortController>();

function context(id: number): { ec: EngineContext | VocabOnlyContext; stop: Int32Array } {
  const c = contexts.get(id);
  if (!c) throw new LlamaError('ERR_RELEASED', 'the context was released');
  return c;
}

/** Blobs the page sent (the web entry's models and projectors), opened by these names. */
function provideFiles(files: [string, unknown][]): void {
  const provide = platform.provideFile;
  if (!provide) throw new LlamaError('ERR_OPTION', 'files as Blobs need the web platform');
  for (const [name, blob] of files) provide(name, blob);
}

async function handle(m: Request): Promise<unknown> {
  switch (m.op) {
    case 'load': {
      if (m.files) provideFiles(m.files);
      const ac = new AbortController();
      loads.set(m.id, ac);
      let last = -1;
      try {
        const ec = m.options.vocab_only
          ? engine.openVocabOnly(m.options)
          : await engine.createContext(m.options, {
              signal: ac.signal,
              ...(m.progress
                ? {
                    onProgress: (f: number) => {
                      // at most one event per percent
                      const pct = Math.floor(f * 100);
                      if (pct === last) return;
                      last = pct;
                      post({ id: m.id, event: 'progress', value: f });
                    },
                  }
                : {}),
            });
        if (m.options.vocab_only && m.progress) post({ id: m.id, event: 'progress', value: 1 });
        contexts.set(m.id, { ec, stop: new Int32Array(m.stop) });
        ec.onStatus = (value) => post({ status: m.id, value });
        return ec.info;
      } finally {
        loads.delete(m.id);
      }
    }
    case 'stop': {
      const c = contexts.get(m.ctx);
      if (c) Atomics.store(c.stop, 0, m.target);
      return undefined;
    }
    case 'abort':
      loads.get(m.target)?.abort(new DOMException('model loading was aborted', 'AbortError'));
      return undefined;
    case 'completion': {
      const { ec, stop } = context(m.ctx);
      return ec.completion(
        m.options,
        {
          shouldStop: () => Atomics.load(stop, 0) === m.id,
          ...(m.stream ? { onToken: (t) => post({ id: m.id, event: 'token', value: t }) } : {}),
        },
        m.id,
      );
    }
    case 'parallelEnable':
      return context(m.ctx).ec.enableParallel(m.config);
    case 'parallelDisable':
      return context(m.ctx).ec.disableParallel();
    case 'parallelCompletion': {
      const { ec } = context(m.ctx);
      const r = await ec.parallelCompletion(m.id, m.options, {
        onPrompt: (p) => post({ id: m.id, event: 'prompt', value: p }),
        ...(m.stream ? { onToken: (t) => post({ id: m.id, event: 'token', value: t }) } : {}),
      });
      // as llama.node's parallel results: the timings also say how much of the prompt was cached
      return { ...r, requestId: m.id, timings: { ...r.timings, cache_n: r.tokens_cached } };
    }
    case 'cancel':
      contexts.get(m.ctx)?.ec.stopParallel(m.target);
      return undefined;
    case 'parallelStatus':
      return context(m.ctx).ec.parallelStatus();
    case 'slotAction':
      return context(m.ctx).ec.slotAction(m.action, m.slot, m.path);
    case 'tokenize': {
      const ec = context(m.ctx).ec;
      if (m.media && m.media.length > 0) return ec.tokenizeMedia(m.text, m.media);
      const tokens = ec.tokenize(m.text, m.options);
      return { tokens: Int32Array.from(tokens), ...(m.options.with_pieces ? { pieces: ec.pieces(tokens) } : {}) };
    }
    case 'detokenize':
      return context(m.ctx).ec.detokenize(m.tokens);
    case 'embedding':
      return context(m.ctx).ec.embedding(m.text, m.params);
    case 'applyLora': {
      const { ec } = context(m.ctx);
      await ec.applyLoraAdapters(m.adapters);
      return ec.getLoadedLoraAdapters();
    }
    case 'initMultimodal':
      if (m.files) provideFiles(m.files);
      return context(m.ctx).ec.initMultimodal(m.options);
    case 'releaseMultimodal':
      return context(m.ctx).ec.releaseMultimodal();
    case 'rerank':
      return context(m.ctx).ec.rerank(m.query, m.documents, m.params);
    case 'saveSession':
      return context(m.ctx).ec.saveSession(m.path);
    case 'loadSession':
      return context(m.ctx).ec.loadSession(m.path);
    case 'release': {
      const c = contexts.get(m.ctx);
      if (!c) return undefined;
      contexts.delete(m.ctx);
      await c.ec.release();
      return undefined;
    }
    case 'modelInfo':
      return readModelInfo(m.path, m.skip);
  }
}

port.onMessage((message) => {
  const m = message as Request;
  if (m.op === 'decoded') {
    const d = decoding.get(m.id);
    decoding.delete(m.id);
    if (m.value) d?.resolve(m.value);
    else d?.reject(new Error(m.error ?? 'no answer'));
    return;
  }
  handle(m).then(
    (value) => post({ id: m.id, ok: true, value }),
    (e) => post({ id: m.id, ok: false, error: serializeError(e) }),
  );
});
