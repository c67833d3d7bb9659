// Each chain step against expectations computed by hand or taken from llama.cpp's
// tests/test-sampling.cpp (same inputs, same expected probabilities), plus the
// candidate list's selection/sorting and the random number generator.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  applyTemperature,
  Candidates,
  DistSampler,
  DrySampler,
  discreteIndex,
  GreedyStep,
  LogitBiasSampler,
  MinPSampler,
  MirostatSampler,
  MirostatV2Sampler,
  Mt19937,
  PenaltiesSampler,
  type SamplingStep,
  TempExtSampler,
  TempSampler,
  TopKSampler,
  TopNSigmaSampler,
  TopPSampler,
  TypicalSampler,
  XtcSampler,
} from '../src/sampling/index.js';

/** Candidates with logits ln p (probabilities p), as llama.cpp's sampler_tester builds them. */
function fromProbs(probs: number[]): Candidates {
  const c = Candidates.from(probs.map((p) => Math.log(p)));
  c.probs.set(probs);
  return c;
}

function run(probs: number[], steps: SamplingStep[], dist = true): Candidates {
  const c = fromProbs(probs);
  for (const s of steps) s.apply(c);
  if (dist) new DistSampler(0).apply(c);
  return c;
}

function probsOf(c: Candidates): number[] {
  return Array.from(c.probs.subarray(0, c.size));
}

function idsOf(c: Candidates): number[] {
  return Array.from(c.ids.subarray(0, c.size));
}

function close(actual: number[], expected: number[], tol = 1e-5): void {
  assert.equal(actual.length, expected.length, `size ${actual.length} != ${expected.length}: ${actual}`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i]! - expected[i]!) < tol, `[${i}] ${actual[i]} != ${expected[i]} (${actual})`);
  }
}

const P4 = [0.1, 0.2, 0.3, 0.4];

describe('temperature', () => {
  test('t = 1 keeps the distribution, t = 0 keeps only the best (llama.cpp test_temp)', () => {
    close(probsOf(run(P4, [new TempSampler(1)])), P4);
    close(probsOf(run(P4, [new TempSampler(0)])), [0, 0, 0, 1]);
    close(probsOf(run(P4, [new TempExtSampler(1, 0, 1)])), P4);
    close(probsOf(run(P4, [new TempExtSampler(0, 0, 1)])), [0, 0, 0, 1]);
  });

  test('logits are divided by t', () => {
    const c = Candidates.from([1, 2, -3]);
    new TempSampler(0.5).apply(c);
    assert.deepEqual(Array.from(c.logits), [2, 4, -6]);
    // t ≤ 0: the first of equal maxima stays
    const g = Candidates.from([1, 3, 3, 2]);
    applyTemperature(g, -1);
    assert.deepEqual(Array.from(g.logits), [-Infinity, 3, -Infinity, -Infinity]);
  });

  test('dynamic temperature picks t from the normalized entropy', () => {
    // uniform: normalized entropy 1, so t = temp + range
    const flat = fromProbs([0.25, 0.25, 0.25, 0.25]);
    new TempExtSampler(1, 0.5, 1).apply(flat);
    close(Array.from(flat.logits), Array(4).fill(Math.log(0.25) / 1.5));
    // skewed: t = max(0, temp - range) + 2·range·(H / ln n)^exponent
    const probs = [0.7, 0.2, 0.1];
    const h = -probs.reduce((s, p) => s + p * Math.log(p), 0);
    const t = 0.5 + 1 * (h / Math.log(3)) ** 2;
    const c = fromProbs(probs);
    new TempExtSampler(1, 0.5, 2).apply(c);
    close(
      Array.from(c.logits),
      probs.map((p) => Math.log(p) / t),
      1e-4,
    );
    const e = probs.map((p) => Math.exp(Math.log(p) / t));
    const sum = e.reduce((a, b) => a + b);
    close(
      probsOf(c),
      e.map((x) => x / sum),
      1e-5,
    );
  });
});

