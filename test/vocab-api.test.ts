// Vocabulary behaviour beyond the suites: the addSpecial/parseSpecial switches, BOS and
// space-prefix rules, bad input (invalid UTF-8, lone surrogates, empty text), and the
// pre-tokenizer selection rules (missing: warn and use default; unknown: error).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { GGUFValueType, parseGGUF } from '../src/gguf/index.js';
import { type LogLevel, setLogCallback } from '../src/log.js';
import { loadVocab, type Vocab, VocabError } from '../src/vocab/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

function quiet<T>(fn: () => T): T {
  setLogCallback(() => {});
  try {
    return fn();
  } finally {
    setLogCallback(null);
  }
}

const cache = new Map<string, Vocab>();
function vocabOf(name: string): Vocab {
  let v = cache.get(name);
  if (!v) {
    v = quiet(() => loadVocab(sharedPath(`vocab/ggml-vocab-${name}.gguf`)!));
    cache.set(name, v);
  }
  return v;
}

function need(name: string): { skip: string | false } {
  const rel = `vocab/ggml-vocab-${name}.gguf`;
  return { skip: sharedPath(rel) ? false : missingShared(rel) };
}

describe('encode switches', () => {
  test('SPM: BOS, space prefix after special tokens, parseSpecial', need('llama-spm'), () => {
    const v = vocabOf('llama-spm');
    assert.equal(v.type, 'spm');
    assert.deepEqual(v.encode('Hello world', { addSpecial: false }), [15043, 3186]);
    assert.deepEqual(v.encode('Hello world'), [1, 15043, 3186]);
    // "<s>" is a control token: text unless parsed; after it the fragment gets the space prefix again
    assert.deepEqual(v.encode('<s>Hello', { addSpecial: false, parseSpecial: true }), [1, 15043]);
    const asText = v.encode('<s>Hello', { addSpecial: false, parseSpecial: false });
    assert.ok(asText.length > 2 && !asText.includes(1));
    assert.deepEqual(v.encode('', { addSpecial: false }), []);
    assert.deepEqual(v.encode(''), [1]);
  });

  test('BPE (llama3): BOS, control tokens only when parsed', need('llama-bpe'), () => {
    const v = vocabOf('llama-bpe');
    assert.equal(v.pre, 'llama-bpe');
    assert.deepEqual(v.encode('Hello world'), [128000, 9906, 1917]);
    assert.deepEqual(v.encode('Hello<|eot_id|>', { addSpecial: false, parseSpecial: true }), [9906, 128009]);
    const plain = v.encode('Hello<|eot_id|>', { addSpecial: false, parseSpecial: false });
    assert.ok(!plain.includes(128009) && plain.length > 2);
    assert.deepEqual(v.encode('', { addSpecial: false }), []);
    assert.deepEqual(v.encode(''), [128000]);
    assert.equal(v.eot, 128009);
    assert.ok(v.isEog(128009) && v.isEog(128001));
  });

  test('WPM: CLS ... SEP', need('bert-bge'), () => {
    const v = vocabOf('bert-bge');
    assert.equal(v.type, 'wpm');
    const ids = v.encode('Hello world');
    assert.deepEqual(ids, [101, 7592, 2088, 102]);
    assert.deepEqual(v.encode('Hello world', { addSpecial: false }), [7592, 2088]);
    assert.deepEqual(v.encode('', { addSpecial: false }), []);
    assert.deepEqual(v.encode('[SEP]', { addSpecial: false, parseSpecial: true }), [102]);
  });
});

