// Builds the CPU device's kernel modules from the AssemblyScript sources in this folder:
//   src/backends/cpu/wasm/kernels-relaxed.wasm  (SIMD128 + relaxed SIMD)
//   src/backends/cpu/wasm/kernels-simd.wasm     (SIMD128 only)
// The built files are committed, so users and `npm ci && npm test` never need the
// compiler; test/cpu-wasm-build.test.ts rebuilds them and checks they match.
//
//   node assembly/build.mjs           write the modules
//   node assembly/build.mjs --check   exit 1 if the committed modules differ from a fresh build

import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const outDir = join(root, 'src', 'backends', 'cpu', 'wasm');

export const VARIANTS = [
  { name: 'relaxed', features: 'simd,threads,relaxed-simd' },
  { name: 'simd', features: 'simd,threads' },
];

export function wasmPath(variant) {
  return join(outDir, `kernels-${variant}.wasm`);
}

/** Section ids present in a wasm binary (to reject data segments). */
function sections(bin) {
  const ids = [];
  let p = 8;
  while (p < bin.length) {
    const id = bin[p++];
    let size = 0;
    let shift = 0;
    for (;;) {
      const b = bin[p++];
      size |= (b & 0x7f) << shift;
      shift += 7;
      if (!(b & 0x80)) break;
    }
    ids.push(id);
    p += size;
  }
  return ids;
}

/** Compile one variant; resolves to its bytes. */
export async function build(variant) {
  const { default: asc } = await import('assemblyscript/asc');
  const v = VARIANTS.find((x) => x.name === variant);
  if (!v) throw new Error(`unknown variant ${variant}`);
  let binary = null;
  const errors = [];
  const cwd = process.cwd();
  process.chdir(root);
  try {
    const { error } = await asc.main(
      [
        'assembly/index.ts',
        '-O3',
        '--noAssert',
        '--runtime',
        'stub',
        '--enable',
        v.features,
        '--importMemory',
        '--sharedMemory',
        '--initialMemory',
        '1',
        '--maximumMemory',
        '65536',
        '--outFile',
        'kernels.wasm',
      ],
      {
        writeFile: (name, contents) => {
          if (name.endsWith('.wasm')) binary = contents;
        },
        stdout: { write: () => true },
        stderr: { write: (s) => (errors.push(String(s)), true) },
      },
    );
    if (error) throw new Error(`asc failed for ${variant}: ${error.message}\n${errors.join('')}`);
  } finally {
    process.chdir(cwd);
  }
  if (!binary) throw new Error(`asc produced no binary for ${variant}`);
  const bytes = Uint8Array.from(binary);
  // 11 = data section, 12 = data count: instantiation would write them over live memory
  if (sections(bytes).some((id) => id === 11 || id === 12)) {
    throw new Error(`kernels-${variant}.wasm has data segments; kernel modules must not`);
  }
  return bytes;
}

/** Names of the variants whose committed module differs from a fresh build. */
export async function check() {
  const stale = [];
  for (const v of VARIANTS) {
    const fresh = await build(v.name);
    let old = null;
    try {
      old = new Uint8Array(await readFile(wasmPath(v.name)));
    } catch {}
    if (!old || Buffer.compare(Buffer.from(old), Buffer.from(fresh)) !== 0) stale.push(v.name);
  }
  return stale;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--check')) {
    const stale = await check();
    if (stale.length) {
      console.error(`stale kernel modules: ${stale.join(', ')}; run npm run build:wasm`);
      process.exit(1);
    }
    console.log('kernel modules match their sources');
  } else {
    for (const v of VARIANTS) {
      const bytes = await build(v.name);
      await writeFile(wasmPath(v.name), bytes);
      console.log(`${wasmPath(v.name)}: ${bytes.length} bytes`);
    }
  }
}
