// `llama-ts tokenize`: print a text's tokens as llama.cpp's llama-tokenize does
// (`%6d -> 'piece'` lines, or `[1, 2, 3]` with --ids), plus --jsonl for scripts: every
// stdin line is a JSON string and gets one line holding its JSON array of ids.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { GGUFError } from '../gguf/index.js';
import { setLogCallback } from '../log.js';
import { loadVocab, type Vocab, VocabError } from '../vocab/index.js';

const HELP = `usage: llama-ts tokenize -m FILE.gguf (-p TEXT | -f FILE | --stdin) [options]

Tokenize text with the vocabulary of a GGUF file and print the tokens.

  -m, --model FILE        the GGUF file (only its vocabulary is read)
  -p, --prompt TEXT       text to tokenize
  -f, --file FILE         read the text from a file
      --stdin             read the text from standard input
      --jsonl             read standard input as lines, each a JSON string; print one
                          JSON array of ids per line (the model is loaded once)
      --ids               print only the ids, as [1, 2, 3]
      --show-count        print the number of tokens at the end
      --no-bos            do not add BOS/EOS (CLS/SEP) even when the model asks for them
      --no-parse-special  do not recognise control-token text in the input
      --no-escape         do not process escapes (\\n, \\t, \\xNN, ...) in the text
      --force-default-pre use the default pre-tokenizer when the file names an unknown one
      --log-disable       silence warnings from loading the vocabulary
  -h, --help              show this help
`;

function usageError(message: string): number {
  process.stderr.write(`llama-ts tokenize: ${message}\n\n${HELP}`);
  return 2;
}

/** Escapes as llama.cpp's string_process_escapes, applied to bytes. */
export function processEscapes(input: Uint8Array): Uint8Array {
  const out: number[] = [];
  const hex = (c: number | undefined) =>
    c === undefined
      ? -1
      : c >= 0x30 && c <= 0x39
        ? c - 0x30
        : (c | 0x20) >= 0x61 && (c | 0x20) <= 0x66
          ? (c | 0x20) - 87
          : -1;
  for (let i = 0; i < input.length; i++) {
    const c = input[i]!;
    if (c !== 0x5c || i + 1 >= input.length) {
      out.push(c);
      continue;
    }
    const d = input[++i]!;
    if (d === 0x6e) out.push(0x0a);
    else if (d === 0x72) out.push(0x0d);
    else if (d === 0x74) out.push(0x09);
    else if (d === 0x27 || d === 0x22 || d === 0x5c) out.push(d);
    else if (d === 0x78 && hex(input[i + 1]) >= 0 && hex(input[i + 2]) >= 0) {
      out.push(hex(input[i + 1]) * 16 + hex(input[i + 2]));
      i += 2;
    } else out.push(0x5c, d);
  }
  return Uint8Array.from(out);
}

export async function tokenizeCommand(argv: string[]): Promise<number> {
  let args: ReturnType<typeof parse>;
  try {
    args = parse(argv);
  } catch (e) {
    return usageError((e as Error).message);
  }
  const o = args.values;
  if (o.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (args.positionals.length > 0) return usageError(`unexpected argument '${args.positionals[0]}'`);
  if (!o.model) return usageError('a model is required (-m FILE.gguf)');
  const sources = [o.prompt !== undefined, o.file !== undefined, !!o.stdin, !!o.jsonl].filter(Boolean).length;
  if (sources !== 1) return usageError('give exactly one of -p TEXT, -f FILE, --stdin, --jsonl');

  if (o['log-disable']) setLogCallback(() => {});
  let vocab: Vocab;
  try {
    vocab = loadVocab(o.model, { forceDefaultPre: !!o['force-default-pre'] });
  } catch (e) {
    if (e instanceof GGUFError || e instanceof VocabError) {
      process.stderr.write(`llama-ts tokenize: ${e.message}\n`);
      return 1;
    }
    throw e;
  } finally {
    if (o['log-disable']) setLogCallback(null);
  }
  const encodeOpts = { addSpecial: vocab.addBos && !o['no-bos'], parseSpecial: !o['no-parse-special'] };

  if (o.jsonl) return jsonl(vocab, encodeOpts);

  let bytes: Uint8Array;
  if (o.prompt !== undefined) bytes = Buffer.from(o.prompt, 'utf8');
  else {
    try {
      bytes = o.file !== undefined ? readFileSync(o.file) : readFileSync(0);
    } catch (e) {
      process.stderr.write(`llama-ts tokenize: cannot read ${o.file ?? 'standard input'}: ${(e as Error).message}\n`);
      return 1;
    }
  }
  if (!o['no-escape']) bytes = processEscapes(bytes);
  const ids = vocab.encode(bytes, encodeOpts);

  const chunks: Buffer[] = [];
  if (o.ids) chunks.push(Buffer.from(`[${ids.join(', ')}]\n`));
  else {
    for (const id of ids) {
      chunks.push(
        Buffer.from(`${String(id).padStart(6)} -> '`),
        Buffer.from(vocab.pieceBytes(id), 'latin1'),
        Buffer.from("'\n"),
      );
    }
  }
  if (o['show-count']) chunks.push(Buffer.from(`Total number of tokens: ${ids.length}\n`));
  process.stdout.write(Buffer.concat(chunks));
  return 0;
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      model: { type: 'string', short: 'm' },
      prompt: { type: 'string', short: 'p' },
      file: { type: 'string', short: 'f' },
      stdin: { type: 'boolean' },
      jsonl: { type: 'boolean' },
      ids: { type: 'boolean' },
      'show-count': { type: 'boolean' },
      'no-bos': { type: 'boolean' },
      'no-parse-special': { type: 'boolean' },
      'no-escape': { type: 'boolean' },
      'force-default-pre': { type: 'boolean' },
      'log-disable': { type: 'boolean' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}

async function jsonl(vocab: Vocab, opts: { addSpecial: boolean; parseSpecial: boolean }): Promise<number> {
  const rl = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  let n = 0;
  for await (const line of rl) {
    n++;
    let text: unknown;
    try {
      text = JSON.parse(line);
    } catch {
      text = undefined;
    }
    if (typeof text !== 'string') {
      process.stderr.write(`llama-ts tokenize: stdin line ${n} is not a JSON string\n`);
      rl.close();
      return 1;
    }
    if (!process.stdout.write(`${JSON.stringify(vocab.encode(text, opts))}\n`)) {
      await new Promise((resolve) => process.stdout.once('drain', resolve));
    }
  }
  return 0;
}
