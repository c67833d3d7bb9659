// Regenerates the references of the generated multimodal pairs (test/refs/mtmd/): writes
// each pair (test/helpers/mtmd-gen-pairs.ts: text model + mmproj, stories260K vocabulary
// from ../shared/models) and the media its cases use into a cache folder, then asks
// @fugood/llama.node 1.7.15 (llama.cpp build 10257, CPU) for its answers, one process per
// case (oracle-case.mjs), and writes <pair>.ref.json in the shape of
// ../shared/fixtures/mtmd/*.ref.json, plus models.json (SHA-256 of every file). Run from the
// repository root after `npm run build`:
//   node test/refs/mtmd/make-refs.mjs [--only PAIR,...] [--cache DIR]
// LLAMA_NODE_DIR: where llama.node is installed (default ~/.cache/llama-ts/oracles/llama.node).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const argv = process.argv.slice(2);
const opt = (name) => {
  const at = argv.indexOf(name);
  return at >= 0 ? argv.splice(at, 2)[1] : undefined;
};
const only = opt('--only')?.split(',');
const root = join(fileURLToPath(new URL('.', import.meta.url)), '../../..');
const here = join(root, 'test/refs/mtmd');
const cache = opt('--cache') ?? join(homedir(), '.cache/llama-ts/mtmd-gen');
const lnDir = process.env.LLAMA_NODE_DIR ?? join(homedir(), '.cache/llama-ts/oracles/llama.node');
const vocabFrom = join(root, '../shared/models/stories260K.gguf');
if (!existsSync(vocabFrom)) throw new Error(`${vocabFrom} is absent: the pairs take its vocabulary`);
const { genPairs, ensurePair, writeMedia } = await import(join(root, 'dist/test/helpers/mtmd-gen-pairs.js'));
const { openGGUF } = await import(join(root, 'dist/src/gguf/index.js'));
const lnVersion = JSON.parse(readFileSync(join(lnDir, 'node_modules/@fugood/llama.node/package.json'), 'utf8')).version;

const mediaDir = join(cache, 'media');
writeMedia(mediaDir);
const sha = (p) => createHash('sha256').update(readFileSync(p)).digest('hex');
const manifestPath = join(here, 'models.json');
const manifest = existsSync(manifestPath) ? JSON.parse(readFileSync(manifestPath, 'utf8')) : {};

/** llama.node's rendering of each token (tok_str): SPM pieces with spaces, bytes as characters or "byte: \xNN". */
function renderings(path) {
  const f = openGGUF(path);
  const tokens = f.getStringArray('tokenizer.ggml.tokens');
  f.close();
  const byStr = new Map();
  tokens.forEach((t, id) => {
    const b = /^<0x([0-9A-F]{2})>$/.exec(t);
    let s = t.replaceAll('\u2581', ' ');
    if (b) {
      const v = Number.parseInt(b[1], 16);
      s = v < 0x80 ? String.fromCharCode(v) : `byte: \\x${b[1].toLowerCase()}`;
    }
    byStr.set(s, [...(byStr.get(s) ?? []), id]);
  });
  return (s) => {
    const ids = byStr.get(s);
    if (!ids) return null;
    return ids.length === 1 ? ids[0] : ids;
  };
}

