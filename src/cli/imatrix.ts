// `llama-ts imatrix -m MODEL -f TEXT -o OUT.gguf`: llama-imatrix's importance matrix (the
// mean squared activations entering each weight's matrix products over chunks of a text),
// written in llama.cpp's GGUF imatrix format for `llama-ts quantize --imatrix`.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { Device } from '../backends/index.js';
import { Context, Model } from '../model/index.js';
import { computeImatrix, ImatrixCollector, ImatrixComputeError } from '../quantize/imatrix.js';
import { writeImatrixGGUF } from '../quantize/imatrix-file.js';
import { CliError, DEFAULT_THREADS, intOption, pickDevices, reportError, UsageError, usageError } from './options.js';

const HELP = `usage: llama-ts imatrix -m MODEL.gguf -f TEXT.txt [-o imatrix.gguf] [options]

Compute an importance matrix as llama.cpp's llama-imatrix does: the text is cut into
chunks of -c tokens, each evaluated from an empty cache; for every weight of the model's
blocks, the squares of the inputs of its matrix products are summed per column. Written
in llama.cpp's GGUF imatrix format (for 'llama-ts quantize --imatrix').

  -m, --model FILE        the GGUF model
  -f, --file FILE         the text
  -o, --output FILE       where to write (default imatrix.gguf)
  -c, --ctx-size N        tokens per chunk (default 512)
      --chunks N          process at most N chunks (default: all)
      --process-output    also collect output.weight's inputs
      --parse-special     tokenize special-token text as special tokens
  -t, --threads N         threads (default: the cores, at most 4)
      --device NAME       compute device (see 'llama-ts devices')
  -h, --help              show this help
`;

export async function imatrixCommand(argv: string[]): Promise<number> {
  let o: {
    model?: string;
    file?: string;
    output?: string;
    'ctx-size'?: string;
    chunks?: string;
    'process-output'?: boolean;
    'parse-special'?: boolean;
    threads?: string;
    device?: string;
    help?: boolean;
  };
  let chunkSize: number;
  let chunks: number | undefined;
  let threads: number;
  let devices: Device[];
  try {
    const args = parseArgs({
      args: argv,
      strict: true,
      options: {
        model: { type: 'string', short: 'm' },
        file: { type: 'string', short: 'f' },
        output: { type: 'string', short: 'o' },
        'ctx-size': { type: 'string', short: 'c' },
        chunks: { type: 'string' },
        'process-output': { type: 'boolean' },
        'parse-special': { type: 'boolean' },
        threads: { type: 'string', short: 't' },
        device: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (!o.model) throw new UsageError('a model is required (-m MODEL.gguf)');
    if (!o.file) throw new UsageError('a text is required (-f TEXT.txt)');
    chunkSize = intOption('--ctx-size', o['ctx-size'], 512, 1);
    chunks = o.chunks !== undefined ? intOption('--chunks', o.chunks, 0, 1) : undefined;
    threads = intOption('--threads', o.threads, DEFAULT_THREADS, 1);
    devices = await pickDevices(o.device);
  } catch (e) {
    return usageError('imatrix', HELP, (e as Error).message);
  }
  const out = o.output ?? 'imatrix.gguf';
  let model: Model | undefined;
  let ctx: Context | undefined;
  try {
    let text: string;
    try {
      text = readFileSync(o.file, 'utf8');
    } catch (e) {
      throw new CliError(`cannot read '${o.file}': ${(e as Error).message}`);
    }
    model = await Model.load(o.model, { devices });
    const vocab = model.vocab;
    const tokens = Int32Array.from(vocab.encode(text, { addSpecial: true, parseSpecial: o['parse-special'] === true }));
    const collector = new ImatrixCollector(o['process-output'] === true);
    ctx = new Context(model, {
      nCtx: chunkSize,
      nBatch: chunkSize,
      nUbatch: chunkSize,
      nThreads: threads,
      onMatMulInput: collector.observe,
    });
    const t0 = performance.now();
    const tty = process.stderr.isTTY;
    const im = await computeImatrix(ctx, collector, tokens, vocab.addBos ? vocab.bos : undefined, {
      chunkSize,
      ...(chunks !== undefined ? { chunks } : {}),
      processOutput: o['process-output'] === true,
      dataset: o.file,
      onChunk: (done, total) => {
        if (tty || done === total) {
          const s = ((performance.now() - t0) / 1000).toFixed(1);
          process.stderr.write(`\rchunk ${done}/${total}, ${s} s${done === total ? '\n' : ''}`);
        }
      },
    });
    writeImatrixGGUF(out, im);
    process.stderr.write(
      `wrote ${im.entries.size} entries over ${im.chunkCount} chunks of ${chunkSize} tokens to ${out}\n`,
    );
    return 0;
  } catch (e) {
    if (e instanceof ImatrixComputeError) {
      process.stderr.write(`llama-ts imatrix: ${e.message}\n`);
      return 1;
    }
    return reportError('imatrix', e);
  } finally {
    ctx?.free();
    model?.free();
  }
}
