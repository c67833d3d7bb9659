// The batcher: N generation units over one context, one decode per step (continuous
// batching, as llama-server's slots). Each of the N sequences of the context is a slot:
// it keeps the tokens its memory holds between requests, and a queued unit goes to the
// free slot where its prompt reuses more cached tokens than it discards (chooseSlot),
// else an empty one, else the one used least recently: a conversation returns to its
// own slot, and a new one evicts the slot most likely abandoned, not a conversation that
// just ran because it shares a template or system prompt with it. Every step
// gathers one batch (one token per generating unit, then prompt chunks up to n_batch:
// prompts and generated tokens share the batch), decodes it once, and gives each unit
// its row of logits. Between steps the event loop runs (new requests, stops, I/O).
//
// The library's completion() is one unit on a batcher of one slot; its parallel API and
// the server are N units on a batcher of N slots. A unit may ask for one slot (id_slot:
// it waits for that one, others pass it); a unit with followers (n_cmpl: completions of
// one prompt) takes a slot for each at once, evaluates the prompt alone, and its cache
// cells and logits are copied to each follower when its last prompt token is decoded.
//
// Units that apply different LoRA adapters are not decoded together (the graph applies one
// set): each step serves one set, taking turns. With a drafter (speculative decoding), a
// generating unit's next token is followed in the batch by the tokens drafted after it
// (drafts for every unit in one drafter call), every row's logits are kept, the unit
// verifies them, and the memory drops the drafted tokens it did not accept.

import { logger } from '../log.js';
import { type Context, KVCacheFullError } from '../model/index.js';
import { platform } from '../platform/index.js';
import type { Draft, Drafter, DraftRequest } from '../speculative/index.js';
import { OptionError } from './errors.js';
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
  /** Evaluates the media items of prompts (multimodal): without it a prompt holds none. */
  media?: PromptMedia;
}

/**
 * The media items prompts hold: each is a run of one negative placeholder id (one per
 * position it takes, derived from a hash of its content, so a cached prefix with the same
 * image is reused), evaluated whole into a sequence at a position.
 */
export interface PromptMedia {
  /** Positions the item with this placeholder id takes. */
  positions(id: number): number;
  /** Evaluates the item into sequence `seq` from position `pos` (called inside compute). */
  evaluate(id: number, seq: number, pos: number): Promise<void>;
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
  /** llama-ts: the slot the request runs in (-1 while queued). */
  id_slot: number;
}

/** One slot: what it runs and what its memory holds (the server's /slots and /metrics). */
export interface SlotStatus {
  /** The slot's sequence id. */
  id: number;
  /** Tokens of context it may hold. */
  n_ctx: number;
  is_processing: boolean;
  /** The request it runs (its status's request_id), or -1. */
  request_id: number;
  state: 'idle' | 'processing_prompt' | 'generating';
  /** Tokens its memory holds: the cached prefix the next request on it may reuse. */
  n_cached: number;
  /** The running request's prompt tokens, and tokens generated so far (0 when idle). */
  n_prompt_tokens: number;
  n_decoded: number;
}

export interface BatcherStatus {
  n_parallel: number;
  active_slots: number;
  queued_requests: number;
  requests: RequestStatus[];
  /** Every slot, by id (a llama-ts addition to llama.node's status). */
  slots: SlotStatus[];
  n_decode_total: number;
  n_tokens_total: number;
  /** Speculative decoding: tokens drafted, and accepted. */
  n_draft_total: number;
  n_draft_accepted_total: number;
}

interface Slot extends Sequence {
  unit: GenerationUnit | undefined;
  /** When it last took a unit (the batcher's count of assignments; 0: never). */
  lastUsed: number;
  /** Held by withSlot (a save or restore): no unit is assigned to it meanwhile. */
  held?: boolean;
}

/**
 * How much a prompt gains from a slot: the cached tokens it reuses (its common prefix
 * with the slot's tokens) less the cached tokens it would discard. A conversation's next
 * turn scores about its whole history on its own slot; an unrelated prompt scores 0 on
 * an empty slot and less on one holding another conversation.
 */
export function slotScore(commonPrefix: number, cached: number): number {
  return commonPrefix - (cached - commonPrefix);
}

/** A free slot as chooseSlot sees it. */
export interface SlotCandidate {
  /** Tokens the prompt shares with the slot's cached tokens (from the start). */
  commonPrefix: number;
  /** Tokens the slot's memory holds. */
  cached: number;
  /** When it last took a unit (a count of assignments; 0: never). */
  lastUsed: number;
}

/**
 * The index of the slot a prompt goes to: the one where it gains most (slotScore > 0;
 * ties: the least recently used), else an empty one, else the least recently used. When
 * no slot gains, recency decides, not the tokens a slot would lose: with a shared system
 * prompt, a new conversation loses fewer tokens on an active conversation's slot than on
 * an older, shorter one's, and taking it would cascade (that conversation's next turn
 * takes another's). llama-server: the longest prefix over 10% of the prompt, else the
 * least recently used slot, which lets a shared system prompt pull a new conversation
 * onto an active one's slot.
 */