describe('top-k', () => {
  test('llama.cpp test_top_k', () => {
    close(probsOf(run(P4, [new TopKSampler(1)])), [1]);
    close(probsOf(run(P4, [new TopKSampler(3)])), [0.44444, 0.33333, 0.22222]);
    close(probsOf(run(P4, [new TopKSampler(4)])), [0.4, 0.3, 0.2, 0.1]);
    close(probsOf(run(P4, [new TopKSampler(0)])), P4);
    close(probsOf(run(P4, [new TopKSampler(-1)])), P4);
  });

  test('selection on a large vocabulary equals a full sort (ties by position)', () => {
    const n = 50_000;
    const logits = new Float32Array(n);
    let s = 1;
    for (let i = 0; i < n; i++) {
      s = (Math.imul(s, 1103515245) + 12345) >>> 0;
      logits[i] = (s % 2000) / 100 - 10; // many ties
    }
    const expected = Array.from({ length: n }, (_, i) => i)
      .sort((a, b) => logits[b]! - logits[a]! || a - b)
      .slice(0, 500);
    for (const k of [1, 40, 500]) {
      const c = Candidates.from(logits);
      new TopKSampler(k).apply(c);
      assert.equal(c.size, k);
      assert.ok(c.sorted);
      assert.deepEqual(idsOf(c), expected.slice(0, k));
    }
    // and through the packed-key sort
    const full = Candidates.from(logits);
    full.sortTop(n);
    assert.deepEqual(idsOf(full).slice(0, 500), expected);
  });
});

describe('candidate ordering', () => {
  test('the radix sort orders negatives, zeros, infinities and ties like a stable comparison sort', () => {
    const rng = new Mt19937(3);
    const n = 5000;
    const values = new Float32Array(n);
    const specials = [0, -0, -Infinity, Infinity, 1e-30, -1e-30, 3.5, -3.5];
    for (let i = 0; i < n; i++) {
      values[i] =
        i % 7 === 0
          ? specials[rng.nextU32() % specials.length]!
          : (rng.nextDouble() - 0.5) * 2 ** ((rng.nextU32() % 20) - 10);
    }
    const c = new Candidates(n);
    const out = new Int32Array(n);
    for (const descending of [true, false]) {
      c.sortPositions(values, n, descending, out);
      const ref = Array.from({ length: n }, (_, i) => i).sort((a, b) => {
        const d = descending ? values[b]! - values[a]! : values[a]! - values[b]!;
        return d > 0 ? 1 : d < 0 ? -1 : a - b;
      });
      assert.deepEqual(Array.from(out), ref);
    }
  });
});

describe('top-p', () => {
  test('llama.cpp test_top_p: the smallest prefix reaching p', () => {
    close(probsOf(run(P4, [new TopPSampler(0)])), [1]);
    close(probsOf(run(P4, [new TopPSampler(0.7)])), [0.571429, 0.428571]);
    close(probsOf(run(P4, [new TopPSampler(0.8)])), [0.44444, 0.33333, 0.22222]);
    close(probsOf(run(P4, [new TopPSampler(1)])), P4);
  });

  test('min_keep and long unsorted lists (the 256-token first guess, then the full sort)', () => {
    close(probsOf(run(P4, [new TopPSampler(0.1, 3)])), [0.44444, 0.33333, 0.22222]);
    for (const [p, spread] of [
      [0.5, 8],
      [0.99, 0.01],
    ] as const) {
      const n = 5000;
      const logits = Float32Array.from({ length: n }, (_, i) => Math.sin(i * 7.1) * spread);
      const c = Candidates.from(logits);
      new TopPSampler(p).apply(c);
      // reference: sort all, accumulate float32 probabilities
      const ref = Candidates.from(logits);
      ref.softmax(true);
      let sum = 0;
      let keep = n;
      for (let i = 0; i < n; i++) {
        sum = Math.fround(sum + ref.probs[i]!);
        if (sum >= Math.fround(p)) {
          keep = i + 1;
          break;
        }
      }
      assert.equal(c.size, keep);
      assert.deepEqual(idsOf(c), Array.from(ref.ids.subarray(0, keep)));
      assert.ok(c.sorted);
    }
  });
});

describe('min-p', () => {
  test('llama.cpp test_min_p: relative to the most probable token', () => {
    const cases: [number, number[]][] = [
      [0, [0.1, 0.2, 0.3, 0.4]],
      [0.24, [0.1, 0.2, 0.3, 0.4]],
      [0.26, [0.2 / 0.9, 0.3 / 0.9, 0.4 / 0.9]],
      [0.49, [0.2 / 0.9, 0.3 / 0.9, 0.4 / 0.9]],
      [0.51, [0.3 / 0.7, 0.4 / 0.7]],
      [0.74, [0.3 / 0.7, 0.4 / 0.7]],
      [0.76, [1]],
      [1, [1]],
    ];
    for (const [p, expected] of cases) close(probsOf(run(P4, [new MinPSampler(p)])), expected);
  });

  test('a sorted list is cut in place; min_keep falls back to the sorted path', () => {
    const c = fromProbs(P4);
    c.sortTop(4);
    new MinPSampler(0.6).apply(c); // p ≥ 0.24
    assert.deepEqual(idsOf(c), [3, 2]);
    const k = fromProbs(P4);
    new MinPSampler(0.9, 3).apply(k);
    assert.deepEqual(idsOf(k), [3, 2, 1]);
  });
});

