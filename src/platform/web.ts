// The web platform: Web Workers, Blobs, navigator. For browsers (and Web-API runtimes
// without Node's modules). Model files are Blobs (a File from an <input>, a fetched
// response's blob) given a name with `provideFile`; reads by position slice the Blob, so a
// model is never copied whole (synchronous reads use FileReaderSync, in workers only).
// Not here: a synchronous port read (`receiveNow`; the CPU pool's workers take their
// arenas between jobs instead) and heap limits for workers.

import { jsSha256 } from './sha256.js';
import type {
  FileIdentity,
  NativeAudio,
  NativeImage,
  Platform,
  PlatformFile,
  PlatformPort,
  PlatformWorker,
  WorkerSide,
  WorkerStartOptions,
} from './types.js';

// The Web APIs used here, declared narrowly (the project compiles without the DOM library).
interface WebPort {
  postMessage(m: unknown, transfer?: unknown[]): void;
  addEventListener(type: 'message', fn: (e: { data: unknown }) => void): void;
  start?(): void;
  close?(): void;
}
interface WebWorker extends WebPort {
  addEventListener(type: 'message' | 'error', fn: (e: { data: unknown; message?: string }) => void): void;
  terminate(): void;
}
interface WebBlob {
  readonly size: number;
  readonly lastModified?: number;
  slice(start: number, end: number): { arrayBuffer(): Promise<ArrayBuffer> };
}
interface WebGlobals {
  Worker: new (url: URL, options: { type: 'module' }) => WebWorker;
  MessageChannel: new () => { port1: WebPort; port2: WebPort };
  FileReaderSync?: new () => { readAsArrayBuffer(b: unknown): ArrayBuffer };
  navigator?: { hardwareConcurrency?: number; deviceMemory?: number; userAgent?: string };
  XMLHttpRequest?: new () => {
    open(method: string, url: string, async: boolean): void;
    overrideMimeType(t: string): void;
    send(): void;
    status: number;
    responseText: string;
  };
  postMessage?(m: unknown, transfer?: unknown[]): void;
  addEventListener?(type: 'message', fn: (e: { data: unknown }) => void): void;
  importScripts?: unknown;
}
const g = globalThis as unknown as WebGlobals;
const webMedia = globalThis as unknown as WebMediaGlobals;

/** The port object behind a wrapped port (to transfer it). */
const raw = new WeakMap<PlatformPort, WebPort>();

function wrap(p: WebPort): PlatformPort {
  const w: PlatformPort = {
    postMessage: (m, transfer) => p.postMessage(m, unwrap(transfer)),
    onMessage(fn) {
      p.addEventListener('message', (e) => fn(e.data));
      p.start?.();
    },
    ref() {},
    unref() {},
    close: () => p.close?.(),
  };
  raw.set(w, p);
  return w;
}

/** Wrapped ports in a transfer list become the runtime's ports. */
function unwrap(transfer: readonly unknown[] | undefined): unknown[] | undefined {
  return transfer?.map((t) => raw.get(t as PlatformPort) ?? t);
}

/** A worker's data: wrapped ports as the runtime's on the way in, wrapped again on the worker's side. */
function mapData(data: unknown, f: (v: unknown) => unknown): unknown {
  if (data && typeof data === 'object' && !Array.isArray(data) && !ArrayBuffer.isView(data)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) out[k] = f(v);
    return out;
  }
  return data;
}
const isPort = (v: unknown): v is WebPort =>
  typeof v === 'object' && v !== null && (v as { constructor?: { name?: string } }).constructor?.name === 'MessagePort';

const blobs = new Map<string, WebBlob>();

/** Makes a Blob (or File) openable by `name` (loadModel({ model: name })). In the thread that opens it. */
export function provideFile(name: string, blob: WebBlob): void {
  blobs.set(name, blob);
}

function openFile(name: string): PlatformFile {
  const blob = blobs.get(name);
  if (!blob) throw new Error(`${name}: no such file (on the web, give its Blob to provideFile first)`);
  let open = true;
  const check = () => {
    if (!open) throw new Error(`${name}: file is closed`);
  };
  const n = (dst: Uint8Array, position: number) => Math.max(0, Math.min(dst.length, blob.size - position));
  return {
    size: blob.size,
    readSync(dst, position) {
      check();
      if (!g.FileReaderSync) throw new Error(`${name}: synchronous reads need a worker (FileReaderSync)`);
      const len = n(dst, position);
      dst.set(new Uint8Array(new g.FileReaderSync().readAsArrayBuffer(blob.slice(position, position + len))));
      return len;
    },
    async readAsync(dst, position) {
      check();
      const len = n(dst, position);
      dst.set(new Uint8Array(await blob.slice(position, position + len).arrayBuffer()));
      return len;
    },
    identity: (): FileIdentity => ({ dev: 0, ino: 0, size: blob.size, mtimeMs: blob.lastModified ?? 0 }),
    close() {
      open = false;
    },
  };
}

