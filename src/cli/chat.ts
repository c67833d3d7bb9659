// `llama-ts chat`: an interactive conversation through the library API, with the
// model's chat template, history, streaming, /reset and /exit. Without -m it uses the
// default chat model, downloaded on first use.
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import type { LlamaContext } from '../api/context.js';
import { loadModel } from '../api/index.js';
import type { ChatMessage, ChatMessagePart } from '../api/types.js';
import { resolveModelArg } from '../download/index.js';
import { openGGUF } from '../gguf/index.js';
import {
  checkMediaFile,
  MMPROJ_HELP,
  MMPROJ_OPTIONS,
  MMPROJ_SPELLINGS,
  mmprojOnGpu,
  projectorArg,
} from './multimodal.js';
import {
  commandOptions,
  deviceModelOptions,
  deviceOption,
  gpuLayersOption,
  intOption,
  normalizeArgv,
  SHARED_HELP,
  threadsOption,
  UsageError,
} from './options.js';

const HELP = `usage: llama-ts chat [-m FILE.gguf | -hf REPO[:QUANT]] [options]

An interactive chat with the model's chat template. Type a message and press Enter;
/reset forgets the conversation, /exit (or Ctrl-D) leaves. With a projector (--mmproj),
/image PATH and /audio PATH attach a file to the next message. Without -m or -hf, the
default model (Qwen2.5-0.5B-Instruct Q4_K_M) is downloaded on first use.

  -m, --model FILE        GGUF model file (or hf://REPO/FILE.gguf)
  -hf, --hf-repo REPO     a Hugging Face repository, optionally :QUANT
  --cache-dir DIR         download cache (default ~/.cache/llama-ts, or $LLAMA_TS_CACHE)
  -s, --system TEXT       a system message at the start of the conversation
  -n, --n-predict N       most tokens per reply (default 512; -1 until the model stops)
  -c, --ctx-size N        context size (default: the model's, at most 4096)
${SHARED_HELP.threads}
${SHARED_HELP.device}
${SHARED_HELP['n-gpu-layers']}
  --temp T                temperature (default 0.8; 0 is greedy)
  --seed S                sampling seed (default random)
  --chat-template NAME    a built-in template name or Jinja text replacing the model's
${MMPROJ_HELP}
`;

function options(argv: string[]) {
  const args = normalizeArgv(argv).map((a) => MMPROJ_SPELLINGS[a] ?? a);
  return parseArgs({
    args,
    options: commandOptions(
      ['model', 'hf-repo', 'cache-dir', 'ctx-size', 'threads', 'device', 'n-gpu-layers', 'help'],
      {
        system: { type: 'string', short: 's' },
        'n-predict': { type: 'string', short: 'n' },
        temp: { type: 'string' },
        seed: { type: 'string' },
        'chat-template': { type: 'string' },
        ...MMPROJ_OPTIONS,
      } as const,
    ),
    strict: true,
  }).values;
}

/** The model's training context, capped: the default context size of a chat. */
function defaultContext(path: string, cap: number): number {
  const f = openGGUF(path);
  try {
    return Math.min(cap, f.getInt(`${f.architecture}.context_length`, cap));
  } finally {
    f.close();
  }
}

