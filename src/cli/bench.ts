// `llama-ts bench`: prompt-processing and generation speed, as llama.cpp's llama-bench
// reports them. ppN decodes N random tokens in one batch; tgN decodes N tokens one at a
// time from an empty cache. Each test runs once to warm up, then -r times; the table
// shows the mean and standard deviation of tokens per second. With a draft model
// (--model-draft) or --spec-type ngram, two more tests generate greedily from a short
// random prompt, without and with speculative decoding, and report drafted and accepted
// tokens.
import { parseArgs } from 'node:util';
import { Context, Model } from '../model/index.js';
import { GreedyStep, Mt19937, SamplerChain } from '../sampling/index.js';
import {
  checkDraftCompatible,
  type Drafter,
  DraftModelDrafter,
  NgramDrafter,
  type SpeculativeStats,
  speculativeGenerate,
} from '../speculative/index.js';
import {
  adapterModelOptions,
  commandOptions,
  gpuLayersOption,
  intOption,
  normalizeArgv,
  normalizeSpeculativeArgv,
  pickDevices,
  reportError,
  SHARED_HELP,
  SPECULATIVE_OPTIONS,
  threadsOption,
  UsageError,
  usageError,
} from './options.js';

const HELP = `usage: llama-ts bench -m MODEL.gguf [options]

Measure prompt processing (ppN) and text generation (tgN) speed, like llama-bench.

  -m, --model FILE        the GGUF model
  -p, --n-prompt N        prompt tokens (default 512; 0 skips the test)
  -n, --n-gen N           generated tokens (default 128; 0 skips the test)
${SHARED_HELP.threads}
  -r, --repetitions N     runs of each test after a warm-up run (default 3)
  -b, --batch-size N      tokens per ubatch for ppN (default 512)
  -o, --output FORMAT     md (default) or json
${SHARED_HELP.device}
${SHARED_HELP['n-gpu-layers']}
  -md, --model-draft FILE also generate with speculative decoding, drafting with FILE
      --spec-type ngram   also generate with speculative decoding by n-gram lookup
      --draft-max N       tokens drafted per step (default 16)
      --draft-p-min P     a draft model's drafts end below probability P (default 0.8)
  -h, --help              show this help
`;

export interface BenchResult {
  model: string;
  size_bytes: number;
  params: number;
  backend: string;
  /** Repeating layers on a device other than the host (llama-bench's n_gpu_layers). */
  n_gpu_layers: number;
  threads: number;
  test: string;
  n_prompt: number;
  n_gen: number;
  load_ms: number;
  avg_ts: number;
  stddev_ts: number;
  samples_ts: number[];
  /** Speculative tests: the drafter, tokens drafted and accepted over the measured runs. */
  drafter?: string;
  n_drafted?: number;
  n_accepted?: number;
}

function stats(xs: number[]): { mean: number; sd: number } {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / (xs.length - 1)) : 0;
  return { mean, sd };
}

