// Turning a graph into a job: one node record per computed node (descriptors of the node
// and its sources, parameters, scratch addresses) written into the work region of the
// arena it runs in, and the steps (kernel calls, with barriers between them) the
// workers execute. A node whose tensors live in several arenas runs in one of them (the
// weights' for MUL_MAT and GET_ROWS, else the result's); the others are copied into
// that arena's work region first (and the result copied back).

import { RopeMode } from '../../ggml/ops.js';
import { isViewOp, Op, type Tensor } from '../../ggml/tensor.js';
import { GGMLType, traitsOf } from '../../ggml/types.js';
import { FA_SPLIT_KEYS, flashAttnSplit, flashAttnTiled } from '../ggml-cpu.js';
import type { Arena } from './arena.js';
import { isArenaBacked, type TensorLayout } from './buffer.js';
import { K4Layout, LAYOUT_K4 } from './layout-k.js';
import { F_NO_BARRIER, F_SINGLE, K_COPY, type KernelName, kernelId, STEP_WORDS } from './protocol.js';

/** Bytes of one node record. */
export const RECORD_BYTES = 704;

/** Descriptor slots per record: the node and up to seven sources (assembly/desc.ts). */
const SLOTS = 8;
/** Byte offset of the f64 parameters and word offset of the i32 extras in a record. */
const PARAM_BYTE = 512;
export const EXTRA_WORD = 160;
/** Bytes of a record's claim-counter line (assembly/matmul.ts, claim). */
const COUNTER_BYTES = 64;

interface Loc {
  arena: Arena;
  /** Plain: arena address of element [0,0,0,0]. Rep4: the root's first byte. */
  addr: number;
  layout?: TensorLayout;
  /** Rep4: byte offset of the view inside its root. */
  voff: number;
  /** Bytes to copy when staging (from `copyFrom`). */
  span: number;
  copyFrom: number;
}

function locate(t: Tensor): Loc {
  const b = t.buffer;
  if (!isArenaBacked(b)) throw new Error(`cpu: tensor ${t} is not in a CPU buffer`);
  const root = t.viewSrc ?? t;
  const layout = b.layoutOf(root);
  if (layout) {
    const addr = b.base + root.offset;
    return { arena: b.arena, addr, layout, voff: t.offset - root.offset, span: layout.nbytes, copyFrom: addr };
  }
  const addr = b.base + t.offset;
  return { arena: b.arena, addr, voff: 0, span: t.nbytes, copyFrom: addr };
}

/** Rounding of f32 activations onto ggml-cpu's vec_dot_type grid (assembly/vecdot.ts). */
const ROUND_NONE = 0;
const ROUND_F16 = 1;
const ROUND_BF16 = 2;
const ROUND_Q8_0 = 3;
const ROUND_Q8_K = 4;
const ROUND_Q8_1 = 5;

/** How activations are rounded before a dot with rows of `type` (ggml-cpu's vec_dot_type), for rows of n. */
function roundingFor(type: number, n: number, q81 = false): number {
  if (q81 && (type === GGMLType.Q4_1 || type === GGMLType.Q5_1) && n % 32 === 0) return ROUND_Q8_1;
  switch (type) {
    case GGMLType.F16:
      return ROUND_F16;
    case GGMLType.BF16:
      return ROUND_BF16;
    case GGMLType.Q4_0:
    case GGMLType.Q4_1:
    case GGMLType.Q5_0:
    case GGMLType.Q5_1:
    case GGMLType.Q8_0:
    case GGMLType.IQ4_NL:
    case GGMLType.MXFP4:
      return n % 32 === 0 ? ROUND_Q8_0 : ROUND_NONE;
    case GGMLType.Q2_K:
    case GGMLType.Q3_K:
    case GGMLType.Q4_K:
    case GGMLType.Q5_K:
    case GGMLType.Q6_K:
    case GGMLType.IQ4_XS:
      return n % 256 === 0 ? ROUND_Q8_K : ROUND_NONE;
    case GGMLType.IQ2_XXS:
    case GGMLType.IQ2_XS:
    case GGMLType.IQ2_S:
    case GGMLType.IQ3_XXS:
    case GGMLType.IQ3_S:
    case GGMLType.IQ1_S:
    case GGMLType.IQ1_M:
    case GGMLType.TQ1_0:
    case GGMLType.TQ2_0:
      return ROUND_Q8_K;
    default:
      return ROUND_NONE;
  }
}

