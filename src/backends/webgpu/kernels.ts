// The WGSL kernels and how each ggml node maps to one dispatch. Every kernel reads its
// tensors through byte addresses from a uniform block (offset, ne[4], nb[4] for each of
// src0, src1, src2 and dst, then the op's parameters), so views, permutations and
// broadcasting need no copies. Storage buffers are bound whole (bindPlan): dst's buffer
// once, read_write (WebGPU forbids aliasing a written binding), every other buffer
// read-only as array<u32>, and, where the device has `shader-f16` (GpuFeatures.f16), also
// as array<f16> for its F16 tensors, which are then read as f16 elements; without it (or
// for an F16 tensor in dst's buffer beside other types) F16 is unpacked from its word.
// Results are F32, or F16 written two elements per thread (a word by pack2x16float, or two
// f16 stores where dst's binding is array<f16>). Where the device has `subgroups`, the row
// reductions and the matrix-vector products reduce in registers; without, through
// workgroup memory; each path gives the same bits run after run.

import { RopeMode } from '../../ggml/ops.js';
import { Op, type Tensor } from '../../ggml/tensor.js';
import { GGMLType } from '../../ggml/types.js';
import { yarnCorrDims } from '../reference/ops/rope.js';
import { alibiBases } from '../reference/ops/softmax.js';
import { type BindingKinds, type GpuFeatures, PARAM_BYTES } from './context.js';

const { F32, F16, BF16, I32, I64, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, MXFP4 } =
  GGMLType;

/** Threads per workgroup, every kernel. */
export const WG = 64;
/**
 * Parameter words: role t's offset at 9t, ne at 9t+1.., nb at 9t+5.. (roles: src0, src1,
 * src2, dst, src3, src4, src5); up to 2 u32 op params from U, 6 f32 from F; the unit count at TOTAL.
 */
const ROLES = 7;
const U = 9 * ROLES;
const F = U + 2;
const TOTAL = F + 6;
/** Largest head size flash attention keeps in workgroup memory. */
const FA_MAX_D = 256;
/** Columns one matrix-product workgroup computes (each weight element decoded once for all). */
const MM_COLS = 8;
/** Rows of a one matrix-product workgroup computes (WG / MM_ROWS threads a row). */
const MM_ROWS = 8;

/** Weight types the matrix product and GET_ROWS decode. */
const WEIGHTS = new Set<number>([
  F32,
  F16,
  BF16,
  Q8_0,
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q2_K,
  Q3_K,
  Q4_K,
  Q5_K,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  MXFP4,
]);

/**
 * Types whose tensors must start on a word: read a word at a time, or (F16) written two
 * elements a word; the quantized types and BF16 are read by bytes and half-words.
 */
export function wordAligned(type: number): boolean {
  return type === F32 || type === F16 || type === I32 || type === I64;
}

/** IQ4_NL's and IQ4_XS's 16 levels (ggml's kvalues_iq4nl). */
const IQ4_LEVELS =
  '-127.0, -104.0, -83.0, -65.0, -49.0, -35.0, -22.0, -10.0, 1.0, 13.0, 25.0, 38.0, 53.0, 69.0, 89.0, 113.0';
/** MXFP4's E2M1 levels, doubled (ggml's kvalues_mxfp4, with the half in its scale). */
const MXFP4_LEVELS = '0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 0.0, -1.0, -2.0, -3.0, -4.0, -6.0, -8.0, -12.0';

/** Nibble e (0..31) of a 32-element block's 16 packed bytes at b: low nibbles first, then high. */
const nib = (j: number, b: string, e: string) => `((u8_${j}(${b} + ((${e}) & 15u)) >> (((${e}) >> 4u) * 4u)) & 15u)`;

/** Q4_K's and Q5_K's 6-bit scale (m = 0) or minimum (m = 1) of sub-block s, from the 12 bytes at sc. */
const kScale = (j: number) => `
fn kscale${j}(sc: u32, s: u32, m: u32) -> f32 {
  if (s < 4u) { return f32(u8_${j}(sc + s + 4u * m) & 63u); }
  let hi = u8_${j}(sc + s - 4u * (1u - m)) >> 6u;
  let lo = (u8_${j}(sc + s + 4u) >> (4u * m)) & 15u;
  return f32(lo | (hi << 4u));
}`;

export interface KernelCall {
  /** WGSL after the generated header: the body of main. */
  body: string;
  /** Tensors by role: src0, src1, src2, dst, src3, src4, src5 (null when unused). */
  roles: (Tensor | null)[];
  /** u32 and f32 op parameters. */
  u: number[];
  f: number[];
  /** One thread per unit (`threads`) or one workgroup per unit (`groups`). */
  grid: 'threads' | 'groups';
  n: number;
  /** Module-scope declarations the body needs (workgroup memory). */
  shared?: string;
  /** dst is written in whole words of a byte-packed type: its start must be on a word. */
  wordWrites?: boolean;
}

// ---- WGSL pieces ------------------------------------------------------------------------

/** Module-scope helpers every kernel gets: parameter access, addressing, row reductions. */
function common(feat: GpuFeatures): string {
  return /* wgsl */ `
fn pu(i: u32) -> u32 { return p.v[i >> 2u][i & 3u]; }
fn pf(i: u32) -> f32 { return bitcast<f32>(pu(i)); }
fn base(t: u32) -> u32 { return pu(t * 9u); }
fn ne(t: u32, d: u32) -> u32 { return pu(t * 9u + 1u + d); }
fn nb(t: u32, d: u32) -> u32 { return pu(t * 9u + 5u + d); }
fn total() -> u32 { return pu(${TOTAL}u); }
fn at(t: u32, i: vec4<u32>) -> u32 { return base(t) + i.x * nb(t, 0u) + i.y * nb(t, 1u) + i.z * nb(t, 2u) + i.w * nb(t, 3u); }
fn rowat(t: u32, i1: u32, i2: u32, i3: u32) -> u32 { return base(t) + i1 * nb(t, 1u) + i2 * nb(t, 2u) + i3 * nb(t, 3u); }
fn unravel(t: u32, i: u32) -> vec4<u32> {
  let n0 = ne(t, 0u); let n1 = ne(t, 1u); let n2 = ne(t, 2u);
  return vec4<u32>(i % n0, (i / n0) % n1, (i / (n0 * n1)) % n2, i / (n0 * n1 * n2));
}
fn i8f(b: u32) -> f32 { return f32((bitcast<i32>(b) << 24u) >> 24u); }
var<workgroup> red: array<f32, ${WG}>;
${feat.subgroups ? SUBGROUP_REDUCE : TREE_REDUCE}`;
}

/**
 * Workgroup sums and maxima through shared memory: a halving tree, log2(WG) barriers.
 * Every thread gets red[0], so all agree to the bit.
 */
const TREE_REDUCE = ['sum', 'max']
  .map(
    (k) => `
fn reduce_${k}(li: u32, v: f32) -> f32 {
  red[li] = v;
  workgroupBarrier();
  for (var s = ${WG / 2}u; s > 0u; s >>= 1u) { if (li < s) { red[li] = ${k === 'sum' ? 'red[li] + red[li + s]' : 'max(red[li], red[li + s])'}; } workgroupBarrier(); }
  let r = red[0];
  workgroupBarrier();
  return r;
}`,
  )
  .join('');

/**
 * The same through subgroups: each subgroup reduces in registers, its first invocation
 * leaves the result in red[subgroup id], and every thread folds those few partials in the
 * same order (so all agree to the bit, run after run). Right for any subgroup size the
 * adapter picks (num_subgroups is what this dispatch got); two barriers.
 */
const SUBGROUP_REDUCE = `
var<private> sg_i: u32;
var<private> sg_id: u32;
var<private> sg_n: u32;${['sum', 'max']
  .map(
    (k) => `
fn reduce_${k}(li: u32, v: f32) -> f32 {
  let s = subgroup${k === 'sum' ? 'Add' : 'Max'}(v);
  if (sg_i == 0u) { red[sg_id] = s; }
  workgroupBarrier();
  var r = red[0];
  for (var g = 1u; g < sg_n; g++) { r = ${k === 'sum' ? 'r + red[g]' : 'max(r, red[g])'}; }
  workgroupBarrier();
  return r;
}`,
  )
  .join('')}`;

/**
 * Element k of the row at byte `a`, for a tensor of `type` in role j, read through bj: an
 * array<u32> (word reader wj), or for F16 where bound so (`view` f16) an array<f16>.
 */
