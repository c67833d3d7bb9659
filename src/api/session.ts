// Session files: a context's tokens and its KV cache, so a conversation can continue in
// another context (or process) without evaluating its prompt again.
//
//   "LLTSSESS" | u32 version | u32 header length | header JSON | padding to 4 bytes
//   | i32 tokens[n] | i32 positions[n] | i32 pending shifts[n]
//   | per layer: K rows [n × rowBytesK], V rows [n × rowBytesV]
//
// The header names the model (architecture, sizes, file size, SHA-256 of the GGUF header
// and tensor table) and the cache types; loading into another model, or a context with
// other cache types or too small for the tokens, fails with a LlamaError ('ERR_SESSION').
import { open, rename, unlink } from 'node:fs/promises';
import { tensorGet, tensorSet } from '../backends/api.js';
import type { Context } from '../model/index.js';
import { LlamaError } from './errors.js';
import { identityDiff, type ModelIdentity } from './info.js';

const MAGIC = Buffer.from('LLTSSESS', 'latin1');
export const SESSION_VERSION = 1;

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

/** Cells of sequence 0 in position order. */
function sequenceCells(ctx: Context): number[] {
  const kv = ctx.kv!;
  const cells: number[] = [];
  for (let i = 0; i < kv.size; i++) if (kv.pos[i]! >= 0 && kv.seqs[i]! & 1) cells.push(i);
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

export async function saveSession(
  path: string,
  ctx: Context,
  tokens: readonly number[],
  identity: ModelIdentity,
): Promise<void> {
  const kv = ctx.kv;
  if (!kv) throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: there is no session to save`);
  const cells = sequenceCells(ctx);
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

  const tmp = `${path}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.write(head);
    await fh.write(new Uint8Array(ints.buffer));
    const parts = runs(cells);
    for (let il = 0; il < kv.k.length; il++) {
      for (const [t, rowBytes] of [
        [kv.k[il]!, rowBytesK],
        [kv.v[il]!, rowBytesV],
      ] as const) {
        for (const [first, count] of parts) await fh.write(await tensorGet(t, first * rowBytes, count * rowBytes));
      }
    }
    await fh.close();
    await rename(tmp, path);
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

/** Restores tokens and cache from a session file into `ctx` (cleared first); returns the tokens. */
export async function loadSession(path: string, ctx: Context, identity: ModelIdentity): Promise<number[]> {
  const kv = ctx.kv;
  if (!kv) throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: sessions need a generative model`);
  let fh: Awaited<ReturnType<typeof open>>;
  try {
    fh = await open(path, 'r');
  } catch (e) {
    throw sessionError(path, `cannot open: ${(e as Error).message}`);
  }
  try {
    const size = (await fh.stat()).size;
    const read = async (bytes: number, at: number): Promise<Buffer> => {
      if (at + bytes > size) throw sessionError(path, `truncated (needs ${at + bytes} bytes, has ${size})`);
      const b = Buffer.alloc(bytes);
      const { bytesRead } = await fh.read(b, 0, bytes, at);
      if (bytesRead !== bytes) throw sessionError(path, 'short read');
      return b;
    };
    const start = await read(16, 0);
    if (!start.subarray(0, 8).equals(MAGIC)) throw sessionError(path, 'not a llama-ts session file (bad magic)');
    const version = start.readUInt32LE(8);
    if (version !== SESSION_VERSION) {
      throw sessionError(path, `format version ${version}; this llama-ts reads version ${SESSION_VERSION}`);
    }
    const jsonLen = start.readUInt32LE(12);
    let header: SessionHeader;
    try {
      header = JSON.parse((await read(jsonLen, 16)).toString('utf8')) as SessionHeader;
    } catch (e) {
      if (e instanceof LlamaError) throw e;
      throw sessionError(path, 'unreadable header');
    }
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
    const rowBytesK = kv.k[0]?.nb[1] ?? 0;
    const rowBytesV = kv.v[0]?.nb[1] ?? 0;
    if (header.nLayer !== kv.k.length || header.rowBytesK !== rowBytesK || header.rowBytesV !== rowBytesV) {
      throw sessionError(path, 'cache layout differs from this context');
    }
    let at = 16 + jsonLen;
    at += (4 - (at % 4)) % 4;
    const intBytes = await read(12 * n, at);
    at += 12 * n;
    const ints = new Int32Array(intBytes.buffer, intBytes.byteOffset, 3 * n);
    const expected = at + header.nLayer * n * (rowBytesK + rowBytesV);
    if (size !== expected) throw sessionError(path, `size ${size} bytes, expected ${expected} (truncated or corrupt)`);

    ctx.clearMemory();
    for (let il = 0; il < kv.k.length; il++) {
      const k = await read(n * rowBytesK, at);
      at += n * rowBytesK;
      const v = await read(n * rowBytesV, at);
      at += n * rowBytesV;
      if (n > 0) {
        tensorSet(kv.k[il]!, k, 0);
        tensorSet(kv.v[il]!, v, 0);
      }
    }
    const cells = Array.from({ length: n }, (_, i) => i);
    kv.store(cells, ints.subarray(n, 2 * n), new Int32Array(n));
    for (let i = 0; i < n; i++) {
      const s = ints[2 * n + i]!;
      if (s !== 0) {
        kv.shift[i] = s;
        kv.hasShift = true;
      }
    }
    return Array.from(ints.subarray(0, n));
  } finally {
    await fh.close();
  }
}