/** Codebook and ternary types: rows unpacked to int8 and dotted against Q8_K activations (assembly/iquant.ts). */
const INT_DOT_Q8K = new Set<number>([
  GGMLType.IQ2_XXS,
  GGMLType.IQ2_XS,
  GGMLType.IQ2_S,
  GGMLType.IQ3_XXS,
  GGMLType.IQ3_S,
  GGMLType.IQ1_S,
  GGMLType.IQ1_M,
  GGMLType.TQ1_0,
  GGMLType.TQ2_0,
]);

const FMT_F32 = 0;
const FMT_Q32 = 1;
const FMT_Q256 = 2;
const FMT_DIRECT = 3;

/** YaRN's correction range [start, end] of rotated pairs (as ggml_rope_yarn_corr_dims). */
function yarnCorrDims(nDims: number, nCtxOrig: number, base: number, betaFast: number, betaSlow: number): number[] {
  const corr = (nRot: number) => (nDims * Math.log(nCtxOrig / (nRot * 2 * Math.PI))) / (2 * Math.log(base));
  return [Math.max(0, Math.floor(corr(betaFast))), Math.min(nDims - 1, Math.ceil(corr(betaSlow)))];
}

function align(n: number, a = 64): number {
  return Math.ceil(n / a) * a;
}

/** assembly/attention.ts: keys per block and query rows per tile. */
const FA_BLOCK = 32;
const FA_ROWS = 32;

/**
 * Per-thread scratch of k_flash_attn (the layout in assembly/attention.ts): query rows,
 * scores, V sums, row state, mask row addresses and conversion rows, then one converted K/V block or, with
 * `head`, every block of a head.
 */
function faScratchBytes(D: number, Dv: number, nKV: number, head: boolean): number {
  const D4 = Math.ceil(D / 4) * 4;
  const V4 = Math.ceil(Dv / 4) * 4;
  const fixed = 4 * (FA_ROWS * (D4 + FA_BLOCK + V4 + 5) + 4 * Math.max(D4, V4));
  const blocks = head ? Math.ceil(nKV / FA_BLOCK) : 1;
  return align(fixed + 64 + blocks * FA_BLOCK * (D4 + V4) * 4 + 64);
}

/** Heads a k_flash_attn_row unit holds at most (assembly/attention-row.ts GMAX). */
const FA_ROW_HEADS = 32;

/** Per-thread scratch of k_flash_attn_row: per head a query row, a V sum and its state; one K and one V row. */
function faRowScratchBytes(D: number, Dv: number): number {
  const D4 = Math.ceil(D / 4) * 4;
  const V4 = Math.ceil(Dv / 4) * 4;
  return align(4 * (FA_ROW_HEADS * (D4 + V4 + 4) + D4 + V4) + 64);
}

interface Plan {
  node: Tensor;
  home: Arena;
  kernels: KernelName[];
  /** Descriptor slots: the node, then its sources (null: absent). */
  slots: (Tensor | null)[];
  locs: (Loc | null)[];
  params: number[];
  /** Shared scratch bytes (matmul activations) and per-thread bytes. */
  shared: number;
  perThread: number;
  /** Tensors (slot indices) copied into the home arena. */
  staged: number[];
  mm?: { fmt: number; stride: number; nc: number; whole: boolean; round: number };
  /** FLASH_ATTN_EXT: rounding of the query rows (K's vec_dot_type). */
  qRound?: number;
  /** FLASH_ATTN_EXT: the per-thread scratch has room for a whole head's K and V blocks in f32. */
  kvCache?: boolean;
  /** MUL_MAT_ID: bytes of each thread's scratch the tiles use (the column map follows). */
  mmScratch?: number;
  /** FLASH_ATTN_EXT: computed row by row (k_flash_attn_row), as ggml-cpu's one-chunk kernel. */
  faRow?: boolean;
  /** FLASH_ATTN_EXT, split case: blocks per key chunk (partials in the shared area, then a merge step). */
  faSplit?: number;
}

