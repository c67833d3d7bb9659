// The batcher: N generation units over one context, one decode per step (continuous
// batching, as llama-server's slots). Each of the N sequences of the context is a slot:
// it keeps the tokens its memory holds between requests, and a queued unit goes to the
// free slot whose cached tokens share the longest prefix with its prompt. Every step
// gathers one batch (one token per generating unit, then prompt chunks up to n_batch:
// prompts and generated tokens share the batch), decodes it once, and gives each unit
// its row of logits. Between steps the event loop runs (new requests, stops, I/O).
//
// The library's completion() is one unit on a batcher of one slot; its parallel API and
// the server are N units on a batcher of N slots.
//
// Units that apply different LoRA adapters are not decoded together (the graph applies one
// set): each step serves one set, taking turns. With a drafter (speculative decoding), a
// generating unit's next token is followed in the batch by the tokens drafted after it
// (drafts for every unit in one drafter call), every row's logits are kept, the unit
// verifies them, and the memory drops the drafted tokens it did not accept.
import { logger } from '../log.js';
import type { Context } from '../model/index.js';
import type { Draft, Drafter, DraftRequest } from '../speculative/index.js';
import type { SequenceMemory } from './memory.js';
import type { GenerationUnit, Sequence } from './unit.js';

const log = logger('batcher');

/** Steps one adapter set may run in a row while units with another set wait. */
const LORA_TURN = 8;

export interface BatcherOptions {
  /** Slots (sequence ids 0 … n-1). */
  slots: number;
  /** Tokens of context each slot may use. */
  nCtxSeq: number;
  /** Tokens per decode, at most (≤ the context's n_batch). */
  nBatch: number;
  /** Shift (and cut prompts) when a slot's context fills. */
  ctxShift: boolean;
  /** Proposes tokens for units that draft (speculative decoding). */
  drafter?: Drafter;
}

/** What the batcher tells its owner after each step (counters for metrics and status). */
export interface BatcherStats {
  /** Decode calls. */
  nDecode: number;
  /** Tokens decoded in all of them. */
  nTokens: number;
  /** Tokens drafted (speculative decoding), and accepted. */
  nDrafted: number;
  nAccepted: number;
}

export interface RequestStatus {
  request_id: number;
  type: 'completion';
  state: 'queued' | 'processing_prompt' | 'generating' | 'done';
  prompt_length: number;
  tokens_generated: number;
  prompt_ms: number;
  generation_ms: number;
  tokens_per_second: number;
}

export interface BatcherStatus {
  n_parallel: number;
  active_slots: number;
  queued_requests: number;
  requests: RequestStatus[];
  n_decode_total: number;
  n_tokens_total: number;
  /** Speculative decoding: tokens drafted, and accepted. */
  n_draft_total: number;
  n_draft_accepted_total: number;
}

interface Slot extends Sequence {
  unit: GenerationUnit | undefined;
}

export class Batcher {
  private slots: Slot[] = [];
  private readonly queue: GenerationUnit[] = [];
  private opts: BatcherOptions;
  private running = false;
  private closed = false;
  private paused = 0;
  private wake: (() => void) | undefined;
  private idleWaiters: (() => void)[] = [];
  readonly stats: BatcherStats = { nDecode: 0, nTokens: 0, nDrafted: 0, nAccepted: 0 };
  /** The adapters the context applies now (their key), and the slot whose set went last. */
  private loraSet = '';
  private loraTurn = 0;
  private loraSteps = 0;
  /** Called after every step and every change of a unit's state. */
  onChange: (() => void) | undefined;

  constructor(
    readonly ctx: Context,
    readonly memory: SequenceMemory,
    /** Runs a decode exclusively of other contexts' evaluations (one device, one job). */
    private readonly compute: <T>(fn: () => Promise<T>) => Promise<T>,
    opts: BatcherOptions,
  ) {
    this.opts = { ...opts };
    this.resize(opts.slots);
  }

  get options(): Readonly<BatcherOptions> {
    return this.opts;
  }

  /** The sequence slot `seq` holds (its cached tokens), for sessions. */
  sequence(seq: number): Sequence {
    const s = this.slots[seq];
    if (!s) throw new RangeError(`no slot ${seq}`);
    return s;
  }

