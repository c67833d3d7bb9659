// Quantizing a model file, as llama.cpp's llama_model_quantize does: the metadata is
// copied (general.quantization_version and general.file_type set, moved to the end like
// gguf_set_val does; the importance matrix's provenance added), tensors keep
// llama-quantize's order and get its per-tensor types (tensor-types.ts), and each
// tensor's data is converted in slabs of rows on a worker pool and written in place.
// Memory stays bounded by a slab (64 MiB of f32 rows) whatever the model's size; the
// output is written under a temporary name and renamed when complete.

import { open, rename, unlink } from 'node:fs/promises';
import { resolve } from 'node:path';
import { canDequantize, canQuantizeRows } from '../ggml/quants/index.js';
import { type GGMLType, rowSize, traitsOf, typeName } from '../ggml/types.js';
import { type GGUFFile, GGUFValueType, GGUFWriter, openGGUF } from '../gguf/index.js';
import { FILE_TYPES, type FileTypeName } from './ftypes.js';
import type { ImatrixFile } from './imatrix-file.js';
import { imatrixWeights } from './imatrix-file.js';
import { QuantizePool, type SlabTask } from './pool.js';
import { convertRows } from './rows.js';
import { chooseTensorTypes, type TypeChoiceModel, type TypeChoiceOptions } from './tensor-types.js';

export class QuantizeError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'QuantizeError';
  }
}

export interface QuantizeProgress {
  /** Tensors done so far (1-based index of the one just written). */
  index: number;
  count: number;
  name: string;
  /** Source and destination types. */
  from: string;
  to: string;
  bytesIn: number;
  bytesInTotal: number;
  bytesOut: number;
  elapsedMs: number;
}

export interface QuantizeOptions {
  /** File type, or 'COPY' to copy every tensor as it is. */
  fileType: FileTypeName | 'COPY';
  /** An importance matrix (readImatrixFile) and the path recorded as its provenance. */
  imatrix?: ImatrixFile;
  imatrixPath?: string;
  /** Quantize tensors that are already quantized (dequantizing them first). */
  allowRequantize?: boolean;
  outputTensorType?: GGMLType;
  tokenEmbeddingType?: GGMLType;
  /** --tensor-type NAME=TYPE, in order: NAME is a regular expression searched in tensor names. */
  tensorTypes?: ReadonlyArray<readonly [string, GGMLType]>;
  pure?: boolean;
  leaveOutputTensor?: boolean;
  /** Worker threads (default: one per core; 0: the calling thread only). */
  threads?: number;
  onProgress?: (p: QuantizeProgress) => void;
  signal?: AbortSignal;
}

export interface QuantizedTensor {
  name: string;
  from: GGMLType;
  to: GGMLType;
  dims: number[];
  /** The type chosen before a row-length fallback replaced it. */
  fellBackFrom?: GGMLType;
}

export interface QuantizeResult {
  path: string;
  tensors: QuantizedTensor[];
  bytesIn: number;
  bytesOut: number;
  elapsedMs: number;
}

/** f32 values per slab: bounds the memory a tensor's conversion takes. */
const SLAB_ELEMENTS = 1 << 24;
/** ggml's chunk of work per thread: at least 32·512 values, whole rows. */
const MIN_CHUNK = 32 * 512;
/** Slabs smaller than this are converted on the calling thread. */
const INLINE_BELOW = 1 << 16;
const QNT_VERSION = 2;

function modelInfo(f: GGUFFile): TypeChoiceModel {
  const arch = f.architecture;
  const first = (key: string, fallback?: number): number => {
    const kv = f.get(key);
    if (!kv) {
      if (fallback === undefined) throw new QuantizeError(`${f.path}: metadata key '${key}' is missing`);
      return fallback;
    }
    if (typeof kv.value === 'object' && kv.value !== null && 'items' in kv.value) {
      const v = Number(kv.value.items[0] ?? 0);
      return v;
    }
    return f.getInt(key);
  };
  const nHead = first(`${arch}.attention.head_count`, 0);
  return {
    arch,
    nLayer: first(`${arch}.block_count`),
    nHead,
    nHeadKv: first(`${arch}.attention.head_count_kv`, nHead),
    nExpert: first(`${arch}.expert_count`, 0),
  };
}

