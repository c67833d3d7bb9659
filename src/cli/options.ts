// What the commands share: the options every model command spells the same way (-m, -hf,
// --cache-dir, -c, -t, -b, --device, --json) with one default each, their help lines,
// errors (one line on stderr, exit code 1; bad usage prints the help and exits 2) and
// the option parsing helpers.
import { availableParallelism } from 'node:os';
import { LlamaError } from '../api/errors.js';
import type { FlashAttnTypeOption } from '../api/types.js';
import type { Device } from '../backends/api.js';
import { devicesReady, findDevice, isWebGpuName, namedDevices } from '../backends/index.js';
import { GGUFError, openGGUF } from '../gguf/index.js';
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

/**
 * The devices to run on (bench, embed, imatrix: commands that load the model in this
 * thread): --device NAME (the host device appended to a GPU), else the default (GPUs,
 * then the fastest CPU device); -ngl 0 keeps everything on the host.
 */
export async function pickDevices(name: string | undefined, nGpuLayers?: number): Promise<Device[]> {
  await devicesReady(name === undefined ? [] : [name], (nGpuLayers ?? 0) > 0);
  if (name !== undefined) {
    try {
      return namedDevices([name]);
    } catch (e) {
      throw new UsageError(`${(e as Error).message} (see 'llama-ts devices')`);
    }
  }
  const all = defaultDevices();
  return nGpuLayers === 0 ? all.slice(-1) : all;
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
  'n-gpu-layers': { type: 'string' },
  'flash-attn': { type: 'string' },
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
  device: "      --device NAME       compute device, e.g. webgpu (see 'llama-ts devices'; default: the fastest)",
  'n-gpu-layers': '  -ngl, --n-gpu-layers N  layers on the GPU, counted from the last (default: all; 0: none)',
  'flash-attn': '  -fa, --flash-attn V     on, off or auto (default auto: on): attention as one fused op',
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
  const long: Record<string, string> = {
    '-hf': '--hf-repo',
    '-np': '--parallel',
    '-fa': '--flash-attn',
    '-ngl': '--n-gpu-layers',
  };
  return argv.map((a) => long[a] ?? a);
}

/** -t: threads, with the one default. */
export function threadsOption(v: string | undefined): number {
  return intOption('-t', v, DEFAULT_THREADS, 1);
}

/** -fa: llama.cpp's flash_attn_type (undefined: auto). */
export function flashAttnOption(v: string | undefined): FlashAttnTypeOption | undefined {
  if (v === undefined) return undefined;
  if (v !== 'on' && v !== 'off' && v !== 'auto')
    throw new UsageError(`--flash-attn must be on, off or auto, got '${v}'`);
  return v;
}

/**
 * --device: the name of a registered device (undefined: the default choice). A WebGPU
 * name is checked where the model loads (the engine probes for the adapter), not here.
 */
export function deviceOption(name: string | undefined): string | undefined {
  if (name === undefined || isWebGpuName(name)) return name;
  if (!findDevice(name)) throw new UsageError(`no device '${name}' (see 'llama-ts devices')`);
  return name;
}

/** -ngl: llama.cpp's n_gpu_layers (undefined: all layers on the GPU, when there is one). */
export function gpuLayersOption(v: string | undefined): number | undefined {
  return v === undefined ? undefined : intOption('-ngl', v, 0);
}

/** loadModel's device options from --device and -ngl. */
export function deviceModelOptions(device: string | undefined, nGpuLayers: number | undefined) {
  return {
    ...(device !== undefined ? { devices: [device] } : {}),
    ...(nGpuLayers !== undefined ? { n_gpu_layers: nGpuLayers } : {}),
  };
}

// ---- LoRA adapters and speculative decoding (run, serve, bench) ----

export interface AdapterArgs {
  /** The arguments left once --lora / --lora-scaled are taken out. */
  argv: string[];
  /** The adapters, in the order given. */
  lora: { path: string; scaled: number }[];
}

/**
 * Takes `--lora FILE` and `--lora-scaled FILE SCALE` out of the arguments (parseArgs cannot
 * take an option with two values); llama.cpp's `--lora-scaled FILE:SCALE` works too, and
 * each may be given several times (or as comma-separated lists, as llama.cpp).
 */
