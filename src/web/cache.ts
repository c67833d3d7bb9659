// Model downloads for the browser: HTTP range requests into the Origin Private File System
// (OPFS), so an interrupted download resumes where it stopped and a second visit loads the
// model without the network. One file per URL (named by the URL's SHA-256), and a marker
// written when it is complete; where OPFS is missing (or `cache: false`) the download is
// kept in memory only. Runs on the page (fetch and OPFS are asynchronous: nothing blocks).
import { hex, platform } from '../platform/index.js';

/** The most a model may have: one wasm32 memory's reach (the CPU device's arenas are wasm32). */
export const MAX_MODEL_BYTES = 2 ** 32;

const DIR = 'llama-ts-models';

// The Web APIs used here, declared narrowly (the project compiles without the DOM library).
export interface WebBlob {
  readonly size: number;
  slice(start?: number, end?: number): WebBlob;
  arrayBuffer(): Promise<ArrayBuffer>;
}
interface Writable {
  seek(position: number): Promise<void>;
  write(data: Uint8Array): Promise<void>;
  close(): Promise<void>;
}
interface FileHandle {
  getFile(): Promise<WebBlob>;
  createWritable?(options?: { keepExistingData: boolean }): Promise<Writable>;
}
interface DirHandle {
  getDirectoryHandle(name: string, options?: { create: boolean }): Promise<DirHandle>;
  getFileHandle(name: string, options?: { create: boolean }): Promise<FileHandle>;
  removeEntry(name: string, options?: { recursive: boolean }): Promise<void>;
}
interface Body {
  getReader(): { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> };
  cancel(): Promise<void>;
}
interface WebResponse {
  status: number;
  ok: boolean;
  headers: { get(name: string): string | null };
  body: Body | null;
}
interface WebGlobals {
  fetch(url: string, init: { signal?: AbortSignal; headers?: Record<string, string> }): Promise<WebResponse>;
  navigator?: { storage?: { getDirectory?(): Promise<DirHandle> } };
  Blob: new (parts: unknown[]) => WebBlob;
}
const g = globalThis as unknown as WebGlobals;

/** What a download reports: bytes so far and in all (undefined when the server does not say). */
export type DownloadProgress = (loaded: number, total: number | undefined) => void;

export function tooLarge(what: string, bytes: number): Error {
  return new Error(
    `${what}: the model has ${(bytes / 2 ** 30).toFixed(2)} GiB; llama-ts in the browser holds at most 4 GiB (one wasm32 memory): choose a smaller or more quantized model`,
  );
}

async function root(): Promise<DirHandle | undefined> {
  const get = g.navigator?.storage?.getDirectory;
  if (!get) return undefined;
  try {
    return await get.call(g.navigator?.storage);
  } catch {
    return undefined; // OPFS refused (private browsing, a sandboxed frame)
  }
}

async function cacheDir(): Promise<DirHandle | undefined> {
  return (await root())?.getDirectoryHandle(DIR, { create: true });
}

async function fileIn(dir: DirHandle, name: string): Promise<WebBlob | undefined> {
  try {
    return await (await dir.getFileHandle(name)).getFile();
  } catch {
    return undefined;
  }
}

async function textIn(dir: DirHandle, name: string): Promise<string | undefined> {
  const b = await fileIn(dir, name);
  return b ? new TextDecoder().decode(await b.arrayBuffer()) : undefined;
}

async function writeText(dir: DirHandle, name: string, text: string): Promise<void> {
  const w = await (await dir.getFileHandle(name, { create: true })).createWritable?.();
  await w?.write(new TextEncoder().encode(text));
  await w?.close();
}

/** The total size from a Content-Range header ("bytes 10-99/100", "bytes *\/100"). */
function rangeTotal(h: string | null): number | undefined {
  const m = h && /\/(\d+)\s*$/.exec(h);
  return m ? Number(m[1]) : undefined;
}

