// Tensor descriptors, as ggml has them: a type, four extents `ne` (ne[0] varies fastest)
// and four byte strides `nb`, an op with its sources and parameters, and where the bytes
// live (a backend buffer plus a byte offset, or the tensor that this one is a view of).
// A descriptor holds no data itself: building a graph allocates nothing.

import { traitsOf } from './types.js';

/**
 * The memory a tensor is placed in (ggml's opaque `ggml_backend_buffer`): the backend
 * layer's buffers are these. ggml only keeps it, with the tensor's byte offset in it.
 */
export interface TensorBuffer {
  /** Bytes in the buffer. */
  readonly size: number;
}

export type Shape4 = [number, number, number, number];

/** Graph operations (ggml's `GGML_OP_*` that the supported architectures need). */
export enum Op {
  NONE = 'NONE',
  // descriptor-only: no computation, the result aliases its source's memory
  VIEW = 'VIEW',
  RESHAPE = 'RESHAPE',
  PERMUTE = 'PERMUTE',
  TRANSPOSE = 'TRANSPOSE',
  // computations
  GET_ROWS = 'GET_ROWS',
  SET_ROWS = 'SET_ROWS',
  MUL_MAT = 'MUL_MAT',
  ADD = 'ADD',
  MUL = 'MUL',
  SCALE = 'SCALE',
  RMS_NORM = 'RMS_NORM',
  NORM = 'NORM',
  ROPE = 'ROPE',
  SOFT_MAX = 'SOFT_MAX',
  SILU = 'SILU',
  GELU = 'GELU',
  TANH = 'TANH',
  CPY = 'CPY',
  CONT = 'CONT',
  FLASH_ATTN_EXT = 'FLASH_ATTN_EXT',
  // recurrent layers (Mamba-2, Gated DeltaNet, short convolutions) and their activations
  SSM_CONV = 'SSM_CONV',
  SSM_SCAN = 'SSM_SCAN',
  GATED_DELTA_NET = 'GATED_DELTA_NET',
  L2_NORM = 'L2_NORM',
  SOFTPLUS = 'SOFTPLUS',
  RELU = 'RELU',
  SQR = 'SQR',
  // mixtures of experts: routing and the per-token expert products
  MUL_MAT_ID = 'MUL_MAT_ID',
  ADD_ID = 'ADD_ID',
  ARGSORT = 'ARGSORT',
  SUM_ROWS = 'SUM_ROWS',
  DIV = 'DIV',
  SIGMOID = 'SIGMOID',
  CLAMP = 'CLAMP',
  SWIGLU_OAI = 'SWIGLU_OAI',
  CONCAT = 'CONCAT',
}

/** Ops whose result shares its source's memory and computes nothing. */
export function isViewOp(op: Op): boolean {
  return op === Op.VIEW || op === Op.RESHAPE || op === Op.PERMUTE || op === Op.TRANSPOSE;
}

/** Tensor roles, as ggml's `GGML_TENSOR_FLAG_*`. */
export const TensorFlag = {
  /** Set by the caller before each compute (token ids, positions, masks). */
  INPUT: 1,
  /** Read after compute: the allocator never reuses its memory. */
  OUTPUT: 2,
  /** Model weights. */
  WEIGHT: 4,
} as const;

/** Operation parameters (ggml keeps these in `op_params`); numbers only. */
export type OpParams = Readonly<Record<string, number>>;

let nextId = 1;

export class Tensor {
  readonly id = nextId++;
  name = '';
  flags = 0;
  op: Op = Op.NONE;
  src: Tensor[] = [];
  params: OpParams = {};
  /** Root tensor whose memory this view uses (never itself a view), or null. */
  viewSrc: Tensor | null = null;
  /** Byte offset of this view inside `viewSrc`. */
  viewOffset = 0;
  private ownBuffer: TensorBuffer | null = null;
  private ownOffset = 0;

  constructor(
    readonly type: number,
    readonly ne: Shape4,
    readonly nb: Shape4,
  ) {}

  /** The buffer holding the bytes (a view's is its source's); null until allocated. */
  get buffer(): TensorBuffer | null {
    return this.viewSrc ? this.viewSrc.buffer : this.ownBuffer;
  }

