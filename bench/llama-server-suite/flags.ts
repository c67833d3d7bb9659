// llama-server's command line (as llama.cpp's tools/server/tests/utils.py writes it) →
// `llama-ts serve`'s. One table: every flag utils.py passes, what it becomes here, or why
// it is dropped. Flags whose feature `serve` may or may not have yet are passed only when
// `serve --help` lists them (so the shim follows the server as features land).
import { readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath } from 'node:url';

type Rule =
  /** the same flag (and its value) */
  | { kind: 'same'; value: boolean }
  /** another spelling here */
  | { kind: 'rename'; to: string; value: boolean }
  /** passed when `serve --help` lists it, else dropped with a note */
  | { kind: 'if-supported'; value: boolean; to?: string }
  /** dropped: no meaning here (the note says why) */
  | { kind: 'ignore'; value: boolean; note: string }
  /** a model source; resolved to a local file */
  | { kind: 'model'; key: 'file' | 'hf-repo' | 'hf-file' | 'url' }
  /** the server cannot run as asked (the note says why) */
  | { kind: 'unsupported'; value: boolean; note: string }
  /** --chat-template-file: its text becomes --chat-template */
  | { kind: 'template-file' }
  /** --context-shift / --no-context-shift: llama-server's default is off, serve's is on */
  | { kind: 'ctx-shift'; on: boolean };

export const FLAGS: Record<string, Rule> = {
  '--host': { kind: 'same', value: true },
  '--port': { kind: 'same', value: true },
  '--temp': { kind: 'if-supported', value: true },
  '--seed': { kind: 'if-supported', value: true },
  '--n-predict': { kind: 'if-supported', value: true },
  '--offline': { kind: 'ignore', value: false, note: 'serve never downloads a file the shim resolved' },
  '--model': { kind: 'model', key: 'file' },
  '--model-url': { kind: 'model', key: 'url' },
  '--hf-repo': { kind: 'model', key: 'hf-repo' },
  '--hf-file': { kind: 'model', key: 'hf-file' },
  '--model-draft': { kind: 'same', value: true },
  '--models-dir': { kind: 'same', value: true },
  '--models-max': { kind: 'same', value: true },
  '--models-preset': { kind: 'same', value: true },
  '--models-autoload': { kind: 'same', value: false },
  '--no-models-autoload': { kind: 'same', value: false },
  '--batch-size': { kind: 'same', value: true },
  '--ubatch-size': { kind: 'if-supported', value: true },
  '--threads': { kind: 'same', value: true },
  '--n-gpu-layers': { kind: 'ignore', value: true, note: 'layers run where --device says (no offload count)' },
  '--draft': { kind: 'rename', to: '--draft-max', value: true },
  '--draft-max': { kind: 'same', value: true },
  '--draft-min': { kind: 'same', value: true },
  '--cont-batching': { kind: 'ignore', value: false, note: 'continuous batching is always on' },
  '--embedding': { kind: 'rename', to: '--embeddings', value: false },
  '--reranking': { kind: 'same', value: false },
  '--metrics': { kind: 'ignore', value: false, note: '/metrics is always served' },
  '--kv-unified': { kind: 'if-supported', value: false },
  '--slots': { kind: 'if-supported', value: false },
  '--no-slots': { kind: 'if-supported', value: false },
  '--pooling': { kind: 'if-supported', value: true },
  '--alias': { kind: 'same', value: true },
  '--tags': { kind: 'if-supported', value: true },
  '--ctx-size': { kind: 'same', value: true },
  '--parallel': { kind: 'same', value: true },
  '-ctk': { kind: 'ignore', value: true, note: 'the KV cache type is fixed (f16/f32 per backend)' },
  '-ctv': { kind: 'ignore', value: true, note: 'the KV cache type is fixed (f16/f32 per backend)' },
  '-fa': { kind: 'ignore', value: true, note: 'attention kernels are chosen by the backend' },
  '--slot-save-path': { kind: 'same', value: true },
  '--grp-attn-n': { kind: 'ignore', value: true, note: 'self-extend (group attention) is not implemented' },
  '--grp-attn-w': { kind: 'ignore', value: true, note: 'self-extend (group attention) is not implemented' },
  '--verbose': { kind: 'if-supported', value: false },
  '--lora': { kind: 'same', value: true },
  '--context-shift': { kind: 'ctx-shift', on: true },
  '--no-context-shift': { kind: 'ctx-shift', on: false },
  '--api-key': { kind: 'same', value: true },
  '--no-webui': { kind: 'if-supported', value: false },
  '--jinja': { kind: 'ignore', value: false, note: 'chat templates always run as Jinja' },
  '--no-jinja': { kind: 'ignore', value: false, note: 'chat templates always run as Jinja' },
  '--reasoning-format': { kind: 'if-supported', value: true },
  '--reasoning-budget': { kind: 'if-supported', value: true },
  '--chat-template': { kind: 'same', value: true },
  '--chat-template-file': { kind: 'template-file' },
  '--mmproj-url': { kind: 'unsupported', value: true, note: 'multimodal projectors are not implemented' },
  '--media-path': { kind: 'if-supported', value: true },
  '--sleep-idle-seconds': { kind: 'if-supported', value: true },
};