function loader(j: number, type: number, view: View): string {
  if (view === 'f16') {
    return `
fn f16_${j}(a: u32) -> f32 { return f32(b${j}[a >> 1u]); }
fn ld${j}(a: u32, k: u32) -> f32 { return f16_${j}(a + k * nb(${j}u, 0u)); }`;
  }
  const rd = `
fn w${j}(i: u32) -> u32 { return b${j}[i]; }
fn f32_${j}(a: u32) -> f32 { return bitcast<f32>(w${j}(a >> 2u)); }
fn f16_${j}(a: u32) -> f32 { return unpack2x16float(w${j}(a >> 2u))[(a >> 1u) & 1u]; }
fn u8_${j}(a: u32) -> u32 { return (w${j}(a >> 2u) >> ((a & 3u) * 8u)) & 255u; }
fn u16_${j}(a: u32) -> u32 { return (w${j}(a >> 2u) >> ((a & 2u) * 8u)) & 65535u; }`;
  let ld: string;
  let extra = '';
  switch (type) {
    case F32:
      ld = `return f32_${j}(a + k * nb(${j}u, 0u));`;
      break;
    case F16:
      ld = `return f16_${j}(a + k * nb(${j}u, 0u));`;
      break;
    case Q8_0:
      ld = `let b = a + (k / 32u) * 34u; return f16_${j}(b) * i8f(u8_${j}(b + 2u + k % 32u));`;
      break;
    case BF16:
      ld = `return bitcast<f32>(u16_${j}(a + k * nb(${j}u, 0u)) << 16u);`;
      break;
    case Q4_0:
      ld = `let b = a + (k / 32u) * 18u; let e = k % 32u;
  return f16_${j}(b) * (f32(${nib(j, 'b + 2u', 'e')}) - 8.0);`;
      break;
    case Q4_1:
      ld = `let b = a + (k / 32u) * 20u; let e = k % 32u;
  return f16_${j}(b) * f32(${nib(j, 'b + 4u', 'e')}) + f16_${j}(b + 2u);`;
      break;
    case Q5_0:
    case Q5_1: {
      // the fifth bits: a little-endian u32 after the scale(s), bit e for element e
      const h = type === Q5_0 ? 2 : 4;
      const q = `let b = a + (k / 32u) * ${type === Q5_0 ? 22 : 24}u; let e = k % 32u;
  let hb = (u8_${j}(b + ${h}u + (e >> 3u)) >> (e & 7u)) & 1u;
  let q = f32(${nib(j, `b + ${h + 4}u`, 'e')} | (hb << 4u));`;
      ld =
        type === Q5_0
          ? `${q}
  return f16_${j}(b) * (q - 16.0);`
          : `${q}
  return f16_${j}(b) * q + f16_${j}(b + 2u);`;
      break;
    }
    case IQ4_NL:
      extra = `var<private> kv${j}: array<f32, 16> = array<f32, 16>(${IQ4_LEVELS});`;
      ld = `let b = a + (k / 32u) * 18u; let e = k % 32u;
  return f16_${j}(b) * kv${j}[${nib(j, 'b + 2u', 'e')}];`;
      break;
    case MXFP4:
      // E8M0 scale byte first; the doubled levels take 2^(e-128), ggml's half scale
      extra = `var<private> kv${j}: array<f32, 16> = array<f32, 16>(${MXFP4_LEVELS});`;
      ld = `let b = a + (k / 32u) * 17u; let e = k % 32u;
  return exp2(f32(u8_${j}(b)) - 128.0) * kv${j}[${nib(j, 'b + 1u', 'e')}];`;
      break;
    case IQ4_XS:
      // d, 8 high scale pairs (u16), 4 bytes of low scale nibbles, then 8 sub-blocks of 32
      extra = `var<private> kv${j}: array<f32, 16> = array<f32, 16>(${IQ4_LEVELS});`;
      ld = `let b = a + (k / 256u) * 136u; let e = k % 256u; let s = e / 32u;
  let lo = (u8_${j}(b + 4u + s / 2u) >> (4u * (s & 1u))) & 15u;
  let hi = (u16_${j}(b + 2u) >> (2u * s)) & 3u;
  let ls = f32(lo | (hi << 4u)) - 32.0;
  return f16_${j}(b) * ls * kv${j}[${nib(j, 'b + 8u + 16u * s', 'e % 32u')}];`;
      break;
    case Q2_K:
      // 16 scale bytes (scale | min << 4), 64 bytes of 2-bit quants, d, dmin
      ld = `let b = a + (k / 256u) * 84u; let e = k % 256u;
  let n = e / 128u; let r = e % 128u; let g = r / 32u; let l = r % 32u;
  let sc = u8_${j}(b + 8u * n + 2u * g + l / 16u);
  let q = (u8_${j}(b + 16u + 32u * n + l) >> (2u * g)) & 3u;
  return f16_${j}(b + 80u) * f32(sc & 15u) * f32(q) - f16_${j}(b + 82u) * f32(sc >> 4u);`;
      break;
    case Q3_K:
      // 32 bytes of high bits, 64 of 2-bit quants, 12 of packed 6-bit scales, d
      ld = `let b = a + (k / 256u) * 110u; let e = k % 256u;
  let n = e / 128u; let r = e % 128u; let g = r / 32u; let l = r % 32u;
  let i = 8u * n + 2u * g + l / 16u;
  let slo = select(u8_${j}(b + 96u + i - 8u) >> 4u, u8_${j}(b + 96u + i) & 15u, i < 8u);
  let shi = (u8_${j}(b + 104u + i % 4u) >> (2u * (i / 4u))) & 3u;
  let q = (u8_${j}(b + 32u + 32u * n + l) >> (2u * g)) & 3u;
  let h = (u8_${j}(b + l) >> (4u * n + g)) & 1u;
  return f16_${j}(b + 108u) * (f32(slo | (shi << 4u)) - 32.0) * (f32(q) - select(4.0, 0.0, h == 1u));`;
      break;
    case Q4_K:
    case Q5_K: {
      // d, dmin, 12 bytes of 6-bit scales and minimums, (Q5_K: 32 bytes of fifth bits,) then
      // 4 groups of 64: 32 bytes, low nibbles for the first 32 elements, high for the next
      const q5 = type === Q5_K;
      extra = kScale(j);
      ld = `let b = a + (k / 256u) * ${q5 ? 176 : 144}u; let e = k % 256u;
  let g = e / 64u; let hf = (e % 64u) / 32u; let l = e % 32u; let s = 2u * g + hf;
  var q = (u8_${j}(b + ${q5 ? 48 : 16}u + 32u * g + l) >> (4u * hf)) & 15u;
  ${q5 ? `q |= ((u8_${j}(b + 16u + l) >> s) & 1u) << 4u;` : ''}
  return f16_${j}(b) * kscale${j}(b + 4u, s, 0u) * f32(q) - f16_${j}(b + 2u) * kscale${j}(b + 4u, s, 1u);`;
      break;
    }
    case Q6_K:
      // 128 bytes of low nibbles, 64 of high bit pairs, 16 signed scales, d
      ld = `let b = a + (k / 256u) * 210u; let e = k % 256u;
  let n = e / 128u; let r = e % 128u; let g = r / 32u; let l = r % 32u;
  let lo = (u8_${j}(b + 64u * n + l + 32u * (g & 1u)) >> (4u * (g >> 1u))) & 15u;
  let hi = (u8_${j}(b + 128u + 32u * n + l) >> (2u * g)) & 3u;
  let sc = i8f(u8_${j}(b + 192u + 8u * n + l / 16u + 2u * g));
  return f16_${j}(b + 208u) * sc * (f32(lo | (hi << 4u)) - 32.0);`;
      break;
    default:
      ld = `return f32(bitcast<i32>(w${j}((a + k * nb(${j}u, 0u)) >> 2u)));`;
  }
  return `${rd}${extra}\nfn ld${j}(a: u32, k: u32) -> f32 { ${ld} }`;
}

/** The element type a storage binding is declared with. */
export type View = 'u32' | 'f16';

/** A dispatch's storage bindings and which one each role reads through. */
export interface BindPlan {
  /** Role j's binding (0-based, after the parameter block; 0 for an unused role). */
  slot: number[];
  /** Each binding: its buffer (an index into the dispatch's distinct buffers), element type, and whether written. */
  slots: { buffer: number; view: View; write: boolean }[];
}

