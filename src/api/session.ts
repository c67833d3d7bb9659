// Session files: a context's tokens and its memory (KV caches), so a conversation can
// continue in another context (or process) without evaluating its prompt again.
//
//   "LLTSSESS" | u32 version | u32 header length | header JSON | padding to 4 bytes
//   | i32 tokens[n]
//   | the memory's state of sequence 0 (Memory.stateWrite), per cache: i32 positions[c],
//     i32 pending shifts[c], per layer: K rows [c × row bytes], V rows [c × row bytes]
//     (one cache of n cells; with sliding-window layers a second of the window's newest)
//   | SHA-256 of everything before it (32 bytes; version 2)
//
// The header names the model (architecture, sizes, file size, SHA-256 of the GGUF header
// and tensor table), the cache types, the memory's layout and its cells per cache; loading
// into another model, or a context with other cache types or too small for the tokens,
// fails with a LlamaError ('ERR_SESSION'), as does a file whose checksum, header fields,
// tokens or positions do not hold up: a flipped bit would otherwise load silently and
// continue from a garbled cache. A window cache keeps only its newest cells, so a session
// loads into a context whose window cache has another size.
//
// Saving writes a new file beside the target (O_EXCL) and renames it over the target,
// which must be a regular file if it exists: renaming over a device node or a FIFO would
// replace it (as root, /dev/full became a regular file).
import { createHash, randomBytes } from 'node:crypto';
import { lstat, open, realpath, rename, unlink } from 'node:fs/promises';
import type { Context } from '../model/index.js';
import { LlamaError } from './errors.js';
import { identityDiff, type ModelIdentity } from './info.js';

const MAGIC = Buffer.from('LLTSSESS', 'latin1');
/** 2: a SHA-256 trailer over header and data. 1: no checksum (refused, naming the version). */
export const SESSION_VERSION = 2;
const CHECKSUM_BYTES = 32;
/** A header is a few hundred bytes; a length beyond this is corruption, not a header to allocate. */
const MAX_HEADER_BYTES = 1 << 20;

interface SessionHeader {
  model: ModelIdentity;
  typeK: string;
  typeV: string;
  nTokens: number;
  nLayer: number;
  rowBytesK: number;
  rowBytesV: number;
  /** Memory.stateLayout(): the state loads only into a memory with the same. */
  memory: unknown;
  /** Cells of the saved sequence per cache (Memory.stateCells). */
  cells: number[];
  created: string;
}

function sessionError(path: string, message: string): LlamaError {
  return new LlamaError('ERR_SESSION', `session file ${path}: ${message}`);
}

