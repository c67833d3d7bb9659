// Every quantizer against ggml_quantize_chunk, with and without an importance matrix.
// Pinned: SHA-256 (first 128 bits) of the bytes ggml wrote (node-llama-cpp 3.21.1's
// libggml-base.so, called by a harness outside the repository: the library cannot run
// here) for each type × importance matrix (none, where ggml allows it; all ones; random)
// × input:
// - gauss: gaussianRows(16, 11) as 4 rows of 1024;
// - edge: edgeCaseRows(7), 80 rows of 256 quantized one by one (zeros, constants,
//   outliers, subnormal and huge magnitudes). ggml stops on a failed GGML_ASSERT for
//   some (the row indices listed: non-finite weights from x² overflowing); those must
//   throw here and are left out of the hash;
// - attn_k, ffn_down: rows of rand-llama-F32.gguf's blk.0.attn_k (128 x 256) and
//   blk.1.ffn_down (the first 16 x 768), skipped without ../shared.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { quantizeRows, requiresImatrix } from '../src/ggml/quants/index.js';
import { GGMLType, rowSize, typeByName } from '../src/ggml/types.js';
import { openGGUF } from '../src/gguf/index.js';
import { edgeCaseRows, gaussianRows, randomImatrix } from './helpers/quant-inputs.js';
import { missingShared, sharedPath } from './helpers/shared.js';

