// Seeded random LoRA adapters for a model file, written as llama.cpp's
// convert_lora_to_gguf.py writes them: general.type = adapter, adapter.type = lora,
// adapter.lora.alpha, and for each adapted weight `W.lora_a` [n_in, r] then `W.lora_b`
// [r, n_out] (the token embedding table's pair: A [r, n_vocab], B [r, n_embd]).
// Shapes come from the model file itself, so an adapter fits whatever model it was made for.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { join } from 'node:path';
import { canQuantize } from '../ggml/quants/index.js';
import { GGMLType, traitsOf } from '../ggml/types.js';
import { GGUFWriter, openGGUF } from '../gguf/index.js';
import { defaultCacheDir } from './cache-dir.js';
import { tensorBytes } from './fill.js';

/** Weight kinds an adapter may target, by their GGUF name without `blk.N.` and `.weight`. */
export const LORA_TARGETS = [
  'attn_q',
  'attn_k',
  'attn_v',
  // (fused q/k/v projections: phi3)
  'attn_qkv',
  'attn_output',
  'ffn_gate',
  'ffn_up',
  'ffn_down',
  'output',
  'token_embd',
] as const;

export interface LoraSpec {
  /** Which weights to adapt (every layer's): e.g. ['attn_q', 'attn_v', 'ffn_down']. */
  targets: readonly string[];
  /** r. */
  rank: number;
  /** adapter.lora.alpha; 0: the scale applies as is. Default: rank (scale 1 = B·A). */
  alpha?: number;
  /** Factor type: F32 (default), F16, BF16 or Q8_0 (rows not a multiple of 32 stay F16). */
  type?: 'F32' | 'F16' | 'BF16' | 'Q8_0';
  seed?: number;
  /** Standard deviation of B's entries; default 0.5/√r (the adapter moves each product by about half its size). */
  bStd?: number;
  /** general.architecture written (default: the model's), for testing mismatches. */
  arch?: string;
}

const TYPES = { F32: GGMLType.F32, F16: GGMLType.F16, BF16: GGMLType.BF16, Q8_0: GGMLType.Q8_0 } as const;

export interface LoraResult {
  path: string;
  /** Adapted weight names. */
  weights: string[];
}

/** Writes a random adapter for the model at `modelPath` to `outPath`. */
export function generateLora(modelPath: string, spec: LoraSpec, outPath: string): LoraResult {
  const rank = spec.rank;
  if (!Number.isSafeInteger(rank) || rank < 1) throw new RangeError(`LoRA rank ${rank} is not a positive integer`);
  const alpha = spec.alpha ?? rank;
  const type = TYPES[spec.type ?? 'F32'];
  if (type === undefined)
    throw new RangeError(`LoRA type '${spec.type}' is not one of ${Object.keys(TYPES).join(', ')}`);
  const seed = spec.seed ?? 1;
  const bStd = spec.bStd ?? 0.5 / Math.sqrt(rank);
  for (const t of spec.targets) {
    if (!(LORA_TARGETS as readonly string[]).includes(t)) {
      throw new RangeError(`LoRA target '${t}' is not one of ${LORA_TARGETS.join(', ')}`);
    }
  }
  const model = openGGUF(modelPath);
  const w = new GGUFWriter();
  const weights: string[] = [];
  const values = new Map<string, { n: number; std: number }>();
  try {
    w.setString('general.architecture', spec.arch ?? model.architecture);
    w.setString('general.type', 'adapter');
    w.setString('general.name', `random LoRA r${rank} (${spec.targets.join(', ')})`);
    w.setString('adapter.type', 'lora');
    w.setF32('adapter.lora.alpha', alpha);
    const wanted = new Set(spec.targets);
    for (const t of model.tensors) {
      const m = /^(?:blk\.\d+\.)?([a-z_]+)\.weight$/.exec(t.name);
      if (!m || !wanted.has(m[1]) || t.dims.length !== 2) continue;
      const [nIn, nOut] = t.dims;
      const embd = m[1] === 'token_embd';
      const aDims = embd ? [rank, nOut] : [nIn, rank];
      const bDims = embd ? [rank, nIn] : [rank, nOut];
      const typeFor = (row: number) =>
        row % traitsOf(type).blockSize === 0 && canQuantize(type) ? type : GGMLType.F16;
      const aType = type === GGMLType.F32 ? type : typeFor(aDims[0]);
      const bType = type === GGMLType.F32 ? type : typeFor(bDims[0]);
      w.addTensor(`${t.name}.lora_a`, aType, aDims);
      w.addTensor(`${t.name}.lora_b`, bType, bDims);
      values.set(`${t.name}.lora_a`, { n: aDims[0] * aDims[1], std: embd ? 1 : 1 / Math.sqrt(nIn) });
      values.set(`${t.name}.lora_b`, { n: bDims[0] * bDims[1], std: bStd });
      weights.push(t.name);
    }
  } finally {
    model.close();
  }
  if (weights.length === 0) {
    throw new RangeError(`${modelPath} has none of the LoRA targets ${spec.targets.join(', ')}`);
  }
  w.write(outPath, (e) => {
    const v = values.get(e.name)!;
    return tensorBytes(seed, { name: e.name, dims: [v.n], init: { mean: 0, std: v.std } }, e.type);
  });
  return { path: outPath, weights };
}

/**
 * The path of a random adapter for `modelPath` in the model cache, generated on first use
 * (keyed by the model file's size and time and by the spec).
 */
export function ensureLora(modelPath: string, spec: LoraSpec, cacheDir = defaultCacheDir()): string {
  const st = statSync(modelPath);
  const key = createHash('sha256')
    .update(JSON.stringify({ v: 1, model: modelPath, size: st.size, mtime: st.mtimeMs, spec }))
    .digest('hex')
    .slice(0, 16);
  const path = join(cacheDir, `lora-${key}.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    generateLora(modelPath, spec, tmp);
    renameSync(tmp, path);
  } catch (e) {
    try {
      unlinkSync(tmp);
    } catch {
      // nothing was written
    }
    throw e;
  }
  return path;
}