/**
 * The model at `url` as a Blob: from the cache when it is complete there, else downloaded
 * (resuming a partial file with a range request), with progress, cancelled by `signal`.
 */
export async function downloadModel(
  url: string,
  options: { signal?: AbortSignal; onProgress?: DownloadProgress; cache?: boolean } = {},
): Promise<WebBlob> {
  const { signal, onProgress } = options;
  const dir = options.cache === false ? undefined : await cacheDir();
  const key = hex(platform.sha256().update(new TextEncoder().encode(url)).digest()).slice(0, 40);
  const dataName = `${key}.gguf`;
  const doneName = `${key}.done`;
  if (dir) {
    const marker = await fileIn(dir, doneName);
    const data = await fileIn(dir, dataName);
    if (marker && data) {
      onProgress?.(data.size, data.size);
      return data;
    }
  }
  let have = dir ? ((await fileIn(dir, dataName))?.size ?? 0) : 0;
  // a resumed download asks for the rest only of the same version (If-Range: the server
  // sends the whole new file when it changed)
  const validator = have > 0 && dir ? await textIn(dir, `${key}.version`) : undefined;
  const headers: Record<string, string> = have > 0 ? { Range: `bytes=${have}-` } : {};
  if (validator) headers['If-Range'] = validator;
  const res = await g.fetch(url, { ...(signal ? { signal } : {}), headers });
  let total: number | undefined;
  if (res.status === 206) total = rangeTotal(res.headers.get('content-range'));
  else if (res.status === 416 && have > 0) {
    // nothing past what is here: complete if the server's size says so, else (the file
    // changed on the server) start over
    total = rangeTotal(res.headers.get('content-range'));
    if (total !== have && dir) {
      await dir.removeEntry(dataName);
      return downloadModel(url, options);
    }
  } else if (res.ok) {
    have = 0; // the server sent the whole file
    const n = Number(res.headers.get('content-length'));
    total = Number.isFinite(n) && n > 0 ? n : undefined;
  } else throw new Error(`${url}: HTTP ${res.status}`);
  if (total !== undefined && total > MAX_MODEL_BYTES) {
    await res.body?.cancel().catch(() => {});
    throw tooLarge(url, total);
  }
  const handle = dir ? await dir.getFileHandle(dataName, { create: true }) : undefined;
  const version = res.headers.get('etag') ?? res.headers.get('last-modified');
  if (dir && version && res.status !== 416) await writeText(dir, `${key}.version`, version);
  const writable = handle?.createWritable ? await handle.createWritable({ keepExistingData: have > 0 }) : undefined;
  const memory: Uint8Array[] = [];
  onProgress?.(have, total);
  if (res.status !== 416 && res.body) {
    const reader = res.body.getReader();
    try {
      if (writable) await writable.seek(have);
      for (;;) {
        const { done, value } = await reader.read();
        if (done || !value) break;
        if (writable) await writable.write(value);
        else memory.push(value);
        have += value.length;
        if (have > MAX_MODEL_BYTES) throw tooLarge(url, have);
        onProgress?.(have, total);
      }
    } catch (e) {
      // what arrived stays in the cache: the next try resumes from there
      await writable?.close().catch(() => {});
      await reader.cancel().catch(() => {});
      throw e;
    }
  }
  if (total !== undefined && have !== total) {
    await writable?.close().catch(() => {});
    throw new Error(`${url}: the download ended at ${have} of ${total} bytes`);
  }
  if (!writable || !dir || !handle) return new g.Blob(memory);
  await writable.close();
  await writeText(dir, doneName, JSON.stringify({ url, size: have }));
  return handle.getFile();
}

/** Deletes every model downloaded to the browser's cache (OPFS). */
export async function clearDownloadCache(): Promise<void> {
  const r = await root();
  await r?.removeEntry(DIR, { recursive: true }).catch((e: { name?: string }) => {
    if (e?.name !== 'NotFoundError') throw e;
  });
}
