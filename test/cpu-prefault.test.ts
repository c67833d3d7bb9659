// The CPU device faulting in a weight buffer on its workers while the loader fills it:
// every byte written meanwhile survives, the buffer's bytes read back exactly, and
// buffers of other devices are left alone.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CpuReg } from '../src/backends/cpu/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';

test('cpu prefault: bytes written while the workers fault the buffer in are kept', async () => {
  const dev = new CpuReg('Prefault').addDevice({ name: 'Prefault', threads: 3 });
  try {
    const size = 48 << 20;
    const buf = dev.hostBufferType().alloc(size, 'weights');
    const bytes = buf.hostBytes()!;
    const pattern = (i: number) => (i * 2654435761) >>> 24 || 1;
    const done = dev.prefault(buf);
    // fill from the front in pieces while the workers go back to front
    const piece = 1 << 20;
    for (let lo = 0; lo < size; lo += piece) {
      for (let i = Math.ceil(lo / 509) * 509; i < lo + piece; i += 509) bytes[i] = pattern(i);
      await new Promise((r) => setImmediate(r));
    }
    await done;
    for (let i = 0; i < size; i += 509) assert.equal(bytes[i], pattern(i), `byte ${i}`);
    let nonzero = 0;
    for (let i = 0; i < size; i++) if (bytes[i] !== 0) nonzero++;
    assert.equal(nonzero, Math.ceil(size / 509));
    buf.free();
    // another device's buffer: nothing to do
    const other = referenceDevice.bufferType().alloc(1024);
    await dev.prefault(other);
    other.free();
  } finally {
    await dev.close();
  }
});