/** Quantizes the model file `input` into `output` as llama-quantize would. */
export async function quantizeModel(input: string, output: string, opts: QuantizeOptions): Promise<QuantizeResult> {
  const t0 = performance.now();
  if (resolve(input) === resolve(output)) {
    throw new QuantizeError(`input and output files are the same: '${input}'`);
  }
  const f = openGGUF(input);
  const tmp = `${output}.tmp-${process.pid}`;
  let pool: QuantizePool | undefined;
  try {
    if (f.has('split.count') && f.getInt('split.count') > 1) {
      throw new QuantizeError(`${input}: split GGUF files are not supported (merge them first)`);
    }
    const onlyCopy = opts.fileType === 'COPY';
    const ftype = onlyCopy
      ? (f.getInt('general.file_type', 0) as number)
      : FILE_TYPES[opts.fileType as FileTypeName].ftype;
    const weights = opts.imatrix ? imatrixWeights(opts.imatrix) : undefined;
    if (weights) {
      for (const [name, w] of weights) {
        if (!w.every(Number.isFinite))
          throw new QuantizeError(`importance matrix entry '${name}' holds a non-finite value`);
      }
    }
    const choiceOpts: TypeChoiceOptions = {
      outputTensorType: opts.outputTensorType,
      tokenEmbeddingType: opts.tokenEmbeddingType,
      overrides: opts.tensorTypes?.map(([p, t]) => [compilePattern(p), t] as const),
      pure: opts.pure,
      quantizeOutputTensor: !opts.leaveOutputTensor,
      onlyCopy,
      hasImatrix: weights !== undefined,
    };
    const model = modelInfo(f);
    const choice = chooseTensorTypes(model, f.tensors, onlyCopy ? 'F32' : (opts.fileType as FileTypeName), choiceOpts);

    // everything that can be checked before writing is checked here, in file order
    const plan: Array<{ info: (typeof f.tensors)[number]; to: GGMLType; imatrix: Float32Array | null }> = [];
    // the chooser's map lists the tensors in llama-quantize's order
    for (const info of [...choice.keys()].map((name) => f.tensor(name)!)) {
      const c = choice.get(info.name)!;
      const to = c.type;
      let im: Float32Array | null = null;
      if (to !== info.type) {
        if (!weights && c.requiresImatrix) {
          throw new QuantizeError(
            `this quantization requires an importance matrix (--imatrix): tensor ${info.name} gets type ${typeName(to)}`,
          );
        }
        const w = weights?.get(info.name);
        const nMat = info.dims[2] ?? 1;
        if (w) {
          if (w.length === (info.dims[0] ?? 0) * nMat) im = w;
          else if (info.name !== 'token_embd.weight' && info.name !== 'per_layer_token_embd.weight') {
            throw new QuantizeError(
              `importance matrix size ${w.length} is different from tensor size ${(info.dims[0] ?? 0) * nMat} for ${info.name}`,
            );
          }
        }
        if (!im && c.requiresImatrix) {
          throw new QuantizeError(
            `missing importance matrix for tensor ${info.name} in a very low-bit quantization (${typeName(to)})`,
          );
        }
        if (traitsOf(info.type).quantized && !opts.allowRequantize) {
          throw new QuantizeError(
            `tensor ${info.name} is already ${typeName(info.type)}: requantizing is disabled (--allow-requantize)`,
          );
        }
        if (!canDequantize(info.type))
          throw new QuantizeError(`tensor ${info.name}: cannot read type ${typeName(info.type)}`);
        if (!canQuantizeRows(to)) throw new QuantizeError(`tensor ${info.name}: cannot quantize to ${typeName(to)}`);
      }
      plan.push({ info, to, imatrix: im });
    }

    const w = new GGUFWriter({ alignment: f.alignment });
    w.delete('general.alignment');
    for (const [key, kv] of f.metadata) w.set(key, kv.type, kv.value);
    for (const key of ['split.no', 'split.count', 'split.tensors.count']) w.delete(key);
    // gguf_set_val removes a key and appends it: these end up last, in this order
    const setLast = (key: string, type: GGUFValueType, value: string | number) => w.delete(key).set(key, type, value);
    setLast('general.quantization_version', GGUFValueType.UINT32, QNT_VERSION);
    setLast('general.file_type', GGUFValueType.UINT32, ftype);
    if (opts.imatrix) {
      setLast('quantize.imatrix.file', GGUFValueType.STRING, (opts.imatrixPath ?? '').slice(0, 127));
      const ds = opts.imatrix.datasets[0];
      if (ds !== undefined) setLast('quantize.imatrix.dataset', GGUFValueType.STRING, ds.slice(0, 127));
      setLast('quantize.imatrix.entries_count', GGUFValueType.UINT32, opts.imatrix.entries.size);
      if (opts.imatrix.chunkCount > 0) {
        setLast('quantize.imatrix.chunks_count', GGUFValueType.UINT32, opts.imatrix.chunkCount);
      }
    }
    for (const p of plan) w.addTensor(p.info.name, p.to, [...p.info.dims]);

    const threads = opts.threads ?? undefined;
    if (threads !== 0) pool = new QuantizePool(threads);
    const head = w.header();
    const fh = await open(tmp, 'w');
    const bytesInTotal = plan.reduce((a, p) => a + p.info.nBytes, 0);
    let bytesIn = 0;
    let bytesOut = head.length;
    try {
      await fh.write(head, 0, head.length, 0);
      const entries = w.tensors;
      for (let i = 0; i < plan.length; i++) {
        opts.signal?.throwIfAborted();
        const p = plan[i]!;
        const e = entries[i]!;
        await writeTensor(f, p.info, p.to, p.imatrix, fh, head.length + e.offset, pool, opts.signal);
        bytesIn += p.info.nBytes;
        bytesOut += e.nBytes;
        opts.onProgress?.({
          index: i + 1,
          count: plan.length,
          name: p.info.name,
          from: typeName(p.info.type),
          to: typeName(p.to),
          bytesIn,
          bytesInTotal,
          bytesOut,
          elapsedMs: performance.now() - t0,
        });
      }
      await fh.truncate(w.fileSize(head.length));
    } finally {
      await fh.close();
    }
    await rename(tmp, output);
    return {
      path: output,
      tensors: plan.map((p) => ({
        name: p.info.name,
        from: p.info.type,
        to: p.to,
        dims: [...p.info.dims],
        ...(choice.get(p.info.name)?.fellBackFrom !== undefined
          ? { fellBackFrom: choice.get(p.info.name)!.fellBackFrom }
          : {}),
      })),
      bytesIn: bytesInTotal,
      bytesOut: w.fileSize(head.length),
      elapsedMs: performance.now() - t0,
    };
  } catch (e) {
    await unlink(tmp).catch(() => {});
    throw e;
  } finally {
    pool?.close();
    f.close();
  }
}