describe('bad input', () => {
  for (const name of ['llama-spm', 'llama-bpe', 'qwen2', 'bert-bge', 'deepseek-llm', 'falcon']) {
    test(`${name}: invalid UTF-8 and lone surrogates do not throw`, need(name), () => {
      const v = vocabOf(name);
      const invalid = [
        Uint8Array.of(0x61, 0xff, 0x62),
        Uint8Array.of(0xc3),
        Uint8Array.of(0xe4, 0xb8, 0x41, 0x80, 0x80),
        Uint8Array.of(0xf0, 0x9f, 0x98),
        Uint8Array.of(0xed, 0xa0, 0x80), // a UTF-16 surrogate spelled in UTF-8
        Uint8Array.of(0xc0, 0x80), // overlong NUL
      ];
      for (const bytes of invalid) {
        const ids = v.encode(bytes, { addSpecial: false });
        assert.ok(Array.isArray(ids));
        for (const id of ids) assert.ok(Number.isInteger(id) && id >= 0 && id < v.nTokens);
        v.decode(ids);
      }
      // a lone surrogate in a JS string reaches the tokenizer as U+FFFD (what any UTF-8 conversion of it gives)
      assert.deepEqual(v.encode('a\ud800b', { addSpecial: false }), v.encode('a\ufffdb', { addSpecial: false }));
      assert.deepEqual(v.encode('x\udfff', { addSpecial: false }), v.encode('x\ufffd', { addSpecial: false }));
    });
  }

  test('SPM keeps invalid bytes as byte tokens', need('llama-spm'), () => {
    const v = vocabOf('llama-spm');
    const ids = v.encode(Uint8Array.of(0x61, 0xff), { addSpecial: false });
    // "▁a" then <0xFF> (byte tokens are 3 + byte value in LLaMA's vocabulary)
    assert.deepEqual(ids, [263, 3 + 0xff]);
    assert.deepEqual([...v.decodeToBytes(ids)], [0x61, 0xff]);
  });

  test('BPE reads invalid bytes as U+FFFD, as llama.cpp', need('gpt-2'), () => {
    const v = vocabOf('gpt-2');
    assert.deepEqual(
      v.encode(Uint8Array.of(0x61, 0xff, 0x62), { addSpecial: false }),
      v.encode('a\ufffdb', { addSpecial: false }),
    );
  });
});

describe('decode', () => {
  test('SPM leading space: stripped at the start, kept after BOS', need('llama-spm'), () => {
    const v = vocabOf('llama-spm');
    assert.equal(v.decode([15043, 3186]), 'Hello world');
    assert.equal(v.decode([1, 15043, 3186]), ' Hello world');
    assert.equal(v.decode([1, 15043, 3186], { removeSpecial: true }), ' Hello world');
    assert.equal(v.decode([1, 15043], { renderSpecial: true }), '<s> Hello');
    assert.equal(v.tokenToPiece(15043), ' Hello');
    assert.equal(v.tokenToPiece(1), '<s>');
    assert.equal(v.tokenToPiece(1, false), '');
    // byte tokens assemble into UTF-8
    const ids = v.encode('\u{1f999}', { addSpecial: false });
    assert.ok(ids.length >= 4);
    assert.equal(v.decode(ids), '\u{1f999}');
  });

  test('BPE clean-up of spaces (gpt-2)', need('gpt-2'), () => {
    const v = vocabOf('gpt-2');
    assert.equal(v.decode(v.encode("Hello , world ! I ' m here", { addSpecial: false })), "Hello, world! I'm here");
  });
});

// ---- a tiny GGUF built in memory, for the pre-tokenizer selection rules ----

function gguf(kvs: [string, GGUFValueType, unknown][]): Uint8Array {
  const parts: Buffer[] = [];
  const u32 = (n: number) => {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    parts.push(b);
  };
  const u64 = (n: number) => {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    parts.push(b);
  };
  const str = (s: string) => {
    const b = Buffer.from(s, 'utf8');
    u64(b.length);
    parts.push(b);
  };
  parts.push(Buffer.from('GGUF'));
  u32(3);
  u64(0);
  u64(kvs.length);
  for (const [key, type, value] of kvs) {
    str(key);
    u32(type);
    if (type === GGUFValueType.STRING) str(value as string);
    else if (type === GGUFValueType.ARRAY) {
      const [itemType, items] = value as [GGUFValueType, unknown[]];
      u32(itemType);
      u64(items.length);
      for (const it of items) {
        if (itemType === GGUFValueType.STRING) str(it as string);
        else u32(it as number); // INT32
      }
    } else if (type === GGUFValueType.BOOL) parts.push(Buffer.of(value ? 1 : 0));
    else u32(value as number);
  }
  return new Uint8Array(Buffer.concat(parts));
}

