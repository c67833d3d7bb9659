// Seeded test-model generator: writes llama / qwen2 / qwen3 / bert / gemma2 / gemma3 /
// gemma-embedding / gemma4 / phi3 / smollm3 GGUF files and the mixtures of experts (llama
// with experts, qwen2moe, qwen3moe, deepseek2, gpt-oss) of any shape
// with random weights in any file type we can quantize to, with llama-quantize's
// per-tensor type choices. One tensor at a time is generated, quantized and written, so
// models far larger than memory's comfort (Qwen2.5-0.5B, TinyLlama-1.1B shapes) are fine.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, statSync, unlinkSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { canQuantize } from '../ggml/quants/index.js';
import { type GGMLType, traitsOf, typeName } from '../ggml/types.js';
import { GGUFValueType, GGUFWriter } from '../gguf/index.js';
import { chooseTensorTypes, quantizeOrder } from '../quantize/tensor-types.js';
import { defaultCacheDir } from './cache-dir.js';
import { hparamKeys, type PlannedTensor, planTensors } from './layout.js';
import { FillPool } from './pool.js';
import {
  FILE_TYPES,
  type FileTypeName,
  isGemma,
  type ModelSpec,
  type PresetOptions,
  presetSpec,
  resolveShape,
  type VocabSpec,
} from './spec.js';
import { buildVocab } from './vocab.js';

export { allowsQuantization, chooseTensorTypes, quantizeOrder } from '../quantize/tensor-types.js';
export { defaultCacheDir } from './cache-dir.js';
export { tensorBytes } from './fill.js';
export { planTensors } from './layout.js';
export { ensureLora, generateLora, LORA_TARGETS, type LoraResult, type LoraSpec } from './lora.js';
export {
  generateMmproj,
  isAudioProjector,
  MMPROJ_PRESETS,
  MMPROJ_TYPES,
  type MmprojShape,
  type MmprojSpec,
  type MmprojType,
  MTMD_DELIMITERS,
  planMmproj,
} from './mmproj.js';
export { Rng } from './rng.js';
export type {
  ExpertShape,
  FileTypeName,
  GenArch,
  ModelShape,
  ModelSpec,
  Preset,
  PresetOptions,
  ProjectionLayout,
  VocabSpec,
} from './spec.js';
export { FILE_TYPES, isFileTypeName, PRESETS, presetSpec, QKV_PROJECTIONS, resolveShape } from './spec.js';
export { buildVocab, TokenType } from './vocab.js';

/** Qwen3-Reranker's rerank prompt, as llama.cpp's converter writes it. */
export const QWEN3_RERANK_PROMPT =
  '<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. Note that the answer can only be "yes" or "no".<|im_end|>\n<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n';

/**
 * Bumped whenever the generator's output for a given spec changes (cache keys include it).
 */
export const GENERATOR_VERSION = 1;

export interface GenerateProgress {
  /** Tensors written so far (1-based index of the one just written). */
  index: number;
  count: number;
  name: string;
  type: string;
  bytesDone: number;
  bytesTotal: number;
  elapsedMs: number;
}

export interface GenerateOptions {
  onProgress?: (p: GenerateProgress) => void;
  /**
   * Worker threads that draw and quantize (the output is the same for any number).
   * Default: one per core for models of 16M+ parameters, none (this thread) below.
   */
  threads?: number;
}

export interface GeneratedTensor {
  name: string;
  type: GGMLType;
  dims: number[];
}

export interface GenerateResult {
  path: string;
  fileSize: number;
  parameters: number;
  nVocab: number;
  tensors: GeneratedTensor[];
  elapsedMs: number;
}

function defaultVocab(spec: ModelSpec): VocabSpec {
  const spm = spec.arch === 'llama' || spec.arch === 'phi3' || isGemma(spec.arch);
  const kind = spec.arch === 'bert' ? 'synthetic-wpm' : spm ? 'synthetic-spm' : 'synthetic-bpe';
  return { kind, size: spec.shape.nVocab };
}

const QWEN_ARCHS: readonly string[] = ['qwen2', 'qwen2vl', 'qwen3', 'qwen3vl', 'qwen2moe', 'qwen3moe'];

