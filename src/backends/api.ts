// What users of the backend layer call (ggml-backend.h): device lookup, backend creation,
// and tensor data transfer through whichever buffer holds a tensor. Backend authors
// implement the interfaces in impl.ts instead.

import type { Tensor } from '../ggml/tensor.js';
import { traitsOf } from '../ggml/types.js';
import type { Backend, Buffer, BufferType, Device } from './impl.js';
import { deviceByName, deviceByType, listDevices } from './registry.js';

export type {
  Backend,
  BackendEvent,
  BackendReg,
  Buffer,
  BufferType,
  BufferUsage,
  Device,
  DeviceCaps,
  DeviceMemory,
  DeviceProps,
  DeviceType,
} from './impl.js';
export {
  backendRegByName,
  backendRegs,
  backendsReady,
  deviceByName,
  deviceByType,
  devicesByType,
  listDevices,
  registerBackend,
  registerOptionalBackend,
  unregisterBackend,
} from './registry.js';

/** A backend on the named device, or on the best available one (gpu, then accel, then cpu). */
export function initBackend(deviceName?: string, params?: string): Backend {
  const dev: Device | undefined = deviceName
    ? deviceByName(deviceName)
    : (deviceByType('gpu') ?? deviceByType('accel') ?? deviceByType('cpu'));
  if (!dev) {
    const known = listDevices().map((d) => d.name);
    throw new Error(`no device ${deviceName ?? '(any)'}; registered: ${known.join(', ') || 'none'}`);
  }
  return dev.initBackend(params);
}

function bufferOf(t: Tensor): Buffer {
  const b = t.buffer;
  if (!b) throw new Error(`tensor ${t} is not allocated`);
  return b;
}

/** Write bytes (or a typed array's bytes) into a tensor at byte `offset`. */
export function tensorSet(t: Tensor, data: ArrayBufferView, offset = 0): void {
  const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  bufferOf(t).setTensor(t, bytes, offset);
}

/** Read `size` bytes of a tensor from byte `offset` (default: all of it). */
export async function tensorGet(t: Tensor, offset = 0, size = t.nbytes - offset): Promise<Uint8Array> {
  const dst = new Uint8Array(size);
  await bufferOf(t).getTensor(t, dst, offset);
  return dst;
}

/** Fill `size` bytes of a tensor from `offset` with the byte `value`. */
export function tensorMemset(t: Tensor, value: number, offset = 0, size = t.nbytes - offset): void {
  bufferOf(t).memsetTensor(t, value, offset, size);
}

/**
 * Copy all of `src` into `dst` (same type and extents, any buffers). Uses the destination
 * buffer's direct copy when it has one, else goes through host memory, row by row when
 * either side is not contiguous.
 */
export async function tensorCopy(src: Tensor, dst: Tensor): Promise<void> {
  if (src.type !== dst.type || src.ne.some((n, i) => n !== dst.ne[i])) {
    throw new Error(`tensorCopy: ${src} and ${dst} differ in type or shape`);
  }
  if (bufferOf(dst).copyTensor(src, dst)) return;
  if (src.isContiguous() && dst.isContiguous()) {
    tensorSet(dst, await tensorGet(src));
    return;
  }
  if (!src.hasContiguousRows() || !dst.hasContiguousRows()) {
    throw new Error(`tensorCopy: ${src} or ${dst} has strided rows`);
  }
  const row = (dst.ne[0] / traitsOf(dst.type).blockSize) * traitsOf(dst.type).typeSize;
  for (let i3 = 0; i3 < src.ne[3]; i3++) {
    for (let i2 = 0; i2 < src.ne[2]; i2++) {
      for (let i1 = 0; i1 < src.ne[1]; i1++) {
        const bytes = await tensorGet(src, i1 * src.nb[1] + i2 * src.nb[2] + i3 * src.nb[3], row);
        bufferOf(dst).setTensor(dst, bytes, i1 * dst.nb[1] + i2 * dst.nb[2] + i3 * dst.nb[3]);
      }
    }
  }
}

/** Read a tensor as float32 values (F32 tensors only; contiguous or not). */
export async function tensorGetF32(t: Tensor): Promise<Float32Array> {
  if (traitsOf(t.type).name !== 'F32') throw new Error(`tensorGetF32: ${t} is not F32`);
  const out = new Float32Array(t.nelements);
  const row = new Float32Array(t.ne[0]);
  let k = 0;
  for (let i3 = 0; i3 < t.ne[3]; i3++) {
    for (let i2 = 0; i2 < t.ne[2]; i2++) {
      for (let i1 = 0; i1 < t.ne[1]; i1++) {
        const base = i1 * t.nb[1] + i2 * t.nb[2] + i3 * t.nb[3];
        if (t.nb[0] === 4) {
          const bytes = await tensorGet(t, base, t.ne[0] * 4);
          out.set(new Float32Array(bytes.buffer, 0, t.ne[0]), k);
        } else {
          for (let i0 = 0; i0 < t.ne[0]; i0++) {
            const b = await tensorGet(t, base + i0 * t.nb[0], 4);
            row[i0] = new Float32Array(b.buffer)[0];
          }
          out.set(row, k);
        }
        k += t.ne[0];
      }
    }
  }
  return out;
}

/** The buffer types a device offers: its own and, if any, its host buffer type. */
export function deviceBufferTypes(dev: Device): BufferType[] {
  const out = [dev.bufferType()];
  const host = dev.hostBufferType?.();
  if (host) out.push(host);
  return out;
}