const KERNEL_OF: Partial<Record<Op, KernelName>> = {
  [Op.ADD]: 'k_add',
  [Op.MUL]: 'k_mul',
  [Op.SCALE]: 'k_scale',
  [Op.SILU]: 'k_silu',
  [Op.GELU]: 'k_gelu',
  [Op.TANH]: 'k_tanh',
  [Op.RMS_NORM]: 'k_rms_norm',
  [Op.NORM]: 'k_norm',
  [Op.SOFT_MAX]: 'k_soft_max',
  [Op.ROPE]: 'k_rope',
  [Op.CPY]: 'k_cpy',
  [Op.CONT]: 'k_cpy',
  [Op.GET_ROWS]: 'k_get_rows',
  [Op.SET_ROWS]: 'k_set_rows',
  [Op.FLASH_ATTN_EXT]: 'k_flash_attn',
  [Op.SSM_CONV]: 'k_ssm_conv',
  [Op.SSM_SCAN]: 'k_ssm_scan',
  [Op.GATED_DELTA_NET]: 'k_gated_delta_net',
  [Op.L2_NORM]: 'k_l2_norm',
  [Op.SOFTPLUS]: 'k_softplus',
  [Op.RELU]: 'k_relu',
  [Op.SQR]: 'k_sqr',
  [Op.ADD_ID]: 'k_add_id',
  [Op.ARGSORT]: 'k_argsort',
  [Op.SWIGLU_OAI]: 'k_swiglu_oai',
  [Op.SUM_ROWS]: 'k_sum_rows',
  [Op.DIV]: 'k_div',
  [Op.SIGMOID]: 'k_sigmoid',
  [Op.CLAMP]: 'k_clamp',
  [Op.CONCAT]: 'k_concat',
};

