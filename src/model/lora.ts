// LoRA adapters (llama.cpp's llama_adapter_lora): a GGUF file with `general.type` =
// adapter, `adapter.type` = lora, `adapter.lora.alpha`, and for each adapted weight W of
// the base model a pair `W.lora_a` [n_in, r] and `W.lora_b` [r, n_out]. An adapter is
// loaded once per model (its tensors live beside the weights they adapt, on the same
// device) and never merged into them: each context chooses which adapters apply, at which
// scale, and the graph computes W·x + s·B·(A·x) for every adapted product (graph.ts), with
// s = scale · alpha / r, or the scale alone when alpha is 0. The token embedding table's
// pair is stored the other way round (A [r, n_vocab] read by rows, B [r, n_embd]).

import { type BufferType, type Buffer as DeviceBuffer, tensorSet } from '../backends/index.js';
import { allocTensors } from '../ggml/alloc.js';
import { newTensor, type Tensor, TensorFlag } from '../ggml/tensor.js';
import { typeName } from '../ggml/types.js';
import { type GGUFFile, type GGUFTensorInfo, openGGUF } from '../gguf/index.js';
import { logger } from '../log.js';
import { ModelError } from './errors.js';

const log = logger('lora');

/** What an adapter needs of the model it adapts (Model has it; no import of model.ts). */
export interface AdaptableModel {
  readonly path: string;
  readonly arch: { readonly name: string };
  readonly weights: { opt(name: string): Tensor | undefined };
  /** Where tensors that work with weight `t` go. */
  bufferTypeOf(t: Tensor): BufferType;
}

/** One adapted weight: the pair of low-rank factors. */
export interface LoraWeight {
  readonly a: Tensor;
  readonly b: Tensor;
  /** r: the inner dimension of B·A. */
  readonly rank: number;
}

/** An adapter applied by a context, at a scale (llama.cpp's `scale`, llama.node's `scaled`). */
export interface ActiveLora {
  readonly adapter: LoraAdapter;
  readonly scale: number;
}

const SUFFIX_A = '.lora_a';
const SUFFIX_B = '.lora_b';

export class LoraAdapter {
  private static nextId = 1;
  /** Distinguishes adapters in graph cache keys. */
  readonly id = LoraAdapter.nextId++;
  private freed = false;

  private constructor(
    readonly path: string,
    readonly model: AdaptableModel,
    /** adapter.lora.alpha (0: the user's scale is used as is). */
    readonly alpha: number,
    /** Adapted base weight name → its factors. */
    readonly weights: ReadonlyMap<string, LoraWeight>,
    private readonly buffers: DeviceBuffer[],
    /** The file's scalar metadata as text (llama_adapter_meta_*). */
    readonly meta: ReadonlyMap<string, string>,
  ) {}

  /**
   * Reads the adapter at `path` for `model`: checks it is a LoRA adapter of the model's
   * architecture whose every pair fits a weight of the model, and loads its tensors onto
   * the devices of the weights they adapt. Throws ModelError naming file and problem.
   */
  static async load(model: AdaptableModel, path: string, opts: { signal?: AbortSignal } = {}): Promise<LoraAdapter> {
    opts.signal?.throwIfAborted();
    const file = openGGUF(path);
    try {
      return await LoraAdapter.fromFile(model, file, opts.signal);
    } finally {
      file.close();
    }
  }

