// Regenerates the tokenizer references in this folder from llama.cpp, through
// node-llama-cpp 3.21.1 (installed outside the repository: NLC_DIR, default
// ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1). Needs `npm run build` first and
// ../shared/vocab. Each reference is `model.tokenize(text, false)` of a vocabulary-only load.
//   node test/data/vocab/make-refs.mjs wpm      -> wpm-marks.json
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const shared = process.env.LLAMA_TS_SHARED ?? `${root}../shared/`;
const nlcDir = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const { getLlama, LlamaLogLevel } = await import(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });

async function tokenizeAll(modelPath, strings) {
  const model = await llama.loadModel({ modelPath, vocabOnly: true });
  try {
    return strings.map((s) => Array.from(model.tokenize(s, false)));
  } finally {
    await model.dispose();
  }
}

// Words holding codepoints assigned after Unicode 15.1 (llama.cpp's tables): combining
// marks, letters and symbols llama.cpp does not know, so it keeps them and the word is [UNK].
const WPM_STRINGS = [
  'كتاب\u0897',
  'hello\u0897 world',
  '\u0897',
  'kirat \u{16D40}\u{16D41}\u{16D6B}',
  'tulu \u{11380}\u{113B8}\u{113C0}',
  'garay \u{10D50}\u{10D70}',
  'todhri \u{105C0}\u{105C9}',
  'sunuwar \u{11BC0}\u{11BE0}',
  '\u{1E5D0}\u{1E5EE}',
  'gurung \u{16100}\u{1611E}\u{16121}',
  'latin \uA7CB\uA7CC\uA7DC',
  'cjk \u{323B0}\u{323B1}',
  'symbols \u{1CC00}\u{1FAE9}',
  'café\u0897 naïve',
  'e\u0301\u0897',
  '\u1C89\u1C8A',
  'hindi हिन्दी\u0897',
  'a\u{113C0}b c',
  '\u{16EA0}\u{16EBB} x',
  '\u0C5C\u0CDC',
  '\u1ACF\u1AE0 text',
  // known marks stay stripped as before
  'हिन्दी भाषा',
  'café naïve Ελληνικά',
  'Tiếng Việt',
  'العَرَبِيَّة',
];

/** Write a reference file, formatted as the linter wants it. */
function writeRefs(name, data) {
  writeFileSync(`${here}${name}`, `${JSON.stringify(data)}\n`);
  execFileSync('npx', ['biome', 'format', '--write', `${here}${name}`], { cwd: root, stdio: 'ignore' });
}

const what = process.argv[2];
if (what === 'wpm') {
  const ids = await tokenizeAll(`${shared}vocab/ggml-vocab-bert-bge.gguf`, WPM_STRINGS);
  const out = { vocab: 'bert-bge', oracle: 'node-llama-cpp 3.21.1', strings: WPM_STRINGS, ids };
  writeRefs('wpm-marks.json', out);
} else {
  console.error('usage: node test/data/vocab/make-refs.mjs wpm');
  process.exit(2);
}
