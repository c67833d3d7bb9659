// `llama-ts quantize IN.gguf [OUT.gguf] TYPE [THREADS]`: llama-quantize's job (same file
// types, per-tensor choices, options and bytes), streamed tensor by tensor on a worker pool.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { type GGMLType, typeByName, typeName } from '../ggml/types.js';
import { GGUFError } from '../gguf/index.js';
import { FILE_TYPES, type FileTypeName, parseFileType } from '../quantize/ftypes.js';
import { ImatrixError, type ImatrixFile, readImatrixFile } from '../quantize/imatrix-file.js';
import { QuantizeError, type QuantizeProgress, quantizeModel } from '../quantize/model.js';
import { DEFAULT_THREADS, intOption, UsageError, usageError } from './options.js';

const TYPES = `${Object.keys(FILE_TYPES).join(' ')} COPY (aliases: Q3_K Q4_K Q5_K; or the file type's number)`;

const HELP = `usage: llama-ts quantize [options] IN.gguf [OUT.gguf] TYPE [THREADS]

Quantize a model as llama.cpp's llama-quantize does: the same file types, per-tensor
types and bytes. Without OUT.gguf, writes ggml-model-TYPE.gguf next to IN.gguf.

  TYPE    ${TYPES}
          IQ2_XXS, IQ2_XS, IQ2_S, IQ2_M, IQ1_S, IQ1_M and Q2_K_S need --imatrix.

  --imatrix FILE               importance matrix (GGUF from 'llama-ts imatrix' or
                               llama-imatrix, or a legacy .dat)
  --include-weights NAME       use the imatrix only for tensors whose name contains NAME
  --exclude-weights NAME       do not use the imatrix for tensors whose name contains NAME
  --allow-requantize           quantize tensors that are already quantized
  --leave-output-tensor        keep output.weight as it is
  --pure                       no per-tensor mixes: every tensor gets TYPE's type
  --output-tensor-type T       type of output.weight (a ggml type: q8_0, f16, ...)
  --token-embedding-type T     type of token_embd.weight
  --tensor-type NAME=T         type of tensors whose name matches NAME (a regular
                               expression); repeatable, the first match wins
  --tensor-type-file FILE      NAME=T entries separated by spaces or newlines
  -t, --threads N              worker threads (default: the cores, at most 4; or THREADS)
  -h, --help                   show this help
`;

function ggmlType(what: string, s: string): GGMLType {
  const t = typeByName(s);
  if (!t) throw new UsageError(`${what}: unknown ggml type '${s}'`);
  return t.id as GGMLType;
}

function tensorTypeOption(s: string): [string, GGMLType] {
  const eq = s.indexOf('=');
  if (eq < 0) throw new UsageError(`--tensor-type: malformed '${s}' (NAME=TYPE)`);
  if (eq === 0) throw new UsageError(`--tensor-type: missing tensor name in '${s}'`);
  if (eq === s.length - 1) throw new UsageError(`--tensor-type: missing type in '${s}'`);
  return [s.slice(0, eq).toLowerCase(), ggmlType('--tensor-type', s.slice(eq + 1))];
}

/** Keeps the entries whose names contain one of `include` (when given), then drops those containing one of `exclude`. */
function filterImatrix(im: ImatrixFile, include: string[], exclude: string[]): ImatrixFile {
  const entries = new Map(
    [...im.entries].filter(
      ([name]) =>
        (include.length === 0 || include.some((s) => name.includes(s))) && !exclude.some((s) => name.includes(s)),
    ),
  );
  return { ...im, entries };
}

function ttyProgress(): ((p: QuantizeProgress) => void) | undefined {
  if (!process.stderr.isTTY) return undefined;
  let last = 0;
  return (p) => {
    const now = Date.now();
    const done = p.index === p.count;
    if (now - last < 100 && !done) return;
    last = now;
    const width = 24;
    const frac = p.bytesInTotal ? p.bytesIn / p.bytesInTotal : 1;
    const bar = '#'.repeat(Math.round(frac * width)).padEnd(width, '.');
    const mib = (n: number) => (n / 1048576).toFixed(0);
    const line = `[${bar}] ${p.index}/${p.count} ${p.name} ${p.from}->${p.to} ${mib(p.bytesIn)}/${mib(p.bytesInTotal)} MiB ${(p.elapsedMs / 1000).toFixed(1)} s`;
    const cols = process.stderr.columns ?? 100;
    process.stderr.write(`\r${line.slice(0, cols - 1).padEnd(cols - 1)}${done ? '\n' : ''}`);
  };
}

