// Fidelity against llama.cpp's reference answers (../shared/*.ref.json): for every
// generative model and prompt, the prompt's tokens, the top-10 next-token logits after
// the prompt (within a per-type tolerance, ids in the same order except near-ties), and
// teacher-forced greedy decoding (the reference's greedy tokens fed back in one more
// decode call; the argmax must match wherever llama.cpp's top-2 gap exceeds twice the
// tolerance). BERT files: cosine ≥ 0.9999 with the reference sentence embedding.
// Every file runs on the default device (the fastest) and, when that is another, on the
// reference kernels with ggml-cpu numerics too.

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import type { Device } from '../src/backends/index.js';
import { referenceDevice } from '../src/backends/reference/index.js';
import { setLogCallback } from '../src/log.js';
import { Context, defaultDevices, l2Normalize, Model } from '../src/model/index.js';
import { missingShared, SHARED_DIR, sharedPath } from './helpers/shared.js';

interface GenCase {
  prompt: string;
  tokens: number[];
  top10: [number, number, number][];
  greedy: number[];
  greedy_gap: number[];
}

interface EmbedCase {
  prompt: string;
  tokens: number[];
  embedding: number[];
}

/** |Δlogit| tolerance by weight type (from the file name). */
function tolerance(file: string): number {
  if (/stories260K|-(F32|F16|BF16)\b|tiny-random/.test(file)) return 0.03;
  if (/-Q8_0\b/.test(file)) return 0.05;
  return 0.1;
}

function generativeFiles(): string[] {
  const out: string[] = [];
  for (const m of ['models/stories260K', 'models/tiny-random-llama']) if (sharedPath(`${m}.gguf`)) out.push(m);
  const fx = sharedPath('fixtures');
  if (fx) {
    for (const f of readdirSync(fx).sort()) {
      if (f.startsWith('rand-') && f.endsWith('.gguf') && !f.startsWith('rand-bert-')) {
        out.push(`fixtures/${f.slice(0, -5)}`);
      }
    }
  }
  return out;
}

function argmax(a: Float32Array): number {
  let b = 0;
  for (let i = 1; i < a.length; i++) if (a[i] > a[b]) b = i;
  return b;
}

/** Checks one prompt; returns [max |Δ| on the top-10, greedy steps matched, steps required]. */
async function checkCase(model: Model, c: GenCase, tol: number, where: string): Promise<[number, number, number]> {
  const tokens = model.vocab.encode(c.prompt, { addSpecial: true, parseSpecial: false });
  assert.deepEqual(tokens, c.tokens, `${where}: prompt tokens`);
  const ctx = new Context(model, { nCtx: 128 });
  try {
    await ctx.decode({ tokens });
    const first = ctx.getLogits(-1);

    // top-10 values
    let maxDelta = 0;
    for (const [id, logit] of c.top10) {
      const d = Math.abs(first[id] - logit);
      maxDelta = Math.max(maxDelta, d);
      assert.ok(d <= tol, `${where}: logit of token ${id} is ${first[id]}, llama.cpp ${logit} (tolerance ${tol})`);
    }
    // top-10 membership and order, except between near-ties
    const order = Array.from(first.keys()).sort((a, b) => first[b] - first[a]);
    const rank = new Map(order.map((id, r) => [id, r]));
    const tenth = c.top10[9][1];
    for (let i = 0; i < 10; i++) {
      const [id, li] = c.top10[i];
      if (li - tenth > 2 * tol) assert.ok(rank.get(id)! < 10, `${where}: token ${id} not in the top 10`);
      for (let j = i + 1; j < 10; j++) {
        const [jd, lj] = c.top10[j];
        if (li - lj > 2 * tol)
          assert.ok(rank.get(id)! < rank.get(jd)!, `${where}: tokens ${id} and ${jd} out of order`);
      }
    }

    // teacher-forced greedy: step 0 from the prompt, steps 1.. from one batch of the rest
    const g = c.greedy;
    const rest = g.slice(0, -1);
    await ctx.decode({ tokens: rest, logits: rest.map(() => true) });
    let matched = 0;
    let required = 0;
    for (let s = 0; s < g.length; s++) {
      if (c.greedy_gap[s] <= 2 * tol) continue;
      required++;
      const picked = argmax(s === 0 ? first : ctx.getLogits(s - 1));
      assert.equal(
        picked,
        g[s],
        `${where}: greedy step ${s} picked ${picked}, llama.cpp ${g[s]} (gap ${c.greedy_gap[s]})`,
      );
      matched++;
    }
    return [maxDelta, matched, required];
  } finally {
    ctx.free();
  }
}

const files = generativeFiles();
if (files.length === 0) {
  test('model fidelity: generative models', { skip: missingShared('models/ and fixtures/') }, () => {});
}

/** The devices each file runs on: the default, and the reference kernels if different. */
const RUNS: [string, Device[]][] = [['default', defaultDevices()]];
if (RUNS[0][1].some((d) => d.name !== referenceDevice.name)) RUNS.push(['reference', [referenceDevice]]);

for (const [label, devices] of RUNS) {
  for (const rel of files) {
    test(`model fidelity (${label}: ${devices.map((d) => d.name).join(', ')}): ${rel}`, async () => {
      setLogCallback(() => {});
      const model = await Model.load(`${SHARED_DIR}${rel}.gguf`, { devices });
      setLogCallback(null);
      try {
        const ref = JSON.parse(readFileSync(`${SHARED_DIR}${rel}.ref.json`, 'utf8')) as { cases: GenCase[] };
        const tol = tolerance(rel);
        const lines: string[] = [];
        for (const c of ref.cases) {
          const [d, m, r] = await checkCase(model, c, tol, `${rel} '${c.prompt}'`);
          lines.push(`max|Δ| ${d.toFixed(4)}, greedy ${m}/${r}`);
        }
        process.stdout.write(`# ${label} ${rel}: ${lines.join('; ')}\n`);
      } finally {
        model.free();
      }
    });
  }
}

const bertFiles = ['fixtures/rand-bert-F16', 'fixtures/rand-bert-Q8_0'];
for (const [label, devices] of RUNS) {
  for (const rel of bertFiles) {
    const path = sharedPath(`${rel}.gguf`);
    test(`model fidelity (${label}): ${rel} embeddings`, {
      skip: path ? false : missingShared(`${rel}.gguf`),
    }, async () => {
      const model = await Model.load(path!, { devices });
      const ctx = new Context(model, { embeddings: true });
      try {
        const ref = JSON.parse(readFileSync(`${SHARED_DIR}${rel}.ref.json`, 'utf8')) as { cases: EmbedCase[] };
        const cosines: string[] = [];
        for (const c of ref.cases) {
          const tokens = model.vocab.encode(c.prompt, { addSpecial: true });
          assert.deepEqual(tokens.slice(1, -1), c.tokens, `${rel} '${c.prompt}': tokens`);
          await ctx.decode({ tokens });
          const e = l2Normalize(ctx.getEmbeddingsSeq(0));
          assert.equal(e.length, c.embedding.length);
          let dot = 0;
          let nr = 0;
          for (let i = 0; i < e.length; i++) {
            dot += e[i] * c.embedding[i];
            nr += c.embedding[i] ** 2;
          }
          const cos = dot / Math.sqrt(nr);
          cosines.push(cos.toFixed(7));
          assert.ok(cos >= 0.9999, `${rel} '${c.prompt}': cosine ${cos}`);
        }
        process.stdout.write(`# ${label} ${rel}: cosines ${cosines.join(', ')}\n`);
      } finally {
        ctx.free();
        model.free();
      }
    });
  }
}
