// Loading the kernel module: the relaxed-SIMD build when the runtime supports relaxed
// SIMD (Node 20 needs V8's --experimental-wasm-relaxed-simd, which we turn on before
// compiling; Node 22 has it on by default), else the SIMD128 build. LLAMA_TS_CPU_SIMD
// (relaxed | strict) forces one.

import { platform } from '../../platform/index.js';
import { Wasm, type WasmModule } from './wasm-api.js';

export type Variant = 'relaxed' | 'strict';

const FILES: Record<Variant, string> = { relaxed: 'kernels-relaxed.wasm', strict: 'kernels-simd.wasm' };

/** The module's bytes: next to the compiled JavaScript, or in the source tree. */
function bytesOf(v: Variant): Uint8Array {
  const candidates = [
    new URL(`./wasm/${FILES[v]}`, import.meta.url),
    new URL(`../../../../src/backends/cpu/wasm/${FILES[v]}`, import.meta.url),
  ];
  for (const u of candidates) {
    try {
      return platform.readAsset(u);
    } catch {}
  }
  throw new Error(`cpu: kernel module ${FILES[v]} not found (run npm run build:wasm)`);
}

let relaxedOk: boolean | undefined;

/** Whether this runtime can compile the relaxed-SIMD build (enabling it on Node 20). */
export function relaxedSimdSupported(): boolean {
  if (relaxedOk !== undefined) return relaxedOk;
  const bytes = bytesOf('relaxed');
  relaxedOk = Wasm.validate(bytes);
  if (!relaxedOk) {
    try {
      platform.engineFlag('--experimental-wasm-relaxed-simd');
      relaxedOk = Wasm.validate(bytes);
    } catch {
      relaxedOk = false;
    }
  }
  return relaxedOk;
}

/** The variant to use: the forced one, else relaxed where supported. */
export function chooseVariant(forced?: Variant): Variant {
  const env = platform.env('LLAMA_TS_CPU_SIMD');
  const want = forced ?? (env === 'strict' || env === 'relaxed' ? env : undefined);
  if (want === 'strict') return 'strict';
  if (want === 'relaxed') {
    if (!relaxedSimdSupported()) throw new Error('cpu: relaxed SIMD requested but this runtime cannot compile it');
    return 'relaxed';
  }
  return relaxedSimdSupported() ? 'relaxed' : 'strict';
}

const compiled = new Map<Variant, WasmModule>();

export function kernelModule(v: Variant): WasmModule {
  let m = compiled.get(v);
  if (!m) {
    if (v === 'relaxed' && !relaxedSimdSupported()) throw new Error('cpu: relaxed SIMD is not available');
    m = new Wasm.Module(bytesOf(v));
    compiled.set(v, m);
  }
  return m;
}