describe('XTC', () => {
  test('llama.cpp test_xtc (probability 0.99, seed 0)', () => {
    const P = [0.4, 0.3, 0.2, 0.1];
    close(probsOf(run(P, [new XtcSampler(0.99, 0.09, 0, 0)], false)), [0.1]);
    close(probsOf(run(P, [new XtcSampler(0.99, 0.19, 0, 0)], false)), [0.2, 0.1]);
    close(probsOf(run(P, [new XtcSampler(0.99, 0.29, 0, 0)], false)), [0.3, 0.2, 0.1]);
    close(probsOf(run(P, [new XtcSampler(0.99, 0.39, 0, 0)], false)), [0.4, 0.3, 0.2, 0.1]);
  });

  test('probability 1 always removes all tokens above the threshold but the least likely', () => {
    for (let seed = 0; seed < 20; seed++) {
      const c = run([0.05, 0.5, 0.15, 0.3], [new XtcSampler(1, 0.1, 0, seed)], false);
      assert.deepEqual(idsOf(c), [2, 0]);
    }
    // off: threshold above 0.5, probability 0, min_keep not met
    assert.equal(run(P4, [new XtcSampler(1, 0.6, 0, 1)], false).size, 4);
    assert.equal(run(P4, [new XtcSampler(0, 0.1, 0, 1)], false).size, 4);
    assert.equal(run(P4, [new XtcSampler(1, 0.1, 2, 1)], false).size, 4);
  });
});

describe('typical-p', () => {
  test('llama.cpp test_typical', () => {
    close(probsOf(run([0.97, 0.01, 0.01, 0.01], [new TypicalSampler(0.5)], false)), [0.97]);
    close(probsOf(run([0.4, 0.2, 0.2, 0.2], [new TypicalSampler(0.5)], false)), [0.2, 0.2, 0.2]);
  });

  test('keeps tokens closest to the entropy first', () => {
    // H of [0.5, 0.3, 0.15, 0.05] ≈ 1.1437; |−ln p − H|: 0.45, 0.06, 0.75, 1.85
    const c = run([0.5, 0.3, 0.15, 0.05], [new TypicalSampler(0.7)], false);
    assert.deepEqual(idsOf(c), [1, 0]);
    assert.equal(c.sorted, false);
  });
});

describe('penalties', () => {
  const flat = [0.2, 0.2, 0.2, 0.2, 0.2];
  const withHistory = (history: number[], repeat: number, freq: number, present: number) => {
    const s = new PenaltiesSampler(history.length, repeat, freq, present);
    for (const t of history) s.accept(t);
    return s;
  };

  test('llama.cpp test_penalties', () => {
    close(probsOf(run(flat, [withHistory([0], 50, 0, 0)])), [0, 0.25, 0.25, 0.25, 0.25]);
    close(probsOf(run(flat, [withHistory([0, 1, 2], 50, 0, 0)])), [0, 0, 0, 0.5, 0.5]);
    close(probsOf(run(flat, [withHistory([0, 1, 2, 0, 0], 50, 0, 0)])), [0, 0, 0, 0.5, 0.5]);
    close(probsOf(run(flat, [withHistory([0], 1, 5, 5)])), [0.000011, 0.249997, 0.249997, 0.249997, 0.249997]);
    close(probsOf(run(flat, [withHistory([0, 1, 2], 1, 5, 5)])), [0.000023, 0.000023, 0.000023, 0.499966, 0.499966]);
    close(probsOf(run(flat, [withHistory([0, 1, 2, 0, 0], 1, 5, 5)])), [0.0, 0.000023, 0.000023, 0.499977, 0.499977]);
  });

  test('divide positive, multiply negative logits; subtract count·freq + presence; only the last N', () => {
    const s = new PenaltiesSampler(3, 2, 0.5, 0.25);
    for (const t of [4, 0, 1, 1]) s.accept(t); // window: 0, 1, 1 (4 fell out)
    assert.deepEqual(s.window, [0, 1, 1]);
    const c = Candidates.from([3, -3, 1, 0, 2]);
    s.apply(c);
    // 0: 3/2 - (0.5 + 0.25); 1: -3·2 - (1 + 0.25); 4 untouched
    assert.deepEqual(Array.from(c.logits), [0.75, -7.25, 1, 0, 2]);
    // the same on a shuffled list (search path)
    const d = Candidates.from([2, 3, -3], [4, 0, 1]);
    s.apply(d);
    assert.deepEqual(Array.from(d.logits), [2, 0.75, -7.25]);
    s.reset();
    assert.deepEqual(s.window, []);
  });
});

