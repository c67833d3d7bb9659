// WordPiece references from llama.cpp across scripts, marks and normalization forms, for
// the bert-bge vocabulary (../shared/vocab/ggml-vocab-bert-bge.gguf), through
// node-llama-cpp 3.21.1 (installed outside the repository: NLC_DIR, default
// ~/.cache/llama-ts/oracles/node-llama-cpp-3.21.1): `model.tokenize(text, false)` of a
// vocabulary-only load (and `true` for the strings holding special-token text).
// Needs `npm run build` first: it also reports the strings llama-ts tokenizes differently.
//   node test/refs/wpm/make-refs.mjs   -> scripts.json, fuzz.json
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../../../', import.meta.url));
const shared = process.env.LLAMA_TS_SHARED ?? `${root}../shared/`;
const nlcDir = process.env.NLC_DIR ?? `${process.env.HOME}/.cache/llama-ts/oracles/node-llama-cpp-3.21.1`;
const { getLlama, LlamaLogLevel } = await import(`${nlcDir}/node_modules/node-llama-cpp/dist/index.js`);
const { loadVocab } = await import(`${root}dist/src/vocab/index.js`);
const { setLogCallback } = await import(`${root}dist/src/log.js`);

const VOCAB = `${shared}vocab/ggml-vocab-bert-bge.gguf`;

const nfd = (s) => s.normalize('NFD');

/** Named strings per script: letters with their combining marks, both normalization forms where they differ. */
const SCRIPTS = {
  devanagari: [
    'हिन्दी पाठ परीक्षण',
    'हिन्दी',
    'पाठ',
    'परीक्षण',
    'नमस्ते दुनिया',
    'क़ ख़ ग़ ज़ ड़ ढ़ फ़ य़',
    'क़िताब',
    nfd('क़िताब'),
    'संस्कृतम् ॐ ।',
    'ँ ं ः ़ ् ॑ ॒',
    '०१२३४५६७८९',
  ],
  bengali: ['বাংলা ভাষা', 'আমি তোমাকে ভালোবাসি', 'ক্ষ ত্র জ্ঞ', 'কো কৌ', nfd('কো কৌ'), '০১২৩৪৫৬৭৮৯', 'ৎ ৗ'],
  thai: ['ภาษาไทย', 'สวัสดีครับ', 'ก่ ก้ ก๊ ก๋ กิ กี กึ กื กุ กู', 'น้ำ', '๐๑๒๓๔๕๖๗๘๙', 'เกม แก่ โก ใจ ไป'],
  arabic: [
    'العَرَبِيَّة',
    'العربية',
    'بِسْمِ اللَّهِ الرَّحْمَٰنِ الرَّحِيمِ',
    'كَتَبَ كُتُب كِتاب',
    'ـــ ءآأؤإئ',
    '٠١٢٣٤٥٦٧٨٩',
    'مرحبا، كيف حالك؟',
    'ﻻ ﷲ ﷺ',
  ],
  hebrew: ['שָׁלוֹם', 'שלום', 'בְּרֵאשִׁית בָּרָא', nfd('שָׁלוֹם'), 'ﬠ ﬡ ﬢ שּׁ', 'עִבְרִית׃'],
  vietnamese: [
    'Tiếng Việt',
    nfd('Tiếng Việt'),
    'Xin chào thế giới',
    nfd('Xin chào thế giới'),
    'Ở ĐÂY CÓ ĐƯỜNG',
    'ă â đ ê ô ơ ư',
    'ả ã ạ ẳ ẵ ặ ẩ ẫ ậ',
  ],
  latin: [
    'café naïve résumé',
    nfd('café naïve résumé'),
    'e\u0301 a\u0300\u0301b \u0301start',
    'ÀÉÎÕÜ àéîõü',
    nfd('ÀÉÎÕÜ àéîõü'),
    'Ångström Øresund Łódź',
    'ǅungla ǈ Ǌ ß ẞ İstanbul',
    'ﬁ ﬂ ﬀ ﬃ',
    'x\u0336y\u0336 z\u20dd',
    'a\u034f\u200db\u200cc\u00add',
    'Ḁḁ Ṩṩ Ẁẁ',
    'Ελληνικά ἀρχή ὅτι',
    nfd('Ελληνικά ἀρχή ὅτι'),
    'Кириллица ёЁ й Й',
    nfd('ёЁ й Й'),
  ],
  cjk: [
    '我想在apple工作。今天天气很好',
    '東京は日本の首都です。カタカナとひらがな',
    '한국어 텍스트 ㄱㄴㄷ',
    nfd('한국어'),
    '㐀㐁 豈更 𠀀𠀁 𪜀',
    'ｶﾀｶﾅ ﾊﾟﾋﾟ',
    '，、。！？「引用」',
    'ガギグ パピプ',
    nfd('ガギグ パピプ'),
  ],
  emoji: ['😀🚀🦙 ✅ done', '👍🏽👨‍👩‍👧‍👦🇺🇸', 'emoji😀in🚀words', '❤️ ☺︎ ✌🏿', '#️⃣ 1️⃣ 🏳️‍🌈'],
  mixed: [
    'Hello мир 世界 مرحبا שלום नमस्ते',
    'naïve café 東京 😀 हिन्दी العَرَبِيَّة',
    'abc\u0301def\u0308 ΑΒΓ\u0301',
    'x\u200by\ufeffz\u2060w',
    'tab\there\nnew\r\nline\u00a0nbsp\u3000ideo',
    '[CLS] [SEP] [MASK] [UNK] [PAD]',
    '##ing ▁word ▁',
    `${'a'.repeat(120)} ${'é'.repeat(40)}`,
    'supercalifragilisticexpialidocious antidisestablishmentarianism',
    '\u0301\u0302\u0303',
    '\u0000 \ufffd \u0007',
    '$100 #tag @user a/b C++ ¿Qué? ¡Hola!',
  ],
};

