// Two contexts computing at once on the cpu device must give what each gives alone:
// the device runs one graph at a time (its work regions are shared per arena).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Context, Model } from '../src/model/index.js';
import { missingShared, sharedPath } from './helpers/shared.js';

const stories = sharedPath('models/stories260K.gguf');

test('interleaved decodes on two contexts match sequential ones', {
  skip: stories ? false : missingShared('models/stories260K.gguf'),
}, async () => {
  const model = await Model.load(stories!);
  const prompts = [
    [1, 403, 407, 261, 378],
    [1, 30, 90, 80, 70, 60, 50, 40],
  ];
  const run = async (ctx: Context, tokens: number[], steps: number) => {
    const rows: Float32Array[] = [];
    await ctx.decode({ tokens });
    rows.push(ctx.getLogits().slice());
    let pos = tokens.length;
    for (let i = 0; i < steps; i++) {
      const last = rows[rows.length - 1]!;
      let best = 0;
      for (let j = 1; j < last.length; j++) if (last[j]! > last[best]!) best = j;
      await ctx.decode({ tokens: [best], pos: [pos++] });
      rows.push(ctx.getLogits().slice());
    }
    return rows;
  };
  const alone = [];
  for (const p of prompts) alone.push(await run(new Context(model, { nCtx: 64 }), p, 6));
  const together = await Promise.all(prompts.map((p) => run(new Context(model, { nCtx: 64 }), p, 6)));
  for (let k = 0; k < prompts.length; k++) {
    assert.equal(together[k]!.length, alone[k]!.length);
    for (let s = 0; s < alone[k]!.length; s++) assert.deepEqual(together[k]![s], alone[k]![s], `prompt ${k} step ${s}`);
  }
});
