// What the commands share: the options every model command spells the same way (-m, -hf,
// --cache-dir, -c, -t, -b, --device, --json) with one default each, their help lines,
// errors (one line on stderr, exit code 1; bad usage prints the help and exits 2) and
// the option parsing helpers.
import { availableParallelism } from 'node:os';
import { LlamaError } from '../api/errors.js';
import { type Device, deviceByName } from '../backends/api.js';
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
    e instanceof LlamaError ||
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

/** Kernel threads when -t is not given, in every command (the library's default too). */
export const DEFAULT_THREADS = Math.min(4, availableParallelism());

/** The shared options, as node:util parseArgs takes them. */
export const SHARED_OPTIONS = {
  model: { type: 'string', short: 'm' },
  'hf-repo': { type: 'string' },
  'cache-dir': { type: 'string' },
  'ctx-size': { type: 'string', short: 'c' },
  threads: { type: 'string', short: 't' },
  'batch-size': { type: 'string', short: 'b' },
  device: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export type SharedOption = keyof typeof SHARED_OPTIONS;

/** Help lines of the shared options (commands list the ones they take). */
export const SHARED_HELP: Record<SharedOption, string> = {
  model: '  -m, --model FILE        the GGUF model (or hf://OWNER/REPO/FILE.gguf, downloaded once)',
  'hf-repo': "  -hf, --hf-repo R[:Q]    a Hugging Face repository's GGUF for quant Q (default Q4_K_M)",
  'cache-dir': '      --cache-dir DIR     download cache (default ~/.cache/llama-ts; env LLAMA_TS_CACHE)',
  'ctx-size': '  -c, --ctx-size N        context size in tokens',
  threads: `  -t, --threads N         kernel threads (default ${DEFAULT_THREADS}: the cores, at most 4)`,
  'batch-size': '  -b, --batch-size N      tokens per decode call (default 512)',
  device: "      --device NAME       compute device (see 'llama-ts devices'; default: the fastest)",
  json: '      --json              one JSON object on stdout',
  help: '  -h, --help              show this help',
};

/** The options of a command: the shared ones it names, then its own. */
export function commandOptions<S extends SharedOption, O extends Record<string, unknown>>(
  shared: readonly S[],
  own: O,
) {
  const out: Record<string, unknown> = {};
  for (const k of shared) out[k] = SHARED_OPTIONS[k];
  return { ...(out as Pick<typeof SHARED_OPTIONS, S>), ...own };
}

/** llama.cpp's two-letter short options, which parseArgs cannot take. */
export function normalizeArgv(argv: readonly string[]): string[] {
  return argv.map((a) => (a === '-hf' ? '--hf-repo' : a === '-np' ? '--parallel' : a));
}

/** -t: threads, with the one default. */
export function threadsOption(v: string | undefined): number {
  return intOption('-t', v, DEFAULT_THREADS, 1);
}

/** --device: the name of a registered device (undefined: the default choice). */
export function deviceOption(name: string | undefined): string | undefined {
  if (name === undefined) return undefined;
  if (!deviceByName(name)) throw new UsageError(`no device '${name}' (see 'llama-ts devices')`);
  return name;
}
