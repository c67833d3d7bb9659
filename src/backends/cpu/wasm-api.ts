// The few WebAssembly and Atomics.waitAsync APIs the CPU device uses, typed here: the
// project compiles against ES2022 without DOM typings, which is where TypeScript keeps them.

export interface WasmMemory {
  readonly buffer: SharedArrayBuffer;
  grow(deltaPages: number): number;
}

/** A compiled module (opaque; cloneable to workers). */
export interface WasmModule {
  readonly __wasmModule?: never;
}

export interface WasmInstance {
  readonly exports: Record<string, unknown>;
}

interface WasmApi {
  Memory: new (d: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (m: WasmModule, imports: Record<string, Record<string, unknown>>) => WasmInstance;
  validate(bytes: Uint8Array): boolean;
}

export const Wasm: WasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

type WaitAsync = (
  a: Int32Array,
  index: number,
  value: number,
  timeout?: number,
) => { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };

export const waitAsync: WaitAsync = (Atomics as unknown as { waitAsync: WaitAsync }).waitAsync;
