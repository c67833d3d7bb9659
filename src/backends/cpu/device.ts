// The CPU device: WebAssembly SIMD kernels (AssemblyScript, assembly/) run by a pool of
// worker threads over shared wasm memories (arenas). Ops are split by rows over the
// threads; the main thread only encodes jobs and awaits them.

import type { Graph } from '../../ggml/graph.js';
import { isViewOp, type Tensor } from '../../ggml/tensor.js';
import { logger } from '../../log.js';
import { platform } from '../../platform/index.js';
import { tensorGetInto, tensorSet } from '../api.js';
import type {
  Backend,
  BackendEvent,
  BackendReg,
  Buffer,
  BufferType,
  Device,
  DeviceMemory,
  DeviceProps,
} from '../impl.js';
import { ARENA_HEADER, Arena, PAGE } from './arena.js';
import { type ArenaAllocator, type ArenaRange, CpuBufferType, CpuHostBufferType, isArenaBacked } from './buffer.js';
import { EXTRA_WORD, encodeGraph, RECORD_BYTES, type WorkRegions } from './encode.js';
import { canShareMemory, InlinePool, type KernelPool, Pool } from './pool.js';
import { C, K_COPY, K_TOUCH, kernelId, STEP_WORDS } from './protocol.js';
import { cpuSupportsOp } from './support.js';
import { chooseVariant, kernelModule, type Variant } from './wasm.js';
import type { WasmModule } from './wasm-api.js';

const log = logger('backend:cpu');

export interface CpuDeviceOptions {
  name?: string;
  /** Worker threads (default: LLAMA_TS_THREADS, else the number of cores). */
  threads?: number;
  /** Kernel build: 'relaxed' (relaxed SIMD) or 'strict' (SIMD128); default: the best available. */
  variant?: Variant;
  /** Pages (64 KiB) per arena; default 65535 (4 GiB less a page: the most a wasm32 memory addresses, kept under 2^32 bytes so one typed array views it). */
  arenaPages?: number;
  /**
   * Token embedding tables at least this large are left in the model file and read by rows
   * as batches need them (model loading's embeddingsOnDisk default). Default 32 MiB;
   * Infinity keeps every table in memory.
   */
  embdOnDiskMinBytes?: number;
}

function defaultThreads(): number {
  const env = Number(platform.env('LLAMA_TS_THREADS'));
  if (Number.isInteger(env) && env > 0) return env;
  return platform.cores();
}

/** Arenas of one device: buffers go in the first with room, else in a new one. */
class ArenaSet implements ArenaAllocator, WorkRegions {
  readonly arenas: Arena[] = [];
  /** Space kept free in every arena for its work region (node records, scratch). */
  readonly reserve: number;
  private readonly work = new Map<Arena, { offset: number; size: number }>();

  constructor(
    private readonly pages: number,
    private readonly onNew: (a: Arena) => void,
  ) {
    const capacity = pages * PAGE;
    this.reserve = Math.min(512 * 2 ** 20, Math.floor(capacity / 8));
  }

  get maxBufferSize(): number {
    return this.pages * PAGE - ARENA_HEADER - this.reserve;
  }

  private newArena(): Arena {
    const a = new Arena(this.arenas.length, this.pages);
    this.arenas.push(a);
    this.onNew(a);
    if (this.arenas.length > 1) log.info(`arena ${a.index} created (${this.pages * PAGE} bytes addressable)`);
    return a;
  }

  allocRange(size: number): ArenaRange {
    if (size > this.maxBufferSize)
      throw new RangeError(`cpu: ${size} bytes exceed the buffer limit ${this.maxBufferSize}`);
    for (const a of this.arenas) {
      if (a.largestFree() - size < this.reserve) continue;
      const offset = a.alloc(size);
      if (offset !== null) return { arena: a, offset };
    }
    const a = this.newArena();
    const offset = a.alloc(size);
    if (offset === null) throw new RangeError(`cpu: cannot place ${size} bytes in a new arena`);
    return { arena: a, offset };
  }

  releaseRange(r: ArenaRange, size: number): void {
    r.arena.release(r.offset, size);
  }

  /** The first arena (created on demand): where device-wide scratch goes. */
  first(): Arena {
    return this.arenas[0] ?? this.newArena();
  }

  /** Bumped whenever the work regions are handed out (what was written there may be overwritten). */
  epoch = 0;

  scratch(arena: Arena, bytes: number): number {
    return this.ensure(arena, bytes);
  }

  ensure(arena: Arena, bytes: number): number {
    this.epoch++;
    const cur = this.work.get(arena);
    if (cur && cur.size >= bytes) return cur.offset;
    if (cur) arena.release(cur.offset, cur.size);
    const size = Math.max(bytes, (cur?.size ?? 0) * 2, 1 << 20);
    const offset = arena.alloc(size) ?? arena.alloc(bytes);
    if (offset === null) throw new RangeError(`cpu: no room for ${bytes} bytes of work memory in arena ${arena.index}`);
    this.work.set(arena, { offset, size: offset !== null && arena.largestFree() >= 0 ? size : bytes });
    return offset;
  }
}