/** Writes the model `spec` describes to `path` (overwriting it). */
export function generateModel(spec: ModelSpec, path: string, opts: GenerateOptions = {}): GenerateResult {
  const t0 = performance.now();
  const ft = FILE_TYPES[spec.fileType];
  if (!ft) throw new RangeError(`unknown file type '${spec.fileType}' (known: ${Object.keys(FILE_TYPES).join(', ')})`);
  if (!Number.isSafeInteger(spec.seed)) throw new RangeError(`seed ${spec.seed} is not a safe integer`);
  const arch = spec.arch;
  const isQwen = QWEN_ARCHS.includes(arch);
  const vocab = buildVocab(spec.vocab ?? defaultVocab(spec), isQwen ? 'qwen2' : 'gpt-2');
  const shape = resolveShape(arch, {
    ...spec.shape,
    nVocab: vocab.nVocab,
    ...(arch === 'bert' && vocab.nTypeVocab !== undefined ? { nTypeVocab: vocab.nTypeVocab } : {}),
  });
  const plan = planTensors(arch, shape, vocab.nVocab);
  const choice = chooseTensorTypes(
    { arch, nLayer: shape.nLayer, nHead: shape.nHead, nHeadKv: shape.nHeadKv, nExpert: shape.experts?.nExpert },
    plan,
    spec.fileType,
  );
  const types = new Map([...choice].map(([name, c]) => [name, c.type]));
  // the generator has no importance matrix: types that need one cannot be generated
  const missing = [...new Set(types.values())].filter((t) => !canQuantize(t)).map(typeName);
  if (missing.length > 0) {
    throw new RangeError(`file type ${spec.fileType} needs an importance matrix for ${missing.join(', ')}`);
  }

  const layout = spec.layout ?? (spec.fileType === 'F32' ? 'convert' : 'quantize');
  const quantizedFile = traitsOf(ft.base).quantized;
  const w = new GGUFWriter();
  w.setString('general.architecture', arch);
  w.setString('general.name', spec.name ?? `generated-${arch}-${shape.nEmbd}x${shape.nLayer}`);
  for (const kv of hparamKeys(arch, shape)) w.set(kv.key, kv.type, kv.value);
  if (layout === 'convert') {
    w.setU32('general.file_type', ft.ftype);
    if (quantizedFile) w.setU32('general.quantization_version', 2);
  }
  if (arch === 'bert' && !vocab.kv.some((kv) => kv.key === 'tokenizer.ggml.token_type_count')) {
    w.setU32('tokenizer.ggml.token_type_count', shape.nTypeVocab);
  }
  for (const kv of vocab.kv) w.set(kv.key, kv.type, kv.value);
  if (arch === 'qwen3' && shape.poolingType === 4) w.setString('tokenizer.chat_template.rerank', QWEN3_RERANK_PROMPT);
  if (layout === 'quantize') {
    w.set('general.quantization_version', GGUFValueType.UINT32, 2);
    w.setU32('general.file_type', ft.ftype);
  }

  const ordered = layout === 'convert' ? plan : [...plan].sort((a, b) => quantizeOrder(a.name, b.name));
  const byName = new Map(plan.map((t) => [t.name, t]));
  for (const t of ordered) w.addTensor(t.name, types.get(t.name) as GGMLType, t.dims);

  const entries = w.tensors;
  const bytesTotal = entries.reduce((a, e) => a + e.nBytes, 0);
  let index = 0;
  let bytesDone = 0;
  const parameters = plan.reduce((a, t) => a + t.dims.reduce((x, y) => x * y, 1), 0);
  const threads = opts.threads ?? (parameters >= 1 << 24 ? availableParallelism() : 0);
  const pool = new FillPool(threads);
  try {
    w.write(path, (e) => {
      const t = byName.get(e.name) as PlannedTensor;
      const n = t.dims.reduce((a, b) => a * b, 1);
      const data = pool.fill({ seed: spec.seed, name: t.name, mean: t.init.mean, std: t.init.std, type: e.type, n });
      index++;
      bytesDone += e.nBytes;
      opts.onProgress?.({
        index,
        count: entries.length,
        name: e.name,
        type: typeName(e.type),
        bytesDone,
        bytesTotal,
        elapsedMs: performance.now() - t0,
      });
      return data;
    });
  } finally {
    pool.close();
  }

  return {
    path,
    fileSize: statSync(path).size,
    parameters,
    nVocab: vocab.nVocab,
    tensors: entries.map((e) => ({ name: e.name, type: e.type, dims: [...e.dims] })),
    elapsedMs: performance.now() - t0,
  };
}

/** A progress callback printing one updating line to stderr. */
export function progressPrinter(label = 'generating', intervalMs = 500): (p: GenerateProgress) => void {
  let last = Number.NEGATIVE_INFINITY;
  return (p) => {
    const done = p.index === p.count;
    if (!done && p.elapsedMs - last < intervalMs) return;
    last = p.elapsedMs;
    const mib = (b: number) => (b / 1048576).toFixed(0);
    const line = `${label}: ${p.index}/${p.count} tensors, ${mib(p.bytesDone)}/${mib(p.bytesTotal)} MiB, ${(p.elapsedMs / 1000).toFixed(1)} s`;
    process.stderr.write(done ? `\r${line}\n` : `\r${line}`);
  };
}

/** Stable hash of what determines a generated file's bytes. */
export function specHash(spec: ModelSpec): string {
  const vocab = spec.vocab ?? defaultVocab(spec);
  // A copied vocabulary is identified by its path, size and modification time.
  const source = vocab.kind === 'copy' ? statSync(vocab.from) : undefined;
  const key = {
    v: GENERATOR_VERSION,
    spec: { ...spec, vocab },
    source: source ? { size: source.size, mtimeMs: source.mtimeMs } : null,
  };
  return createHash('sha256').update(JSON.stringify(key)).digest('hex');
}

export interface EnsureOptions extends GenerateOptions, PresetOptions {}

/**
 * Path of the generated model `preset` in `fileType` (with `opts.shape`'s changes),
 * generating it on first use. The file name carries a hash of the spec; it is written under a temporary name and renamed,
 * so an interrupted run never leaves a file that looks complete.
 */
export function ensureModel(
  preset: string,
  fileType: FileTypeName,
  cacheDir = defaultCacheDir(),
  opts: EnsureOptions = {},
): string {
  const spec = presetSpec(preset, fileType, opts);
  const path = join(cacheDir, `${preset}-${fileType}-${specHash(spec).slice(0, 16)}.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(cacheDir, { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  try {
    generateModel(spec, tmp, opts);
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