/**
 * The bindings for a call whose role j lies in distinct buffer `buffer[j]`. dst's buffer
 * is bound once, read_write: as array<f16> only where every role in it is F16 and the
 * device reads F16 natively (`feat.f16`), else array<u32>. Every other buffer is bound
 * read-only, once per element type its roles are read through.
 */
export function bindPlan(call: KernelCall, buffer: number[], feat: GpuFeatures): BindPlan {
  const written = buffer[3];
  const want = call.roles.map((t): View => (t && feat.f16 && t.type === F16 ? 'f16' : 'u32'));
  const mixed = call.roles.some((t, j) => t && buffer[j] === written && want[j] !== 'f16');
  const slots: BindPlan['slots'] = [];
  const slot = call.roles.map((t, j) => {
    if (!t) return 0;
    const write = buffer[j] === written;
    const view = write && mixed ? 'u32' : want[j];
    let k = slots.findIndex((b) => b.buffer === buffer[j] && b.view === view);
    if (k < 0) k = slots.push({ buffer: buffer[j], view, write }) - 1;
    return k;
  });
  return { slot, slots };
}

/** The plan's binding kinds for the pipeline layout (`w` written, `r` read-only). */
export function bindingKinds(plan: BindPlan): BindingKinds {
  return plan.slots.map((b) => (b.write ? 'w' : 'r')).join('');
}

/**
 * The shader for a call: parameters, its bindings (bindPlan), each role's readers
 * (`ld0..2`, `ld3` for dst, …) and the dst writers: `st` (F32), `st2` (two F16) and `stw`
 * (a word) where dst is bound as array<u32>, `st2` alone where as array<f16>.
 */
export function shaderSource(call: KernelCall, plan: BindPlan, feat: GpuFeatures): string {
  let s = feat.subgroups ? 'enable subgroups;\n' : '';
  if (plan.slots.some((b) => b.view === 'f16')) s += 'enable f16;\n';
  s += `struct P { v: array<vec4<u32>, ${PARAM_BYTES / 16}> }\n@group(0) @binding(0) var<uniform> p: P;\n`;
  for (const [b, { view, write }] of plan.slots.entries())
    s += `@group(0) @binding(${b + 1}) var<storage, ${write ? 'read_write' : 'read'}> buf${b}: array<${view}>;\n`;
  s += common(feat);
  call.roles.forEach((t, j) => {
    if (!t) return;
    // role j reads through bj, an alias for its binding's array
    s += loader(j, t.type, plan.slots[plan.slot[j]].view).replaceAll(`b${j}[`, `buf${plan.slot[j]}[`);
  });
  const d = `buf${plan.slot[3]}`;
  s += call.shared ?? '';
  s +=
    plan.slots[plan.slot[3]].view === 'f16'
      ? `
fn st2(a: u32, v0: f32, v1: f32) { ${d}[a >> 1u] = f16(v0); ${d}[(a >> 1u) + 1u] = f16(v1); }`
      : `
fn st(a: u32, v: f32) { ${d}[a >> 2u] = bitcast<u32>(v); }
fn st2(a: u32, v0: f32, v1: f32) { ${d}[a >> 2u] = pack2x16float(vec2<f32>(v0, v1)); }
fn stw(w: u32, v: u32) { ${d}[w] = v; }`;
  s += `
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(local_invocation_index) li: u32,
        @builtin(workgroup_id) wid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>${
          feat.subgroups
            ? `,
        @builtin(subgroup_invocation_id) sgi: u32, @builtin(subgroup_id) sgid: u32, @builtin(num_subgroups) nsg: u32`
            : ''
        }) {
  let gi = gid.x + gid.y * nwg.x * ${WG}u;
  let wi = wid.x + wid.y * nwg.x;${feat.subgroups ? '\n  sg_i = sgi; sg_id = sgid; sg_n = nsg;' : ''}
${call.body}
}
`;
  return s;
}

// ---- kernels ------------------------------------------------------------------------------

const UNARY: Partial<Record<Op, [number, string]>> = {
  [Op.SCALE]: [0, `x * pf(${F}u) + pf(${F + 1}u)`],
  [Op.SILU]: [1, 'x / (1.0 + exp(-x))'],
  [Op.GELU]: [2, '0.5 * x * (1.0 + tanh(clamp(0.7978845608 * (x + 0.044715 * x * x * x), -15.0, 15.0)))'],
  [Op.TANH]: [3, 'tanh(clamp(x, -15.0, 15.0))'],
  [Op.RELU]: [4, 'max(x, 0.0)'],
  [Op.SQR]: [5, 'x * x'],
  [Op.SIGMOID]: [6, '1.0 / (1.0 + exp(-x))'],
  [Op.SOFTPLUS]: [7, 'select(log(1.0 + exp(x)), x, x > 20.0)'],
  [Op.CLAMP]: [8, `clamp(x, pf(${F}u), pf(${F + 1}u))`],
};
const BINARY: Partial<Record<Op, string>> = {
  [Op.ADD]: 'a + b',
  [Op.MUL]: 'a * b',
  [Op.DIV]: 'a / b',
  // gpt-oss's clamped SwiGLU: gate a, up b of one shape; alpha and the limit in F
  [Op.SWIGLU_OAI]: `swiglu_oai(min(a, pf(${F + 1}u)), clamp(b, -pf(${F + 1}u), pf(${F + 1}u)))`,
};

/** The f32 parameters of an elementwise op. */
function elementwiseParams(t: Tensor): number[] {
  const p = t.params;
  if (t.op === Op.SCALE) return [p.scale, p.bias ?? 0];
  if (t.op === Op.CLAMP) return [p.min, p.max];
  if (t.op === Op.SWIGLU_OAI) return [p.alpha, p.limit];
  return [];
}

/** One thread per element of dst (F32), reading src0 at the same index. */
function unary(t: Tensor, expr: string): KernelCall {
  const body = `
  if (gi >= total()) { return; }
  let i = unravel(3u, gi);
  let x = ld0(rowat(0u, i.y, i.z, i.w), i.x);
  st(at(3u, i), ${expr});`;
  return { body, roles: [t.src[0], null, null, t], u: [], f: elementwiseParams(t), grid: 'threads', n: t.nelements };
}

function binary(t: Tensor, expr: string): KernelCall {
  const body = `
  if (gi >= total()) { return; }
  let i = unravel(3u, gi);
  let j = vec4<u32>(i.x % ne(1u, 0u), i.y % ne(1u, 1u), i.z % ne(1u, 2u), i.w % ne(1u, 3u));
  let a = ld0(rowat(0u, i.y, i.z, i.w), i.x);
  let b = ld1(rowat(1u, j.y, j.z, j.w), j.x);
  st(at(3u, i), ${expr});`;
  const shared =
    t.op === Op.SWIGLU_OAI
      ? `fn swiglu_oai(x: f32, y: f32) -> f32 { return x / (1.0 + exp(-pf(${F}u) * x)) * (y + 1.0); }`
      : '';
  const f = elementwiseParams(t);
  return { body, roles: [t.src[0], t.src[1], null, t], u: [], f, grid: 'threads', n: t.nelements, shared };
}

/** Row index of workgroup wi over dst's rows. */
const ROW = `
  if (wi >= total()) { return; }
  let i1 = wi % ne(3u, 1u); let i2 = (wi / ne(3u, 1u)) % ne(3u, 2u); let i3 = wi / (ne(3u, 1u) * ne(3u, 2u));
  let n = ne(3u, 0u);`;

function norm(t: Tensor, centre: boolean): KernelCall {
  const body = `${ROW}
  let ra = rowat(0u, i1, i2, i3); let rd = rowat(3u, i1, i2, i3);
  var mean = 0.0;
  if (pu(${U}u) == 1u) {
    var s = 0.0;
    for (var k = li; k < n; k += ${WG}u) { s += ld0(ra, k); }
    mean = reduce_sum(li, s) / f32(n);
  }
  var s2 = 0.0;
  for (var k = li; k < n; k += ${WG}u) { let x = ld0(ra, k) - mean; s2 += x * x; }
  let scale = 1.0 / sqrt(reduce_sum(li, s2) / f32(n) + pf(${F}u));
  for (var k = li; k < n; k += ${WG}u) { st(rd + k * nb(3u, 0u), (ld0(ra, k) - mean) * scale); }`;
  return { body, roles: [t.src[0], null, null, t], u: [centre ? 1 : 0], f: [t.params.eps], grid: 'groups', n: t.nrows };
}