function plan(n: Tensor): Plan {
  const slots: (Tensor | null)[] = [n];
  for (let i = 0; i < SLOTS - 1; i++) slots.push(n.src[i] ?? null);
  const locs = slots.map((t) => (t ? locate(t) : null));
  // the arena the node runs in
  let home = locs[0]!.arena;
  if ((n.op === Op.MUL_MAT || n.op === Op.MUL_MAT_ID || n.op === Op.GET_ROWS) && locs[1]) home = locs[1].arena;
  const staged: number[] = [];
  locs.forEach((l, i) => {
    if (l && l.arena !== home) staged.push(i);
  });
  const p: Plan = { node: n, home, kernels: [], slots, locs, params: [], shared: 0, perThread: 0, staged };
  const ne0 = (t: Tensor) => t.ne[0];
  switch (n.op) {
    case Op.MUL_MAT:
    case Op.MUL_MAT_ID: {
      const [a, b] = n.src;
      const K = a.ne[0];
      // MUL_MAT_ID: every (slot, token) is a column, nB rows of b per token are prepared
      const N = n.op === Op.MUL_MAT_ID ? n.ne[1] * n.ne[2] : b.ne[1];
      const rows = b.ne[1] * b.ne[2] * b.ne[3];
      const floatA = a.type === GGMLType.F32 || a.type === GGMLType.F16 || a.type === GGMLType.BF16;
      let fmt = FMT_F32;
      const round = roundingFor(a.type, K, true);
      if (a.type === GGMLType.Q4_0 || a.type === GGMLType.Q8_0) fmt = FMT_Q32;
      else if ((a.type === GGMLType.Q5_0 || a.type === GGMLType.MXFP4) && K % 32 === 0) fmt = FMT_Q32;
      else if (a.type === GGMLType.Q4_K || a.type === GGMLType.Q6_K || INT_DOT_Q8K.has(a.type)) fmt = FMT_Q256;
      else if (b.type === GGMLType.F32 && b.nb[0] === 4 && round === ROUND_NONE && floatA) fmt = FMT_DIRECT;
      const stride = fmt === FMT_F32 || fmt === FMT_DIRECT ? align(K * 4 + K / 8, 16) : align(2.5 * K, 16);
      const nc = Math.max(1, Math.min(N, Math.floor(262144 / stride)));
      const root = a.viewSrc ?? a;
      const whole =
        locs[1]!.layout !== undefined &&
        locs[1]!.voff === 0 &&
        a.ne.every((x, i) => x === root.ne[i]) &&
        a.nb.every((x, i) => x === root.nb[i]);
      p.mm = { fmt, stride, nc, whole, round };
      if (fmt !== FMT_DIRECT) {
        p.kernels.push('k_mm_prep');
        p.shared = align(rows * stride);
      }
      // F16 weights against several columns: room for a group of four rows widened to f32 (assembly/matmul.ts, mmGroup)
      p.perThread = align((a.type === GGMLType.F16 && N > 1 ? 16 : 4) * K + 64);
      if (n.op === Op.MUL_MAT_ID) {
        // after the tiles' scratch: expert counts and starts, then an address pair per column
        p.mmScratch = p.perThread;
        p.perThread += align(8 * n.src[0].ne[2] + 8 * N);
        p.kernels.push('k_mmid');
      } else p.kernels.push('k_mm');
      break;
    }
    case Op.ARGSORT:
      p.params = [n.params.order];
      break;
    case Op.CLAMP:
      p.params = [n.params.min, n.params.max];
      break;
    case Op.SWIGLU_OAI:
      p.params = [n.params.alpha, n.params.limit];
      break;
    case Op.CONCAT:
      p.params = [n.params.dim];
      break;
    case Op.SCALE:
      p.params = [n.params.scale, n.params.bias ?? 0];
      break;
    case Op.RMS_NORM:
    case Op.NORM:
    case Op.L2_NORM:
      p.params = [n.params.eps];
      break;
    case Op.GATED_DELTA_NET:
      // exp(g) of a token, per element (gates per key dimension)
      p.perThread = align(n.src[2].ne[0] * 4 + 64);
      break;
    case Op.SOFT_MAX:
      p.params = [n.params.scale];
      p.perThread = align(ne0(n) * 4 + 64);
      break;
    case Op.ROPE: {
      const q = n.params;
      const corr = yarnCorrDims(q.nDims, q.nCtxOrig, q.freqBase, q.betaFast, q.betaSlow);
      const mscale = q.extFactor !== 0 ? q.attnFactor * (1 + 0.1 * Math.log(1 / q.freqScale)) : q.attnFactor;
      p.params = [
        q.nDims,
        q.mode & RopeMode.NEOX,
        Math.log(q.freqBase),
        q.freqScale,
        q.extFactor,
        mscale,
        corr[0],
        corr[1],
      ];
      p.perThread = align((q.nDims / 2) * 16 + 64);
      break;
    }
    case Op.GET_ROWS:
    case Op.CPY:
    case Op.CONT:
      p.perThread = align(ne0(n.src[0]) * 4 + 64);
      break;
    case Op.SET_ROWS:
      p.perThread = align(ne0(n) * 4 + 64);
      break;
    case Op.FLASH_ATTN_EXT: {
      const [q, k, v] = n.src;
      p.params = [n.params.scale, n.params.logitSoftcap ?? 0];
      // the query row in K's vec_dot_type (F16 for an F16 cache) where ggml-cpu's one-chunk
      // kernel runs (row by row, and each key chunk of the split case); its tiled kernel
      // (build 10257's simd_gemm over f32 K tiles) keeps the query in f32
      p.qRound =
        flashAttnTiled(q, k.type, v.type) && !flashAttnSplit(q, k.type, v.type, k.ne[1])
          ? ROUND_NONE
          : roundingFor(k.type, q.ne[0]);
      // one token against many keys: key chunks in parallel, then merged
      if (flashAttnSplit(q, k.type, v.type, k.ne[1])) {
        const chunks = Math.ceil(k.ne[1] / FA_SPLIT_KEYS);
        p.faSplit = FA_SPLIT_KEYS / FA_BLOCK;
        p.shared = align(q.ne[2] * chunks * (Math.ceil(v.ne[0] / 4) * 4 + 4) * 4);
        p.perThread = faScratchBytes(q.ne[0], v.ne[0], k.ne[1], false);
        p.kernels.push('k_flash_attn', 'k_flash_attn_merge');
        break;
      }
      // as ggml-cpu: short ubatches (and decoding) row by row, longer ones tiled
      if (!flashAttnTiled(q, k.type, v.type)) {
        p.faRow = true;
        p.perThread = faRowScratchBytes(q.ne[0], v.ne[0]);
        break;
      }
      // several query rows: room for a whole K/V head in f32, converted once per head and
      // thread instead of once per tile (up to 32 MiB a thread)
      const whole = faScratchBytes(q.ne[0], v.ne[0], k.ne[1], true);
      p.kvCache = q.ne[1] > 1 && whole <= 32 * 2 ** 20;
      p.perThread = p.kvCache ? whole : faScratchBytes(q.ne[0], v.ne[0], k.ne[1], false);
      break;
    }
    default:
      break;
  }
  if (n.op !== Op.MUL_MAT && n.op !== Op.MUL_MAT_ID && !p.faSplit) {
    const k = p.faRow ? 'k_flash_attn_row' : KERNEL_OF[n.op];
    if (!k) throw new Error(`cpu: no kernel for ${n.op}`);
    p.kernels.push(k);
  }
  return p;
}

