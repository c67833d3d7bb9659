// The Node platform: node:worker_threads, node:fs, node:os. Deno (2.x, with -A) and Bun
// (1.x) run it through their Node compatibility (test/runtimes.test.ts); where they differ
// (V8 flags on Bun, which has no V8) it degrades as described on each member.
import { createHash, randomBytes } from 'node:crypto';
import {
  closeSync,
  fstatSync,
  openSync,
  read,
  readFileSync,
  readSync,
  realpathSync,
  statSync,
  writeSync,
} from 'node:fs';
import { lstat, open, realpath, rename, unlink } from 'node:fs/promises';
import { availableParallelism, cpus, freemem, totalmem } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import {
  MessageChannel,
  MessagePort,
  parentPort,
  receiveMessageOnPort,
  Worker,
  type WorkerOptions,
  workerData,
} from 'node:worker_threads';
import { inflate as zlibInflate } from 'node:zlib';
import type {
  FileIdentity,
  Platform,
  PlatformFile,
  PlatformPort,
  PlatformWorker,
  WorkerSide,
  WorkerStartOptions,
} from './types.js';

/**
 * A Worker that inherits the process's node flags where a worker may have them: flags
 * for the main script only (`--input-type`) are dropped, and when node refuses the rest
 * in a worker (`--trace-gc`, …) it starts without any. Node-only tooling (the generator's
 * and the quantizer's pools) uses it directly.
 */
export function nodeWorker(url: URL, options: Omit<WorkerOptions, 'execArgv'> = {}): Worker {
  try {
    return new Worker(url, { ...options, execArgv: process.execArgv.filter((a) => !a.startsWith('--input-type')) });
  } catch (e) {
    if ((e as { code?: string }).code !== 'ERR_WORKER_INVALID_EXEC_ARGV') throw e;
    return new Worker(url, { ...options, execArgv: [] });
  }
}

/**
 * The file a replacement writes: `path`, or the file a symbolic link at `path` points to
 * (the link stays). Anything there that is not a regular file (a device, a FIFO, a folder)
 * is refused: the rename would replace it (as root, /dev/full became a regular file).
 */
async function replaceableTarget(path: string): Promise<string> {
  let target = path;
  try {
    if ((await lstat(path)).isSymbolicLink()) target = await realpath(path);
    const st = await lstat(target);
    if (!st.isFile()) {
      const kind = st.isDirectory()
        ? 'a directory'
        : st.isCharacterDevice() || st.isBlockDevice()
          ? 'a device'
          : st.isFIFO()
            ? 'a FIFO'
            : st.isSocket()
              ? 'a socket'
              : 'not a regular file';
      throw Object.assign(new Error(`is ${kind}; a session replaces regular files only`), { refused: true });
    }
  } catch (e) {
    if ((e as { refused?: boolean }).refused) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    // nothing there yet (or a dangling link's target): a new file
    if (code !== 'ENOENT') throw new Error(`cannot inspect: ${(e as Error).message}`);
  }
  return target;
}

async function replaceFile(
  path: string,
  write: (put: (chunk: Uint8Array) => Promise<void>) => Promise<void>,
): Promise<void> {
  const target = await replaceableTarget(path);
  const tmp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(tmp, 'wx');
  } catch (e) {
    throw new Error(`cannot write beside it: ${(e as Error).message}`);
  }
  try {
    await write(async (b) => void (await fh.write(b)));
    await fh.close();
    await rename(tmp, target);
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

/** The node object behind a wrapped port (to transfer it, or read it synchronously). */
const raw = new WeakMap<PlatformPort, MessagePort>();

function wrapPort(p: MessagePort): PlatformPort {
  const w: PlatformPort = {
    postMessage: (m, transfer) => p.postMessage(m, unwrap(transfer)),
    onMessage: (fn) => p.on('message', fn),
    ref: () => p.ref(),
    unref: () => p.unref(),
    close: () => p.close(),
  };
  raw.set(w, p);
  return w;
}

/** Wrapped ports in a transfer list become node's ports. */
function unwrap(transfer: readonly unknown[] | undefined): Parameters<MessagePort['postMessage']>[1] {
  return transfer?.map((t) => raw.get(t as PlatformPort) ?? t) as Parameters<MessagePort['postMessage']>[1];
}

/** Ports arrive in a worker's data as node ports; the worker side sees them wrapped. */
function wrapData(data: unknown): unknown {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) out[k] = v instanceof MessagePort ? wrapPort(v) : v;
    return out;
  }
  return data;
}

function unwrapData(data: unknown): unknown {
  if (data && typeof data === 'object' && !Array.isArray(data)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(data)) out[k] = raw.get(v as PlatformPort) ?? v;
    return out;
  }
  return data;
}

// fs reads take at most 2 GiB - 1 per call.
const MAX_READ = 1 << 30;

