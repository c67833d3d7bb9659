// `llama-ts quantize` against llama.cpp's llama-quantize.
// - The shared fixtures rand-llama-<TYPE>.gguf are llama-quantize's output from
//   rand-llama-F32.gguf: quantizing that file here must write the same file, byte for byte.
// - Other file types and importance matrices: SHA-256 of the file llama-quantize (built
//   from node-llama-cpp 3.21.1's llama.cpp sources against its libraries, outside the
//   repository) wrote from rand-llama-F32.gguf, pinned.
// - Bad input fails with a message naming the problem, and no output file is left.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { GGMLType, typeName } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';
import type { FileTypeName } from '../src/quantize/ftypes.js';
import { imatrixWeights, readImatrixFile } from '../src/quantize/imatrix-file.js';
import { quantizeModel } from '../src/quantize/model.js';
import { chooseTensorTypes } from '../src/quantize/tensor-types.js';
import { writeImatrices } from './helpers/imatrices.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const F32_REL = 'fixtures/rand-llama-F32.gguf';
const f32 = sharedPath(F32_REL);
const skip = f32 ? false : missingShared(F32_REL);
const dir = mkdtempSync(join(tmpdir(), 'llama-ts-quantize-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const BIN = new URL('../../bin/llama-ts.js', import.meta.url).pathname;
const sha = (path: string) => createHash('sha256').update(readFileSync(path)).digest('hex').slice(0, 32);

const IMATRIX = join(dir, 'im');
if (f32) writeImatrices(f32, IMATRIX);

const FIXTURE_TYPES: FileTypeName[] = [
  'F16',
  'BF16',
  'Q4_0',
  'Q4_1',
  'Q5_0',
  'Q5_1',
  'Q8_0',
  'Q2_K',
  'Q3_K_M',
  'Q4_K_M',
  'Q5_K_M',
  'Q6_K',
  'IQ4_NL',
  'IQ4_XS',
];

test("quantizing rand-llama-F32 writes llama-quantize's fixture files, byte for byte", { skip }, async () => {
  for (const [i, ft] of FIXTURE_TYPES.entries()) {
    const rel = `fixtures/rand-llama-${ft}.gguf`;
    const want = sharedPath(rel);
    if (!want) continue;
    const out = join(dir, `fixture-${ft}.gguf`);
    // thread counts vary: the bytes must not depend on them
    await quantizeModel(f32!, out, { fileType: ft, threads: i % 3 });
    assert.equal(sha(out), sha(want), `${ft}: file differs from ${rel}`);
    rmSync(out);
  }
});

// [file type, importance matrix, SHA-256 (128 bits) of llama-quantize's output]. Every
// file type × importance matrix llama-quantize accepts (without one it refuses Q2_K_S and
// the IQ1/IQ2/IQ3 mixes, and so does llama-ts: checked below).
const PINNED: ReadonlyArray<[FileTypeName, string, string]> = [
  ['F32', 'none', '260b0d2430d6887138bcd5058bcfc0c2'],
  ['F32', 'uniform.gguf', '0e576feca4469cde3a8407b0f4a5b614'],
  ['F32', 'random.gguf', 'eb25fd3f9c7f10a401289d310c05bcab'],
  ['F32', 'random.dat', '92a42d5e4db54a0c9b90e2f409143163'],
  ['F16', 'none', '4f1353b877090f136f395e185817b076'],
  ['F16', 'uniform.gguf', '4518ec1bc866fc77032ec644e74500ff'],
  ['F16', 'random.gguf', '9fda5867069a0670f29bac370e34854b'],
  ['F16', 'random.dat', 'f207048f3d6943895812778462cd7040'],
  ['BF16', 'none', '461ee279f0e6dff991a6d7bbd827766a'],
  ['BF16', 'uniform.gguf', 'abc22731d7971ede94d25fa203439773'],
  ['BF16', 'random.gguf', '981e20ceb66fcc008f6223eb4966600e'],
  ['BF16', 'random.dat', 'fe4393666359afe6214d4fbd2e5b4f49'],
  ['Q4_0', 'none', '7d8e6e020af0050bda787b2950e32d5c'],
  ['Q4_0', 'uniform.gguf', 'e4fa6d5e4a5e0d26abde1e120f0109e2'],
  ['Q4_0', 'random.gguf', 'b98281f5276751846d43ff3dabe245f6'],
  ['Q4_0', 'random.dat', 'd2d93f4b13daac9c90412f9a0ff60a5e'],
  ['Q4_1', 'none', '82a4477caa129eb6ddc48b02cdc0ef6b'],
  ['Q4_1', 'uniform.gguf', '95ac4486b3deb29c634a7ee16b9cdd12'],
  ['Q4_1', 'random.gguf', '0f4b50bbf590a9975b661d2d269218d1'],
  ['Q4_1', 'random.dat', '40f278cc998fd6ed9ff0d70bc3f3229a'],
  ['Q5_0', 'none', '0ff969eaf24a1bd538f2a4a68147b9a8'],
  ['Q5_0', 'uniform.gguf', 'b7bd00614aee66d9071c07938c901bea'],
  ['Q5_0', 'random.gguf', '0dd4c6634b92ec12dc5298c17e3a79a8'],
  ['Q5_0', 'random.dat', '51e6f5873a8b76cb6af0eb30f0356442'],
  ['Q5_1', 'none', '0b4c9a693124e2b7b86513454e3803bb'],
  ['Q5_1', 'uniform.gguf', 'e34bbcea3eba99dc6b6c327d5128dc49'],
  ['Q5_1', 'random.gguf', '4455e3a1c29253d06395d202c720756d'],
  ['Q5_1', 'random.dat', '5e27bdddcd8ccd53eb1a8c709a71294d'],
  ['Q8_0', 'none', '6ee8d1954bf6199d8cb280bcf62f02d0'],
  ['Q8_0', 'uniform.gguf', '9c5ad06a0042e866495f413b01639f15'],
  ['Q8_0', 'random.gguf', '83358b4bbb729db5edfc0e91e8fc183f'],
  ['Q8_0', 'random.dat', '085b46c42ad7ebc259f89e9967b9edea'],
  ['Q2_K', 'none', '9c9d09a12eb43048497f5b01b99d7429'],
  ['Q2_K', 'uniform.gguf', 'e743ab16fa17640c1196206234a5f09e'],
  ['Q2_K', 'random.gguf', '28fff622c3c9fa53cc16f7b27a42b9fb'],
  ['Q2_K', 'random.dat', 'ac86b1ede747e3716620647d4e0b3ce3'],
  ['Q2_K_S', 'uniform.gguf', '83100dd70b8e9a6f459d58729db1516a'],
  ['Q2_K_S', 'random.gguf', '01aac50f6152c969de2f25592fcd85b5'],
  ['Q2_K_S', 'random.dat', 'b1fb4670f02186265b1d770cc1940c78'],
  ['Q3_K_S', 'none', '66388a84a953e6d5b7d4c94c578be38b'],
  ['Q3_K_S', 'uniform.gguf', 'e5e3e544dfc38db8786f32e1b7e57d86'],
  ['Q3_K_S', 'random.gguf', '769ff025b0b3be15f0e3abe45cedc903'],
  ['Q3_K_S', 'random.dat', 'e79c2b0a77fa60ccc0b20fa8a06cfe6c'],
  ['Q3_K_M', 'none', '851a20ef24bc8734eb15453f53d9c67f'],
  ['Q3_K_M', 'uniform.gguf', 'f0851f4e370539cd91ca08a91714b125'],
  ['Q3_K_M', 'random.gguf', '845a2becb2aad24bd2ad03bf077270ec'],
  ['Q3_K_M', 'random.dat', '51c31e3183aea25962338f25fc175530'],
  ['Q3_K_L', 'none', 'ebf69954b2b26e22a741818cc72a130e'],
  ['Q3_K_L', 'uniform.gguf', '558e74f4ccd8469e6f35e232d4097f05'],
  ['Q3_K_L', 'random.gguf', 'fade56f08262fefa667e4bf918fa8144'],
  ['Q3_K_L', 'random.dat', 'e0bc131aff45f6489205598a1e2725e4'],
  ['Q4_K_S', 'none', 'dac0e9d0ecf5894f754db70c0349cd42'],
  ['Q4_K_S', 'uniform.gguf', '53e03b6c2eb3ef7167a62f12a03421fe'],
  ['Q4_K_S', 'random.gguf', 'aeea60f387641b921287f32c471187a6'],
  ['Q4_K_S', 'random.dat', '8fc3685f33c8b93a5a01f2c36e637688'],
  ['Q4_K_M', 'none', 'fcc7bff75af3c636248b19d52d6886a4'],
  ['Q4_K_M', 'uniform.gguf', '1eb1963ff194f1ea1e4649ca51a6a358'],
  ['Q4_K_M', 'random.gguf', '407c17edc87eb0b45b3504a8ed3b4eda'],
  ['Q4_K_M', 'random.dat', 'ada19ab899f39aa47e9917a0c93c6bcc'],
  ['Q5_K_S', 'none', 'a62990650ac233821265d42a6d0a8ebb'],
  ['Q5_K_S', 'uniform.gguf', '50601f92144c42aab2c166776a6c5634'],
  ['Q5_K_S', 'random.gguf', 'c172951670d0c19d057bb450c5e75e1a'],
  ['Q5_K_S', 'random.dat', '58a1c2d095447727d20516a51e2d1056'],
  ['Q5_K_M', 'none', '36cb4a2cdd3c7f616c872800e484e529'],
  ['Q5_K_M', 'uniform.gguf', '79918ff7c84b2264faebf48142e4ac8f'],
  ['Q5_K_M', 'random.gguf', '1f485ec351136c86de8049ee99eff068'],
  ['Q5_K_M', 'random.dat', 'a3052c7a3baacc34c230281c79e72ebe'],
  ['Q6_K', 'none', '2d538a535afc9c72ae2daa0a69cd7023'],
  ['Q6_K', 'uniform.gguf', '24a092dc8e7adc3c869a8116fce0d8dc'],
  ['Q6_K', 'random.gguf', '75ec41958ea26d53e964cc7847580837'],
  ['Q6_K', 'random.dat', '5377450c15d0b07ec6a373b41fe8c2e9'],
  ['IQ4_NL', 'none', '7cd8a7be0ac35b567e81eb34d156c811'],
  ['IQ4_NL', 'uniform.gguf', '0e6f28d2850136c8d2fcd0969375b331'],
  ['IQ4_NL', 'random.gguf', '2d2e699e320073dbe2c452077fd29241'],
  ['IQ4_NL', 'random.dat', '986dc84faa9305563aff6ea0d91d62f7'],
  ['IQ4_XS', 'none', 'df220aad2881497946a46eb311900b41'],
  ['IQ4_XS', 'uniform.gguf', '7ade76edcc839eb8bad7c214bc009048'],
  ['IQ4_XS', 'random.gguf', 'e8ded83862de3924c0cc0ef789eacb07'],
  ['IQ4_XS', 'random.dat', '69b543f55a2350c189ef01a6f9d16309'],
  ['TQ1_0', 'none', '106a77b00727cfb6f55da47ccb023823'],
  ['TQ1_0', 'uniform.gguf', '4424e7454f0e316fedfe495eb863cb83'],
  ['TQ1_0', 'random.gguf', '19f9bdfad44c68e6c3be6cf5dc58e81c'],
  ['TQ1_0', 'random.dat', '71725432dbb242391ce211d9441f259d'],
  ['TQ2_0', 'none', 'f830344f0639d3038f115b4df9960ec5'],
  ['TQ2_0', 'uniform.gguf', '27aca0cd3e9b573b4833e9bf06bb3c90'],
  ['TQ2_0', 'random.gguf', '5b9df76a89f04c346a2707fd1c5d7f08'],
  ['TQ2_0', 'random.dat', 'b5c294ba51e1e62799f7e9b83affafa1'],
  ['IQ3_XXS', 'uniform.gguf', '0e05905d4ee937ec0a3d822cb8a1360e'],
  ['IQ3_XXS', 'random.gguf', 'cadd95f375f4c8530ffe8b29d3a817ca'],
  ['IQ3_XXS', 'random.dat', '2384441b1ee2994ee98bcbe3fb186166'],
  ['IQ3_XS', 'uniform.gguf', 'ba3a9f38475c14b00d77d137acf41644'],
  ['IQ3_XS', 'random.gguf', '154589895b16a3f0b01f6c8ff295a351'],
  ['IQ3_XS', 'random.dat', 'c6d9ee153155b253ef2b4f978692407d'],
  ['IQ3_S', 'none', '8f6b02b3b663268cd7d6f8dcc3264ac4'],
  ['IQ3_S', 'uniform.gguf', 'ca4255c25e2231555f1e82ea06662f37'],
  ['IQ3_S', 'random.gguf', '81126557e853c6181edd170c2583a2a8'],
  ['IQ3_S', 'random.dat', 'f54950b3f315cbcd834b905e3a7bbedb'],
  ['IQ3_M', 'none', '239c2ff6508fb79a3a41924ad240516c'],
  ['IQ3_M', 'uniform.gguf', '01a6a6bc25fc24874150cf624d8dc2fd'],
  ['IQ3_M', 'random.gguf', '14bff8dc2119d72162d510e6d92c0050'],
  ['IQ3_M', 'random.dat', '2dedc5df75c77ab59fed84bc6a1439b6'],
  ['IQ2_XXS', 'uniform.gguf', '21ea202fcf332aef36ded2f7ae590be4'],
  ['IQ2_XXS', 'random.gguf', '8b0c7cd83c5654145ba813c79e32a6eb'],
  ['IQ2_XXS', 'random.dat', '73b4a042ea4a411b311b3b34ea4960b7'],
  ['IQ2_XS', 'uniform.gguf', '7425ce928ee7ea57a3b979cc5c5abdc7'],
  ['IQ2_XS', 'random.gguf', '8d79e117102a1425b85bd9e3add9bb72'],
  ['IQ2_XS', 'random.dat', 'e69de2d28d1f48bc067f9ce1ae98cdc8'],
  ['IQ2_S', 'uniform.gguf', '377be1851e688cdf9a6c6740c1c07f0f'],
  ['IQ2_S', 'random.gguf', 'd0d70d3b5ab3c3cc439f77bdcb8fc137'],
  ['IQ2_S', 'random.dat', 'af395d174dfc3de6ce98460e12b66031'],
  ['IQ2_M', 'uniform.gguf', '3d1ae38dc642ed78d757069f08d93bad'],
  ['IQ2_M', 'random.gguf', 'c4e62635634bb781a96773e9fa62f51d'],
  ['IQ2_M', 'random.dat', '06cbc2dadecd19c524a200d34e39c78e'],
  ['IQ1_S', 'uniform.gguf', '5758fc693a6c5b680d0186cd780490e7'],
  ['IQ1_S', 'random.gguf', '9e217a69c29ffe32a915a49696a8ffc0'],
  ['IQ1_S', 'random.dat', '122be3a04745fd5ebdc2f652cdac7cc4'],
  ['IQ1_M', 'uniform.gguf', '4b95fa6c9b05c65e07bd34b32f696d2b'],
  ['IQ1_M', 'random.gguf', 'cc5a5d1e0106a7eaf0e5f8383b59c62d'],
  ['IQ1_M', 'random.dat', '3430a02deb932a9fb4c81cd6a615d62e'],
];

// By default: every file type but the IQ1/IQ2/IQ3 mixes once, and each importance-matrix
// form on a few (the quantizers' own bytes are checked on every type and form in
// quants-imatrix.test.ts); LLAMA_TS_SLOW_TESTS=1 runs every pin (minutes).
const ALL = process.env.LLAMA_TS_SLOW_TESTS === '1';
const IQ_MIX = /^IQ[123]_/;
const SAMPLE = new Set([
  'Q4_K_M random.gguf',
  'Q4_0 random.dat',
  'IQ4_XS uniform.gguf',
  'Q6_K random.gguf',
  'Q2_K_S random.gguf',
]);
const chosen = PINNED.filter(
  ([ft, im], i) =>
    ALL ||
    SAMPLE.has(`${ft} ${im}`) ||
    (!IQ_MIX.test(ft) && !FIXTURE_TYPES.includes(ft) && PINNED.findIndex((p) => p[0] === ft) === i),
);

test('other file types and importance matrices: the files llama-quantize writes', { skip }, async () => {
  for (const [ft, im, hash] of chosen) {
    const out = join(dir, `pinned-${ft}-${im}.gguf`);
    const imatrix = im === 'none' ? undefined : readImatrixFile(`${IMATRIX}-${im}`);
    await quantizeModel(f32!, out, {
      fileType: ft,
      threads: 2,
      ...(imatrix ? { imatrix, imatrixPath: `/work/scratch-quant/im-${im}` } : {}),
    });
    assert.equal(sha(out), hash, `${ft} with imatrix ${im}`);
    rmSync(out);
  }
});

test('the CLI: IN OUT TYPE writes the file; errors are clear and leave nothing behind', { skip }, () => {
  const out = join(dir, 'cli-q8.gguf');
  const ok = spawnSync(process.execPath, [BIN, 'quantize', f32!, out, 'q8_0', '2'], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stderr, /quantized .* as Q8_0/);
  assert.equal(sha(out), sha(sharedPath('fixtures/rand-llama-Q8_0.gguf') ?? out));
  const run = (...args: string[]) => spawnSync(process.execPath, [BIN, 'quantize', ...args], { encoding: 'utf8' });

  const bad = run(f32!, join(dir, 'x.gguf'), 'Q9_Z');
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /unknown file type 'Q9_Z'/);

  const same = run(f32!, f32!, 'Q4_0');
  assert.equal(same.status, 1);
  assert.match(same.stderr, /input and output files are the same/);

  const requant = run(out, join(dir, 'r.gguf'), 'Q4_0');
  assert.equal(requant.status, 1);
  assert.match(requant.stderr, /already Q8_0: requantizing is disabled \(--allow-requantize\)/);
  const allowed = run('--allow-requantize', out, join(dir, 'r.gguf'), 'Q4_0');
  assert.equal(allowed.status, 0, allowed.stderr);

  const low = run(f32!, join(dir, 'iq2.gguf'), 'IQ2_XXS');
  assert.equal(low.status, 1);
  assert.match(low.stderr, /requires an importance matrix .*tensor blk\.0\.attn_k\.weight gets type IQ2_XXS/);
  assert.equal(existsSync(join(dir, 'iq2.gguf')), false);

  const tt = run('--tensor-type', 'attn_q=q9', f32!, join(dir, 'y.gguf'), 'Q4_0');
  assert.equal(tt.status, 2);
  assert.match(tt.stderr, /--tensor-type: unknown ggml type 'q9'/);

  const noim = run('--imatrix', join(dir, 'nope.gguf'), f32!, join(dir, 'z.gguf'), 'Q4_K_M');
  assert.equal(noim.status, 1);
  assert.match(noim.stderr, /nope\.gguf/);
});

test('options: --pure, --output-tensor-type, --token-embedding-type, --tensor-type, --leave-output-tensor', {
  skip,
}, async () => {
  const out = join(dir, 'opts.gguf');
  const typesOf = () => {
    const f = openGGUF(out);
    const m = new Map(f.tensors.map((t) => [t.name, t.type]));
    f.close();
    return m;
  };
  await quantizeModel(f32!, out, {
    fileType: 'Q4_K_M',
    pure: true,
    outputTensorType: GGMLType.Q8_0,
    tokenEmbeddingType: GGMLType.F16,
    tensorTypes: [['attn_v', GGMLType.Q5_0]],
  });
  let t = typesOf();
  assert.equal(t.get('output.weight'), GGMLType.Q8_0);
  assert.equal(t.get('token_embd.weight'), GGMLType.F16);
  assert.equal(t.get('blk.0.attn_v.weight'), GGMLType.Q5_0);
  assert.equal(t.get('blk.1.ffn_down.weight'), GGMLType.Q4_K); // pure: no Q6_K layers
  assert.equal(t.get('blk.0.attn_norm.weight'), GGMLType.F32);
  await quantizeModel(f32!, out, { fileType: 'Q4_0', leaveOutputTensor: true });
  t = typesOf();
  assert.equal(t.get('output.weight'), GGMLType.F32);
  assert.equal(t.get('blk.0.attn_q.weight'), GGMLType.Q4_0);
});

test('imatrix files: GGUF and legacy .dat read back to the same weights', { skip }, () => {
  const g = readImatrixFile(`${IMATRIX}-random.gguf`);
  const d = readImatrixFile(`${IMATRIX}-random.dat`);
  assert.equal(g.legacy, false);
  assert.equal(d.legacy, true);
  assert.deepEqual(g.datasets, ['synthetic.txt']);
  assert.deepEqual(d.datasets, ['synthetic.txt']);
  assert.equal(g.chunkCount, 2);
  assert.equal(d.chunkCount, 2);
  assert.equal(g.chunkSize, 512);
  const wg = imatrixWeights(g);
  const wd = imatrixWeights(d);
  assert.equal(wg.size, 14); // 7 tensors in each of 2 blocks
  for (const [name, w] of wg) {
    const v = wd.get(name)!;
    for (let i = 0; i < w.length; i++) assert.ok(Math.abs(w[i]! - v[i]!) <= 1e-6 * Math.abs(w[i]!), name);
  }
  const bad = join(dir, 'bad.dat');
  writeFileSync(bad, Buffer.from([2, 0, 0, 0, 5, 0, 0, 0, 97]));
  assert.throws(() => readImatrixFile(bad), /bad\.dat: truncated at byte 8 while reading the name of entry 1/);
});

// The tensor types llama-quantize chose for the low-bit mixes (with an importance matrix),
// as "tensor:type" for rand-llama-F32's 2-D tensors.
const MIX_TABLES: ReadonlyArray<[FileTypeName, string]> = [
  [
    'IQ3_XXS',
    'output:Q5_K token_embd:IQ3_S blk.0.attn_k:IQ2_S blk.0.attn_output:IQ3_S blk.0.attn_q:IQ2_S blk.0.attn_v:IQ3_XXS blk.0.ffn_down:IQ3_XXS blk.0.ffn_gate:IQ3_XXS blk.0.ffn_up:IQ3_XXS blk.1.attn_k:IQ2_S blk.1.attn_output:IQ3_S blk.1.attn_q:IQ2_S blk.1.attn_v:IQ3_XXS blk.1.ffn_down:IQ3_XXS blk.1.ffn_gate:IQ3_XXS blk.1.ffn_up:IQ3_XXS',
  ],
  [
    'IQ3_XS',
    'output:Q6_K token_embd:IQ3_S blk.0.attn_k:IQ3_XXS blk.0.attn_output:IQ3_S blk.0.attn_q:IQ3_XXS blk.0.attn_v:IQ3_S blk.0.ffn_down:IQ3_S blk.0.ffn_gate:IQ3_XXS blk.0.ffn_up:IQ3_XXS blk.1.attn_k:IQ3_XXS blk.1.attn_output:IQ3_S blk.1.attn_q:IQ3_XXS blk.1.attn_v:IQ3_S blk.1.ffn_down:IQ3_S blk.1.ffn_gate:IQ3_S blk.1.ffn_up:IQ3_S',
  ],
  [
    'IQ3_S',
    'output:Q6_K token_embd:IQ3_S blk.0.attn_k:IQ3_S blk.0.attn_output:IQ3_S blk.0.attn_q:IQ3_S blk.0.attn_v:IQ3_S blk.0.ffn_down:IQ3_S blk.0.ffn_gate:IQ3_S blk.0.ffn_up:IQ3_S blk.1.attn_k:IQ3_S blk.1.attn_output:IQ3_S blk.1.attn_q:IQ3_S blk.1.attn_v:IQ3_S blk.1.ffn_down:IQ3_S blk.1.ffn_gate:IQ3_S blk.1.ffn_up:IQ3_S',
  ],
  [
    'IQ3_M',
    'output:Q6_K token_embd:IQ3_S blk.0.attn_k:IQ3_S blk.0.attn_output:Q4_K blk.0.attn_q:IQ3_S blk.0.attn_v:Q4_K blk.0.ffn_down:IQ3_S blk.0.ffn_gate:IQ3_S blk.0.ffn_up:IQ3_S blk.1.attn_k:IQ3_S blk.1.attn_output:Q4_K blk.1.attn_q:IQ3_S blk.1.attn_v:Q4_K blk.1.ffn_down:IQ3_S blk.1.ffn_gate:IQ3_S blk.1.ffn_up:IQ3_S',
  ],
  [
    'IQ2_XXS',
    'output:Q5_K token_embd:Q2_K blk.0.attn_k:IQ2_XXS blk.0.attn_output:IQ2_XXS blk.0.attn_q:IQ2_XXS blk.0.attn_v:Q2_K blk.0.ffn_down:IQ2_XXS blk.0.ffn_gate:IQ2_XXS blk.0.ffn_up:IQ2_XXS blk.1.attn_k:IQ2_XXS blk.1.attn_output:IQ2_XXS blk.1.attn_q:IQ2_XXS blk.1.attn_v:Q2_K blk.1.ffn_down:IQ2_XXS blk.1.ffn_gate:IQ2_XXS blk.1.ffn_up:IQ2_XXS',
  ],
  [
    'IQ2_XS',
    'output:Q5_K token_embd:Q2_K blk.0.attn_k:IQ2_XS blk.0.attn_output:IQ2_XS blk.0.attn_q:IQ2_XS blk.0.attn_v:Q2_K blk.0.ffn_down:IQ2_XS blk.0.ffn_gate:IQ2_XS blk.0.ffn_up:IQ2_XS blk.1.attn_k:IQ2_XS blk.1.attn_output:IQ2_XS blk.1.attn_q:IQ2_XS blk.1.attn_v:Q2_K blk.1.ffn_down:IQ2_XS blk.1.ffn_gate:IQ2_XS blk.1.ffn_up:IQ2_XS',
  ],
  [
    'IQ2_S',
    'output:Q5_K token_embd:IQ3_S blk.0.attn_k:IQ2_XS blk.0.attn_output:IQ3_S blk.0.attn_q:IQ2_XS blk.0.attn_v:IQ3_S blk.0.ffn_down:IQ2_XS blk.0.ffn_gate:IQ2_XS blk.0.ffn_up:IQ2_XS blk.1.attn_k:IQ2_XS blk.1.attn_output:IQ3_S blk.1.attn_q:IQ2_XS blk.1.attn_v:IQ3_S blk.1.ffn_down:IQ2_XS blk.1.ffn_gate:IQ2_XS blk.1.ffn_up:IQ2_XS',
  ],
  [
    'IQ2_M',
    'output:Q5_K token_embd:IQ3_S blk.0.attn_k:IQ2_S blk.0.attn_output:IQ3_S blk.0.attn_q:IQ2_S blk.0.attn_v:IQ3_S blk.0.ffn_down:IQ2_S blk.0.ffn_gate:IQ2_S blk.0.ffn_up:IQ2_S blk.1.attn_k:IQ2_S blk.1.attn_output:IQ3_S blk.1.attn_q:IQ2_S blk.1.attn_v:IQ3_S blk.1.ffn_down:IQ2_S blk.1.ffn_gate:IQ2_S blk.1.ffn_up:IQ2_S',
  ],
  [
    'IQ1_S',
    'output:Q5_K token_embd:Q2_K blk.0.attn_k:IQ1_S blk.0.attn_output:IQ2_XXS blk.0.attn_q:IQ1_S blk.0.attn_v:Q2_K blk.0.ffn_down:IQ1_S blk.0.ffn_gate:IQ1_S blk.0.ffn_up:IQ1_S blk.1.attn_k:IQ1_S blk.1.attn_output:IQ2_XXS blk.1.attn_q:IQ1_S blk.1.attn_v:Q2_K blk.1.ffn_down:IQ1_S blk.1.ffn_gate:IQ1_S blk.1.ffn_up:IQ1_S',
  ],
  [
    'IQ1_M',
    'output:Q5_K token_embd:Q2_K blk.0.attn_k:IQ1_M blk.0.attn_output:IQ2_XXS blk.0.attn_q:IQ1_M blk.0.attn_v:Q2_K blk.0.ffn_down:IQ1_M blk.0.ffn_gate:IQ1_M blk.0.ffn_up:IQ1_M blk.1.attn_k:IQ1_M blk.1.attn_output:IQ2_XXS blk.1.attn_q:IQ1_M blk.1.attn_v:Q2_K blk.1.ffn_down:IQ1_M blk.1.ffn_gate:IQ1_M blk.1.ffn_up:IQ1_M',
  ],
  [
    'Q2_K_S',
    'output:Q6_K token_embd:Q2_K blk.0.attn_k:Q2_K blk.0.attn_output:Q2_K blk.0.attn_q:Q2_K blk.0.attn_v:Q2_K blk.0.ffn_down:Q2_K blk.0.ffn_gate:Q2_K blk.0.ffn_up:Q2_K blk.1.attn_k:Q2_K blk.1.attn_output:Q2_K blk.1.attn_q:Q2_K blk.1.attn_v:Q2_K blk.1.ffn_down:Q2_K blk.1.ffn_gate:Q2_K blk.1.ffn_up:Q2_K',
  ],
  [
    'TQ1_0',
    'output:Q6_K token_embd:Q4_K blk.0.attn_k:TQ1_0 blk.0.attn_output:TQ1_0 blk.0.attn_q:TQ1_0 blk.0.attn_v:TQ1_0 blk.0.ffn_down:TQ1_0 blk.0.ffn_gate:TQ1_0 blk.0.ffn_up:TQ1_0 blk.1.attn_k:TQ1_0 blk.1.attn_output:TQ1_0 blk.1.attn_q:TQ1_0 blk.1.attn_v:TQ1_0 blk.1.ffn_down:TQ1_0 blk.1.ffn_gate:TQ1_0 blk.1.ffn_up:TQ1_0',
  ],
  [
    'TQ2_0',
    'output:Q6_K token_embd:Q4_K blk.0.attn_k:TQ2_0 blk.0.attn_output:TQ2_0 blk.0.attn_q:TQ2_0 blk.0.attn_v:TQ2_0 blk.0.ffn_down:TQ2_0 blk.0.ffn_gate:TQ2_0 blk.0.ffn_up:TQ2_0 blk.1.attn_k:TQ2_0 blk.1.attn_output:TQ2_0 blk.1.attn_q:TQ2_0 blk.1.attn_v:TQ2_0 blk.1.ffn_down:TQ2_0 blk.1.ffn_gate:TQ2_0 blk.1.ffn_up:TQ2_0',
  ],
];

test('low-bit mixes: the per-tensor types llama-quantize chose; without an imatrix they are refused', {
  skip,
}, async () => {
  const f = openGGUF(f32!);
  const model = { arch: 'llama', nLayer: 2, nHead: 4, nHeadKv: 2 };
  try {
    for (const [ft, want] of MIX_TABLES) {
      const types = chooseTensorTypes(model, f.tensors, ft, { hasImatrix: true });
      const got = [...types]
        .filter(([name]) => f.tensor(name)!.dims.length > 1)
        .map(([name, c]) => `${name.replace('.weight', '')}:${typeName(c.type)}`)
        .join(' ');
      assert.equal(got, want, ft);
      // llama-quantize refuses these without an importance matrix (IQ3_S and IQ3_M need none)
      if (ft !== 'IQ3_S' && ft !== 'IQ3_M' && ft !== 'TQ1_0' && ft !== 'TQ2_0') {
        await assert.rejects(
          quantizeModel(f32!, join(dir, 'never.gguf'), { fileType: ft }),
          /requires an importance matrix/,
        );
      }
    }
  } finally {
    f.close();
  }
});