/** L2_NORM: x / max(|x|, eps) per row. */
function l2Norm(t: Tensor): KernelCall {
  const body = `${ROW}
  let ra = rowat(0u, i1, i2, i3); let rd = rowat(3u, i1, i2, i3);
  var s2 = 0.0;
  for (var k = li; k < n; k += ${WG}u) { let x = ld0(ra, k); s2 += x * x; }
  let scale = 1.0 / max(sqrt(reduce_sum(li, s2)), pf(${F}u));
  for (var k = li; k < n; k += ${WG}u) { st(rd + k * nb(3u, 0u), ld0(ra, k) * scale); }`;
  return { body, roles: [t.src[0], null, null, t], u: [], f: [t.params.eps], grid: 'groups', n: t.nrows };
}

/** SUM_ROWS: a workgroup per row of src0, its sum in dst's element 0 of that row. */
function sumRows(t: Tensor): KernelCall {
  const body = `
  if (wi >= total()) { return; }
  let i1 = wi % ne(0u, 1u); let i2 = (wi / ne(0u, 1u)) % ne(0u, 2u); let i3 = wi / (ne(0u, 1u) * ne(0u, 2u));
  let ra = rowat(0u, i1, i2, i3);
  var s = 0.0;
  for (var k = li; k < ne(0u, 0u); k += ${WG}u) { s += ld0(ra, k); }
  let sum = reduce_sum(li, s);
  if (li == 0u) { st(rowat(3u, i1, i2, i3), sum); }`;
  return { body, roles: [t.src[0], null, null, t], u: [], f: [], grid: 'groups', n: t.src[0].nrows };
}

/** ADD_ID: dst[k, i, t] = a[k, i, t] + b[k, ids[i, t]] (a thread per element). */
function addId(t: Tensor): KernelCall {
  const [a, b, ids] = t.src;
  const body = `
  if (gi >= total()) { return; }
  let i = unravel(3u, gi);
  let e = w2(at(2u, vec4<u32>(i.y, i.z, 0u, 0u)) >> 2u);
  st(at(3u, i), ld0(rowat(0u, i.y, i.z, i.w), i.x) + ld1(rowat(1u, e, 0u, 0u), i.x));`;
  return { body, roles: [a, b, ids, t], u: [], f: [], grid: 'threads', n: t.nelements };
}

function softMax(t: Tensor): KernelCall {
  const mask = t.src[1] ?? null;
  const val = mask ? 'ld0(ra, k) * sc + slope * ld1(rm, k)' : 'ld0(ra, k) * sc';
  // ALiBi: head i2's slope, m0^(i2+1) below nHeadLog2, m1^(2(i2-nHeadLog2)+1) above
  const { m0, m1, nHeadLog2 } = alibiBases(t.ne[2], t.params.maxBias ?? 0);
  const body = `${ROW}
  let ra = rowat(0u, i1, i2, i3); let rd = rowat(3u, i1, i2, i3);
  ${mask ? 'let rm = rowat(1u, i1, i2 % ne(1u, 2u), i3 % ne(1u, 3u));' : ''}
  let sc = pf(${F}u);
  var slope = 1.0;
  if (pf(${F + 1}u) > 0.0) {
    let h = f32(i2); let hl = f32(pu(${U}u));
    slope = select(pow(pf(${F + 3}u), 2.0 * (h - hl) + 1.0), pow(pf(${F + 2}u), h + 1.0), i2 < pu(${U}u));
  }
  var m = -3.0e38;
  for (var k = li; k < n; k += ${WG}u) { m = max(m, ${val}); }
  let mx = reduce_max(li, m);
  var s = 0.0;
  for (var k = li; k < n; k += ${WG}u) { s += exp(${val} - mx); }
  let sum = reduce_sum(li, s);
  for (var k = li; k < n; k += ${WG}u) { st(rd + k * nb(3u, 0u), exp(${val} - mx) / sum); }`;
  const f = [t.params.scale, t.params.maxBias ?? 0, m0, m1];
  return { body, roles: [t.src[0], mask, null, t], u: [nHeadLog2], f, grid: 'groups', n: t.nrows };
}

/**
 * One thread per rotated pair (and per passed-through element past nDims): a thread writes
 * both elements it reads, so the op may run in place.
 */
function rope(t: Tensor): KernelCall {
  const p = t.params;
  const ff = t.src[2] ?? null;
  const half = p.nDims / 2;
  const [c0, c1] = yarnCorrDims(p.nDims, p.nCtxOrig, p.freqBase, p.betaFast, p.betaSlow);
  const mscale = p.attnFactor * (p.extFactor !== 0 ? 1 + 0.1 * Math.log(1 / p.freqScale) : 1);
  const per = t.ne[0] - half;
  const body = `
  if (gi >= total()) { return; }
  let per = ne(3u, 0u) - pu(${U}u) / 2u;
  let u = gi % per; let r = gi / per;
  let i1 = r % ne(3u, 1u); let i2 = (r / ne(3u, 1u)) % ne(3u, 2u); let i3 = r / (ne(3u, 1u) * ne(3u, 2u));
  let ra = rowat(0u, i1, i2, i3); let rd = rowat(3u, i1, i2, i3);
  let nd = pu(${U}u); let half = nd / 2u;
  if (u >= half) {
    let k = nd + (u - half);
    st(rd + k * nb(3u, 0u), ld0(ra, k));
    return;
  }
  var j0 = 2u * u; var j1 = 2u * u + 1u;
  if (pu(${U + 1}u) == 1u) { j0 = u; j1 = u + half; }
  let pos = f32(bitcast<i32>(w1((base(1u) + i2 * nb(1u, 0u)) >> 2u)));
  var extrap = pos * exp2(-2.0 * f32(u) / f32(nd) * pf(${F + 5}u));
  ${ff ? `extrap = extrap / ld2(base(2u), u);` : ''}
  let interp = pf(${F}u) * extrap;
  var theta = interp;
  if (pf(${F + 1}u) != 0.0) {
    let y = (f32(u) - pf(${F + 3}u)) / max(0.001, pf(${F + 4}u) - pf(${F + 3}u));
    let mix = (1.0 - min(1.0, max(0.0, y))) * pf(${F + 1}u);
    theta = interp * (1.0 - mix) + extrap * mix;
  }
  // sin and cos are accurate near zero: reduce by 2 pi in two parts first
  let k2 = round(theta * 0.15915494309189535);
  let th = fma(k2, -6.28125, theta) - k2 * 0.0019353071795864769;
  let c = cos(th) * pf(${F + 2}u); let s = sin(th) * pf(${F + 2}u);
  let x0 = ld0(ra, j0); let x1 = ld0(ra, j1);
  st(rd + j0 * nb(3u, 0u), x0 * c - x1 * s);
  st(rd + j1 * nb(3u, 0u), x0 * s + x1 * c);`;
  return {
    body,
    roles: [t.src[0], t.src[1], ff, t],
    u: [p.nDims, (p.mode & RopeMode.NEOX) !== 0 ? 1 : 0],
    f: [p.freqScale, p.extFactor, mscale, c0, c1, Math.log2(p.freqBase)],
    grid: 'threads',
    n: per * t.nrows,
  };
}

/** CONCAT along dim: one thread per dst element, read from a below a's extent there, b above. */
function concat(t: Tensor): KernelCall {
  const body = `
  if (gi >= total()) { return; }
  let i = unravel(3u, gi);
  let dim = pu(${U}u);
  let na = ne(0u, dim);
  var v: f32;
  if (i[dim] < na) { v = ld0(at(0u, i), 0u); } else {
    var j = i; j[dim] = i[dim] - na;
    v = ld1(at(1u, j), 0u);
  }
  st(at(3u, i), v);`;
  return { body, roles: [t.src[0], t.src[1], null, t], u: [t.params.dim], f: [], grid: 'threads', n: t.nelements };
}

function getRows(t: Tensor): KernelCall {
  const body = `
  if (gi >= total()) { return; }
  let i = unravel(3u, gi);
  let r = bitcast<i32>(w1(at(1u, vec4<u32>(i.y, i.z, i.w, 0u)) >> 2u));
  st(at(3u, i), ld0(base(0u) + u32(r) * nb(0u, 1u) + i.z * nb(0u, 2u) + i.w * nb(0u, 3u), i.x));`;
  return { body, roles: [t.src[0], t.src[1], null, t], u: [], f: [], grid: 'threads', n: t.nelements };
}

/**
 * CPY / CONT: element e of src (in its logical order) to element e of dst. An F16 dst is
 * written a word (two elements of one row) per thread.
 */