export function chooseSlot(candidates: readonly SlotCandidate[]): number {
  let best = -1;
  let bestScore = 0;
  for (const [i, c] of candidates.entries()) {
    const score = slotScore(c.commonPrefix, c.cached);
    if (score > bestScore || (score === bestScore && best >= 0 && c.lastUsed < candidates[best]!.lastUsed)) {
      best = i;
      bestScore = score;
    }
  }
  if (best >= 0) return best;
  for (const [i, c] of candidates.entries()) {
    if (best < 0) best = i;
    const b = candidates[best]!;
    const emptier = (c.cached === 0 ? 0 : 1) - (b.cached === 0 ? 0 : 1);
    if (emptier < 0 || (emptier === 0 && c.lastUsed < b.lastUsed)) best = i;
  }
  return best;
}

/** A slot asked for by a save or restore is running a request. */
export class SlotBusyError extends Error {
  override name = 'SlotBusyError';
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
  private assignments = 0;
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
    const add = (u: GenerationUnit, slot: number) => {
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
        id_slot: slot,
      });
    };
    for (const s of this.slots) if (s.unit) add(s.unit, s.seq);
    for (const u of this.queue) add(u, -1);
    const slots = this.slots.map((s): SlotStatus => {
      const u = s.unit?.state === 'done' ? undefined : s.unit;
      return {
        id: s.seq,
        n_ctx: this.opts.nCtxSeq,
        is_processing: u !== undefined,
        request_id: u?.id ?? -1,
        state: u === undefined ? 'idle' : u.state === 'generating' ? 'generating' : 'processing_prompt',
        n_cached: s.tokens.length,
        n_prompt_tokens: u?.promptLength ?? 0,
        n_decoded: u?.tokensGenerated ?? 0,
      };
    });
    return {
      n_parallel: this.slots.length,
      active_slots: this.nBusy,
      queued_requests: this.queue.length,
      requests,
      slots,
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
      for (const u of [unit, ...unit.followers]) {
        u.stop();
        u.checkStop();
      }
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

  /**
   * Runs `fn` on an idle slot (its sequence: a save, restore or erase), holding it so no
   * unit takes it meanwhile. Throws when the slot does not exist or is busy.
   */
  async withSlot<T>(seq: number, fn: (s: Sequence) => T | Promise<T>): Promise<T> {
    const s = this.slots[seq];
    if (!s) throw new OptionError('id_slot', seq, `there is no slot ${seq} (slots 0..${this.slots.length - 1})`);
    if (s.unit || s.held) throw new SlotBusyError(`slot ${seq} is busy`);
    s.held = true;
    try {
      return await fn(s);
    } finally {
      s.held = false;
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
    for (let i = 0; i < n; i++) next.push(this.slots[i] ?? { seq: i, tokens: [], unit: undefined, lastUsed: 0 });
    this.slots = next;
  }

  /** Forget every slot's cached tokens (after the memory was cleared or replaced). */
  forgetAll(): void {
    for (const s of this.slots) s.tokens = [];
  }

  /** Stops the loop: queued units fail, running ones end (interrupted). */
  async close(): Promise<void> {
    this.closed = true;
    for (const u of this.queue.splice(0)) {
      for (const x of [u, ...u.followers]) x.fail(new Error('the context was released'));
    }
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

  /**
   * Puts queued units into free slots, in order: each where chooseSlot says, or in the
   * slot it asked for (id_slot: it waits for that slot, and the units after it may pass
   * it); a unit with followers (n_cmpl) waits for a free slot for each.
   */
  private assign(): void {
    if (this.paused > 0) return;
    for (let qi = 0; qi < this.queue.length; ) {
      const unit = this.queue[qi]!;
      if (unit.checkStop()) {
        this.queue.splice(qi, 1);
        for (const f of unit.followers) f.checkStop();
        continue;
      }
      const free = this.slots.filter((s) => !s.unit && !s.held);
      if (free.length === 0) return;
      const need = 1 + unit.followers.length;
      const fail = (e: unknown) => {
        this.queue.splice(qi, 1);
        unit.fail(e);
        for (const f of unit.followers) f.fail(e);
      };
      if (need > this.slots.length) {
        fail(new OptionError('n_cmpl', need, `needs ${need} slots; there are ${this.slots.length}`));
        continue;
      }
      let best: Slot | undefined;
      const want = unit.request.idSlot;
      if (want >= 0) {
        const slot = this.slots[want];
        if (!slot) {
          fail(new OptionError('id_slot', want, `there is no slot ${want} (slots 0..${this.slots.length - 1})`));
          continue;
        }
        if (slot.unit || slot.held || free.length < need) {
          qi++;
          continue;
        }
        best = slot;
      } else {
        if (free.length < need) return;
        best =
          free[
            chooseSlot(
              free.map((s) => ({ commonPrefix: unit.sharedPrefix(s), cached: s.tokens.length, lastUsed: s.lastUsed })),
            )
          ];
      }
      this.queue.splice(qi, 1);
      const place = (s: Slot) => ({
        sequence: s,
        memory: this.memory,
        nCtx: this.opts.nCtxSeq,
        ctxShift: this.opts.ctxShift,
      });
      try {
        unit.begin(place(best!));
        best!.unit = unit;
        best!.lastUsed = ++this.assignments;
      } catch (e) {
        unit.fail(e);
        for (const f of unit.followers) f.fail(e);
        continue;
      }
      const others = free.filter((s) => s !== best);
      for (const f of unit.followers) {
        const s = others.shift()!;
        f.beginFollower(place(s));
        s.unit = f;
        s.lastUsed = ++this.assignments;
      }
    }
  }

  private async loop(): Promise<void> {
    try {
      while (!this.closed || this.nBusy > 0) {
        this.assign();
        const busy = this.slots.filter((s) => s.unit);
        // stops asked for since the last step
        let freed = false;
        for (const s of busy) {
          if (!s.unit!.checkStop()) continue;
          this.release(s);
          freed = true;
        }
        // a slot a stop freed goes to a queued unit now, not when the next request wakes the loop
        if (freed) this.assign();
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
        await new Promise<void>((res) => platform.nextTask(res));
      }
    } finally {
      this.running = false;
      this.notifyIdle();
    }
  }

  private release(s: Slot): void {
    s.unit = undefined;
  }

  /** Drops the cache of one idle slot (the least recently used); false when no idle slot holds any. */
  private evictIdle(): boolean {
    let victim: Slot | undefined;
    for (const s of this.slots) {
      if (s.unit || s.tokens.length === 0) continue;
      if (!victim || s.lastUsed < victim.lastUsed) victim = s;
    }
    if (!victim) return false;
    log.warn(`the context is full: dropping the ${victim.tokens.length} cached tokens of idle slot ${victim.seq}`);
    this.memory.remove(victim.seq, -1, -1);
    victim.tokens = [];
    return true;
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
    // media items next in a prompt: each evaluated whole (its own decodes), before the batch
    for (const s of this.slots) {
      const u = s.unit;
      if (u?.state !== 'prompt' || u.leader || u.loraKey !== key) continue;
      const id = u.nextMedia;
      if (id === undefined) continue;
      const media = this.opts.media;
      try {
        if (!media) throw new Error('the prompt holds media but the context has no multimodal projector');
        const n = media.positions(id);
        if (key !== this.loraSet) {
          this.ctx.setLoras(lead.loras);
          this.loraSet = key;
        }
        const pos = s.tokens.length;
        await this.compute(() => media.evaluate(id, s.seq, pos));
        s.tokens.push(...u.takeMedia(n));
      } catch (e) {
        u.fail(e);
        this.release(s);
      }
    }
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
      // a follower (n_cmpl) evaluates nothing: it copies its leader's prompt
      if (u?.state !== 'prompt' || u.leader || u.loraKey !== key) continue;
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
    // slots that share the context (kv_unified) can fill it: idle slots' caches make room,
    // one at a time, as llama-server's; when none is left the step fails
    for (;;) {
      try {
        await this.compute(() => this.ctx.decode({ tokens, pos, seqIds, logits }));
        break;
      } catch (e) {
        if (!(e instanceof KVCacheFullError) || !this.evictIdle()) throw e;
      }
    }
    for (const s of this.slots) s.unit?.reportProgress();
    await this.prefillDrafts(outs);
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
      const logits = this.ctx.getLogits(o.row);
      try {
        if (o.promptDone) unit.promptDone(t1);
        unit.onLogits(logits);
      } catch (e) {
        unit.fail(e);
      }
      if (unit.finished) this.release(slot);
      if (o.promptDone) this.startFollowers(unit, logits, t1);
    }
  }

  /**
   * Speculative decoding: a draft model evaluates the prompts finished in this step as part
   * of prompt processing (as llama.cpp's server does), not at the first draft.
   */
  private async prefillDrafts(
    outs: readonly { slot: Slot; unit: GenerationUnit; promptDone: boolean }[],
  ): Promise<void> {
    const drafter = this.opts.drafter;
    if (!drafter?.prefill) return;
    const reqs = outs
      .filter((o) => o.promptDone && o.unit.draft && o.slot.unit === o.unit && o.unit.state !== 'done')
      .map((o) => ({ seq: o.slot.seq, tokens: o.slot.tokens }));
    if (reqs.length === 0) return;
    try {
      await this.compute(() => drafter.prefill!(reqs));
    } catch (e) {
      // as a failed draft: the first draft catches up instead (or fails in turn)
      log.warn(`drafting failed: ${(e as Error).message}`);
    }
  }

  /** n_cmpl: the leader's prompt is evaluated: each follower copies its cache and samples from its logits. */
  private startFollowers(leader: GenerationUnit, logits: Float32Array, t: number): void {
    for (const f of leader.followers) {
      const slot = this.slots.find((s) => s.unit === f);
      if (!slot || f.state !== 'prompt') continue;
      try {
        f.copyPrompt(leader);
        f.promptDone(t);
        f.onLogits(logits);
      } catch (e) {
        f.fail(e);
      }
      if (f.finished) this.release(slot);
    }
  }
}