describe('DRY', () => {
  const dry = (mult: number, base: number, allowed: number, lastN: number, breakers: number[][], history: number[]) => {
    const map = new Map<number, Int32Array[]>();
    for (const b of breakers) {
      const list = map.get(b[0]!) ?? [];
      list.push(Int32Array.from(b.slice(1)));
      map.set(b[0]!, list);
    }
    const s = new DrySampler({
      multiplier: mult,
      base,
      allowedLength: allowed,
      penaltyLastN: lastN,
      contextSize: Infinity,
      breakers: map,
    });
    for (const t of history) s.accept(t);
    return s;
  };

  test('llama.cpp test_dry', () => {
    const q = [0.25, 0.25, 0.25, 0.25];
    const f = [0.2, 0.2, 0.2, 0.2, 0.2];
    close(probsOf(run(q, [dry(1, 1.1, 2, 4, [], [0, 1])])), q);
    close(probsOf(run(q, [dry(1, 1.1, 2, 5, [], [0, 1, 2, 0, 1])])), [0.296923, 0.296923, 0.109232, 0.296923]);
    close(probsOf(run(f, [dry(1, 1.1, 2, 6, [[3]], [0, 1, 3, 4, 0, 1])])), f);
    close(
      probsOf(run(f, [dry(2, 1.1, 2, 5, [], [0, 1, 2, 0, 1])])),
      [0.241818, 0.241818, 0.032727, 0.241818, 0.241818],
    );
    close(probsOf(run(f, [dry(1, 1.1, 4, 7, [], [0, 1, 2, 3, 4, 0, 1])])), f);
  });

  test('a longer repeat costs base^(length - allowed); breaker sequences cut the look-back', () => {
    // 5 6 7 8 9 ... 5 6 7 8: token 9 would extend a repeat of 4 → 2 · 1.5^(4-2)
    const s = dry(2, 1.5, 2, -1, [], [5, 6, 7, 8, 9, 1, 5, 6, 7, 8]);
    const c = Candidates.from(new Float32Array(10));
    s.apply(c);
    assert.equal(c.logits[9], -2 * 1.5 ** 2);
    assert.equal(c.logits.filter((v) => v !== 0).length, 1);
    // a two-token breaker "1 5" between the repeats: the repeat may reach back only to
    // just after it (6 7 8 = 3 tokens): 2 · 1.5^(3-2)
    const b = dry(2, 1.5, 2, -1, [[1, 5]], [5, 6, 7, 8, 9, 1, 5, 6, 7, 8]);
    const d = Candidates.from(new Float32Array(10));
    b.apply(d);
    assert.equal(d.logits[9], -2 * 1.5);
    // a single-token breaker also cuts: 3 4 2 3 4 with breaker 3 → repeats of at most 1
    const e = dry(1, 2, 1, -1, [[3]], [3, 4, 2, 3, 4]);
    const g = Candidates.from(new Float32Array(5));
    e.apply(g);
    assert.equal(g.logits[2], -1); // 1 · 2^(1-1), not 2^(2-1)
    // and is never penalized itself: 5 3 7 5 → 3 would repeat "5 3"
    const plain = dry(1, 2, 1, -1, [], [5, 3, 7, 5]);
    const p1 = Candidates.from(new Float32Array(8));
    plain.apply(p1);
    assert.equal(p1.logits[3], -1);
    const broken = dry(1, 2, 1, -1, [[3]], [5, 3, 7, 5]);
    const p2 = Candidates.from(new Float32Array(8));
    broken.apply(p2);
    assert.ok(p2.logits.every((v) => v === 0));
    // look-back window: only the last 4 tokens
    const w = dry(1, 2, 1, 4, [], [7, 8, 0, 1, 2, 3, 7]);
    const h = Candidates.from(new Float32Array(10));
    w.apply(h);
    assert.ok(h.logits.every((v) => v === 0));
  });
});

describe('top-n-sigma', () => {
  test('llama.cpp test_top_n_sigma', () => {
    close(probsOf(run(P4, [new TopNSigmaSampler(1)])), [0.571429, 0.428571, 0, 0]);
    close(probsOf(run(P4, [new TopNSigmaSampler(0)])), P4);
    close(probsOf(run(P4, [new TopNSigmaSampler(3)])), [0.4, 0.3, 0.2, 0.1]);
  });
});

