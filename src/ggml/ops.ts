// Graph-building functions, one per op, with ggml's shapes and source order. Each checks
// its operands and returns the result descriptor; nothing is computed here (a backend's
// graphCompute does that). Shapes are written [ne0, ne1, ne2, ne3], ne0 fastest.

import { canRepeat, newTensor, Op, type OpParams, Tensor } from './tensor.js';
import { GGMLType } from './types.js';

function node(result: Tensor, op: Op, src: Tensor[], params: OpParams = {}, name = ''): Tensor {
  result.op = op;
  result.src = src;
  result.params = params;
  if (name) result.name = name;
  return result;
}

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`ggml op: ${what}`);
}

function isIndexType(t: Tensor): boolean {
  return t.type === GGMLType.I32 || t.type === GGMLType.I64;
}

/**
 * Rows of `a` picked by the I32 indices in `b` (ggml_get_rows): a [n, rows, ne2, ne3],
 * b [k, ne2, ne3] gives F32 [n, k, ne2, ne3]. Works on every weight type.
 */
export function getRows(a: Tensor, b: Tensor): Tensor {
  check(b.type === GGMLType.I32, 'get_rows indices must be I32');
  check(a.ne[2] === b.ne[1] && a.ne[3] === b.ne[2] && b.ne[3] === 1, 'get_rows shapes');
  return node(newTensor(GGMLType.F32, [a.ne[0], b.ne[0], b.ne[1], b.ne[2]]), Op.GET_ROWS, [a, b]);
}

/**
 * Write the rows of `b` (F32) into `a` at the row indices in `c` (I64 or I32), as ggml_set_rows:
 * a [n, rowsA, ne2, ne3], b [n, k, ne2, ne3], c [k, ne2 / r2, ne3 / r3]. The result is a view
 * of `a`; the sources are (b, c, a) in ggml's order.
 */
export function setRows(a: Tensor, b: Tensor, c: Tensor): Tensor {
  check(a.ne[0] === b.ne[0] && a.ne[2] === b.ne[2] && a.ne[3] === b.ne[3], 'set_rows shapes of a and b');
  check(b.ne[1] === c.ne[0] && b.ne[2] % c.ne[1] === 0 && b.ne[3] % c.ne[2] === 0 && c.ne[3] === 1, 'set_rows index');
  check(b.type === GGMLType.F32, 'set_rows source must be F32');
  check(isIndexType(c), 'set_rows indices must be I64 or I32');
  check(a.hasContiguousRows() && b.hasContiguousRows(), 'set_rows needs contiguous rows');
  const r = viewAll(a);
  return node(r, Op.SET_ROWS, [b, c, a]);
}

function viewAll(a: Tensor): Tensor {
  // a same-shape view of `a` whose op the caller then sets (ggml_view_tensor)
  const r = new Tensor(a.type, [...a.ne], [...a.nb]);
  r.viewSrc = a.viewSrc ?? a;
  r.viewOffset = a.viewSrc ? a.viewOffset : 0;
  return r;
}

/**
 * Matrix product (ggml_mul_mat): a [K, M, ne02, ne03] (weights, any type), b [K, N, ne12, ne13]
 * (F32) gives F32 [M, N, ne12, ne13], i.e. result[m, n] = dot(row m of a, row n of b). `a` is
 * broadcast over dims 2-3 when ne12, ne13 are multiples of ne02, ne03.
 */
export function mulMat(a: Tensor, b: Tensor): Tensor {
  check(a.ne[0] === b.ne[0], `mul_mat inner sizes ${a.ne[0]} and ${b.ne[0]}`);
  check(b.ne[2] % a.ne[2] === 0 && b.ne[3] % a.ne[3] === 0, 'mul_mat broadcast over dims 2-3');
  check(!isTransposedRows(a), 'mul_mat: a must not be transposed');
  return node(newTensor(GGMLType.F32, [a.ne[1], b.ne[1], b.ne[2], b.ne[3]]), Op.MUL_MAT, [a, b]);
}

function isTransposedRows(t: Tensor): boolean {
  return t.nb[0] > t.nb[1] && t.ne[1] > 1;
}