/** Reference compute is synchronous per job; an event completes once recorded work finished. */
class CpuEvent implements BackendEvent {
  pending: Promise<void> = Promise.resolve();
  constructor(readonly device: Device) {}
}

export class CpuDevice implements Device {
  readonly name: string;
  readonly description: string;
  readonly type = 'cpu' as const;
  private readonly buft: CpuBufferType;
  private readonly hostBuft: CpuHostBufferType;
  readonly arenas: ArenaSet;
  private pool: KernelPool | null = null;
  private chosen: Variant | null = null;
  readonly defaultThreads: number;
  /** See CpuDeviceOptions.embdOnDiskMinBytes. */
  readonly embdOnDiskMinBytes: number;
  /** Nodes computed so far, by op (tests check that work really ran here). */
  readonly opCounts = new Map<string, number>();
  private computeTail: Promise<void> = Promise.resolve();

  /**
   * Runs graph computations one at a time: node records and scratch live in one work
   * region per arena, so a graph encoded while another waits for the pool would overwrite it.
   */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const result = this.computeTail.then(fn);
    this.computeTail = result.then(
      () => {},
      () => {},
    );
    return result;
  }

  constructor(
    readonly reg: BackendReg,
    private readonly o: CpuDeviceOptions = {},
  ) {
    this.name = o.name ?? 'CPU';
    const model = platform.cpuModel();
    this.description = `${model} (WebAssembly SIMD kernels)`;
    this.defaultThreads = o.threads ?? defaultThreads();
    this.embdOnDiskMinBytes = o.embdOnDiskMinBytes ?? 32 * 2 ** 20;
    this.arenas = new ArenaSet(o.arenaPages ?? 65535, (a) => this.pool?.addArena(a));
    this.buft = new CpuBufferType(this.name, this, this.arenas);
    this.hostBuft = new CpuHostBufferType(`${this.name}_Host`, this, this.arenas);
  }

  /** The compiled kernel module (for main-thread helpers such as the weight repack). */
  kernelModule(): WasmModule {
    return kernelModule(this.variant);
  }

  /** The kernel build in use ('relaxed' or 'strict'), chosen on first use. */
  get variant(): Variant {
    if (!this.chosen) this.chosen = chooseVariant(this.o.variant);
    return this.chosen;
  }

  /** The worker pool, started on first use with at least `threads` workers. */
  workers(threads = this.defaultThreads): KernelPool {
    if (!this.pool) {
      if (canShareMemory()) this.pool = new Pool(kernelModule(this.variant), threads);
      else {
        if (threads > 1)
          log.warn(
            `${threads} threads asked for, running on 1: this page is not cross-origin isolated, so its workers cannot share memory (serve it with the headers Cross-Origin-Opener-Policy: same-origin and Cross-Origin-Embedder-Policy: require-corp)`,
          );
        this.pool = new InlinePool(kernelModule(this.variant));
      }
      for (const a of this.arenas.arenas) this.pool.addArena(a);
      log.debug(`${this.name}: ${threads} worker threads, ${this.variant} SIMD kernels`);
    } else {
      this.pool.resize(threads);
    }
    return this.pool;
  }

  memory(): DeviceMemory {
    return platform.memory();
  }

  props(): DeviceProps {
    return {
      name: this.name,
      description: this.description,
      memory: this.memory(),
      type: this.type,
      caps: { async: true, hostBuffer: true, bufferFromHostPtr: false, events: true, threads: true, oracle: false },
    };
  }

  /** params: "threads=N" (default: the device's thread count). */
  initBackend(params?: string): Backend {
    let threads = this.defaultThreads;
    const m = /threads=(\d+)/.exec(params ?? '');
    if (m) threads = Math.max(1, Number(m[1]));
    return new CpuBackend(this, threads);
  }

  bufferType(): BufferType {
    return this.buft;
  }

  hostBufferType(): BufferType {
    return this.hostBuft;
  }

  supportsOp(op: Tensor): boolean {
    return cpuSupportsOp(op);
  }

  supportsBufferType(buft: BufferType): boolean {
    return buft === this.buft || buft === this.hostBuft;
  }

  offloadOp(_op: Tensor): boolean {
    return false;
  }

  eventNew(): BackendEvent {
    return new CpuEvent(this);
  }

  eventFree(_event: BackendEvent): void {}

  async eventSynchronize(event: BackendEvent): Promise<void> {
    if (event instanceof CpuEvent) await event.pending;
  }

  /**
   * Run one kernel by name with the given extra words on `nth` threads, in arena 0 (for
   * benchmarks: k_read_bw). Returns after the job.
   */
  async runKernel(name: 'k_read_bw', extras: number[], nth: number): Promise<void> {
    const pool = this.workers(nth);
    const arena = this.arenas.first();
    const rec = this.arenas.ensure(arena, RECORD_BYTES);
    const i32 = new Int32Array(arena.memory.buffer, rec, RECORD_BYTES / 4);
    i32.fill(0);
    extras.forEach((v, i) => {
      i32[EXTRA_WORD + i] = v;
    });
    const steps = new Int32Array(STEP_WORDS);
    steps[0] = arena.index;
    steps[1] = kernelId(name);
    steps[2] = rec;
    await pool.run(steps, 1, nth);
  }

  /**
   * Fault in a buffer's memory on the worker threads (starting them), for a loader about
   * to fill it: a fresh page costs a fault on first write (microseconds each, ~4 s/GB on
   * some virtual machines), which the workers take in parallel, ahead of the loader. Bytes
   * written meanwhile are kept. Resolves when done; later jobs queue behind it.
   */
  prefault(b: Buffer): Promise<void> {
    if (!isArenaBacked(b) || b.bufferType.device !== this || b.size === 0) return Promise.resolve();
    // the workers already started, else as many as a context uses by default (at most 4: a
    // many-core machine should not start a worker per core just to load)
    const pool = this.pool ?? this.workers(Math.min(this.defaultThreads, 4));
    const steps = new Int32Array(STEP_WORDS);
    steps[0] = b.arena.index;
    steps[1] = K_TOUCH;
    steps[2] = b.base;
    steps[4] = b.size;
    return pool.run(steps, 1, pool.size);
  }

  /** Stop the worker threads (the device starts new ones when used again). */
  async close(): Promise<void> {
    const p = this.pool;
    this.pool = null;
    await p?.close();
  }
}

