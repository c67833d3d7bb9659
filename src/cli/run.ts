// `llama-ts run`: generate text from a prompt. Only the generated text goes to stdout;
// logs and the closing timings (load, prompt and generation speed) go to stderr. With
// --json, one JSON object instead: prompt and generated token ids, text, timings and,
// with --top-logits K, the K highest next-token logits after the prompt.
import { parseArgs } from 'node:util';
import { type Device, deviceByName } from '../backends/api.js';
import { GGUFError } from '../gguf/index.js';
import { Context, ContextError, defaultDevices, Model, ModelError } from '../model/index.js';
import { createSampler } from '../sampling/index.js';
import { VocabError } from '../vocab/index.js';
import { processEscapes } from './tokenize.js';

const HELP = `usage: llama-ts run -m MODEL.gguf -p PROMPT [options]

Generate text from a prompt: the text on stdout, timings on stderr.

  -m, --model FILE        the GGUF model (or hf://OWNER/REPO/FILE.gguf, downloaded once)
  -hf, --hf-repo R[:Q]    a Hugging Face repository's GGUF for quant Q (default Q4_K_M)
      --cache-dir DIR     download cache (default ~/.cache/llama-ts; env LLAMA_TS_CACHE)
  -p, --prompt TEXT       the prompt (escapes such as \\n are processed)
  -n, --n-predict N       tokens to generate (default 128; stops early at end of text)
      --temp T            temperature (default 0.8; 0 = greedy)
      --seed S            sampling seed (default: random)
  -t, --threads N         threads (default 2)
  -c, --ctx-size N        context size in tokens (default: the model's, at most 4096)
  -b, --batch-size N      tokens per decode call (default 512)
      --device NAME       compute device (see 'llama-ts devices'; default: the fastest)
      --json              print one JSON object: prompt_tokens, generated_tokens, text,
                          timings
      --top-logits K      with --json: the K highest next-token [id, logit] after the prompt
  -h, --help              show this help
`;

/** Prints a one-line error for the failures a user can cause; returns the exit code. */
export function reportError(command: string, e: unknown): number {
  if (
    e instanceof GGUFError ||
    e instanceof ModelError ||
    e instanceof VocabError ||
    e instanceof ContextError ||
    e instanceof CliError ||
    (e as Error)?.name === 'DownloadError'
  ) {
    process.stderr.write(`llama-ts ${command}: ${(e as Error).message}\n`);
    return 1;
  }
  throw e;
}

/** A failure with a message meant for the user (exit code 1). */
export class CliError extends Error {}

export function usageError(command: string, help: string, message: string): number {
  process.stderr.write(`llama-ts ${command}: ${message}\n\n${help}`);
  return 2;
}

/** A non-negative integer option, or a usage error message. */
export function intOption(name: string, v: string | undefined, fallback: number, min = 0): number {
  if (v === undefined) return fallback;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new UsageError(`${name} must be an integer ≥ ${min}, got '${v}'`);
  return n;
}

export class UsageError extends Error {}

/** The devices to run on: --device NAME, else the default (GPUs, then the fastest CPU device). */
export function pickDevices(name: string | undefined): Device[] {
  if (name === undefined) return defaultDevices();
  const d = deviceByName(name);
  if (!d) throw new UsageError(`no device '${name}' (see 'llama-ts devices')`);
  return [d];
}

interface Timings {
  load_ms: number;
  prompt_tokens: number;
  prompt_ms: number;
  prompt_tokens_per_s: number;
  generated_tokens: number;
  generation_ms: number;
  generation_tokens_per_s: number;
}

function rate(n: number, ms: number): number {
  return ms > 0 ? (n * 1000) / ms : 0;
}

