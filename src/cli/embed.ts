// `llama-ts embed`: the embedding of a text as JSON on stdout. Pooled models (BERT: mean,
// cls, last) print one array, L2-normalised by default as llama.cpp's embedding example;
// with pooling 'none' one array per token.
import { parseArgs } from 'node:util';
import { Context, l2Normalize, Model, type PoolingType } from '../model/index.js';
import {
  CliError,
  commandOptions,
  intOption,
  pickDevices,
  reportError,
  SHARED_HELP,
  threadsOption,
  UsageError,
  usageError,
} from './options.js';

const HELP = `usage: llama-ts embed -m MODEL.gguf -p TEXT [options]

Print the embedding of a text as JSON (an array; one array per token with --pooling none).

  -m, --model FILE        the GGUF model
  -p, --prompt TEXT       the text
      --pooling TYPE      mean, cls, last or none (default: the model's)
      --no-normalize      do not L2-normalise (default: normalise, as llama.cpp)
${SHARED_HELP.threads}
  -c, --ctx-size N        context size in tokens (default: the model's, at most 4096)
      --device NAME       compute device (default: the fastest)
  -h, --help              show this help
`;

const POOLINGS = new Set(['mean', 'cls', 'last', 'none']);

export async function embedCommand(argv: string[]): Promise<number> {
  let o: ReturnType<typeof parse>['values'];
  let threads: number;
  let nCtx: number | undefined;
  try {
    const args = parse(argv);
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    if (!o.model) throw new UsageError('a model is required (-m MODEL.gguf)');
    if (o.prompt === undefined) throw new UsageError('a text is required (-p TEXT)');
    if (o.pooling !== undefined && !POOLINGS.has(o.pooling)) {
      throw new UsageError(`--pooling must be mean, cls, last or none, got '${o.pooling}'`);
    }
    threads = threadsOption(o.threads);
    nCtx = o['ctx-size'] === undefined ? undefined : intOption('-c', o['ctx-size'], 0, 1);
  } catch (e) {
    return usageError('embed', HELP, (e as Error).message);
  }
  let model: Model | undefined;
  let ctx: Context | undefined;
  try {
    const devices = await pickDevices(o.device);
    model = await Model.load(o.model, { devices });
    const tokens = model.vocab.encode(o.prompt, { addSpecial: true, parseSpecial: true });
    const size = nCtx ?? Math.min(model.hp.nCtxTrain || 4096, 4096);
    if (tokens.length === 0) throw new CliError('the text is empty');
    if (tokens.length > size) {
      throw new CliError(`the text is ${tokens.length} tokens, longer than the context (${size} tokens); raise -c`);
    }
    const pooling = (o.pooling as PoolingType | undefined) ?? model.hp.pooling;
    ctx = new Context(model, { nCtx: size, nBatch: size, nUbatch: size, nThreads: threads, embeddings: true, pooling });
    const all = tokens.map(() => true);
    await ctx.decode({ tokens, logits: all });
    const norm = (v: Float32Array) => Array.from(o['no-normalize'] ? v : l2Normalize(v));
    const out = pooling === 'none' ? tokens.map((_, i) => norm(ctx!.getEmbeddings(i))) : norm(ctx.getEmbeddingsSeq(0));
    process.stdout.write(`${JSON.stringify(out)}\n`);
    return 0;
  } catch (e) {
    if (e instanceof UsageError) return usageError('embed', HELP, e.message);
    return reportError('embed', e);
  } finally {
    ctx?.free();
    model?.free();
  }
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: commandOptions(['model', 'threads', 'ctx-size', 'device', 'help'], {
      prompt: { type: 'string', short: 'p' },
      pooling: { type: 'string' },
      'no-normalize': { type: 'boolean' },
    } as const),
  });
}
