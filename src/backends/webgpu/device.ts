// The WebGPU device (`WebGPU0`): device storage buffers, a host buffer type of mapped
// staging buffers, and WGSL kernels for the ops a llama-family decode needs; every other
// op falls back to the host device through the scheduler (supportsOp). A graph split is
// one command encoder and one compute pass: a dispatch per node, each with its parameter
// block at a dynamic offset of one uniform buffer; pipelines and bind groups are cached.

import type { Graph } from '../../ggml/graph.js';
import { isViewOp, Op, type Tensor } from '../../ggml/tensor.js';
import { logger } from '../../log.js';
import { platform } from '../../platform/index.js';
import { tensorGetInto, tensorSet } from '../api.js';
import type { Backend, BackendEvent, BackendReg, BufferType, Device, DeviceMemory, DeviceProps } from '../impl.js';
import { wgslLanguageFeatures } from './adapter.js';
import { WebGpuBuffer, WebGpuBufferType, webGpuHostBufferType } from './buffer.js';
import { GpuContext, PARAM_BYTES } from './context.js';
import {
  bindingKinds,
  bindPlan,
  kernelFor,
  paramWords,
  pipelineKey,
  shaderSource,
  wordAligned,
  workgroups,
} from './kernels.js';

const log = logger('backend:webgpu');

/** Adapters that compute on the CPU: listed, never chosen by default. */
export function isSoftwareAdapter(info: GPUAdapterInfo): boolean {
  const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  return (
    (info as { isFallbackAdapter?: boolean }).isFallbackAdapter === true ||
    /swiftshader|llvmpipe|lavapipe|warp|software/.test(text)
  );
}

/** One dispatch of a graph: its pipeline, the buffers it binds (of `kinds`), its workgroups. */
interface Step {
  pipeline: GPUComputePipeline;
  buffers: GPUBuffer[];
  kinds: string;
  wg: [number, number];
}

class GpuEvent implements BackendEvent {
  done: Promise<void> = Promise.resolve();
  constructor(readonly device: Device) {}
}

export class WebGpuDevice implements Device {
  readonly type = 'gpu' as const;
  readonly description: string;
  readonly software: boolean;
  readonly ctx: GpuContext;
  private readonly buft: WebGpuBufferType;
  private readonly hostBuft: BufferType;
  /** Nodes computed so far, by op (tests check that work really ran here). */
  readonly opCounts = new Map<string, number>();
  /**
   * Set to a map to time every dispatch alone (milliseconds by op, summed): slow, for finding
   * which kernels cost what.
   */
  profile: Map<string, number> | null = null;

  constructor(
    readonly reg: BackendReg,
    readonly name: string,
    device: GPUDevice,
    info: GPUAdapterInfo,
  ) {
    this.ctx = new GpuContext(device);
    const parts = [info.vendor, info.architecture, info.device || info.description].filter((s) => s);
    this.description = parts.join(' ') || 'WebGPU adapter';
    this.software = isSoftwareAdapter(info);
    this.buft = new WebGpuBufferType(name, this, this.ctx);
    this.hostBuft = webGpuHostBufferType(`${name}_Host`, this, this.ctx);
  }

  /** WebGPU reports no memory size: the total is the largest buffer, the free part what is not allocated. */
  memory(): DeviceMemory {
    const total = Math.max(this.ctx.device.limits.maxBufferSize, this.buft.allocated);
    return { free: total - this.buft.allocated, total };
  }

  props(): DeviceProps {
    return {
      name: this.name,
      description: this.description,
      memory: this.memory(),
      type: this.type,
      caps: {
        async: true,
        hostBuffer: true,
        bufferFromHostPtr: false,
        events: true,
        threads: false,
        oracle: false,
        software: this.software,
      },
    };
  }

  initBackend(_params?: string): Backend {
    return new WebGpuBackend(this);
  }

  bufferType(): BufferType {
    return this.buft;
  }

  hostBufferType(): BufferType {
    return this.hostBuft;
  }

  supportsOp(op: Tensor): boolean {
    if (op.op === Op.NONE || isViewOp(op.op)) return true;
    return typeof kernelFor(op) !== 'string';
  }

