// Continuous batching, as llama-server's slots: N slots, each a sequence id in one shared
// context. Every step gathers one batch from all busy slots (one token per generating
// slot, then prompt chunks up to the batch size), calls `ctx.decode` once, and samples
// each slot's next token from its own row of logits. A slot keeps the tokens its
// sequence holds in the KV cache; a new task goes to the slot sharing the longest
// prefix with its prompt, and only the rest of the prompt is evaluated.
//
//   idle ──assign──► prompt ──last prompt token decoded──► generating ──stop/length──► idle
//                      └──────────── cancel (client gone) / error ───────────────────► idle
import type { Context } from '../model/index.js';
import {
  type ProbabilityRow,
  postSamplingProbabilities,
  rawProbabilities,
  type SamplerChain,
  StopStringMatcher,
} from '../sampling/index.js';
import type { StreamDecoder, Vocab } from '../vocab/index.js';
import type { Metrics } from './metrics.js';

export type FinishReason = 'stop' | 'length';

/** One generated piece of text (may be empty while a stop string or a UTF-8 character is pending). */
export interface TokenEvent {
  token: number;
  text: string;
  probs?: ProbabilityRow;
}

export interface TaskTimings {
  prompt_n: number;
  prompt_ms: number;
  predicted_n: number;
  predicted_ms: number;
  cache_n: number;
}

export interface TaskResult {
  text: string;
  tokens: number[];
  finishReason: FinishReason;
  stoppingWord: string | undefined;
  promptTokens: number;
  timings: TaskTimings;
  probs: ProbabilityRow[];
}

export interface TaskParams {
  prompt: number[];
  /** Tokens to generate at most; < 0: until the slot's context is full. */
  nPredict: number;
  sampler: SamplerChain;
  stop: string[];
  /** Top probabilities per token; 0: the chosen token's only; < 0: none. */
  nProbs: number;
  postSamplingProbs: boolean;
  onToken?: (ev: TokenEvent) => void;
}

export class QueueFullError extends Error {}

/** A request in the queue or in a slot. Settles `done` once. */
export class Task {
  cancelled = false;
  readonly done: Promise<TaskResult>;
  resolve!: (r: TaskResult) => void;
  reject!: (e: unknown) => void;
  /** Set when the task is in a slot. */
  slot: Slot | undefined;
  settled = false;
  private onCancel: (() => void) | undefined;

