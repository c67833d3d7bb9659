// The shared control block between the main thread and the workers (one Int32Array over
// a SharedArrayBuffer), and the step records of a job.
//
// A job is a list of steps; every participating worker runs its share of each step
// (kernels split their work by thread index) and meets the others at a barrier before
// the next. The main thread writes the steps, bumps GEN and awaits FINISHED with
// Atomics.waitAsync: it never computes and its event loop stays free.

export const C = {
  /** Job generation: bumped by the main thread to start a job. */
  GEN: 0,
  NSTEPS: 1,
  /** Workers taking part (indices 0 .. NTH-1). */
  NTH: 2,
  BAR_COUNT: 3,
  BAR_GEN: 4,
  DONE: 5,
  /** Set to the job's GEN by the last worker to finish. */
  FINISHED: 6,
  /** Non-zero once a step failed; the message is at ERR_MSG. */
  ERROR: 7,
  /** Workers exit when they see this set. */
  QUIT: 8,
  ERR_LEN: 9,
  ERR_MSG: 16,
  ERR_CAP: 240,
  STEPS: 256,
} as const;

/** Int32 words per step: arena, kernel, node address, flags, then kernel-specific words. */
export const STEP_WORDS = 8;

/** Step flags (word 3): one worker runs the step alone (too small to split): worker `flags >>> 8`. */
export const F_SINGLE = 1;
/** Step flags: no barrier after the step (the next steps up to the phase's last one are independent of it, or on the same worker). */
export const F_NO_BARRIER = 2;
export const STEP_CAP = 16384;
export const CONTROL_WORDS = C.STEPS + STEP_CAP * STEP_WORDS;

/** Pseudo-kernels run in JavaScript by the workers. */
export const K_COPY = -1;
/** Each worker takes one arena memory from its message port and instantiates the kernels on it. */
export const K_ARENA = -2;
/**
 * Each worker faults in its share of a range of an arena (words: arena, kernel, start, flags,
 * length), adding 0 atomically to one word per page so bytes written meanwhile are kept.
 */
export const K_TOUCH = -3;

/** Kernel exports of the wasm module, by id (a step's kernel word). */
import type { WasmModule } from './wasm-api.js';

export const KERNELS = [
  'k_add',
  'k_mul',
  'k_scale',
  'k_silu',
  'k_gelu',
  'k_rms_norm',
  'k_norm',
  'k_soft_max',
  'k_rope',
  'k_cpy',
  'k_get_rows',
  'k_set_rows',
  'k_flash_attn',
  'k_mm_prep',
  'k_mm',
  'k_read_bw',
  // mixtures of experts
  'k_mmid',
  'k_add_id',
  'k_argsort',
  'k_swiglu_oai',
  'k_sum_rows',
  'k_div',
  'k_sigmoid',
  'k_clamp',
  'k_concat',
  'k_tanh',
  'k_flash_attn_row',
  'k_flash_attn_merge',
  'k_ssm_conv',
  'k_ssm_scan',
  'k_gated_delta_net',
  'k_l2_norm',
  'k_softplus',
  'k_relu',
  'k_sqr',
] as const;

export type KernelName = (typeof KERNELS)[number];

export function kernelId(name: KernelName): number {
  return KERNELS.indexOf(name);
}

export interface WorkerInit {
  control: SharedArrayBuffer;
  module: WasmModule;
  index: number;
  /** GEN when the worker was created (it waits for the next one). */
  gen: number;
}
