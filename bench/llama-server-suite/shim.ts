// An executable stand-in for llama-server (LLAMA_SERVER_BIN_PATH of llama.cpp's server test
// suite, through ./llama-server): translates its flags (flags.ts) and runs `llama-ts serve`
// in this process. What it drops or changes goes to stderr, one line each.
import { serveCommand } from '../../src/cli/serve.js';
import { loadModelMap, modelsDir, ShimError, translateArgs } from './flags.js';

/** The long flags `serve --help` lists. */
async function serveFlags(): Promise<Set<string>> {
  const write = process.stdout.write;
  let help = '';
  process.stdout.write = ((chunk: string | Uint8Array) => {
    help += String(chunk);
    return true;
  }) as typeof process.stdout.write;
  try {
    await serveCommand(['--help']);
  } finally {
    process.stdout.write = write;
  }
  return new Set(help.match(/--[a-z][a-z0-9-]*/g) ?? []);
}

async function main(): Promise<number> {
  let argv: string[];
  try {
    const t = translateArgs(process.argv.slice(2), await serveFlags(), loadModelMap(), modelsDir(), process.cwd());
    for (const n of t.notes) process.stderr.write(`llama-server shim: ${n}\n`);
    // LLAMA_SUITE_SERVE_ARGS: flags appended to every server the suite starts (e.g. `--temp 0`
    // to rerun a test whose expectation depends on a sampled stream, greedily)
    const extra = process.env.LLAMA_SUITE_SERVE_ARGS?.trim();
    argv = extra ? [...t.argv, ...extra.split(/\s+/)] : t.argv;
  } catch (e) {
    if (!(e instanceof ShimError)) throw e;
    process.stderr.write(`llama-server shim: ${e.message}\n`);
    return 2;
  }
  return serveCommand(argv);
}

main().then(
  (code) => process.exit(code),
  (err) => {
    process.stderr.write(`llama-server shim: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
