// Regenerates the tokenizer references in this folder from llama.cpp, through
// node-llama-cpp 3.21.1 (installed outside the repository: NLC_DIR, default
// ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1). Needs `npm run build` first and
// ../shared/vocab. Each reference is `model.tokenize(text, false)` of a vocabulary-only load.
//   node test/data/vocab/make-refs.mjs wpm      -> wpm-marks.json
//   node test/data/vocab/make-refs.mjs pre      -> pre-types.json (slow: writes one vocabulary per name)
//   node test/data/vocab/make-refs.mjs ugm      -> ugm.json
//   node test/data/vocab/make-refs.mjs detok    -> detok.json (decoding of the new vocabulary kinds)
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const shared = process.env.LLAMA_TS_SHARED ?? `${root}../shared/`;
const nlcDir = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const { getLlama, LlamaLogLevel } = await import(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });

const dist = `${root}dist/`;
const { openGGUF } = await import(`${dist}src/gguf/index.js`);
const { GGUFWriter } = await import(`${dist}src/gguf/writer.js`);
const { spmStyleBpe, ugmVocab } = await import(`${dist}test/helpers/vocab-variants.js`);

async function tokenizeAll(modelPath, strings, parseSpecial = false) {
  const model = await llama.loadModel({ modelPath, vocabOnly: true });
  try {
    return strings.map((s) => Array.from(model.tokenize(s, parseSpecial)));
  } finally {
    await model.dispose();
  }
}