/** Bytes of a plan's staged copies in its home arena's node scratch (before the per-thread slots). */
function stagedBytes(p: Plan): number {
  let s = 0;
  for (const i of p.staged) s += align(p.locs[i]!.span);
  return s;
}

/** Work below this many elements (or multiply-adds) runs on one worker, without barriers between such steps. */
const SMALL = 32768;

/** Whether a step of `p` is too small to split over threads. */
function isSmall(p: Plan, kernel: KernelName): boolean {
  const n = p.node;
  switch (kernel) {
    case 'k_mm_prep':
      return n.src[1].nelements < SMALL;
    case 'k_mm':
      return n.src[0].ne[0] * n.src[0].ne[1] * n.src[1].nelements < 4 * SMALL;
    case 'k_mmid':
      return n.src[0].ne[0] * n.nelements < 4 * SMALL;
    case 'k_flash_attn':
    case 'k_flash_attn_row':
      if (p.faSplit) return false;
      return n.src[0].nelements * n.src[1].ne[1] < 4 * SMALL;
    case 'k_set_rows':
      return n.src[0].nelements < SMALL;
    case 'k_gated_delta_net':
      // S² multiply-adds a head and token, four passes
      return 4 * n.src[2].nelements * n.src[2].ne[0] < SMALL;
    case 'k_ssm_scan':
      return n.src[0].nelements * n.src[1].ne[2] < SMALL;
    default:
      return n.nelements < SMALL;
  }
}

/** Where each arena's work region is (records, then node scratch). */
export interface WorkRegions {
  /** A region of at least `bytes` in `arena` (may move the previous one). */
  ensure(arena: Arena, bytes: number): number;
}

export interface EncodedJob {
  steps: Int32Array;
  nsteps: number;
  /**
   * Words (arena, word index) to zero before every run of the job: the matmul steps' claim
   * counters (assembly/matmul.ts: workers take pieces of a product as they go).
   */
  counters: [Arena, number][];
}

/**
 * Encode the computed nodes of `nodes` for `nth` threads. Each arena's work region holds
 * the node records, then the matmul activation rows (kept from one product to the next,
 * so products reading the same activations quantize them once), then node scratch.
 *
 * Node scratch is one slot per worker, at the same place for every node of the job (the
 * slot stride is the largest per-thread need of the arena's nodes): steps that share a
 * phase run on different workers at once, and scratch is not tracked as a byte range, so
 * a worker's slot must not depend on the node. (With a stride per node, a node on worker 1
 * with a smaller stride than one on worker 0 wrote into worker 0's slot: e.g. SET_ROWS of
 * a 64-wide V row over ROPE's cos/sin table, which gave NaN logits on one-KV-head models.)
 */
