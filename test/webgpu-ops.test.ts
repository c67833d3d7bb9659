// The WebGPU device against the reference device: every op harness case whose ops all run
// on it (MUL_MAT, MUL_MAT_ID and GET_ROWS of every weight type with a reader: F32, F16,
// BF16, Q4_0/1, Q5_0/1, Q8_0, Q2_K..Q6_K, IQ4_NL, IQ4_XS, MXFP4; the elementwise ops and
// activations, SWIGLU_OAI, ADD_ID, the norms, SUM_ROWS, ROPE (YaRN, the multi-section
// compositions), SOFT_MAX (with ALiBi), CONCAT, CPY/CONT/SET_ROWS to
// F32 and F16, SET_ROWS to Q8_0, FLASH_ATTN_EXT with masks, soft-cap, sinks and F16, F32
// or Q8_0 K/V, SSM_CONV, SSM_SCAN,
// GATED_DELTA_NET, ARGSORT with ggml-cpu's order of ties), each checked to have run there (its op counter moved). Skips without a
// WebGPU adapter.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { referenceDevice } from '../src/backends/reference/index.js';
import { compareDevices, opCases } from '../src/backends/testing/op-harness.js';
import { webGpuDevice } from './helpers/webgpu.js';

const dev = await webGpuDevice();
const skip = typeof dev === 'string' ? dev : false;

/** Cases the device must run (the rest skip as unsupported and fall back to the CPU). */
const EXPECTED =
  /^(MUL_MAT\((F32|F16|BF16|Q8_0|Q[45]_[01]|Q[2-6]_K|IQ4_NL|IQ4_XS|MXFP4)|MUL_MAT_ID\((F32|F16|BF16|Q8_0|Q[45]_[01]|Q[2-6]_K|IQ4_NL|IQ4_XS|MXFP4)\)|SSM_CONV |SSM_SCAN |GATED_DELTA_NET |ADD_ID |SUM_ROWS |CONCAT |CLAMP |SWIGLU_OAI |L2_NORM |SOFTPLUS |GET_ROWS\((F32|F16|BF16|Q8_0|Q[45]_[01]|Q[2-6]_K|IQ4_NL|IQ4_XS|MXFP4)\)|ADD |MUL |DIV |SCALE|SILU|GELU|TANH|RELU|SQR|SIGMOID|RMS_NORM|NORM|ROPE|SOFT_MAX|CPY F(32|16) -> F(32|16)|SET_ROWS|FLASH_ATTN_EXT |ARGSORT )/;

test('webgpu harness: every supported op x type x shape matches the reference', { skip }, async () => {
  const d = dev as Exclude<typeof dev, string>;
  const failures: string[] = [];
  const ran: string[] = [];
  // the 40000-row column views take seconds on SwiftShader; the permuted CONT and the
  // strided cache view cover the same addressing
  for (const c of opCases().filter((c) => !c.name.startsWith('CONT of a ['))) {
    const op = /^[A-Z0-9_]+/.exec(c.name)![0];
    const before = d.opCounts.get(op) ?? 0;
    const t0 = performance.now();
    const [r] = await compareDevices(d, referenceDevice, undefined, [{ ...c, maxNmse: c.maxNmse ?? 1e-6 }]);
    if (r.skipped) {
      if (EXPECTED.test(c.name)) failures.push(`${r.name}: skipped (${r.skipped})`);
      continue;
    }
    ran.push(`${r.name} ${r.nmse?.toExponential(2)} ${(performance.now() - t0).toFixed(0)} ms`);
    if (!r.ok) failures.push(`${r.name}: NMSE ${r.nmse}`);
    else if ((d.opCounts.get(op) ?? 0) <= before) failures.push(`${r.name}: no ${op} ran on ${d.name}`);
  }
  console.log(ran.join('\n'));
  assert.deepEqual(failures, []);
  assert.ok(ran.length >= 200, `only ${ran.length} cases ran`);
});
