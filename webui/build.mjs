// Bundles the chat page (webui/src) into dist/webui/ with esbuild, at `npm run build`:
// app.js (the page: Preact, marked, highlight.js, DOMPurify), math.js (KaTeX, loaded only
// when a reply holds math), app.css (imported by main.tsx), and LICENSES.txt (the license
// of each package bundled, which their terms ask to ship with them). The package ships
// these files; nothing is built on install. Type checking is `tsc -p webui/tsconfig.json`
// (esbuild only strips types).

import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const out = join(root, 'dist', 'webui');
const result = await build({
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome111', 'firefox113', 'safari16.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  outdir: out,
  entryPoints: {
    app: join(here, 'src', 'main.tsx'),
    math: join(here, 'src', 'math.ts'),
  },
  entryNames: '[name]',
});

/** LICENSES.txt's text: the license of each package a build bundled. */
function notices(metafile, what) {
  const packages = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m) packages.add(m[1]);
  }
  const texts = [...packages].sort().map((name) => {
    const dir = join(root, 'node_modules', name);
    const { version, license, repository } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
    const files = readdirSync(dir).filter((f) => /^(licen[cs]e|copying)/i.test(f));
    // a few packages ship no license file: their package.json's license and source then
    if (files.length === 0 && !license) throw new Error(`webui/build.mjs: ${name} is bundled but has no license`);
    const source = typeof repository === 'string' ? repository : repository?.url;
    const text = files.length
      ? files.sort().map((f) => readFileSync(join(dir, f), 'utf8').trim())
      : [`(no license file in the package; its package.json says ${license}${source ? `, source ${source}` : ''})`];
    return `${name} ${version} (${license})\n\n${text.join('\n\n')}`;
  });
  return `${what} include these packages:\n\n${texts.join(`\n\n${'-'.repeat(72)}\n\n`)}\n`;
}
writeFileSync(join(out, 'LICENSES.txt'), notices(result.metafile, "The chat page's bundles (app.js, math.js)"));

// The audio decoders and libwebp's as browser ES modules (dist/vendor/), which `llama-ts web` serves at
// /vendor/ for the media layer's imports on demand: their packages are ES modules, but import
// a CommonJS one (@eshaz/web-worker) and bare names, which a browser cannot resolve.
const vendorOut = join(root, 'dist', 'vendor');
const vendor = await build({
  bundle: true,
  minify: true,
  format: 'esm',
  platform: 'browser',
  target: ['chrome111', 'firefox113', 'safari16.4'],
  legalComments: 'none',
  logLevel: 'warning',
  metafile: true,
  outdir: vendorOut,
  entryPoints: {
    flac: '@wasm-audio-decoders/flac',
    mpg123: 'mpg123-decoder',
    // libwebp's decoder: its glue fetches webp_dec.wasm beside itself, which /vendor/ serves too
    webp: '@jsquash/webp/decode.js',
  },
  entryNames: '[name]',
});
writeFileSync(
  join(vendorOut, 'LICENSES.txt'),
  notices(vendor.metafile, 'The audio and WebP decoders (flac.js, mpg123.js, webp.js)'),
);
