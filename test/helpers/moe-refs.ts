// Checking a mixture-of-experts model against a `.ref.json` of llama.cpp's answers whose
// `top10` holds log-probabilities (../shared/fixtures/archs/ and test/refs/moe/): prompt
// tokens, the top-10 logits relative to llama.cpp's top-1 token, and greedy decoding
// generated incrementally (one decode per token through the cache), every step's argmax
// checked except near-ties. Returns the figures instead of asserting on the logits, so
// that callers can decide, and every step's logits, so they can compare thread counts.

import assert from 'node:assert/strict';
import { Context, type Model } from '../../src/model/index.js';
import { oracleParams } from './arch-refs.js';

export interface RefCase {
  prompt: string;
  tokens: number[];
  /** [token id, log-probability, probability] */
  top10: [number, number, number][];
  greedy: number[];
  greedy_gap: number[];
  /** A second llama.cpp build's top-10 (@fugood/llama.node 1.7.15): [token text, log-probability]. */
  llama_node_top10?: [string, number][];
}

export interface CaseResult {
  /** Largest |Δ| of the top-10 logits relative to llama.cpp's top-1. */
  maxDelta: number;
  /** Top-10 tokens (clear of near-ties) missing from ours. */
  missing: number[];
  /** Greedy steps that must match (gap above twice the tolerance), and those that did not. */
  required: number;
  mismatched: string[];
  /** Largest |Δ| against llama.node's top-10 (NaN without one). */
  lnDelta: number;
  /** The logits after the prompt and after each greedy token. */
  steps: Float32Array[];
}

export function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[b]) b = i;
  return b;
}

/**
 * Runs one case. The prompt's tokens must be llama.cpp's (ref.mjs puts a BOS in front
 * even when the vocabulary does not add one: the comparison allows for that).
 */
export async function runRefCase(model: Model, c: RefCase, tol: number, where: string): Promise<CaseResult> {
  const ours = model.vocab.encode(c.prompt, { addSpecial: true, parseSpecial: false });
  const withBos = ours[0] === c.tokens[0] ? ours : [c.tokens[0], ...ours];
  assert.deepEqual(withBos, c.tokens, `${where}: prompt tokens`);
  const ctx = new Context(model, { nCtx: 256, ...oracleParams(model) });
  try {
    await ctx.decode({ tokens: c.tokens });
    const first = ctx.getLogits(-1);
    const steps = [first];
    const [top1] = c.top10[0];
    let maxDelta = 0;
    for (const [id, lp] of c.top10) {
      maxDelta = Math.max(maxDelta, Math.abs(first[id] - first[top1] - (lp - c.top10[0][1])));
    }
    const order = Array.from(first.keys()).sort((a, b) => first[b] - first[a]);
    const rank = new Map(order.map((id, r) => [id, r]));
    const tenth = c.top10[9][1];
    const missing = c.top10.filter(([id, lp]) => lp - tenth > 2 * tol && rank.get(id)! >= 10).map(([id]) => id);
    let required = 0;
    const mismatched: string[] = [];
    let logits = first;
    for (let s = 0; s < c.greedy.length; s++) {
      if (c.greedy_gap[s] > 2 * tol) {
        required++;
        const picked = argmax(logits);
        if (picked !== c.greedy[s])
          mismatched.push(`step ${s}: ${picked}, llama.cpp ${c.greedy[s]} (gap ${c.greedy_gap[s]})`);
      }
      if (s + 1 < c.greedy.length) {
        await ctx.decode({ tokens: [c.greedy[s]] });
        logits = ctx.getLogits(-1);
        steps.push(logits);
      }
    }
    const lnDelta = c.llama_node_top10 ? deltaByText(model, first, c.llama_node_top10) : Number.NaN;
    return { maxDelta, missing, required, mismatched, lnDelta, steps };
  } finally {
    ctx.free();
  }
}

/**
 * Largest |Δ| of logits relative to the first entry against a top-10 given as token texts
 * (llama.cpp's server form: a lone byte that is not whole UTF-8 shows as `byte: \xNN`).
 * Texts that several tokens share, or that are not whole UTF-8, are left out.
 */
export function deltaByText(model: Model, logits: Float32Array, top: readonly [string, number][]): number {
  const v = model.vocab;
  const byPiece = new Map<string, number>();
  for (let id = 0; id < v.nTokens; id++) {
    if (v.isControl(id)) continue;
    const p = v.pieceBytes(id);
    byPiece.set(p, byPiece.has(p) ? -1 : id);
  }
  const ids = top.map(([text]) => {
    if (text.includes('\ufffd')) return -1;
    const m = /^byte: \\x([0-9a-f]{2})$/.exec(text);
    const key = m ? String.fromCharCode(Number.parseInt(m[1], 16)) : Buffer.from(text, 'utf8').toString('latin1');
    return byPiece.get(key) ?? -1;
  });
  const anchor = ids.findIndex((id) => id >= 0);
  if (anchor < 0) return Number.NaN;
  let d = 0;
  ids.forEach((id, i) => {
    if (id < 0) return;
    d = Math.max(d, Math.abs(logits[id] - logits[ids[anchor]] - (top[i][1] - top[anchor][1])));
  });
  return d;
}

/** Whether two runs gave the same bits at every step. */
export function sameBits(a: readonly Float32Array[], b: readonly Float32Array[]): boolean {
  if (a.length !== b.length) return false;
  for (let s = 0; s < a.length; s++) {
    const x = new Uint32Array(a[s].buffer, a[s].byteOffset, a[s].length);
    const y = new Uint32Array(b[s].buffer, b[s].byteOffset, b[s].length);
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  }
  return true;
}

/** Whether a case result is within tolerance: top-10 deltas, membership and greedy tokens. */
export function withinTolerance(r: CaseResult, tol: number): boolean {
  return r.maxDelta <= tol && r.missing.length === 0 && r.mismatched.length === 0;
}

export function describe(r: CaseResult): string {
  const extra = [
    r.missing.length ? `missing ${r.missing.join(',')}` : '',
    r.mismatched.length ? `greedy ${r.mismatched.join('; ')}` : '',
  ].filter(Boolean);
  const ln = Number.isNaN(r.lnDelta) ? '' : ` (llama.node ${r.lnDelta.toFixed(4)})`;
  return `max|Δ| ${r.maxDelta.toFixed(4)}${ln}, greedy ${r.required - r.mismatched.length}/${r.required}${extra.length ? ` (${extra.join(', ')})` : ''}`;
}