export function encodeGraph(nodes: readonly Tensor[], nth: number, work: WorkRegions): EncodedJob {
  const plans = nodes.filter((n) => n.op !== Op.NONE && !isViewOp(n.op)).map(plan);
  // per arena: record count, the largest activation area and node scratch
  const need = new Map<Arena, { records: number; act: number; staged: number; slot: number }>();
  for (const p of plans) {
    const e = need.get(p.home) ?? { records: 0, act: 0, staged: 0, slot: 0 };
    e.records++;
    e.act = Math.max(e.act, p.shared);
    e.staged = Math.max(e.staged, stagedBytes(p));
    e.slot = Math.max(e.slot, p.perThread);
    need.set(p.home, e);
  }
  const bases = new Map<
    Arena,
    { rec: number; counters: number; act: number; scratch: number; slot: number; next: number; actKey: unknown }
  >();
  for (const [arena, e] of need) {
    const scratch = e.staged + e.slot * nth;
    // after the records, a 64-byte line per record for its claim counter: a line apart from
    // anything the kernels read, which the workers' atomic adds would take from each other
    const base = work.ensure(arena, e.records * (RECORD_BYTES + COUNTER_BYTES) + e.act + scratch + 192);
    const counters = align(base + e.records * RECORD_BYTES);
    const act = align(counters + e.records * COUNTER_BYTES);
    bases.set(arena, { rec: base, counters, act, scratch: align(act + e.act), slot: e.slot, next: 0, actKey: null });
  }
  const units: Unit[] = [];
  const counters: [Arena, number][] = [];
  const views = new Map<Arena, { i32: Int32Array; f64: Float64Array }>();
  for (const p of plans) {
    const b = bases.get(p.home)!;
    const counter = b.counters + b.next * COUNTER_BYTES;
    const rec = b.rec + b.next++ * RECORD_BYTES;
    let v = views.get(p.home);
    if (!v) {
      const buf = p.home.memory.buffer;
      v = { i32: new Int32Array(buf), f64: new Float64Array(buf, 0, buf.byteLength >>> 3) };
      views.set(p.home, v);
    }
    const { i32: mem32, f64: mem64 } = v;
    let scr = b.scratch;
    // staged copies come first in the node scratch; a node with copies is fenced (runs
    // between barriers, alone): its copies and scratch are not tracked as ranges. Every
    // other node's worker slots start at the same place.
    const addrs = new Array<number>(SLOTS).fill(0);
    for (let s = 0; s < SLOTS; s++) addrs[s] = p.locs[s]?.addr ?? 0;
    const fenced = p.staged.length > 0;
    for (const i of p.staged) {
      const l = p.locs[i]!;
      units.push(fenceUnit([p.home.index, K_COPY, scr, 0, l.arena.index, l.copyFrom, l.span]));
      addrs[i] = scr + (l.addr - l.copyFrom);
      scr += align(l.span);
      b.actKey = null;
    }
    const slot0 = scr;
    const r32 = rec >>> 2;
    mem32.fill(0, r32, r32 + RECORD_BYTES / 4);
    for (let s = 0; s < SLOTS; s++) {
      const t = p.slots[s];
      const w = r32 + s * 16;
      if (!t) {
        mem32[w + 1] = -1;
        continue;
      }
      const l = p.locs[s]!;
      mem32[w] = addrs[s];
      mem32[w + 1] = t.type;
      for (let d = 0; d < 4; d++) {
        mem32[w + 2 + d] = t.ne[d];
        mem32[w + 6 + d] = t.nb[d];
      }
      if (l.layout) {
        mem32[w + 10] = l.layout instanceof K4Layout ? LAYOUT_K4 : 1;
        mem32[w + 11] = l.voff;
        mem32[w + 12] = l.layout.ne1;
        mem32[w + 13] = l.layout.rowBytes;
        mem32[w + 14] = l.layout.grouped;
      }
    }
    const r64 = (rec + PARAM_BYTE) >>> 3;
    for (let i = 0; i < p.params.length; i++) mem64[r64 + i] = p.params[i];
    const i32 = mem32.subarray(r32, r32 + RECORD_BYTES / 4);
    const ex = EXTRA_WORD;
    let kernels = p.kernels;
    let actRange: Range | null = null;
    if (p.mm) {
      i32[ex] = b.act;
      i32[ex + 1] = p.mm.stride;
      i32[ex + 2] = p.mm.fmt;
      i32[ex + 3] = slot0;
      i32[ex + 4] = b.slot;
      i32[ex + 5] = p.mm.nc;
      i32[ex + 6] = p.mm.whole ? 1 : 0;
      i32[ex + 7] = p.mm.round;
      i32[ex + 8] = p.mmScratch ?? 0;
      // ex + 9: the claim counter's address (zeroed before every run)
      i32[ex + 9] = counter;
      counters.push([p.home, counter >>> 2]);
      if (kernels[0] === 'k_mm_prep') {
        actRange = [p.home.index, b.act, b.act + p.shared];
        // the same activations (tensor, format, rounding) as the last product prepared here:
        // the rows are still in place
        const src = p.node.src[1];
        const same = b.actKey as { t: Tensor; fmt: number; round: number; stride: number } | null;
        if (
          p.staged.length === 0 &&
          same &&
          same.t === src &&
          same.fmt === p.mm.fmt &&
          same.round === p.mm.round &&
          same.stride === p.mm.stride
        ) {
          kernels = kernels.slice(1);
        } else {
          b.actKey = p.staged.length === 0 ? { t: src, fmt: p.mm.fmt, round: p.mm.round, stride: p.mm.stride } : null;
        }
      }
    } else {
      i32[ex] = slot0;
      i32[ex + 1] = b.slot;
      i32[ex + 2] = p.qRound ?? 0;
      i32[ex + 3] = p.kvCache ? 1 : 0;
      if (p.faSplit) {
        // the partials take the shared area: the activations kept there are gone
        i32[ex + 4] = b.act;
        i32[ex + 5] = p.faSplit;
        actRange = [p.home.index, b.act, b.act + p.shared];
        b.actKey = null;
      }
    }
    const small = kernels.map((k) => isSmall(p, k));
    const cost = p.node.nelements;
    if (fenced) {
      for (const k of kernels) units.push(fenceUnit([p.home.index, kernelId(k), rec, 0]));
    } else if (small.every((x) => x)) {
      // one single-worker unit; the worker chosen later gets its own scratch slot
      const reads = p.slots.slice(1).flatMap((t, i) => (t ? [rangeOf(t, p.locs[i + 1]!)] : []));
      const writes = [rangeOf(p.node, p.locs[0]!)];
      if (actRange) (kernels[0] === 'k_mm_prep' ? writes : reads).push(actRange);
      units.push({
        steps: kernels.map((k) => [p.home.index, kernelId(k), rec, F_SINGLE]),
        reads,
        writes,
        kind: 'single',
        cost,
        scratchWord: r32 + ex + (p.mm ? 3 : 0),
        scratchBase: slot0,
        scratchStride: b.slot,
        mem32,
      });
    } else {
      kernels.forEach((k, ki) => {
        const reads: Range[] = [];
        const writes: Range[] = [];
        if (k === 'k_mm_prep') {
          reads.push(rangeOf(p.node.src[1], p.locs[2]!));
          writes.push(actRange!);
        } else if (p.faSplit) {
          // partials: the first step writes them, the merge reads them
          if (k === 'k_flash_attn_merge') {
            reads.push(actRange!);
            writes.push(rangeOf(p.node, p.locs[0]!));
          } else {
            p.slots.forEach((t, i) => {
              if (t && i > 0) reads.push(rangeOf(t, p.locs[i]!));
            });
            writes.push(actRange!);
          }
        } else {
          p.slots.forEach((t, i) => {
            if (t && i > 0 && !(actRange && i === 2)) reads.push(rangeOf(t, p.locs[i]!));
          });
          if (actRange) reads.push(actRange);
          writes.push(rangeOf(p.node, p.locs[0]!));
        }
        // a single step of a mixed plan keeps worker 0 (the record's scratch slot 0)
        units.push({
          steps: [[p.home.index, kernelId(k), rec, small[ki] ? F_SINGLE : 0]],
          reads,
          writes,
          kind: small[ki] ? 'single0' : 'multi',
          cost,
        });
      });
    }
    if (p.staged.includes(0)) {
      const l = p.locs[0]!;
      units.push(
        fenceUnit([l.arena.index, K_COPY, l.copyFrom, 0, p.home.index, addrs[0] - (l.addr - l.copyFrom), l.span]),
      );
      b.actKey = null;
    }
  }
  return { ...layOut(units, nth), counters };
}