export function extractAdapterArgs(argv: readonly string[]): AdapterArgs {
  const out: string[] = [];
  const lora: { path: string; scaled: number }[] = [];
  const scale = (v: string | undefined, file: string): number => {
    const n = v === undefined || v.trim() === '' ? Number.NaN : Number(v);
    if (!Number.isFinite(n))
      throw new UsageError(`--lora-scaled ${file}: the scale must be a number, got '${v ?? ''}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const eq = a.indexOf('=');
    const flag = a.startsWith('--') && eq > 0 ? a.slice(0, eq) : a;
    const inline = flag !== a ? a.slice(eq + 1) : undefined;
    if (flag === '--lora') {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new UsageError('--lora needs a file');
      for (const path of v.split(',')) if (path !== '') lora.push({ path, scaled: 1 });
    } else if (flag === '--lora-scaled') {
      const v = inline ?? argv[++i];
      if (v === undefined || v === '') throw new UsageError('--lora-scaled needs FILE SCALE');
      const next = argv[i + 1];
      if (inline === undefined && next !== undefined && !next.startsWith('-') && Number.isFinite(Number(next))) {
        lora.push({ path: v, scaled: scale(next, v) });
        i++;
      } else {
        for (const item of v.split(',')) {
          const at = item.lastIndexOf(':');
          if (at <= 0) throw new UsageError(`--lora-scaled takes FILE SCALE (or FILE:SCALE), got '${item}'`);
          lora.push({ path: item.slice(0, at), scaled: scale(item.slice(at + 1), item.slice(0, at)) });
        }
      }
    } else out.push(a);
  }
  return { argv: out, lora };
}

/** llama-server's speculative-decoding flags, as parseArgs takes them. */
export const SPECULATIVE_OPTIONS = {
  'model-draft': { type: 'string' },
  'draft-max': { type: 'string' },
  'draft-min': { type: 'string' },
  'draft-p-min': { type: 'string' },
  'spec-type': { type: 'string' },
} as const;

/** llama.cpp's other spellings of the same flags. */
export function normalizeSpeculativeArgv(argv: readonly string[]): string[] {
  const names: Record<string, string> = {
    '-md': '--model-draft',
    '--spec-draft-model': '--model-draft',
    '--draft': '--draft-max',
    '--draft-n': '--draft-max',
    '--spec-draft-n-max': '--draft-max',
    '--draft-n-min': '--draft-min',
    '--spec-draft-n-min': '--draft-min',
    '--spec-draft-p-min': '--draft-p-min',
  };
  return argv.map((a) => names[a] ?? a);
}

export const ADAPTER_HELP = `LoRA adapters and speculative decoding:
      --lora FILE         apply a LoRA adapter (GGUF; repeat for more)
      --lora-scaled FILE SCALE   apply a LoRA adapter at SCALE (also FILE:SCALE)
  -md, --model-draft FILE a draft model for speculative decoding (same vocabulary, smaller)
      --spec-type TYPE    'draft' (the default with --model-draft) or 'ngram' (prompt lookup,
                          no second model)
      --draft-max N       tokens drafted per step at most (default 16)
      --draft-min N       drafts shorter than N are not used (default 0)
      --draft-p-min P     a draft model's draft ends at a token below probability P (default 0.8)`;

/** The loadModel options the adapter and speculative flags give. */
export function adapterModelOptions(
  values: { [K in keyof typeof SPECULATIVE_OPTIONS]?: string },
  lora: readonly { path: string; scaled: number }[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (lora.length > 0) out.lora_list = lora.map((l) => ({ ...l }));
  if (values['model-draft'] !== undefined) out.model_draft = values['model-draft'];
  const type = values['spec-type'];
  if (type !== undefined) {
    const t =
      type === 'ngram-simple' || type === 'ngram'
        ? 'ngram'
        : type === 'draft' || type === 'draft-simple'
          ? 'draft'
          : '';
    if (!t) throw new UsageError(`--spec-type must be 'draft' or 'ngram', got '${type}'`);
    if (t === 'draft' && values['model-draft'] === undefined)
      throw new UsageError('--spec-type draft needs --model-draft');
    out.spec_type = t;
  }
  if (values['draft-max'] !== undefined) out.draft_max = intOption('--draft-max', values['draft-max'], 16, 0);
  if (values['draft-min'] !== undefined) out.draft_min = intOption('--draft-min', values['draft-min'], 0, 0);
  const p = values['draft-p-min'];
  if (p !== undefined) {
    const n = p.trim() === '' ? Number.NaN : Number(p);
    if (!(n >= 0 && n <= 1)) throw new UsageError(`--draft-p-min must be a number in [0, 1], got '${p}'`);
    out.draft_p_min = n;
  }
  return out;
}

/** The model's training context, capped: the default context size of run and rerank. */
export function defaultContext(path: string, cap: number): number {
  const f = openGGUF(path);
  try {
    return Math.min(cap, f.getInt(`${f.architecture}.context_length`, cap) || cap);
  } finally {
    f.close();
  }
}