type Kind = 'none' | 'uniform' | 'random';
// [type, imatrix, edge rows ggml aborts on, gauss, edge, attn_k, ffn_down]
const PINS: ReadonlyArray<[string, Kind, number[], string, string, string, string]> = [
  [
    'Q4_0',
    'none',
    [],
    'fa61d3307a612b256f16b15f5940651e',
    '793156a202af3033008c165c90f7c5a5',
    '544eab5d2cb2742fbc062d3a6812542f',
    '5e4e572c1f6ea77de1163b5c501b74bc',
  ],
  [
    'Q4_0',
    'uniform',
    [],
    '5d2f3c72438125e831820d9266592387',
    '9e0c76d5eff3b2ded6d038574cf7e46c',
    'eccd59e91bb9a1cae100f1d1313f8941',
    '2efbf702b69f5b582e7fe393583cf88d',
  ],
  [
    'Q4_0',
    'random',
    [],
    '286f7fef468950ea7b54d2f7a12cb94f',
    '3bc54b91ee0c5f8be231bfbb14fe001b',
    '46f361eacdc4f81803567ba35036e724',
    '8075f310eed60bca0c566a6899664e03',
  ],
  [
    'Q4_1',
    'none',
    [],
    '5b33ec5765e92e5691b645c21d0637f7',
    '52cbc7930a3c39880af9fccb526c258a',
    '8d14665fc949a81c4572ed99c2a1a669',
    'e6dbd4049955d00c0ec5627231b26159',
  ],
  [
    'Q4_1',
    'uniform',
    [],
    'f5dbb1ad161057ea2f7e37c7c8c67203',
    '893f08d56d0eae8b9c76845b97e9d1f7',
    'd0d1c27cc18ca545bd6b3654b3514f60',
    '6158085d7b91b06c60edd00cfecf62f7',
  ],
  [
    'Q4_1',
    'random',
    [],
    'c6d42048bac0b01f5f31d4b75e23eaa2',
    'e966fd1d505a33cb6f9552d5a0324a6d',
    '491e0bd9096757d32ba7fb15e2e1a0cb',
    'adf9b6b4432fb5c8f36d6ef34a335dbb',
  ],
  [
    'Q5_0',
    'none',
    [],
    'b1a68d3afeec1d4a5ea91acfedb51bbc',
    '8c96f49228fbf8f19ee11cf1e1bce781',
    'd3901a6117867db9c802429e7660ba0a',
    'f649739ca197e74b078c075ed13b41c3',
  ],
  [
    'Q5_0',
    'uniform',
    [],
    '61edb46066d0850a77e2192cdac5cba7',
    '1b17953cb9ae70494f17f0cc03030ad3',
    '4fd028414a7e606bfb83988187327645',
    'dc1ca2a9f759e791acb5872e047d60e9',
  ],
  [
    'Q5_0',
    'random',
    [],
    'c65eca271398d7d90caa1b3acf4d2838',
    '7935584eb028a8a9e1e587d978f52a45',
    'cf52c693cef9ae408dc88b94fbb26cbc',
    'd05ee0cd649ca6cf9b12b378e9a1326f',
  ],
  [
    'Q5_1',
    'none',
    [],
    '93bff8e00961c0e282c41108c1973cee',
    '2f14f849a933fee56b807fcad5a339e3',
    '676dc03356e1234a8f0440e750bac130',
    '8b056a158cb492099593bc8a0a9132fd',
  ],
  [
    'Q5_1',
    'uniform',
    [],
    '6305759c47ebd948ea1adee507f4a639',
    '1fbbe7839dcb88f9246c229b19db8804',
    '9cdc603cc5c0d34bef42e835c3155f69',
    'e3212f1932b299ada5879561d38146ba',
  ],
  [
    'Q5_1',
    'random',
    [],
    '8a0b6722e16e952649cecb1070f38963',
    '3f06c027774e7d5a43f6e2a888e9b2c7',
    '40bec32774fb18c31b96241d4c2e4a99',
    '3e797bec26149f66fdc902b3367b9b1b',
  ],
  [
    'Q8_0',
    'none',
    [],
    '1f4e0bac49af7efa1076ae6c1c383bf4',
    'f010ce13ed6647cf06cc4fb4fc53622a',
    'f1f18c8cfd9e33223270cbb55d2f44d6',
    '04ba932455038629f4c38aa5313023e1',
  ],
  [
    'Q8_0',
    'uniform',
    [],
    '1f4e0bac49af7efa1076ae6c1c383bf4',
    'f010ce13ed6647cf06cc4fb4fc53622a',
    'f1f18c8cfd9e33223270cbb55d2f44d6',
    '04ba932455038629f4c38aa5313023e1',
  ],
  [
    'Q8_0',
    'random',
    [],
    '1f4e0bac49af7efa1076ae6c1c383bf4',
    'f010ce13ed6647cf06cc4fb4fc53622a',
    'f1f18c8cfd9e33223270cbb55d2f44d6',
    '04ba932455038629f4c38aa5313023e1',
  ],
  [
    'Q2_K',
    'none',
    [],
    'e260cc98ad60a963a501fb8b9a49a521',
    '7bac51fe78d6beef520c19db5c381062',
    '886cf2cb67019cdc7124fb10b3b29b23',
    '62d52ddb72f395e5d0c804d7f3d049ee',
  ],
  [
    'Q2_K',
    'uniform',
    [],
    '72a21afb0a5fac60bd526ae9ec204b0a',
    '575d2afabeb7683857b676434e3e133f',
    'c37f1d7404e8280496014ffb7c477dcb',
    'e0d7b4dac9b77893092c4879ec9af8a8',
  ],
  [
    'Q2_K',
    'random',
    [],
    '6c9b2a27c695a15ede119b94df0b1e39',
    '339a918c13ebb1d501658ccc8eb25d04',
    '672445d8c89ccf34c832d987c1e57b06',
    '41f021cada6c16eea62acc5265625ced',
  ],
  [
    'Q3_K',
    'none',
    [],
    '20a542f4056d21ae90e4bec1285ca6f2',
    '9e7c5720c7175a500955264838a92b30',
    '58b4e42a299a3334a386e65a20d9fefc',
    '957bc520140f5e13458b9bbad7b776a7',
  ],
  [
    'Q3_K',
    'uniform',
    [],
    '2243d24a1e5773385b9f49d0ec388eb9',
    '76a9c9206b491a8aff6f5978036477f9',
    'a9a27e8a041b5dff18be63729ee26aca',
    'f180976ae5846e2502d6660d28196adc',
  ],
  [
    'Q3_K',
    'random',
    [],
    '10f4f052c135bf5bb8395e63a0648873',
    '7f97ce380306eb40c4badbd4deb9e6a5',
    'b38ca0cb63164c405ac30fd6169d5045',
    'c6290d9d67bfe12e6831e3cb95a07034',
  ],
  [
    'Q4_K',
    'none',
    [],
    '12573f2a84661b6576e6c36620ba282a',
    '16c92b94cfe475888dd25605488dbb86',
    'f7ce4c6d14e01afd08cb3013a808d4a6',
    '7558b1f04def9be79b450359c6d3f2c6',
  ],
  [
    'Q4_K',
    'uniform',
    [],
    'f1443353ff37eb966f744cc1afa6e919',
    '2924739bf04c73f51159d89c9e0a8563',
    '00ffe8f234d40d6a42c71a0bdaa40d13',
    '0f1df5d46492e2e3626383d4fc28288b',
  ],
  [
    'Q4_K',
    'random',
    [],
    'da959a50ba552a7d23fbfac2fddc8d75',
    'd3f4700dba080ac13f69490287587048',
    'f156b7f9606294e4880efa4da0e50348',
    '8ecb9392945108378c2d30ef281f2cb3',
  ],
  [
    'Q5_K',
    'none',
    [],
    '0bd18c239b87a0cf7003e0d2cc9c89ae',
    'b1fcd1cab0c252910b29416989edfc5f',
    '23ec73358a0fc5aa56d1a19269b08688',
    '99aee5a41224b8a564f6e20add072eb8',
  ],
  [
    'Q5_K',
    'uniform',
    [],
    'eb1d000a6843f4fa95709827a503924a',
    '047f815ed93989f0fb6c83b3a2245aa7',
    'edb394f9d1ea9a3ba8543cebf5290ff2',
    '8e30065d71d8d8f5409c1aae969b520c',
  ],
  [
    'Q5_K',
    'random',
    [],
    'f07f0748b65e145511fc774763ae6152',
    '4cf703c47ea0ac157226d239c9f24b66',
    'e6dc83a615ed37b5f4511f3d4fa030d6',
    'f17983d2a5fc6c7a2bbe578bebb2c902',
  ],
  [
    'Q6_K',
    'none',
    [],
    'e3da7d8147bd1b678843d477da223d51',
    '7de4ef51dbaec9559436e175c46956b5',
    'b13c4cfac32b578c645f13a0f700e8eb',
    '2dc644bea53b715be757fa00dff9b976',
  ],
  [
    'Q6_K',
    'uniform',
    [],
    '2126d4f0cc51c94d1bb3e9e5fbb9ae1f',
    '3574e6da124424e1e2b357723f98b4de',
    'bd2f2d4c8cbd8d2a344671869897b06f',
    '9b93a741acf82b37c4424ed1e9174e05',
  ],
  [
    'Q6_K',
    'random',
    [],
    'ab74ae5e24a7538c66e24834b2fa562f',
    '38c412e08ee41d646c28f62872b19125',
    '926d761a1e5516bff86de11864f438bd',
    '92298f3d80541bf3123184c46c3cb356',
  ],
  [
    'IQ4_NL',
    'none',
    [],
    '5a71b5affcc758b86d96339787622a11',
    '337f86fdea5224c910dbd57102d822aa',
    '98a5d485a77cfc417823604a541ff9aa',
    '83652a55d899ecce9982ca756f8846e1',
  ],
  [
    'IQ4_NL',
    'uniform',
    [],
    '3cedf6e556ac1081bb7edf6a7dcfd407',
    '03f3b10a31fe4153e3acaee11bcff6d6',
    '2f672b3da7f89b3f9fe4447acd102729',
    'f5e67ec188f0bede319f6140e9292da6',
  ],
  [
    'IQ4_NL',
    'random',
    [],
    '370cdd7555ddd164d83b8fdcfc4c2dd0',
    '3fb89e35ba6b5da63dcd82c1c213b060',
    '176155017f09454256194c11228371d6',
    'f106c02dca3f4a2cd7abf45f30d51279',
  ],
  [
    'IQ4_XS',
    'none',
    [],
    '2bc9e039e27c733f241c7ae8eb4af0b4',
    'f50701eacf3cfcc3672310fe13b20744',
    '7a36978dcfbc384bb4d112a971c2bc4e',
    'a33688c5205e959bd85a1811243b83f2',
  ],
  [
    'IQ4_XS',
    'uniform',
    [],
    '7d8100df2fc5eeb93ec8a7c384e3a94d',
    '86709141e2bc18afdf13b34e3c7d5f64',
    '32ec72f757c67996ddb7ca8fee684a0d',
    '7eba7b475bfe6a2b7f8f28e30484f638',
  ],
  [
    'IQ4_XS',
    'random',
    [],
    '7fe6363472003c83570b7b7ce454cd36',
    '61ae799253215b33a110b58bd1de6b0d',
    '60a7d2d239f1c4fd1984ef915c3ba0e4',
    'cd59abdf58f8647f5ac6b69f0724c230',
  ],
  [
    'IQ2_XXS',
    'uniform',
    [],
    'ffdbe566fd67fd96b0109b7c177a70ab',
    '7c3ac750ee93c08fdd64de0baa6bbd94',
    '98fac856332f003fbe5316bda22e638e',
    '122a10db688abeefbd7f990de8af1772',
  ],
  [
    'IQ2_XXS',
    'random',
    [24],
    'e5d89261eeadaa70e1823908f06f87a5',
    '4ce986d0843e9d728d6761c256c0dc06',
    'dcb88a53ec3d57cec5ee8ab3b08af4f7',
    '10d33aedfff6a7302ac2c73d0a910518',
  ],
  [
    'IQ2_XS',
    'uniform',
    [28, 29, 30, 31],
    '3fc9a2acbb3472df7cc262f0100e2376',
    'eb206d6fac7f0ee55f02af88efb1dbd8',
    '56f1979ec24ad30338248799f17d014c',
    'b548ba812eaa5f7d00c86ba93cd61465',
  ],
  [
    'IQ2_XS',
    'random',
    [24, 28, 29, 30, 31],
    '5607213a39987f7ee6303bf53a10dbc1',
    '86f5aed1a1011bb3b397a9e12d590f4e',
    '86ea3d31b63c3acb6e110ea205903b8d',
    '84381af5277a580e6177a253fc05eb06',
  ],
  [
    'IQ2_S',
    'none',
    [24, 25, 26, 27, 28, 29, 30, 31],
    'f2728fd7ef6f8c7d246a59f80b39a25b',
    '178319aaff021b24d2f2a89462febb32',
    'b88e00197a4e5f8b88bd0495e82ffb99',
    'd090654b3073ceb9d8baf580d80b4e63',
  ],
  [
    'IQ2_S',
    'uniform',
    [28, 29, 30, 31],
    'dce6b3944a77814d947ba21c49b95c60',
    '26f9b81481a15d3dd2be3528a2ac3cda',
    '291e3d440535df71b9b2b300342d6a5a',
    'ec4744bd02241804f9b9cba62d8cef4a',
  ],
  [
    'IQ2_S',
    'random',
    [28, 29, 30, 31],
    'cc17ec126562281ef0303688339e3d4d',
    '1d6ce327a67e7392231030dc5518f5a5',
    '68c4c8dbb9acee2feae977bbcabda459',
    '9a132a794a006e492e35a7670c27eef6',
  ],
  [
    'IQ3_XXS',
    'none',
    [24, 25, 26, 27, 28, 29, 30, 31],
    'acc76c7b1a8c2638cf59ed0f2a241ff3',
    '58af9a8b46549e15e8de7ab6d4ef1561',
    'e584c1d3bce6ac9de25d16ca96b2d371',
    'eb0db0c9a3e6d8b466c62ef13d08aacc',
  ],
  [
    'IQ3_XXS',
    'uniform',
    [28, 29, 30, 31],
    '2987d49e0e51639ad30951a3318b5ca7',
    '3064b9661eaa185165dd9a92d5d2ca96',
    '346fa11da09dc62df9bdfd52852209c8',
    '365d268ec530e58afa20f4932818bbfb',
  ],
  [
    'IQ3_XXS',
    'random',
    [28, 29, 30, 31],
    'f57ef697a0acabc3f96b6052cddd31f4',
    'b3b6140bacc732f9f8809d0886fa8fab',
    'c855fe4a96334916306fe8ad9e72cf48',
    'e38c3d3c7ed75a8fe6cc95a6d39d543f',
  ],
  [
    'IQ3_S',
    'none',
    [24, 25, 26, 27, 28, 29, 30, 31],
    '327f9602cec59a4bc80ddbfd782ab643',
    '80b1385467d51bbb0b7b477c07462993',
    'c2002feee51c9d629bcbc6878627029e',
    '5f189f1ddf524b7607454e1f3c9d9e7a',
  ],
  [
    'IQ3_S',
    'uniform',
    [28, 29, 30, 31],
    'f39f48060891abc3881f0dcc98864302',
    '52b549975d3815045b70fc15c158908c',
    'e477b02fb3c5a40cce10e9b80a92d197',
    '7f190c052706813ec49298cd7b2a20a4',
  ],
  [
    'IQ3_S',
    'random',
    [28, 29, 30, 31],
    '56a5798780ca522f9f0c4f1e5cda3311',
    'ea36b06c205c47949eaa8b46c3c231d3',
    '319b23e9add0ab0a2a7c2a61b4b0cca9',
    'f43b44dfb9f6d02b9a85c71a295fde18',
  ],
  [
    'IQ1_S',
    'uniform',
    [30, 31],
    '5d132b7bb51b1fb30461b9eca6bb26c3',
    '26ea19e49356a054898c639a50e773b9',
    'bddb1fcaf7197bcf4aad53aec4ea1fe9',
    'a1b4515d75c644804c0b485d420a4d2d',
  ],
  [
    'IQ1_S',
    'random',
    [30, 31],
    '6479a7688341575d5e5eb4eb94056b8b',
    '89f55aacb2859f972e9b1ab2f347f80a',
    '73b708bdd3c03daa6b2a54260dbf1476',
    '4fb31efa7a5350e6186792e6c6870553',
  ],
  [
    'IQ1_M',
    'none',
    [24, 25, 28, 29, 30, 31],
    'b3bf8a1f2a7935f574a5135573ab9523',
    '3d740ca4b94a167025811371d3d39177',
    '7b7b2789bc25308ecd6b9c5ff52c33e3',
    '362973f2520a83eff61d9f4a21833e00',
  ],
  [
    'IQ1_M',
    'uniform',
    [28, 29, 30, 31],
    '38cf1235d998ea543d9b51b267107122',
    'e0fa08a97954c2dc2519bb154f75575f',
    'e53ea44b80d538b3c06a1fa0ce25a7fb',
    'aacf3da7d59441553876c6e1ac5a80bc',
  ],
  [
    'IQ1_M',
    'random',
    [28, 29, 30, 31],
    'e54791c324efb1ec494d227490cffd8e',
    'f1dd6b02b4a435d2acd780f86ec71fe2',
    'ee493eb6da9d4d02f1f19ce9953fd2db',
    '1a3a8c5d8182c6ef49ebf7b2a55d9a7b',
  ],
  [
    'TQ1_0',
    'none',
    [],
    'ad779cbb60e884178a19bb401932b13a',
    '8b05afe04dcb1a9dbf78e17fbce54d55',
    'a0b5b887407f4e87c067d1e014c94fee',
    '18d7d19b00e333f0c1f4cf2d86e640e8',
  ],
  [
    'TQ1_0',
    'uniform',
    [],
    'ad779cbb60e884178a19bb401932b13a',
    '8b05afe04dcb1a9dbf78e17fbce54d55',
    'a0b5b887407f4e87c067d1e014c94fee',
    '18d7d19b00e333f0c1f4cf2d86e640e8',
  ],
  [
    'TQ1_0',
    'random',
    [],
    'ad779cbb60e884178a19bb401932b13a',
    '8b05afe04dcb1a9dbf78e17fbce54d55',
    'a0b5b887407f4e87c067d1e014c94fee',
    '18d7d19b00e333f0c1f4cf2d86e640e8',
  ],
  [
    'TQ2_0',
    'none',
    [],
    '710a7a172fcc4074562af7c024d9d8e3',
    '2defb0e1b0c658e576395800b480781a',
    '398dffb3bd9ab691f4d60328a4f14d9c',
    'd870a74bd93bbf7df929a17bfcb89fb9',
  ],
  [
    'TQ2_0',
    'uniform',
    [],
    '710a7a172fcc4074562af7c024d9d8e3',
    '2defb0e1b0c658e576395800b480781a',
    '398dffb3bd9ab691f4d60328a4f14d9c',
    'd870a74bd93bbf7df929a17bfcb89fb9',
  ],
  [
    'TQ2_0',
    'random',
    [],
    '710a7a172fcc4074562af7c024d9d8e3',
    '2defb0e1b0c658e576395800b480781a',
    '398dffb3bd9ab691f4d60328a4f14d9c',
    'd870a74bd93bbf7df929a17bfcb89fb9',
  ],
];

