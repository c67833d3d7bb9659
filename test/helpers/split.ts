// A model written as gguf-split writes it (for the split-model tests, Node and browser).
import { join } from 'node:path';
import { GGUFValueType, GGUFWriter, openGGUF } from '../../src/gguf/index.js';

/** Writes `src` as gguf-split does: metadata in the first shard, the tensors dealt in order. */
export function splitModel(src: string, dir: string, parts: number, prefix = 'model', dup = false): string[] {
  const f = openGGUF(src);
  try {
    const per = Math.ceil(f.tensors.length / parts);
    const names: string[] = [];
    for (let k = 0; k < parts; k++) {
      const w = new GGUFWriter({ alignment: f.alignment });
      if (k === 0) for (const [key, kv] of f.metadata) w.set(key, kv.type, kv.value);
      w.set('split.no', GGUFValueType.UINT16, k);
      w.set('split.count', GGUFValueType.UINT16, parts);
      w.set('split.tensors.count', GGUFValueType.INT32, f.tensors.length);
      const mine = f.tensors.slice(k * per, (k + 1) * per);
      if (dup && k === 1) mine.push(f.tensors[0]!);
      for (const t of mine) w.addTensor(t.name, t.type, [...t.dims], f.readTensorData(t));
      const name = join(dir, `${prefix}-${String(k + 1).padStart(5, '0')}-of-${String(parts).padStart(5, '0')}.gguf`);
      w.write(name);
      names.push(name);
    }
    return names;
  } finally {
    f.close();
  }
}
