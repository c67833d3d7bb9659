// Session files: a context's tokens and its KV cache, so a conversation can continue in
// another context (or process) without evaluating its prompt again.
//
//   "LLTSSESS" | u32 version | u32 header length | header JSON | padding to 4 bytes
//   | i32 tokens[n] | i32 positions[n] | i32 pending shifts[n]
//   | per layer: K rows [n × rowBytesK], V rows [n × rowBytesV]
//   | SHA-256 of everything before it (32 bytes; version 2)
//
// The header names the model (architecture, sizes, file size, SHA-256 of the GGUF header
// and tensor table) and the cache types; loading into another model, or a context with
// other cache types or too small for the tokens, fails with a LlamaError ('ERR_SESSION'),
// as does a file whose checksum, header fields, tokens or positions do not hold up: a
// flipped bit would otherwise load silently and continue from a garbled cache.
//
// Saving writes a new file beside the target (O_EXCL) and renames it over the target,
// which must be a regular file if it exists: renaming over a device node or a FIFO would
// replace it (as root, /dev/full became a regular file).
import { createHash, randomBytes } from 'node:crypto';
import { lstat, open, realpath, rename, unlink } from 'node:fs/promises';
import { tensorGet, tensorSet } from '../backends/api.js';
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
  created: string;
}

function sessionError(path: string, message: string): LlamaError {
  return new LlamaError('ERR_SESSION', `session file ${path}: ${message}`);
}

/** Cells of a sequence in position order. */
function sequenceCells(ctx: Context, seq = 0): number[] {
  const kv = ctx.kv!;
  const cells: number[] = [];
  const bit = 1 << seq;
  for (let i = 0; i < kv.size; i++) if (kv.pos[i]! >= 0 && kv.seqs[i]! & bit) cells.push(i);
  return cells.sort((a, b) => kv.pos[a]! - kv.pos[b]!);
}

/** Runs of consecutive cell indices: [first, count]. */
function runs(cells: readonly number[]): [number, number][] {
  const out: [number, number][] = [];
  for (const c of cells) {
    const last = out[out.length - 1];
    if (last && last[0] + last[1] === c) last[1]++;
    else out.push([c, 1]);
  }
  return out;
}