function sha(parts: Uint8Array[]): string {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return h.digest('hex').slice(0, 32);
}

function imatrix(kind: Kind, n: number): Float32Array | null {
  if (kind === 'none') return null;
  return kind === 'uniform' ? new Float32Array(n).fill(1) : randomImatrix(n, 99);
}

/** Quantizes `rows` rows of nPerRow one by one: the bytes of those that did not throw, and the indices of those that did. */
function quantizeEach(type: number, x: Float32Array, nPerRow: number, im: Float32Array | null) {
  const rb = rowSize(type, nPerRow);
  const parts: Uint8Array[] = [];
  const threw: number[] = [];
  for (let r = 0; r < x.length / nPerRow; r++) {
    const out = new Uint8Array(rb);
    try {
      quantizeRows(type, x.subarray(r * nPerRow, (r + 1) * nPerRow), out, 1, nPerRow, im);
      parts.push(out);
    } catch {
      threw.push(r);
    }
  }
  return { parts, threw };
}

function quantizeAll(type: number, x: Float32Array, nPerRow: number, im: Float32Array | null): Uint8Array {
  const out = new Uint8Array(rowSize(type, nPerRow) * (x.length / nPerRow));
  quantizeRows(type, x, out, x.length / nPerRow, nPerRow, im);
  return out;
}