/** Saves a sequence's tokens and cache (sequence 0: the session; another: a parallel slot). */
export async function saveSession(
  path: string,
  ctx: Context,
  tokens: readonly number[],
  identity: ModelIdentity,
  seq = 0,
): Promise<void> {
  const memory = ctx.memory;
  if (!memory) throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: there is no session to save`);
  // (media positions hold placeholder ids, not tokens: a file could not be loaded back)
  if (tokens.some((t) => t < 0)) {
    throw new LlamaError(
      'ERR_SESSION',
      `${path}: the conversation holds images; llama-ts does not save sessions with media (llama.node's .meta sidecar is not written)`,
    );
  }
  const cells = memory.stateCells(seq);
  if (cells[0] !== tokens.length || memory.seqPosMax(seq) + 1 !== tokens.length) {
    throw new LlamaError(
      'ERR_INTERNAL',
      `the cache holds ${cells[0]} cells for ${tokens.length} tokens; cannot save a consistent session`,
    );
  }
  const n = tokens.length;
  const cache = memory.caches[0];
  const layer0 = cache.layerIds[0] ?? 0;
  const header: SessionHeader = {
    model: identity,
    typeK: cache.typeK,
    typeV: cache.typeV,
    nTokens: n,
    nLayer: ctx.model.hp.nLayer,
    rowBytesK: cache.layerIds.length > 0 ? cache.k(layer0).nb[1] : 0,
    rowBytesV: cache.layerIds.length > 0 ? cache.v(layer0).nb[1] : 0,
    memory: memory.stateLayout(),
    cells,
    created: new Date().toISOString(),
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const pad = (4 - ((MAGIC.length + 8 + json.length) % 4)) % 4;
  const head = Buffer.alloc(MAGIC.length + 8 + json.length + pad);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(SESSION_VERSION, 8);
  head.writeUInt32LE(json.length, 12);
  json.copy(head, 16);

  const target = await replaceableTarget(path);
  const tmp = `${target}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(tmp, 'wx');
  } catch (e) {
    throw sessionError(path, `cannot write beside it: ${(e as Error).message}`);
  }
  try {
    const hash = createHash('sha256');
    const put = async (b: Uint8Array) => {
      hash.update(b);
      await fh.write(b);
    };
    await put(head);
    await put(new Uint8Array(Int32Array.from(tokens).buffer));
    await memory.stateWrite(seq, put);
    await fh.write(hash.digest());
    await fh.close();
    await rename(tmp, target);
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

/**
 * The file a save replaces: `path`, or the file a symbolic link at `path` points to (the
 * link stays). Anything there that is not a regular file (a device, a FIFO, a folder) is
 * refused: the save's rename would replace it.
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
      throw sessionError(path, `is ${kind}; a session replaces regular files only`);
    }
  } catch (e) {
    if (e instanceof LlamaError) throw e;
    const code = (e as NodeJS.ErrnoException).code;
    // nothing there yet (or a dangling link's target): a new file
    if (code !== 'ENOENT') throw sessionError(path, `cannot inspect: ${(e as Error).message}`);
  }
  return target;
}

/** Reads a session file front to back, hashing what it reads (the checksum covers every byte before it). */
class SessionReader {
  private readonly hash = createHash('sha256');
  at = 0;

  constructor(
    private readonly fh: Awaited<ReturnType<typeof open>>,
    private readonly path: string,
    readonly size: number,
  ) {}

  async read(bytes: number, hashed = true): Promise<Buffer> {
    if (this.at + bytes > this.size) {
      throw sessionError(this.path, `truncated (needs ${this.at + bytes} bytes, has ${this.size})`);
    }
    const b = Buffer.alloc(bytes);
    let done = 0;
    while (done < bytes) {
      const { bytesRead } = await this.fh.read(b, done, bytes - done, this.at + done);
      if (bytesRead === 0) throw sessionError(this.path, 'short read');
      done += bytesRead;
    }
    this.at += bytes;
    if (hashed) this.hash.update(b);
    return b;
  }

  digest(): Buffer {
    return this.hash.digest();
  }
}

const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;

/** The header's fields, checked for type and range before anything is sized from them. */
function checkHeader(path: string, h: unknown): SessionHeader {
  const bad = (what: string) => sessionError(path, `bad header: ${what}`);
  if (typeof h !== 'object' || h === null || Array.isArray(h)) throw bad(`not an object (${JSON.stringify(h)})`);
  const o = h as Record<string, unknown>;
  const m = o.model as Record<string, unknown> | null | undefined;
  if (typeof m !== 'object' || m === null) throw bad("no 'model'");
  for (const k of ['arch', 'name', 'headerSha256'] as const) {
    if (typeof m[k] !== 'string') throw bad(`model.${k} is ${JSON.stringify(m[k])}, expected a string`);
  }
  for (const k of ['nLayer', 'nEmbd', 'nVocab', 'nEmbdK', 'nEmbdV', 'fileSize'] as const) {
    if (!isCount(m[k])) throw bad(`model.${k} is ${JSON.stringify(m[k])}, expected a count`);
  }
  for (const k of ['typeK', 'typeV'] as const) {
    if (typeof o[k] !== 'string') throw bad(`${k} is ${JSON.stringify(o[k])}, expected a cache type`);
  }
  for (const k of ['nTokens', 'nLayer', 'rowBytesK', 'rowBytesV'] as const) {
    if (!isCount(o[k])) throw bad(`${k} is ${JSON.stringify(o[k])}, expected a count`);
  }
  if (!Array.isArray(o.cells) || !o.cells.every(isCount))
    throw bad(`cells is ${JSON.stringify(o.cells)}, expected counts`);
  return h as SessionHeader;
}

/**
 * Restores tokens and cache from a session file into `ctx`, cleared first; returns the
 * tokens. With `seq`, only that sequence is replaced (a parallel slot): its cells are
 * dropped and the file's go into free cells, the other sequences' cells untouched.
 */
export async function loadSession(
  path: string,
  ctx: Context,
  identity: ModelIdentity,
  seq?: number,
): Promise<number[]> {
  const memory = ctx.memory;
  if (!memory)
    throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: sessions need a generative model`);
  const cache = memory.caches[0];
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw sessionError(path, `cannot open: ${(e as Error).message}`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw sessionError(path, 'not a regular file');
    const r = new SessionReader(fh, path, st.size);
    const start = await r.read(16);
    if (!start.subarray(0, 8).equals(MAGIC)) throw sessionError(path, 'not a llama-ts session file (bad magic)');
    const version = start.readUInt32LE(8);
    if (version !== SESSION_VERSION) {
      const older = version < SESSION_VERSION ? ' (an older llama-ts, without a checksum): save it again' : '';
      throw sessionError(path, `format version ${version}; this llama-ts reads version ${SESSION_VERSION}${older}`);
    }
    const jsonLen = start.readUInt32LE(12);
    if (jsonLen > MAX_HEADER_BYTES) throw sessionError(path, `header of ${jsonLen} bytes (corrupt)`);
    const json = await r.read(jsonLen);
    let parsed: unknown;
    try {
      parsed = JSON.parse(json.toString('utf8'));
    } catch {
      throw sessionError(path, 'unreadable header');
    }
    const header = checkHeader(path, parsed);
    const diff = identityDiff(header.model, identity);
    if (diff.length > 0) {
      throw sessionError(
        path,
        `saved with another model ('${header.model.name}', ${header.model.arch}) than this one ('${identity.name}', ${identity.arch}): ${diff.join('; ')}`,
      );
    }
    if (header.typeK !== cache.typeK || header.typeV !== cache.typeV) {
      throw sessionError(
        path,
        `cache types K ${header.typeK} / V ${header.typeV} differ from this context's (K ${cache.typeK} / V ${cache.typeV})`,
      );
    }
    const n = header.nTokens;
    if (n > ctx.nCtx) throw sessionError(path, `${n} tokens do not fit this context (n_ctx ${ctx.nCtx})`);
    if (JSON.stringify(header.memory) !== JSON.stringify(memory.stateLayout()) || header.cells[0] !== n) {
      throw sessionError(path, 'cache layout differs from this context');
    }
    await r.read((4 - (r.at % 4)) % 4); // padding
    const tokenBytes = await r.read(4 * n);
    const tokens = new Int32Array(tokenBytes.buffer, tokenBytes.byteOffset, n);
    for (let i = 0; i < n; i++) {
      const token = tokens[i]!;
      if (token < 0 || token >= identity.nVocab) {
        throw sessionError(path, `token ${i} is ${token}, outside the vocabulary (0 to ${identity.nVocab - 1})`);
      }
    }
    // what the completion loop relies on: token i is at position i (a window cache holds the
    // newest positions, up to n - 1); a pending shift (a context shift not yet applied to K)
    // only ever moved the token back, from the position its keys were rotated for
    const check = (c: number, pos: Int32Array, shift: Int32Array): void => {
      const first = n - pos.length;
      for (let j = 0; j < pos.length; j++) {
        const i = first + j;
        if (pos[j] !== i) {
          throw sessionError(path, `token ${i} is at position ${pos[j]}; a session's positions run 0, 1, 2, …`);
        }
        if (shift[j]! > 0 || pos[j]! - shift[j]! > 0x7fffffff) {
          throw sessionError(
            path,
            `token ${i} has a pending shift of ${shift[j]}; shifts move tokens back (≤ 0) within int32`,
          );
        }
      }
      if (c > 0 && pos.length > n) throw sessionError(path, `cache ${c} holds ${pos.length} cells for ${n} tokens`);
    };

    // what a failure leaves: nothing of the sequence (all of the memory for a session)
    const drop = () => (seq === undefined ? ctx.clearMemory() : memory.seqRm(seq, -1, -1));
    if (seq === undefined) ctx.clearMemory();
    try {
      await memory.stateRead(
        seq ?? 0,
        async (bytes) => {
          const b = await r.read(bytes);
          return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
        },
        header.cells,
        check,
      );
    } catch (e) {
      drop();
      if (e instanceof LlamaError) throw e;
      throw sessionError(path, (e as Error).message);
    }
    if (r.at + CHECKSUM_BYTES !== r.size) {
      drop();
      throw sessionError(path, `size ${r.size} bytes, expected ${r.at + CHECKSUM_BYTES} (truncated or corrupt)`);
    }
    const sum = await r.read(CHECKSUM_BYTES, false);
    if (!sum.equals(r.digest())) {
      drop();
      throw sessionError(path, 'checksum mismatch: the file was changed or damaged after it was saved');
    }
    return Array.from(tokens);
  } finally {
    await fh.close();
  }
}
