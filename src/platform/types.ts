// The platform seam: the few things that differ between the runtimes the engine runs on
// (Node, and Deno and Bun through their Node compatibility: `node.ts`; browsers and other
// Web-API runtimes: `web.ts`). Everything above it is shared. Imports nothing.

/** A message port (one end of a channel, or a worker's link to its parent). */
export interface PlatformPort {
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  /** Every message from now on (starts the port). */
  onMessage(fn: (message: unknown) => void): void;
  /** Whether a waiting port keeps the process alive (Node); no-ops where nothing can. */
  ref(): void;
  unref(): void;
  close(): void;
}

/** A worker as the engine drives it. */
export interface PlatformWorker {
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  onMessage(fn: (message: unknown) => void): void;
  /** An uncaught error in the worker (it ends; `onExit` follows where the runtime reports it). */
  onError(fn: (error: Error) => void): void;
  /** The worker ended by itself (Node's exit code; the web never reports it). */
  onExit(fn: (code: number) => void): void;
  /** Whether the running worker keeps the process alive (Node); no-ops on the web. */
  ref(): void;
  unref(): void;
  terminate(): Promise<void>;
}

export interface WorkerStartOptions {
  /** What the worker reads as `workerSide().data` (cloned; SharedArrayBuffers and Wasm modules shared). */
  data?: unknown;
  /** Objects in `data` moved rather than cloned (message ports). */
  transfer?: readonly unknown[];
  /** The worker's heap limits in MiB (Node; the web has none to set: the caller's other bounds hold). */
  heapMb?: { old: number; young: number; stack: number };
}

/** Inside a worker: what it was started with, and its link to the thread that started it. */
export interface WorkerSide {
  readonly data: unknown;
  readonly parent: PlatformPort;
}

/** What identifies a file's contents: device and inode (0 where unknown), size, modification time. */
export interface FileIdentity {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
}

/** A file open for reads by position (never read whole: files over 4 GiB work). */
export interface PlatformFile {
  readonly size: number;
  /** Fill `dst` from `position`; the bytes read (fewer only at the end). Web: in a worker only. */
  readSync(dst: Uint8Array, position: number): number;
  readAsync(dst: Uint8Array, position: number): Promise<number>;
  identity(): FileIdentity;
  close(): void;
}

/** An incremental SHA-256. */
export interface Sha256 {
  update(data: Uint8Array): Sha256;
  /** The 32-byte digest (once). */
  digest(): Uint8Array;
}

/** A timer that never keeps the process alive by itself. */
export interface PlatformTimer {
  cancel(): void;
}

/** An image as a runtime's own decoder gives it: RGBA8, row-major. */
export interface NativeImage {
  width: number;
  height: number;
  rgba: Uint8Array | Uint8ClampedArray;
}

/** Audio as a runtime's own decoder gives it: planar float channels at `sampleRate`. */
export interface NativeAudio {
  sampleRate: number;
  channels: Float32Array[];
}