/** A byte range [lo, hi) of one arena: [arena index, lo, hi]. */
type Range = [number, number, number];

/** Steps that run together: one multi-worker step, or the steps of one node on one worker. */
interface Unit {
  steps: number[][];
  reads: Range[];
  writes: Range[];
  /** single: one worker, chosen here; single0: worker 0; fence: alone between barriers. */
  kind: 'multi' | 'single' | 'single0' | 'fence';
  cost: number;
  worker?: number;
  scratchWord?: number;
  scratchBase?: number;
  scratchStride?: number;
  mem32?: Int32Array;
}

function fenceUnit(step: number[]): Unit {
  return { steps: [step], reads: [], writes: [], kind: 'fence', cost: 0 };
}

/** The bytes a tensor's elements span (a repacked tensor: its whole root). */
function rangeOf(t: Tensor, l: Loc): Range {
  if (l.layout) return [l.arena.index, l.copyFrom, l.copyFrom + l.span];
  const tr = traitsOf(t.type);
  let hi = l.addr + tr.typeSize;
  hi += (t.ne[0] / tr.blockSize - 1) * t.nb[0];
  for (let d = 1; d < 4; d++) hi += (t.ne[d] - 1) * t.nb[d];
  return [l.arena.index, l.addr, hi];
}

function overlaps(a: Range[], b: Range[]): boolean {
  for (const x of a) for (const y of b) if (x[0] === y[0] && x[1] < y[2] && y[1] < x[2]) return true;
  return false;
}