// The start of a worker is a handshake: a module worker's top-level await (this seam's own)
// lets messages be dispatched before the module's listeners exist, and those would be
// lost. So the worker's copy of this module, as soon as it is evaluated, keeps every
// message and says READY; the parent then sends the start data (INIT), then what it
// posted meanwhile; the worker's messages wait for the module's own listener.
const READY = '__llama_ts_worker_ready';
const INIT = '__llama_ts_worker_init';

const inWorker = typeof g.importScripts !== 'undefined' || (!!g.postMessage && !('document' in globalThis));
let side: Promise<WorkerSide> | undefined;
if (inWorker && g.addEventListener && g.postMessage) {
  const self = g as Required<Pick<WebGlobals, 'postMessage' | 'addEventListener'>>;
  const early: unknown[] = [];
  let listener: ((m: unknown) => void) | undefined;
  side = new Promise<WorkerSide>((resolve) => {
    self.addEventListener('message', (e) => {
      const d = e.data as { [INIT]?: unknown } | null;
      if (d && typeof d === 'object' && INIT in d) {
        resolve({
          data: mapData(d[INIT], (v) => (isPort(v) ? wrap(v) : v)),
          parent: {
            postMessage: (m, transfer) => self.postMessage(m, transfer as unknown[] | undefined),
            onMessage(fn) {
              listener = fn;
              for (const m of early.splice(0)) fn(m);
            },
            ref() {},
            unref() {},
            close() {},
          },
        });
      } else if (listener) listener(e.data);
      else early.push(e.data);
    });
  });
  self.postMessage({ [READY]: true });
}

export const webPlatform: Platform = {
  name: 'web',
  startWorker(url: URL, options: WorkerStartOptions = {}): PlatformWorker {
    const w = new g.Worker(url, { type: 'module' });
    // what is posted before the worker is READY waits (see above)
    let queue: [unknown, unknown[] | undefined][] | undefined = [];
    w.addEventListener('message', (e) => {
      const d = e.data as { [READY]?: unknown } | null;
      if (!queue || !(d && typeof d === 'object' && READY in d)) return;
      w.postMessage(
        { [INIT]: mapData(options.data, (v) => raw.get(v as PlatformPort) ?? v) },
        unwrap(options.transfer),
      );
      for (const [m, t] of queue) w.postMessage(m, t);
      queue = undefined;
    });
    const exits: ((code: number) => void)[] = [];
    return {
      postMessage: (m, transfer) => {
        if (queue) queue.push([m, unwrap(transfer)]);
        else w.postMessage(m, unwrap(transfer));
      },
      onMessage: (fn) =>
        w.addEventListener('message', (e) => {
          const d = e.data as object | null;
          if (!(d && typeof d === 'object' && READY in d)) fn(e.data);
        }),
      onError: (fn) => w.addEventListener('error', (e) => fn(new Error(e.message ?? 'worker error'))),
      onExit: (fn) => void exits.push(fn),
      ref() {},
      unref() {},
      terminate: async () => w.terminate(),
    };
  },
  workerSide: () => (side ? side : Promise.resolve(undefined)),
  channel(): [PlatformPort, PlatformPort] {
    const c = new g.MessageChannel();
    return [wrap(c.port1), wrap(c.port2)];
  },
  // no synchronous port read: the CPU pool's workers return to their event loop for arenas
  receiveNow: undefined,
  cores: () => g.navigator?.hardwareConcurrency ?? 1,
  cpuModel: () => 'CPU',
  // deviceMemory is a coarse GiB figure (Chromium); 4 GiB: one wasm memory's reach
  memory: () => {
    const total = (g.navigator?.deviceMemory ?? 4) * 2 ** 30;
    return { free: total, total };
  },
  env: () => undefined,
  now: () => performance.now(),
  // Chromium's V8 follows its major version (Chrome 1xy ships V8 1x.y), which the Q4_0 layout
  // depends on; another browser's engine is not V8 (its layouts take the choice that does not depend on it)
  v8Version: () => {
    const m = /Chrom(?:e|ium)\/(\d+)\./.exec(g.navigator?.userAgent ?? '');
    return m ? `${Math.floor(Number(m[1]) / 10)}.${Number(m[1]) % 10}` : undefined;
  },
  // setTimeout(0) is clamped to 4 ms once nested: a message to a channel of its own is not
  nextTask(fn) {
    const c = new g.MessageChannel();
    c.port1.addEventListener('message', () => {
      c.port1.close?.();
      fn();
    });
    c.port1.start?.();
    c.port2.postMessage(0);
  },
  timer(fn, ms) {
    const t = setTimeout(fn, ms);
    return { cancel: () => clearTimeout(t) };
  },
  runtime: () => 'web',
  writeError: (text) => console.error(text.replace(/\n$/, '')),
  writeErrorSync: (text) => console.error(text.replace(/\n$/, '')),
  fileInfo: (name) => (blobs.has(name) ? { isFile: true, key: name } : undefined),
  sha256: jsSha256,
  randomBytes(n) {
    const out = new Uint8Array(n);
    (globalThis as unknown as { crypto: { getRandomValues(a: Uint8Array): void } }).crypto.getRandomValues(out);
    return out;
  },
  replaceFile: async (path) => {
    throw new Error(`${path}: the web has no files to write; save a session as bytes (saveSession() without a path)`);
  },
  provideFile: provideFile as (name: string, blob: unknown) => void,
  openFile,
  engineFlag() {},
  // a synchronous fetch: allowed for binary data in workers only (the browser entry may preload instead)
  readAsset(url: URL): Uint8Array {
    if (!g.XMLHttpRequest) throw new Error(`${url}: cannot be read synchronously here`);
    const x = new g.XMLHttpRequest();
    x.open('GET', url.href, false);
    x.overrideMimeType('text/plain; charset=x-user-defined');
    x.send();
    if (x.status !== 200 && x.status !== 0) throw new Error(`${url}: HTTP ${x.status}`);
    const s = x.responseText;
    const out = new Uint8Array(s.length);
    for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
    return out;
  },
  inflate: webInflate,
  decodeImageNative:
    typeof webMedia.createImageBitmap === 'function' && webMedia.OffscreenCanvas ? webImage : undefined,
  decodeAudioNative: webMedia.OfflineAudioContext ? webAudio : undefined,
};

