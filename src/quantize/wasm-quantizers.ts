// The K-quant reference quantizers in WebAssembly (assembly/kquantize.ts, in the CPU
// device's kernel module): the same bytes as the JavaScript ones in
// src/ggml/quants/quantize-k.ts (f32 arithmetic is native there rather than emulated),
// several times faster. useWasmQuantizers() registers them as the Q2_K..Q6_K block
// quantizers of the calling thread (quantize(), quantizeRows() without an importance matrix);
// each thread instantiates the module once, over a small memory of its own. The
// quantization workers (rows.ts) and the test-model generator's use it.

import { chooseVariant, kernelModule } from '../backends/cpu/wasm.js';
import { Wasm, type WasmMemory } from '../backends/cpu/wasm-api.js';
import type { QuantizeFn } from '../ggml/quants/codec.js';
import { registerQuantizer } from '../ggml/quants/index.js';
import { quantizeQ2_K, quantizeQ3_K, quantizeQ4_K, quantizeQ5_K, quantizeQ6_K } from '../ggml/quants/quantize-k.js';
import { GGMLType } from '../ggml/types.js';
import { logger } from '../log.js';

const log = logger('quantize');

type Exports = Record<
  'kqQ2_K' | 'kqQ3_K' | 'kqQ4_K' | 'kqQ5_K' | 'kqQ6_K',
  (x: number, y: number, nb: number) => void
> & {
  kqInit(s: number): void;
};

const PAGE = 65536;
/** Blocks converted per call: 1 MiB of f32 in, under 256 KiB out. */
const PIECE = 1024;
const SCRATCH = 4096;
const IN = PAGE;
const OUT = IN + PIECE * 1024;

let inst: { ex: Exports; memory: WasmMemory } | null | undefined;

function instance(): { ex: Exports; memory: WasmMemory } | null {
  if (inst !== undefined) return inst;
  try {
    const memory = new Wasm.Memory({ initial: Math.ceil((OUT + PIECE * 210) / PAGE), maximum: 65536, shared: true });
    const ex = new Wasm.Instance(kernelModule(chooseVariant()), { env: { memory } }).exports as unknown as Exports;
    ex.kqInit(SCRATCH);
    inst = { ex, memory };
  } catch (e) {
    log.warn(`WebAssembly quantizers unavailable, using the JavaScript ones: ${(e as Error).message}`);
    inst = null;
  }
  return inst;
}

function wasmBlocks(name: keyof Exports, typeSize: number, fallback: QuantizeFn): QuantizeFn {
  return (src, srcOff, dst, dstOff, nb) => {
    const w = instance();
    if (!w) return fallback(src, srcOff, dst, dstOff, nb);
    const fn = w.ex[name] as (x: number, y: number, nb: number) => void;
    const buf = w.memory.buffer;
    const f32 = new Float32Array(buf, IN, PIECE * 256);
    const out = new Uint8Array(buf, OUT, PIECE * typeSize);
    for (let b = 0; b < nb; b += PIECE) {
      const n = Math.min(PIECE, nb - b);
      f32.set(src.subarray(srcOff + b * 256, srcOff + (b + n) * 256));
      fn(IN, OUT, n);
      dst.set(out.subarray(0, n * typeSize), dstOff + b * typeSize);
    }
  };
}

let registered = false;

/** Registers the WebAssembly quantizers on this thread (once); the JavaScript ones stay the fallbacks. */
export function useWasmQuantizers(): void {
  if (registered) return;
  registered = true;
  registerQuantizer(GGMLType.Q2_K, wasmBlocks('kqQ2_K', 84, quantizeQ2_K));
  registerQuantizer(GGMLType.Q3_K, wasmBlocks('kqQ3_K', 110, quantizeQ3_K));
  registerQuantizer(GGMLType.Q4_K, wasmBlocks('kqQ4_K', 144, quantizeQ4_K));
  registerQuantizer(GGMLType.Q5_K, wasmBlocks('kqQ5_K', 176, quantizeQ5_K));
  registerQuantizer(GGMLType.Q6_K, wasmBlocks('kqQ6_K', 210, quantizeQ6_K));
}

/** The WebAssembly block quantizer of a K-quant type, for tests (no fallback). */
export function wasmQuantizer(type: GGMLType): QuantizeFn | undefined {
  const t: Partial<Record<number, [keyof Exports, number]>> = {
    [GGMLType.Q2_K]: ['kqQ2_K', 84],
    [GGMLType.Q3_K]: ['kqQ3_K', 110],
    [GGMLType.Q4_K]: ['kqQ4_K', 144],
    [GGMLType.Q5_K]: ['kqQ5_K', 176],
    [GGMLType.Q6_K]: ['kqQ6_K', 210],
  };
  const e = t[type];
  if (!e || !instance()) return undefined;
  return wasmBlocks(e[0], e[1], () => {
    throw new Error('unreachable');
  });
}
