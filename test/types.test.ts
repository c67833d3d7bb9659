import assert from 'node:assert/strict';
import { test } from 'node:test';
import { GGMLType, rowSize, typeName } from '../src/ggml/types.js';
import { SHARED_DIR } from './helpers/shared.js';

test('type table sizes', () => {
  assert.equal(rowSize(GGMLType.Q4_0, 64), 36);
  assert.equal(rowSize(GGMLType.Q4_K, 512), 288);
  assert.equal(typeName(31), 'Q4_0_4_4 (removed from ggml; repacking now happens at load)');
  assert.ok(SHARED_DIR.endsWith('/shared/'));
});