  supportsBufferType(buft: BufferType): boolean {
    return buft === this.buft;
  }

  offloadOp(_op: Tensor): boolean {
    return false;
  }

  eventNew(): BackendEvent {
    return new GpuEvent(this);
  }

  eventFree(_event: BackendEvent): void {}

  async eventSynchronize(event: BackendEvent): Promise<void> {
    if (event instanceof GpuEvent) await event.done;
  }

  /** Release the GPU device (buffers become unusable). */
  destroy(): void {
    this.ctx.device.destroy();
  }
}

export class WebGpuBackend implements Backend {
  readonly name: string;

  constructor(readonly device: WebGpuDevice) {
    this.name = device.name;
  }

  async graphCompute(graph: Graph): Promise<void> {
    const dev = this.device;
    const ctx = dev.ctx;
    const nodes = graph.nodes.filter((n) => n.op !== Op.NONE && !isViewOp(n.op));
    if (nodes.length === 0) return;
    const params = new Uint32Array((nodes.length * PARAM_BYTES) / 4);
    const steps: Step[] = [];
    const feat = ctx.features;
    nodes.forEach((node, i) => {
      const call = kernelFor(node, feat);
      if (typeof call === 'string') throw new Error(`${this.name}: unsupported op ${node.op} for ${node}: ${call}`);
      // the distinct buffers, in role order; bindPlan binds each once or once per element type
      const distinct: GPUBuffer[] = [];
      const buffer = call.roles.map((t) => {
        if (!t) return 0;
        const b = t.buffer;
        if (!(b instanceof WebGpuBuffer) || b.bufferType.ctx !== ctx)
          throw new Error(`${this.name}: ${node.op} reads ${t} outside this device's memory`);
        let k = distinct.indexOf(b.gpu);
        if (k < 0) k = distinct.push(b.gpu) - 1;
        return k;
      });
      const plan = bindPlan(call, buffer, feat);
      const kinds = bindingKinds(plan);
      // (an F16 tensor bound as array<f16> is read and written by element: any even byte will do)
      call.roles.forEach((t, j) => {
        const words = t && (wordAligned(t.type) || (call.wordWrites && t === node));
        if (words && t.offset % (plan.slots[plan.slot[j]].view === 'f16' ? 2 : 4) !== 0)
          throw new Error(`${this.name}: ${t} starts at byte ${t.offset}, not on a word`);
      });
      paramWords(call, params.subarray((i * PARAM_BYTES) / 4, ((i + 1) * PARAM_BYTES) / 4));
      const pipeline = ctx.pipeline(
        pipelineKey(call, plan, feat),
        kinds,
        () => shaderSource(call, plan, feat),
        `${node.op} ${node}`,
      );
      steps.push({ pipeline, buffers: plan.slots.map((b) => distinct[b.buffer]), kinds, wg: workgroups(call) });
      dev.opCounts.set(node.op, (dev.opCounts.get(node.op) ?? 0) + 1);
    });
    await ctx.compileErrors();
    const paramBuf = ctx.paramBuffer(nodes.length);
    ctx.queue.writeBuffer(paramBuf, 0, params);
    if (dev.profile) {
      await this.profiled(nodes, steps);
      return;
    }
    const enc = ctx.device.createCommandEncoder();
    const pass = enc.beginComputePass();
    steps.forEach((s, i) => {
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, ctx.bindGroup(s.buffers, s.kinds), [i * PARAM_BYTES]);
      pass.dispatchWorkgroups(s.wg[0], s.wg[1]);
    });
    pass.end();
    ctx.queue.submit([enc.finish()]);
  }

  /** Each dispatch submitted and awaited alone, its time added to the device's `profile` by op. */
  private async profiled(nodes: Tensor[], steps: Step[]): Promise<void> {
    const ctx = this.device.ctx;
    await ctx.queue.onSubmittedWorkDone();
    for (const [i, s] of steps.entries()) {
      const t0 = performance.now();
      const enc = ctx.device.createCommandEncoder();
      const pass = enc.beginComputePass();
      pass.setPipeline(s.pipeline);
      pass.setBindGroup(0, ctx.bindGroup(s.buffers, s.kinds), [i * PARAM_BYTES]);
      pass.dispatchWorkgroups(s.wg[0], s.wg[1]);
      pass.end();
      ctx.queue.submit([enc.finish()]);
      await ctx.queue.onSubmittedWorkDone();
      const op = nodes[i].op;
      this.device.profile!.set(op, (this.device.profile!.get(op) ?? 0) + performance.now() - t0);
    }
  }

  async setTensorAsync(t: Tensor, data: Uint8Array, offset = 0): Promise<void> {
    tensorSet(t, data, offset);
  }

  async getTensorAsync(t: Tensor, dst: Uint8Array, offset = 0): Promise<void> {
    await tensorGetInto(t, dst, offset);
  }

  async synchronize(): Promise<void> {
    await this.device.ctx.queue.onSubmittedWorkDone();
  }

  eventRecord(event: BackendEvent): void {
    if (event instanceof GpuEvent) event.done = this.device.ctx.queue.onSubmittedWorkDone();
  }

  async eventWait(event: BackendEvent): Promise<void> {
    if (event instanceof GpuEvent) await event.done;
  }

  free(): void {}
}

