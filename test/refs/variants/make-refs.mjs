// Regenerates the references in this folder: generates each model with llama-ts's seeded
// generator (the same specs test/model-variant-refs.test.ts uses), then asks llama.cpp through
// node-llama-cpp 3.21.1 for its answers. Run from the repository root after `npm run build`:
//   node test/refs/variants/make-refs.mjs [REF_MJS] [EMBED_REF_MJS]
// REF_MJS: ../shared/tools/ref.mjs or a copy (logits, top-10, teacher-forced greedy);
// EMBED_REF_MJS: test/refs/swa/embed-ref.mjs (pooled embeddings). Both expect node-llama-cpp
// where `npm run bench:vs` installs it (NLC_DIR). Models go to a temporary folder.
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { makeRefs } from '../make-refs-lib.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const { VARIANT_MODELS } = await import(join(here, '../../../dist/test/helpers/variant-ref-models.js'));
await makeRefs(here, VARIANT_MODELS, process.argv[2], process.argv[3]);
