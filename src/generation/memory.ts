// What a generation unit needs from a context's memory (llama_memory_*), per sequence.
// Every memory kind answers the same questions: the KV cache (today's), and the kinds to
// come, which change the answers:
//   - a sliding-window cache keeps only the last W positions of each layer's window:
//     a prefix can be reused only up to where the cells it still holds begin
//     (`reusablePrefix`), and shifted positions are fine;
//   - a recurrent state (Mamba, RWKV) holds one state per sequence, not one cell per
//     position: it cannot drop a tail (`reusablePrefix` is all or nothing) nor shift
//     (`canShift` false);
//   - a hybrid model asks both and takes the stricter answer.
// A unit asks before it acts: how much of the cached prefix it may keep (the rest is
// evaluated again), and whether it may shift when the context fills (else it ends).
import type { Context } from '../model/index.js';

export interface SequenceMemory {
  /** Positions of a sequence can be shifted (context shift), as a KV cache's can. */
  readonly canShift: boolean;
  /**
   * Of the first `n` positions `seq` holds, how many can be kept when everything after
   * them is removed (0 … n): the prefix a new prompt may reuse.
   */
  reusablePrefix(seq: number, n: number): number;
  /**
   * Cells leave with the window (sliding-window layers): positions decoded in one ubatch can
   * be removed again without losing what earlier positions need; across ubatches they may
   * not (ask `reusablePrefix`).
   */
  readonly slidingWindow: boolean;
  /** Remove positions [p0, p1) of `seq` (p1 < 0: to the end; seq < 0: every sequence). */
  remove(seq: number, p0: number, p1: number): void;
  /** Add `delta` to positions [p0, p1) of `seq` (only when canShift). */
  shift(seq: number, p0: number, p1: number, delta: number): void;
  /** Make positions [p0, p1) of `src` belong to `dst` too. */
  copy(src: number, dst: number, p0: number, p1: number): void;
  /** Highest position `seq` holds, -1 when none. */
  posMax(seq: number): number;
  /** Forget everything. */
  clear(): void;
}

/**
 * The memory of a context, as its memory answers: a KV cache keeps any prefix and shifts;
 * with sliding-window layers a prefix is kept only while the window's cells before it are
 * still there.
 */
export function contextMemory(ctx: Context): SequenceMemory {
  return {
    canShift: ctx.canShift,
    get slidingWindow() {
      return ctx.slidingWindow;
    },
    reusablePrefix: (seq, n) => ctx.reusablePrefix(seq, n),
    remove: (seq, p0, p1) => ctx.seqRm(seq, p0, p1),
    shift: (seq, p0, p1, delta) => ctx.seqAdd(seq, p0, p1, delta),
    copy: (src, dst, p0, p1) => ctx.seqCp(src, dst, p0, p1),
    posMax: (seq) => ctx.seqPosMax(seq),
    clear: () => ctx.clearMemory(),
  };
}

/** Length of the common prefix of two token lists (the one such function in llama-ts). */
export function commonPrefix(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}