export async function benchCommand(argv: string[]): Promise<number> {
  let o: ReturnType<typeof parse>['values'];
  let nPrompt: number;
  let nGen: number;
  let threads: number;
  let reps: number;
  let nBatch: number;
  let nGpuLayers: number | undefined;
  let spec: Record<string, unknown>;
  try {
    const args = parse(normalizeSpeculativeArgv(normalizeArgv(argv)));
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    if (!o.model) throw new UsageError('a model is required (-m MODEL.gguf)');
    nPrompt = intOption('-p', o['n-prompt'], 512);
    nGen = intOption('-n', o['n-gen'], 128);
    threads = threadsOption(o.threads);
    nGpuLayers = gpuLayersOption(o['n-gpu-layers']);
    reps = intOption('-r', o.repetitions, 3, 1);
    nBatch = intOption('-b', o['batch-size'], 512, 1);
    if (o.output !== undefined && o.output !== 'md' && o.output !== 'json') {
      throw new UsageError(`-o must be md or json, got '${o.output}'`);
    }
    spec = adapterModelOptions(o, []);
  } catch (e) {
    return usageError('bench', HELP, (e as Error).message);
  }
  let model: Model | undefined;
  let draftModel: Model | undefined;
  let drafter: Drafter | undefined;
  try {
    const devices = await pickDevices(o.device, nGpuLayers);
    model = await Model.load(o.model, { devices, ...(nGpuLayers !== undefined ? { nGpuLayers } : {}) });
    const m = model;
    const rng = new Mt19937(42);
    const randomTokens = (n: number) => {
      const t = Array.from({ length: n }, () => Math.floor(rng.nextDouble() * m.hp.nVocab));
      if (m.vocab.bos >= 0) t[0] = m.vocab.bos;
      return t;
    };
    const nDraft = (spec.draft_max as number | undefined) ?? 16;
    const speculative = spec.model_draft !== undefined || spec.spec_type === 'ngram';
    const nCtx = Math.max(nPrompt, nGen + (speculative ? SPEC_PROMPT + nDraft + 1 : 0), 1);
    const ctx = new Context(model, {
      nCtx,
      nBatch: Math.max(nPrompt, speculative ? Math.max(nDraft + 1, SPEC_PROMPT) : 1, 1),
      nUbatch: Math.min(nBatch, Math.max(nPrompt, 1)),
      nThreads: threads,
    });
    const results: BenchResult[] = [];
    const base = {
      model: model.describe(),
      size_bytes: model.nBytes,
      params: model.nParams,
      backend: [...new Set(model.devices.map((d) => d.name))].join(','),
      n_gpu_layers: model.layerDevices.filter((d) => d !== model!.devices[model!.devices.length - 1]).length,
      threads,
      load_ms: Math.round(model.loadMs),
    };
    const run = async (test: string, nP: number, nG: number, once: () => Promise<number>) => {
      process.stderr.write(`llama-ts bench: ${test}: warm-up`);
      await once();
      const samples: number[] = [];
      for (let r = 0; r < reps; r++) {
        process.stderr.write(`, run ${r + 1}/${reps}`);
        const ms = await once();
        samples.push(((nP + nG) * 1000) / ms);
      }
      process.stderr.write('\n');
      const { mean, sd } = stats(samples);
      results.push({ ...base, test, n_prompt: nP, n_gen: nG, avg_ts: mean, stddev_ts: sd, samples_ts: samples });
    };
    if (nPrompt > 0) {
      await run(`pp${nPrompt}`, nPrompt, 0, async () => {
        ctx.clearMemory();
        const tokens = randomTokens(nPrompt);
        const t0 = performance.now();
        await ctx.decode({ tokens });
        return performance.now() - t0;
      });
    }
    if (nGen > 0) {
      await run(`tg${nGen}`, 0, nGen, async () => {
        ctx.clearMemory();
        const tokens = randomTokens(nGen);
        const t0 = performance.now();
        for (const t of tokens) await ctx.decode({ tokens: [t] });
        return performance.now() - t0;
      });
    }
    if (speculative && nGen > 1 && nDraft > 0) {
      if (spec.spec_type === 'ngram') drafter = new NgramDrafter();
      else {
        draftModel = await Model.load(spec.model_draft as string, { devices });
        checkDraftCompatible(m, draftModel);
        drafter = new DraftModelDrafter(draftModel, {
          nCtx,
          nThreads: threads,
          pMin: (spec.draft_p_min as number | undefined) ?? 0.8,
        });
      }
      const d = drafter;
      for (const [name, with_] of [
        ['greedy', undefined],
        [d.kind, d],
      ] as const) {
        const total: SpeculativeStats = { steps: 0, drafted: 0, accepted: 0 };
        let measured = false;
        await run(`tg${nGen}+${name}`, 0, nGen - 1, async () => {
          (with_ as DraftModelDrafter | undefined)?.reset?.(0);
          const r = await speculativeGenerate(ctx, {
            prompt: randomTokens(SPEC_PROMPT),
            nPredict: nGen,
            chain: new SamplerChain([new GreedyStep()]),
            ...(with_ ? { drafter: with_, nDraft } : {}),
          });
          // (the warm-up's drafts are not counted)
          if (measured) {
            total.drafted += r.stats.drafted;
            total.accepted += r.stats.accepted;
          }
          measured = true;
          return r.generationMs;
        });
        if (with_)
          Object.assign(results[results.length - 1]!, {
            drafter: d.kind,
            n_drafted: total.drafted,
            n_accepted: total.accepted,
          });
      }
    }
    ctx.free();
    process.stdout.write(o.output === 'json' ? `${JSON.stringify(results, null, 2)}\n` : markdown(results));
    return 0;
  } catch (e) {
    if (e instanceof UsageError) return usageError('bench', HELP, e.message);
    return reportError('bench', e);
  } finally {
    drafter?.free?.();
    draftModel?.free();
    model?.free();
  }
}

/** Prompt tokens before a speculative generation test. */
const SPEC_PROMPT = 8;

function markdown(results: BenchResult[]): string {
  const rows = results.map((r) => [
    r.model,
    `${(r.size_bytes / 1048576).toFixed(2)} MiB`,
    r.params >= 1e9 ? `${(r.params / 1e9).toFixed(2)} B` : `${(r.params / 1e6).toFixed(2)} M`,
    r.backend,
    String(r.threads),
    r.n_drafted !== undefined
      ? `${r.test} (${r.n_accepted}/${r.n_drafted} accepted, ${r.n_drafted > 0 ? ((100 * r.n_accepted!) / r.n_drafted).toFixed(0) : 0}%)`
      : r.test,
    `${r.avg_ts.toFixed(2)} ± ${r.stddev_ts.toFixed(2)}`,
  ]);
  const head = ['model', 'size', 'params', 'backend', 'threads', 'test', 't/s'];
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i >= 4 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join(' | ')} |`;
  const sep = `| ${widths.map((w, i) => (i >= 4 ? `${'-'.repeat(w - 1)}:` : '-'.repeat(w))).join(' | ')} |`;
  return `${[line(head), sep, ...rows.map(line)].join('\n')}\n`;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: commandOptions(['model', 'threads', 'batch-size', 'device', 'n-gpu-layers', 'help'], {
      'n-prompt': { type: 'string', short: 'p' },
      'n-gen': { type: 'string', short: 'n' },
      repetitions: { type: 'string', short: 'r' },
      output: { type: 'string', short: 'o' },
      ...SPECULATIVE_OPTIONS,
    } as const),
  });
}
