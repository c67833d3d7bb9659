// The committed kernel modules are what their AssemblyScript sources compile to (the
// compiler is a devDependency: pure JS + wasm, no install scripts), and have no data
// segments (instantiating a module must never write into shared memory).

import assert from 'node:assert/strict';
import { test } from 'node:test';

interface BuildScript {
  check(): Promise<string[]>;
}

test('cpu kernels: the committed .wasm files match a fresh build of assembly/', async () => {
  const path = '../../assembly/build.mjs';
  const build = (await import(path)) as BuildScript;
  assert.deepEqual(await build.check(), [], 'stale kernel modules: run npm run build:wasm');
});
