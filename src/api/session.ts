// Session files: a context's tokens and its memory (KV caches), so a conversation can
// continue in another context (or process) without evaluating its prompt again.
//
//   "LLTSSESS" | u32 version | u32 header length | header JSON | padding to 4 bytes
//   | i32 tokens[n] | the memory's state of sequence 0 (Memory.stateWrite: per cache,
//   cell positions, pending shifts and K/V rows per layer)
//
// The header names the model (architecture, sizes, file size, SHA-256 of the GGUF header
// and tensor table), the cache types and the memory's layout; loading into another model,
// or a context with other cache types or too small for the tokens, fails with a
// LlamaError ('ERR_SESSION'). A sliding-window cache keeps only its newest cells, so a
// session loads into a context whose window cache has another size.
import { open, rename, unlink } from 'node:fs/promises';
import type { Context } from '../model/index.js';
import { LlamaError } from './errors.js';
import { identityDiff, type ModelIdentity } from './info.js';

const MAGIC = Buffer.from('LLTSSESS', 'latin1');
export const SESSION_VERSION = 2;

interface SessionHeader {
  model: ModelIdentity;
  typeK: string;
  typeV: string;
  nTokens: number;
  memory: unknown;
  created: string;
}

function sessionError(path: string, message: string): LlamaError {
  return new LlamaError('ERR_SESSION', `session file ${path}: ${message}`);
}

function cacheTypes(ctx: Context): [string, string] {
  const c = ctx.memory!.caches[0];
  return [c.typeK, c.typeV];
}

export async function saveSession(
  path: string,
  ctx: Context,
  tokens: readonly number[],
  identity: ModelIdentity,
): Promise<void> {
  const memory = ctx.memory;
  if (!memory) throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: there is no session to save`);
  if (memory.seqPosMax(0) + 1 !== tokens.length) {
    throw new LlamaError(
      'ERR_INTERNAL',
      `the cache holds positions up to ${memory.seqPosMax(0)} for ${tokens.length} tokens; cannot save a consistent session`,
    );
  }
  const n = tokens.length;
  const [typeK, typeV] = cacheTypes(ctx);
  const header: SessionHeader = {
    model: identity,
    typeK,
    typeV,
    nTokens: n,
    memory: memory.stateLayout(),
    created: new Date().toISOString(),
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const pad = (4 - ((MAGIC.length + 8 + json.length) % 4)) % 4;
  const head = Buffer.alloc(MAGIC.length + 8 + json.length + pad);
  MAGIC.copy(head, 0);
  head.writeUInt32LE(SESSION_VERSION, 8);
  head.writeUInt32LE(json.length, 12);
  json.copy(head, 16);

  const tmp = `${path}.${process.pid}.tmp`;
  const fh = await open(tmp, 'w');
  try {
    await fh.write(head);
    await fh.write(new Uint8Array(Int32Array.from(tokens).buffer));
    await memory.stateWrite(0, async (bytes) => {
      await fh.write(bytes);
    });
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
  const memory = ctx.memory;
  if (!memory)
    throw new LlamaError('ERR_CONTEXT', `${identity.arch} has no KV cache: sessions need a generative model`);
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
    const [typeK, typeV] = cacheTypes(ctx);
    if (header.typeK !== typeK || header.typeV !== typeV) {
      throw sessionError(
        path,
        `cache types K ${header.typeK} / V ${header.typeV} differ from this context's (K ${typeK} / V ${typeV})`,
      );
    }
    const n = header.nTokens;
    if (!(Number.isSafeInteger(n) && n >= 0)) throw sessionError(path, `bad token count ${n}`);
    if (n > ctx.nCtx) throw sessionError(path, `${n} tokens do not fit this context (n_ctx ${ctx.nCtx})`);
    if (JSON.stringify(header.memory) !== JSON.stringify(memory.stateLayout())) {
      throw sessionError(path, 'cache layout differs from this context');
    }
    let at = 16 + jsonLen;
    at += (4 - (at % 4)) % 4;
    const tokenBytes = await read(4 * n, at);
    at += 4 * n;
    const tokens = Array.from(new Int32Array(tokenBytes.buffer, tokenBytes.byteOffset, n));

    ctx.clearMemory();
    try {
      await memory.stateRead(0, async (bytes) => {
        const b = await read(bytes, at);
        at += bytes;
        return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
      });
    } catch (e) {
      ctx.clearMemory();
      if (e instanceof LlamaError) throw e;
      throw sessionError(path, (e as Error).message);
    }
    if (at !== size) {
      ctx.clearMemory();
      throw sessionError(path, `size ${size} bytes, expected ${at} (corrupt)`);
    }
    if (memory.seqPosMax(0) + 1 !== n) {
      ctx.clearMemory();
      throw sessionError(path, `the cache holds positions up to ${memory.seqPosMax(0)} for ${n} tokens (corrupt)`);
    }
    return tokens;
  } finally {
    await fh.close();
  }
}
