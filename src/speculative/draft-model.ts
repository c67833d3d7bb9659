// Drafting with a smaller model that shares the target's vocabulary (llama.cpp's
// draft-simple): the drafter keeps its own context, one sequence per target slot, and
// remembers which tokens each holds; a draft first evaluates what the sequence gained
// since (one batch for every sequence, only the new tokens: a common prefix is kept),
// then extends every drafting sequence by one token per decode. Greedy by default: the
// draft model's top token, kept while its probability among the top 10 is at least
// `pMin`; with `temperature` > 0 it samples among those 10 instead and reports their
// distribution, so that the verifier can use the standard acceptance rule.
import { Context, type Model } from '../model/index.js';
import type { GrammarSampler } from '../sampling/grammar/index.js';
import { Mt19937 } from '../sampling/index.js';
import { type Draft, type Drafter, type DraftRequest, SpeculativeError } from './types.js';

/** llama.cpp's SPEC_VOCAB_MAX_SIZE_DIFFERENCE and SPEC_VOCAB_CHECK_START_TOKEN_ID. */
const MAX_VOCAB_DIFFERENCE = 128;
const CHECK_FROM_TOKEN = 5;
/** Candidates a draft token is chosen among (llama.cpp's draft sampler: top-k 10). */
const TOP_K = 10;

/**
 * Throws SpeculativeError unless `draft` can draft for `target`: the same kind of
 * vocabulary and special tokens, sizes within 128 of each other, and the same text for
 * every token id both have (from id 5), as llama.cpp's common_speculative_are_compatible.
 */
export function checkDraftCompatible(target: Model, draft: Model): void {
  const a = target.vocab;
  const b = draft.vocab;
  const fail = (why: string) => {
    throw new SpeculativeError(`draft model ${draft.path} cannot draft for ${target.path}: ${why}`);
  };
  if (a.type !== b.type) fail(`vocabulary types differ (${b.type} vs ${a.type})`);
  if (a.addBos !== b.addBos || (a.addBos && a.bos !== b.bos)) fail('their BOS tokens differ');
  if (a.addEos !== b.addEos || (a.addEos && a.eos !== b.eos)) fail('their EOS tokens differ');
  const diff = Math.abs(a.nTokens - b.nTokens);
  if (diff > MAX_VOCAB_DIFFERENCE) fail(`vocabulary sizes differ by ${diff} (${b.nTokens} vs ${a.nTokens})`);
  const n = Math.min(a.nTokens, b.nTokens);
  for (let i = CHECK_FROM_TOKEN; i < n; i++) {
    if (a.tokenText(i) !== b.tokenText(i)) {
      fail(`token ${i} is '${b.tokenText(i)}' in the draft and '${a.tokenText(i)}' in the target`);
    }
  }
}

export interface DraftModelOptions {
  /** Sequences (target slots). Default 1. */
  nSeq?: number;
  /** Draft context size, all sequences together (default: the model's training context, at most 4096, per sequence). */
  nCtx?: number;
  nThreads?: number;
  /** Greedy drafts stop at a token whose probability among the top 10 is below this. Default 0. */
  pMin?: number;
  /** Drafts shorter than this are dropped (llama.cpp's n_min). Default 0. */
  nMin?: number;
  /** > 0: sample drafts among the top 10 at this temperature, reporting their distribution. Default 0 (greedy). */
  temperature?: number;
  seed?: number;
}

export class DraftModelDrafter implements Drafter {
  readonly kind = 'draft-model';
  readonly ctx: Context;
  private readonly cached: number[][];
  private readonly pMin: number;
  private readonly nMin: number;
  private readonly temperature: number;
  private readonly rng: Mt19937;
  private iota = new Int32Array(0);

  constructor(
    readonly model: Model,
    opts: DraftModelOptions = {},
  ) {
    const nSeq = opts.nSeq ?? 1;
    this.pMin = opts.pMin ?? 0;
    this.nMin = opts.nMin ?? 0;
    this.temperature = opts.temperature ?? 0;
    if (!(this.pMin >= 0 && this.pMin <= 1)) throw new SpeculativeError(`draft p-min ${this.pMin} is not within 0..1`);
    this.rng = new Mt19937(opts.seed ?? 1);
    const nCtx = opts.nCtx ?? Math.min(4096, model.hp.nCtxTrain || 4096) * nSeq;
    this.ctx = new Context(model, {
      nCtx,
      nSeqMax: nSeq,
      // a draft model with sliding-window layers keeps every cell: drafts are decoded one
      // token at a time and most are dropped again, which a ring would pay for with the
      // window's cells (then the sequence is evaluated again, see draft())
      swaFull: true,
      ...(opts.nThreads !== undefined ? { nThreads: opts.nThreads } : {}),
    });
    this.cached = Array.from({ length: nSeq }, () => []);
  }