// The browser's own media decoders, declared narrowly (no DOM library).
interface WebBitmap {
  readonly width: number;
  readonly height: number;
  close(): void;
}
interface WebMediaGlobals {
  createImageBitmap?(
    blob: unknown,
    options: { premultiplyAlpha: 'none'; colorSpaceConversion: 'none'; imageOrientation: 'from-image' },
  ): Promise<WebBitmap>;
  OffscreenCanvas?: new (
    w: number,
    h: number,
  ) => {
    getContext(
      type: '2d',
      options: { willReadFrequently: boolean },
    ): {
      drawImage(b: WebBitmap, x: number, y: number): void;
      getImageData(x: number, y: number, w: number, h: number): { data: Uint8ClampedArray };
    } | null;
  };
  OfflineAudioContext?: new (
    channels: number,
    length: number,
    sampleRate: number,
  ) => {
    decodeAudioData(b: ArrayBuffer): Promise<{
      sampleRate: number;
      numberOfChannels: number;
      getChannelData(c: number): Float32Array;
    }>;
  };
}

/**
 * createImageBitmap without premultiplication or colour conversion (the file's own values),
 * drawn on a canvas to read its RGBA. The canvas stores premultiplied pixels, so a fully
 * transparent pixel reads back black and a translucent one within rounding of its colour.
 */
async function webImage(
  bytes: Uint8Array,
  mime: string,
  checkSize: (w: number, h: number) => void,
): Promise<NativeImage> {
  const blob = new Blob([bytes as unknown as ArrayBuffer], { type: mime });
  const bitmap = await webMedia.createImageBitmap!(blob, {
    premultiplyAlpha: 'none',
    colorSpaceConversion: 'none',
    imageOrientation: 'from-image',
  });
  try {
    const { width, height } = bitmap;
    checkSize(width, height);
    const ctx = new webMedia.OffscreenCanvas!(width, height).getContext('2d', { willReadFrequently: true });
    if (!ctx) throw new Error('no 2D canvas to read the pixels back');
    ctx.drawImage(bitmap, 0, 0);
    return { width, height, rgba: ctx.getImageData(0, 0, width, height).data };
  } finally {
    bitmap.close();
  }
}

/** decodeAudioData in a one-frame OfflineAudioContext at `sampleRate` (it resamples the decoded audio to it). */
async function webAudio(bytes: Uint8Array, _mime: string, sampleRate: number): Promise<NativeAudio> {
  const ctx = new webMedia.OfflineAudioContext!(1, 1, sampleRate);
  const buffer = await ctx.decodeAudioData(bytes.slice().buffer);
  const channels: Float32Array[] = [];
  for (let c = 0; c < buffer.numberOfChannels; c++) channels.push(buffer.getChannelData(c));
  return { sampleRate: buffer.sampleRate, channels };
}

/** Inflates through DecompressionStream ('deflate' is the zlib format), reading chunk by chunk to stop at the limit. */
async function webInflate(data: Uint8Array, maxBytes: number): Promise<Uint8Array> {
  const DS = (g as unknown as { DecompressionStream?: new (f: string) => TransformStream<Uint8Array, Uint8Array> })
    .DecompressionStream;
  if (!DS) throw new Error('this runtime has no DecompressionStream to inflate with');
  const reader = new Blob([data as unknown as ArrayBuffer]).stream().pipeThrough(new DS('deflate')).getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel();
        throw new Error(`inflated data is over ${maxBytes} bytes`);
      }
      chunks.push(value);
    }
  } catch (e) {
    if ((e as Error).message.startsWith('inflated data')) throw e;
    throw new Error(`compressed data is truncated or corrupt (${(e as Error).message})`);
  }
  const out = new Uint8Array(total);
  let o = 0;
  for (const c of chunks) {
    out.set(c, o);
    o += c.byteLength;
  }
  return out;
}