function copy(t: Tensor): KernelCall {
  const one = `ld0(rowat(0u, s.y, s.z, s.w), s.x)`;
  const body =
    t.type === F32
      ? `
  if (gi >= total()) { return; }
  let s = unravel(0u, gi);
  st(at(3u, unravel(3u, gi)), ${one});`
      : `
  if (gi >= total()) { return; }
  var s = unravel(0u, 2u * gi);
  let v0 = ${one};
  s = unravel(0u, 2u * gi + 1u);
  st2(at(3u, unravel(3u, 2u * gi)), v0, ${one});`;
  return {
    body,
    roles: [t.src[0], null, null, t],
    u: [],
    f: [],
    grid: 'threads',
    n: t.type === F32 ? t.nelements : t.nelements / 2,
  };
}

/** The destination row of SET_ROWS for src row (i.y, i.z, i.w): rd, and the src row ra. */
const SET_ROW = `
  let r = w1(at(1u, vec4<u32>(i.y, i.z % ne(1u, 1u), i.w % ne(1u, 2u), 0u)) >> 2u);
  let rd = base(3u) + r * nb(3u, 1u) + i.z * nb(3u, 2u) + i.w * nb(3u, 3u);
  let ra = rowat(0u, i.y, i.z, i.w);`;

/**
 * SET_ROWS into a Q8_0 cache (a q8_0 KV cache): one thread per two 32-element blocks, 68
 * bytes = 17 whole words (rows start on words), so no two threads share a word. Quantized
 * as ggml's quantize_row_q8_0_ref: d = amax / 127, q = round(x / d) half away from zero.
 */
function setRowsQ8(t: Tensor): KernelCall {
  const [b, idx] = t.src;
  const body = `
  if (gi >= total()) { return; }
  let np = ne(0u, 0u) / 64u;
  let i = unravel(0u, (gi / np) * ne(0u, 0u));${SET_ROW}
  let pr = gi % np;
  var w: array<u32, 17>;
  for (var h = 0u; h < 2u; h++) {
    let k0 = pr * 64u + h * 32u;
    var amax = 0.0;
    for (var j = 0u; j < 32u; j++) { amax = max(amax, abs(ld0(ra, k0 + j))); }
    let d = amax / 127.0;
    let id = select(0.0, 1.0 / d, d != 0.0);
    let o = h * 34u;
    w[o >> 2u] |= (pack2x16float(vec2<f32>(d, 0.0)) & 65535u) << ((o & 3u) * 8u);
    for (var j = 0u; j < 32u; j++) {
      let x = ld0(ra, k0 + j) * id;
      let q = u32(i32(sign(x) * floor(abs(x) + 0.5))) & 255u;
      let e = o + 2u + j;
      w[e >> 2u] |= q << ((e & 3u) * 8u);
    }
  }
  let wd = (rd + pr * 68u) >> 2u;
  for (var k = 0u; k < 17u; k++) { stw(wd + k, w[k]); }`;
  return { body, roles: [b, idx, null, t], u: [], f: [], grid: 'threads', n: b.nelements / 64, wordWrites: true };
}

/** SET_ROWS: row i1 of b goes to row idx[i1, i2 % .., i3 % ..] of dst (I64 indices: their low word). */
function setRows(t: Tensor): KernelCall {
  const [b, idx] = t.src;
  const dst = (one: string) => `
${SET_ROW}
  ${one}`;
  const body =
    t.type === F32
      ? `
  if (gi >= total()) { return; }
  let i = unravel(0u, gi);${dst('st(rd + i.x * nb(3u, 0u), ld0(ra, i.x));')}`
      : `
  if (gi >= total()) { return; }
  let i = unravel(0u, 2u * gi);${dst('st2(rd + i.x * 2u, ld0(ra, i.x), ld0(ra, i.x + 1u));')}`;
  return {
    body,
    roles: [b, idx, null, t],
    u: [],
    f: [],
    grid: 'threads',
    n: t.type === F32 ? b.nelements : b.nelements / 2,
  };
}

/**
 * MUL_MAT: a workgroup per MM_ROWS rows of a, up to MM_COLS columns of b and a batch; each
 * row's WG / MM_ROWS threads stride over K, every weight element decoded once for all the
 * columns, then each column's partial sums are added per row.
 */
function mulMat(t: Tensor): KernelCall {
  const [a, b] = t.src;
  const cols = t.ne[1] === 1 ? 1 : MM_COLS;
  const lanes = WG / MM_ROWS;
  const body = `
  if (wi >= total()) { return; }
  let M = ne(3u, 0u); let N = ne(3u, 1u); let nt = (N + ${cols - 1}u) / ${cols}u;
  let nrb = (M + ${MM_ROWS - 1}u) / ${MM_ROWS}u;
  let rb = wi % nrb; var q = wi / nrb; let c0 = (q % nt) * ${cols}u; q = q / nt;
  let i2 = q % ne(3u, 2u); let i3 = q / ne(3u, 2u);
  let lane = li % ${lanes}u; let m = rb * ${MM_ROWS}u + li / ${lanes}u;
  let valid = m < M;
  let ra = rowat(0u, min(m, M - 1u), i2 / (ne(1u, 2u) / ne(0u, 2u)), i3 / (ne(1u, 3u) / ne(0u, 3u)));
  let K = ne(0u, 0u);
  var acc: array<f32, ${cols}>;
  if (valid) {
    for (var k = lane; k < K; k += ${lanes}u) {
      let av = ld0(ra, k);
      for (var c = 0u; c < ${cols}u; c++) {
        if (c0 + c < N) { acc[c] += av * ld1(rowat(1u, c0 + c, i2, i3), k); }
      }
    }
  }
  for (var c = 0u; c < ${cols}u; c++) {
    red[li] = acc[c];
    workgroupBarrier();
    for (var s = ${lanes / 2}u; s > 0u; s >>= 1u) { if (lane < s) { red[li] += red[li + s]; } workgroupBarrier(); }
    if (lane == 0u && valid && c0 + c < N) {
      st(base(3u) + m * nb(3u, 0u) + (c0 + c) * nb(3u, 1u) + i2 * nb(3u, 2u) + i3 * nb(3u, 3u), red[li]);
    }
    workgroupBarrier();
  }`;
  const groups = Math.ceil(t.ne[0] / MM_ROWS) * Math.ceil(t.ne[1] / cols) * t.ne[2] * t.ne[3];
  return { body, roles: [a, b, null, t], u: [], f: [], grid: 'groups', n: groups };
}

/** Subgroups a workgroup can have at most: WebGPU's smallest subgroup size is 4. */
const MAX_SUBGROUPS = WG / 4;

/**
 * A matrix-vector product with subgroups (MUL_MAT of one column, MUL_MAT_ID): a workgroup
 * per MM_ROWS rows of a; all WG threads stride over K together (neighbours read
 * neighbouring weights), each b element read once for every row. Each row's partial sums
 * are added by subgroupAdd, the subgroups' results left in workgroup memory and added by
 * that row's thread in subgroup order: one barrier instead of a tree, the same bits every
 * run. `setup` names M, rb (the row block), a2/a3 (a's batch), ok (a row to compute),
 * xr (b's row) and out (dst's column).
 */
function matVecSubgroups(setup: string): string {
  return `
  if (wi >= total()) { return; }
  let M = ne(3u, 0u); let nrb = (M + ${MM_ROWS - 1}u) / ${MM_ROWS}u; let rb = wi % nrb;
  ${setup}
  let K = ne(0u, 0u);
  var ra: array<u32, ${MM_ROWS}>;
  for (var r = 0u; r < ${MM_ROWS}u; r++) { ra[r] = rowat(0u, min(rb * ${MM_ROWS}u + r, M - 1u), a2, a3); }
  var acc: array<f32, ${MM_ROWS}>;
  if (ok) {
    for (var k = li; k < K; k += ${WG}u) {
      let x = ld1(xr, k);
      for (var r = 0u; r < ${MM_ROWS}u; r++) { acc[r] += ld0(ra[r], k) * x; }
    }
  }
  for (var r = 0u; r < ${MM_ROWS}u; r++) {
    let s = subgroupAdd(acc[r]);
    if (sg_i == 0u) { part[r * ${MAX_SUBGROUPS}u + sg_id] = s; }
  }
  workgroupBarrier();
  let m = rb * ${MM_ROWS}u + li;
  if (li < ${MM_ROWS}u && m < M && ok) {
    var sum = part[li * ${MAX_SUBGROUPS}u];
    for (var g = 1u; g < sg_n; g++) { sum += part[li * ${MAX_SUBGROUPS}u + g]; }
    st(out + m * nb(3u, 0u), sum);
  }`;
}

