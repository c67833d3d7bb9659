// `node dist/src/generator/cli.js --preset qwen2.5-0.5b --type Q4_0 -o out.gguf`:
// writes a random-weight model of a preset's shape (or `--cache` to reuse ensureModel's).
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { typeName } from '../ggml/types.js';
import {
  ensureModel,
  FILE_TYPES,
  generateLora,
  generateModel,
  isFileTypeName,
  LORA_TARGETS,
  type ModelShape,
  PRESETS,
  presetSpec,
  progressPrinter,
} from './index.js';
import { generateMmproj, MMPROJ_PRESETS } from './mmproj.js';

const HELP = `usage: gen-model --preset NAME --type FTYPE (-o OUT.gguf | --cache [DIR]) [options]
       gen-model --lora-for MODEL.gguf -o OUT.gguf [--targets T,T…] [--rank R] [--alpha A] [--lora-type T] [--seed N]
       gen-model --mmproj PRESET -o OUT.mmproj.gguf [--seed N] [--type F32|F16|Q4_0]

Writes a GGUF model of a preset's shape with seeded random weights, with the per-tensor
types llama-quantize would choose for FTYPE.
  --preset NAME       ${Object.keys(PRESETS).join(', ')}
  --type FTYPE        ${Object.keys(FILE_TYPES).join(' ')}
  -o, --output FILE   where to write
  --cache [DIR]       generate into the model cache (LLAMA_TS_CACHE or ~/.cache/llama-ts/models) unless present; prints the path
  --seed N            default 1
  --vocab-from FILE   copy every tokenizer.* key from FILE (n_vocab follows it)
  --layers N          override the preset's layer count (the same per-layer shape: smaller files)
  --n-embd N          override the preset's width (n_embd)
  --n-ff N            override the preset's feed-forward width (n_ff)
  --n-head N          override the preset's attention head count (n_head)
  --n-head-kv N       override the preset's K/V head count (n_head_kv; 1 = multi-query)
  --qkv fused|split   q/k/v as one attn_qkv, or (phi3) as attn_q/k/v: layouts llama.cpp's loaders also take
  --biases LIST       add a bias to each of these projections that has none, e.g.
                      attn_q,attn_k,attn_v,attn_output,ffn_gate,ffn_up,ffn_down,output
  --no-biases LIST    leave out these projections' biases (e.g. qwen2's attn_q,attn_k,attn_v)
  --quiet             no progress
A random LoRA adapter for MODEL.gguf (llama.cpp's adapter format):
  --targets LIST      weights to adapt in every layer, of ${LORA_TARGETS.join(', ')}
                      (default attn_q,attn_v)
  --rank R            default 8
  --alpha A           adapter.lora.alpha (default: the rank; 0: the scale applies as is)
  --lora-type T       F32 (default), F16, BF16, Q8_0
A random multimodal projector (mmproj, general.architecture = clip) as llama.cpp's mtmd loads it:
  --mmproj PRESET     ${Object.keys(MMPROJ_PRESETS).join(', ')}
  --type F32|F16|Q4_0 the matrices' type (default: the preset's; Q4_0: those with whole 32-blocks)
`;