function binary(op: Op, a: Tensor, b: Tensor): Tensor {
  check(canRepeat(b, a), `${op}: [${b.ne}] does not broadcast onto [${a.ne}]`);
  return node(newTensor(a.type, a.ne), op, [a, b]);
}

/** a + b, b broadcast over a (ggml_add). */
export function add(a: Tensor, b: Tensor): Tensor {
  return binary(Op.ADD, a, b);
}

/** a * b elementwise, b broadcast over a (ggml_mul). */
export function mul(a: Tensor, b: Tensor): Tensor {
  return binary(Op.MUL, a, b);
}

/** s * a + bias (ggml_scale / ggml_scale_bias). */
export function scale(a: Tensor, s: number, bias = 0): Tensor {
  return node(newTensor(a.type, a.ne), Op.SCALE, [a], { scale: s, bias });
}

/** Each row divided by its root mean square: x / sqrt(mean(x²) + eps). */
export function rmsNorm(a: Tensor, eps: number): Tensor {
  return node(newTensor(a.type, a.ne), Op.RMS_NORM, [a], { eps });
}

/** Each row centred and divided by its standard deviation: (x - mean) / sqrt(var + eps). */
export function norm(a: Tensor, eps: number): Tensor {
  return node(newTensor(a.type, a.ne), Op.NORM, [a], { eps });
}

/** ggml's rope modes: NORMAL rotates adjacent pairs, NEOX rotates the two halves. */
export const RopeMode = { NORMAL: 0, NEOX: 2 } as const;

export interface RopeOptions {
  /** Rotated dimensions (≤ head dim; the rest pass through). */
  nDims: number;
  mode: number;
  freqBase: number;
  freqScale?: number;
  nCtxOrig?: number;
  extFactor?: number;
  attnFactor?: number;
  betaFast?: number;
  betaSlow?: number;
  /** Optional F32 [nDims / 2] frequency divisors (ggml's src[2]). */
  freqFactors?: Tensor;
}

/**
 * Rotary position embedding (ggml_rope_ext): a [headDim, nHead, nTokens, 1], pos I32 [nTokens].
 * Pair i rotates by pos * freqBase^(-2i/nDims) (times freqScale; YaRN when extFactor ≠ 0).
 */
export function rope(a: Tensor, pos: Tensor, o: RopeOptions): Tensor {
  check(pos.type === GGMLType.I32 && pos.ne[0] === a.ne[2], 'rope positions: I32 [ne2 of a]');
  check(o.nDims <= a.ne[0] && o.nDims % 2 === 0, 'rope nDims');
  const src = [a, pos];
  if (o.freqFactors) {
    check(o.freqFactors.type === GGMLType.F32 && o.freqFactors.ne[0] >= o.nDims / 2, 'rope freq factors');
    src.push(o.freqFactors);
  }
  return node(newTensor(a.type, a.ne), Op.ROPE, src, {
    nDims: o.nDims,
    mode: o.mode,
    freqBase: o.freqBase,
    freqScale: o.freqScale ?? 1,
    nCtxOrig: o.nCtxOrig ?? 0,
    extFactor: o.extFactor ?? 0,
    attnFactor: o.attnFactor ?? 1,
    betaFast: o.betaFast ?? 32,
    betaSlow: o.betaSlow ?? 1,
  });
}

/**
 * softmax(a * scale + mask) over each row (ggml_soft_max_ext). mask (F32 or F16)
 * [ne0, ≥ne1, ne2 / r2, ne3 / r3] is broadcast over a's dims 2-3; maxBias > 0 (ALiBi) scales
 * head i2's mask by its slope (not on the CPU device: runs on the reference or WebGPU).
 */
export function softMax(a: Tensor, mask: Tensor | null = null, scale = 1, maxBias = 0): Tensor {
  const src = [a];
  if (mask) {
    check(mask.type === GGMLType.F32 || mask.type === GGMLType.F16, 'soft_max mask type');
    check(mask.ne[0] === a.ne[0] && mask.ne[1] >= a.ne[1], 'soft_max mask shape');
    check(a.ne[2] % mask.ne[2] === 0 && a.ne[3] % mask.ne[3] === 0, 'soft_max mask broadcast');
    src.push(mask);
  }
  return node(newTensor(a.type, a.ne), Op.SOFT_MAX, src, { scale, maxBias });
}

