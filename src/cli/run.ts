// `llama-ts run`: generate text from a prompt, through the library API (loadModel →
// completion: the same loop, options and random numbers as the library and the server,
// so `--seed S` gives the text completion({ seed: S }) gives). Only the generated text
// goes to stdout; logs and the closing timings (load, prompt and generation speed) go to
// stderr. With --json, one JSON object instead: prompt and generated token ids, text,
// timings and, with --top-logits K, the K highest next-token logits after the prompt.
// Sampling flags are llama.cpp's, read from the option table (src/generation/options.ts).
import { parseArgs } from 'node:util';
import type { LlamaContext } from '../api/context.js';
import { loadModel } from '../api/index.js';
import type { FlashAttnTypeOption } from '../api/types.js';
import { checkValue, OPTIONS, type OptionSpec } from '../generation/index.js';
import {
  checkMediaFile,
  type MediaFile,
  MMPROJ_HELP,
  MMPROJ_OPTIONS,
  MMPROJ_SPELLINGS,
  mediaFlags,
  mmprojOnGpu,
  projectorArg,
} from './multimodal.js';
import {
  ADAPTER_HELP,
  adapterModelOptions,
  commandOptions,
  defaultContext,
  deviceModelOptions,
  deviceOption,
  extractAdapterArgs,
  flashAttnOption,
  gpuLayersOption,
  intOption,
  normalizeArgv,
  normalizeSpeculativeArgv,
  reportError,
  SHARED_HELP,
  SPECULATIVE_OPTIONS,
  threadsOption,
  UsageError,
  usageError,
} from './options.js';
import { processEscapes } from './tokenize.js';

/** Table rows `run` takes as llama.cpp flags: sampling, grammar, --keep. */
const FLAG_ROWS: readonly OptionSpec[] = (OPTIONS as readonly OptionSpec[]).filter(
  (s) => s.llamaCpp !== undefined && (s.group === 'sampling' || s.group === 'grammar' || s.name === 'n_keep'),
);

function flagName(s: OptionSpec): string {
  return s.llamaCpp!.slice(2);
}

function flagHelp(): string {
  return FLAG_ROWS.map((s) => {
    const d = s.default === undefined ? '' : ` (default ${JSON.stringify(s.default)})`;
    const arg = s.kind === 'boolean' ? '' : s.kind === 'strings' ? ' V…' : ' V';
    return `      ${`${s.llamaCpp}${arg}`.padEnd(26)} ${s.doc}${d}`;
  }).join('\n');
}

const HELP = `usage: llama-ts run -m MODEL.gguf -p PROMPT [options]

Generate text from a prompt: the text on stdout, timings on stderr.

${SHARED_HELP.model}
${SHARED_HELP['hf-repo']}
${SHARED_HELP['cache-dir']}
  -p, --prompt TEXT       the prompt (escapes such as \\n are processed)
  -n, --n-predict N       tokens to generate (default 128; stops early at end of text)
${SHARED_HELP.threads}
${SHARED_HELP['ctx-size']} (default: the model's, at most 4096)
${SHARED_HELP['batch-size']}
${SHARED_HELP.device}
${SHARED_HELP['n-gpu-layers']}
${SHARED_HELP['flash-attn']}
      --json              print one JSON object: prompt_tokens, generated_tokens, text,
                          timings
      --top-logits K      with --json: the K highest next-token [id, logit] after the prompt
${MMPROJ_HELP}
      --image FILE        an image for the prompt (repeatable; PNG, JPEG, GIF, BMP); each takes
                          the place of a <__media__> marker in the prompt, in the order given
                          with --audio (without markers: after the prompt text)
      --audio FILE        an audio clip for the prompt (repeatable; WAV), as --image
${SHARED_HELP.help}

${ADAPTER_HELP}

Sampling (llama.cpp's flags; --temp 0 is greedy, --seed makes a run repeatable):
${flagHelp()}
`;

interface Timings {
  load_ms: number;
  prompt_tokens: number;
  prompt_ms: number;
  prompt_tokens_per_s: number;
  generated_tokens: number;
  generation_ms: number;
  generation_tokens_per_s: number;
  /** With speculative decoding. */
  draft_tokens?: number;
  draft_tokens_accepted?: number;
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** The sampling options the flags give, checked by the option table (a bad one names its flag). */
function samplingFlags(values: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const s of FLAG_ROWS) {
    const raw = values[flagName(s)];
    if (raw === undefined) continue;
    let v: unknown = raw;
    if (s.kind === 'number' || s.kind === 'integer' || s.kind === 'enum') {
      v = (raw as string).trim() === '' ? Number.NaN : Number(raw);
    } else if (s.kind === 'strings') {
      v = raw;
    } else if (s.name === 'samplers') {
      v = (raw as string).includes(';') ? (raw as string).split(';') : raw;
    }
    checkValue(s, v, s.llamaCpp);
    out[s.name] = v;
  }
  return out;
}

