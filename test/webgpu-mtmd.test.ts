// A projector on the WebGPU device: initMultimodal({ use_gpu: true }) (llama.node's default)
// on a model whose devices include WebGPU0 puts the encoder's weights and graph there (ops the
// device lacks run on the CPU), as clip.cpp takes the first GPU backend. The shared gemma3
// pair (../shared/fixtures/mtmd) with an image: the first token's top-10 log-probabilities
// relative to the top-1 within 0.05 of llama.cpp's (gemma3.ref.json) and within 0.02 of the
// same model with use_gpu: false, whose bits differ (the encoder did run elsewhere).
// The CLI: `run --device webgpu -ngl 99 --mmproj` puts it there too, `--no-mmproj-offload`
// (llama.cpp's flag) keeps it on the CPU.
// Skips without a WebGPU adapter (SwiftShader in CI) or without ../shared.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { loadModel } from '../src/api/index.js';
import { cpuDevice } from '../src/backends/cpu/index.js';
import { missingShared, REPO_ROOT, sharedPath } from './helpers/shared.js';
import { webGpuDevice } from './helpers/webgpu.js';

const dev = await webGpuDevice();
after(() => cpuDevice.close());
const dir = sharedPath('fixtures/mtmd/gemma3.mmproj.gguf') ? sharedPath('fixtures/mtmd/') : undefined;

test("use_gpu puts the projector on WebGPU0: llama.cpp's first-token probabilities with an image", {
  skip: typeof dev === 'string' ? dev : dir ? false : missingShared('fixtures/mtmd'),
}, async () => {
  const ref = JSON.parse(readFileSync(`${dir}gemma3.ref.json`, 'utf8'));
  const c = ref.cases.find((x: { name: string }) => x.name === 'mid');
  const run = async (use_gpu: boolean) => {
    const ctx = await loadModel({ model: `${dir}gemma3.gguf`, devices: ['webgpu'], n_gpu_layers: 99, n_ctx: 1024 });
    try {
      assert.equal(await ctx.initMultimodal({ path: `${dir}gemma3.mmproj.gguf`, use_gpu }), true);
      const r = await ctx.completion({
        prompt: c.prompt,
        media_paths: c.images.map((f: string) => `${dir}img/${f}`),
        n_predict: 1,
        top_logits: 1000,
      });
      assert.equal(r.tokens_evaluated, c.n_tokens);
      return new Map(r.top_logits!);
    } finally {
      await ctx.release();
    }
  };
  const onGpu = await run(true);
  const onCpu = await run(false);
  assert.notDeepEqual([...onGpu], [...onCpu], 'the same bits with and without use_gpu: the encoder did not move');
  // a listing may name several ids (one text, several tokens): the likeliest of them counts
  const rel = (m: Map<number, number>, ids: number | number[], top: number) =>
    Math.max(...[ids].flat().map((id) => m.get(id) ?? Number.NEGATIVE_INFINITY)) - top;
  const gpuTop = rel(onGpu, c.top10_ids[0], 0);
  const cpuTop = rel(onCpu, c.top10_ids[0], 0);
  c.top10_ids.forEach((ids: number | number[], k: number) => {
    const pRef = Math.log(c.top10[k][1]) - Math.log(c.top10[0][1]);
    const g = rel(onGpu, ids, gpuTop);
    assert.ok(Math.abs(g - pRef) <= 0.05, `rank ${k}: GPU ${g.toFixed(4)} vs llama.cpp ${pRef.toFixed(4)}`);
    assert.ok(Math.abs(g - rel(onCpu, ids, cpuTop)) <= 0.02, `rank ${k}: GPU vs CPU encoder`);
  });
});

test('run --device webgpu -ngl 99 --mmproj: the projector on the GPU, on the CPU with --no-mmproj-offload', {
  skip: typeof dev === 'string' ? dev : dir ? false : missingShared('fixtures/mtmd'),
}, () => {
  const ref = JSON.parse(readFileSync(`${dir}gemma3.ref.json`, 'utf8'));
  const c = ref.cases.find((x: { name: string }) => x.name === 'mid');
  const run = (...extra: string[]) => {
    const args = ['run', '-m', `${dir}gemma3.gguf`, '--mmproj', `${dir}gemma3.mmproj.gguf`, '--image'];
    args.push(`${dir}img/${c.images[0]}`, '-p', c.prompt, '-n', '1', '--json', '--top-logits', '5');
    const r = spawnSync(process.execPath, [`${REPO_ROOT}bin/llama-ts.js`, ...args, ...extra], {
      encoding: 'utf8',
      timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout).top_logits;
  };
  const gpu = run('--device', 'webgpu', '-ngl', '99');
  const cpuProjector = run('--device', 'webgpu', '-ngl', '99', '--no-mmproj-offload');
  assert.notDeepEqual(gpu, cpuProjector, '--no-mmproj-offload changed nothing: the projector did not move');
});
