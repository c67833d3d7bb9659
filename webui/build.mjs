// Bundles the chat page (webui/src) into dist/webui/ with esbuild, at `npm run build`:
// app.js (the page: Preact, marked, highlight.js, DOMPurify) and math.js (KaTeX, loaded
// only when a reply holds math), and app.css (imported by main.tsx). The package ships these files; nothing is
// built on install. Type checking is `tsc -p webui/tsconfig.json` (esbuild only strips types).

import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));
const common = {
  bundle: true,
  minify: true,
  format: 'esm',
  target: ['chrome111', 'firefox113', 'safari16.4'],
  jsx: 'automatic',
  jsxImportSource: 'preact',
  legalComments: 'none',
  logLevel: 'warning',
  outdir: join(here, '..', 'dist', 'webui'),
};
await build({
  ...common,
  entryPoints: {
    app: join(here, 'src', 'main.tsx'),
    math: join(here, 'src', 'math.ts'),
  },
  entryNames: '[name]',
});