/** A --tensor-type pattern as a regular expression (llama.cpp: std::regex, ECMAScript grammar). */
function compilePattern(p: string): RegExp {
  try {
    return new RegExp(p);
  } catch (e) {
    throw new QuantizeError(`--tensor-type: '${p}' is not a valid regular expression (${(e as Error).message})`);
  }
}

type FileHandle = Awaited<ReturnType<typeof open>>;

/** Converts (or copies) one tensor into the output at `pos`, a slab of rows at a time. */
async function writeTensor(
  f: GGUFFile,
  info: GGUFFile['tensors'][number],
  to: GGMLType,
  imatrix: Float32Array | null,
  fh: FileHandle,
  pos: number,
  pool: QuantizePool | undefined,
  signal: AbortSignal | undefined,
): Promise<void> {
  const nPerRow = info.dims[0] ?? 1;
  const nrows = info.nElements / nPerRow;
  const srcRow = rowSize(info.type, nPerRow);
  const dstRow = rowSize(to, nPerRow);
  const slabRows = Math.max(1, Math.min(nrows, Math.floor(SLAB_ELEMENTS / nPerRow)));
  if (to === info.type) {
    const buf = new Uint8Array(slabRows * srcRow);
    for (let r = 0; r < nrows; r += slabRows) {
      const n = Math.min(slabRows, nrows - r) * srcRow;
      const part = buf.subarray(0, n);
      await f.readTensorDataAsync(info, part, r * srcRow);
      await fh.write(part, 0, n, pos + r * srcRow);
    }
    return;
  }
  const src = new SharedArrayBuffer(slabRows * srcRow);
  const dst = new SharedArrayBuffer(slabRows * dstRow);
  const imShared = imatrix && pool ? sharedCopy(imatrix) : null;
  const rowsPerChunk = nPerRow >= MIN_CHUNK ? 1 : Math.ceil(MIN_CHUNK / nPerRow);
  const rowsPerExpert = info.dims[1] ?? 1;
  let scratch: Float32Array | undefined;
  for (let r = 0; r < nrows; r += slabRows) {
    signal?.throwIfAborted();
    const n = Math.min(slabRows, nrows - r);
    const srcBytes = new Uint8Array(src, 0, n * srcRow);
    await f.readTensorDataAsync(info, srcBytes, r * srcRow);
    const dstBytes = new Uint8Array(dst, 0, n * dstRow);
    const task = { srcType: info.type, dstType: to, nPerRow, rowsPerExpert, firstRow: r };
    try {
      if (!pool || n * nPerRow < INLINE_BELOW) {
        scratch ??= new Float32Array(slabRows * nPerRow);
        convertRows({ ...task, imatrix }, srcBytes, dstBytes, 0, n, scratch);
      } else {
        const nChunks = Math.ceil(n / rowsPerChunk);
        const slab: SlabTask = {
          ...task,
          src,
          dst,
          imatrix: imShared,
          ctrl: new SharedArrayBuffer(3 * 4),
          nrows: n,
          rowsPerChunk,
          nChunks,
        };
        await pool.run(slab);
      }
    } catch (e) {
      throw new QuantizeError(
        `tensor ${info.name} (${typeName(info.type)} -> ${typeName(to)}): ${(e as Error).message}`,
      );
    }
    await fh.write(dstBytes, 0, dstBytes.length, pos + r * dstRow);
  }
}

function sharedCopy(x: Float32Array): SharedArrayBuffer {
  const s = new SharedArrayBuffer(x.byteLength);
  new Float32Array(s).set(x);
  return s;
}