  /** Byte offset of element [0,0,0,0] inside `buffer`. */
  get offset(): number {
    return this.viewSrc ? this.viewSrc.offset + this.viewOffset : this.ownOffset;
  }

  /** Place a non-view tensor at `offset` in `buffer` (allocators call this). */
  place(buffer: TensorBuffer | null, offset: number): void {
    if (this.viewSrc) throw new Error(`tensor '${this.name}' is a view: it has no memory of its own`);
    this.ownBuffer = buffer;
    this.ownOffset = offset;
  }

  setName(name: string): this {
    this.name = name;
    return this;
  }

  setFlag(flag: number): this {
    this.flags |= flag;
    return this;
  }

  hasFlag(flag: number): boolean {
    return (this.flags & flag) !== 0;
  }

  get nelements(): number {
    return this.ne[0] * this.ne[1] * this.ne[2] * this.ne[3];
  }

  get nrows(): number {
    return this.ne[1] * this.ne[2] * this.ne[3];
  }

  /** Bytes spanned by the tensor in memory, strides included (ggml_nbytes). */
  get nbytes(): number {
    return tensorSpan(this.type, this.ne, this.nb);
  }

  /** Bytes of one row of ne[0] elements. */
  get rowBytes(): number {
    const tr = traitsOf(this.type);
    return (this.ne[0] / tr.blockSize) * tr.typeSize;
  }

  isContiguous(): boolean {
    return isContiguousLayout(this.type, this.ne, this.nb);
  }

  /** Rows are contiguous inside (nb[0] is the element size) even if rows are strided. */
  hasContiguousRows(): boolean {
    const tr = traitsOf(this.type);
    return this.nb[0] === tr.typeSize;
  }

  isView(): boolean {
    return this.viewSrc !== null;
  }

  toString(): string {
    return `${this.name || `#${this.id}`} ${traitsOf(this.type).name} [${this.ne.join(', ')}]`;
  }
}

/** Strides of a contiguous tensor of the given type and extents. */
export function contiguousStrides(type: number, ne: Shape4): Shape4 {
  const tr = traitsOf(type);
  if (ne[0] % tr.blockSize !== 0) {
    throw new RangeError(`ne[0] = ${ne[0]} is not a multiple of ${tr.name}'s block size ${tr.blockSize}`);
  }
  const nb0 = tr.typeSize;
  const nb1 = (ne[0] / tr.blockSize) * tr.typeSize;
  const nb2 = nb1 * ne[1];
  const nb3 = nb2 * ne[2];
  return [nb0, nb1, nb2, nb3];
}

export function tensorSpan(type: number, ne: Shape4, nb: Shape4): number {
  if (ne[0] === 0 || ne[1] === 0 || ne[2] === 0 || ne[3] === 0) return 0;
  const tr = traitsOf(type);
  if (tr.blockSize === 1) {
    let bytes = tr.typeSize;
    for (let i = 0; i < 4; i++) bytes += (ne[i] - 1) * nb[i];
    return bytes;
  }
  let bytes = (ne[0] / tr.blockSize) * nb[0];
  for (let i = 1; i < 4; i++) bytes += (ne[i] - 1) * nb[i];
  return bytes;
}

export function isContiguousLayout(type: number, ne: Shape4, nb: Shape4): boolean {
  const want = contiguousStrides(type, ne);
  for (let i = 0; i < 4; i++) {
    if (ne[i] !== 1 && nb[i] !== want[i]) return false;
  }
  return true;
}

function shape4(ne: readonly number[]): Shape4 {
  if (ne.length < 1 || ne.length > 4) throw new RangeError(`a tensor has 1 to 4 dimensions, got ${ne.length}`);
  for (const n of ne) {
    if (!Number.isInteger(n) || n < 0) throw new RangeError(`bad extent ${n}`);
  }
  return [ne[0], ne[1] ?? 1, ne[2] ?? 1, ne[3] ?? 1];
}

/** A new contiguous tensor (ggml_new_tensor); unallocated until an allocator places it. */
export function newTensor(type: number, ne: readonly number[], name = ''): Tensor {
  const n = shape4(ne);
  const t = new Tensor(type, n, contiguousStrides(type, n));
  t.name = name;
  return t;
}