export async function chatCommand(argv: string[]): Promise<number> {
  let o: ReturnType<typeof options>;
  let nPredict: number;
  let nCtx: number;
  let threads: number;
  let temperature: number;
  let seed: number | undefined;
  let device: string | undefined;
  let nGpuLayers: number | undefined;
  try {
    o = options(argv);
    if (o.help) {
      process.stdout.write(HELP);
      return 0;
    }
    nPredict = intOption('--n-predict', o['n-predict'], 512, -1);
    nCtx = intOption('--ctx-size', o['ctx-size'], 0);
    threads = threadsOption(o.threads);
    temperature = o.temp === undefined ? 0.8 : Number(o.temp);
    if (!Number.isFinite(temperature)) throw new UsageError(`--temp must be a number, got '${o.temp}'`);
    seed = o.seed === undefined ? undefined : intOption('--seed', o.seed, 0);
    device = deviceOption(o.device);
    nGpuLayers = gpuLayersOption(o['n-gpu-layers']);
  } catch (e) {
    process.stderr.write(`llama-ts chat: ${(e as Error).message}\n\n${HELP}`);
    return 2;
  }

  let ctx: LlamaContext;
  try {
    const model = await resolveModelArg({
      ...(o.model !== undefined ? { model: o.model } : {}),
      ...(o['hf-repo'] !== undefined ? { hfRepo: o['hf-repo'] } : {}),
      ...(o['cache-dir'] !== undefined ? { cacheDir: o['cache-dir'] } : {}),
      useDefault: true,
    });
    ctx = await loadModel({
      model,
      n_ctx: nCtx || defaultContext(model, 4096),
      n_threads: threads,
      ...deviceModelOptions(device, nGpuLayers),
      ...(o['chat-template'] !== undefined ? { chat_template: o['chat-template'] } : {}),
    });
    const mmproj = await projectorArg(o);
    if (mmproj !== undefined) await ctx.initMultimodal({ path: mmproj, use_gpu: mmprojOnGpu(o) });
  } catch (e) {
    process.stderr.write(`llama-ts chat: ${(e as Error).message}\n`);
    return 1;
  }

  const tty = Boolean(process.stdin.isTTY && process.stdout.isTTY);
  const history: ChatMessage[] = o.system ? [{ role: 'system', content: o.system }] : [];
  const systemLength = history.length;
  const rl = createInterface({ input: process.stdin, output: process.stdout, terminal: tty });
  const prompt = () => {
    if (tty) rl.prompt();
  };
  rl.setPrompt('> ');
  let busy = false;
  // Ctrl-C stops a reply in progress; a second one, or one at the prompt, leaves.
  rl.on('SIGINT', () => {
    if (busy) ctx.stopCompletion();
    else rl.close();
  });

  // files attached with /image and /audio, sent with the next message
  let attached: ChatMessagePart[] = [];
  const attach = (kind: 'image' | 'audio', path: string) => {
    const support = ctx.getMultimodalSupport();
    if (!(kind === 'image' ? support.vision : support.audio)) {
      return `no ${kind} input: ${ctx.isMultimodalEnabled() ? 'the projector takes none' : 'start chat with --mmproj FILE'}`;
    }
    try {
      const { format } = checkMediaFile({ kind, path }, `/${kind}`);
      attached.push(
        kind === 'image'
          ? { type: 'image_url', image_url: { url: path } }
          : { type: 'input_audio', input_audio: { format, url: path } },
      );
      return `(${kind} ${path} attached to the next message)`;
    } catch (e) {
      return (e as Error).message;
    }
  };

  let code = 0;
  try {
    prompt();
    for await (const line of rl) {
      const text = line.trim();
      if (text === '/exit' || text === '/quit') break;
      const media = /^\/(image|audio)\s+(.+)$/.exec(text);
      if (media) {
        process.stdout.write(`${attach(media[1] as 'image' | 'audio', media[2]!.trim())}\n`);
        prompt();
        continue;
      }
      if (text === '/reset') {
        attached = [];
        history.length = systemLength;
        if (tty) process.stdout.write('(conversation reset)\n');
        prompt();
        continue;
      }
      if (text === '') {
        prompt();
        continue;
      }
      // attached media first, then the text (kept in the history: later turns see them too)
      history.push({ role: 'user', content: attached.length > 0 ? [...attached, { type: 'text', text }] : text });
      attached = [];
      busy = true;
      const result = await ctx.completion(
        {
          messages: history,
          n_predict: nPredict,
          temperature,
          ...(seed !== undefined ? { seed } : {}),
        },
        (data) => {
          process.stdout.write(data.token);
        },
      );
      busy = false;
      process.stdout.write('\n');
      history.push({ role: 'assistant', content: result.text });
      prompt();
    }
  } catch (e) {
    process.stderr.write(`llama-ts chat: ${(e as Error).message}\n`);
    code = 1;
  } finally {
    rl.close();
    await ctx.release();
  }
  return code;
}
