// The sub-range property every buffer type must hold: random writes and memsets at any
// offset and size, mirrored in plain host memory, and every read (any range) agrees.
import assert from 'node:assert/strict';
import { type BufferType, tensorGet, tensorMemset, tensorSet } from '../../src/backends/api.js';
import { referenceDevice } from '../../src/backends/reference/index.js';
import { allocTensors } from '../../src/ggml/alloc.js';
import { newTensor, type Tensor } from '../../src/ggml/tensor.js';
import { GGMLType } from '../../src/ggml/types.js';

/** Deterministic pseudo-random integers (xorshift32). */
export function rngInt(seed: number): (n: number) => number {
  let s = seed >>> 0 || 1;
  return (n) => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s % n;
  };
}

export function randomBytes(r: (n: number) => number, n: number): Uint8Array {
  return new Uint8Array(n).map(() => r(256));
}

/**
 * `steps` random writes (every fifth a memset) at any offset and size to `t` and to its
 * host twin `model`, each followed by a random sub-range read that must agree.
 */
export async function mirroredSubranges(
  t: Tensor,
  model: Tensor,
  r: (n: number) => number,
  steps: number,
  label: string,
): Promise<void> {
  for (let step = 0; step < steps; step++) {
    const offset = r(t.nbytes);
    const size = 1 + r(t.nbytes - offset);
    if (step % 5 === 4) {
      const v = r(256);
      tensorMemset(t, v, offset, size);
      tensorMemset(model, v, offset, size);
    } else {
      const data = randomBytes(r, size);
      tensorSet(t, data, offset);
      tensorSet(model, data, offset);
    }
    const o2 = r(t.nbytes);
    const s2 = 1 + r(t.nbytes - o2);
    assert.deepEqual(await tensorGet(t, o2, s2), await tensorGet(model, o2, s2), `${label} read ${o2}+${s2}`);
  }
}

const TYPES: [number, number[]][] = [
  [GGMLType.Q4_0, [64, 3]],
  [GGMLType.Q8_0, [96, 2]],
  [GGMLType.F16, [10, 3]],
  [GGMLType.F32, [7, 5]],
];

/** Random sub-range writes to tensors of `buft` (not at offset 0), mirrored on the host. */
export async function subrangeProperty(buft: BufferType, seed: number, steps = 60): Promise<void> {
  const r = rngInt(seed);
  for (const [type, ne] of TYPES) {
    const t = newTensor(type, ne, `t${type}`);
    const model = newTensor(type, ne, `m${type}`);
    const [buf] = allocTensors([newTensor(GGMLType.F32, [3], 'pad'), t], buft); // t not at offset 0
    const [mbuf] = allocTensors([model], referenceDevice.bufferType());
    const full = randomBytes(r, t.nbytes);
    tensorSet(t, full);
    tensorSet(model, full);
    await mirroredSubranges(t, model, r, steps, 'sub-range');
    assert.deepEqual(await tensorGet(t), await tensorGet(model), 'whole tensor');
    buf?.free();
    mbuf?.free();
  }
}
