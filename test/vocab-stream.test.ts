// The streaming decoder never emits part of a UTF-8 character: checked on every suite
// string split at every byte boundary, and token by token where byte-fallback tokens
// spell one character over several tokens.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { setLogCallback } from '../src/log.js';
import { loadVocab } from '../src/vocab/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

function suiteStrings(rel: string): string[] {
  const parts = readFileSync(`${sharedPath(rel)}.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
  parts.pop();
  return parts;
}

const SPM = 'vocab/ggml-vocab-llama-spm.gguf';
const BPE = 'vocab/ggml-vocab-llama-bpe.gguf';

describe('streaming decoder', () => {
  test('bytes split at every boundary', { skip: sharedPath(SPM) ? false : missingShared(SPM) }, () => {
    setLogCallback(() => {});
    const vocab = loadVocab(sharedPath(SPM)!);
    setLogCallback(null);
    const strings = suiteStrings(SPM);
    strings.push('a\u00e9\u4e2d\u{1f999}z', '\u{1f600}\u{1f680}');
    for (const s of strings) {
      const bytes = Buffer.from(s, 'utf8');
      for (let k = 0; k <= bytes.length; k++) {
        const d = vocab.streamDecoder();
        const a = d.pushBytes(bytes.subarray(0, k));
        const b = d.pushBytes(bytes.subarray(k));
        const c = d.flush();
        assert.equal(a + b + c, s, `split at ${k} of ${JSON.stringify(s)}`);
        assert.ok(!a.includes('\ufffd') && !b.includes('\ufffd'), `no replacement char at split ${k}`);
        // the first chunk is exactly the complete characters before the split
        assert.ok(s.startsWith(a), `prefix at split ${k}`);
        assert.ok(Buffer.byteLength(a) <= k && k - Buffer.byteLength(a) < 4);
      }
      // one byte at a time
      const d = vocab.streamDecoder();
      let out = '';
      for (const byte of bytes) {
        const chunk = d.pushBytes(Uint8Array.of(byte));
        assert.ok(!chunk.includes('\ufffd'));
        out += chunk;
      }
      assert.equal(out + d.flush(), s);
    }
  });

  for (const rel of [SPM, BPE]) {
    test(`tokens one at a time (${rel})`, { skip: sharedPath(rel) ? false : missingShared(rel) }, () => {
      setLogCallback(() => {});
      const vocab = loadVocab(sharedPath(rel)!);
      setLogCallback(null);
      for (const s of [...suiteStrings(rel), '\u{1f999}\u{1f999} \u{2705} \u0e01\u0e32 \u{1f600}']) {
        const ids = vocab.encode(s, { addSpecial: true });
        const d = vocab.streamDecoder({ removeSpecial: true, stripLeadingSpace: true });
        let out = '';
        for (const id of ids) {
          const chunk = d.push(id);
          assert.ok(!chunk.includes('\ufffd'), `broken character after token ${id} in ${JSON.stringify(s)}`);
          out += chunk;
        }
        out += d.flush();
        // after a dropped BOS no space is stripped; the stream skips only detokenize's clean-up pass
        const expect = Buffer.from(
          ids
            .slice(1)
            .map((id) => vocab.pieceBytes(id, false))
            .join(''),
          'latin1',
        ).toString('utf8');
        assert.equal(out, expect);
      }
    });
  }
});