/** The job of a reusable graph, kept while nothing else was encoded on the device. */
interface CachedJob {
  graph: Graph;
  nNodes: number;
  nth: number;
  epoch: number;
  steps: Int32Array;
  nsteps: number;
  counters: [Arena, number][];
  ops: [string, number][];
}

export class CpuBackend implements Backend {
  readonly name: string;
  private last: Promise<void> = Promise.resolve();
  private cached: CachedJob | null = null;

  constructor(
    readonly device: CpuDevice,
    public threads: number,
  ) {
    this.name = device.name;
  }

  graphCompute(graph: Graph): Promise<void> {
    return this.device.exclusive(() => this.compute(graph));
  }

  private async compute(graph: Graph): Promise<void> {
    const dev = this.device;
    const pool = dev.workers(this.threads);
    const nth = Math.min(this.threads, pool.size);
    let c = this.cached;
    if (
      !c ||
      c.graph !== graph ||
      !graph.reusable ||
      c.nNodes !== graph.nodes.length ||
      c.nth !== nth ||
      c.epoch !== dev.arenas.epoch
    ) {
      for (const node of graph.nodes) {
        if (!dev.supportsOp(node)) throw new Error(`${this.name}: unsupported op ${node.op} for ${node}`);
      }
      const counts = new Map<string, number>();
      for (const node of graph.nodes) {
        if (node.op !== 'NONE' && !isViewOp(node.op)) counts.set(node.op, (counts.get(node.op) ?? 0) + 1);
      }
      const job = encodeGraph(graph.nodes, nth, dev.arenas);
      c = {
        graph,
        nNodes: graph.nodes.length,
        nth,
        epoch: dev.arenas.epoch,
        steps: job.steps,
        nsteps: job.nsteps,
        counters: job.counters,
        ops: [...counts],
      };
      this.cached = graph.reusable ? c : null;
    }
    for (const [op, n] of c.ops) dev.opCounts.set(op, (dev.opCounts.get(op) ?? 0) + n);
    if (c.nsteps === 0) return;
    const run = pool.run(c.steps, c.nsteps, nth, c.counters);
    this.last = run.catch(() => {});
    await run;
  }

  async setTensorAsync(t: Tensor, data: Uint8Array, offset = 0): Promise<void> {
    tensorSet(t, data, offset);
  }

  async getTensorAsync(t: Tensor, dst: Uint8Array, offset = 0): Promise<void> {
    await tensorGetInto(t, dst, offset);
  }

  async synchronize(): Promise<void> {
    await this.last;
  }

  eventRecord(event: BackendEvent): void {
    if (event instanceof CpuEvent) event.pending = this.last;
  }

  async eventWait(event: BackendEvent): Promise<void> {
    if (event instanceof CpuEvent) await event.pending;
  }

  free(): void {}
}

/** The CPU backend family. */
export class CpuReg implements BackendReg {
  private readonly devs: CpuDevice[] = [];

  constructor(readonly name = 'CPU') {}

  addDevice(o: CpuDeviceOptions = {}): CpuDevice {
    const d = new CpuDevice(this, o);
    this.devs.push(d);
    return d;
  }

  devices(): readonly Device[] {
    return this.devs;
  }

  feature(name: string): unknown {
    return name === 'supportsOp' ? cpuSupportsOp : undefined;
  }
}

export { C, K_COPY };