const MATVEC_SHARED = `var<workgroup> part: array<f32, ${MM_ROWS * MAX_SUBGROUPS}>;`;

/** MUL_MAT of a single column of b (decoding) with subgroups: matVecSubgroups. */
function mulMatVec(t: Tensor): KernelCall {
  const [a, b] = t.src;
  const body = matVecSubgroups(`let q = wi / nrb; let i2 = q % ne(3u, 2u); let i3 = q / ne(3u, 2u);
  let a2 = i2 / (ne(1u, 2u) / ne(0u, 2u)); let a3 = i3 / (ne(1u, 3u) / ne(0u, 3u));
  let ok = true; let xr = rowat(1u, 0u, i2, i3); let out = base(3u) + i2 * nb(3u, 2u) + i3 * nb(3u, 3u);`);
  const groups = Math.ceil(t.ne[0] / MM_ROWS) * t.ne[2] * t.ne[3];
  return { body, roles: [a, b, null, t], u: [], f: [], grid: 'groups', n: groups, shared: MATVEC_SHARED };
}

/**
 * MUL_MAT_ID: dst[:, i, t] = as[:, :, ids[i, t]] · b[:, i % nB, t]. A workgroup per
 * MM_ROWS rows of the chosen expert, slot i and token t; rows split over lanes as in MUL_MAT.
 */
function mulMatId(t: Tensor, feat: GpuFeatures): KernelCall {
  const [as, b, ids] = t.src;
  const lanes = WG / MM_ROWS;
  const groups = Math.ceil(t.ne[0] / MM_ROWS) * t.ne[1] * t.ne[2];
  if (feat.subgroups) {
    const body = matVecSubgroups(`let slot = (wi / nrb) % ne(3u, 1u); let tok = wi / (nrb * ne(3u, 1u));
  let e = w2(at(2u, vec4<u32>(slot, tok, 0u, 0u)) >> 2u);
  let ok = e < ne(0u, 2u); let a2 = min(e, ne(0u, 2u) - 1u); let a3 = 0u;
  let xr = rowat(1u, slot % ne(1u, 1u), tok, 0u); let out = base(3u) + slot * nb(3u, 1u) + tok * nb(3u, 2u);`);
    return { body, roles: [as, b, ids, t], u: [], f: [], grid: 'groups', n: groups, shared: MATVEC_SHARED };
  }
  const body = `
  if (wi >= total()) { return; }
  let M = ne(3u, 0u); let nrb = (M + ${MM_ROWS - 1}u) / ${MM_ROWS}u;
  let rb = wi % nrb; let slot = (wi / nrb) % ne(3u, 1u); let tok = wi / (nrb * ne(3u, 1u));
  let e = w2(at(2u, vec4<u32>(slot, tok, 0u, 0u)) >> 2u);
  let lane = li % ${lanes}u; let m = rb * ${MM_ROWS}u + li / ${lanes}u;
  let valid = m < M && e < ne(0u, 2u);
  let ra = rowat(0u, min(m, M - 1u), min(e, ne(0u, 2u) - 1u), 0u);
  let rb1 = rowat(1u, slot % ne(1u, 1u), tok, 0u);
  var acc = 0.0;
  if (valid) {
    for (var k = lane; k < ne(0u, 0u); k += ${lanes}u) { acc += ld0(ra, k) * ld1(rb1, k); }
  }
  red[li] = acc;
  workgroupBarrier();
  for (var s = ${lanes / 2}u; s > 0u; s >>= 1u) { if (lane < s) { red[li] += red[li + s]; } workgroupBarrier(); }
  if (lane == 0u && valid) { st(base(3u) + m * nb(3u, 0u) + slot * nb(3u, 1u) + tok * nb(3u, 2u), red[li]); }`;
  return { body, roles: [as, b, ids, t], u: [], f: [], grid: 'groups', n: groups };
}

/** SSM_CONV: a thread per output (channel, token, sequence): dConv products along the row. */
function ssmConv(t: Tensor): KernelCall {
  const [sx, c] = t.src;
  const body = `
  if (gi >= total()) { return; }
  let i = unravel(3u, gi);
  let rs = rowat(0u, i.x, i.z, 0u); let rc = rowat(1u, i.x, 0u, 0u);
  var sum = 0.0;
  for (var k = 0u; k < ne(1u, 0u); k++) { sum += ld0(rs, i.y + k) * ld1(rc, k); }
  st(at(3u, i), sum);`;
  return { body, roles: [sx, c, null, t], u: [], f: [], grid: 'threads', n: t.nelements };
}

/**
 * SSM_SCAN: a thread per channel (d, head, sequence), the scan over its tokens; its
 * dState-long state lives in dst's state part, updated in place token by token.
 * Roles: s0, x, dt, dst, A, B, C.
 */
function ssmScan(t: Tensor): KernelCall {
  const [s0, x, dt, A, B, C] = t.src;
  const body = `
  if (gi >= total()) { return; }
  let N = ne(0u, 0u); let D = ne(0u, 1u); let H = ne(0u, 2u);
  let d = gi % D; let h = (gi / D) % H; let s = gi / (D * H);
  let T = ne(1u, 2u); let g = h / (H / ne(5u, 1u));
  let so = base(3u) + 4u * (ne(1u, 0u) * ne(1u, 1u) * T * ne(1u, 3u) + N * gi);
  let r0 = rowat(0u, d, h, s);
  for (var i = 0u; i < N; i++) { st(so + 4u * i, ld0(r0, i)); }
  let ra = rowat(4u, h, 0u, 0u);
  for (var tk = 0u; tk < T; tk++) {
    let dv = ld2(rowat(2u, tk, s, 0u), h);
    let dsp = select(log(1.0 + exp(dv)), dv, dv > 20.0);
    let xdt = ld1(rowat(1u, h, tk, s), d) * dsp;
    let rb = rowat(5u, g, tk, s); let rc = rowat(6u, g, tk, s);
    var y = 0.0;
    for (var i = 0u; i < N; i++) {
      let decay = exp(dsp * ld4(ra, select(i, 0u, ne(4u, 0u) == 1u)));
      let v = ld3(so, i) * decay + ld5(rb, i) * xdt;
      st(so + 4u * i, v);
      y += v * ld6(rc, i);
    }
    st(base(3u) + 4u * (d + D * (h + H * (tk + T * s))), y);
  }`;
  return { body, roles: [s0, x, dt, t, A, B, C], u: [], f: [], grid: 'threads', n: s0.ne[1] * s0.ne[2] * s0.ne[3] };
}

/**
 * GATED_DELTA_NET: a thread per state row j of a value head and sequence. Every step of
 * the rule reads and writes row j alone (decay, k·row, the delta, row += delta·k, q·row),
 * so the row lives in dst's state part, updated in place token by token.
 * Roles: q, k, v, dst, g, beta, state.
 */
function gatedDeltaNet(t: Tensor): KernelCall {
  const [q, k, v, g, beta, state] = t.src;
  const S = v.ne[0];
  const body = `
  if (gi >= total()) { return; }
  let S = ne(2u, 0u); let Hv = ne(2u, 1u); let T = ne(2u, 2u); let nS = ne(2u, 3u);
  let j = gi % S; let h = (gi / S) % Hv; let s = gi / (S * Hv);
  let hk = h % ne(0u, 1u);
  let row = base(3u) + 4u * (S * Hv * T * nS + S * (j + S * (h + Hv * s)));
  let r0 = rowat(6u, j, h, s);
  for (var i = 0u; i < S; i++) { st(row + 4u * i, ld6(r0, i)); }
  let per = ne(4u, 0u) == S;
  for (var tk = 0u; tk < T; tk++) {
    let rg = rowat(4u, h, tk, s); let rk = rowat(1u, hk, tk, s); let rq = rowat(0u, hk, tk, s);
    var dot = 0.0;
    for (var i = 0u; i < S; i++) {
      let m = ld3(row, i) * exp(ld4(rg, select(0u, i, per)));
      st(row + 4u * i, m);
      dot += m * ld1(rk, i);
    }
    let delta = (ld2(rowat(2u, h, tk, s), j) - dot) * ld5(rowat(5u, h, tk, s), 0u);
    var o = 0.0;
    for (var i = 0u; i < S; i++) {
      let m = ld3(row, i) + delta * ld1(rk, i);
      st(row + 4u * i, m);
      o += m * ld0(rq, i);
    }
    st(base(3u) + 4u * (j + S * (h + Hv * (tk + T * s))), o * pf(${F}u));
  }`;
  return {
    body,
    roles: [q, k, v, t, g, beta, state],
    u: [],
    f: [1 / Math.sqrt(S)],
    grid: 'threads',
    n: S * v.ne[1] * v.ne[3],
  };
}