describe('logit bias', () => {
  test('adds to the biased tokens; -Infinity bans; repeated entries add up; works on shuffled lists', () => {
    const s = new LogitBiasSampler([
      { token: 1, bias: 2 },
      { token: 3, bias: -Infinity },
      { token: 1, bias: 0.5 },
      { token: 9, bias: 1 }, // not in the list
    ]);
    const c = Candidates.from([0, 0, 0, 0]);
    s.apply(c);
    assert.deepEqual(Array.from(c.logits), [0, 2.5, 0, -Infinity]);
    const d = Candidates.from([0, 0, 0], [3, 1, 0]);
    s.apply(d);
    assert.deepEqual(Array.from(d.logits), [-Infinity, 2.5, 0]);
    close(probsOf(run([0.5, 0.5], [new LogitBiasSampler([{ token: 0, bias: -Infinity }])])), [0, 1]);
  });
});

describe('mirostat', () => {
  test('v2: truncation at μ and the μ update', () => {
    const probs = [0.5, 0.25, 0.125, 0.0625, 0.0625];
    for (let seed = 0; seed < 10; seed++) {
      const s = new MirostatV2Sampler(seed, 1.5, 0.1); // μ = 3: surprises 1, 2, 3 kept, 4 cut
      const c = fromProbs(probs);
      s.apply(c);
      assert.equal(c.size, 3);
      close(probsOf(c), [4 / 7, 2 / 7, 1 / 7]);
      const surprise = -Math.log2(c.probs[c.selected]!);
      assert.ok(Math.abs(s.mu - (3 - 0.1 * (surprise - 1.5))) < 1e-5);
      s.reset();
      assert.equal(s.mu, 3);
    }
  });

  test('v1: k from the Zipf estimate (s = 2 → k = floor(sqrt(2^μ / (1 - 1/N)))), then the μ update', () => {
    const n = 100;
    const logits = Array.from({ length: n }, (_, i) => -2 * Math.log(i + 1));
    for (let seed = 0; seed < 10; seed++) {
      const s = new MirostatSampler(n, seed, 1, 0.1); // μ = 2
      const c = Candidates.from(logits);
      s.apply(c);
      assert.equal(c.size, 2); // sqrt(4 / 0.99) = 2.01
      close(probsOf(c), [0.8, 0.2]);
      const surprise = -Math.log2(c.probs[c.selected]!);
      assert.ok(Math.abs(s.mu - (2 - 0.1 * (surprise - 1))) < 1e-5);
    }
  });
});

describe('greedy and dist', () => {
  test('greedy takes the first highest logit', () => {
    const c = Candidates.from([1, 5, 5, 2]);
    new GreedyStep().apply(c);
    assert.equal(c.selected, 1);
  });

  test('dist leaves normalized probabilities and never picks a banned token', () => {
    for (let seed = 0; seed < 50; seed++) {
      const c = Candidates.from([-Infinity, 0, -Infinity, Math.log(3)]);
      new DistSampler(seed).apply(c);
      assert.ok(c.selected === 1 || c.selected === 3);
      close(probsOf(c), [0, 0.25, 0, 0.75]);
    }
  });
});

describe('random numbers', () => {
  test("mt19937 matches the C++ standard's reference outputs", () => {
    const r = new Mt19937(5489);
    let v = 0;
    for (let i = 0; i < 10000; i++) v = r.nextU32();
    assert.equal(v, 4123659995);
    assert.equal(new Mt19937(0).nextU32(), 2357136044);
  });

  test('uniform floats and doubles are in [0, 1); clones continue identically', () => {
    const r = new Mt19937(7);
    for (let i = 0; i < 1000; i++) {
      const f = r.nextFloat();
      const d = r.nextDouble();
      assert.ok(f >= 0 && f < 1 && d >= 0 && d < 1);
    }
    const c = r.clone();
    for (let i = 0; i < 10; i++) assert.equal(c.nextU32(), r.nextU32());
    // libstdc++: a float draw is one 32-bit output scaled by 2^-32
    assert.equal(new Mt19937(0).nextFloat(), Math.fround(2357136044) / 2 ** 32);
  });

  test('discrete draws follow the weights; one weight draws nothing', () => {
    const r = new Mt19937(1);
    const w = Float32Array.of(0.1, 0.6, 0.3);
    const counts = [0, 0, 0];
    for (let i = 0; i < 30000; i++) counts[discreteIndex(w, 3, r)]!++;
    close(
      counts.map((n) => n / 30000),
      [0.1, 0.6, 0.3],
      0.015,
    );
    const a = new Mt19937(3);
    const b = new Mt19937(3);
    assert.equal(discreteIndex(Float32Array.of(1), 1, a), 0);
    assert.equal(a.nextU32(), b.nextU32());
  });
});
