// One WebGPU device's shared state: the queue, compiled pipelines (by shader source),
// bind groups (by the buffers they bind), the uniform buffer of per-dispatch parameters,
// and the small word-merge kernel that makes unaligned writes exact.

import { SHADER_STAGE_COMPUTE, Usage } from './adapter.js';

/** A word to merge: `word = (word & ~mask) | (bits & mask)`. */
export interface WordPatch {
  word: number;
  mask: number;
  bits: number;
}

/**
 * Bytes of one dispatch's parameters (a dynamic uniform offset step: a multiple of WebGPU's
 * 256-byte offset alignment): seven tensors' offset, ne and nb (the recurrent scans read
 * six sources) and the op's parameters.
 */
export const PARAM_BYTES = 512;

/**
 * The optional WebGPU features the kernels use, where the device was created with them:
 * `subgroups` (reductions in registers), `f16` (`shader-f16`: F16 tensors bound as
 * array<f16> and read and written natively). Each may be switched off at any time (tests
 * run every path on one adapter); pipelines are cached per setting.
 */
export interface GpuFeatures {
  subgroups: boolean;
  f16: boolean;
}

/**
 * How a dispatch's storage bindings are declared, one letter each: `w` written
 * (read_write, at most one: dst's buffer), `r` read-only. A buffer only read may be bound
 * more than once (as array<u32> and as array<f16>); WebGPU forbids aliasing a written one.
 */
export type BindingKinds = string;

const PATCH_WGSL = /* wgsl */ `
struct Q { n: vec4<u32>, p0: vec4<u32>, p1: vec4<u32> }
@group(0) @binding(0) var<uniform> q: Q;
@group(0) @binding(1) var<storage, read_write> buf: array<u32>;
fn merge(p: vec4<u32>) { buf[p.x] = (buf[p.x] & ~p.y) | (p.z & p.y); }
@compute @workgroup_size(1) fn main() {
  if (q.n.x > 0u) { merge(q.p0); }
  if (q.n.x > 1u) { merge(q.p1); }
}`;

export class GpuContext {
  readonly queue: GPUQueue;
  private readonly layouts = new Map<BindingKinds, { group: GPUBindGroupLayout; pipeline: GPUPipelineLayout }>();
  private readonly pipelines = new Map<string, GPUComputePipeline>();
  private readonly bindGroups = new Map<string, GPUBindGroup>();
  private readonly ids = new WeakMap<GPUBuffer, number>();
  private nextId = 1;
  private params: GPUBuffer | null = null;
  private paramSlots = 0;
  private patch: { pipeline: GPUComputePipeline; uniform: GPUBuffer } | null = null;
  private readonly patchGroups = new Map<GPUBuffer, GPUBindGroup>();
  private readonly staging: GPUBuffer[] = [];
  private readonly checks: Promise<string | null>[] = [];
  /** Pipelines compiled so far (tests check that they are reused). */
  compiled = 0;

  /** What the device was created with. */
  readonly available: Readonly<GpuFeatures>;
  private used: GpuFeatures;

  constructor(readonly device: GPUDevice) {
    this.queue = device.queue;
    this.available = { subgroups: device.features.has('subgroups'), f16: device.features.has('shader-f16') };
    this.used = { ...this.available };
  }

  /** What the kernels use now: at most what the device was created with. */
  get features(): Readonly<GpuFeatures> {
    return this.used;
  }

  /** Switch features on or off for the dispatches that follow (never beyond `available`). */
  setFeatures(want: Partial<GpuFeatures>): void {
    this.used = {
      subgroups: (want.subgroups ?? this.used.subgroups) && this.available.subgroups,
      f16: (want.f16 ?? this.used.f16) && this.available.f16,
    };
  }

  private idOf(b: GPUBuffer): number {
    let id = this.ids.get(b);
    if (id === undefined) {
      id = this.nextId++;
      this.ids.set(b, id);
    }
    return id;
  }

  /** Layout 0: the parameters (uniform, dynamic offset); 1..n: storage buffers of `kinds`. */
  private layout(kinds: BindingKinds): { group: GPUBindGroupLayout; pipeline: GPUPipelineLayout } {
    let l = this.layouts.get(kinds);
    if (!l) {
      const entries: GPUBindGroupLayoutEntry[] = [
        {
          binding: 0,
          visibility: SHADER_STAGE_COMPUTE,
          buffer: { type: 'uniform', hasDynamicOffset: true, minBindingSize: PARAM_BYTES },
        },
      ];
      for (const [i, k] of [...kinds].entries()) {
        const type = k === 'w' ? 'storage' : 'read-only-storage';
        entries.push({ binding: i + 1, visibility: SHADER_STAGE_COMPUTE, buffer: { type } });
      }
      const group = this.device.createBindGroupLayout({ entries });
      l = { group, pipeline: this.device.createPipelineLayout({ bindGroupLayouts: [group] }) };
      this.layouts.set(kinds, l);
    }
    return l;
  }