  constructor(readonly params: TaskParams) {
    this.done = new Promise<TaskResult>((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
    // a cancelled task's promise may never be awaited
    this.done.catch(() => {});
  }

  bindCancel(fn: () => void): void {
    this.onCancel = fn;
  }

  /** The client went away: leave the queue or free the slot now. */
  cancel(): void {
    if (this.cancelled || this.settled) return;
    this.cancelled = true;
    this.onCancel?.();
    this.settle(() => this.reject(new Error('cancelled')));
  }

  settle(fn: () => void): void {
    if (this.settled) return;
    this.settled = true;
    fn();
  }
}

type SlotState = 'idle' | 'prompt' | 'generating';

export class Slot {
  state: SlotState = 'idle';
  task: Task | undefined;
  /** Tokens this slot's sequence holds in the KV cache, positions 0 … n-1. */
  cache: number[] = [];
  /** Prompt tokens not evaluated yet. */
  pending: number[] = [];
  /** The token sampled last, to be evaluated in the next step. */
  next = -1;
  generated: number[] = [];
  text = '';
  probs: ProbabilityRow[] = [];
  decoder: StreamDecoder | undefined;
  stops: StopStringMatcher | undefined;
  cacheN = 0;
  tStart = 0;
  tPromptDone = 0;
  /** When the step that completed the prompt started (prompt time ends with it). */

  constructor(readonly id: number) {}

  get busy(): boolean {
    return this.state !== 'idle';
  }
}

export interface SchedulerOptions {
  parallel: number;
  /** Tokens of context each slot may use. */
  nCtxSlot: number;
  /** Tasks waiting for a slot, at most. */
  maxQueue: number;
  metrics?: Metrics;
  /** Runs a decode exclusively of other contexts' evaluations (the cpu device needs it). */
  exclusive?: <T>(fn: () => Promise<T>) => Promise<T>;
}

export class SlotScheduler {
  readonly slots: Slot[];
  readonly queue: Task[] = [];
  private stopped = false;
  private wake: (() => void) | undefined;
  private readonly loopDone: Promise<void>;

  constructor(
    readonly ctx: Context,
    readonly vocab: Vocab,
    readonly opts: SchedulerOptions,
  ) {
    if (opts.parallel > ctx.nSeqMax) throw new Error(`parallel ${opts.parallel} > context sequences ${ctx.nSeqMax}`);
    this.slots = Array.from({ length: opts.parallel }, (_, i) => new Slot(i));
    this.loopDone = this.loop();
  }

  get nBusy(): number {
    return this.slots.filter((s) => s.busy).length;
  }

  /** Queue a task; throws QueueFullError when the queue is at its limit. */
  submit(params: TaskParams): Task {
    // waiting tasks beyond the free slots count against the queue limit
    const free = this.slots.filter((s) => !s.busy).length;
    if (this.queue.length >= this.opts.maxQueue + free) throw new QueueFullError('the server is busy');
    const task = new Task(params);
    task.bindCancel(() => {
      const i = this.queue.indexOf(task);
      if (i >= 0) this.queue.splice(i, 1);
      if (task.slot) this.release(task.slot);
      this.opts.metrics?.onCancel();
    });
    this.queue.push(task);
    this.kick();
    return task;
  }

  /** Stop the loop; queued and running tasks fail. */
  async close(): Promise<void> {
    this.stopped = true;
    for (const t of [...this.queue]) t.settle(() => t.reject(new Error('server shutting down')));
    this.queue.length = 0;
    for (const s of this.slots) {
      const t = s.task;
      if (t) t.settle(() => t.reject(new Error('server shutting down')));
      this.release(s);
    }
    this.kick();
    await this.loopDone;
  }

  private kick(): void {
    const w = this.wake;
    this.wake = undefined;
    w?.();
  }

  private release(slot: Slot): void {
    if (slot.task) slot.task.slot = undefined;
    slot.task = undefined;
    slot.state = 'idle';
    slot.pending = [];
    slot.next = -1;
    slot.decoder = undefined;
    slot.stops = undefined;
  }

  /** Longest common prefix of two token lists. */
  static commonPrefix(a: readonly number[], b: readonly number[]): number {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a[i] === b[i]) i++;
    return i;
  }

  private assign(): void {
    while (this.queue.length > 0) {
      const free = this.slots.filter((s) => !s.busy);
      if (free.length === 0) return;
      const task = this.queue.shift()!;
      const prompt = task.params.prompt;
      // the idle slot whose cached tokens share the longest prefix (ties: the least used)
      let best = free[0]!;
      let bestLcp = -1;
      for (const s of free) {
        const lcp = SlotScheduler.commonPrefix(s.cache, prompt);
        if (lcp > bestLcp) {
          best = s;
          bestLcp = lcp;
        }
      }
      // at least one prompt token must be evaluated to get logits
      const keep = Math.min(bestLcp, prompt.length - 1);
      this.ctx.seqRm(best.id, keep, -1);
      best.cache = prompt.slice(0, keep);
      best.pending = prompt.slice(keep);
      best.cacheN = keep;
      best.task = task;
      task.slot = best;
      best.state = 'prompt';
      best.next = -1;
      best.generated = [];
      best.text = '';
      best.probs = [];
      best.decoder = this.vocab.streamDecoder();
      best.stops = task.params.stop.length > 0 ? new StopStringMatcher(task.params.stop) : undefined;
      best.tStart = performance.now();
      best.tPromptDone = 0;
    }
  }

  private async loop(): Promise<void> {
    while (!this.stopped) {
      this.assign();
      const busy = this.slots.filter((s) => s.busy);
      if (busy.length === 0) {
        await new Promise<void>((res) => {
          this.wake = res;
        });
        continue;
      }
      try {
        await this.step(busy);
      } catch (e) {
        // a failed decode fails every task in it; their sequences are dropped
        for (const s of busy) {
          const t = s.task;
          if (t) t.settle(() => t.reject(e));
          this.ctx.seqRm(s.id, -1, -1);
          s.cache = [];
          this.release(s);
        }
      }
      // let I/O (new requests, disconnects, writes) run between steps
      await new Promise<void>((res) => setImmediate(res));
    }
  }

  private async step(busy: Slot[]): Promise<void> {
    const tokens: number[] = [];
    const pos: number[] = [];
    const seqIds: number[] = [];
    const logits: boolean[] = [];
    /** Slot and its task for each batch row that outputs logits. */
    const outs: { slot: Slot; task: Task; row: number; promptDone: boolean }[] = [];
    const budget = this.ctx.nBatch;
    let nPrompt = 0;
    let nGen = 0;
    for (const s of busy) {
      if (s.state !== 'generating') continue;
      outs.push({ slot: s, task: s.task!, row: tokens.length, promptDone: false });
      tokens.push(s.next);
      pos.push(s.cache.length);
      seqIds.push(s.id);
      logits.push(true);
      s.cache.push(s.next);
      nGen++;
    }
    for (const s of busy) {
      if (s.state !== 'prompt') continue;
      const room = budget - tokens.length;
      if (room <= 0) break;
      const chunk = s.pending.splice(0, room);
      for (let i = 0; i < chunk.length; i++) {
        const last = s.pending.length === 0 && i === chunk.length - 1;
        if (last) outs.push({ slot: s, task: s.task!, row: tokens.length, promptDone: true });
        tokens.push(chunk[i]!);
        pos.push(s.cache.length);
        seqIds.push(s.id);
        logits.push(last);
        s.cache.push(chunk[i]!);
      }
      nPrompt += chunk.length;
    }
    if (tokens.length === 0) return;
    const t0 = performance.now();
    const decode = () => this.ctx.decode({ tokens, pos, seqIds, logits });
    await (this.opts.exclusive ? this.opts.exclusive(decode) : decode());
    const t1 = performance.now();
    this.opts.metrics?.onDecode(nPrompt, nGen, t1 - t0);
    for (const o of outs) {
      const { slot, task } = o;
      if (slot.task !== task || task.settled) continue; // cancelled during the decode
      if (o.promptDone) {
        slot.state = 'generating';
        slot.tPromptDone = t1;
      }
      this.sampleSlot(slot, task, this.ctx.getLogits(o.row));
    }
  }

  private sampleSlot(slot: Slot, task: Task, row: Float32Array): void {
    const p = task.params;
    const id = p.sampler.choose(row);
    p.sampler.accept(id);
    let probs: ProbabilityRow | undefined;
    if (p.nProbs >= 0) {
      probs = p.postSamplingProbs
        ? postSamplingProbabilities(p.sampler.candidates, id, p.nProbs)
        : rawProbabilities(row, id, p.nProbs);
    }
    if (this.vocab.isEog(id)) {
      this.finish(slot, task, 'stop');
      return;
    }
    slot.generated.push(id);
    if (probs) slot.probs.push(probs);
    let text = slot.decoder!.push(id);
    let stopped = false;
    if (slot.stops) {
      const m = slot.stops.push(text);
      text = m.text;
      stopped = m.stop !== undefined;
    }
    slot.text += text;
    p.onToken?.({ token: id, text, ...(probs ? { probs } : {}) });
    if (task.settled) return; // the callback cancelled it
    if (stopped) {
      this.finish(slot, task, 'stop');
      return;
    }
    const n = slot.generated.length;
    if ((p.nPredict >= 0 && n >= p.nPredict) || slot.cache.length + 1 >= this.opts.nCtxSlot) {
      this.finish(slot, task, 'length');
      return;
    }
    slot.next = id;
  }

  private finish(slot: Slot, task: Task, reason: FinishReason): void {
    // release what the stop matcher and the UTF-8 decoder still hold (not after a stop string)
    let tail = '';
    if (!slot.stops?.matched) {
      tail = slot.decoder!.flush();
      if (slot.stops) tail = slot.stops.push(tail).text + (slot.stops.matched ? '' : slot.stops.flush());
    }
    if (tail) {
      slot.text += tail;
      task.params.onToken?.({ token: -1, text: tail });
    }
    const now = performance.now();
    const promptDone = slot.tPromptDone || now;
    const result: TaskResult = {
      text: slot.text,
      tokens: slot.generated,
      finishReason: reason,
      stoppingWord: slot.stops?.matched,
      promptTokens: task.params.prompt.length,
      probs: slot.probs,
      timings: {
        prompt_n: task.params.prompt.length - slot.cacheN,
        prompt_ms: promptDone - slot.tStart,
        predicted_n: slot.generated.length + (reason === 'stop' && !slot.stops?.matched ? 1 : 0),
        predicted_ms: now - promptDone,
        cache_n: slot.cacheN,
      },
    };
    this.opts.metrics?.onTaskDone(result.timings);
    this.release(slot);
    task.settle(() => task.resolve(result));
    this.kick();
  }
}