function conflict(u: Unit, v: Unit): boolean {
  return overlaps(u.writes, v.writes) || overlaps(u.writes, v.reads) || overlaps(u.reads, v.writes);
}

const isSingle = (u: Unit) => u.kind === 'single' || u.kind === 'single0';

/**
 * Group units into phases separated by barriers: a unit joins the earliest phase after the
 * last one holding a unit it conflicts with (reads what that one writes, or writes what it
 * reads or writes), so independent nodes share a phase. Single-worker units that conflict
 * only with single-worker units on one worker join that worker in the same phase (a worker
 * runs its steps in order). Moving a unit before non-conflicting ones keeps every result.
 */
function layOut(units: Unit[], nth: number): Omit<EncodedJob, 'counters'> {
  const phases: { units: Unit[]; load: number[] }[] = [];
  let floor = 0;
  for (const u of units) {
    if (u.kind === 'fence') {
      phases.push({ units: [u], load: new Array(nth).fill(0) });
      floor = phases.length;
      continue;
    }
    let lo = floor;
    let worker = -1;
    for (let i = phases.length - 1; i >= floor; i--) {
      const hits = phases[i].units.filter((v) => conflict(u, v));
      if (hits.length === 0) continue;
      lo = i + 1;
      if (isSingle(u) && hits.every(isSingle)) {
        const ws = new Set(hits.map((v) => v.worker!));
        const w = [...ws][0];
        if (ws.size === 1 && (u.kind === 'single' || w === 0)) {
          lo = i;
          worker = w;
        }
      }
      break;
    }
    if (lo === phases.length) phases.push({ units: [], load: new Array(nth).fill(0) });
    const ph = phases[lo];
    if (u.kind === 'multi') {
      for (let w = 0; w < nth; w++) ph.load[w] += u.cost / nth;
    } else {
      if (worker < 0) worker = u.kind === 'single0' ? 0 : ph.load.indexOf(Math.min(...ph.load));
      u.worker = worker;
      ph.load[worker] += u.cost;
      for (const st of u.steps) st[3] = F_SINGLE | (worker << 8);
      if (u.kind === 'single') u.mem32![u.scratchWord!] = u.scratchBase! + worker * u.scratchStride!;
    }
    ph.units.push(u);
  }
  let nsteps = 0;
  for (const ph of phases) for (const u of ph.units) nsteps += u.steps.length;
  const steps = new Int32Array(Math.max(1, nsteps) * STEP_WORDS);
  let si = 0;
  for (const ph of phases) {
    const first = si;
    for (const u of ph.units) {
      for (const st of u.steps) {
        const o = si++ * STEP_WORDS;
        for (let i = 0; i < st.length; i++) steps[o + i] = st[i];
        steps[o + 3] |= F_NO_BARRIER;
      }
    }
    // one barrier, after the phase's last step
    if (si > first) steps[(si - 1) * STEP_WORDS + 3] &= ~F_NO_BARRIER;
  }
  return { steps, nsteps: si };
}
