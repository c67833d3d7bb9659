// Renders each chat template in this folder with @fugood/llama.node 1.7.15
// (getFormattedChat(messages, template, { jinja: true, ... })), for the conversations in
// cases.json, into renders.json. Run from the repository root after `npm run build`:
//   LN_DIR=/path/to/llama-node node test/refs/chat-recurrent/make-refs.mjs
// llama.node renders with the Jinja engine only when the loaded model has a chat template,
// so each template is written into a copy of a generated tiny model (tiny-gemma3 F32,
// SentencePiece vocabulary: BOS <s>, EOS </s>) and also passed as the override.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = join(here, '../../..');
const { generateModel, presetSpec } = await import(join(root, 'dist/src/generator/index.js'));
const { GGUFWriter, openGGUF } = await import(join(root, 'dist/src/gguf/index.js'));
const require = createRequire(import.meta.url);
const { loadModel } = require(`${process.env.LN_DIR ?? './oracle'}/node_modules/@fugood/llama.node/lib/index.js`);

const cases = JSON.parse(readFileSync(join(here, 'cases.json'), 'utf8'));
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-chat-recurrent-refs-'));
// llama.node's strftime_now reads the clock (its `now` option does not reach it): the date
// of the run is kept, for the test to render with
const out = {
  reference: '@fugood/llama.node 1.7.15 getFormattedChat(messages, template, params), jinja: true',
  now: Date.now(),
  renders: [],
};
try {
  const base = join(dir, 'base.gguf');
  generateModel(presetSpec('tiny-gemma3', 'F32'), base);
  for (const c of cases) {
    const template = readFileSync(join(here, c.template), 'utf8');
    const path = join(dir, `${c.template}.gguf`);
    const f = openGGUF(base);
    const w = GGUFWriter.fromFile(f);
    w.setString('tokenizer.chat_template', template);
    w.write(path);
    f.close();
    const ctx = await loadModel({ model: path, n_ctx: 256, n_threads: 1 });
    let result;
    try {
      const r = ctx.getFormattedChat(c.messages, template, { jinja: true, ...c.params });
      result = { type: r.type, prompt: r.prompt, thinking_forced_open: r.thinking_forced_open };
    } catch (e) {
      result = { error: String(e?.message ?? e) };
    }
    await ctx.release();
    out.renders.push({ name: c.name, template: c.template, ...result });
    process.stderr.write(`${c.name}: ${result.error ? `error ${result.error}` : `${result.prompt.length} chars`}\n`);
  }
  writeFileSync(join(here, 'renders.json'), `${JSON.stringify(out, null, 1)}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(0);
