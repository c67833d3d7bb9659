// One oracle call in its own process (llama.node 1.7.15 crashed or lost probabilities with
// several contexts or completions per process; fixtures/mtmd/README.md): loads the text
// model and projector, then for one case prints JSON with the tokenized prompt, the media
// chunks llama.node logs, the first token's top-10 (full softmax) and an 8-token greedy run.
// MMPROJ `-`: a text model alone (test/refs/gemma4-text/make-refs.mjs); SETTINGS_JSON: loadModel
// settings over the defaults below (cache types, flash attention).
//   node oracle-case.mjs LLAMA_NODE_DIR MODEL MMPROJ CASE_JSON top10|greedy [SETTINGS_JSON]
import { createRequire } from 'node:module';

const [dir, model, mmproj, caseJson, mode, settingsJson] = process.argv.slice(2);
const require = createRequire(`${dir}/`);
const ln = require('@fugood/llama.node');
const c = JSON.parse(caseJson);
// llama.node prints its debug log (with the media chunks' sizes) to stdout: the caller reads it
await ln.toggleNativeLog(true);
const settings = {
  n_ctx: 4096,
  n_batch: 2048,
  n_ubatch: 512,
  n_threads: 1,
  n_gpu_layers: 0,
  use_mmap: false,
  ctx_shift: false,
  ...(settingsJson ? JSON.parse(settingsJson) : {}),
};
const ctx = await ln.loadModel({ model, ...settings });
if (mmproj !== '-' && !(await ctx.initMultimodal({ path: mmproj, use_gpu: false }))) {
  throw new Error(`initMultimodal(${mmproj}) failed`);
}
const input = c.prompt !== undefined ? { prompt: c.prompt, media_paths: c.media_paths } : { messages: c.messages };
const out = {};
let prompt = c.prompt;
if (c.messages) {
  const f = ctx.getFormattedChat(c.messages, undefined, { jinja: true, add_generation_prompt: true });
  out.formatted_prompt = f.prompt;
  prompt = f.prompt;
}
if (mode === 'top10') {
  const tk = await ctx.tokenize(prompt, { media_paths: c.media_paths });
  out.prompt_tokens = Array.from(tk.tokens);
  out.chunk_pos = tk.chunk_pos;
  out.chunk_pos_media = tk.chunk_pos_media;
  const r = await ctx.completion({
    ...input,
    n_predict: 1,
    temperature: 1,
    top_k: 0,
    top_p: 1,
    min_p: 0,
    n_probs: 10,
    seed: 1,
  });
  process.stdout.write('\n@@TOP10_DONE\n');
  out.tokens_evaluated = r.tokens_evaluated;
  out.n_tokens = r.tokens_evaluated - r.tokens_predicted;
  out.top10 = r.completion_probabilities[0].probs.map((p) => [p.tok_str, p.prob]);
} else {
  const g = await ctx.completion({ ...input, n_predict: 8, temperature: 0, n_probs: 1, ignore_eos: true, seed: 1 });
  out.greedy = (g.completion_probabilities ?? []).map((p) => p.probs[0].tok_str);
  out.greedy_text = g.text;
}
process.stdout.write(`\n@@RESULT ${JSON.stringify(out)}\n`);
process.exit(0);
