// Where the router's models come from, as llama-server's router finds them: the download
// cache (OWNER/REPO:QUANT), a models folder (FILE.gguf → FILE; a subfolder → its name,
// holding the model and an `mmproj*` projector, or a split model's shards), and a preset
// file (INI: `[name]` sections of serve options, `[*]` for all). Each model ends as the
// serve options its own process gets (`args`), in llama-server's precedence: the
// preset's [*], then its [name], then the router's command line.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { cachedModels, pickMmproj } from '../../download/index.js';

export type ModelSource = 'cache' | 'dir' | 'preset';

export interface RouterModel {
  /** The id requests name (`model`) and /models lists. */
  name: string;
  /** The GGUF file (the first shard of a split one). */
  path: string;
  /** A multimodal projector beside it: its process gets `--mmproj`. */
  mmproj?: string;
  source: ModelSource;
  /** serve options of its own from the preset ([*] then [name]), before the router's. */
  presetArgs: string[];
  /** Other names it answers to (the preset's `alias`), and informational tags. */
  aliases: string[];
  tags: string[];
  /** preset-only keys: load when the router starts; seconds an unload waits before killing. */
  loadOnStartup: boolean;
  stopTimeout: number;
  /** The preset's section as INI text (/models status.preset), when it has one. */
  preset?: string;
}

export class RouterConfigError extends Error {
  override name = 'RouterConfigError';
}

export const DEFAULT_STOP_TIMEOUT = 10;

/** Options the router sets or owns: a preset's value for them is dropped (as llama-server's). */
const RESERVED = new Set([
  'host',
  'port',
  'api-key',
  'models-dir',
  'models-preset',
  'models-max',
  'models-autoload',
  'no-models-autoload',
  'hf-repo',
  'hf',
  'hf-file',
  'hff',
]);

const isGguf = (n: string) => n.toLowerCase().endsWith('.gguf');
// llama-server's rule: "mmproj" anywhere in the file's name (mmproj-F16.gguf, gemma3.mmproj.gguf)
const isProjector = (n: string) => /mmproj/i.test(basename(n));
/** `NAME-00002-of-00003.gguf`: a shard after the first. */
const isLaterShard = (n: string) => /-(\d{5})-of-\d{5}\.gguf$/i.test(n) && !/-00001-of-\d{5}\.gguf$/i.test(n);

/** The models of a models folder: each top-level GGUF file, and each subfolder with a model in it. */
export function modelsFromDir(dir: string): RouterModel[] {
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch (e) {
    throw new RouterConfigError(`--models-dir ${dir}: ${(e as Error).message}`);
  }
  const out: RouterModel[] = [];
  for (const e of entries) {
    const path = resolve(dir, e);
    let st: ReturnType<typeof statSync>;
    try {
      st = statSync(path);
    } catch {
      continue; // a dangling link
    }
    if (st.isFile() && isGguf(e) && !isProjector(e) && !isLaterShard(e)) {
      out.push(plainModel(e.slice(0, -5).replace(/-00001-of-\d{5}$/i, ''), path, 'dir'));
    } else if (st.isDirectory()) {
      const files = readdirSync(path).filter(isGguf).sort();
      const main = files.filter((f) => !isProjector(f) && !isLaterShard(f));
      if (main.length === 0) continue;
      const m = plainModel(e, join(path, main[0]!), 'dir');
      const proj = files.find(isProjector);
      if (proj) m.mmproj = join(path, proj);
      out.push(m);
    }
  }
  return out;
}

/** The download cache's models, named OWNER/REPO:QUANT (llama-server's names for them). */
export async function modelsFromCache(dir: string): Promise<RouterModel[]> {
  const out: RouterModel[] = [];
  const all = await cachedModels(dir);
  for (const m of all) {
    if (isProjector(m.path) || isLaterShard(m.path)) continue;
    const model = plainModel(m.spec, m.path, 'cache');
    // the repository's projector as -hf picks it (its process runs it)
    const [repo, quant = ''] = m.spec.split(':');
    const proj = pickMmproj(
      all.filter((p) => isProjector(p.path) && p.spec.split(':')[0] === repo).map((p) => p.path),
      quant.toLowerCase(),
    );
    if (proj) model.mmproj = proj;
    out.push(model);
  }
  return out;
}

