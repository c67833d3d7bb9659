// The registry (lookups, optional backends that fail), `llama-ts devices --json`, and one
// log callback receiving messages from the GGUF loader and from a backend.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  backendsReady,
  deviceByName,
  deviceByType,
  devicesByType,
  enableWebGpu,
  initBackend,
  listDevices,
  registerOptionalBackend,
  unregisterBackend,
} from '../src/backends/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { computeOn } from '../src/backends/testing/compute.js';
import { transformReg } from '../src/backends/testing/transform.js';
import { devicesCommand } from '../src/cli/devices.js';
import * as ops from '../src/ggml/ops.js';
import { newTensor } from '../src/ggml/tensor.js';
import { GGMLType } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';
import { type LogLevel, setLogCallback } from '../src/log.js';
import { missingShared, sharedPath } from './helpers/shared.js';

type Msg = { level: LogLevel; message: string; source: string };

function capture(): { msgs: Msg[]; stop: () => void } {
  const msgs: Msg[] = [];
  setLogCallback((level, message, source) => msgs.push({ level, message, source }));
  return { msgs, stop: () => setLogCallback(null) };
}

test('registry: the reference device registers on import and is found by name and type', () => {
  assert.equal(deviceByName('reference'), referenceDevice);
  assert.equal(deviceByName('REFERENCE'), referenceDevice);
  assert.ok(devicesByType('cpu').includes(referenceDevice));
  assert.equal(deviceByType('gpu'), undefined);
  assert.equal(initBackend().device.name, 'CPU'); // no gpu: the default is the WebAssembly cpu device
  assert.equal(initBackend('Reference').name, 'Reference');
  assert.throws(() => initBackend('NoSuch'), /registered: .*Reference/);
  assert.equal(referenceDevice.reg.feature?.('nope'), undefined);
  assert.equal(typeof referenceDevice.reg.feature?.('supportsOp'), 'function');
});

test('registry: optional backends that fail are skipped with a log line; the host path works', async () => {
  const { msgs, stop } = capture();
  try {
    registerOptionalBackend('Broken', () => {
      throw new Error('no adapter found');
    });
    registerOptionalBackend('Rejects', async () => {
      throw new Error('connection refused');
    });
    registerOptionalBackend('Absent', () => null);
    registerOptionalBackend('Acc', async () => transformReg('Acc'));
    await backendsReady();
    assert.ok(msgs.some((m) => m.level === 'warn' && /Broken failed to initialise.*no adapter found/.test(m.message)));
    assert.ok(msgs.some((m) => m.level === 'warn' && /Rejects.*connection refused/.test(m.message)));
    assert.ok(msgs.some((m) => m.level === 'info' && /Absent not available/.test(m.message)));
    assert.equal(deviceByName('Broken'), undefined);
    assert.equal(deviceByType('accel')?.name, 'Acc');
    const a = newTensor(GGMLType.F32, [2]);
    const r = await computeOn(referenceDevice, [ops.scale(a, 3)], [[a, new Float32Array([1, 2])]]);
    assert.deepEqual(Array.from(r.values[0]), [3, 6]);
  } finally {
    stop();
    unregisterBackend('Acc');
  }
  assert.equal(deviceByName('Acc'), undefined);
});

test('llama-ts devices --json lists every device with memory, caps and buffer types', async () => {
  // the command probes for a GPU first; done before stdout is captured, so that the test
  // runner's own output during that wait stays out of it
  await enableWebGpu();
  let out = '';
  const write = process.stdout.write;
  process.stdout.write = ((s: string) => {
    out += s;
    return true;
  }) as typeof process.stdout.write;
  let code: number;
  try {
    code = await devicesCommand(['--json']);
  } finally {
    process.stdout.write = write;
  }
  assert.equal(code, 0);
  const list = JSON.parse(out) as {
    name: string;
    type: string;
    memory: { free: number; total: number };
    caps: Record<string, boolean>;
    bufferTypes: { name: string; isHost: boolean }[];
  }[];
  assert.equal(list.length, listDevices().length);
  const ref = list.find((d) => d.name === 'Reference')!;
  assert.equal(ref.type, 'cpu');
  assert.ok(ref.memory.total >= ref.memory.free && ref.memory.free > 0);
  assert.deepEqual(Object.keys(ref.caps).sort(), [
    'async',
    'bufferFromHostPtr',
    'events',
    'hostBuffer',
    'oracle',
    'threads',
  ]);
  // what callers ask instead of testing a device's class
  assert.deepEqual([ref.caps.oracle, ref.caps.threads], [true, false]);
  const cpu = list.find((d) => d.name === 'CPU')!;
  assert.deepEqual([cpu.caps.oracle, cpu.caps.threads], [false, true]);
  assert.deepEqual(
    ref.bufferTypes.map((b) => [b.name, b.isHost]),
    [['Reference', true]],
  );
});

test('one log callback receives messages from the GGUF loader and from a backend', async (t) => {
  const path = sharedPath('models/stories260K.gguf');
  if (!path) {
    t.skip(missingShared('models/stories260K.gguf'));
    return;
  }
  const { msgs, stop } = capture();
  try {
    const f = openGGUF(path);
    f.close();
    const a = newTensor(GGMLType.F32, [2]);
    await computeOn(referenceDevice, [ops.silu(a)], [[a, new Float32Array([0, 1])]]);
  } finally {
    stop();
  }
  const gguf = msgs.find((m) => m.source === 'gguf');
  const backend = msgs.find((m) => m.source.startsWith('backend'));
  assert.ok(gguf, `no gguf message in ${JSON.stringify(msgs)}`);
  assert.match(gguf.message, /loaded \d+ tensors/);
  assert.ok(backend, `no backend message in ${JSON.stringify(msgs)}`);
  assert.match(backend.message, /computed \d+ nodes/);
});