/** x * sigmoid(x). */
export function silu(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.SILU, [a]);
}

/** GELU, tanh approximation (as ggml_gelu). */
export function gelu(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.GELU, [a]);
}

/** tanh(x) elementwise (ggml_tanh; soft-capping is c·tanh(x/c); reranker classification heads). */
export function tanh(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.TANH, [a]);
}

/**
 * Copy the values of `a` into `b` (ggml_cpy), converting type (F32↔F16, F32→quantized).
 * Element counts must match; layout may differ (b is often a view into a KV cache).
 * The result is a view of `b`.
 */
export function cpy(a: Tensor, b: Tensor): Tensor {
  check(a.nelements === b.nelements, `cpy ${a} into ${b}: element counts differ`);
  const r = viewAll(b);
  r.name = b.name ? `${b.name} (copy of ${a.name || `#${a.id}`})` : '';
  return node(r, Op.CPY, [a, b]);
}

/** A contiguous copy of `a` (ggml_cont), optionally reshaped to `ne`. */
export function cont(a: Tensor, ne?: readonly number[]): Tensor {
  const r = newTensor(a.type, ne ?? a.ne);
  check(r.nelements === a.nelements, 'cont: element counts differ');
  return node(r, Op.CONT, [a]);
}

/**
 * Attention in one op (ggml_flash_attn_ext): q [D, nQ, nHead, ne3], k [D, nKV, nHeadKV, ne3],
 * v [Dv, nKV, nHeadKV, ne3] (K/V F16 or F32; nHead a multiple of nHeadKV: grouped-query
 * attention), mask F16 [nKV, ≥nQ, ...] broadcast over heads. Result F32 [Dv, nHead, nQ, ne3]
 * (heads and tokens swapped, ready to be reshaped into [Dv·nHead, nQ]).
 */
export function flashAttnExt(
  q: Tensor,
  k: Tensor,
  v: Tensor,
  mask: Tensor | null,
  scale: number,
  maxBias = 0,
  logitSoftcap = 0,
): Tensor {
  check(q.ne[0] === k.ne[0] && k.ne[1] === v.ne[1] && k.ne[2] === v.ne[2], 'flash_attn_ext q/k/v shapes');
  check(q.ne[2] % k.ne[2] === 0 && q.ne[3] % k.ne[3] === 0, 'flash_attn_ext head broadcast');
  const src = [q, k, v];
  if (mask) {
    check(mask.ne[0] === k.ne[1] && mask.ne[1] >= q.ne[1], 'flash_attn_ext mask shape');
    check(q.ne[2] % mask.ne[2] === 0 && q.ne[3] % mask.ne[3] === 0, 'flash_attn_ext mask broadcast');
    src.push(mask);
  }
  return node(newTensor(GGMLType.F32, [v.ne[0], q.ne[2], q.ne[1], q.ne[3]]), Op.FLASH_ATTN_EXT, src, {
    scale,
    maxBias,
    logitSoftcap,
  });
}

// ---- recurrent layers ----

/** Each row divided by its Euclidean length: x / max(‖x‖, eps) (ggml_l2_norm). */
export function l2Norm(a: Tensor, eps: number): Tensor {
  return node(newTensor(a.type, a.ne), Op.L2_NORM, [a], { eps });
}

/** log(1 + eˣ), and x itself above 20 (ggml_softplus). */
export function softplus(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.SOFTPLUS, [a]);
}

/** max(x, 0) (ggml_relu). */
export function relu(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.RELU, [a]);
}

/** x² (ggml_sqr). */
export function sqr(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.SQR, [a]);
}

/**
 * Causal depthwise 1-D convolution (ggml_ssm_conv): sx F32 [dConv - 1 + nT, channels, nS]
 * holds, per channel and sequence, the dConv - 1 inputs carried over from earlier tokens
 * (the convolution state) followed by this ubatch's nT inputs; c F32 [dConv, channels] is
 * the kernel. Result F32 [channels, nT, nS]: out[ch, t, s] = Σ_i sx[t + i, ch, s] · c[i, ch].
 */