export async function quantizeCommand(argv: string[]): Promise<number> {
  let input: string;
  let output: string;
  let fileType: FileTypeName | 'COPY';
  let threads: number | undefined;
  let o: Record<string, string | string[] | boolean | undefined>;
  const tensorTypes: Array<[string, GGMLType]> = [];
  try {
    const args = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        imatrix: { type: 'string' },
        'include-weights': { type: 'string', multiple: true },
        'exclude-weights': { type: 'string', multiple: true },
        'allow-requantize': { type: 'boolean' },
        'leave-output-tensor': { type: 'boolean' },
        pure: { type: 'boolean' },
        'output-tensor-type': { type: 'string' },
        'token-embedding-type': { type: 'string' },
        'tensor-type': { type: 'string', multiple: true },
        'tensor-type-file': { type: 'string', multiple: true },
        threads: { type: 'string', short: 't' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    const pos = args.positionals;
    if (pos.length < 2) throw new UsageError('give IN.gguf and a TYPE');
    input = pos[0]!;
    let rest: string[];
    const asType = (s: string) => (s.toUpperCase() === 'COPY' ? 'COPY' : parseFileType(s));
    const direct = asType(pos[1]!);
    if (direct) {
      // IN TYPE [THREADS]: llama-quantize names the output after the type, next to the input
      fileType = direct;
      output = join(dirname(input), `ggml-model-${direct}.gguf`);
      rest = pos.slice(2);
    } else {
      output = pos[1]!;
      if (pos.length < 3) throw new UsageError('missing TYPE');
      const t = asType(pos[2]!);
      if (!t) throw new UsageError(`unknown file type '${pos[2]}' (known: ${TYPES})`);
      fileType = t;
      rest = pos.slice(3);
    }
    if (rest.length > 1) throw new UsageError(`unexpected argument '${rest[1]}'`);
    threads = rest[0] !== undefined ? intOption('THREADS', rest[0], 0, 1) : undefined;
    if (o.threads !== undefined) threads = intOption('--threads', o.threads as string, 0, 1);
    if (
      (o['include-weights'] as string[] | undefined)?.length &&
      (o['exclude-weights'] as string[] | undefined)?.length
    ) {
      throw new UsageError('--include-weights and --exclude-weights cannot be used together');
    }
    for (const s of (o['tensor-type'] as string[] | undefined) ?? []) tensorTypes.push(tensorTypeOption(s));
    for (const file of (o['tensor-type-file'] as string[] | undefined) ?? []) {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (e) {
        throw new UsageError(`--tensor-type-file: cannot read '${file}': ${(e as Error).message}`);
      }
      for (const s of text.split(/\s+/).filter(Boolean)) tensorTypes.push(tensorTypeOption(s));
    }
  } catch (e) {
    return usageError('quantize', HELP, (e as Error).message);
  }
  let outputTensorType: GGMLType | undefined;
  let tokenEmbeddingType: GGMLType | undefined;
  try {
    if (o['output-tensor-type'] !== undefined)
      outputTensorType = ggmlType('--output-tensor-type', o['output-tensor-type'] as string);
    if (o['token-embedding-type'] !== undefined) {
      tokenEmbeddingType = ggmlType('--token-embedding-type', o['token-embedding-type'] as string);
    }
  } catch (e) {
    return usageError('quantize', HELP, (e as Error).message);
  }
  try {
    let imatrix: ImatrixFile | undefined;
    if (o.imatrix !== undefined) {
      imatrix = filterImatrix(
        readImatrixFile(o.imatrix as string),
        (o['include-weights'] as string[] | undefined) ?? [],
        (o['exclude-weights'] as string[] | undefined) ?? [],
      );
    }
    const t0 = performance.now();
    const progress = ttyProgress();
    const r = await quantizeModel(input, output, {
      fileType,
      ...(imatrix ? { imatrix, imatrixPath: o.imatrix as string } : {}),
      allowRequantize: o['allow-requantize'] === true,
      leaveOutputTensor: o['leave-output-tensor'] === true,
      pure: o.pure === true,
      ...(outputTensorType !== undefined ? { outputTensorType } : {}),
      ...(tokenEmbeddingType !== undefined ? { tokenEmbeddingType } : {}),
      ...(tensorTypes.length ? { tensorTypes } : {}),
      threads: threads ?? DEFAULT_THREADS,
      ...(progress ? { onProgress: progress } : {}),
    });
    const fallbacks = r.tensors.filter((t) => t.fellBackFrom !== undefined);
    for (const t of fallbacks) {
      process.stderr.write(
        `warning: ${t.name}: rows of ${t.dims[0]} do not fit ${typeName(t.fellBackFrom!)}'s blocks, wrote ${typeName(t.to)}\n`,
      );
    }
    const mib = (n: number) => (n / 1048576).toFixed(2);
    process.stderr.write(
      `quantized ${input} (${mib(r.bytesIn)} MiB) to ${output} (${mib(r.bytesOut)} MiB) as ${fileType} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
    );
    return 0;
  } catch (e) {
    if (
      e instanceof QuantizeError ||
      e instanceof ImatrixError ||
      e instanceof GGUFError ||
      (e as NodeJS.ErrnoException).code !== undefined
    ) {
      process.stderr.write(`llama-ts quantize: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}