/** Saves a sequence's tokens and cache (sequence 0: the session; another: a parallel slot). */
export async function saveSession(
  path: string,
  ctx: Context,
  tokens: readonly number[],
  identity: ModelIdentity,
  seq = 0,
): Promise<void> {
  const kv = ctx.kv;
  if (!kv) throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: there is no session to save`);
  const cells = sequenceCells(ctx, seq);
  if (cells.length !== tokens.length) {
    throw new LlamaError(
      'ERR_INTERNAL',
      `the cache holds ${cells.length} cells for ${tokens.length} tokens; cannot save a consistent session`,
    );
  }
  const n = cells.length;
  const rowBytesK = kv.k[0]?.nb[1] ?? 0;
  const rowBytesV = kv.v[0]?.nb[1] ?? 0;
  const header: SessionHeader = {
    model: identity,
    typeK: kv.typeK,
    typeV: kv.typeV,
    nTokens: n,
    nLayer: kv.k.length,
    rowBytesK,
    rowBytesV,
    created: new Date().toISOString(),
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const pad = (4 - ((MAGIC.length + 8 + json.length) % 4)) % 4;
  const head = Buffer.alloc(MAGIC.length + 8 + json.length + pad);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(SESSION_VERSION, 8);
  head.writeUInt32LE(json.length, 12);
  json.copy(head, 16);
  const ints = new Int32Array(3 * n);
  cells.forEach((c, i) => {
    ints[i] = tokens[i]!;
    ints[n + i] = kv.pos[c]!;
    ints[2 * n + i] = kv.shift[c]!;
  });

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
    await put(new Uint8Array(ints.buffer));
    const parts = runs(cells);
    for (let il = 0; il < kv.k.length; il++) {
      for (const [t, rowBytes] of [
        [kv.k[il]!, rowBytesK],
        [kv.v[il]!, rowBytesV],
      ] as const) {
        for (const [first, count] of parts) await put(await tensorGet(t, first * rowBytes, count * rowBytes));
      }
    }
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
  const kv = ctx.kv;
  if (!kv) throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: sessions need a generative model`);
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
    if (header.typeK !== kv.typeK || header.typeV !== kv.typeV) {
      throw sessionError(
        path,
        `cache types K ${header.typeK} / V ${header.typeV} differ from this context's (K ${kv.typeK} / V ${kv.typeV})`,
      );
    }
    const n = header.nTokens;
    if (n > kv.size) throw sessionError(path, `${n} tokens do not fit this context (n_ctx ${kv.size})`);
    if (seq !== undefined && n > 0) {
      const free = kv.size - sequenceCells(ctx).length;
      if (n > free + sequenceCells(ctx, seq).length) {
        throw sessionError(path, `${n} tokens do not fit the cells this slot can have`);
      }
    }
    const rowBytesK = kv.k[0]?.nb[1] ?? 0;
    const rowBytesV = kv.v[0]?.nb[1] ?? 0;
    if (header.nLayer !== kv.k.length || header.rowBytesK !== rowBytesK || header.rowBytesV !== rowBytesV) {
      throw sessionError(path, 'cache layout differs from this context');
    }
    await r.read((4 - (r.at % 4)) % 4); // padding
    const expected = r.at + 12 * n + header.nLayer * n * (rowBytesK + rowBytesV) + CHECKSUM_BYTES;
    if (r.size !== expected) {
      throw sessionError(path, `size ${r.size} bytes, expected ${expected} (truncated or corrupt)`);
    }
    const intBytes = await r.read(12 * n);
    const ints = new Int32Array(intBytes.buffer, intBytes.byteOffset, 3 * n);
    // what the completion loop relies on: token i is a token of this vocabulary at
    // position i; a pending shift (a context shift not yet applied to K) only ever moved
    // the token back, from the position its keys were rotated for
    for (let i = 0; i < n; i++) {
      const token = ints[i]!;
      const pos = ints[n + i]!;
      const shift = ints[2 * n + i]!;
      if (token < 0 || token >= identity.nVocab) {
        throw sessionError(path, `token ${i} is ${token}, outside the vocabulary (0 to ${identity.nVocab - 1})`);
      }
      if (pos !== i) throw sessionError(path, `token ${i} is at position ${pos}; a session's positions run 0, 1, 2, …`);
      if (shift > 0 || pos - shift > 0x7fffffff) {
        throw sessionError(
          path,
          `token ${i} has a pending shift of ${shift}; shifts move tokens back (≤ 0) within int32`,
        );
      }
    }

    let cells: number[];
    if (seq === undefined) {
      ctx.clearMemory();
      cells = Array.from({ length: n }, (_, i) => i);
    } else {
      ctx.seqRm(seq, -1, -1);
      cells = n > 0 ? kv.findSlots(n)! : [];
    }
    const parts = runs(cells);
    for (let il = 0; il < kv.k.length; il++) {
      const k = await r.read(n * rowBytesK);
      const v = await r.read(n * rowBytesV);
      let at = 0;
      for (const [first, count] of parts) {
        tensorSet(kv.k[il]!, k.subarray(at * rowBytesK, (at + count) * rowBytesK), first * rowBytesK);
        tensorSet(kv.v[il]!, v.subarray(at * rowBytesV, (at + count) * rowBytesV), first * rowBytesV);
        at += count;
      }
    }
    const sum = await r.read(CHECKSUM_BYTES, false);
    if (!sum.equals(r.digest())) {
      if (seq === undefined) ctx.clearMemory();
      throw sessionError(path, 'checksum mismatch: the file was changed or damaged after it was saved');
    }
    kv.store(cells, ints.subarray(n, 2 * n), new Int32Array(n).fill(seq ?? 0));
    for (let i = 0; i < n; i++) {
      const s = ints[2 * n + i]!;
      if (s !== 0) {
        kv.shift[cells[i]!] = s;
        kv.hasShift = true;
      }
    }
    return Array.from(ints.subarray(0, n));
  } finally {
    await fh.close();
  }
}
