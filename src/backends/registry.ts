// The global backend registry (ggml_backend_reg_*, ggml_backend_dev_*). Backends register
// themselves when their module is imported. An optional backend (WebGPU, RPC) registers
// through registerOptionalBackend: if its initialisation throws or rejects, it is skipped
// with a log line and the host path keeps working.

import { logger } from '../log.js';
import type { BackendReg, Device, DeviceType } from './impl.js';

const log = logger('backend');

const regs: BackendReg[] = [];
const pending: Promise<void>[] = [];

/** Add a backend family; its devices become visible to lookups. Re-registering a name replaces it. */
export function registerBackend(reg: BackendReg): void {
  const i = regs.findIndex((r) => r.name === reg.name);
  if (i >= 0) regs.splice(i, 1, reg);
  else regs.push(reg);
  log.debug(`registered backend ${reg.name} with ${reg.devices().length} device(s)`);
}

/** Remove a backend family (tests, or a backend whose device went away). */
export function unregisterBackend(name: string): void {
  const i = regs.findIndex((r) => r.name === name);
  if (i >= 0) regs.splice(i, 1);
}

/**
 * Register a backend whose initialisation may fail or take time (probing a GPU, connecting
 * to a server). Failures are logged and skipped. `backendsReady()` waits for all of them.
 */
export function registerOptionalBackend(
  name: string,
  init: () => BackendReg | null | Promise<BackendReg | null>,
): void {
  const done = (async () => {
    try {
      const reg = await init();
      if (reg) registerBackend(reg);
      else log.info(`backend ${name} not available on this system; skipped`);
    } catch (e) {
      log.warn(`backend ${name} failed to initialise; skipped: ${(e as Error).message}`);
    }
  })();
  pending.push(done);
}

/** Resolves once every optional backend has registered or been skipped. */
export async function backendsReady(): Promise<void> {
  await Promise.all(pending);
}

export function backendRegs(): readonly BackendReg[] {
  return regs;
}

export function backendRegByName(name: string): BackendReg | undefined {
  const n = name.toLowerCase();
  return regs.find((r) => r.name.toLowerCase() === n);
}

/** Every device of every registered backend, in registration order. */
export function listDevices(): Device[] {
  return regs.flatMap((r) => [...r.devices()]);
}

/** A device by name, case-insensitive ("reference", "CPU", "WebGPU0"). */
export function deviceByName(name: string): Device | undefined {
  const n = name.toLowerCase();
  return listDevices().find((d) => d.name.toLowerCase() === n);
}

/** Devices of one type, in registration order. */
export function devicesByType(type: DeviceType): Device[] {
  return listDevices().filter((d) => d.type === type);
}

/** The first device of a type, or undefined. */
export function deviceByType(type: DeviceType): Device | undefined {
  return devicesByType(type)[0];
}