/** The strings of llama.cpp's tokenizer suite (../shared/vocab/ggml-vocab-NAME.gguf.inp). */
function suiteStrings(name) {
  const parts = readFileSync(`${shared}vocab/ggml-vocab-${name}.gguf.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
  parts.pop();
  return parts;
}

const ids = (list) => list.map((t) => t.join(' '));

/**
 * Whether llama.cpp aborts the process on this input: with the 'whitespace'
 * pre-tokenizer (raw UTF-8 words), a stretch between \S+ words of two or more
 * characters holding a space makes BPE look up a pair with a space in it, which
 * llama_vocab::find_bpe_rank asserts never happens (GGML_ASSERT).
 */
function abortsInLlamaCpp(pre, text) {
  if (pre !== 'whitespace') return false;
  return (text.match(/\s+/gu) ?? []).some((gap) => [...gap].length >= 2 && gap.includes(' '));
}

/** Check, in a child process, that llama.cpp really aborts on `text`. */
function confirmAbort(modelPath, text) {
  const code = `const { getLlama, LlamaLogLevel } = await import(${JSON.stringify(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`)});
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
const model = await llama.loadModel({ modelPath: ${JSON.stringify(modelPath)}, vocabOnly: true });
model.tokenize(${JSON.stringify(text)}, false);`;
  try {
    execFileSync(process.execPath, ['--input-type=module', '-e', code], { stdio: 'ignore' });
  } catch {
    return;
  }
  throw new Error(`llama.cpp was expected to abort on ${JSON.stringify(text)}`);
}

/** The pre-tokenizer names issue 23 adds; each is checked on the Qwen2 vocabulary with only its name changed. */
const NEW_PRE_TYPES = [
  'afmoe',
  'bailingmoe',
  'bailingmoe2',
  'cohere2moe',
  'deepseek-v3',
  'exaone-moe',
  'gemma4',
  'granite-embed-multi-311m',
  'granite-embed-multi-97m',
  'hunyuan-dense',
  'jais-2',
  'jina-v5-nano',
  'joyai-llm',
  'kanana2',
  'kimi-k2',
  'laguna',
  'llada-moe',
  'minicpm5',
  'qwen35',
  'sarvam-moe',
  'superbpe',
  'talkie',
  'tiny_aya',
  'whitespace',
  'youtu',
];
/** SPM-style BPE names, also checked on a vocabulary of their kind (see spmStyleBpe). */
const SPM_STYLE = ['gemma4', 'granite-embed-multi-311m', 'sarvam-moe', 'whitespace'];

const EDGE_STRINGS = [
  // digits of every length, grouped and mixed
  '1',
  '12',
  '123',
  '1234',
  '12345',
  '123456',
  '1234567',
  '12345678',
  '123456789',
  '1234567890',
  '12345678901',
  '123456789012',
  '1234567890123',
  'a1b22c333d4444e55555',
  'x=10000000;',
  '3.14159 2,718 1e-9',
  '1,234,567.89',
  'v1.2.3-rc4',
  '0x1F 0b1010',
  '٠١٢٣٤٥٦٧٨٩ ۱۲۳',
  '²³ ½ Ⅻ ①②',
  '１２３４５ ｱｲｳ',
  '12abc 123abc 1234abc',
  'abc123def4567',
  // contractions in several cases
  "I'm you're he'll we've she'd it's don't",
  "I'M YOU'RE HE'LL WE'VE SHE'D IT'S DON'T",
  "We'Ve It'S They'Ll I'D",
  "'s 'S 't 're 'RE 'll 'LL 'd 'm",
  "rock'n'roll o'clock ''quoted'' 'll'll",
  'don’t it’s', // typographic apostrophe
  // CJK and other scripts
  '我想在apple工作。今天天气很好，我们去公园散步吧！',
  '東京は日本の首都です。カタカナとひらがな',
  '한국어 텍스트도 있습니다. ㄱㄴㄷ ㅏㅓ',
  'ㄅㄆㄇㄈ 注音',
  '㐀㐁 豈更 𠀀𠀁',
  'ｶﾀｶﾅ ﾊﾟﾋﾟ',
  '，、。！？「引用」《书》',
  'ภาษาไทย ພາສາລາວ ខ្មែរ မြန်မာ',
  'हिन्दी বাংলা தமிழ் తెలుగు',
  // emoji
  '😀🚀🦙 ✅ done',
  '👍🏽👨‍👩‍👧‍👦🇺🇸',
  'emoji😀in🚀words',
  // mixed scripts, marks, cases
  'Hello мир 世界 مرحبا שלום',
  'café naïve résumé Ελληνικά',
  'e\u0301 a\u0300\u0301b \u0301start',
  "HelloWorld camelCaseWord XMLHttpRequest ALLCAPS iPhone McDonald's",
  'ǅungla ǈ Ǌ ÀÉÎõü ß ẞ',
  'ﬁ ﬂ ligatures',
  // whitespace and newline runs
  'a  b',
  'a   b',
  'a\t\tb',
  'a\n\nb',
  'a \n b',
  '  leading',
  'trailing  ',
  '\n',
  '\n\n\n',
  ' ',
  '  ',
  '\t',
  '\r\n',
  'a\r\n\r\nb',
  '\u00a0\u00a0x',
  'x\u3000y',
  'line1\nline2\n\nline3\n',
  ' \n \n ',
  `${' '.repeat(17)}x`,
  `${' '.repeat(600)}x`,
  `x${' '.repeat(33)}`,
  `${'\n'.repeat(5)}x${'\t'.repeat(9)}`,
  // punctuation runs
  '!!!',
  '...',
  '?!?!',
  '--->',
  'a~b ~~~ ~x',
  '$100 #tag @user',
  '[link](url)',
  '{"a": 1, "b": [2, 3]}',
  'x+=1; y-=2;',
  '<|endoftext|> <s> </s>',
  'a/b/c C++ C#',
  '"double" \'single\'',
  '… — «» ¿Qué? •',
  '¡Hola! ¿Qué tal?',
  '->=>|>',
  '/* comment */ // line',
  // code
  'def f(x):\n    return x**2\n',
  'for (int i = 0; i < 10; i++) {\n\tprintf("%d\\n", i);\n}',
];

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

/** Strings for the generated Unigram vocabulary: charsmap folds, spaces, unknowns, special pieces. */
const UGM_STRINGS = [
  'Hello world',
  'hello  world  ',
  '  leading spaces',
  'trailing   ',
  'ﬁne ﬂow ﬀ',
  'ＡＢ１２ ａｂ',
  '½ cup™…',
  'e\u0301té',
  'ｶﾞｶ ｶ ﾞ',
  'Ω Å Å',
  'tab\there\nnew\n\nline',
  'привет мир',
  '你好世界 日本語',
  '😀 emoji 😀😀',
  'unknown ☃ char ☃☃',
  'ab<extra_id_0>cd',
  '<sep>x<sep>',
  'the end</s>',
  '',
  ' ',
  '   ',
  'x\u200by\u200b',
  'the model tokenizer igram',
  '1⁄2 12 10 102',
  'a\u00a0b\u3000c\u2009d',
  "it's the model's",
  'ÀÉÎõü',
  '<extra',
  '<e',
  'über straße',
  ...EDGE_STRINGS.slice(0, 40),
];

const what = process.argv[2];
if (what === 'pre') {
  const dir = mkdtempSync(`${tmpdir()}/llama-ts-refs-`);
  try {
    const suite = suiteStrings('qwen2');
    const base = openGGUF(`${shared}vocab/ggml-vocab-qwen2.gguf`);
    const spm = openGGUF(`${shared}vocab/ggml-vocab-llama-spm.gguf`);
    const cases = [];
    const run = async (pre, vocab, writer) => {
      const path = `${dir}/${vocab}-${pre}.gguf`;
      writer.write(path);
      const refs = async (strings) => {
        // llama.cpp aborts on some inputs (see abortsInLlamaCpp): null, and checked in a child process
        const safe = strings.map((t) => !abortsInLlamaCpp(pre, t));
        const got = await tokenizeAll(
          path,
          strings.filter((_, i) => safe[i]),
        );
        const out = [];
        for (let i = 0; i < strings.length; i++) {
          if (safe[i]) out.push(got.shift().join(' '));
          else {
            confirmAbort(path, strings[i]);
            out.push(null);
          }
        }
        return out;
      };
      const [s, e] = [await refs(suite), await refs(EDGE_STRINGS)];
      cases.push({ pre, vocab, suite: s, edge: e });
      rmSync(path);
      console.error(
        `${pre} on ${vocab}: ${s.length + e.length} strings, ${[...s, ...e].filter((x) => x === null).length} abort`,
      );
    };
    for (const pre of NEW_PRE_TYPES)
      await run(pre, 'qwen2', GGUFWriter.fromFile(base).setString('tokenizer.ggml.pre', pre));
    for (const pre of SPM_STYLE) await run(pre, 'spm-style-bpe', spmStyleBpe(spm, pre));
    await run('gemma4', 'spm-style-bpe, model gemma4', spmStyleBpe(spm, 'gemma4', true));
    writeRefs('pre-types.json', {
      oracle: 'node-llama-cpp 3.21.1',
      note: 'ids as space-separated strings (null: llama.cpp aborts on it); suite strings are ../shared/vocab/ggml-vocab-qwen2.gguf.inp',
      suite: 'qwen2',
      edge: EDGE_STRINGS,
      cases,
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else if (what === 'ugm') {
  const dir = mkdtempSync(`${tmpdir()}/llama-ts-refs-`);
  try {
    const cases = [];
    for (const [name, opts] of [
      ['default', {}],
      ['no-space-prefix', { addSpacePrefix: false, removeExtraWhitespaces: false }],
      ['keep-whitespace', { addSpacePrefix: true, removeExtraWhitespaces: false }],
    ]) {
      const path = `${dir}/ugm-${name}.gguf`;
      ugmVocab(opts).write(path);
      const plain = await tokenizeAll(path, UGM_STRINGS);
      const special = await tokenizeAll(path, UGM_STRINGS, true);
      cases.push({ vocab: name, options: opts, ids: ids(plain), parseSpecial: ids(special) });
    }
    writeRefs('ugm.json', { oracle: 'node-llama-cpp 3.21.1', strings: UGM_STRINGS, cases });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else if (what === 'detok') {
  // llama.cpp's detokenize of its own tokens, for the vocabulary kinds with a new decode path
  const dir = mkdtempSync(`${tmpdir()}/llama-ts-refs-`);
  try {
    const spm = openGGUF(`${shared}vocab/ggml-vocab-llama-spm.gguf`);
    const cases = [];
    for (const [vocab, writer] of [
      ['spm-style-bpe gemma4', spmStyleBpe(spm, 'gemma4')],
      ['spm-style-bpe sarvam-moe', spmStyleBpe(spm, 'sarvam-moe')],
      ['ugm default', ugmVocab()],
      ['ugm no-space-prefix', ugmVocab({ addSpacePrefix: false, removeExtraWhitespaces: false })],
    ]) {
      const path = `${dir}/detok.gguf`;
      writer.write(path);
      const model = await llama.loadModel({ modelPath: path, vocabOnly: true });
      const tokens = EDGE_STRINGS.map((t) => Array.from(model.tokenize(t, false)));
      const text = tokens.map((t) => model.detokenize(t, false));
      await model.dispose();
      cases.push({ vocab, tokens: ids(tokens), text });
    }
    writeRefs('detok.json', { oracle: 'node-llama-cpp 3.21.1', cases });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
} else if (what === 'wpm') {
  const ids = await tokenizeAll(`${shared}vocab/ggml-vocab-bert-bge.gguf`, WPM_STRINGS);
  const out = { vocab: 'bert-bge', oracle: 'node-llama-cpp 3.21.1', strings: WPM_STRINGS, ids };
  writeRefs('wpm-marks.json', out);
} else {
  console.error('usage: node test/data/vocab/make-refs.mjs wpm|pre|ugm|detok');
  process.exit(2);
}