/** A seeded LCG (the strings are committed, so only make-refs.mjs depends on it). */
function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return s / 2 ** 32;
  };
}

/** Random strings mixing scripts, combining marks, spaces, controls, emoji and normalization forms. */
function fuzzStrings(seed, n) {
  const rnd = rng(seed);
  const pick = (a) => a[Math.floor(rnd() * a.length)];
  const range = (a, b) => () => String.fromCodePoint(a + Math.floor(rnd() * (b - a + 1)));
  const pools = [
    range(0x61, 0x7a),
    range(0x41, 0x5a),
    range(0x30, 0x39),
    range(0x21, 0x2f),
    range(0xc0, 0x17f),
    range(0x300, 0x36f), // combining diacritics
    range(0x370, 0x3ff),
    range(0x400, 0x4ff),
    range(0x591, 0x5f4), // Hebrew with niqqud and cantillation
    range(0x600, 0x6ff), // Arabic with harakat
    range(0x900, 0x97f), // Devanagari
    range(0x980, 0x9ff), // Bengali
    range(0xb80, 0xbff), // Tamil
    range(0xe00, 0xe7f), // Thai
    range(0x1000, 0x109f), // Myanmar
    range(0x1780, 0x17ff), // Khmer
    range(0x1e00, 0x1eff), // Latin extended additional (Vietnamese)
    range(0x2000, 0x206f), // general punctuation, spaces, format controls
    range(0x20d0, 0x20ff), // combining marks for symbols
    range(0x3000, 0x30ff),
    range(0x4e00, 0x9fff),
    range(0xac00, 0xd7a3),
    range(0x1100, 0x11ff),
    range(0xfb00, 0xfb4f),
    range(0xfe00, 0xfe0f), // variation selectors
    range(0xff00, 0xffef),
    range(0x1f300, 0x1faff),
    range(0x1d400, 0x1d7ff),
    range(0xe000, 0xe0ff), // private use
    range(0x80, 0xbf),
    range(0, 0x1f),
    range(0x10000, 0x10ffff),
    range(0xa0, 0x2fff),
    range(0x20000, 0x2ffff),
    range(0xe0000, 0xe007f), // tags
    range(0x1c80, 0x1cff),
    range(0xa700, 0xa7ff),
    () => pick([' ', '  ', '\t', '\n', '\u00a0', '\u3000', '\u200b', '\u200d', '\ufeff', '\u00ad', '\u2581', '\ufffd']),
    () => pick(['e\u0301', '\u00e9', 'हिन्दी', 'परीक्षण', 'Việt', 'שָׁלוֹם', 'العَرَبِيَّة', 'ภาษาไทย', 'বাংলা']),
    () => pick(['👨‍👩‍👧', '[SEP]', '[UNK]', '##ing', 'ﬁ', 'İ', 'ẞ']),
  ];
  const out = [];
  for (let k = 0; k < n; k++) {
    const from = [pick(pools), pick(pools), pick(pools)];
    let s = '';
    const len = 1 + Math.floor(rnd() * 24);
    for (let i = 0; i < len; i++) {
      s += pick(from)();
      if (rnd() < 0.15) s += ' ';
    }
    if (rnd() < 0.3) s = s.normalize(pick(['NFC', 'NFD', 'NFKC', 'NFKD']));
    out.push(s);
  }
  // long words: letters and marks past any token's length
  for (let k = 0; k < 20; k++) {
    const from = [range(0x61, 0x7a), range(0x900, 0x97f), range(0x300, 0x36f)];
    let s = '';
    const len = 50 + Math.floor(rnd() * 200);
    for (let i = 0; i < len; i++) s += pick(from)();
    out.push(s);
  }
  return out;
}