export class WebGpuReg implements BackendReg {
  readonly name = 'WebGPU';
  readonly devs: WebGpuDevice[] = [];

  devices(): readonly Device[] {
    return this.devs;
  }
}

/**
 * The WebGPU backend with the first adapter's device, or null where WebGPU or an adapter
 * is missing. A hardware adapter's device asks for its largest buffers and storage
 * bindings (a weight tensor must fit one); a software one keeps WebGPU's defaults (256 MiB
 * buffers, 128 MiB bindings): Dawn on SwiftShader aborts on a buffer mapping once the
 * adapter's 1 GiB maximum is requested.
 */
export async function createWebGpuReg(adapter: GPUAdapter | null): Promise<WebGpuReg | null> {
  if (!adapter) return null;
  const l = adapter.limits;
  const device = await adapter.requestDevice({
    requiredFeatures: wantedFeatures(adapter, await wgslLanguageFeatures()),
    ...(isSoftwareAdapter(adapter.info)
      ? {}
      : {
          requiredLimits: {
            maxBufferSize: l.maxBufferSize,
            maxStorageBufferBindingSize: l.maxStorageBufferBindingSize,
          },
        }),
  });
  const reg = new WebGpuReg();
  const dev = new WebGpuDevice(reg, 'WebGPU0', device, adapter.info);
  reg.devs.push(dev);
  const f = dev.ctx.features;
  const uses = `${f.subgroups ? 'subgroups' : 'no subgroups'}, ${f.f16 ? 'shader-f16' : 'no shader-f16'}`;
  log.info(`${dev.name}: ${dev.description} (${uses})${dev.software ? ' (software: never chosen by default)' : ''}`);
  return reg;
}

/**
 * The optional features the kernels use that the adapter has: `subgroups` (row
 * reductions and matrix-vector products in registers), where the compiler also has the
 * `subgroup_id` extension (the kernels read subgroup_id and num_subgroups, which came to
 * WGSL after subgroups did); LLAMA_TS_WEBGPU_NO_SUBGROUPS=1 leaves it out (the kernels
 * then reduce through workgroup memory). `shader-f16`: F16 tensors bound as array<f16>
 * (read and written as f16 elements; the arithmetic stays f32);
 * LLAMA_TS_WEBGPU_NO_F16=1 leaves it out (F16 then unpacked from and packed into words).
 */
function wantedFeatures(adapter: GPUAdapter, wgsl: ReadonlySet<string>): GPUFeatureName[] {
  const want: GPUFeatureName[] = [];
  if (
    adapter.features.has('subgroups') &&
    wgsl.has('subgroup_id') &&
    platform.env('LLAMA_TS_WEBGPU_NO_SUBGROUPS') !== '1'
  )
    want.push('subgroups' as GPUFeatureName);
  if (adapter.features.has('shader-f16') && platform.env('LLAMA_TS_WEBGPU_NO_F16') !== '1') want.push('shader-f16');
  return want;
}
