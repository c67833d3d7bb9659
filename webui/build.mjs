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

const packages = new Set();
for (const input of Object.keys(result.metafile.inputs)) {
  const m = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(input);
  if (m) packages.add(m[1]);
}
const notices = [...packages].sort().map((name) => {
  const dir = join(root, 'node_modules', name);
  const { version, license } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const files = readdirSync(dir).filter((f) => /^(licen[cs]e|copying)/i.test(f));
  if (files.length === 0) throw new Error(`webui/build.mjs: ${name} is bundled but has no license file`);
  const texts = files.sort().map((f) => readFileSync(join(dir, f), 'utf8').trim());
  return `${name} ${version} (${license})\n\n${texts.join('\n\n')}`;
});
writeFileSync(
  join(out, 'LICENSES.txt'),
  `The chat page's bundles (app.js, math.js) include these packages:\n\n${notices.join(`\n\n${'-'.repeat(72)}\n\n`)}\n`,
);
