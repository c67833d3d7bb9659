// The reference device: scalar TypeScript kernels on plain host memory. Slow and simple,
// it is the oracle every faster device is compared against (see testing/op-harness.ts).
// Extra instances with a restricted op set model a second device in scheduler tests.

import type { Graph } from '../../ggml/graph.js';
import type { Tensor } from '../../ggml/tensor.js';
import { logger } from '../../log.js';
import { platform } from '../../platform/index.js';
import { tensorGetInto, tensorSet } from '../api.js';
import { HostBufferType } from '../host.js';
import type { Backend, BackendEvent, BackendReg, BufferType, Device, DeviceMemory, DeviceProps } from '../impl.js';
import { type KernelOptions, referenceCompute, referenceSupportsOp } from './ops/index.js';

const log = logger('backend:reference');

export interface ReferenceDeviceOptions {
  name?: string;
  description?: string;
  /** Further restrict the ops this device accepts (test doubles of partial devices). */
  opFilter?: (op: Tensor) => boolean;
  /** Accept only this device's own buffer type (forces the scheduler to copy). */
  ownBuffersOnly?: boolean;
  /** Ops worth running here even when their weights live elsewhere (ggml's offload_op). */
  offload?: (op: Tensor) => boolean;
  /**
   * 'exact' (default): double-precision products, the oracle. 'ggml-cpu': round matmul
   * activations to the weights' vec_dot_type and run attention as ggml-cpu does, so that
   * model outputs match llama.cpp's CPU backend (see vec-dot.ts).
   */
  numerics?: 'exact' | 'ggml-cpu';
}

/** Reference compute is synchronous: an event is complete as soon as it is recorded. */
class HostEvent implements BackendEvent {
  recorded = false;
  constructor(readonly device: Device) {}
}

export class ReferenceDevice implements Device {
  readonly name: string;
  readonly description: string;
  readonly type = 'cpu' as const;
  private readonly buft: HostBufferType;
  readonly numerics: 'exact' | 'ggml-cpu';

  constructor(
    readonly reg: BackendReg,
    private readonly o: ReferenceDeviceOptions = {},
  ) {
    this.name = o.name ?? 'Reference';
    this.description = o.description ?? 'scalar TypeScript reference kernels (oracle; slow)';
    this.buft = new HostBufferType({ name: this.name, device: this });
    this.numerics = o.numerics ?? 'exact';
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
      caps: { async: false, hostBuffer: false, bufferFromHostPtr: false, events: true, threads: false, oracle: true },
    };
  }

  initBackend(): Backend {
    return new ReferenceBackend(this);
  }

  bufferType(): BufferType {
    return this.buft;
  }

  supportsOp(op: Tensor): boolean {
    return referenceSupportsOp(op) && (this.o.opFilter?.(op) ?? true);
  }

  supportsBufferType(buft: BufferType): boolean {
    return this.o.ownBuffersOnly ? buft === this.buft : buft.isHost;
  }

  offloadOp(op: Tensor): boolean {
    return this.o.offload?.(op) ?? false;
  }

  eventNew(): BackendEvent {
    return new HostEvent(this);
  }

  eventFree(_event: BackendEvent): void {}

  async eventSynchronize(_event: BackendEvent): Promise<void> {}
}

export class ReferenceBackend implements Backend {
  readonly name: string;
  private readonly kernelOptions: KernelOptions;

  constructor(readonly device: ReferenceDevice) {
    this.name = device.name;
    this.kernelOptions = { ggmlCpu: device.numerics === 'ggml-cpu' };
  }

  async graphCompute(graph: Graph): Promise<void> {
    for (const node of graph.nodes) {
      if (!this.device.supportsOp(node)) {
        throw new Error(`${this.name}: unsupported op ${node.op} for ${node}`);
      }
      referenceCompute(node, this.kernelOptions);
    }
    log.debug(`${this.name}: computed ${graph.nodes.length} nodes`);
  }

  async setTensorAsync(t: Tensor, data: Uint8Array, offset = 0): Promise<void> {
    tensorSet(t, data, offset);
  }

  async getTensorAsync(t: Tensor, dst: Uint8Array, offset = 0): Promise<void> {
    await tensorGetInto(t, dst, offset);
  }

  async synchronize(): Promise<void> {}

  eventRecord(event: BackendEvent): void {
    if (event instanceof HostEvent) event.recorded = true;
  }

  async eventWait(_event: BackendEvent): Promise<void> {}

  free(): void {}
}

/** A backend family holding reference devices. */
export class ReferenceReg implements BackendReg {
  private readonly devs: ReferenceDevice[] = [];

  constructor(readonly name = 'Reference') {}

  addDevice(o: ReferenceDeviceOptions = {}): ReferenceDevice {
    const d = new ReferenceDevice(this, o);
    this.devs.push(d);
    return d;
  }

  devices(): readonly Device[] {
    return this.devs;
  }

  feature(name: string): unknown {
    return name === 'supportsOp' ? referenceSupportsOp : undefined;
  }
}