export interface Platform {
  /** 'node' (Node, Deno, Bun) or 'web'. */
  readonly name: 'node' | 'web';
  /** Starts a worker on a module (an ES module URL beside the caller's compiled file). */
  startWorker(url: URL, options?: WorkerStartOptions): PlatformWorker;
  /** In a worker started by `startWorker`: its data and parent (once they arrived); undefined on the main thread. */
  workerSide(): Promise<WorkerSide | undefined>;
  /** A pair of connected ports (one goes to a worker in `transfer`). */
  channel(): [PlatformPort, PlatformPort];
  /**
   * The next message waiting on a port, taken without returning to the event loop (a
   * worker that blocks in Atomics.wait between jobs reads its arenas this way); undefined
   * when none is waiting. The web has no such read: undefined there.
   */
  readonly receiveNow: ((port: PlatformPort) => { message: unknown } | undefined) | undefined;
  /** Logical cores the engine may use (availableParallelism, hardwareConcurrency). */
  cores(): number;
  /** The CPU's model name, or a generic one. */
  cpuModel(): string;
  /** Free and total system memory in bytes (the web knows neither: a fixed guess). */
  memory(): { free: number; total: number };
  /** An environment variable (the engine's LLAMA_TS_* switches); undefined on the web. */
  env(name: string): string | undefined;
  /** A monotonic clock in milliseconds, sub-millisecond where the runtime allows (performance.now). */
  now(): number;
  /** The V8 version the code runs on (Node, Deno; Bun reports the one its Node API mimics), or undefined. */
  v8Version(): string | undefined;
  /** `fn` in a task of its own, as soon as the messages and I/O already queued ran (setImmediate; the web: a message to itself). */
  nextTask(fn: () => void): void;
  /** `fn` once after `ms`, without keeping the process alive. */
  timer(fn: () => void, ms: number): PlatformTimer;
  /** The runtime and its version, as system info prints it ('node v24.1.0', 'deno 2.9.6', 'bun 1.4.5', 'web'). */
  runtime(): string;
  /** Writes text to standard error (the web: console.error), as a stream write. */
  writeError(text: string): void;
  /** Writes a line to standard error at once, even if the process ends next (the web: console.error). */
  writeErrorSync(text: string): void;
  /** What a model name refers to: whether it is a file, and a key equal for every name of it (Node: its real path); undefined when absent. */
  fileInfo(name: string): { isFile: boolean; key: string } | undefined;
  /** A SHA-256 hash (node:crypto's, or plain JavaScript on the web). */
  sha256(): Sha256;
  /** `n` cryptographically random bytes. */
  randomBytes(n: number): Uint8Array;
  /**
   * Writes a file whole through `write` (its chunks in order) so that a reader never sees
   * half of it: Node writes a new file beside the target (exclusive create) and renames it
   * over; a link's target is replaced, the link kept; anything but a regular file at the
   * path is refused. The web has no files of its own: it throws.
   */
  replaceFile(path: string, write: (put: (chunk: Uint8Array) => Promise<void>) => Promise<void>): Promise<void>;
  /** Makes a Blob openable by `name` in this thread (the web; Node opens paths only). */
  readonly provideFile: ((name: string, blob: unknown) => void) | undefined;
  /** Opens a model file by name (Node: a path; web: a name given to `provideFile`). */
  openFile(name: string): PlatformFile;
  /** Sets a JavaScript engine flag before its first use where the runtime allows it (V8's, on Node). */
  engineFlag(flag: string): void;
  /** The bytes of a file or URL beside the code (kernel modules), read synchronously where possible. */
  readAsset(url: URL): Uint8Array;
  /**
   * Inflates a zlib stream (RFC 1950, as PNG stores it) off the event loop where the runtime
   * allows (node:zlib's thread pool; the web's DecompressionStream). Rejects once the output
   * would pass `maxBytes` (a decompression bomb stops there, never fills memory), and on a
   * truncated or corrupt stream, with a message saying which.
   */
  inflate(data: Uint8Array, maxBytes: number): Promise<Uint8Array>;
  /**
   * The runtime's own image decoder (the web's createImageBitmap, unpremultiplied and without
   * colour conversion, read back through an OffscreenCanvas), for the formats the media layer
   * does not decode itself; undefined where there is none (Node). `checkSize` runs on the
   * decoded size before any canvas is allocated (it throws to refuse).
   */
  readonly decodeImageNative:
    | ((bytes: Uint8Array, mime: string, checkSize: (width: number, height: number) => void) => Promise<NativeImage>)
    | undefined;
  /**
   * The runtime's own audio decoder (the web's OfflineAudioContext.decodeAudioData, which also
   * resamples to `sampleRate`); undefined where there is none (Node, and a web worker:
   * Chromium has no OfflineAudioContext there, so the engine worker asks its page).
   */
  readonly decodeAudioNative:
    | ((bytes: Uint8Array, mime: string, sampleRate: number) => Promise<NativeAudio>)
    | undefined;
}
