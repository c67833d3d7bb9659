// What the commands share: their errors (one line on stderr, exit code 1; bad usage
// prints the help and exits 2) and the option parsing helpers.
import { deviceByName } from '../backends/api.js';
import type { Device } from '../backends/impl.js';
import { GGUFError } from '../gguf/index.js';
import { ContextError, defaultDevices, ModelError } from '../model/index.js';
import { VocabError } from '../vocab/index.js';

/** Prints a one-line error for the failures a user can cause; returns the exit code. */
export function reportError(command: string, e: unknown): number {
  if (
    e instanceof GGUFError ||
    e instanceof ModelError ||
    e instanceof VocabError ||
    e instanceof ContextError ||
    e instanceof CliError ||
    (e as Error)?.name === 'DownloadError'
  ) {
    process.stderr.write(`llama-ts ${command}: ${(e as Error).message}\n`);
    return 1;
  }
  throw e;
}

/** A failure with a message meant for the user (exit code 1). */
export class CliError extends Error {}

export function usageError(command: string, help: string, message: string): number {
  process.stderr.write(`llama-ts ${command}: ${message}\n\n${help}`);
  return 2;
}

/** A non-negative integer option, or a usage error message. */
export function intOption(name: string, v: string | undefined, fallback: number, min = 0): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer ≥ ${min}, got '${v}'`);
  return n;
}

export class UsageError extends Error {}

/** The devices to run on: --device NAME, else the default (GPUs, then the fastest CPU device). */
export function pickDevices(name: string | undefined): Device[] {
  if (name === undefined) return defaultDevices();
  const d = deviceByName(name);
  if (!d) throw new UsageError(`no device '${name}' (see 'llama-ts devices')`);
  return [d];
}