/** llama-server's short spellings utils.py or people use. */
const ALIASES: Record<string, string> = {
  '-m': '--model',
  '-hf': '--hf-repo',
  '-hff': '--hf-file',
  '-c': '--ctx-size',
  '-b': '--batch-size',
  '-ub': '--ubatch-size',
  '-t': '--threads',
  '-np': '--parallel',
  '-n': '--n-predict',
  '-s': '--seed',
  '-ngl': '--n-gpu-layers',
  '--gpu-layers': '--n-gpu-layers',
  '-cb': '--cont-batching',
  '--embeddings': '--embedding',
  '--rerank': '--reranking',
  '-a': '--alias',
  '-md': '--model-draft',
  '-v': '--verbose',
  '--cache-type-k': '-ctk',
  '--cache-type-v': '-ctv',
  '--flash-attn': '-fa',
};

/** Hugging Face model names → files under the models folder (models.json). */
export type ModelMap = Record<string, string>;

const HERE = dirname(fileURLToPath(import.meta.url));

/** The model map (bench/llama-server-suite/models.json, read from the source tree; LLAMA_SUITE_MODELS_JSON: another). */
export function loadModelMap(): ModelMap {
  // compiled into dist/bench/llama-server-suite/: the JSON stays beside the sources
  const src =
    process.env.LLAMA_SUITE_MODELS_JSON ?? join(HERE, '..', '..', '..', 'bench', 'llama-server-suite', 'models.json');
  const raw = JSON.parse(readFileSync(src, 'utf8')) as { models: ModelMap };
  return raw.models;
}

/** The folder the map's files are in: LLAMA_SUITE_MODELS, else ../shared/models beside the checkout. */
export function modelsDir(): string {
  return process.env.LLAMA_SUITE_MODELS ?? join(HERE, '..', '..', '..', '..', 'shared', 'models');
}

/** The map's key for an --hf-repo / --hf-file pair: `REPO` alone, or `REPO/FILE`. */
export function modelKey(repo: string, file: string | undefined): string {
  return file ? `${repo}/${file}` : repo;
}

export interface Translation {
  argv: string[];
  /** one line per flag dropped or changed in meaning */
  notes: string[];
}

export class ShimError extends Error {
  override name = 'ShimError';
}

/**
 * llama-server's argv → serve's. `supported` holds the long flags `serve --help` lists;
 * `cwd` resolves relative files (the suite runs from its own folder).
 */
