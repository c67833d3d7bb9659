// `llama-ts rerank -m MODEL -q QUERY DOC…`: relevance scores of documents for a query with
// a reranker model (pooling_type rank: a BERT cross-encoder with a classification head, or
// Qwen3-Reranker through its prompt), through the library (ctx.rerank), best first: one
// line per document (score, index, text), or with --json one array of { index, score,
// document }.
import { parseArgs } from 'node:util';
import type { LlamaContext } from '../api/context.js';
import { loadModel } from '../api/index.js';
import {
  commandOptions,
  defaultContext,
  deviceModelOptions,
  deviceOption,
  gpuLayersOption,
  intOption,
  normalizeArgv,
  reportError,
  SHARED_HELP,
  threadsOption,
  UsageError,
  usageError,
} from './options.js';

const HELP = `usage: llama-ts rerank -m MODEL.gguf -q QUERY DOCUMENT... [options]

Score documents for a query with a reranker, best first (score, index, document).

${SHARED_HELP.model}
${SHARED_HELP['hf-repo']}
${SHARED_HELP['cache-dir']}
  -q, --query TEXT        the query
      --normalize         scores in [0, 1] (a sigmoid; a softmax head's are already)
      --top-n N           print the N best only
${SHARED_HELP['ctx-size']} (default: the model's, at most 4096)
${SHARED_HELP.threads}
${SHARED_HELP.device}
${SHARED_HELP['n-gpu-layers']}
${SHARED_HELP.json}
${SHARED_HELP.help}
`;

export async function rerankCommand(argv: string[]): Promise<number> {
  let o: ReturnType<typeof parse>['values'];
  let documents: string[];
  let threads: number;
  let nCtx: number | undefined;
  let topN: number | undefined;
  let device: string | undefined;
  let nGpuLayers: number | undefined;
  try {
    const args = parse(normalizeArgv(argv));
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (!o.model && !o['hf-repo']) throw new UsageError('a model is required (-m MODEL.gguf or -hf REPO[:QUANT])');
    if (o.query === undefined) throw new UsageError('a query is required (-q TEXT)');
    documents = args.positionals;
    if (documents.length === 0) throw new UsageError('give the documents to score after the options');
    threads = threadsOption(o.threads);
    nCtx = o['ctx-size'] === undefined ? undefined : intOption('-c', o['ctx-size'], 0, 1);
    topN = o['top-n'] === undefined ? undefined : intOption('--top-n', o['top-n'], 0, 1);
    device = deviceOption(o.device);
    nGpuLayers = gpuLayersOption(o['n-gpu-layers']);
  } catch (e) {
    return usageError('rerank', HELP, (e as Error).message);
  }
  let ctx: LlamaContext | undefined;
  try {
    const { resolveModelArg } = await import('../download/index.js');
    const path = await resolveModelArg({ model: o.model, hfRepo: o['hf-repo'], cacheDir: o['cache-dir'] });
    ctx = await loadModel({
      model: path,
      n_ctx: nCtx ?? defaultContext(path, 4096),
      n_threads: threads,
      ...deviceModelOptions(device, nGpuLayers),
    });
    const ranked = (await ctx.rerank(o.query, documents, { normalize: o.normalize === true })).slice(0, topN);
    if (o.json) {
      process.stdout.write(
        `${JSON.stringify(ranked.map((r) => ({ index: r.index, score: r.score, document: r.document })))}\n`,
      );
    } else {
      for (const r of ranked) process.stdout.write(`${r.score.toFixed(6)}\t${r.index}\t${r.document}\n`);
    }
    return 0;
  } catch (e) {
    return reportError('rerank', e);
  } finally {
    await ctx?.release();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: commandOptions(
      ['model', 'hf-repo', 'cache-dir', 'ctx-size', 'threads', 'device', 'n-gpu-layers', 'json', 'help'],
      {
        query: { type: 'string', short: 'q' },
        normalize: { type: 'boolean' },
        'top-n': { type: 'string' },
      } as const,
    ),
  });
}
