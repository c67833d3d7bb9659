// A model's weights by GGUF tensor name, and the list of tensors an architecture expects
// (name, shape, optional), which the loader checks against the file.

import type { Tensor } from '../ggml/tensor.js';
import type { DiskRows } from './disk-rows.js';

/** One tensor an architecture reads. An extent of -1 accepts any size. */
export interface TensorSpec {
  name: string;
  ne: number[];
  optional?: boolean;
  /**
   * The tensor belongs to the model only when the file has (`ifPresent`) or lacks
   * (`ifAbsent`) this other tensor: llama.cpp's either-or layouts (a fused attn_qkv or
   * separate attn_q/k/v), where a tensor of the other layout is one the model does not use.
   */
  ifPresent?: string;
  ifAbsent?: string;
  /**
   * Part of the model but never read (llama.cpp's TENSOR_SKIP, e.g. multi-token-prediction
   * layers): accepted and shape-checked when present, not loaded.
   */
  skip?: boolean;
}

/** Extra conditions of a layer tensor (see TensorSpec). */
export interface LayerOpts {
  optional?: boolean;
  ifPresent?: string;
  ifAbsent?: string;
  skip?: boolean;
}

/** Collects TensorSpecs in a readable way: `t.need('output_norm.weight', [nEmbd])`. */
export class TensorList {
  readonly specs: TensorSpec[] = [];

  /**
   * `present`: whether the file holds a tensor, for choices llama.cpp makes by what it
   * finds (a fused attn_qkv or separate q/k/v).
   */
  constructor(private readonly present: (name: string) => boolean = () => false) {}

  /** Whether the file holds tensor `name`. */
  has(name: string): boolean {
    return this.present(name);
  }

  need(name: string, ne: number[]): this {
    this.specs.push({ name, ne });
    return this;
  }

  opt(name: string, ne: number[]): this {
    this.specs.push({ name, ne, optional: true });
    return this;
  }

  /** Per-layer tensors: `blk.{il}.{name}` (conditions name other tensors of the same layer). */
  layer(il: number, name: string, ne: number[], opts: boolean | LayerOpts = false): this {
    const o = typeof opts === 'boolean' ? { optional: opts } : opts;
    const spec: TensorSpec = { name: `blk.${il}.${name}`, ne, optional: o.optional === true };
    if (o.ifPresent) spec.ifPresent = `blk.${il}.${o.ifPresent}`;
    if (o.ifAbsent) spec.ifAbsent = `blk.${il}.${o.ifAbsent}`;
    if (o.skip) spec.skip = true;
    this.specs.push(spec);
    return this;
  }

  /**
   * A layer's q/k/v projections as llama.cpp's create_tensor_qkv takes them: one fused
   * attn_qkv (rows q, then k, then v; optional bias) or, without it, attn_q/k/v with
   * optional biases.
   */
  qkv(il: number, nEmbd: number, q: number, k: number, v: number): this {
    const fused = 'attn_qkv.weight';
    this.layer(il, fused, [nEmbd, q + k + v], true);
    this.layer(il, 'attn_qkv.bias', [q + k + v], { optional: true, ifPresent: fused });
    for (const [p, n] of [
      ['q', q],
      ['k', k],
      ['v', v],
    ] as const) {
      this.layer(il, `attn_${p}.weight`, [nEmbd, n], { ifAbsent: fused });
      this.layer(il, `attn_${p}.bias`, [n], { optional: true, ifAbsent: fused });
    }
    return this;
  }

  /**
   * Layer tensors accepted and left unloaded (TensorSpec.skip): calls `fill` with a list
   * whose entries all become skipped.
   */
  skipped(fill: (t: TensorList) => void): this {
    const inner = new TensorList(this.present);
    fill(inner);
    for (const s of inner.specs) this.specs.push({ ...s, skip: true });
    return this;
  }
}

export class Weights {
  constructor(
    private readonly byName: ReadonlyMap<string, Tensor>,
    /** Tensors left in the file (no buffer): their rows are read on demand (GET_ROWS only). */
    private readonly onDisk: ReadonlyMap<Tensor, DiskRows> = new Map(),
  ) {}

  /** Where `t`'s rows are read from when it was left on disk, else undefined. */
  rowsOnDisk(t: Tensor): DiskRows | undefined {
    return this.onDisk.get(t);
  }

  /** Tensors left on disk. */
  diskTensors(): IterableIterator<Tensor> {
    return this.onDisk.keys();
  }

  /** A tensor the architecture requires (the loader has checked it exists). */
  get(name: string): Tensor {
    const t = this.byName.get(name);
    if (!t) throw new Error(`weights: no tensor '${name}'`);
    return t;
  }

  /** An optional tensor, or undefined. */
  opt(name: string): Tensor | undefined {
    return this.byName.get(name);
  }

  /** Layer tensor `blk.{il}.{name}`. */
  layer(il: number, name: string): Tensor {
    return this.get(`blk.${il}.${name}`);
  }

  layerOpt(il: number, name: string): Tensor | undefined {
    return this.opt(`blk.${il}.${name}`);
  }

  all(): IterableIterator<Tensor> {
    return this.byName.values();
  }

  get size(): number {
    return this.byName.size;
  }
}