export function main(argv: string[]): number {
  const { values } = parseArgs({
    args: argv,
    options: {
      preset: { type: 'string' },
      type: { type: 'string' },
      output: { type: 'string', short: 'o' },
      cache: { type: 'boolean' },
      'cache-dir': { type: 'string' },
      seed: { type: 'string' },
      'vocab-from': { type: 'string' },
      layers: { type: 'string' },
      'n-embd': { type: 'string' },
      'n-ff': { type: 'string' },
      'n-head': { type: 'string' },
      'n-head-kv': { type: 'string' },
      qkv: { type: 'string' },
      biases: { type: 'string' },
      'no-biases': { type: 'string' },
      quiet: { type: 'boolean' },
      'lora-for': { type: 'string' },
      targets: { type: 'string' },
      rank: { type: 'string' },
      alpha: { type: 'string' },
      'lora-type': { type: 'string' },
      mmproj: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    allowPositionals: false,
  });
  if (values.help) {
    process.stdout.write(HELP);
    return 0;
  }
  const fail = (msg: string) => {
    process.stderr.write(`gen-model: ${msg}\n\n${HELP}`);
    return 2;
  };
  if (values['lora-for']) {
    if (!values.output) return fail('-o OUT.gguf is required');
    const rank = Number(values.rank ?? 8);
    const alpha = values.alpha === undefined ? undefined : Number(values.alpha);
    const seed = Number(values.seed ?? 1);
    if (!Number.isSafeInteger(rank) || rank < 1) return fail(`--rank ${values.rank} is not a positive integer`);
    if (alpha !== undefined && !Number.isFinite(alpha)) return fail(`--alpha ${values.alpha} is not a number`);
    if (!Number.isSafeInteger(seed)) return fail(`--seed ${values.seed} is not an integer`);
    const type = (values['lora-type'] ?? 'F32').toUpperCase();
    if (type !== 'F32' && type !== 'F16' && type !== 'BF16' && type !== 'Q8_0') {
      return fail(`--lora-type must be F32, F16, BF16 or Q8_0`);
    }
    const targets = (values.targets ?? 'attn_q,attn_v').split(',').filter((t) => t !== '');
    const r = generateLora(values['lora-for'], { targets, rank, alpha, type, seed }, values.output);
    process.stdout.write(`${r.path}: ${r.weights.length} adapted weights, rank ${rank}\n`);
    return 0;
  }
  if (values.mmproj !== undefined) {
    const preset = MMPROJ_PRESETS[values.mmproj];
    if (!preset) return fail(`--mmproj must be one of ${Object.keys(MMPROJ_PRESETS).join(', ')}`);
    if (!values.output) return fail('-o OUT.mmproj.gguf is required');
    const seed = Number(values.seed ?? 1);
    if (!Number.isSafeInteger(seed)) return fail(`--seed ${values.seed} is not an integer`);
    const type = values.type?.toUpperCase() ?? preset.spec.fileType ?? 'F32';
    if (type !== 'F32' && type !== 'F16' && type !== 'Q4_0')
      return fail('--type of a projector must be F32, F16 or Q4_0');
    const t0 = performance.now();
    const r = generateMmproj({ ...preset.spec, seed, fileType: type }, values.output);
    process.stdout.write(
      `${r.path}: ${preset.spec.projector} projector, ${(r.parameters / 1e6).toFixed(1)}M parameters, ` +
        `${(r.fileSize / 1048576).toFixed(1)} MiB; ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    return 0;
  }
  if (!values.preset || !PRESETS[values.preset])
    return fail(`--preset must be one of ${Object.keys(PRESETS).join(', ')}`);
  const ftype = (values.type ?? '').toUpperCase();
  if (!isFileTypeName(ftype)) return fail(`--type must be one of ${Object.keys(FILE_TYPES).join(' ')}`);
  const seed = values.seed === undefined ? 1 : Number(values.seed);
  if (!Number.isSafeInteger(seed)) return fail(`--seed ${values.seed} is not an integer`);
  const vocab = values['vocab-from'] ? { kind: 'copy' as const, from: values['vocab-from'] } : undefined;
  const onProgress = values.quiet ? undefined : progressPrinter(`${values.preset} ${ftype}`);
  // shape overrides: flag → ModelShape field
  const shape: Partial<ModelShape> = {};
  const fields = [
    ['layers', 'nLayer'],
    ['n-embd', 'nEmbd'],
    ['n-ff', 'nFf'],
    ['n-head', 'nHead'],
    ['n-head-kv', 'nHeadKv'],
  ] as const;
  for (const [flag, field] of fields) {
    const v = values[flag];
    if (v === undefined) continue;
    const n = Number(v);
    if (!/^\d+$/.test(v) || !Number.isSafeInteger(n) || n <= 0) return fail(`--${flag} ${v} is not a positive integer`);
    shape[field] = n;
  }
  if (values.qkv !== undefined && values.qkv !== 'fused' && values.qkv !== 'split')
    return fail(`--qkv must be fused or split`);
  if (values.qkv || values.biases || values['no-biases']) {
    const list = (v: string) => v.split(',').filter((b) => b !== '');
    shape.projections = {
      ...(values.qkv ? { qkv: values.qkv as 'fused' | 'split' } : {}),
      ...(values.biases ? { biases: list(values.biases) } : {}),
      ...(values['no-biases'] ? { noBiases: list(values['no-biases']) } : {}),
    };
  }
  const opts = { seed, shape, ...(vocab ? { vocab } : {}), ...(onProgress ? { onProgress } : {}) };
  let spec: ReturnType<typeof presetSpec>;
  try {
    spec = presetSpec(values.preset, ftype, opts);
  } catch (e) {
    return fail(e instanceof Error ? e.message : String(e));
  }

  if (values.cache || values['cache-dir']) {
    const path = ensureModel(values.preset, ftype, values['cache-dir'], opts);
    process.stdout.write(`${path}\n`);
    return 0;
  }
  if (!values.output) return fail('-o OUT.gguf (or --cache) is required');
  const r = generateModel(spec, values.output, opts);
  const byType = new Map<string, number>();
  for (const t of r.tensors) byType.set(typeName(t.type), (byType.get(typeName(t.type)) ?? 0) + 1);
  process.stdout.write(
    `${r.path}: ${(r.parameters / 1e6).toFixed(1)}M parameters, ${(r.fileSize / 1048576).toFixed(1)} MiB, ` +
      `${[...byType].map(([k, v]) => `${k} ${v}`).join(', ')}; ${(r.elapsedMs / 1000).toFixed(1)} s\n`,
  );
  return 0;
}

function invokedDirectly(): boolean {
  try {
    return process.argv[1] !== undefined && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url);
  } catch {
    return false;
  }
}

if (invokedDirectly()) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`gen-model: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exitCode = 1;
  }
}