export function ssmConv(sx: Tensor, c: Tensor): Tensor {
  check(sx.type === GGMLType.F32 && c.type === GGMLType.F32, 'ssm_conv: F32 operands');
  check(c.ne[2] === 1 && c.ne[3] === 1 && sx.ne[3] === 1, 'ssm_conv: sx 3-D, c a matrix');
  const nT = sx.ne[0] - c.ne[0] + 1;
  check(nT >= 1 && sx.ne[1] === c.ne[1], `ssm_conv: sx [${sx.ne}] against kernel [${c.ne}]`);
  check(sx.hasContiguousRows() && c.hasContiguousRows(), 'ssm_conv: contiguous rows');
  return node(newTensor(GGMLType.F32, [c.ne[1], nT, sx.ne[2]]), Op.SSM_CONV, [sx, c]);
}

/**
 * The selective scan of Mamba-2 (and Mamba-1) layers (ggml_ssm_scan, with the states of the
 * ubatch's sequences already gathered in order: no ids operand). s F32 [dState, headDim,
 * nHead, nS] the states before the ubatch; x [headDim, nHead, nT, nS]; dt [nHead, nT, nS]
 * (softplus is applied inside); A [1, nHead] (Mamba-2: one decay per head) or [dState,
 * nHead] (Mamba-1); B and C [dState, nGroup, nT, nS], head h reading group
 * h / (nHead / nGroup). Per token: state = state · exp(dt·A) + B · x · dt, y = state · C.
 * Result F32, one dimension: y [headDim, nHead, nT, nS], then the final states [dState,
 * headDim, nHead, nS].
 */
export function ssmScan(s: Tensor, x: Tensor, dt: Tensor, A: Tensor, B: Tensor, C: Tensor): Tensor {
  for (const t of [s, x, dt, A, B, C]) check(t.type === GGMLType.F32, 'ssm_scan: F32 operands');
  const [dState, headDim, nHead, nS] = s.ne;
  const nT = x.ne[2];
  check(s.isContiguous() && dt.isContiguous() && A.isContiguous(), 'ssm_scan: s, dt and A contiguous');
  check(x.ne[0] === headDim && x.ne[1] === nHead && x.ne[3] === nS, `ssm_scan: x [${x.ne}] against s [${s.ne}]`);
  check(dt.ne[0] === nHead && dt.ne[1] === nT && dt.ne[2] === nS && dt.ne[3] === 1, 'ssm_scan: dt [nHead, nT, nS]');
  check((A.ne[0] === 1 || A.ne[0] === dState) && A.ne[1] === nHead && A.ne[2] === 1, 'ssm_scan: A [1|dState, nHead]');
  check(
    B.ne.every((n, i) => n === C.ne[i]),
    'ssm_scan: B and C shapes differ',
  );
  check(B.ne[0] === dState && B.ne[2] === nT && B.ne[3] === nS, 'ssm_scan: B [dState, nGroup, nT, nS]');
  check(B.ne[1] >= 1 && nHead % B.ne[1] === 0, 'ssm_scan: heads a multiple of the groups');
  check(x.hasContiguousRows() && B.hasContiguousRows() && C.hasContiguousRows(), 'ssm_scan: contiguous rows');
  check(x.nb[1] === headDim * 4 && B.nb[1] === dState * 4 && C.nb[1] === dState * 4, 'ssm_scan: packed heads/groups');
  return node(newTensor(GGMLType.F32, [x.nelements + s.nelements]), Op.SSM_SCAN, [s, x, dt, A, B, C]);
}

/**
 * The gated delta rule of Gated DeltaNet layers (ggml_gated_delta_net with one state
 * snapshot), run token by token for a prompt as for a decode step, so a ubatch of any size
 * gives the bits of one token at a time. q, k F32 [S, Hk, nT, nS], v [S, Hv, nT, nS] (Hv a
 * multiple of Hk; value head h reads query/key head h mod Hk), g [1 or S, Hv, nT, nS] (log
 * decay), beta [1, Hv, nT, nS], state [S, S, Hv, nS] (state[j, i] = S[i][j], a column of
 * the matrix per row). Per token and head: S ← S·exp(g); d = (v − Sᵀk)·beta;
 * S ← S + k dᵀ; o = Sᵀq / √S. Result F32 [S·Hv, nT·nS + S·nS]: the outputs o [S, Hv, nT,
 * nS], then the final states [S, S, Hv, nS].
 */
