// `llama-ts <command>`: dispatch to one module per command. Each command returns its
// exit code: 0 success, 1 failure (bad file, runtime error), 2 bad usage.

export type Command = (argv: string[]) => Promise<number>;

interface CommandEntry {
  summary: string;
  load: () => Promise<Command>;
}

// Commands load lazily so `llama-ts inspect` does not pay for the rest of the engine.
const COMMANDS: Record<string, CommandEntry> = {
  run: {
    summary: 'generate text from a prompt (text on stdout, timings on stderr; --json for scripts)',
    load: async () => (await import('./run.js')).runCommand,
  },
  chat: {
    summary: "interactive chat with the model's chat template (/reset, /exit); default model without -m",
    load: async () => (await import('./chat.js')).chatCommand,
  },
  serve: {
    summary: 'OpenAI-compatible HTTP server with continuous batching (--parallel N slots)',
    load: async () => (await import('./serve.js')).serveCommand,
  },
  pull: {
    summary: 'download a GGUF model from Hugging Face into the cache (owner/repo/file.gguf)',
    load: async () => (await import('./pull.js')).pullCommand,
  },
  web: {
    summary: 'serve the in-browser example (chat in the page, engine in its workers) with COOP/COEP',
    load: async () => (await import('./web.js')).webCommand,
  },
  embed: {
    summary: 'print the embedding of a text as JSON',
    load: async () => (await import('./embed.js')).embedCommand,
  },
  rerank: {
    summary: 'score documents for a query with a reranker model, best first (-q QUERY DOC...)',
    load: async () => (await import('./rerank.js')).rerankCommand,
  },
  bench: {
    summary: 'prompt-processing and generation speed, like llama-bench (-p 512 -n 128)',
    load: async () => (await import('./bench.js')).benchCommand,
  },
  tokenize: {
    summary: 'print the tokens of a text, as llama-tokenize does (--ids, --jsonl for scripts)',
    load: async () => (await import('./tokenize.js')).tokenizeCommand,
  },
  devices: {
    summary: 'list compute devices: type, memory, caps, buffer types (--json)',
    load: async () => (await import('./devices.js')).devicesCommand,
  },
  quantize: {
    summary: 'quantize a model as llama-quantize does (IN.gguf OUT.gguf TYPE; --imatrix FILE)',
    load: async () => (await import('./quantize.js')).quantizeCommand,
  },
  imatrix: {
    summary: 'compute an importance matrix from a text, as llama-imatrix does (-m MODEL -f TEXT -o OUT.gguf)',
    load: async () => (await import('./imatrix.js')).imatrixCommand,
  },
  inspect: {
    summary: 'show a GGUF file: architecture, hyper-parameters, tokenizer, tensors',
    load: async () => (await import('./inspect.js')).inspectCommand,
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((k) => k.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: llama-ts <command> [options]\n\ncommands:\n${lines.join('\n')}\n\nRun 'llama-ts <command> --help' for a command's options.\n`;
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage());
    return name ? 0 : 2;
  }
  if (name === '--version' || name === '-v') {
    const { createRequire } = await import('node:module');
    const pkg = createRequire(import.meta.url)('../../../package.json') as { version: string };
    process.stdout.write(`${pkg.version}\n`);
    return 0;
  }
  const entry = COMMANDS[name];
  if (!entry) {
    process.stderr.write(`llama-ts: unknown command '${name}'\n\n${usage()}`);
    return 2;
  }
  return (await entry.load())(rest);
}