  private static async fromFile(model: AdaptableModel, file: GGUFFile, signal?: AbortSignal): Promise<LoraAdapter> {
    const where = file.path;
    const generalType = file.getString('general.type', '');
    if (generalType !== 'adapter') {
      throw new ModelError(`${where}: general.type is '${generalType}', expected 'adapter' (not a LoRA adapter file)`);
    }
    const arch = file.getString('general.architecture', '');
    if (arch !== model.arch.name) {
      throw new ModelError(
        `${where}: the adapter is for architecture '${arch}', but the model ${model.path} is '${model.arch.name}'`,
      );
    }
    const adapterType = file.getString('adapter.type', '');
    if (adapterType !== 'lora') {
      throw new ModelError(`${where}: adapter.type is '${adapterType}', expected 'lora'`);
    }
    const alpha = file.getNumber('adapter.lora.alpha', 0);
    if (!Number.isFinite(alpha)) throw new ModelError(`${where}: adapter.lora.alpha = ${alpha} is not a finite number`);

    // pair the factors by the weight they adapt
    const pairs = new Map<string, { a?: GGUFTensorInfo; b?: GGUFTensorInfo }>();
    for (const t of file.tensors) {
      const isA = t.name.endsWith(SUFFIX_A);
      if (!isA && !t.name.endsWith(SUFFIX_B)) {
        // norm vectors are skipped, as llama.cpp does (most adapters work without them)
        if (t.name.endsWith('_norm.weight')) continue;
        throw new ModelError(`${where}: tensor '${t.name}' is neither a .lora_a nor a .lora_b factor`);
      }
      const base = t.name.slice(0, -SUFFIX_A.length);
      const p = pairs.get(base) ?? {};
      p[isA ? 'a' : 'b'] = t;
      pairs.set(base, p);
    }
    if (pairs.size === 0) throw new ModelError(`${where}: the adapter has no .lora_a/.lora_b tensors`);

    const weights = new Map<string, LoraWeight>();
    const byBuft = new Map<BufferType, Tensor[]>();
    const infos = new Map<Tensor, GGUFTensorInfo>();
    for (const [name, p] of pairs) {
      if (!p.a || !p.b) {
        throw new ModelError(
          `${where}: '${name}' has ${p.a ? 'lora_a' : 'lora_b'} but no ${p.a ? 'lora_b' : 'lora_a'}`,
        );
      }
      const base = model.weights.opt(name);
      if (!base) {
        throw new ModelError(
          `${where}: the adapter changes '${name}', which ${model.path} does not have (another base model?)`,
        );
      }
      if (base.ne.slice(2).some((d) => d !== 1)) {
        const dims = [...base.ne];
        while (dims.length > 3 && dims.at(-1) === 1) dims.pop();
        // expert stacks (MUL_MAT_ID) and per-head matrices: their products take no adapter
        // here (llama.cpp adapts expert stacks with 3-D factors; not supported yet)
        throw new ModelError(
          `${where}: the adapter changes '${name}' [${dims.join(', ')}], a stack of ${base.ne.slice(2).reduce((x, y) => x * y, 1)} matrices (experts or heads): adapters of such tensors are not supported`,
        );
      }
      for (const f of [p.a, p.b]) {
        if (f.dims.length > 2 && f.dims.slice(2).some((d) => d !== 1)) {
          throw new ModelError(`${where}: '${f.name}' has shape [${f.dims.join(', ')}], expected a matrix`);
        }
        file.assertSupportedType(f);
      }
      const [a0, a1 = 1] = p.a.dims;
      const [b0, b1 = 1] = p.b.dims;
      const [w0, w1 = 1] = base.ne;
      const shapes = `'${name}' [${w0}, ${w1}] with lora_a [${a0}, ${a1}] and lora_b [${b0}, ${b1}]`;
      let rank: number;
      if (name === 'token_embd.weight') {
        // read by rows: A [r, n_vocab], B [r, n_embd]
        if (a1 !== w1 || b1 !== w0 || a0 !== b0) {
          throw new ModelError(`${where}: shapes do not fit: ${shapes} (expected A [r, ${w1}], B [r, ${w0}])`);
        }
        rank = a0;
      } else {
        if (a0 !== w0 || b1 !== w1 || a1 !== b0) {
          throw new ModelError(`${where}: shapes do not fit: ${shapes} (expected A [${w0}, r], B [r, ${w1}])`);
        }
        rank = a1;
      }
      if (rank < 1) throw new ModelError(`${where}: '${name}' has rank 0`);
      const a = newTensor(p.a.type, [a0, a1], p.a.name).setFlag(TensorFlag.WEIGHT);
      const b = newTensor(p.b.type, [b0, b1], p.b.name).setFlag(TensorFlag.WEIGHT);
      infos.set(a, p.a);
      infos.set(b, p.b);
      weights.set(name, { a, b, rank });
      // beside the weight it adapts (a table left on disk: on the host device)
      const buft = model.bufferTypeOf(base);
      if (!byBuft.has(buft)) byBuft.set(buft, []);
      byBuft.get(buft)!.push(a, b);
    }

    const buffers: DeviceBuffer[] = [];
    try {
      for (const [buft, ts] of byBuft) buffers.push(...allocTensors(ts, buft, 'weights'));
      for (const [t, info] of infos) {
        if (signal?.aborted) throw signal.reason ?? new DOMException('adapter loading was aborted', 'AbortError');
        tensorSet(t, await file.readTensorDataAsync(info));
      }
    } catch (e) {
      for (const b of buffers) b.free();
      throw e;
    }
    const meta = new Map<string, string>();
    for (const [key, kv] of file.metadata) {
      const v = kv.value;
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') {
        meta.set(key, String(v));
      }
    }
    const types = [...new Set([...infos.values()].map((i) => typeName(i.type)))].join('/');
    log.info(`loaded LoRA adapter ${where}: ${weights.size} weights, alpha ${alpha}, ${types}`);
    return new LoraAdapter(where, model, alpha, weights, buffers, meta);
  }

  /** The factors adapting weight `name`, if this adapter changes it. */
  weightFor(name: string): LoraWeight | undefined {
    return this.freed ? undefined : this.weights.get(name);
  }

  /** The factor s of s·B·(A·x) for a user scale (llama.cpp's get_scale). */
  scaleOf(w: LoraWeight, userScale: number): number {
    return this.alpha !== 0 ? (userScale * this.alpha) / w.rank : userScale;
  }

  get released(): boolean {
    return this.freed;
  }

  /** Frees the adapter's tensors; contexts must no longer apply it. */
  free(): void {
    if (this.freed) return;
    this.freed = true;
    for (const b of this.buffers) b.free();
    this.buffers.length = 0;
  }
}

/** A key naming a set of active adapters and scales (graph caches compare it). */
export function loraKey(loras: readonly ActiveLora[]): string {
  return loras.map((l) => `${l.adapter.id}@${l.scale}`).join(',');
}