export function gatedDeltaNet(q: Tensor, k: Tensor, v: Tensor, g: Tensor, beta: Tensor, state: Tensor): Tensor {
  for (const t of [q, k, v, g, beta, state]) check(t.type === GGMLType.F32, 'gated_delta_net: F32 operands');
  const [S, Hv, nT, nS] = v.ne;
  check(
    q.ne.every((n, i) => n === k.ne[i]),
    'gated_delta_net: q and k shapes differ',
  );
  check(q.ne[0] === S && q.ne[2] === nT && q.ne[3] === nS, `gated_delta_net: q [${q.ne}] against v [${v.ne}]`);
  check(Hv % q.ne[1] === 0, 'gated_delta_net: value heads a multiple of key heads');
  check((g.ne[0] === 1 || g.ne[0] === S) && g.ne[1] === Hv && g.ne[2] === nT && g.ne[3] === nS, 'gated_delta_net: g');
  check(beta.ne[0] === 1 && beta.ne[1] === Hv && beta.ne[2] === nT && beta.ne[3] === nS, 'gated_delta_net: beta');
  check(state.ne[0] === S && state.ne[1] === S && state.ne[2] === Hv && state.ne[3] === nS, 'gated_delta_net: state');
  check(q.hasContiguousRows() && k.hasContiguousRows() && v.hasContiguousRows(), 'gated_delta_net: contiguous rows');
  check(g.isContiguous() && beta.isContiguous() && state.isContiguous(), 'gated_delta_net: g, beta, state contiguous');
  const out = newTensor(GGMLType.F32, [S * Hv, nT * nS + S * nS]);
  return node(out, Op.GATED_DELTA_NET, [q, k, v, g, beta, state]);
}

/**
 * Attention sinks (ggml_flash_attn_ext_add_sinks): one logit per head (F32 [nHead]) that
 * joins every row's softmax without a value, as gpt-oss's learned sinks do. Sets src[4].
 */
export function flashAttnExtAddSinks(fa: Tensor, sinks: Tensor): Tensor {
  check(fa.op === Op.FLASH_ATTN_EXT, 'add_sinks: not a flash_attn_ext node');
  check(
    sinks.type === GGMLType.F32 && sinks.ne[0] === fa.ne[1] && sinks.nelements === sinks.ne[0],
    'sinks: F32 [nHead]',
  );
  check(fa.src.length === 4, 'flash_attn_ext with sinks needs a mask (sinks are src[4])');
  fa.src.push(sinks);
  return fa;
}

// ---- mixtures of experts ----

/**
 * Products with the experts each token chose (ggml_mul_mat_id): as [K, M, nExpert]
 * (any weight type), b F32 [K, nB, nTokens] with nB = 1 (every slot reads the token's one
 * row) or nUsed, ids I32 [nUsed, nTokens] (expert per slot). Result F32 [M, nUsed, nTokens]:
 * result[:, i, t] = as[:, :, ids[i, t]] · b[:, i % nB, t].
 */
export function mulMatId(as: Tensor, b: Tensor, ids: Tensor): Tensor {
  check(ids.type === GGMLType.I32 && ids.ne[2] === 1 && ids.ne[3] === 1, 'mul_mat_id ids: I32 [nUsed, nTokens]');
  check(as.ne[3] === 1 && b.ne[3] === 1, 'mul_mat_id: as and b have at most 3 dimensions');
  check(as.ne[0] === b.ne[0], `mul_mat_id inner sizes ${as.ne[0]} and ${b.ne[0]}`);
  check(ids.ne[1] === b.ne[2], 'mul_mat_id: one ids column per token of b');
  check(ids.ne[0] % b.ne[1] === 0, 'mul_mat_id: b rows per token must divide the slots');
  check(!isTransposedRows(as), 'mul_mat_id: as must not be transposed');
  return node(newTensor(GGMLType.F32, [as.ne[1], ids.ne[0], b.ne[2]]), Op.MUL_MAT_ID, [as, b, ids]);
}