function tinyBpe(pre?: string): Uint8Array {
  const tokens = ['a', 'b', '\u0120', 'ab', '\u0120ab', '<|end|>'];
  const kvs: [string, GGUFValueType, unknown][] = [
    ['general.architecture', GGUFValueType.STRING, 'llama'],
    ['tokenizer.ggml.model', GGUFValueType.STRING, 'gpt2'],
    ['tokenizer.ggml.tokens', GGUFValueType.ARRAY, [GGUFValueType.STRING, tokens]],
    ['tokenizer.ggml.token_type', GGUFValueType.ARRAY, [GGUFValueType.INT32, [1, 1, 1, 1, 1, 3]]],
    ['tokenizer.ggml.merges', GGUFValueType.ARRAY, [GGUFValueType.STRING, ['a b', '\u0120 ab']]],
    ['tokenizer.ggml.eos_token_id', GGUFValueType.UINT32, 5],
    ['tokenizer.ggml.bos_token_id', GGUFValueType.UINT32, 5],
  ];
  if (pre !== undefined) kvs.push(['tokenizer.ggml.pre', GGUFValueType.STRING, pre]);
  return gguf(kvs);
}

describe('pre-tokenizer selection', () => {
  test('missing pre: a warning, then the default pre-tokenizer', async () => {
    const { Vocab } = await import('../src/vocab/index.js');
    const logs: [LogLevel, string, string][] = [];
    setLogCallback((level, message, source) => logs.push([level, message, source]));
    let v: Vocab;
    try {
      v = Vocab.fromGGUF(parseGGUF(tinyBpe()));
    } finally {
      setLogCallback(null);
    }
    assert.equal(v.pre, 'default');
    assert.ok(logs.some(([level, msg, src]) => level === 'warn' && src === 'vocab' && msg.includes('pre-tokenizer')));
    assert.deepEqual(v.encode('ab ab', { addSpecial: false }), [3, 4]);
    assert.equal(v.decode([3, 4]), 'ab ab');
  });

  test('unknown pre: an error naming it, unless the default is forced', async () => {
    const { Vocab } = await import('../src/vocab/index.js');
    assert.throws(
      () => Vocab.fromGGUF(parseGGUF(tinyBpe('no-such-pre'))),
      (e: unknown) => {
        assert.ok(e instanceof VocabError);
        assert.match((e as Error).message, /unknown pre-tokenizer type 'no-such-pre'/);
        return true;
      },
    );
    const v = quiet(() => Vocab.fromGGUF(parseGGUF(tinyBpe('no-such-pre')), { forceDefaultPre: true }));
    assert.equal(v.pre, 'default');
    assert.deepEqual(v.encode('abab', { addSpecial: false }), [3, 3]);
  });

  test('known pre names select their pre-tokenizer', async () => {
    const { Vocab } = await import('../src/vocab/index.js');
    for (const pre of [
      'default',
      'llama-bpe',
      'qwen2',
      'gpt-2',
      'deepseek-llm',
      'deepseek-coder',
      'falcon',
      'mpt',
      'starcoder',
      'refact',
    ]) {
      const v = quiet(() => Vocab.fromGGUF(parseGGUF(tinyBpe(pre))));
      assert.equal(v.pre, pre);
      assert.deepEqual(v.encode('ab ab', { addSpecial: false }), [3, 4], pre);
    }
  });
});