export async function runCommand(argv: string[]): Promise<number> {
  let o: ReturnType<typeof parse>['values'];
  let nPredict: number;
  let threads: number;
  let nCtx: number | undefined;
  let nBatch: number;
  let topLogits: number;
  let device: string | undefined;
  let nGpuLayers: number | undefined;
  let flashAttn: FlashAttnTypeOption | undefined;
  let sampling: Record<string, unknown>;
  let extras: Record<string, unknown>;
  let media: MediaFile[];
  try {
    const adapters = extractAdapterArgs(
      normalizeSpeculativeArgv(normalizeArgv(argv).map((a) => MMPROJ_SPELLINGS[a] ?? a)),
    );
    const args = parse(adapters.argv);
    media = mediaFlags(adapters.argv);
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    if (!o.model && !o['hf-repo']) throw new UsageError('a model is required (-m MODEL.gguf or -hf REPO[:QUANT])');
    if (o.prompt === undefined) throw new UsageError('a prompt is required (-p TEXT)');
    nPredict = intOption('-n', o['n-predict'], 128);
    threads = threadsOption(o.threads);
    nCtx = o['ctx-size'] === undefined ? undefined : intOption('-c', o['ctx-size'], 0, 1);
    nBatch = intOption('-b', o['batch-size'], 512, 1);
    topLogits = intOption('--top-logits', o['top-logits'], 0);
    device = deviceOption(o.device);
    nGpuLayers = gpuLayersOption(o['n-gpu-layers']);
    flashAttn = flashAttnOption(o['flash-attn']);
    sampling = samplingFlags(o as Record<string, unknown>);
    extras = adapterModelOptions(o, adapters.lora);
    for (const f of media) checkMediaFile(f);
    if (media.length > 0 && o['no-mmproj'])
      throw new UsageError('--image and --audio need a projector; --no-mmproj leaves none');
    if (media.length > 0 && o.mmproj === undefined && o['hf-repo'] === undefined)
      throw new UsageError('--image and --audio need a multimodal projector (--mmproj FILE)');
  } catch (e) {
    return usageError('run', HELP, (e as Error).message);
  }

  let ctx: LlamaContext | undefined;
  try {
    const { resolveModelArg } = await import('../download/index.js');
    const path = await resolveModelArg({ model: o.model, hfRepo: o['hf-repo'], cacheDir: o['cache-dir'] });
    const ctxSize = nCtx ?? defaultContext(path, 4096);
    const t0 = performance.now();
    ctx = await loadModel({
      model: path,
      n_ctx: ctxSize,
      n_batch: Math.min(nBatch, ctxSize),
      n_threads: threads,
      ...deviceModelOptions(device, nGpuLayers),
      ...(flashAttn ? { flash_attn_type: flashAttn } : {}),
      ...extras,
    });
    // the projector only when the prompt has media (-hf may bring one: it is not loaded for text)
    const mmproj = media.length > 0 ? await projectorArg(o) : undefined;
    if (media.length > 0 && mmproj === undefined)
      throw new UsageError(`${o['hf-repo']} has no mmproj file: give one with --mmproj FILE`);
    if (mmproj !== undefined) await ctx.initMultimodal({ path: mmproj, use_gpu: mmprojOnGpu(o) });
    const loadMs = performance.now() - t0;
    const prompt = Buffer.from(processEscapes(Buffer.from(o.prompt, 'utf8'))).toString('utf8');
    const r = await ctx.completion(
      {
        ...sampling,
        prompt,
        ...(media.length > 0 ? { media_paths: media.map((f) => f.path) } : {}),
        n_predict: nPredict,
        // as llama-cli: a prompt longer than the context is an error, not cut
        truncate_prompt: false,
        return_tokens: true,
        ...(topLogits > 0 ? { top_logits: topLogits } : {}),
      },
      o.json ? undefined : (t) => process.stdout.write(t.token),
    );
    const t = r.timings;
    const timings: Timings = {
      load_ms: round(loadMs),
      prompt_tokens: r.tokens_evaluated,
      prompt_ms: round(t.prompt_ms),
      prompt_tokens_per_s: round(t.prompt_per_second),
      generated_tokens: r.tokens!.length,
      generation_ms: round(t.predicted_ms),
      generation_tokens_per_s: round(t.predicted_per_second),
      ...(t.draft_n !== undefined ? { draft_tokens: t.draft_n, draft_tokens_accepted: t.draft_n_accepted ?? 0 } : {}),
    };
    if (o.json) {
      const result: Record<string, unknown> = {
        prompt_tokens: r.prompt_tokens,
        generated_tokens: r.tokens,
        text: r.text,
        timings,
      };
      if (r.top_logits) result.top_logits = r.top_logits;
      process.stdout.write(`${JSON.stringify(result)}\n`);
    } else {
      process.stdout.write('\n');
      process.stderr.write(
        `llama-ts run: load ${timings.load_ms} ms | prompt ${timings.prompt_tokens} tokens in ${timings.prompt_ms} ms ` +
          `(${timings.prompt_tokens_per_s} t/s) | generation ${t.predicted_n} tokens in ${timings.generation_ms} ms ` +
          `(${timings.generation_tokens_per_s} t/s)` +
          (timings.draft_tokens !== undefined
            ? ` | draft ${timings.draft_tokens_accepted}/${timings.draft_tokens} accepted`
            : '') +
          '\n',
      );
    }
    return 0;
  } catch (e) {
    return reportError('run', e);
  } finally {
    await ctx?.release();
  }
}

function parse(argv: string[]) {
  const flags: Record<string, { type: 'string' | 'boolean'; multiple?: boolean }> = {};
  for (const s of FLAG_ROWS) {
    // a list (--dry-sequence-breaker) is given once per item, as llama.cpp takes it
    flags[flagName(s)] =
      s.kind === 'boolean' ? { type: 'boolean' } : { type: 'string', multiple: s.kind === 'strings' };
  }
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: commandOptions(
      [
        'model',
        'hf-repo',
        'cache-dir',
        'ctx-size',
        'threads',
        'batch-size',
        'device',
        'n-gpu-layers',
        'flash-attn',
        'json',
        'help',
      ],
      {
        ...flags,
        ...SPECULATIVE_OPTIONS,
        prompt: { type: 'string', short: 'p' },
        'n-predict': { type: 'string', short: 'n' },
        'top-logits': { type: 'string' },
        ...MMPROJ_OPTIONS,
        image: { type: 'string', multiple: true },
        audio: { type: 'string', multiple: true },
      } as const,
    ),
  });
}