export async function runCommand(argv: string[]): Promise<number> {
  argv = argv.map((a) => (a === '-hf' ? '--hf-repo' : a));
  let args: ReturnType<typeof parse>;
  let o: ReturnType<typeof parse>['values'];
  let nPredict: number;
  let threads: number;
  let nCtx: number | undefined;
  let nBatch: number;
  let topLogits: number;
  let temp: number;
  let seed: number;
  try {
    args = parse(argv);
    o = args.values;
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    if (!o.model && !o['hf-repo']) throw new UsageError('a model is required (-m MODEL.gguf or -hf REPO[:QUANT])');
    if (o.prompt === undefined) throw new UsageError('a prompt is required (-p TEXT)');
    nPredict = intOption('-n', o['n-predict'], 128);
    threads = intOption('-t', o.threads, 2, 1);
    nCtx = o['ctx-size'] === undefined ? undefined : intOption('-c', o['ctx-size'], 0, 1);
    nBatch = intOption('-b', o['batch-size'], 512, 1);
    topLogits = intOption('--top-logits', o['top-logits'], 0);
    temp = o.temp === undefined ? 0.8 : Number(o.temp);
    if (!Number.isFinite(temp)) throw new UsageError(`--temp must be a number, got '${o.temp}'`);
    seed = o.seed === undefined ? (Math.random() * 2 ** 32) >>> 0 : intOption('--seed', o.seed, 0);
  } catch (e) {
    return usageError('run', HELP, (e as Error).message);
  }
  let devices: Device[];
  try {
    devices = pickDevices(o.device);
  } catch (e) {
    return usageError('run', HELP, (e as Error).message);
  }

  let model: Model | undefined;
  let ctx: Context | undefined;
  try {
    const { resolveModelArg } = await import('../download/index.js');
    model = await Model.load(
      await resolveModelArg({ model: o.model, hfRepo: o['hf-repo'], cacheDir: o['cache-dir'] }),
      {
        devices,
      },
    );
    if (!model.arch.usesKVCache) {
      throw new CliError(`${model.arch.name} is an embedding model, it does not generate text: use 'llama-ts embed'`);
    }
    const vocab = model.vocab;
    const promptText = Buffer.from(processEscapes(Buffer.from(o.prompt, 'utf8'))).toString('utf8');
    const prompt = vocab.encode(promptText, { addSpecial: true, parseSpecial: true });
    const ctxSize = nCtx ?? Math.min(model.hp.nCtxTrain || 4096, 4096);
    if (prompt.length === 0) throw new CliError('the prompt is empty');
    if (prompt.length >= ctxSize) {
      throw new CliError(
        `the prompt is ${prompt.length} tokens, longer than the context allows (${ctxSize} tokens); raise -c`,
      );
    }
    ctx = new Context(model, { nCtx: ctxSize, nBatch: Math.min(nBatch, ctxSize), nThreads: threads });
    const sampler = createSampler({ temperature: temp, seed });

    // prompt
    const t0 = performance.now();
    for (let i = 0; i < prompt.length; i += ctx.nBatch) {
      await ctx.decode({ tokens: prompt.slice(i, i + ctx.nBatch) });
    }
    const promptMs = performance.now() - t0;
    let logits = ctx.getLogits(-1);
    const top = topLogits > 0 ? topK(logits, topLogits) : undefined;

    // generation
    const out: number[] = [];
    const stream = vocab.streamDecoder();
    let text = '';
    let nPast = prompt.length;
    const nKeep = vocab.addBos ? 1 : 0;
    let genMs = 0;
    let nEval = 0;
    for (let i = 0; i < nPredict; i++) {
      const id = sampler.sample(logits);
      if (vocab.isEog(id)) break;
      out.push(id);
      const piece = stream.push(id);
      text += piece;
      if (!o.json && piece) process.stdout.write(piece);
      if (i === nPredict - 1) break;
      if (nPast >= ctx.nCtx) {
        // context shift: drop half of what follows the kept prefix, slide the rest down
        const nDiscard = Math.max(1, Math.floor((nPast - nKeep) / 2));
        ctx.seqRm(0, nKeep, nKeep + nDiscard);
        ctx.seqAdd(0, nKeep + nDiscard, nPast, -nDiscard);
        nPast -= nDiscard;
      }
      const t1 = performance.now();
      await ctx.decode({ tokens: [id] });
      genMs += performance.now() - t1;
      nEval++;
      nPast++;
      logits = ctx.getLogits(-1);
    }
    const rest = stream.flush();
    text += rest;
    if (!o.json && rest) process.stdout.write(rest);

    const timings: Timings = {
      load_ms: round(model.loadMs),
      prompt_tokens: prompt.length,
      prompt_ms: round(promptMs),
      prompt_tokens_per_s: round(rate(prompt.length, promptMs)),
      generated_tokens: out.length,
      generation_ms: round(genMs),
      generation_tokens_per_s: round(rate(nEval, genMs)),
    };
    if (o.json) {
      const result: Record<string, unknown> = { prompt_tokens: prompt, generated_tokens: out, text, timings };
      if (top) result.top_logits = top;
      process.stdout.write(`${JSON.stringify(result)}\n`);
    } else {
      process.stdout.write('\n');
      process.stderr.write(
        `llama-ts run: load ${timings.load_ms} ms | prompt ${prompt.length} tokens in ${timings.prompt_ms} ms ` +
          `(${timings.prompt_tokens_per_s} t/s) | generation ${nEval} tokens in ${timings.generation_ms} ms ` +
          `(${timings.generation_tokens_per_s} t/s)\n`,
      );
    }
    return 0;
  } catch (e) {
    return reportError('run', e);
  } finally {
    ctx?.free();
    model?.free();
  }
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

/** The k highest [id, logit] pairs, highest first. */
export function topK(logits: Float32Array, k: number): [number, number][] {
  const ids = Array.from(logits.keys());
  ids.sort((a, b) => logits[b] - logits[a] || a - b);
  return ids.slice(0, k).map((id) => [id, logits[id]]);
}

function parse(argv: string[]) {
  return parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      model: { type: 'string', short: 'm' },
      'hf-repo': { type: 'string' },
      'cache-dir': { type: 'string' },
      prompt: { type: 'string', short: 'p' },
      'n-predict': { type: 'string', short: 'n' },
      temp: { type: 'string' },
      seed: { type: 'string' },
      threads: { type: 'string', short: 't' },
      'ctx-size': { type: 'string', short: 'c' },
      'batch-size': { type: 'string', short: 'b' },
      device: { type: 'string' },
      json: { type: 'boolean' },
      'top-logits': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
}