export function translateArgs(
  argv: readonly string[],
  supported: ReadonlySet<string>,
  models: ModelMap,
  dir: string,
  cwd: string,
): Translation {
  const out: string[] = [];
  const notes: string[] = [];
  const model: { file?: string; 'hf-repo'?: string; 'hf-file'?: string; url?: string } = {};
  let ctxShift = false;
  for (let i = 0; i < argv.length; i++) {
    const raw = argv[i]!;
    const eq = raw.startsWith('--') ? raw.indexOf('=') : -1;
    const given = eq > 0 ? raw.slice(0, eq) : raw;
    const flag = ALIASES[given] ?? given;
    const rule = FLAGS[flag];
    if (!rule)
      throw new ShimError(`llama-server flag ${given} is not in the shim's table (bench/llama-server-suite/flags.ts)`);
    const takesValue =
      rule.kind === 'model' || rule.kind === 'template-file' ? true : rule.kind === 'ctx-shift' ? false : rule.value;
    let value: string | undefined;
    if (takesValue) {
      value = eq > 0 ? raw.slice(eq + 1) : argv[++i];
      if (value === undefined) throw new ShimError(`llama-server flag ${given} needs a value`);
    }
    const pass = (to: string) => out.push(to, ...(value !== undefined ? [value] : []));
    switch (rule.kind) {
      case 'same':
        pass(flag);
        break;
      case 'rename':
        pass(rule.to);
        break;
      case 'if-supported': {
        const to = rule.to ?? flag;
        if (supported.has(to)) pass(to);
        else notes.push(`${flag} dropped: serve has no such option yet`);
        break;
      }
      case 'ignore':
        notes.push(`${flag} ignored: ${rule.note}`);
        break;
      case 'unsupported':
        throw new ShimError(`${flag}: ${rule.note}`);
      case 'model':
        model[rule.key] = value!;
        break;
      case 'template-file': {
        const path = isAbsolute(value!) ? value! : join(cwd, value!);
        out.push('--chat-template', readFileSync(path, 'utf8'));
        break;
      }
      case 'ctx-shift':
        ctxShift = rule.on;
        break;
    }
  }
  // llama-server shifts only when asked (common_params.ctx_shift = false); serve shifts by default
  if (!ctxShift) out.push('--no-context-shift');
  if (Object.keys(model).length === 0) {
    // no model: llama-server's router mode, its models named as the suite names them (a preset)
    const preset = routerPreset(models, dir);
    out.push('--models-preset', preset);
    notes.push(`router mode: the suite's model names come from ${preset}`);
    return { argv: out, notes };
  }
  out.push('--model', resolveModel(model, models, dir, cwd));
  return { argv: out, notes };
}

/**
 * A preset file (serve --models-preset) naming each repository of the model map as the
 * router's cache would (`ggml-org/test-model-stories260K`) with its local file.
 */
export function routerPreset(models: ModelMap, dir: string): string {
  const lines = ["; written by the llama-server shim: the suite's model names → local files", 'version = 1'];
  for (const [key, rel] of Object.entries(models)) {
    // REPO/FILE.gguf keys are --hf-repo + --hf-file pairs, not names a request gives
    if (key.toLowerCase().endsWith('.gguf')) continue;
    lines.push('', `[${key}]`, `model = ${join(dir, rel)}`);
  }
  const path = join(tmpdir(), `llama-ts-suite-router-${process.pid}.ini`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

function resolveModel(
  m: { file?: string; 'hf-repo'?: string; 'hf-file'?: string; url?: string },
  models: ModelMap,
  dir: string,
  cwd: string,
): string {
  if (m.file !== undefined) return isAbsolute(m.file) ? m.file : join(cwd, m.file);
  if (m['hf-repo'] !== undefined) {
    const key = modelKey(m['hf-repo'], m['hf-file']);
    const rel = models[key];
    if (rel === undefined) throw new ShimError(`model ${key} is not available offline (not in models.json)`);
    return join(dir, rel);
  }
  if (m.url !== undefined) throw new ShimError(`--model-url ${m.url}: downloads are not available offline`);
  throw new ShimError('no model given (--model or --hf-repo)');
}