function plainModel(name: string, path: string, source: ModelSource): RouterModel {
  return {
    name,
    path,
    source,
    presetArgs: [],
    aliases: [],
    tags: [],
    loadOnStartup: false,
    stopTimeout: DEFAULT_STOP_TIMEOUT,
  };
}

/** An INI file's sections: [name] → key → value, in order; keys before any section go to ''. */
export function parseIni(text: string, file: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>([['', new Map()]]);
  let current = sections.get('')!;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith(';') || line.startsWith('#')) return;
    const sec = /^\[(.+)\]$/.exec(line);
    if (sec) {
      const name = sec[1]!.trim();
      current = sections.get(name) ?? new Map();
      sections.set(name, current);
      return;
    }
    const eq = line.indexOf('=');
    if (eq <= 0) throw new RouterConfigError(`${file}:${i + 1}: expected 'key = value' or '[section]', got '${line}'`);
    let value = line.slice(eq + 1).trim();
    if (/^".*"$/.test(value)) value = value.slice(1, -1);
    current.set(line.slice(0, eq).trim(), value);
  });
  return sections;
}

/** A preset key and value as serve's argv: `c = 4096` → -c 4096, `x = true` → --x, `x = false` → --no-x. */
function optionArgs(key: string, value: string): string[] {
  const flag = key.length <= 3 && !key.includes('-') ? `-${key}` : `--${key}`;
  const v = value.toLowerCase();
  if (v === 'true' || v === 'on' || v === 'enabled') return [flag];
  if (v === 'false' || v === 'off' || v === 'disabled') {
    return [key.startsWith('no-') ? `--${key.slice(3)}` : `--no-${key}`];
  }
  return [flag, value];
}

const truthy = (v: string) => ['1', 'true', 'on', 'yes', 'enabled'].includes(v.toLowerCase());

/**
 * Applies a preset file to `models` (found in the cache and the models folder): a section
 * named as one of them adds options to it; another section is a model of its own and
 * must name its file (`model = PATH`, relative to `cwd`).
 */
export function applyPreset(models: RouterModel[], file: string, cwd: string): RouterModel[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new RouterConfigError(`--models-preset ${file}: ${(e as Error).message}`);
  }
  const sections = parseIni(text, file);
  const global = sections.get('*') ?? new Map<string, string>();
  const byName = new Map(models.map((m) => [m.name, m]));
  for (const [name, keys] of sections) {
    if (name === '' || name === '*') continue;
    let m = byName.get(name);
    const path = keys.get('model') ?? keys.get('m');
    if (path !== undefined) {
      if (m) m.path = resolve(cwd, path);
      else {
        m = plainModel(name, resolve(cwd, path), 'preset');
        byName.set(name, m);
        models.push(m);
      }
    } else if (!m) {
      throw new RouterConfigError(
        `${file}: [${name}] is no model the router found (cache, --models-dir): give its file, 'model = PATH'`,
      );
    }
    m.preset = [`[${name}]`, ...[...keys].map(([k, v]) => `${k} = ${v}`)].join('\n');
    configure(m, keys, file);
  }
  // [*] goes under every model's own options
  for (const m of models) {
    const own = m.presetArgs;
    m.presetArgs = [];
    configure(m, global, file);
    m.presetArgs.push(...own);
  }
  return models;
}

/** A section's keys onto a model: its preset-only keys, names, and serve options. */
function configure(m: RouterModel, keys: Map<string, string>, file: string): void {
  for (const [key, value] of keys) {
    switch (key) {
      case 'model':
      case 'm':
      case 'version':
        continue;
      case 'mmproj':
        m.mmproj = resolve(value);
        continue;
      case 'load-on-startup':
        m.loadOnStartup = truthy(value);
        continue;
      case 'stop-timeout': {
        const n = Number(value);
        if (!Number.isFinite(n) || n < 0) {
          throw new RouterConfigError(`${file}: [${m.name}] stop-timeout must be seconds ≥ 0, got '${value}'`);
        }
        m.stopTimeout = n;
        continue;
      }
      case 'alias':
      case 'a':
        m.aliases = listOf(value);
        continue;
      case 'tags':
        m.tags = listOf(value);
        continue;
    }
    if (RESERVED.has(key) || key.startsWith('LLAMA_')) continue;
    m.presetArgs.push(...optionArgs(key, value));
  }
}

const listOf = (v: string) => [...new Set(v.split(',').map((x) => x.trim()))].filter((x) => x !== '').sort();