  get nBusy(): number {
    return this.slots.filter((s) => s.unit).length;
  }

  get nQueued(): number {
    return this.queue.length;
  }

  /** Whether no unit runs or waits. */
  get idle(): boolean {
    return this.queue.length === 0 && this.nBusy === 0;
  }

  status(): BatcherStatus {
    const requests: RequestStatus[] = [];
    const add = (u: GenerationUnit) => {
      const t = u.elapsed;
      requests.push({
        request_id: u.id,
        type: 'completion',
        state: u.state === 'queued' ? 'queued' : u.state === 'prompt' ? 'processing_prompt' : u.state,
        prompt_length: u.promptLength,
        tokens_generated: u.tokensGenerated,
        prompt_ms: Math.round(t.prompt),
        generation_ms: Math.round(t.generation),
        tokens_per_second: t.generation > 0 ? Math.round((u.tokensGenerated * 1e4) / t.generation) / 10 : 0,
      });
    };
    for (const s of this.slots) if (s.unit) add(s.unit);
    for (const u of this.queue) add(u);
    return {
      n_parallel: this.slots.length,
      active_slots: this.nBusy,
      queued_requests: this.queue.length,
      requests,
      n_decode_total: this.stats.nDecode,
      n_tokens_total: this.stats.nTokens,
      n_draft_total: this.stats.nDrafted,
      n_draft_accepted_total: this.stats.nAccepted,
    };
  }

  /** Queues a unit; it starts when a slot is free. */
  submit(unit: GenerationUnit): void {
    if (this.closed) {
      unit.fail(new Error('the context was released'));
      return;
    }
    this.queue.push(unit);
    this.onChange?.();
    this.kick();
  }

  /** Ends a unit: a queued one leaves the queue at once, a running one at its next step. */
  cancel(unit: GenerationUnit): void {
    const i = this.queue.indexOf(unit);
    if (i >= 0) {
      this.queue.splice(i, 1);
      unit.stop();
      unit.checkStop();
      this.onChange?.();
      this.notifyIdle();
      return;
    }
    unit.stop();
    this.kick();
  }

  /**
   * Runs `fn` with no unit running: new units wait (queued) until it ends. For work on
   * the memory (sessions) and for changing the slots.
   */
  async exclusive<T>(fn: () => T | Promise<T>): Promise<T> {
    this.paused++;
    try {
      while (this.nBusy > 0) await new Promise<void>((res) => this.idleWaiters.push(res));
      return await fn();
    } finally {
      this.paused--;
      this.kick();
    }
  }

  /** Changes the slots and their context (call inside exclusive()). Slots whose cache no longer fits are cleared. */
  configure(o: Partial<BatcherOptions>): void {
    if (this.nBusy > 0) throw new Error('Batcher.configure: units are running');
    this.opts = { ...this.opts, ...o };
    this.resize(this.opts.slots);
    for (const s of this.slots) {
      if (s.tokens.length >= this.opts.nCtxSeq) {
        this.memory.remove(s.seq, -1, -1);
        s.tokens = [];
      }
    }
  }

  private resize(n: number): void {
    for (const s of this.slots.slice(n)) {
      this.memory.remove(s.seq, -1, -1);
    }
    const next: Slot[] = [];
    for (let i = 0; i < n; i++) next.push(this.slots[i] ?? { seq: i, tokens: [], unit: undefined });
    this.slots = next;
  }

  /** Forget every slot's cached tokens (after the memory was cleared or replaced). */
  forgetAll(): void {
    for (const s of this.slots) s.tokens = [];
  }

  /** Stops the loop: queued units fail, running ones end (interrupted). */
  async close(): Promise<void> {
    this.closed = true;
    for (const u of this.queue.splice(0)) u.fail(new Error('the context was released'));
    for (const s of this.slots) s.unit?.stop();
    this.kick();
    while (this.nBusy > 0) await new Promise<void>((res) => this.idleWaiters.push(res));
  }

