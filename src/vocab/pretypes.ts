// The pre-tokenizer of each `tokenizer.ggml.pre` name, as llama.cpp's vocabulary loader
// and llm_tokenizer_bpe define them: the regexes that cut text into words (applied one
// after the other), and the flags the name switches on. Aliases share one entry. Some
// regexes stand for hand-written scanners (scanners.ts), as in llama.cpp's unicode.cpp.

export const RE_GPT2 = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const CONTRACTIONS = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])";
export const RE_LLAMA3 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
/** LLaMA-3's pattern as written in tokenizer.json (llama.cpp maps it to the same scanner). */
export const RE_LLAMA3_ORIGINAL =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
export const RE_QWEN2 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
/** Qwen3.5: letter runs take combining marks too. */
export const RE_QWEN35 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
export const RE_GPT4O = `[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+${CONTRACTIONS}?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*${CONTRACTIONS}?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
/** GPT-4o's with combining marks in the lookaheads (granite-embed-multi-97m). */
export const RE_GRANITE_EMB_MULTI = `[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+${CONTRACTIONS}?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*${CONTRACTIONS}?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const RE_TEKKEN =
  '[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';
/** LLaMA-3's with a cascade of whitespace-run lengths (jais-2). */
export const RE_JAIS2 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}`;
/** Upper/lower-case aware word pattern with contractions (tiny_aya, youtu's second stage). */
const RE_CASED_WORDS = `[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+${CONTRACTIONS}?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*${CONTRACTIONS}?`;
export const RE_TINY_AYA = `${RE_CASED_WORDS}|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
export const RE_YOUTU = `${RE_CASED_WORDS}|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
export const RE_YOUTU_CJK = '[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+';
/** DeepSeek-V3's word pattern (also AFMoE's): ASCII punctuation may lead an ASCII word. */
export const RE_DEEPSEEK3_WORDS =
  '[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+';
export const RE_DEEPSEEK3_CJK = '[一-龥぀-ゟ゠-ヿ]+';
export const RE_AFMOE_CJK = '[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+';
export const RE_AFMOE_WORDS =
  '[!"#$%&\'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+';
/** Not a regex: names llama.cpp's AFMoE digit splitter (groups of three from the right). */
export const RE_AFMOE_DIGITS = '\\p{AFMoE_digits}';
/** tiny_aya's digit grouping; llama.cpp runs the AFMoE digit splitter for it. */
export const RE_TINY_AYA_DIGITS = '\\d{1,3}(?=(?:\\d{3})*\\b)';
/** Not a regex: names llama.cpp's Kimi-K2 scanner (Han runs, cased words, digits by three, ...). */
export const RE_KIMI_K2 = '\\p{Han}+';
/** Runs of non-newlines and runs of newlines. */
export const RE_NEWLINES = '[^\\n]+|[\\n]+';
/** Bailing (possessive quantifiers of the original made greedy, as llama.cpp has it). */
export const RE_BAILINGMOE =
  "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+";
export const RE_EXAONE_MOE = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+`;
export const RE_MINICPM5 = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const RE_SEED_CODER = `${CONTRACTIONS}|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+`;
const RE_BLOOM = ' ?[^(\\s|.,!?…。，、।۔،)]+';
/** SuperBPE: an empty match before every group of three ASCII digits that ends a digit run. */
export const RE_SUPERBPE_DIGITS = '(?=(\\d{3})+(?!\\d))';

// The letter class is written with escapes: several of its codepoints (U+1F7D, U+1FBE,
// U+2126, U+212A, ...) have canonical equivalents and must not be normalized away.
const RE_DEEPSEEK_LLM = [
  '[\r\n]',
  '\\s?[A-Za-z\u{B5}\u{C0}-\u{D6}\u{D8}-\u{F6}\u{F8}-\u{1BA}\u{1BC}-\u{1BF}\u{1C4}-\u{293}\u{295}-\u{2AF}\u{370}-\u{373}\u{376}\u{377}\u{37B}-\u{37D}\u{37F}\u{386}\u{388}-\u{38A}\u{38C}\u{38E}-\u{3A1}\u{3A3}-\u{3F5}\u{3F7}-\u{481}\u{48A}-\u{52F}\u{531}-\u{556}\u{10A0}-\u{10C5}\u{13A0}-\u{13F5}\u{13F8}-\u{13FD}\u{1C90}-\u{1CBA}\u{1CBD}-\u{1CBF}\u{1D00}-\u{1D2B}\u{1D6B}-\u{1D77}\u{1D79}-\u{1D9A}\u{1E00}-\u{1F15}\u{1F18}-\u{1F1D}\u{1F20}-\u{1F45}\u{1F48}-\u{1F4D}\u{1F50}-\u{1F57}\u{1F59}\u{1F5B}\u{1F5D}\u{1F5F}-\u{1F7D}\u{1F80}-\u{1FB4}\u{1FB6}-\u{1FBC}\u{1FBE}\u{1FC2}-\u{1FC4}\u{1FC6}-\u{1FCC}\u{1FD0}-\u{1FD3}\u{1FD6}-\u{1FDB}\u{1FE0}-\u{1FEC}\u{1FF2}-\u{1FF4}\u{1FF6}-\u{1FFC}\u{2102}\u{2107}\u{210A}-\u{2113}\u{2115}\u{2119}-\u{211D}\u{2124}\u{2126}\u{2128}\u{212A}-\u{212D}\u{212F}-\u{2134}\u{2139}\u{213C}-\u{213F}\u{2145}-\u{2149}\u{214E}\u{2183}\u{2184}\u{2C00}-\u{2C7B}\u{2C7E}-\u{2CE4}\u{2CEB}-\u{2CEE}\u{2CF2}\u{2CF3}\u{A640}-\u{A66D}\u{A680}-\u{A69B}\u{A722}-\u{A76F}\u{A771}-\u{A787}\u{A78B}-\u{A78E}\u{AB70}-\u{ABBF}\u{FB00}-\u{FB06}\u{FB13}-\u{FB17}\u{FF21}-\u{FF3A}\u{FF41}-\u{FF5A}\u{10400}-\u{1044F}\u{104B0}-\u{104D3}\u{104D8}-\u{104FB}\u{10C80}-\u{10CB2}\u{10CC0}-\u{10CF2}\u{118A0}-\u{118DF}\u{1E900}-\u{1E943}]+',
  '\\s?[!-/:-~！-／：-～‘-‟　-。]+',
  '\\s+$',
  '[一-龥ࠀ-一가-퟿]+',
  '\\p{N}+',
];

export interface PreTypeSpec {
  regexes: readonly string[];
  /** decode() tidies " ?", " !", " 's" ... (llama.cpp's clean_spaces). */
  cleanSpaces: boolean;
  /** A word that is already a token skips the merges. */
  ignoreMerges: boolean;
  /** Default for add_bos_token when the file does not say. */
  addBos: boolean;
  addSep: boolean;
  /** Words are spelled in the GPT-2 byte alphabet (false: raw UTF-8, byte fallback through <0xNN> tokens). */
  byteEncode: boolean;
  /** Spaces become "▁" before splitting, and back when decoding (SPM-style BPE). */
  escapeWhitespaces: boolean;
  /** add_bos_token is forced on even when the file says false (Gemma 4). */
  forceBos: boolean;
  /** A word of newlines only is looked up whole before merging (Gemma 4). */
  newlineWords: boolean;
  /** The BOS id is dropped (GLM-4). */
  noBos: boolean;
  /** Default for the WordPiece normalizer's lowercase flag. */
  lowercase: boolean;
}

function spec(regexes: string[], o: Partial<PreTypeSpec> = {}): PreTypeSpec {
  return {
    regexes,
    cleanSpaces: true,
    ignoreMerges: false,
    addBos: false,
    addSep: false,
    byteEncode: true,
    escapeWhitespaces: false,
    forceBos: false,
    newlineWords: false,
    noBos: false,
    lowercase: true,
    ...o,
  };
}

const DEFAULT = spec(['[\\p{P}\\$\\+<=>\\^~\\|]+', RE_GPT2, '\\p{N}+', '[0-9][0-9][0-9]']);
const LLAMA3 = spec([RE_LLAMA3], { ignoreMerges: true, addBos: true });
const GPT2 = spec([RE_GPT2]);
const STARCODER = spec(['\\p{N}', RE_GPT2]);
const QWEN2 = spec([RE_QWEN2], { cleanSpaces: false });
const GPT4O = spec([RE_GPT4O], { cleanSpaces: false });
const BLOOM = spec([RE_BLOOM]);
const DEEPSEEK3 = spec(['\\p{N}{1,3}', RE_DEEPSEEK3_CJK, RE_DEEPSEEK3_WORDS], { cleanSpaces: false });
const TINY_AYA = spec([RE_TINY_AYA_DIGITS, RE_TINY_AYA], { cleanSpaces: false });
const BAILINGMOE = spec([RE_BAILINGMOE], { cleanSpaces: false });
const GEMMA4 = spec([RE_NEWLINES], { byteEncode: false, escapeWhitespaces: true, forceBos: true, newlineWords: true });

/** Pre-tokenizers by the name in `tokenizer.ggml.pre` (aliases as llama.cpp accepts them). */
const PRE: Record<string, PreTypeSpec> = {
  default: DEFAULT,
  llama3: LLAMA3,
  'llama-v3': LLAMA3,
  'llama-bpe': LLAMA3,
  falcon3: LLAMA3,
  'falcon-h1': LLAMA3,
  pixtral: LLAMA3,
  'midm-2.0': LLAMA3,
  lfm2: LLAMA3,
  'jina-v5-nano': LLAMA3,
  dbrx: spec([RE_LLAMA3]),
  'smaug-bpe': spec([RE_LLAMA3]),
  'jais-2': spec([RE_JAIS2]),
  minicpm5: spec(['\\p{N}{1,3}', RE_MINICPM5], { ignoreMerges: true }),
  'deepseek-llm': spec(RE_DEEPSEEK_LLM, { cleanSpaces: false }),
  'deepseek-coder': spec(['[\r\n]', '\\s?\\p{L}+', '\\s?\\p{P}+', '[一-龥ࠀ-一가-퟿]+', '\\p{N}'], {
    cleanSpaces: false,
  }),
  'deepseek-v3': DEEPSEEK3,
  'hunyuan-dense': DEEPSEEK3,
  'joyai-llm': DEEPSEEK3,
  youtu: spec([RE_YOUTU_CJK, RE_YOUTU], { cleanSpaces: false, ignoreMerges: true }),
  falcon: spec(['[\\p{P}\\$\\+<=>\\^~\\|`]+', RE_GPT2, '[0-9][0-9][0-9]']),
  mpt: GPT2,
  olmo: GPT2,
  jais: GPT2,
  'gpt-2': GPT2,
  'phi-2': GPT2,
  'jina-es': GPT2,
  'jina-de': GPT2,
  'jina-v2-es': GPT2,
  'jina-v2-de': GPT2,
  gigachat: GPT2,
  'a.x-4.0': GPT2,
  mellum: GPT2,
  'modern-bert': GPT2,
  exaone4: GPT2,
  trillion: spec([RE_GPT2], { cleanSpaces: false }),
  'granite-docling': spec([RE_GPT2], { cleanSpaces: false }),
  'jina-v1-en': spec([RE_GPT2], { addSep: true }),
  'jina-v2-code': spec([RE_GPT2], { addSep: true }),
  'roberta-bpe': spec([RE_GPT2], { addSep: true }),
  gemma4: GEMMA4,
  'granite-embed-multi-311m': GEMMA4,
  'sarvam-moe': spec([RE_NEWLINES], { byteEncode: false, escapeWhitespaces: true, cleanSpaces: false }),
  whitespace: spec(['\\S+'], { byteEncode: false, lowercase: false }),
  starcoder: STARCODER,
  refact: STARCODER,
  codeshell: STARCODER,
  exaone: STARCODER,
  'minerva-7b': STARCODER,
  mellum2: STARCODER,
  'command-r': spec(['\\p{N}', RE_GPT2], { cleanSpaces: false }),
  smollm: spec(['\\p{N}', RE_GPT2], { cleanSpaces: false }),
  qwen2: QWEN2,
  'deepseek-r1-qwen': QWEN2,
  kormo: QWEN2,
  f2llmv2: QWEN2,
  hunyuan: QWEN2,
  'solar-open': QWEN2,
  'grok-2': QWEN2,
  qwen35: spec([RE_QWEN35], { cleanSpaces: false }),
  stablelm2: spec([RE_QWEN2]),
  megrez: spec([RE_QWEN2]),
  'poro-chat': spec([RE_BLOOM], { cleanSpaces: false }),
  bloom: BLOOM,
  'gpt3-finnish': BLOOM,
  viking: spec([RE_BLOOM, '\\p{N}'], { cleanSpaces: false }),
  'gpt-4o': GPT4O,
  llama4: GPT4O,
  kanana2: GPT4O,
  talkie: GPT4O,
  'minimax-m2': GPT4O,
  'granite-embed-multi-97m': spec([RE_GRANITE_EMB_MULTI], { cleanSpaces: false, ignoreMerges: true }),
  tiny_aya: TINY_AYA,
  cohere2moe: TINY_AYA,
  superbpe: spec(['\\p{N}+', RE_SUPERBPE_DIGITS], { cleanSpaces: false }),
  bailingmoe: BAILINGMOE,
  bailingmoe2: BAILINGMOE,
  'llada-moe': BAILINGMOE,
  'kimi-k2': spec([RE_KIMI_K2], { cleanSpaces: false }),
  afmoe: spec([RE_AFMOE_DIGITS, RE_AFMOE_CJK, RE_AFMOE_WORDS], { cleanSpaces: false }),
  laguna: spec([RE_NEWLINES, RE_QWEN2], { cleanSpaces: false }),
  'exaone-moe': spec([RE_EXAONE_MOE]),
  tekken: spec([RE_TEKKEN], { cleanSpaces: false, ignoreMerges: true, addBos: true }),
  chameleon: spec(
    [
      '<sentinel:[0-9]+>',
      '(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z',
      '([\\t\\n]|    |  )',
      '\\p{N}',
      '[\\p{P}!-/:-@\\[-`{-~]',
      RE_GPT2,
    ],
    { cleanSpaces: false, addBos: true },
  ),
  'seed-coder': spec([RE_SEED_CODER], { cleanSpaces: false }),
  glm4: spec([RE_LLAMA3], { noBos: true }),
  'chatglm-bpe': spec([RE_LLAMA3], { noBos: true }),
};

/** The pre-tokenizer names this build knows. */
export const PRE_TOKENIZER_NAMES: readonly string[] = Object.keys(PRE);

export function preTypeSpec(name: string): PreTypeSpec | undefined {
  return Object.hasOwn(PRE, name) ? PRE[name] : undefined;
}