function openFile(name: string): PlatformFile {
  let fd: number | undefined = openSync(name, 'r');
  let size: number;
  try {
    size = fstatSync(fd).size;
  } catch (e) {
    closeSync(fd);
    throw e;
  }
  const handle = (): number => {
    if (fd === undefined) throw new Error(`${name}: file is closed`);
    return fd;
  };
  return {
    size,
    readSync(dst, position) {
      const h = handle();
      let done = 0;
      while (done < dst.length) {
        const n = readSync(h, dst, done, Math.min(dst.length - done, MAX_READ), position + done);
        if (n === 0) break;
        done += n;
      }
      return done;
    },
    async readAsync(dst, position) {
      const h = handle();
      let done = 0;
      while (done < dst.length) {
        const n = await new Promise<number>((resolve, reject) => {
          read(h, dst, done, Math.min(dst.length - done, MAX_READ), position + done, (err, bytes) =>
            err ? reject(err) : resolve(bytes),
          );
        });
        if (n === 0) break;
        done += n;
      }
      return done;
    },
    identity: () => fdIdentity(handle()),
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
  };
}

/** The identity of an open file descriptor. */
function fdIdentity(fd: number): FileIdentity {
  const st = fstatSync(fd);
  return { dev: st.dev, ino: st.ino, size: st.size, mtimeMs: st.mtimeMs };
}

let side: WorkerSide | undefined;

export const nodePlatform: Platform = {
  name: 'node',
  startWorker(url: URL, options: WorkerStartOptions = {}): PlatformWorker {
    const w = nodeWorker(url, {
      workerData: unwrapData(options.data),
      transferList: unwrap(options.transfer) as WorkerOptions['transferList'],
      ...(options.heapMb && {
        resourceLimits: {
          maxOldGenerationSizeMb: options.heapMb.old,
          maxYoungGenerationSizeMb: options.heapMb.young,
          stackSizeMb: options.heapMb.stack,
        },
      }),
    });
    return {
      postMessage: (m, transfer) => w.postMessage(m, unwrap(transfer)),
      onMessage: (fn) => w.on('message', fn),
      onError: (fn) => w.on('error', fn),
      onExit: (fn) => w.on('exit', fn),
      ref: () => w.ref(),
      unref: () => w.unref(),
      terminate: async () => {
        await w.terminate();
      },
    };
  },
  async workerSide(): Promise<WorkerSide | undefined> {
    if (!parentPort) return undefined;
    side ??= { data: wrapData(workerData), parent: wrapPort(parentPort) };
    return side;
  },
  channel(): [PlatformPort, PlatformPort] {
    const { port1, port2 } = new MessageChannel();
    return [wrapPort(port1), wrapPort(port2)];
  },
  receiveNow(port: PlatformPort): { message: unknown } | undefined {
    const p = raw.get(port);
    if (!p) throw new Error('platform: receiveNow on a port this platform did not make');
    return receiveMessageOnPort(p);
  },
  cores: () => availableParallelism(),
  cpuModel: () => cpus()[0]?.model?.trim() ?? 'CPU',
  memory: () => ({ free: freemem(), total: totalmem() }),
  env: (name) => process.env[name],
  now: () => performance.now(),
  v8Version: () => process.versions.v8,
  nextTask: (fn) => void setImmediate(fn),
  timer(fn, ms) {
    const t = setTimeout(fn, ms);
    t.unref();
    return { cancel: () => clearTimeout(t) };
  },
  runtime() {
    const deno = (globalThis as { Deno?: { version?: { deno?: string } } }).Deno?.version?.deno;
    if (deno) return `deno ${deno}`;
    if (process.versions.bun) return `bun ${process.versions.bun}`;
    return `node ${process.version}`;
  },
  writeError: (text) => void process.stderr.write(text),
  writeErrorSync: (text) => void writeSync(2, text),
  fileInfo(name) {
    const st = statSync(name, { throwIfNoEntry: false });
    return st && { isFile: st.isFile(), key: realpathSync(name) };
  },
  sha256() {
    const h = createHash('sha256');
    const self = {
      update: (data: Uint8Array) => {
        h.update(data);
        return self;
      },
      digest: () => new Uint8Array(h.digest()),
    };
    return self;
  },
  randomBytes: (n) => new Uint8Array(randomBytes(n)),
  replaceFile,
  provideFile: undefined,
  openFile,
  // Bun has no V8: its node:v8 may lack the call or ignore it
  engineFlag(flag) {
    try {
      setFlagsFromString(flag);
    } catch {}
  },
  readAsset: (url) => readFileSync(url),
  inflate: (data, maxBytes) =>
    new Promise((resolve, reject) => {
      // maxOutputLength makes zlib stop at the limit rather than grow its output
      zlibInflate(data, { maxOutputLength: Math.max(1, maxBytes) }, (err, out) => {
        if (!err) return resolve(new Uint8Array(out.buffer, out.byteOffset, out.byteLength));
        const code = (err as { code?: string }).code;
        if (code === 'ERR_BUFFER_TOO_LARGE') reject(new Error(`inflated data is over ${maxBytes} bytes`));
        else if (code === 'Z_BUF_ERROR') reject(new Error('compressed data is truncated'));
        else reject(new Error(`compressed data is corrupt (${err.message})`));
      });
    }),
  // no decoders of its own: the formats only a browser decodes are refused (src/media/native.ts)
  decodeImageNative: undefined,
  decodeAudioNative: undefined,
};
