// A 6 GiB GGUF (sparse on disk): metadata and the last tensor read by file offset,
// with RSS far below the file size. Runs in a child process to measure its own RSS.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { GGMLType } from '../src/ggml/types.js';
import { GGUFWriter, openGGUF } from '../src/gguf/index.js';

const GiB = 2 ** 30;

if (process.argv[2] === 'child') {
  const f = openGGUF(process.argv[3]!);
  const layers = f.getU32('test.layers');
  const last = f.tensors[f.tensors.length - 1]!;
  const data = f.readTensorData(last);
  const values = new Float32Array(data.buffer, data.byteOffset, last.nElements);
  process.stdout.write(
    JSON.stringify({
      layers,
      last: last.name,
      fileOffset: last.fileOffset,
      first: values[0],
      lastValue: values[values.length - 1],
      maxRssMB: process.resourceUsage().maxRSS / 1024,
    }),
  );
  f.close();
} else {
  test('metadata and last tensor of a 6 GiB sparse GGUF', (t) => {
    const dir = mkdtempSync(`${tmpdir()}/llama-ts-sparse-`);
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const path = `${dir}/huge.gguf`;
    const w = new GGUFWriter();
    w.setString('general.architecture', 'llama');
    w.setU32('test.layers', 3);
    for (let i = 0; i < 3; i++) w.addTensor(`blk.${i}.big.weight`, GGMLType.F32, [65536, 8192]); // 2 GiB holes
    const tail = new Float32Array(4096).map((_, i) => i + 0.25);
    w.addTensor('last.weight', GGMLType.F32, [4096], new Uint8Array(tail.buffer));
    w.write(path);
    const st = statSync(path);
    assert.ok(st.size > 6 * GiB, `file is ${st.size} bytes`);
    if (st.blocks * 512 > 256 * 2 ** 20) {
      t.skip(`this filesystem does not keep ${path} sparse (${st.blocks * 512} bytes allocated)`);
      return;
    }
    const out = execFileSync(process.execPath, [fileURLToPath(import.meta.url), 'child', path], { encoding: 'utf8' });
    const r = JSON.parse(out) as {
      layers: number;
      last: string;
      fileOffset: number;
      first: number;
      lastValue: number;
      maxRssMB: number;
    };
    t.diagnostic(`child max RSS ${r.maxRssMB.toFixed(1)} MB for a ${(st.size / GiB).toFixed(2)} GiB file`);
    assert.equal(r.layers, 3);
    assert.equal(r.last, 'last.weight');
    assert.ok(r.fileOffset > 6 * GiB);
    assert.equal(r.first, 0.25);
    assert.equal(r.lastValue, 4095.25);
    assert.ok(r.maxRssMB < 150, `max RSS ${r.maxRssMB} MB`);
  });
}