const FUZZ_SEED = 36;
const FUZZ_COUNT = 400;

const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, skipDownload: true });
const model = await llama.loadModel({ modelPath: VOCAB, vocabOnly: true });
setLogCallback(() => {});
const ours = loadVocab(VOCAB);
let differ = 0;
/** llama.cpp's ids, and a note of any string llama-ts tokenizes otherwise. */
function ids(text, parseSpecial) {
  const want = Array.from(model.tokenize(text, parseSpecial));
  const got = ours.encode(text, { addSpecial: false, parseSpecial });
  if (want.join(' ') !== got.join(' ')) {
    differ++;
    console.error(`llama-ts differs on ${JSON.stringify(text)}: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
  }
  return want;
}

const withSpecial = (s) => /\[(CLS|SEP|MASK|UNK|PAD)\]/.test(s);
const cases = [];
for (const [script, strings] of Object.entries(SCRIPTS)) {
  for (const text of strings) {
    const c = { script, text, ids: ids(text, false) };
    if (withSpecial(text)) c.idsParseSpecial = ids(text, true);
    cases.push(c);
  }
}
const fuzz = fuzzStrings(FUZZ_SEED, FUZZ_COUNT);
const fuzzIds = fuzz.map((s) => ids(s, false));
const fuzzSpecial = fuzz.map((s) => (withSpecial(s) ? ids(s, true) : null));
await model.dispose();

function write(name, data) {
  writeFileSync(`${here}${name}`, `${JSON.stringify(data)}\n`);
  execFileSync('npx', ['biome', 'format', '--write', `${here}${name}`], { cwd: root, stdio: 'ignore' });
}
const oracle = 'node-llama-cpp 3.21.1, model.tokenize(text, parseSpecial) on a vocabulary-only load';
write('scripts.json', { vocab: 'bert-bge', oracle, cases });
write('fuzz.json', {
  vocab: 'bert-bge',
  oracle,
  seed: FUZZ_SEED,
  strings: fuzz,
  ids: fuzzIds,
  idsParseSpecial: fuzzSpecial,
});
console.error(`${cases.length} script strings, ${fuzz.length} fuzz strings; llama-ts differs on ${differ}`);
