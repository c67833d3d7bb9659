// Turning a graph into a job: one node record per computed node (descriptors of the node
// and its sources, parameters, scratch addresses) written into the work region of the
// arena it runs in, and the steps (kernel calls, with barriers between them) the
// workers execute. A node whose tensors live in several arenas runs in one of them (the
// weights' for MUL_MAT and GET_ROWS, else the result's); the others are copied into
// that arena's work region first (and the result copied back).

import { RopeMode } from '../../ggml/ops.js';
import { isViewOp, Op, type Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import type { Arena } from './arena.js';
import { isArenaBacked } from './buffer.js';
import type { Rep4Layout } from './layout.js';
import { F_NO_BARRIER, F_SINGLE, K_COPY, type KernelName, kernelId, STEP_WORDS } from './protocol.js';

/** Bytes of one node record. */
export const RECORD_BYTES = 512;

interface Loc {
  arena: Arena;
  /** Plain: arena address of element [0,0,0,0]. Rep4: the root's first byte. */
  addr: number;
  layout?: Rep4Layout;
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
      return n % 32 === 0 ? ROUND_Q8_0 : ROUND_NONE;
    case GGMLType.Q2_K:
    case GGMLType.Q3_K:
    case GGMLType.Q4_K:
    case GGMLType.Q5_K:
    case GGMLType.Q6_K:
    case GGMLType.IQ4_XS:
      return n % 256 === 0 ? ROUND_Q8_K : ROUND_NONE;
    default:
      return ROUND_NONE;
  }
}

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
}

const KERNEL_OF: Partial<Record<Op, KernelName>> = {
  [Op.ADD]: 'k_add',
  [Op.MUL]: 'k_mul',
  [Op.SCALE]: 'k_scale',
  [Op.SILU]: 'k_silu',
  [Op.GELU]: 'k_gelu',
  [Op.RMS_NORM]: 'k_rms_norm',
  [Op.NORM]: 'k_norm',
  [Op.SOFT_MAX]: 'k_soft_max',
  [Op.ROPE]: 'k_rope',
  [Op.CPY]: 'k_cpy',
  [Op.CONT]: 'k_cpy',
  [Op.GET_ROWS]: 'k_get_rows',
  [Op.SET_ROWS]: 'k_set_rows',
  [Op.FLASH_ATTN_EXT]: 'k_flash_attn',
};