/**
 * FLASH_ATTN_EXT: a workgroup per (query, head, batch). Keys go in blocks of WG: each
 * thread scores one key of the block (its whole dot product), then every thread folds the
 * block's softmax weights into the output dimensions it owns (online softmax: running
 * maximum and sum, earlier sums rescaled when the maximum grows).
 */
function flashAttn(t: Tensor): KernelCall {
  const [q, k, v, mask, sinks] = t.src;
  const per = Math.ceil(FA_MAX_D / WG);
  const body = `
  if (wi >= total()) { return; }
  let D = ne(0u, 0u); let Dv = ne(2u, 0u); let nKV = ne(1u, 1u);
  let h = wi % ne(0u, 2u); let iq = (wi / ne(0u, 2u)) % ne(0u, 1u); let i3 = wi / (ne(0u, 2u) * ne(0u, 1u));
  let hk = h / (ne(0u, 2u) / ne(1u, 2u)); let k3 = i3 / (ne(0u, 3u) / ne(1u, 3u));
  let rq = rowat(0u, iq, h, i3);
  for (var d = li; d < D; d += ${WG}u) { qs[d] = ld0(rq, d); }
  ${mask ? 'let rm = rowat(4u, iq, h % ne(4u, 2u), i3 % ne(4u, 3u));' : ''}
  workgroupBarrier();
  let scale = pf(${F}u); let cap = pf(${F + 1}u);
  var M = -3.0e38; var S = 0.0;
  var acc: array<f32, ${per}>;
  for (var j0 = 0u; j0 < nKV; j0 += ${WG}u) {
    let j = j0 + li;
    var s = -3.0e38;
    if (j < nKV) {
      let rk = rowat(1u, j, hk, k3);
      var dot = 0.0;
      for (var d = 0u; d < D; d++) { dot += qs[d] * ld1(rk, d); }
      s = dot * scale;
      if (cap != 0.0) { s = cap * tanh(clamp(s / cap, -15.0, 15.0)); }
      ${mask ? 's += ld4(rm, j);' : ''}
    }
    red[li] = s;
    workgroupBarrier();
    let nk = min(${WG}u, nKV - j0);
    var bm = M;
    for (var c = 0u; c < nk; c++) { bm = max(bm, red[c]); }
    let corr = exp(M - bm);
    S *= corr;
    for (var e = 0u; e < ${per}u; e++) { acc[e] *= corr; }
    for (var c = 0u; c < nk; c++) {
      let pw = exp(red[c] - bm);
      S += pw;
      if (pw != 0.0) {
        let rv = rowat(2u, j0 + c, hk, k3);
        for (var e = 0u; e < ${per}u; e++) {
          let d = li + e * ${WG}u;
          if (d < Dv) { acc[e] += pw * ld2(rv, d); }
        }
      }
    }
    M = bm;
    workgroupBarrier();
  }
  ${
    sinks
      ? `// the head's sink: one more score in the softmax's sum, with no value
  let sk = ld5(base(5u), h); let m2 = max(M, sk); let cs = exp(M - m2);
  S = S * cs + exp(sk - m2);
  for (var e = 0u; e < ${per}u; e++) { acc[e] *= cs; }`
      : ''
  }
  let inv = select(0.0, 1.0 / S, S > 0.0);
  for (var e = 0u; e < ${per}u; e++) {
    let d = li + e * ${WG}u;
    if (d < Dv) { st(at(3u, vec4<u32>(d, h, iq, i3)), acc[e] * inv); }
  }`;
  return {
    body: `${body}`,
    roles: [q, k, v, t, mask ?? null, sinks ?? null],
    u: [],
    f: [t.params.scale, t.params.logitSoftcap ?? 0],
    grid: 'groups',
    n: q.ne[1] * q.ne[2] * q.ne[3],
    shared: `var<workgroup> qs: array<f32, ${FA_MAX_D}>;`,
  };
}

/**
 * ARGSORT: a thread per row runs libstdc++'s std::sort (ggml-cpu's) step for step, as the
 * reference device's stdSort does, on the row's indices in dst: median-of-three quicksort
 * down to 16-element runs, heapsort past 2·floor(log2 n) levels, then insertion sort, so
 * equal values (a router's tied experts) come out in ggml-cpu's order. Recursion becomes a
 * stack of ranges (they are disjoint: any order gives the same result; the stack's depths
 * fall strictly, so it holds at most 2·31 + 1). The loops std leaves unguarded (a valid
 * order guarantees a sentinel) stop at their range's ends, never outside the row.
 */
function argsortKernel(t: Tensor): KernelCall {
  const shared = `
var<private> sr: u32;
var<private> dw: i32;
var<private> desc: bool;
fn less(a: u32, b: u32) -> bool {
  let x = ld0(sr, a); let y = ld0(sr, b);
  return select((x < y), (x > y), desc);
}
fn ix(i: i32) -> u32 { return w3(u32(dw + i)); }
fn setix(i: i32, v: u32) { stw(u32(dw + i), v); }
fn swapix(i: i32, j: i32) { let v = ix(i); setix(i, ix(j)); setix(j, v); }
fn push_heap(first: i32, hole0: i32, top: i32, value: u32) {
  var hole = hole0;
  var parent = (hole - 1) / 2;
  while (hole > top && less(ix(first + parent), value)) {
    setix(first + hole, ix(first + parent));
    hole = parent;
    parent = (hole - 1) / 2;
  }
  setix(first + hole, value);
}
fn adjust_heap(first: i32, hole0: i32, len: i32, value: u32) {
  var hole = hole0; var child = hole0;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (less(ix(first + child), ix(first + child - 1))) { child--; }
    setix(first + hole, ix(first + child));
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    setix(first + hole, ix(first + child - 1));
    hole = child - 1;
  }
  push_heap(first, hole, hole0, value);
}
fn heap_sort(first: i32, last: i32) {
  let len = last - first;
  if (len >= 2) {
    var parent = (len - 2) / 2;
    loop {
      adjust_heap(first, parent, len, ix(first + parent));
      if (parent == 0) { break; }
      parent--;
    }
  }
  var end = last;
  while (end - first > 1) {
    end--;
    let value = ix(end);
    setix(end, ix(first));
    adjust_heap(first, 0, end - first, value);
  }
}
fn median_to_first(r: i32, a: i32, b: i32, c: i32) {
  if (less(ix(a), ix(b))) {
    if (less(ix(b), ix(c))) { swapix(r, b); } else if (less(ix(a), ix(c))) { swapix(r, c); } else { swapix(r, a); }
  } else if (less(ix(a), ix(c))) { swapix(r, a); } else if (less(ix(b), ix(c))) { swapix(r, c); } else { swapix(r, b); }
}
fn split_at(first0: i32, last0: i32, pivot: i32) -> i32 {
  var first = first0; var last = last0;
  loop {
    while (first < last0 && less(ix(first), ix(pivot))) { first++; }
    last--;
    while (last > pivot && less(ix(pivot), ix(last))) { last--; }
    if (!(first < last)) { break; }
    swapix(first, last);
    first++;
  }
  return first;
}
fn linear_insert(lo: i32, i: i32) {
  let value = ix(i);
  var j = i - 1;
  while (j >= lo && less(value, ix(j))) { setix(j + 1, ix(j)); j--; }
  setix(j + 1, value);
}
fn insertion_sort(first: i32, last: i32) {
  for (var i = first + 1; i < last; i++) {
    if (less(ix(i), ix(first))) {
      let value = ix(i);
      for (var k = i; k > first; k--) { setix(k, ix(k - 1)); }
      setix(first, value);
    } else { linear_insert(first, i); }
  }
}`;
  const body = `
  if (gi >= total()) { return; }
  let i1 = gi % ne(3u, 1u); let i2 = (gi / ne(3u, 1u)) % ne(3u, 2u); let i3 = gi / (ne(3u, 1u) * ne(3u, 2u));
  sr = rowat(0u, i1, i2, i3); dw = i32(rowat(3u, i1, i2, i3) >> 2u); desc = pu(${U}u) == 1u;
  let n = i32(ne(3u, 0u));
  for (var j = 0; j < n; j++) { setix(j, u32(j)); }
  if (n < 2) { return; }
  var stk: array<vec3<i32>, 64>;
  stk[0] = vec3<i32>(0, n, 2 * i32(firstLeadingBit(u32(n))));
  var sp = 1;
  while (sp > 0) {
    sp--;
    let e = stk[sp]; var first = e.x; var last = e.y; var depth = e.z;
    while (last - first > 16) {
      if (depth == 0) { heap_sort(first, last); break; }
      depth--;
      let mid = first + (last - first) / 2;
      median_to_first(first, first + 1, mid, last - 1);
      let cut = split_at(first + 1, last, first);
      stk[sp] = vec3<i32>(cut, last, depth); sp++;
      last = cut;
    }
  }
  if (n > 16) {
    insertion_sort(0, 16);
    for (var i = 16; i < n; i++) { linear_insert(0, i); }
  } else { insertion_sort(0, n); }`;
  return { body, roles: [t.src[0], null, null, t], u: [t.params.order], f: [], grid: 'threads', n: t.nrows, shared };
}

