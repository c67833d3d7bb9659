// `llama-ts quantize` on a mixture of experts: the shared gpt-oss F32 fixture quantized to
// MXFP4_MOE (expert stacks MXFP4, every other matrix Q8_0, vectors F32) and to Q8_0 holds
// the same tensors, types and bytes as the fixtures llama.cpp's converter wrote from the
// same weights (the files differ in tensor order and general.quantization_version, which
// llama-quantize writes and the converter does not).

import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openGGUF } from '../src/gguf/index.js';
import { quantizeModel } from '../src/quantize/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const F32_REL = 'fixtures/archs/gpt-oss-F32.gguf';
const f32 = sharedPath(F32_REL);
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-quantize-moe-'));
after(() => rmSync(dir, { recursive: true, force: true }));

for (const [ft, fixture] of [
  ['MXFP4_MOE', 'fixtures/archs/gpt-oss-MXFP4.gguf'],
  ['Q8_0', 'fixtures/archs/gpt-oss-Q8_0.gguf'],
] as const) {
  const want = sharedPath(fixture);
  test(`quantizing gpt-oss-F32 to ${ft}: the tensors of ${fixture}, byte for byte`, {
    skip: !f32 ? missingShared(F32_REL) : !want ? missingShared(fixture) : false,
  }, async () => {
    const out = join(dir, `gpt-oss-${ft}.gguf`);
    await quantizeModel(f32!, out, { fileType: ft, threads: 2 });
    const a = openGGUF(out);
    const b = openGGUF(want!);
    try {
      // (llama-quantize's tensor order, not the converter's)
      const names = (f: typeof a) => f.tensors.map((t) => `${t.name} ${t.type}`).sort();
      assert.deepEqual(names(a), names(b));
      for (const t of b.tensors) {
        const mine = Buffer.from(a.readTensorData(a.tensors.find((x) => x.name === t.name)!));
        assert.ok(mine.equals(Buffer.from(b.readTensorData(t))), `${t.name}: bytes differ`);
      }
      assert.equal(a.getNumber('general.file_type'), b.getNumber('general.file_type'));
    } finally {
      a.close();
      b.close();
    }
  });
}