const F32_REL = 'fixtures/rand-llama-F32.gguf';
const f32Path = sharedPath(F32_REL);

function fixtureRows(name: string, rows: number): [Float32Array, number] {
  const f = openGGUF(f32Path!);
  try {
    const t = f.tensor(name)!;
    const b = f.readTensorData(t);
    return [new Float32Array(b.buffer, b.byteOffset, t.nElements).slice(0, rows * t.dims[0]!), t.dims[0]!];
  } finally {
    f.close();
  }
}

test('every quantizable type is pinned with each importance matrix it allows', () => {
  const names = new Set(PINS.map((p) => `${p[0]} ${p[1]}`));
  for (const n of [
    'Q4_0',
    'Q4_1',
    'Q5_0',
    'Q5_1',
    'Q8_0',
    'Q2_K',
    'Q3_K',
    'Q4_K',
    'Q5_K',
    'Q6_K',
    'IQ4_NL',
    'IQ4_XS',
  ]) {
    for (const k of ['none', 'uniform', 'random']) assert.ok(names.has(`${n} ${k}`), `${n} ${k}`);
  }
  for (const n of ['IQ2_XXS', 'IQ2_XS', 'IQ2_S', 'IQ3_XXS', 'IQ3_S', 'IQ1_S', 'IQ1_M', 'TQ1_0', 'TQ2_0']) {
    const t = typeByName(n)!.id;
    for (const k of ['uniform', 'random']) assert.ok(names.has(`${n} ${k}`), `${n} ${k}`);
    assert.equal(names.has(`${n} none`), !requiresImatrix(t), `${n} none`);
  }
});

