// Tokenizer throughput: 1 MB of mixed English / code / CJK text per vocabulary, and
// three inputs that would expose super-linear behaviour (100 KB of one character, of
// text without whitespace, of emoji). The rows: the suites' vocabularies, every
// pre-tokenizer name issue 23 added (the Qwen2 vocabulary under that name; the SPM-style
// ones on an SPM-style BPE vocabulary), and a generated Unigram vocabulary. Needs
// ../shared/vocab; text is generated from a fixed seed so runs compare. Arguments filter
// the rows by name (`npm run bench:tokenize -- qwen35 ugm`).
import { openGGUF, parseGGUF } from '../src/gguf/index.js';
import { setLogCallback } from '../src/log.js';
import { loadVocab, Vocab } from '../src/vocab/index.js';
import { missingShared, sharedPath } from '../test/helpers/shared.js';
import { spmStyleBpe, ugmVocab, withString } from '../test/helpers/vocab-variants.js';

const VOCABS = [
  'llama-spm',
  'phi-3',
  'llama-bpe',
  'qwen2',
  'gpt-2',
  'starcoder',
  'refact',
  'deepseek-coder',
  'deepseek-llm',
  'falcon',
  'mpt',
  'bert-bge',
];

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
const SPM_STYLE = new Set(['gemma4', 'granite-embed-multi-311m', 'sarvam-moe']);

/** Bench rows: a name and a way to load its vocabulary. */
function rows(): [string, () => Vocab][] {
  const out: [string, () => Vocab][] = [];
  for (const name of VOCABS) {
    const path = sharedPath(`vocab/ggml-vocab-${name}.gguf`);
    if (path) out.push([name, () => loadVocab(path)]);
  }
  const qwen2 = sharedPath('vocab/ggml-vocab-qwen2.gguf');
  const spm = sharedPath('vocab/ggml-vocab-llama-spm.gguf');
  for (const pre of NEW_PRE_TYPES) {
    if (SPM_STYLE.has(pre) && spm) {
      out.push([`${pre} (spm-bpe)`, () => Vocab.fromGGUF(parseGGUF(spmStyleBpe(openGGUF(spm), pre).toBytes()))]);
    } else if (qwen2) {
      out.push([`${pre} (qwen2)`, () => Vocab.fromGGUF(withString(openGGUF(qwen2), 'tokenizer.ggml.pre', pre))]);
    }
  }
  out.push(['ugm (generated)', () => Vocab.fromGGUF(parseGGUF(ugmVocab().toBytes()))]);
  return out;
}

function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ENGLISH = `The quick brown fox jumps over the lazy dog. It wasn't the first time; she'd seen it
before, and they'll see it again. Numbers like 3.14159, 2,718 and 1e-9 appear in prose too.
"Quoted text," he said -- and (parenthetical) remarks! Isn't tokenization fun? I've been told so.`;
const CODE = `function fib(n: number): number {
  if (n < 2) return n;
  return fib(n - 1) + fib(n - 2);
}
for (let i = 0; i < 10; i++) console.log(\`fib(\${i}) = \${fib(i)}\`);
def mean(xs):\n    return sum(xs) / max(len(xs), 1)  # average\n
#include <stdio.h>\nint main(void) { printf("%d\\n", 42); return 0; }
`;
const CJK =
  '我想在apple工作。今天天气很好，我们去公园散步吧！東京は日本の首都です。한국어 텍스트도 있습니다. Ελληνικά, русский текст, العربية.';

/** About `bytes` of mixed text: paragraphs drawn from the three sources with light mutation. */
export function mixedText(bytes: number, seed = 1): string {
  const r = rng(seed);
  const sources = [ENGLISH, CODE, CJK];
  const parts: string[] = [];
  let size = 0;
  while (size < bytes) {
    const src = sources[Math.floor(r() * sources.length)]!;
    const words = src.split(' ');
    // shuffle a little so the word cache does not see one paragraph over and over
    for (let i = 0; i < 4; i++) {
      const a = Math.floor(r() * words.length);
      const b = Math.floor(r() * words.length);
      [words[a], words[b]] = [words[b]!, words[a]!];
    }
    const p = `${words.join(' ')} ${Math.floor(r() * 100000)}\n`;
    parts.push(p);
    size += Buffer.byteLength(p);
  }
  return parts.join('');
}

/** Wall-clock seconds (and process CPU seconds, steadier on a busy machine). */
function time(fn: () => void): number {
  return timeBoth(fn)[0];
}

function timeBoth(fn: () => void): [number, number] {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  fn();
  const c = process.cpuUsage(c0);
  return [(performance.now() - t0) / 1000, (c.user + c.system) / 1e6];
}

function main(): number {
  const missing = sharedPath('vocab/') === undefined;
  if (missing) {
    process.stderr.write(`${missingShared('vocab/')}\n`);
    return 1;
  }
  setLogCallback(() => {});
  const text = mixedText(1 << 20);
  const mb = Buffer.byteLength(text) / (1 << 20);
  const r = rng(7);
  const noSpace = Array.from(
    { length: 100_000 },
    () => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJ0123456789_.,;:-+=/'[Math.floor(r() * 55)],
  ).join('');
  const blowups: [string, string][] = [
    ['100 KB of "a"', 'a'.repeat(100_000)],
    ['100 KB, no whitespace', noSpace],
    ['100 KB of emoji', '😀🚀🦙✅👍🏽'.repeat(Math.ceil(100_000 / 22)).slice(0, 50_000)],
  ];
  console.log(`mixed text: ${mb.toFixed(2)} MB (${text.length} chars)\n`);
  console.log(
    `${'vocab'.padEnd(32)}${'type'.padEnd(6)}${'MB/s'.padStart(8)}${'(cpu)'.padStart(8)}${'tokens'.padStart(10)}   ${blowups.map(([n]) => n.padStart(24)).join('')}`,
  );
  const filter = process.argv.slice(2);
  for (const [name, load] of rows()) {
    if (filter.length > 0 && !filter.some((f) => name.includes(f))) continue;
    const vocab = load();
    vocab.encode('warm up the caches: Hello, world! 你好 12345', { addSpecial: false });
    let n = 0;
    const [secs, cpu] = timeBoth(() => {
      n = vocab.encode(text, { addSpecial: false }).length;
    });
    const blow = blowups.map(([, s]) => time(() => vocab.encode(s, { addSpecial: false })));
    console.log(
      `${name.padEnd(32)}${vocab.type.padEnd(6)}${(mb / secs).toFixed(2).padStart(8)}${(mb / cpu).toFixed(2).padStart(8)}${String(n).padStart(10)}   ${blow.map((s) => `${(s * 1000).toFixed(0)} ms`.padStart(24)).join('')}`,
    );
  }
  return 0;
}

if (process.argv[1]?.endsWith('tokenize.js')) process.exitCode = main();