/** A contiguous tensor with the same type and extents (ggml_dup_tensor, no op). */
export function dupTensor(a: Tensor, name = ''): Tensor {
  return newTensor(a.type, a.ne, name);
}

function makeView(a: Tensor, op: Op, ne: Shape4, nb: Shape4, offset: number, suffix: string): Tensor {
  const t = new Tensor(a.type, ne, nb);
  t.op = op;
  t.src = [a];
  t.viewSrc = a.viewSrc ?? a;
  t.viewOffset = (a.viewSrc ? a.viewOffset : 0) + offset;
  t.name = a.name ? `${a.name} (${suffix})` : '';
  const root = t.viewSrc;
  if (t.viewOffset + tensorSpan(t.type, ne, nb) > tensorSpan(root.type, root.ne, root.nb)) {
    throw new RangeError(`view of '${root.name}' runs past its end`);
  }
  return t;
}

/**
 * A view with explicit extents, strides (nb[1..3]) and byte offset (ggml_view_4d); nb[0]
 * stays the element size. Missing dimensions default to 1.
 */
export function view(a: Tensor, ne: readonly number[], nb: readonly number[], offset: number): Tensor {
  const n = shape4(ne);
  const tr = traitsOf(a.type);
  const strides: Shape4 = [tr.typeSize, 0, 0, 0];
  const rowBytes = (n[0] / tr.blockSize) * tr.typeSize;
  strides[1] = nb[0] ?? rowBytes;
  strides[2] = nb[1] ?? strides[1] * n[1];
  strides[3] = nb[2] ?? strides[2] * n[2];
  return makeView(a, Op.VIEW, n, strides, offset, 'view');
}

/** Same bytes, new extents (ggml_reshape_*): `a` must be contiguous and the count equal. */
export function reshape(a: Tensor, ne: readonly number[]): Tensor {
  const n = shape4(ne);
  if (!a.isContiguous()) throw new Error(`reshape of non-contiguous tensor ${a}`);
  if (n[0] * n[1] * n[2] * n[3] !== a.nelements) {
    throw new RangeError(`reshape ${a} to [${n.join(', ')}]: element counts differ`);
  }
  return makeView(a, Op.RESHAPE, n, contiguousStrides(a.type, n), 0, 'reshaped');
}

/**
 * Permute dimensions (ggml_permute): source dimension i moves to position axes[i].
 * ggml's convention, kept so that model code reads the same as llama.cpp's.
 */
export function permute(a: Tensor, axes: readonly [number, number, number, number]): Tensor {
  const seen = new Set(axes);
  if (seen.size !== 4 || axes.some((x) => x < 0 || x > 3)) throw new RangeError(`bad permutation ${axes}`);
  const ne: Shape4 = [0, 0, 0, 0];
  const nb: Shape4 = [0, 0, 0, 0];
  for (let i = 0; i < 4; i++) {
    ne[axes[i]] = a.ne[i];
    nb[axes[i]] = a.nb[i];
  }
  const t = makeView(a, Op.PERMUTE, ne, nb, 0, 'permuted');
  t.params = { ax0: axes[0], ax1: axes[1], ax2: axes[2], ax3: axes[3] };
  return t;
}

/** Swap dimensions 0 and 1 (ggml_transpose). */
export function transpose(a: Tensor): Tensor {
  const ne: Shape4 = [a.ne[1], a.ne[0], a.ne[2], a.ne[3]];
  const nb: Shape4 = [a.nb[1], a.nb[0], a.nb[2], a.nb[3]];
  return makeView(a, Op.TRANSPOSE, ne, nb, 0, 'transposed');
}

/** Whether `b` can be broadcast onto `a` (each of a's extents a multiple of b's). */
export function canRepeat(b: Tensor, a: Tensor): boolean {
  for (let i = 0; i < 4; i++) {
    if (b.ne[i] === 0 || a.ne[i] % b.ne[i] !== 0) return false;
  }
  return true;
}

export function sameShape(a: Tensor, b: Tensor): boolean {
  return a.ne[0] === b.ne[0] && a.ne[1] === b.ne[1] && a.ne[2] === b.ne[2] && a.ne[3] === b.ne[3];
}

export function sameLayout(a: Tensor, b: Tensor): boolean {
  return a.type === b.type && sameShape(a, b) && a.nb.every((x, i) => x === b.nb[i]);
}