// ---- support and dispatch -------------------------------------------------------------

/** An F16 destination written a word at a time: even rows of 2-byte elements, word-aligned rows. */
function f16Words(t: Tensor): boolean {
  return (
    t.type === F16 && t.ne[0] % 2 === 0 && t.nb[0] === 2 && t.nb[1] % 4 === 0 && t.nb[2] % 4 === 0 && t.nb[3] % 4 === 0
  );
}

const isF32 = (t: Tensor | undefined) => t !== undefined && t.type === F32;

/** No optional feature: what supportsOp asks about (features change kernels, never support). */
const NO_FEATURES: GpuFeatures = { subgroups: false, f16: false };

/** The call for a node with the kernels `feat` allows, or a reason it does not run here. */
export function kernelFor(t: Tensor, feat: GpuFeatures = NO_FEATURES): KernelCall | string {
  const [a, b] = t.src;
  const un = UNARY[t.op];
  if (un) return isF32(a) && isF32(t) ? unary(t, un[1]) : `${t.op} on ${a?.type} -> ${t.type}`;
  const bin = BINARY[t.op];
  if (bin) return isF32(a) && isF32(b) && isF32(t) ? binary(t, bin) : `${t.op} needs F32`;
  switch (t.op) {
    case Op.RMS_NORM:
    case Op.NORM:
      return isF32(a) && isF32(t) ? norm(t, t.op === Op.NORM) : `${t.op} needs F32`;
    case Op.L2_NORM:
      return isF32(a) && isF32(t) ? l2Norm(t) : 'L2_NORM needs F32';
    case Op.SUM_ROWS:
      return isF32(a) && isF32(t) ? sumRows(t) : 'SUM_ROWS needs F32';
    case Op.SSM_CONV:
      return t.src.every(isF32) ? ssmConv(t) : 'SSM_CONV needs F32';
    case Op.SSM_SCAN:
      return t.src.every(isF32) ? ssmScan(t) : 'SSM_SCAN needs F32';
    case Op.GATED_DELTA_NET:
      return t.src.every(isF32) ? gatedDeltaNet(t) : 'GATED_DELTA_NET needs F32';
    case Op.ADD_ID:
      return isF32(a) && isF32(b) && isF32(t) && t.src[2].type === I32 ? addId(t) : 'ADD_ID types';
    case Op.MUL_MAT_ID:
      return WEIGHTS.has(a.type) && isF32(b) && t.src[2].type === I32
        ? mulMatId(t, feat)
        : `MUL_MAT_ID of type ${a.type}`;
    case Op.SOFT_MAX: {
      const mask = t.src[1];
      if (!isF32(a) || (mask && mask.type !== F32 && mask.type !== F16)) return 'SOFT_MAX types';
      return softMax(t);
    }
    case Op.ROPE: {
      const mode = t.params.mode;
      if (mode !== RopeMode.NORMAL && mode !== RopeMode.NEOX) return `ROPE mode ${mode}`;
      return isF32(a) && isF32(t) ? rope(t) : 'ROPE needs F32';
    }
    case Op.CONCAT:
      return isF32(a) && isF32(b) && isF32(t) ? concat(t) : 'CONCAT needs F32';
    case Op.GET_ROWS:
      return WEIGHTS.has(a.type) && b.type === I32 ? getRows(t) : `GET_ROWS of type ${a.type}`;
    case Op.ARGSORT:
      return isF32(a) && t.type === I32 && t.nb[0] === 4 ? argsortKernel(t) : 'ARGSORT types';
    case Op.CPY:
    case Op.CONT:
      if (a.type !== F32 && a.type !== F16 && a.type !== Q8_0) return `${t.op} from type ${a.type}`;
      return t.type === F32 || f16Words(t) ? copy(t) : `${t.op} to type ${t.type} with this layout`;
    case Op.SET_ROWS:
      if (!isF32(a) || (b.type !== I32 && b.type !== I64)) return 'SET_ROWS types';
      if (t.type === Q8_0) {
        const words = a.ne[0] % 64 === 0 && t.nb[1] % 4 === 0 && t.nb[2] % 4 === 0 && t.nb[3] % 4 === 0;
        return words ? setRowsQ8(t) : 'SET_ROWS to Q8_0 rows of an odd block count';
      }
      return t.type === F32 || f16Words(t) ? setRows(t) : `SET_ROWS to type ${t.type} with this layout`;
    case Op.MUL_MAT:
      // b F32, or F16 (the vision encoders' patches, rounded to F16 as ggml_conv_2d's im2col)
      if (!WEIGHTS.has(a.type) || !(isF32(b) || b.type === F16)) return `MUL_MAT of type ${a.type} x ${b.type}`;
      return feat.subgroups && t.ne[1] === 1 ? mulMatVec(t) : mulMat(t);
    case Op.FLASH_ATTN_EXT: {
      const [q, k, v, mask, sinks] = t.src;
      if (sinks && !isF32(sinks)) return 'FLASH_ATTN_EXT sinks type';
      const kv = (x: Tensor) => x.type === F16 || x.type === F32 || x.type === Q8_0;
      if (!isF32(q) || !kv(k) || !kv(v)) {
        return 'FLASH_ATTN_EXT types';
      }
      if (mask && mask.type !== F16 && mask.type !== F32) return 'FLASH_ATTN_EXT mask type';
      if (q.ne[0] > FA_MAX_D || v.ne[0] > FA_MAX_D) return `FLASH_ATTN_EXT head size over ${FA_MAX_D}`;
      return (t.params.maxBias ?? 0) === 0 ? flashAttn(t) : 'FLASH_ATTN_EXT with ALiBi';
    }
    default:
      return `${t.op} has no WebGPU kernel`;
  }
}

/** What decides a call's shader (shaderSource reads nothing else): a pipeline cache key. */
export function pipelineKey(call: KernelCall, plan: BindPlan, feat: GpuFeatures): string {
  const types = call.roles.map((t) => (t ? t.type : '-')).join(',');
  const slots = plan.slots.map((b) => `${b.view}${b.write ? 'w' : 'r'}`).join(',');
  return `${feat.subgroups ? 'sg' : ''}|${types}|${plan.slot.join(',')}|${slots}|${call.shared ?? ''}|${call.body}`;
}

/** The call's parameter block (PARAM_BYTES / 4 words). */
export function paramWords(call: KernelCall, out: Uint32Array): void {
  if (call.u.length > F - U || call.f.length > TOTAL - F) throw new Error('webgpu: too many op parameters');
  const f = new Float32Array(out.buffer, out.byteOffset, out.length);
  call.roles.forEach((t, j) => {
    if (!t) return;
    out[9 * j] = t.offset;
    for (let d = 0; d < 4; d++) {
      out[9 * j + 1 + d] = t.ne[d];
      out[9 * j + 5 + d] = t.nb[d];
    }
  });
  call.u.forEach((v, i) => {
    out[U + i] = v;
  });
  call.f.forEach((v, i) => {
    f[F + i] = v;
  });
  out[TOTAL] = call.n;
}

/** Workgroups (x, y) for a call: at most 65535 along x. */
export function workgroups(call: KernelCall): [number, number] {
  const n = call.grid === 'threads' ? Math.ceil(call.n / WG) : call.n;
  const x = Math.min(n, 65535);
  return [Math.max(x, 1), Math.max(1, Math.ceil(n / 65535))];
}