/** a[:, i, t] + b[:, ids[i, t]] (ggml_add_id: per-expert biases). a [n, nUsed, nT], b [n, nExpert]. */
export function addId(a: Tensor, b: Tensor, ids: Tensor): Tensor {
  check(a.type === GGMLType.F32 && b.type === GGMLType.F32, 'add_id: F32 operands');
  check(ids.type === GGMLType.I32 && ids.ne[0] === a.ne[1] && ids.ne[1] === a.ne[2], 'add_id ids: I32 [ne1, ne2] of a');
  check(b.ne[0] === a.ne[0] && b.ne[2] === 1 && b.ne[3] === 1 && a.ne[3] === 1, 'add_id shapes');
  return node(newTensor(GGMLType.F32, a.ne), Op.ADD_ID, [a, b, ids]);
}

/** ggml's sort orders. */
export const SortOrder = { ASC: 0, DESC: 1 } as const;

/**
 * Indices that sort each row (ggml_argsort): I32 of a's shape. Ties are ordered as
 * ggml-cpu's std::sort (libstdc++'s introsort) orders them.
 */
export function argsort(a: Tensor, order: number): Tensor {
  check(a.type === GGMLType.F32 && a.hasContiguousRows(), 'argsort: F32 rows');
  return node(newTensor(GGMLType.I32, a.ne), Op.ARGSORT, [a], { order });
}

/** The indices of each row's k largest values, largest first (ggml_argsort_top_k: argsort + view). */
export function argsortTopK(a: Tensor, k: number): Tensor {
  check(k >= 1 && k <= a.ne[0], `argsort_top_k: k = ${k} of ${a.ne[0]}`);
  const s = argsort(a, SortOrder.DESC);
  return viewOf(s, [k, s.ne[1], s.ne[2], s.ne[3]]);
}

function viewOf(a: Tensor, ne: [number, number, number, number]): Tensor {
  const r = new Tensor(a.type, ne, [...a.nb]);
  r.op = Op.VIEW;
  r.src = [a];
  r.viewSrc = a.viewSrc ?? a;
  r.viewOffset = a.viewSrc ? a.viewOffset : 0;
  return r;
}

/** Σ of each row: [1, ne1, ne2, ne3] (ggml_sum_rows). */
export function sumRows(a: Tensor): Tensor {
  return node(newTensor(a.type, [1, a.ne[1], a.ne[2], a.ne[3]]), Op.SUM_ROWS, [a]);
}

/** a / b elementwise, b broadcast over a (ggml_div). */
export function div(a: Tensor, b: Tensor): Tensor {
  return binary(Op.DIV, a, b);
}

/** 1 / (1 + e^-x) (ggml_sigmoid). */
export function sigmoid(a: Tensor): Tensor {
  return node(newTensor(a.type, a.ne), Op.SIGMOID, [a]);
}

/** min(max(x, lo), hi) (ggml_clamp). */
export function clamp(a: Tensor, lo: number, hi: number): Tensor {
  return node(newTensor(a.type, a.ne), Op.CLAMP, [a], { min: lo, max: hi });
}

/**
 * gpt-oss's clamped SwiGLU (ggml_swiglu_oai): x = min(g, limit), y = clamp(u, ±limit),
 * x · sigmoid(alpha · x) · (y + 1). g and u are F32 of one shape with contiguous rows.
 */
export function swigluOai(g: Tensor, u: Tensor, alpha: number, limit: number): Tensor {
  check(g.type === GGMLType.F32 && u.type === GGMLType.F32, 'swiglu_oai: F32 operands');
  check(
    g.ne.every((x, i) => x === u.ne[i]),
    'swiglu_oai: gate and up shapes differ',
  );
  check(g.hasContiguousRows() && u.hasContiguousRows(), 'swiglu_oai: contiguous rows');
  return node(newTensor(GGMLType.F32, g.ne), Op.SWIGLU_OAI, [g, u], { alpha, limit });
}

/** a and b joined along `dim` (ggml_concat): every other extent equal, same type. */
export function concat(a: Tensor, b: Tensor, dim: number): Tensor {
  check(a.type === b.type, 'concat: types differ');
  check(dim >= 0 && dim < 4, `concat: dim ${dim}`);
  for (let d = 0; d < 4; d++) check(d === dim || a.ne[d] === b.ne[d], `concat: extent ${d} differs`);
  const ne = [...a.ne];
  ne[dim] += b.ne[dim];
  return node(newTensor(a.type, ne), Op.CONCAT, [a, b], { dim });
}
