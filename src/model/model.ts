// Loading a model: open the GGUF file, pick its architecture, read the hyper-parameters
// and the vocabulary, check every tensor the architecture needs (present, shape, type),
// place the weights in the buffer type of the device each layer runs on (an
// n_gpu_layers-style split: the last n layers on the first offload device, the rest on
// the host device) and read their bytes straight from the file into those buffers.

import {
  type BufferType,
  backendsReady,
  type Device,
  type Buffer as DeviceBuffer,
  hostDevice,
  modelDevice,
  offloadDevices,
  tensorBuffer,
  tensorHostBytes,
  tensorSet,
} from '../backends/index.js';
import { allocTensors } from '../ggml/alloc.js';
import { newTensor, type Tensor, TensorFlag } from '../ggml/tensor.js';
import { typeName } from '../ggml/types.js';
import { type GGUFFile, openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { Vocab, type VocabOptions } from '../vocab/index.js';
import type { Architecture } from './arch/arch.js';
import { architecture } from './arch/registry.js';
import { DiskRows } from './disk-rows.js';
import { ModelError } from './errors.js';
import { checkRope, type HParams, readHParams } from './hparams.js';
import { TensorList, Weights } from './weights.js';

const log = logger('model');

/** Bytes read at a time into weights that are not in host memory (two such pieces in flight). */
const STAGING_BYTES = 2 << 20;

/** What a device may offer the loader (duck-typed: the CPU device has both). */
interface LoaderHints {
  /** Token embedding tables at least this large stay on disk by default. */
  readonly embdOnDiskMinBytes?: number;
  /** Fault in a freshly allocated weight buffer ahead of the loader, in parallel. */
  prefault?(b: DeviceBuffer): Promise<void>;
}

export interface LoadOptions {
  /** Called with the fraction of weight bytes loaded so far (0..1); return false to cancel. */
  onProgress?: (fraction: number) => unknown;
  /** Cancels loading (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
  /**
   * Repeating layers to run on the first offload device (counted from the last layer, as
   * llama.cpp's n_gpu_layers); more than the layer count also offloads the output.
   * Default: all, when an offload device exists.
   */
  nGpuLayers?: number;
  /**
   * Devices in priority order, the host device last. Default: every GPU, then the fastest
   * CPU device (the reference device with ggml-cpu numerics when no other exists).
   */
  devices?: Device[];
  vocab?: VocabOptions;
  /**
   * Keep the token embedding tables in the file and read the rows each batch needs (they
   * are only ever read by GET_ROWS): token_embd when the output is untied (output.weight
   * present), Gemma 4's per_layer_token_embd. Default: the host device decides (the CPU
   * device: for a table of at least 32 MiB).
   */
  embeddingsOnDisk?: boolean;
}

/** GPUs first (not software ones), then the best host device (an oracle only when there is no other). */
export function defaultDevices(): Device[] {
  return [...offloadDevices(), hostDevice()];
}

function shapeMatches(dims: readonly number[], ne: readonly number[]): boolean {
  const n = Math.max(dims.length, ne.length);
  for (let i = 0; i < n; i++) {
    const want = ne[i] ?? 1;
    if (want !== -1 && (dims[i] ?? 1) !== want) return false;
  }
  return true;
}

function abortError(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('model loading was aborted', 'AbortError');
}

export class Model {
  /** Milliseconds `load` took. */
  loadMs = 0;
  /** `tokenizer.chat_template.rerank`: a reranker's prompt, with {query} and {document}. */
  rerankTemplate: string | undefined;

  private constructor(
    readonly path: string,
    readonly arch: Architecture,
    readonly hp: HParams,
    readonly vocab: Vocab,
    readonly weights: Weights,
    readonly buffers: DeviceBuffer[],
    /** Devices in priority order, the host last. */
    readonly devices: Device[],
    /** The device of each repeating layer (its weights and KV cache). */
    readonly layerDevices: Device[],
    readonly fileSize: number,
    readonly fileType: string,
    readonly name: string,
  ) {}

  static async load(path: string, opts: LoadOptions = {}): Promise<Model> {
    const t0 = performance.now();
    opts.signal?.throwIfAborted();
    if (!opts.devices) await backendsReady(); // the default devices include optional backends (WebGPU)
    const file = openGGUF(path);
    try {
      const model = await Model.fromFile(file, opts);
      model.loadMs = performance.now() - t0;
      return model;
    } finally {
      file.close();
    }
  }

  private static async fromFile(file: GGUFFile, opts: LoadOptions): Promise<Model> {
    const archName = file.architecture;
    const arch = architecture(archName, file.path);
    for (const k of arch.requiredKeys ?? []) {
      const key = `${archName}.${k}`;
      if (!file.has(key))
        throw new ModelError(`${file.path}: missing key '${key}' (llama.cpp's ${archName} loader requires it)`);
    }
    let hp = readHParams(file, archName);
    if (arch.hparams) hp = arch.hparams(hp, file);
    if (arch.ropeMode !== undefined) checkRope(hp, file.path, arch.ropeWholeHead === true);
    if (arch.equalHeadSizes && hp.nEmbdHeadK !== hp.nEmbdHeadV) {
      throw new ModelError(
        `${file.path}: ${archName}.attention.key_length = ${hp.nEmbdHeadK} differs from ${archName}.attention.value_length = ${hp.nEmbdHeadV}; llama.cpp's ${archName} graph needs one head size`,
      );
    }

    // (the vocabulary is built later, while the weights' memory is faulted in, unless the
    // vocabulary size comes from it)
    let vocab = hp.nVocab === 0 ? Vocab.fromGGUF(file, opts.vocab) : undefined;
    if (vocab && hp.nVocab === 0) hp = { ...hp, nVocab: vocab.nTokens };

    // which tensors, checked against the file
    const list = new TensorList((name) => file.tensor(name) !== undefined);
    arch.tensors(hp, list);
    const wanted = new Set<string>();
    const tensors = new Map<string, Tensor>();
    for (const spec of list.specs) {
      if (spec.ifPresent && !file.tensor(spec.ifPresent)) continue;
      if (spec.ifAbsent && file.tensor(spec.ifAbsent)) continue;
      wanted.add(spec.name);
      const info = file.tensor(spec.name);
      if (!info) {
        if (spec.optional) continue;
        const or = spec.ifAbsent ? ` (or '${spec.ifAbsent}' in its place)` : '';
        throw new ModelError(`${file.path}: missing tensor '${spec.name}'${or}`);
      }
      if (!shapeMatches(info.dims, spec.ne)) {
        const want = spec.ne.map((x) => (x < 0 ? '*' : String(x))).join(', ');
        throw new ModelError(
          `${file.path}: tensor '${spec.name}' has shape [${info.dims.join(', ')}], expected [${want}]`,
        );
      }
      if (spec.skip) continue;
      file.assertSupportedType(info);
      const t = newTensor(info.type, info.dims, info.name).setFlag(TensorFlag.WEIGHT);
      tensors.set(info.name, t);
    }
    const unused = file.tensors.filter((t) => !wanted.has(t.name));
    // layers past block_count: the file holds more of the model than its header says
    const extra = unused.find((t) => Number(/^blk\.(\d+)\./.exec(t.name)?.[1] ?? -1) >= hp.nLayer);
    if (extra) {
      throw new ModelError(
        `${file.path}: ${archName}.block_count = ${hp.nLayer}, but the file has tensor '${extra.name}' of a later layer`,
      );
    }
    // llama.cpp refuses such a file ("wrong number of tensors"): a tensor it would not read
    // is one whose part in the model this architecture does not know
    if (unused.length > 0) {
      const names = unused.slice(0, 4).map((t) => `'${t.name}'`);
      if (unused.length > 4) names.push(`and ${unused.length - 4} more`);
      throw new ModelError(
        `${file.path}: ${unused.length} tensor(s) not part of a ${archName} model: ${names.join(', ')} (llama.cpp refuses the file too: wrong number of tensors)`,
      );
    }

    // placement: input on the host, the last nGpuLayers layers (and the output past
    // nLayer) on the first offload device
    const devices = (opts.devices ?? defaultDevices()).map(modelDevice);
    if (devices.length === 0) throw new ModelError('no compute device');
    const host = devices[devices.length - 1];
    const offload = devices.length > 1 ? devices[0] : undefined;
    const nGpu = offload ? Math.max(0, opts.nGpuLayers ?? hp.nLayer + 1) : 0;
    const layerDevices: Device[] = [];
    for (let il = 0; il < hp.nLayer; il++) layerDevices.push(offload && il >= hp.nLayer - nGpu ? offload : host);
    const outputDevice = offload && nGpu > hp.nLayer ? offload : host;
    const deviceOf = (name: string): Device => {
      const m = /^blk\.(\d+)\./.exec(name);
      if (m) return layerDevices[Number(m[1])] ?? host;
      if (name.startsWith('output')) return outputDevice;
      return host;
    };
    // token embedding tables may stay in the file (read by rows) where GET_ROWS is their
    // one reader: token_embd with an untied output, Gemma 4's per-layer table always
    const onDisk = new Map<Tensor, DiskRows>();
    const tables = [
      tensors.has('output.weight') ? tensors.get('token_embd.weight') : undefined,
      tensors.get('per_layer_token_embd.weight'),
    ];
    for (const embd of tables) {
      if (!embd) continue;
      const minBytes = (deviceOf(embd.name) as LoaderHints).embdOnDiskMinBytes;
      const want = opts.embeddingsOnDisk ?? (minBytes !== undefined && embd.nbytes >= minBytes);
      const rows = want ? DiskRows.open(file, file.tensor(embd.name)!) : null;
      if (rows) onDisk.set(embd, rows);
    }
    const byDevice = new Map<Device, Tensor[]>();
    for (const t of tensors.values()) {
      if (onDisk.has(t)) continue;
      const d = deviceOf(t.name);
      if (!byDevice.has(d)) byDevice.set(d, []);
      byDevice.get(d)!.push(t);
    }
    const buffers: DeviceBuffer[] = [];
    const prefaults: Promise<void>[] = [];
    try {
      for (const [d, ts] of byDevice) {
        const bs = allocTensors(ts, d.bufferType(), 'weights');
        buffers.push(...bs);
        const hints = d as LoaderHints;
        if (hints.prefault) for (const b of bs) prefaults.push(hints.prefault(b));
      }
      // the vocabulary is built while the device faults in the weights' memory
      vocab ??= Vocab.fromGGUF(file, opts.vocab);
      await readWeights(
        file,
        [...tensors.values()].filter((t) => !onDisk.has(t)),
        opts,
      );
      // (about done by now: the workers fault pages in from the end as the loader fills from the front)
      for (const r of await Promise.allSettled(prefaults)) if (r.status === 'rejected') throw r.reason;

      const model = new Model(
        file.path,
        arch,
        hp,
        vocab,
        new Weights(tensors, onDisk),
        buffers,
        devices,
        layerDevices,
        file.fileSize,
        fileTypeName(file, tensors),
        file.getString('general.name', archName),
      );
      model.rerankTemplate = file.getString('tokenizer.chat_template.rerank', null) ?? undefined;
      log.info(
        `loaded ${file.path}: ${archName}, ${hp.nLayer} layers, ${(model.nParams / 1e6).toFixed(2)}M parameters on ${[...byDevice.keys()].map((d) => d.name).join(', ')}${onDisk.size > 0 ? ` (${[...onDisk.keys()].map((t) => t.name).join(', ')} read from the file by rows)` : ''}`,
      );
      return model;
    } catch (e) {
      await Promise.allSettled(prefaults);
      for (const b of buffers) b.free();
      for (const r of onDisk.values()) r.close();
      throw e;
    }
  }

  /**
   * The buffer type weight `t` lives in (a table left on disk: the host device's), where
   * tensors that work with it, such as LoRA factors, are placed.
   */
  bufferTypeOf(t: Tensor): BufferType {
    return tensorBuffer(t)?.bufferType ?? this.devices[this.devices.length - 1].bufferType();
  }

  /** Parameters (elements of all weights). */
  get nParams(): number {
    let n = 0;
    for (const t of this.weights.all()) n += t.nelements;
    return n;
  }

  /** Bytes of all weights. */
  get nBytes(): number {
    let n = 0;
    for (const t of this.weights.all()) n += t.nbytes;
    return n;
  }

  /** "qwen2 630M Q4_0", as llama-bench describes a model. */
  describe(): string {
    const p = this.nParams;
    const size =
      p >= 1e9 ? `${(p / 1e9).toFixed(1)}B` : p >= 1e6 ? `${Math.round(p / 1e6)}M` : `${Math.round(p / 1e3)}K`;
    return `${this.arch.name} ${size} ${this.fileType}`;
  }

  free(): void {
    for (const b of this.buffers) b.free();
    this.buffers.length = 0;
    for (const t of this.weights.diskTensors()) this.weights.rowsOnDisk(t)?.close();
  }
}

/**
 * Reads the weights' bytes: straight into host buffers; into the others through two
 * bounded staging pieces of whole rows (so no tensor is ever held twice whole), reading
 * the next piece while the previous one is uploaded (repacked).
 */
export async function readWeights(file: GGUFFile, tensors: Tensor[], opts: LoadOptions): Promise<void> {
  const total = tensors.reduce((s, t) => s + t.nbytes, 0);
  let done = 0;
  const staging: Uint8Array[] = [];
  let slot = 0;
  // the piece read last: uploaded once the next read is under way
  let pending: { read: Promise<unknown>; upload?: () => void; last?: Tensor } | null = null;
  const finish = async (): Promise<void> => {
    const p = pending;
    pending = null;
    if (!p) return;
    await p.read;
    p.upload?.();
    if (p.last) {
      done += p.last.nbytes;
      if (opts.onProgress?.(total > 0 ? done / total : 1) === false) {
        throw new DOMException('model loading was cancelled by the progress callback', 'AbortError');
      }
    }
  };
  const issue = async (next: NonNullable<typeof pending>): Promise<void> => {
    // the read is started before the previous piece is uploaded (errors surface in finish)
    next.read.catch(() => {});
    try {
      await finish();
    } catch (e) {
      await next.read.catch(() => {});
      throw e;
    }
    pending = next;
  };
  try {
    for (const t of tensors) {
      if (opts.signal?.aborted) throw abortError(opts.signal);
      const info = file.tensor(t.name)!;
      const host = tensorHostBytes(t);
      if (host) {
        await issue({ read: file.readTensorDataAsync(info, host.subarray(0, info.nBytes)), last: t });
        continue;
      }
      const chunk = Math.max(1, Math.floor(STAGING_BYTES / t.rowBytes)) * t.rowBytes;
      for (let off = 0; off < info.nBytes; off += chunk) {
        const len = Math.min(chunk, info.nBytes - off);
        if (!staging[slot] || staging[slot].length < len) staging[slot] = new Uint8Array(Math.max(len, STAGING_BYTES));
        const part = staging[slot].subarray(0, len);
        slot ^= 1;
        const at = off;
        await issue({
          read: file.readTensorDataAsync(info, part, at),
          upload: () => tensorSet(t, part, at),
          last: at + len >= info.nBytes ? t : undefined,
        });
      }
    }
    await finish();
  } catch (e) {
    // let a read still in flight land before the caller frees its destination
    await (pending as { read: Promise<unknown> } | null)?.read.catch(() => {});
    throw e;
  }
  if (opts.signal?.aborted) throw abortError(opts.signal);
}

/** The most common weight type among 2-D tensors (llama.cpp prints general.file_type). */
function fileTypeName(file: GGUFFile, tensors: ReadonlyMap<string, Tensor>): string {
  const FILE_TYPES: Record<number, string> = {
    0: 'F32',
    1: 'F16',
    2: 'Q4_0',
    3: 'Q4_1',
    7: 'Q8_0',
    8: 'Q5_0',
    9: 'Q5_1',
    10: 'Q2_K',
    11: 'Q3_K_S',
    12: 'Q3_K_M',
    13: 'Q3_K_L',
    14: 'Q4_K_S',
    15: 'Q4_K_M',
    16: 'Q5_K_S',
    17: 'Q5_K_M',
    18: 'Q6_K',
    25: 'IQ4_NL',
    30: 'IQ4_XS',
    32: 'BF16',
    38: 'MXFP4_MOE',
  };
  const ft = file.getNumber('general.file_type', -1);
  if (FILE_TYPES[ft]) return FILE_TYPES[ft];
  const count = new Map<number, number>();
  for (const t of tensors.values()) if (t.ne[1] > 1) count.set(t.type, (count.get(t.type) ?? 0) + t.nelements);
  let best = -1;
  let bestN = -1;
  for (const [ty, n] of count) if (n > bestN) [best, bestN] = [ty, n];
  return best >= 0 ? typeName(best) : 'unknown';
}