  private kick(): void {
    if (!this.running) {
      this.running = true;
      void this.loop();
      return;
    }
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private notifyIdle(): void {
    if (this.nBusy > 0) return;
    const w = this.idleWaiters.splice(0);
    for (const f of w) f();
  }

  /** Puts queued units into free slots, each where its prompt's cached prefix is longest. */
  private assign(): void {
    if (this.paused > 0) return;
    while (this.queue.length > 0) {
      const free = this.slots.filter((s) => !s.unit);
      if (free.length === 0) return;
      const unit = this.queue.shift()!;
      if (unit.checkStop()) continue;
      let best = free[0]!;
      let bestLcp = -1;
      for (const s of free) {
        const n = unit.sharedPrefix(s);
        if (n > bestLcp) {
          best = s;
          bestLcp = n;
        }
      }
      try {
        unit.begin({ sequence: best, memory: this.memory, nCtx: this.opts.nCtxSeq, ctxShift: this.opts.ctxShift });
        best.unit = unit;
      } catch (e) {
        unit.fail(e);
      }
    }
  }

  private async loop(): Promise<void> {
    try {
      while (!this.closed || this.nBusy > 0) {
        this.assign();
        const busy = this.slots.filter((s) => s.unit);
        // stops asked for since the last step
        for (const s of busy) if (s.unit!.checkStop()) this.release(s);
        if (this.nBusy === 0) {
          this.onChange?.();
          this.notifyIdle();
          if (this.closed) break;
          await new Promise<void>((res) => {
            this.wake = res;
          });
          continue;
        }
        try {
          await this.step();
        } catch (e) {
          // a failed decode fails every unit in it; their sequences are dropped
          for (const s of this.slots) {
            if (!s.unit) continue;
            s.unit.fail(e);
            this.memory.remove(s.seq, -1, -1);
            s.tokens = [];
            this.release(s);
          }
        }
        this.onChange?.();
        this.notifyIdle();
        // let messages and I/O (new requests, stops, writes) in between steps
        await new Promise<void>((res) => setImmediate(res));
      }
    } finally {
      this.running = false;
      this.notifyIdle();
    }
  }

  private release(s: Slot): void {
    s.unit = undefined;
  }

  /**
   * The adapter set this step serves (its first unit): the set the context applies now,
   * unless units with another set wait and the current one has had LORA_TURN steps in a
   * row; sets then take turns in slot order.
   */
  private pickLoraSet(): GenerationUnit | undefined {
    const n = this.slots.length;
    let current: GenerationUnit | undefined;
    let other: GenerationUnit | undefined;
    let otherSlot = 0;
    for (let k = 0; k < n; k++) {
      const i = (this.loraTurn + k) % n;
      const u = this.slots[i]!.unit;
      if (!u || (u.state !== 'generating' && u.state !== 'prompt')) continue;
      if (u.loraKey === this.loraSet) current ??= u;
      else if (!other) {
        other = u;
        otherSlot = i;
      }
    }
    if (current && (!other || this.loraSteps < LORA_TURN)) return current;
    if (other) this.loraTurn = (otherSlot + 1) % n;
    return other ?? current;
  }

  private async step(): Promise<void> {
    const lead = this.pickLoraSet();
    if (!lead) return;
    const key = lead.loraKey;
    const tokens: number[] = [];
    const pos: number[] = [];
    const seqIds: number[] = [];
    const logits: boolean[] = [];
    const outs: {
      slot: Slot;
      unit: GenerationUnit;
      row: number;
      promptDone: boolean;
      base: number;
      next?: number;
      draft?: Draft;
    }[] = [];
    let budget = Math.min(this.opts.nBatch, this.ctx.nBatch);
    const add = (s: Slot, t: number, wantLogits: boolean) => {
      tokens.push(t);
      pos.push(s.tokens.length);
      seqIds.push(s.seq);
      logits.push(wantLogits);
      s.tokens.push(t);
    };
    const gens: (typeof outs)[number][] = [];
    for (const s of this.slots) {
      const u = s.unit;
      if (u?.state !== 'generating' || u.loraKey !== key) continue;
      const t = u.nextToken();
      if (t < 0) {
        this.release(s);
        continue;
      }
      gens.push({ slot: s, unit: u, row: -1, promptDone: false, base: s.tokens.length, next: t });
    }
    // drafts for every unit that drafts, in one call (the drafter batches its own decodes)
    const drafter = this.opts.drafter;
    const drafts = new Map<GenerationUnit, Draft>();
    if (drafter) {
      // with a sliding window, a step that verifies drafts is one ubatch: its tokens then
      // push out only cells no position from the step on reads, so the rejected ones can
      // leave again without taking what the window needs (Context.slidingWindow)
      const window = this.memory.slidingWindow;
      let room = (window ? Math.min(budget, this.ctx.nUbatch) : budget) - gens.length;
      const reqs: { unit: GenerationUnit; req: DraftRequest }[] = [];
      for (const g of gens) {
        const s = g.slot;
        const r = g.unit.draftRequest(
          s.seq,
          [...s.tokens, g.next!],
          Math.min(room, this.opts.nCtxSeq - s.tokens.length - 1),
        );
        if (!r) continue;
        reqs.push({ unit: g.unit, req: r });
        room -= r.nMax;
      }
      if (reqs.length > 0) {
        try {
          const out = await this.compute(() => drafter.draft(reqs.map((r) => r.req)));
          reqs.forEach((r, i) => {
            if (out[i]!.tokens.length > 0) drafts.set(r.unit, out[i]!);
          });
          if (window && drafts.size > 0) budget = Math.min(budget, this.ctx.nUbatch);
        } catch (e) {
          // a drafter that fails costs its speed-up, not the requests
          log.warn(`drafting failed: ${(e as Error).message}`);
        }
      }
    }
    for (const g of gens) {
      const draft = drafts.get(g.unit);
      g.row = tokens.length;
      add(g.slot, g.next!, true);
      if (draft) {
        g.draft = draft;
        for (const t of draft.tokens) add(g.slot, t, true);
      }
      outs.push(g);
    }
    for (const s of this.slots) {
      const u = s.unit;
      if (u?.state !== 'prompt' || u.loraKey !== key) continue;
      const room = budget - tokens.length;
      if (room <= 0) break;
      const chunk = u.takePrompt(room);
      for (let i = 0; i < chunk.tokens.length; i++) {
        const last = chunk.last && i === chunk.tokens.length - 1;
        if (last) outs.push({ slot: s, unit: u, row: tokens.length, promptDone: true, base: s.tokens.length });
        add(s, chunk.tokens[i]!, last);
      }
    }
    if (tokens.length === 0) return;
    if (key !== this.loraSet) {
      this.ctx.setLoras(lead.loras);
      this.loraSet = key;
      this.loraSteps = 0;
    }
    this.loraSteps++;
    await this.compute(() => this.ctx.decode({ tokens, pos, seqIds, logits }));
    const t1 = performance.now();
    this.stats.nDecode++;
    this.stats.nTokens += tokens.length;
    for (const o of outs) {
      const { slot, unit } = o;
      if (o.draft) {
        // the drafted tokens the unit does not accept leave the memory
        let accepted = 0;
        if (slot.unit === unit && unit.state !== 'done') {
          try {
            accepted = unit.onDraftLogits((i) => this.ctx.getLogits(o.row + i), o.draft);
          } catch (e) {
            unit.fail(e);
          }
        }
        this.stats.nDrafted += o.draft.tokens.length;
        this.stats.nAccepted += accepted;
        const keep = o.base + 1 + accepted;
        slot.tokens.length = keep;
        this.memory.remove(slot.seq, keep, -1);
        if (this.memory.slidingWindow && unit.state !== 'done' && this.memory.reusablePrefix(slot.seq, keep) < keep) {
          // (a step with drafts is one ubatch, so this is a broken invariant, not a case)
          unit.fail(
            new Error(
              `speculative decoding: sequence ${slot.seq} lost window cells its next token reads (${keep} kept)`,
            ),
          );
        }
        if (unit.finished && slot.unit === unit) this.release(slot);
        continue;
      }
      if (slot.unit !== unit || unit.state === 'done') continue;
      try {
        if (o.promptDone) unit.promptDone(t1);
        unit.onLogits(this.ctx.getLogits(o.row));
      } catch (e) {
        unit.fail(e);
      }
      if (unit.finished) this.release(slot);
    }
  }
}