test('IQ2_XXS, IQ2_XS and IQ1_S refuse to quantize without an importance matrix', () => {
  for (const t of [GGMLType.IQ2_XXS, GGMLType.IQ2_XS, GGMLType.IQ1_S]) {
    assert.throws(() => quantizeAll(t, gaussianRows(1, 1), 256, null), /needs an importance matrix/);
  }
});

test("synthetic rows quantize to ggml's bytes (gauss, edge)", () => {
  const gauss = gaussianRows(16, 11);
  const edge = edgeCaseRows(7);
  for (const [name, kind, aborts, gaussHash, edgeHash] of PINS) {
    const type = typeByName(name)!.id;
    const label = `${name} with imatrix ${kind}`;
    assert.equal(sha([quantizeAll(type, gauss, 1024, imatrix(kind, 1024))]), gaussHash, `${label}: gauss`);
    const { parts, threw } = quantizeEach(type, edge, 256, imatrix(kind, 256));
    assert.deepEqual(threw, aborts, `${label}: edge rows that fail`);
    assert.equal(sha(parts), edgeHash, `${label}: edge`);
  }
});

test("fixture rows quantize to ggml's bytes (rand-llama-F32 attn_k, ffn_down)", {
  skip: f32Path ? false : missingShared(F32_REL),
}, () => {
  const [attnK, kRow] = fixtureRows('blk.0.attn_k.weight', 128);
  const [ffnDown, dRow] = fixtureRows('blk.1.ffn_down.weight', 16);
  for (const [name, kind, , , , kHash, dHash] of PINS) {
    const type = typeByName(name)!.id;
    const label = `${name} with imatrix ${kind}`;
    assert.equal(sha([quantizeAll(type, attnK, kRow, imatrix(kind, kRow))]), kHash, `${label}: attn_k`);
    assert.equal(sha([quantizeAll(type, ffnDown, dRow, imatrix(kind, dRow))]), dHash, `${label}: ffn_down`);
  }
});
