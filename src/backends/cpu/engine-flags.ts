// Engine flags: choices between exact, equivalent instruction forms that the JavaScript
// engine runs at different speeds, made once per process and written into every arena's
// header (arena.ts), where the kernels read them (assembly/consts.ts). A flag changes
// speed only, never a result. The Q4_0 weight layout is such a choice too (q4_0Layout).
//
// Bit 0 (dotAdd): the relaxed build's Q4_0 kernels accumulate 8-bit dots straight into
// 32-bit lanes (i32x4.relaxed_dot_i8x16_i7x16_add_s) instead of a 16-bit dot and an add.
// V8 13 and later emit one vpdpbusd for the former on CPUs with AVX-VNNI; elsewhere it
// costs three instructions. A short probe times both forms (assembly/bench.ts,
// k_probe_dot) and checks, before and after (baseline and optimizing tier), that the
// 32-bit form is exact for signed activations (Node 20's baseline compiler returns twice
// the sum). LLAMA_TS_CPU_DOTADD=0|1 forces it (1: where it is exact).

import { logger } from '../../log.js';
import { platform } from '../../platform/index.js';
import { kernelModule, relaxedSimdSupported } from './wasm.js';
import { Wasm } from './wasm-api.js';

export const FLAG_DOT_ADD = 1;

const log = logger('backend:cpu');

let flags: number | undefined;

type Probe = (p: number, n: number, wide: number) => number;

/** The flags for this process (probed on first call). */
export function engineFlags(): number {
  flags ??= probeFlags();
  return flags;
}

let probeState: { probe: Probe; at: number } | null | undefined;

/**
 * The probe kernel on a one-page memory, with its inputs written, when the relaxed build
 * runs here and both forms compute the exact sum (activations over the whole signed
 * range, -128 and 127 included, against 7-bit weights); else null.
 */
function exactProbe(): { probe: Probe; at: number } | null {
  if (probeState !== undefined) return probeState;
  probeState = null;
  if (!relaxedSimdSupported()) return null;
  try {
    const memory = new Wasm.Memory({ initial: 1, maximum: 1, shared: true });
    const inst = new Wasm.Instance(kernelModule('relaxed'), { env: { memory } });
    const probe = inst.exports.k_probe_dot as Probe;
    const u8 = new Uint8Array(memory.buffer);
    const P = 4096;
    for (let i = 0; i < 64; i++) u8[P + i] = (i * 37 + (i === 0 ? 128 : 0)) & 255;
    u8[P + 1] = 127;
    for (let i = 0; i < 32; i++) u8[P + 64 + i] = (i * 29 + 5) & 127;
    let want = 0;
    for (let j = 0; j < 2; j++) {
      for (let k = 0; k < 4; k++) {
        for (let i = 0; i < 16; i++) want += ((u8[P + 16 * k + i] << 24) >> 24) * u8[P + 64 + 16 * j + i];
      }
    }
    if (probe(P, 1, 0) !== want) return null;
    if (probe(P, 1, 1) !== want) {
      log.debug('cpu: the 32-bit relaxed dot is not exact here; 16-bit dots only');
      return null;
    }
    probeState = { probe, at: P };
  } catch {}
  return probeState;
}

/** Whether the kernels may use the 32-bit relaxed dot here (it computes exact sums). */
export function dotAddExact(): boolean {
  return exactProbe() !== null;
}

function probeFlags(): number {
  const env = platform.env('LLAMA_TS_CPU_DOTADD');
  if (env === '0') return 0;
  const ok = exactProbe();
  if (!ok) return 0;
  if (env === '1') return FLAG_DOT_ADD;
  // best of 40 alternating runs of each form (a few milliseconds in all): the first runs
  // execute the baseline tier's code, until V8 has compiled the optimized one
  const N = 20_000;
  const time = (wide: number) => {
    const t0 = platform.now();
    ok.probe(ok.at, N, wide);
    return platform.now() - t0;
  };
  let narrow = Infinity;
  let wide = Infinity;
  for (let r = 0; r < 40; r++) {
    narrow = Math.min(narrow, time(0));
    wide = Math.min(wide, time(1));
  }
  // one instruction against two (0.7x measured on V8 13-14 with AVX-VNNI), or three
  // against two (1.5x on V8 12 there)
  // ...and the 32-bit form still exact now that the optimizing tier runs it
  const on = wide < narrow && ok.probe(ok.at, 1, 1) === ok.probe(ok.at, 1, 0);
  log.debug(`cpu: 8-bit dot probe ${(wide / narrow).toFixed(2)}x: ${on ? '32-bit' : '16-bit'} accumulation`);
  return on ? FLAG_DOT_ADD : 0;
}

/**
 * The layout of Q4_0 weights on the relaxed build: k4 (four bytes of each row in turn,
 * layout-k.ts) where V8 keeps its kernels' broadcast activation loads in registers (V8 13
 * and later: Node 24, 26), else rep4 (layout.ts; V8 11-12 spill them in the k4 kernels,
 * which then run slower than rep4's). The two give the same bits.
 * LLAMA_TS_Q4_0_LAYOUT=k4|rep4 forces one.
 */
export function q4_0Layout(): 'k4' | 'rep4' {
  const env = platform.env('LLAMA_TS_Q4_0_LAYOUT');
  if (env === 'k4' || env === 'rep4') return env;
  // (no V8 version, another engine: rep4, the layout that does not depend on it)
  return Number((platform.v8Version() ?? '0').split('.')[0]) >= 13 ? 'k4' : 'rep4';
}