  reset(seq: number): void {
    this.ctx.seqRm(seq, -1, -1);
    this.cached[seq] = [];
  }

  free(): void {
    this.ctx.free();
  }

  /**
   * Evaluates each sequence's tokens ahead of its first draft: the prompt, while the target
   * evaluates it (llama.cpp's speculative example and server process the draft model's
   * prompt with the target's, so that it counts as prompt processing). The next draft()
   * then evaluates only what follows.
   */
  async prefill(requests: readonly Pick<DraftRequest, 'seq' | 'tokens'>[]): Promise<void> {
    await this.catchUp(requests, false);
  }

  async draft(requests: readonly DraftRequest[]): Promise<Draft[]> {
    const ctx = this.ctx;
    const out: Draft[] = requests.map(() => ({ tokens: [] }));
    const live = requests.map((r, i) => ({ r, i })).filter(({ r }) => r.nMax > 0 && r.tokens.length > 0);
    if (live.length === 0) return out;
    // 1. catch up: each sequence evaluates what it does not hold yet (at least its last token)
    const rowOf = await this.catchUp(
      live.map(({ r }) => r),
      true,
    );
    // 2. extend: one token per drafting sequence and decode
    let drafting = live.map(({ r, i }) => ({ r, i, row: rowOf.get(r.seq)!, grammar: r.grammar?.clone() }));
    while (drafting.length > 0) {
      const next: typeof drafting = [];
      const t: number[] = [];
      const p: number[] = [];
      const s: number[] = [];
      for (const d of drafting) {
        const logits = ctx.getLogits(d.row);
        const pick = this.choose(logits, d.grammar, d.r.pMin ?? this.pMin);
        if (!pick) continue;
        d.grammar?.accept(pick.token);
        const draft = out[d.i];
        draft.tokens.push(pick.token);
        if (pick.probs) {
          draft.probs ??= [];
          draft.probs.push(pick.probs);
        }
        if (draft.tokens.length >= d.r.nMax) continue;
        next.push({ ...d, row: t.length });
        t.push(pick.token);
        p.push(this.cached[d.r.seq].length);
        s.push(d.r.seq);
        this.cached[d.r.seq].push(pick.token);
      }
      if (t.length > 0) await ctx.decode({ tokens: t, pos: p, seqIds: s, logits: t.map(() => true) });
      drafting = next;
    }
    for (const [i, d] of out.entries()) {
      if (d.tokens.length < (requests[i].nMin ?? this.nMin)) {
        d.tokens = [];
        delete d.probs;
      }
    }
    return out;
  }

