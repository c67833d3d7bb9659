// `llama-ts pull <owner>/<repo>/<file>.gguf`: download a model into the cache (resumable,
// checked, safe when two processes pull the same file); prints the local path.
import { parseArgs } from 'node:util';
import { DownloadError, parseHfPath, pull, resolveHfRepo, ttyProgress } from '../download/index.js';
import { UsageError, usageError } from './options.js';

const HELP = `usage: llama-ts pull <owner>/<repo>/<file>.gguf | hf://<owner>/<repo>/<file>.gguf | -hf <owner>/<repo>[:QUANT]

Download a GGUF file from Hugging Face (resolve URL) into the cache and print its path.
An interrupted download resumes; the file is checked against the server's sha256.

      -hf, --hf-repo REPO[:QUANT]  pick the repository's file for QUANT (default Q4_K_M)
      --cache-dir DIR     cache directory (default ~/.cache/llama-ts; env LLAMA_TS_CACHE)
  -h, --help              show this help

Environment: LLAMA_TS_HF_ENDPOINT (default https://huggingface.co), HF_TOKEN.
`;

export async function pullCommand(argv: string[]): Promise<number> {
  argv = argv.map((a) => (a === '-hf' ? '--hf-repo' : a));
  let o: { 'hf-repo'?: string; 'cache-dir'?: string; help?: boolean };
  let spec: string | undefined;
  try {
    const args = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'hf-repo': { type: 'string' },
        'cache-dir': { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (args.positionals.length > 1) throw new UsageError(`unexpected argument '${args.positionals[1]}'`);
    spec = args.positionals[0];
    if ((spec === undefined) === (o['hf-repo'] === undefined)) throw new UsageError('give one file to pull');
  } catch (e) {
    return usageError('pull', HELP, (e as Error).message);
  }
  try {
    const file = spec !== undefined ? parseHfPath(spec) : await resolveHfRepo(o['hf-repo']!);
    const progress = ttyProgress();
    const path = await pull(file, {
      ...(o['cache-dir'] ? { cacheDir: o['cache-dir'] } : {}),
      ...(progress ? { onProgress: progress } : {}),
    });
    process.stdout.write(`${path}\n`);
    return 0;
  } catch (e) {
    if (e instanceof DownloadError || (e as NodeJS.ErrnoException).code !== undefined || e instanceof TypeError) {
      process.stderr.write(`llama-ts pull: ${(e as Error).message}\n`);
      return 1;
    }
    throw e;
  }
}