for (const pair of genPairs(vocabFrom)) {
  if (only && !only.includes(pair.name)) continue;
  const { model, mmproj } = ensurePair(pair, join(cache, 'models'));
  manifest[pair.name] = {
    model: sha(model),
    mmproj: sha(mmproj),
    projector: pair.mmproj.projector,
    text_arch: pair.text.arch,
  };
  const idOf = renderings(model);
  const cases = [];
  for (const c of pair.cases) {
    const media_paths = c.media.map((m) => join(mediaDir, m));
    const messages = c.messages?.map((m) => ({
      ...m,
      content: m.content.map((p) =>
        p.type === 'image_url' ? { ...p, image_url: { url: join(mediaDir, p.image_url.url) } } : p,
      ),
    }));
    const call = JSON.stringify({ prompt: c.prompt, messages, media_paths });
    const runMode = (mode) => {
      const text = execFileSync(process.execPath, [join(here, 'oracle-case.mjs'), lnDir, model, mmproj, call, mode], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'ignore'],
        maxBuffer: 1 << 26,
      });
      const line = text.split('\n').find((l) => l.startsWith('@@RESULT '));
      if (!line) throw new Error(`${pair.name}/${c.name}: no result from the oracle`);
      const res = JSON.parse(line.slice(9));
      if (mode !== 'top10') return res;
      // the media chunks of the top-10 call: the last ones logged before it ended
      const logged = [
        ...text
          .slice(0, text.indexOf('@@TOP10_DONE'))
          .matchAll(/Chunk \d+: type=(?:IMAGE|AUDIO), n_tokens=(\d+), n_pos=(\d+)/g),
      ];
      res.media_chunks = logged
        .slice(logged.length - res.chunk_pos_media.length)
        .map((m) => ({ n_tokens: Number(m[1]), n_pos: Number(m[2]) }));
      return res;
    };
    // one process per oracle call: the top-10 call, then the greedy one
    const runOnce = () => ({ ...runMode('top10'), ...runMode('greedy') });
    process.stderr.write(`${pair.name}/${c.name} (${c.path})\n`);
    let r;
    try {
      r = runOnce();
    } catch (e) {
      // the oracle's own words: an abort's message, else how the process ended
      const said = String(e.stdout ?? '')
        .split('\n')
        .filter((l) => /error|assert|invalid|failed|abort/i.test(l))
        .pop();
      const how = e.signal ? `killed by ${e.signal}` : `exit ${e.status}`;
      const msg = `${how}${said ? `: ${said.trim()}` : ''}`;
      process.stderr.write(`  oracle failed: ${msg}\n`);
      cases.push({ name: c.name, path: c.path, images: c.media, oracle_error: msg });
      continue;
    }
    const again = runOnce();
    const ids = (strs) => strs.map((s) => idOf(s));
    cases.push({
      name: c.name,
      path: c.path,
      ...(c.prompt !== undefined
        ? { prompt: c.prompt }
        : { messages: c.messages, formatted_prompt: r.formatted_prompt }),
      images: c.media,
      n_tokens: r.n_tokens,
      tokens_evaluated: r.tokens_evaluated,
      prompt_tokens: r.prompt_tokens,
      chunk_pos: r.chunk_pos,
      chunk_pos_media: r.chunk_pos_media,
      image_token_counts: r.media_chunks.map((m) => m.n_tokens),
      image_n_pos: r.media_chunks.map((m) => m.n_pos),
      top10: r.top10,
      top10_ids: ids(r.top10.map((t) => t[0])),
      greedy: r.greedy,
      greedy_ids: ids(r.greedy),
      greedy_text: r.greedy_text,
      deterministic: JSON.stringify(again) === JSON.stringify(r),
    });
  }
  const ok = cases.filter((c) => !c.oracle_error);
  const top1 = ok.map((c) => c.top10[0][1]);
  const ref = {
    model: `${pair.name}.gguf`,
    mmproj: `${pair.name}.mmproj.gguf`,
    projector: pair.mmproj.projector,
    text_arch: pair.text.arch,
    oracle: `@fugood/llama.node@${lnVersion} (prebuilt llama.cpp), CPU backend, mtmd`,
    settings: {
      loadModel: {
        n_ctx: 4096,
        n_batch: 2048,
        n_ubatch: 512,
        n_threads: 1,
        n_gpu_layers: 0,
        use_mmap: false,
        ctx_shift: false,
      },
      initMultimodal: { use_gpu: false },
      top10: { n_predict: 1, temperature: 1, top_k: 0, top_p: 1, min_p: 0, n_probs: 10, seed: 1 },
      greedy: { n_predict: 8, temperature: 0, n_probs: 1, ignore_eos: true, seed: 1 },
      fresh_context_per_call: true,
      runs_per_case: 2,
    },
    notes: [
      'Same fields as ../shared/fixtures/mtmd/*.ref.json (see its README); `path` names the preprocessing path a case exercises; media are written by test/helpers/mtmd-gen-pairs.ts writeMedia.',
      'image_token_counts / image_n_pos: from llama.node\'s "Chunk k: type=IMAGE|AUDIO, n_tokens=N, n_pos=P" log lines of the top-10 call.',
      'oracle_error: llama.node failed on this case (message kept); such cases are not compared.',
    ],
    checks: {
      deterministic: ok.every((c) => c.deterministic),
      min_top1_prob: Math.min(...top1),
      max_top1_prob: Math.max(...top1),
    },
    cases,
  };
  writeFileSync(join(here, `${pair.name}.ref.json`), `${JSON.stringify(ref, null, 1)}\n`);
  writeFileSync(manifestPath, `${JSON.stringify(manifest, null, 1)}\n`);
}
// in the repository's JSON style (npm run lint checks it)
execFileSync(join(root, 'node_modules/.bin/biome'), ['format', '--write', here], { stdio: 'ignore' });