  /**
   * Evaluates what each sequence does not hold yet, keeping the prefix it shares with what
   * it holds. With `last`, each sequence's last token is always evaluated, with logits, and
   * the map gives its row; without, what a sequence already holds is not evaluated again.
   */
  private async catchUp(
    requests: readonly (Pick<DraftRequest, 'seq' | 'tokens'> & { nMax?: number })[],
    last: boolean,
  ): Promise<Map<number, number>> {
    const ctx = this.ctx;
    const pending: { seq: number; tokens: number[]; pos: number }[] = [];
    for (const r of requests) {
      if (r.seq < 0 || r.seq >= this.cached.length) throw new SpeculativeError(`draft: no sequence ${r.seq}`);
      const held = this.cached[r.seq];
      let lcp = 0;
      while (lcp < held.length && lcp < r.tokens.length && held[lcp] === r.tokens[lcp]) lcp++;
      if (last) lcp = Math.min(lcp, r.tokens.length - 1);
      // a sliding window may have lost cells the kept prefix's continuation reads
      if (lcp > 0 && ctx.slidingWindow) lcp = ctx.reusablePrefix(r.seq, lcp);
      if (r.tokens.length + (r.nMax ?? 0) > ctx.nCtx) {
        throw new SpeculativeError(
          `draft: sequence ${r.seq} has ${r.tokens.length} tokens, more than the draft context (${ctx.nCtx}) holds with a draft`,
        );
      }
      ctx.seqRm(r.seq, lcp, -1);
      held.length = lcp;
      if (lcp < r.tokens.length) pending.push({ seq: r.seq, tokens: r.tokens.slice(lcp) as number[], pos: lcp });
    }
    // in one batch when it fits, logits with each sequence's last token; otherwise everything
    // but the last tokens in batches of n_batch first, then the last tokens together
    const rowOf = new Map<number, number>();
    const total = pending.reduce((a, p) => a + p.tokens.length, 0);
    const batch: { t: number[]; p: number[]; s: number[]; l: boolean[] } = { t: [], p: [], s: [], l: [] };
    const flush = async () => {
      if (batch.t.length === 0) return;
      await ctx.decode({ tokens: batch.t, pos: batch.p, seqIds: batch.s, logits: batch.l });
      batch.t = [];
      batch.p = [];
      batch.s = [];
      batch.l = [];
    };
    const add = (seq: number, token: number, pos: number, logits: boolean) => {
      if (logits) rowOf.set(seq, batch.t.length);
      batch.t.push(token);
      batch.p.push(pos);
      batch.s.push(seq);
      batch.l.push(logits);
      this.cached[seq].push(token);
    };
    if (total <= ctx.nBatch) {
      for (const p of pending) {
        for (const [j, t] of p.tokens.entries()) add(p.seq, t, p.pos + j, last && j === p.tokens.length - 1);
      }
    } else {
      for (const p of pending) {
        for (let j = 0; j < p.tokens.length - 1; j++) {
          add(p.seq, p.tokens[j], p.pos + j, false);
          if (batch.t.length === ctx.nBatch) await flush();
        }
      }
      await flush();
      for (const p of pending) add(p.seq, p.tokens[p.tokens.length - 1], p.pos + p.tokens.length - 1, last);
    }
    await flush();
    return rowOf;
  }

  /** The next draft token from a logits row (within the grammar), or null to stop (below pMin). */
  private choose(
    logits: Float32Array,
    grammar: GrammarSampler | undefined,
    pMin: number,
  ): { token: number; probs?: Float32Array } | null {
    // the top 10 without the grammar: when it allows all ten they are also the top 10 within
    // it (masking only removes tokens), so the whole-vocabulary mask, a new one per grammar
    // state and the draft's main cost on a long forced passage, is needed only otherwise
    let top = topTokens(logits);
    if (grammar && !top.every((id) => grammar.allows(id))) {
      if (this.iota.length !== logits.length) this.iota = Int32Array.from(logits.keys());
      logits = logits.slice();
      grammar.apply({ ids: this.iota, logits, n: logits.length });
      top = topTokens(logits);
    }
    const temp = this.temperature > 0 ? this.temperature : 1;
    const max = logits[top[0]];
    if (max === Number.NEGATIVE_INFINITY) return null;
    const w = top.map((i) => Math.exp((logits[i] - max) / temp));
    const sum = w.reduce((a, b) => a + b, 0);
    if (this.temperature <= 0) {
      if (w[0] / sum < pMin) return null;
      return { token: top[0] };
    }
    const probs = new Float32Array(logits.length);
    top.forEach((id, k) => {
      probs[id] = w[k] / sum;
    });
    const u = this.rng.nextDouble() * sum;
    let run = 0;
    for (let k = 0; k < top.length; k++) {
      run += w[k];
      if (run > u) return { token: top[k], probs };
    }
    return { token: top[top.length - 1], probs };
  }
}

/** The TOP_K highest logits' ids, best first (ties: lower id first). */
function topTokens(logits: Float32Array): number[] {
  const top: number[] = [];
  for (let i = 0; i < logits.length; i++) {
    if (top.length === TOP_K && logits[i] <= logits[top[TOP_K - 1]]) continue;
    let j = top.length < TOP_K ? top.length : TOP_K - 1;
    while (j > 0 && logits[top[j - 1]] < logits[i]) j--;
    top.splice(j, 0, i);
    if (top.length > TOP_K) top.pop();
  }
  return top;
}