function plan(n: Tensor): Plan {
  const slots: (Tensor | null)[] = [n, n.src[0] ?? null, n.src[1] ?? null, n.src[2] ?? null, n.src[3] ?? null];
  const locs = slots.map((t) => (t ? locate(t) : null));
  // the arena the node runs in
  let home = locs[0]!.arena;
  if ((n.op === Op.MUL_MAT || n.op === Op.GET_ROWS) && locs[1]) home = locs[1].arena;
  const staged: number[] = [];
  locs.forEach((l, i) => {
    if (l && l.arena !== home) staged.push(i);
  });
  const p: Plan = { node: n, home, kernels: [], slots, locs, params: [], shared: 0, perThread: 0, staged };
  const ne0 = (t: Tensor) => t.ne[0];
  switch (n.op) {
    case Op.MUL_MAT: {
      const [a, b] = n.src;
      const K = a.ne[0];
      const N = b.ne[1];
      const rows = N * b.ne[2] * b.ne[3];
      const floatA = a.type === GGMLType.F32 || a.type === GGMLType.F16 || a.type === GGMLType.BF16;
      let fmt = FMT_F32;
      const round = roundingFor(a.type, K, true);
      if (a.type === GGMLType.Q4_0 || a.type === GGMLType.Q8_0) fmt = FMT_Q32;
      else if (a.type === GGMLType.Q5_0 && K % 32 === 0) fmt = FMT_Q32;
      else if (a.type === GGMLType.Q4_K || a.type === GGMLType.Q6_K) fmt = FMT_Q256;
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
      p.kernels.push('k_mm');
      p.perThread = align(K * 4 + 64);
      break;
    }
    case Op.SCALE:
      p.params = [n.params.scale, n.params.bias ?? 0];
      break;
    case Op.RMS_NORM:
    case Op.NORM:
      p.params = [n.params.eps];
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
      p.qRound = roundingFor(k.type, q.ne[0]);
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
  if (n.op !== Op.MUL_MAT) {
    const k = KERNEL_OF[n.op];
    if (!k) throw new Error(`cpu: no kernel for ${n.op}`);
    p.kernels.push(k);
  }
  return p;
}

/** Bytes of node scratch a plan needs in its home arena (staged copies, per thread). */
function scratchBytes(p: Plan, nth: number): number {
  let s = 0;
  for (const i of p.staged) s += align(p.locs[i]!.span);
  return s + p.perThread * nth;
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
    case 'k_flash_attn':
      return n.src[0].nelements * n.src[1].ne[1] < 4 * SMALL;
    case 'k_set_rows':
      return n.src[0].nelements < SMALL;
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
}

/**
 * Encode the computed nodes of `nodes` for `nth` threads. Each arena's work region holds
 * the node records, then the matmul activation rows (kept from one product to the next,
 * so products reading the same activations quantize them once), then node scratch.
 */
export function encodeGraph(nodes: readonly Tensor[], nth: number, work: WorkRegions): EncodedJob {
  const plans = nodes.filter((n) => n.op !== Op.NONE && !isViewOp(n.op)).map(plan);
  // per arena: record count, the largest activation area and node scratch
  const need = new Map<Arena, { records: number; act: number; scratch: number }>();
  for (const p of plans) {
    const e = need.get(p.home) ?? { records: 0, act: 0, scratch: 0 };
    e.records++;
    e.act = Math.max(e.act, p.shared);
    e.scratch = Math.max(e.scratch, scratchBytes(p, nth));
    need.set(p.home, e);
  }
  const bases = new Map<Arena, { rec: number; act: number; scratch: number; next: number; actKey: unknown }>();
  for (const [arena, e] of need) {
    const base = work.ensure(arena, e.records * RECORD_BYTES + e.act + e.scratch + 128);
    const act = align(base + e.records * RECORD_BYTES);
    bases.set(arena, { rec: base, act, scratch: align(act + e.act), next: 0, actKey: null });
  }
  let nsteps = 0;
  for (const p of plans) nsteps += p.kernels.length + p.staged.length + (p.staged.includes(0) ? 1 : 0);
  const steps = new Int32Array(Math.max(1, nsteps) * STEP_WORDS);
  let si = 0;
  const step = (arena: number, kernel: number, ptr: number, flags: number, ...rest: number[]) => {
    const o = si++ * STEP_WORDS;
    steps[o] = arena;
    steps[o + 1] = kernel;
    steps[o + 2] = ptr;
    steps[o + 3] = flags;
    for (let i = 0; i < rest.length; i++) steps[o + 4 + i] = rest[i];
  };
  const views = new Map<Arena, { i32: Int32Array; f64: Float64Array }>();
  for (const p of plans) {
    const b = bases.get(p.home)!;
    const rec = b.rec + b.next++ * RECORD_BYTES;
    let v = views.get(p.home);
    if (!v) {
      const buf = p.home.memory.buffer;
      v = { i32: new Int32Array(buf), f64: new Float64Array(buf, 0, buf.byteLength >>> 3) };
      views.set(p.home, v);
    }
    const { i32: mem32, f64: mem64 } = v;
    let scr = b.scratch;
    // staged copies come first in the node scratch
    const addrs = [0, 0, 0, 0, 0];
    for (let s = 0; s < 5; s++) addrs[s] = p.locs[s]?.addr ?? 0;
    for (const i of p.staged) {
      const l = p.locs[i]!;
      step(p.home.index, K_COPY, scr, 0, l.arena.index, l.copyFrom, l.span);
      addrs[i] = scr + (l.addr - l.copyFrom);
      scr += align(l.span);
      b.actKey = null;
    }
    const perThread = scr;
    const r32 = rec >>> 2;
    mem32.fill(0, r32, r32 + RECORD_BYTES / 4);
    for (let s = 0; s < 5; s++) {
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
        mem32[w + 10] = 1;
        mem32[w + 11] = l.voff;
        mem32[w + 12] = l.layout.ne1;
        mem32[w + 13] = l.layout.rowBytes;
        mem32[w + 14] = l.layout.grouped;
      }
    }
    const r64 = (rec + 320) >>> 3;
    for (let i = 0; i < p.params.length; i++) mem64[r64 + i] = p.params[i];
    const i32 = mem32.subarray(r32, r32 + RECORD_BYTES / 4);
    const ex = 112;
    let kernels = p.kernels;
    if (p.mm) {
      i32[ex] = b.act;
      i32[ex + 1] = p.mm.stride;
      i32[ex + 2] = p.mm.fmt;
      i32[ex + 3] = perThread;
      i32[ex + 4] = p.perThread;
      i32[ex + 5] = p.mm.nc;
      i32[ex + 6] = p.mm.whole ? 1 : 0;
      i32[ex + 7] = p.mm.round;
      if (kernels[0] === 'k_mm_prep') {
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
      i32[ex] = perThread;
      i32[ex + 1] = p.perThread;
      i32[ex + 2] = p.qRound ?? 0;
      i32[ex + 3] = p.kvCache ? 1 : 0;
    }
    for (const k of kernels) step(p.home.index, kernelId(k), rec, isSmall(p, k) ? F_SINGLE : 0);
    if (p.staged.includes(0)) {
      const l = p.locs[0]!;
      step(l.arena.index, K_COPY, l.copyFrom, 0, p.home.index, addrs[0] - (l.addr - l.copyFrom), l.span);
      b.actKey = null;
    }
  }
  // consecutive single-worker steps need no barrier between them: worker 0 runs them in order
  for (let i = 0; i + 1 < si; i++) {
    const o = i * STEP_WORDS;
    if ((steps[o + 3] & F_SINGLE) !== 0 && (steps[o + 3 + STEP_WORDS] & F_SINGLE) !== 0) steps[o + 3] |= F_NO_BARRIER;
  }
  return { steps, nsteps: si };
}
