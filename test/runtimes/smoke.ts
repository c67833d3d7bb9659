// The library smoke that test/runtimes.test.ts runs under Node, Deno and Bun on the same
// model: loadModel → greedy completion (token ids and every raw logit after the prompt) →
// tokenize → embedding → saveSession → loadSession into a fresh context → the same
// completion again. It prints one JSON line; the driver compares Node's line with each
// runtime's byte for byte (floats print exactly: a float32 widened to a double round-trips
// through JSON). It checks itself too (a resumed session must answer as the first context
// did) and exits 1 when that fails. Uses only the library's public entry.
//
//   <runtime> dist/test/runtimes/smoke.js MODEL.gguf SESSION_FILE [--embedding]
//   <runtime> dist/test/runtimes/smoke.js --variant   (the CPU kernel build it picks)
import { chooseVariant } from '../../src/backends/cpu/wasm.js';
import { Wasm } from '../../src/backends/cpu/wasm-api.js';
import { loadModel } from '../../src/index.js';

/**
 * Whether f32x4.relaxed_madd rounds once (a fused multiply-add: V8) or twice (JavaScriptCore
 * on x64): relaxed SIMD leaves it to the engine, and the relaxed kernels' float dots use it.
 * A one-function module computes (1+2^-12)² - (1+2^-11): 2^-24 fused, 0 unfused.
 */
function maddFused(): boolean {
  const f32x4 = (x: number) => [...new Uint8Array(new Float32Array([x, x, x, x]).buffer)];
  const body = [
    0x00, // no locals
    ...[0xfd, 0x0c, ...f32x4(1 + 2 ** -12)],
    ...[0xfd, 0x0c, ...f32x4(1 + 2 ** -12)],
    ...[0xfd, 0x0c, ...f32x4(-(1 + 2 ** -11))],
    ...[0xfd, 0x85, 0x02], // f32x4.relaxed_madd
    ...[0xfd, 0x1f, 0x00], // f32x4.extract_lane 0
    0x0b,
  ];
  const bytes = new Uint8Array([
    ...[0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00],
    ...[0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7d], // type: () -> f32
    ...[0x03, 0x02, 0x01, 0x00], // one function of type 0
    ...[0x07, 0x05, 0x01, 0x01, 0x66, 0x00, 0x00], // export "f"
    ...[0x0a, body.length + 2, 0x01, body.length, ...body],
  ]);
  const f = new Wasm.Instance(new Wasm.Module(bytes), {}).exports.f as () => number;
  return f() !== 0;
}

if (process.argv[2] === '--variant') {
  const v = chooseVariant();
  console.log(v === 'relaxed' && !maddFused() ? 'relaxed-unfused' : v);
  process.exit(0);
}
const [model, sessionFile, ...flags] = process.argv.slice(2);
if (!model || !sessionFile) {
  console.error('usage: smoke.js MODEL.gguf SESSION_FILE [--embedding]');
  process.exit(2);
}
const PROMPT = 'Once upon a time';
const out: Record<string, unknown> = {};

if (flags.includes('--embedding')) {
  const ctx = await loadModel({ model, n_ctx: 128, n_threads: 2, embedding: true });
  out.tokens = Array.from((await ctx.tokenize(PROMPT)).tokens);
  out.embedding = Array.from((await ctx.embedding(PROMPT)).embedding);
  await ctx.release();
} else {
  const opts = { prompt: PROMPT, n_predict: 12, temperature: 0, return_tokens: true, top_logits: 1000 };
  const a = await loadModel({ model, n_ctx: 128, n_threads: 2 });
  const r = await a.completion(opts);
  out.tokens = Array.from((await a.tokenize(PROMPT)).tokens);
  out.detokenized = await a.detokenize(out.tokens as number[]);
  out.generated = r.tokens;
  out.text = r.text;
  out.top_logits = r.top_logits;
  out.embedding = Array.from((await a.embedding(PROMPT)).embedding);
  await a.saveSession(sessionFile);
  await a.release();

  const b = await loadModel({ model, n_ctx: 128, n_threads: 2 });
  const loaded = await b.loadSession(sessionFile);
  const again = await b.completion(opts);
  out.session = { tokens_loaded: loaded.tokens_loaded, tokens_cached: again.tokens_cached };
  await b.release();
  if (JSON.stringify(again.tokens) !== JSON.stringify(r.tokens) || again.text !== r.text) {
    console.error(
      `smoke: after loadSession the completion differs: ${JSON.stringify(again.tokens)} vs ${JSON.stringify(r.tokens)}`,
    );
    process.exit(1);
  }
}
console.log(JSON.stringify(out));