  /**
   * The compute pipeline for `key` (what determines the shader: its body, role types and
   * bindings), compiled once from `source()` binding storage buffers of `kinds`; `label`
   * (the node) names it in a compile error, which compileErrors throws.
   */
  pipeline(key: string, kinds: BindingKinds, source: () => string, label = ''): GPUComputePipeline {
    let p = this.pipelines.get(key);
    if (!p) {
      // a shader one compiler rejects would otherwise run as nothing (dst left as it was)
      this.device.pushErrorScope('validation');
      const module = this.device.createShaderModule({ code: source() });
      p = this.device.createComputePipeline({
        layout: this.layout(kinds).pipeline,
        compute: { module, entryPoint: 'main' },
      });
      this.checks.push(
        this.device.popErrorScope().then((e) => {
          if (!e) return null;
          this.pipelines.delete(key);
          return `${label}: ${e.message.split('\n').find((l) => l.trim()) ?? e.message}`;
        }),
      );
      this.pipelines.set(key, p);
      this.compiled++;
    }
    return p;
  }

  /** Throws the first compile error of the pipelines made since the last call (awaited once each). */
  async compileErrors(): Promise<void> {
    if (this.checks.length === 0) return;
    const errors = (await Promise.all(this.checks.splice(0))).filter((e) => e !== null);
    if (errors.length > 0) throw new Error(`webgpu: a kernel did not compile: ${errors[0]}`);
  }

  /** The uniform buffer holding `slots` dispatches' parameters (grown as needed). */
  paramBuffer(slots: number): GPUBuffer {
    if (!this.params || this.paramSlots < slots) {
      this.params?.destroy();
      this.paramSlots = Math.max(64, 2 ** Math.ceil(Math.log2(slots)));
      this.params = this.device.createBuffer({
        size: this.paramSlots * PARAM_BYTES,
        usage: Usage.UNIFORM | Usage.COPY_DST,
        label: 'webgpu params',
      });
      this.bindGroups.clear(); // they bound the old parameter buffer
    }
    return this.params;
  }

  /** The bind group of the parameter buffer and `buffers` (in binding order, of `kinds`), cached. */
  bindGroup(buffers: GPUBuffer[], kinds: BindingKinds): GPUBindGroup {
    const params = this.params!;
    const key = `${kinds}|${buffers.map((b) => this.idOf(b)).join(',')}`;
    let g = this.bindGroups.get(key);
    if (!g) {
      const entries: GPUBindGroupEntry[] = [{ binding: 0, resource: { buffer: params, size: PARAM_BYTES } }];
      for (const [i, b] of buffers.entries()) entries.push({ binding: i + 1, resource: { buffer: b } });
      g = this.device.createBindGroup({ layout: this.layout(kinds).group, entries });
      this.bindGroups.set(key, g);
    }
    return g;
  }

  /**
   * A mappable buffer of at least `size` bytes to read through: a free one is reused (reads
   * repeat their sizes: logits, embeddings), else a new one of the next power of two.
   */
  takeStaging(size: number): GPUBuffer {
    const i = this.staging.findIndex((b) => b.size >= size);
    if (i >= 0) return this.staging.splice(i, 1)[0];
    const bytes = Math.max(256, 2 ** Math.ceil(Math.log2(size)));
    return this.device.createBuffer({ size: bytes, usage: Usage.MAP_READ | Usage.COPY_DST, label: 'webgpu read' });
  }

  /** Back to the free list once unmapped (at most a few kept; the rest left to the collector). */
  giveStaging(b: GPUBuffer): void {
    if (this.staging.length < 4) this.staging.push(b);
  }

  /** Drop what refers to a buffer about to be destroyed. */
  forgetBuffer(b: GPUBuffer): void {
    const id = this.ids.get(b);
    if (id !== undefined) {
      for (const k of [...this.bindGroups.keys()])
        if (k.split('|')[1].split(',').includes(String(id))) this.bindGroups.delete(k);
    }
    this.patchGroups.delete(b);
  }

  /** Merge up to two partial words into `buf` (queued, in order with everything else). */
  patchWords(buf: GPUBuffer, patches: WordPatch[]): void {
    if (patches.length === 0) return;
    if (!this.patch) {
      const module = this.device.createShaderModule({ code: PATCH_WGSL });
      const pipeline = this.device.createComputePipeline({ layout: 'auto', compute: { module, entryPoint: 'main' } });
      const uniform = this.device.createBuffer({ size: 48, usage: Usage.UNIFORM | Usage.COPY_DST });
      this.patch = { pipeline, uniform };
    }
    const { pipeline, uniform } = this.patch;
    let group = this.patchGroups.get(buf);
    if (!group) {
      group = this.device.createBindGroup({
        layout: pipeline.getBindGroupLayout(0),
        entries: [
          { binding: 0, resource: { buffer: uniform } },
          { binding: 1, resource: { buffer: buf } },
        ],
      });
      this.patchGroups.set(buf, group);
    }
    const q = new Uint32Array(12);
    q[0] = patches.length;
    for (const [i, p] of patches.entries()) q.set([p.word, p.mask, p.bits], 4 + 4 * i);
    this.queue.writeBuffer(uniform, 0, q);
    const enc = this.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    pass.setPipeline(pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(1);
    pass.end();
    this.queue.submit([enc.finish()]);
  }
}
