// The sampling chain: llama.cpp's default order and defaults, option checks, seeded
// determinism, the draw's statistics, grammar-constrained sampling on a synthetic
// vocabulary, logit_bias / ignore_eos forms, DRY breakers from text, n_probs rows, and
// speed on a 150k vocabulary.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createSamplingChain,
  OPTION_BY_NAME,
  OptionError,
  resolveSampling,
  type SamplingParams,
} from '../src/generation/index.js';
import { setLogCallback } from '../src/log.js';
import {
  completionProbabilities,
  DEFAULT_SAMPLERS,
  DEFAULT_SEED,
  dryBreakersFromStrings,
  type LogitBiasSampler,
  Mt19937,
  type PenaltiesSampler,
  postSamplingProbabilities,
  rawProbabilities,
  SamplingError,
  type SamplingVocab,
} from '../src/sampling/index.js';

/** A vocabulary from a list of pieces; encode is greedy longest match. */
class TinyVocab implements SamplingVocab {
  readonly pieces: string[];
  readonly eog: ReadonlySet<number>;
  constructor(pieces: (string | number[])[], eog: number[]) {
    this.pieces = pieces.map((p) =>
      typeof p === 'string' ? Buffer.from(p, 'utf8').toString('latin1') : String.fromCharCode(...p),
    );
    this.eog = new Set(eog);
  }
  get nTokens(): number {
    return this.pieces.length;
  }
  pieceBytes(id: number): string {
    return this.pieces[id]!;
  }
  isEog(id: number): boolean {
    return this.eog.has(id);
  }
  encode(text: string | Uint8Array): number[] {
    const s =
      typeof text === 'string' ? Buffer.from(text, 'utf8').toString('latin1') : Buffer.from(text).toString('latin1');
    const out: number[] = [];
    for (let i = 0; i < s.length; ) {
      let best = -1;
      for (let id = 0; id < this.pieces.length; id++) {
        const p = this.pieces[id]!;
        if (
          p.length > 0 &&
          !this.eog.has(id) &&
          s.startsWith(p, i) &&
          (best < 0 || p.length > this.pieces[best]!.length)
        ) {
          best = id;
        }
      }
      if (best < 0) throw new Error(`cannot encode ${JSON.stringify(s.slice(i))}`);
      out.push(best);
      i += this.pieces[best]!.length;
    }
    return out;
  }
  decodeToBytes(ids: readonly number[]): Uint8Array {
    return Uint8Array.from(Buffer.from(ids.map((id) => this.pieces[id]!).join(''), 'latin1'));
  }
}

/** Deterministic pseudo-random logits. */
function randomLogits(n: number, rng: Mt19937, scale = 3): Float32Array {
  const l = new Float32Array(n);
  for (let i = 0; i < n; i++) l[i] = (rng.nextDouble() * 2 - 1) * scale;
  return l;
}

function draw(params: SamplingParams, steps: number, n = 200, vocab?: SamplingVocab): number[] {
  const chain = createSamplingChain(params, vocab);
  const rng = new Mt19937(99);
  const out: number[] = [];
  for (let i = 0; i < steps; i++) out.push(chain.sample(randomLogits(n, rng)));
  return out;
}

describe('defaults and order', () => {
  test("llama.cpp's defaults (the option table's)", () => {
    const r = resolveSampling({});
    for (const [k, v] of Object.entries(r)) {
      const row = OPTION_BY_NAME.get(k);
      if (k === 'seed') assert.equal(v, DEFAULT_SEED);
      else if (k === 'logit_bias') assert.deepEqual(v, []);
      else if (k === 'n_ctx') assert.equal(v, undefined);
      else if (k === 'json_schema') assert.equal(v, undefined);
      else assert.deepEqual(v, row!.default, k);
    }
    assert.deepEqual(r.samplers, DEFAULT_SAMPLERS);
    assert.equal(r.top_k, 40);
    assert.equal(r.top_p, 0.95);
    assert.equal(r.min_p, 0.05);
    assert.equal(r.temperature, 0.8);
    assert.equal(r.penalty_last_n, 64);
    assert.equal(r.penalty_repeat, 1);
    assert.equal(r.dry_base, 1.75);
    assert.equal(r.dry_allowed_length, 2);
    assert.equal(r.xtc_threshold, 0.1);
    assert.equal(r.mirostat_tau, 5);
    assert.equal(r.mirostat_eta, 0.1);
    assert.deepEqual(r.dry_sequence_breakers, ['\n', ':', '"', '*']);
  });

  test("the default chain is llama.cpp's common sampler order", () => {
    assert.equal(
      createSamplingChain().describe(),
      'logits -> penalties -> dry -> top-n-sigma -> top-k -> typical -> top-p -> min-p -> xtc -> temp-ext -> dist',
    );
    assert.equal(
      createSamplingChain({ logit_bias: [[1, 2]] }).describe(),
      'logits -> logit-bias -> penalties -> dry -> top-n-sigma -> top-k -> typical -> top-p -> min-p -> xtc -> temp-ext -> dist',
    );
    assert.equal(createSamplingChain({ mirostat: 1 }).describe(), 'logits -> temp -> mirostat');
    assert.equal(
      createSamplingChain({ mirostat: 2, logit_bias: { 3: false } }).describe(),
      'logits -> logit-bias -> temp -> mirostat-v2',
    );
    assert.equal(createSamplingChain({ samplers: 'kt' }).describe(), 'logits -> top-k -> temp-ext -> dist');
    assert.equal(
      createSamplingChain({ samplers: ['min-p', 'temp', 'top_k'] }).describe(),
      'logits -> min-p -> temp-ext -> top-k -> dist',
    );
  });

  test('penalties act before top-k, min-p before temperature', () => {
    // token 0 is best but was just generated: a strong repeat penalty makes top-k 1 pick token 1
    const chain = createSamplingChain({ top_k: 1, penalty_repeat: 10, seed: 1 });
    chain.accept(0);
    assert.equal(chain.choose(Float32Array.of(5, 4, 0)), 1);
    // min-p 0.5 on the raw logits cuts token 2 (p ratio e^-2), however hot the temperature
    const hot = createSamplingChain({ min_p: 0.5, temperature: 100, top_k: 0, seed: 2 });
    const seen = new Set<number>();
    for (let i = 0; i < 300; i++) seen.add(hot.sample(Float32Array.of(2, 2, 0)));
    assert.deepEqual([...seen].sort(), [0, 1]);
  });

  test('temperature ≤ 0 is greedy', () => {
    const rng = new Mt19937(5);
    const chain = createSamplingChain({ temperature: 0, seed: 3 });
    for (let i = 0; i < 20; i++) {
      const l = randomLogits(100, rng);
      let best = 0;
      for (let j = 1; j < l.length; j++) if (l[j]! > l[best]!) best = j;
      assert.equal(chain.sample(l), best);
    }
  });

  test('-1 lengths mean the context size (n_ctx), else every token', () => {
    const a = createSamplingChain({ penalty_last_n: -1, penalty_repeat: 1.1, n_ctx: 512 });
    assert.equal(a.step<PenaltiesSampler>('penalties')!.lastN, 512);
    const b = createSamplingChain({ repeat_last_n: -1, repeat_penalty: 1.1 });
    assert.equal(b.step<PenaltiesSampler>('penalties')!.lastN, Infinity);
    assert.equal(b.params.penalty_repeat, 1.1);
  });
});

describe('option checks', () => {
  const vocab = new TinyVocab(['</s>', 'a', 'b', 'ab'], [0]);
  const bad: [SamplingParams | Record<string, unknown>, string, SamplingVocab?][] = [
    [{ top_k: -2 }, 'top_k'],
    [{ top_k: 1.5 }, 'top_k'],
    [{ top_p: 1.1 }, 'top_p'],
    [{ top_p: -0.1 }, 'top_p'],
    [{ min_p: 2 }, 'min_p'],
    [{ typical_p: -1 }, 'typical_p'],
    [{ typ_p: 3 }, 'typ_p'],
    [{ temperature: Number.NaN }, 'temperature'],
    [{ temperature: Infinity }, 'temperature'],
    [{ temperature: '0.5' }, 'temperature'],
    [{ mirostat: 3 }, 'mirostat'],
    [{ mirostat: -1 }, 'mirostat'],
    [{ mirostat_tau: -1 }, 'mirostat_tau'],
    [{ xtc_probability: 2 }, 'xtc_probability'],
    [{ penalty_last_n: -2 }, 'penalty_last_n'],
    [{ penalty_repeat: 0 }, 'penalty_repeat'],
    [{ frequency_penalty: Infinity }, 'frequency_penalty'],
    [{ dry_multiplier: -1 }, 'dry_multiplier'],
    [{ dry_allowed_length: 1.5 }, 'dry_allowed_length'],
    [{ dry_penalty_last_n: -3 }, 'dry_penalty_last_n'],
    [{ dry_sequence_breakers: [] }, 'dry_sequence_breakers'],
    [{ dry_sequence_breakers: ['\n', 1] }, 'dry_sequence_breakers'],
    [{ dry_multiplier: 0.8 }, 'dry_multiplier'], // DRY without a vocabulary
    [{ seed: 1.5 }, 'seed'],
    [{ seed: 2 ** 32 }, 'seed'],
    [{ seed: -2 }, 'seed'],
    [{ logit_bias: [[1]] }, 'logit_bias'],
    [{ logit_bias: [[1, 'x']] }, 'logit_bias'],
    [{ logit_bias: [[1, true]] }, 'logit_bias'],
    [{ logit_bias: [[1, Infinity]] }, 'logit_bias'],
    [{ logit_bias: [[-1, 1]] }, 'logit_bias'],
    [{ logit_bias: [[4, 1]] }, 'logit_bias', vocab],
    [{ logit_bias: [['ab', 1]] }, 'logit_bias'], // text without a vocabulary
    [{ logit_bias: 5 }, 'logit_bias'],
    [{ n_probs: -1 }, 'n_probs'],
    [{ min_keep: 0.5 }, 'min_keep'],
    [{ samplers: ['top_k', 'foo'] }, 'samplers'],
    [{ samplers: 'kq' }, 'samplers'],
    [{ samplers: 5 }, 'samplers'],
    [{ ignore_eos: true }, 'ignore_eos'],
    [{ ignore_eos: 'yes' }, 'ignore_eos'],
    [{ post_sampling_probs: 1 }, 'post_sampling_probs'],
    [{ grammar: 'root ::= "a"' }, 'grammar'], // no vocabulary
    [{ grammar: 'root ::= (' }, 'grammar', vocab],
    [{ grammar: 5 }, 'grammar', vocab],
    [{ grammar: 'root ::= "a"', json_schema: { type: 'string' } }, 'json_schema', vocab],
    [{ json_schema: '{bad' }, 'json_schema', vocab],
    [{ json_schema: { type: 'integer', minimum: 'x' } }, 'json_schema', vocab],
    [{ grammar_lazy: true }, 'grammar_lazy', vocab], // lazy, but no grammar
    [{ n_ctx: 0 }, 'n_ctx'],
  ];
  for (const [params, option, v] of bad) {
    test(`${JSON.stringify(params, (_k, x) => (typeof x === 'number' && !Number.isFinite(x) ? String(x) : x))} → ${option}`, () => {
      assert.throws(
        () => createSamplingChain(params as SamplingParams, v),
        (e: unknown) => {
          // the option table's checks (OptionError), or the chain's own (a grammar that does not compile)
          assert.ok(e instanceof OptionError || e instanceof SamplingError, String(e));
          assert.equal(e.option, option);
          assert.ok(e.message.startsWith(`${option} = `), e.message);
          return true;
        },
      );
    });
  }

  test('accepted edge values', () => {
    for (const p of [
      { top_k: 0 },
      { top_k: -1 },
      { top_p: 0 },
      { top_p: 1 },
      { temperature: -1 },
      { seed: -1 },
      { seed: 0xffffffff },
      { seed: 0 },
      { mirostat: 2 },
      { dry_base: 0.5 }, // below 1: llama.cpp's server falls back to the default
      { logit_bias: [[1, -Infinity]] },
      { logit_bias: { '2': false } },
      { penalty_freq: -2, penalty_present: -2 },
      { top_n_sigma: 2, dynatemp_range: 0.5 },
    ]) {
      createSamplingChain(p as SamplingParams);
    }
    assert.equal(createSamplingChain({ dry_base: 0.5 }).params.dry_base, 1.75);
  });
});

describe('seeds', () => {
  test('the same seed gives the same tokens; another seed other tokens', () => {
    const p = { seed: 1234, temperature: 1.5, top_k: 0, top_p: 1, min_p: 0 };
    const a = draw(p, 60);
    assert.deepEqual(draw(p, 60), a);
    assert.notDeepEqual(draw({ ...p, seed: 1235 }, 60), a);
    // every option that draws: xtc, mirostat
    for (const q of [
      { seed: 7, xtc_probability: 0.5, xtc_threshold: 0.01, top_k: 0, top_p: 1, min_p: 0, temperature: 2 },
      { seed: 7, mirostat: 1, temperature: 2 },
      { seed: 7, mirostat: 2, temperature: 2 },
      { seed: 7, dry_multiplier: 0.8, penalty_repeat: 1.3, penalty_freq: 0.2 },
    ]) {
      const vocab = new TinyVocab(
        Array.from({ length: 200 }, (_, i) => `t${i}`),
        [],
      );
      assert.deepEqual(draw(q, 40, 200, vocab), draw(q, 40, 200, vocab));
    }
  });

  test('seed -1 picks a random seed, reported by chain.seed, that reproduces the run', () => {
    const p = { temperature: 1.5, top_k: 0, top_p: 1, min_p: 0 };
    const a = createSamplingChain(p);
    const b = createSamplingChain({ ...p, seed: -1 });
    assert.notEqual(a.seed, DEFAULT_SEED);
    assert.notEqual(a.seed, b.seed);
    const logits = new Float32Array(1000);
    const x = Array.from({ length: 20 }, () => a.sample(logits));
    const y = Array.from({ length: 20 }, () => b.sample(logits));
    assert.notDeepEqual(x, y);
    const again = createSamplingChain({ ...p, seed: a.seed });
    assert.deepEqual(
      Array.from({ length: 20 }, () => again.sample(logits)),
      x,
    );
  });

  test('reset replays from the seed; clone continues identically', () => {
    const chain = createSamplingChain({ seed: 5, temperature: 1, penalty_repeat: 1.5, top_k: 0 });
    const rng = new Mt19937(1);
    const rows = Array.from({ length: 30 }, () => randomLogits(50, rng));
    const first = rows.map((l) => chain.sample(l));
    chain.reset();
    assert.deepEqual(
      rows.map((l) => chain.sample(l)),
      first,
    );
    chain.reset();
    for (const l of rows.slice(0, 10)) chain.sample(l);
    const copy = chain.clone();
    assert.deepEqual(
      rows.slice(10).map((l) => copy.sample(l)),
      first.slice(10),
    );
  });
});

describe('the draw', () => {
  test('frequencies match the probabilities', () => {
    const probs = [0.5, 0.3, 0.15, 0.05];
    const logits = Float32Array.from(probs, Math.log);
    const chain = createSamplingChain({ seed: 2024, temperature: 1, top_k: 0, top_p: 1, min_p: 0 });
    const counts = [0, 0, 0, 0];
    const n = 40000;
    for (let i = 0; i < n; i++) counts[chain.sample(logits)]!++;
    // chi-square, 3 degrees of freedom: 16.27 is the 0.1% point
    const chi = probs.reduce((s, p, i) => s + (counts[i]! - n * p) ** 2 / (n * p), 0);
    assert.ok(chi < 16.27, `chi² ${chi} (${counts})`);
  });
});

describe('grammar', () => {
  // pieces that fit the grammar, pieces that do not, and pieces that only partly do
  const vocab = new TinyVocab(
    ['</s>', '(', ')', 'a', 'b', 'ab', 'ba', 'x', 'y', 'xy', '(a', 'b)', ')(', 'a)x', ' ', '(('],
    [0],
  );
  const gbnf = 'root ::= "(" [ab]+ ")"';

  for (const grammarFirst of [false, true]) {
    test(`no token ever leaves the grammar (${grammarFirst ? 'grammar first' : 'sample, then check'})`, () => {
      let resampled = 0;
      for (let seed = 0; seed < 20; seed++) {
        const chain = createSamplingChain({ grammar: gbnf, seed, temperature: 1.2, top_k: 0 }, vocab);
        chain.grammarFirst = grammarFirst;
        const rng = new Mt19937(seed + 100);
        let text = '';
        for (let step = 0; step < 40; step++) {
          const logits = randomLogits(vocab.nTokens, rng);
          logits[7] = logits[7]! + 3; // 'x' is likely and never allowed
          logits[0] = logits[0]! - 1;
          const id = chain.choose(logits);
          if (chain.passes > 1) resampled++;
          assert.ok(chain.grammar!.allows(id), `token ${id} after ${JSON.stringify(text)}`);
          chain.accept(id);
          if (vocab.isEog(id)) break;
          text += vocab.pieces[id];
        }
        assert.match(text, /^\([ab]*\)?$|^\([ab]+\)$/);
        if (chain.grammar!.isComplete()) assert.match(text, /^\([ab]+\)$/);
      }
      if (grammarFirst) assert.equal(resampled, 0);
      else assert.ok(resampled > 0, 'some choices were rejected and resampled');
    });
  }

  test('resampling gives the grammar-masked distribution', () => {
    // first token: only "(" and "(a" are allowed; "x" is far more likely unconstrained
    const logits = new Float32Array(vocab.nTokens).fill(-10);
    logits[7] = 3;
    logits[1] = 0;
    logits[10] = Math.log(3);
    const chain = createSamplingChain({ grammar: gbnf, seed: 77, temperature: 1, top_k: 0, top_p: 1, min_p: 0 }, vocab);
    const counts = new Map<number, number>();
    const n = 20000;
    for (let i = 0; i < n; i++) {
      const id = chain.choose(logits);
      counts.set(id, (counts.get(id) ?? 0) + 1);
      chain.grammar!.reset();
    }
    assert.deepEqual(
      [...counts.keys()].sort((a, b) => a - b),
      [1, 10],
    );
    const share = counts.get(10)! / n;
    assert.ok(Math.abs(share - 0.75) < 0.015, `share of "(a": ${share}`);
  });

  test('json_schema (object or text) and reset', () => {
    const digits = new TinyVocab(['</s>', '1', '2', '12', '"', 'a', '-'], [0]);
    for (const schema of [{ type: 'integer', minimum: 0 }, '{"type": "integer", "minimum": 0}']) {
      const chain = createSamplingChain({ json_schema: schema, seed: 3, temperature: 2 }, digits);
      const rng = new Mt19937(4);
      let text = '';
      for (let i = 0; i < 10; i++) {
        const id = chain.sample(randomLogits(digits.nTokens, rng));
        if (digits.isEog(id)) break;
        text += digits.pieces[id];
      }
      assert.match(text, /^[12]+$/);
      chain.reset();
      assert.equal(chain.grammar!.allows(5), false);
      assert.equal(chain.grammar!.allows(1), true);
    }
  });
});

describe('logit bias and ignore_eos', () => {
  const vocab = new TinyVocab(['</s>', 'a', 'b', 'ab', '<eot>'], [0, 4]);

  test('pairs, objects, text and false', () => {
    const bias = (p: SamplingParams) =>
      createSamplingChain(p, vocab)
        .step<LogitBiasSampler>('logit-bias')
        ?.biases.map((b) => [b.token, b.bias]);
    assert.deepEqual(
      bias({
        logit_bias: [
          [2, 1.5],
          ['ab', -1],
          [1, false],
        ],
      }),
      [
        [2, 1.5],
        [3, -1],
        [1, -Infinity],
      ],
    );
    assert.deepEqual(bias({ logit_bias: { '2': 0.5, ba: 1, '1': false } }), [
      [1, -Infinity],
      [2, 0.5],
      [2, 1],
      [1, 1],
    ]);
    assert.deepEqual(bias({ ignore_eos: true }), [
      [0, -Infinity],
      [4, -Infinity],
    ]);
  });

  test('a banned token is never chosen; ignore_eos never ends', () => {
    const chain = createSamplingChain(
      { ignore_eos: true, logit_bias: [[1, false]], seed: 1, temperature: 5, top_k: 0, min_p: 0 },
      vocab,
    );
    for (let i = 0; i < 500; i++) {
      const id = chain.sample(Float32Array.of(10, 1, 0, 0, 10));
      assert.ok(id === 2 || id === 3, String(id));
    }
  });
});

describe('DRY sequence breakers from text', () => {
  test("tokens containing a breaker, and token ends that begin one with the rest tokenized (llama.cpp's rule)", () => {
    const vocab = new TinyVocab(['</s>', 'a', 'b', ':', 'b:', 'ca', 'ab:', 'zab', 'q\nr', 'aa'], [0]);
    const map = dryBreakersFromStrings(vocab, ['ab:', '\n']);
    const show = Object.fromEntries([...map].map(([k, v]) => [vocab.pieces[k]!, v.map((t) => Array.from(t))]));
    assert.deepEqual(show, {
      a: [[4]], // "a" + "b:"
      ca: [[4]],
      aa: [[4]],
      'ab:': [[]],
      zab: [[3]], // "ab" + ":"
      'q\nr': [[]],
    });
  });

  test('DRY through the chain penalizes the continuation of a repeat', () => {
    const pieces = ['</s>', 'the', ' cat', ' sat', '.', '\n', ' on', ' mat'];
    const vocab = new TinyVocab(pieces, [0]);
    const chain = createSamplingChain({ dry_multiplier: 1, dry_allowed_length: 2, samplers: ['dry'], seed: 1 }, vocab);
    for (const t of [1, 2, 3, 6, 1, 7, 4, 1, 2]) chain.accept(t); // "the cat sat on the mat. the cat"
    const c = chain.candidates;
    chain.choose(new Float32Array(pieces.length));
    // " sat" (3) would repeat "the cat sat": 1 · 1.75^(2-2) = 1 off its logit
    const i = Array.from(c.ids.subarray(0, c.size)).indexOf(3);
    assert.ok(Math.abs(c.probs[i]! - Math.exp(-1) / (Math.exp(-1) + pieces.length - 1)) < 1e-6);
  });
});

describe('completion probabilities', () => {
  test('raw (default): softmax of the logits before any sampler', () => {
    const logits = Float32Array.of(1, 3, 2, 3, -1);
    const row = rawProbabilities(logits, 2, 3);
    const e = Array.from(logits, (l) => Math.exp(l - 3));
    const sum = e.reduce((a, b) => a + b);
    assert.deepEqual(
      row.top.map((t) => t.id),
      [1, 3, 2],
    );
    assert.ok(Math.abs(row.prob - e[2]! / sum) < 1e-6);
    assert.ok(Math.abs(row.top[0]!.prob - e[1]! / sum) < 1e-6);
    // a long list (the selection path) agrees with a short one
    const big = Float32Array.from({ length: 3000 }, (_, i) => Math.sin(i));
    const r100 = rawProbabilities(big, 0, 100);
    const r10 = rawProbabilities(big, 0, 10);
    assert.deepEqual(r100.top.slice(0, 10), r10.top);
  });

  test('post-sampling: the final candidates, by probability, zeros left out', () => {
    const chain = createSamplingChain({ top_k: 3, seed: 9, temperature: 1, min_p: 0, top_p: 1 });
    const logits = Float32Array.of(0, 1, 2, 3, 4);
    const id = chain.choose(logits);
    const row = postSamplingProbabilities(chain.candidates, id, 10);
    assert.deepEqual(
      row.top.map((t) => t.id),
      [4, 3, 2],
    );
    const sum = row.top.reduce((s, t) => s + t.prob, 0);
    assert.ok(Math.abs(sum - 1) < 1e-6);
    assert.equal(row.prob, row.top.find((t) => t.id === id)!.prob);
    assert.equal(chain.candidates.ids[chain.candidates.selected], id);
  });

  test("JSON as llama.cpp's server writes it", () => {
    const pieces = ['a', ' b', '\xc3'];
    const rows = [
      {
        id: 0,
        prob: 0.5,
        top: [
          { id: 0, prob: 0.5 },
          { id: 2, prob: 0 },
        ],
      },
    ];
    const json = completionProbabilities(rows, (id) => pieces[id]!);
    assert.deepEqual(json, [
      {
        id: 0,
        token: 'a',
        bytes: [97],
        logprob: Math.log(0.5),
        top_logprobs: [
          { id: 0, token: 'a', bytes: [97], logprob: Math.log(0.5) },
          { id: 2, token: '', bytes: [0xc3], logprob: -3.4028234663852886e38 },
        ],
      },
    ]);
    const post = completionProbabilities(rows, (id) => pieces[id]!, true);
    assert.deepEqual(post[0]!.top_probs![1], { id: 2, token: '', bytes: [0xc3], prob: 0 });
    assert.equal(post[0]!.prob, 0.5);
  });
});

describe('speed', () => {
  test('150k vocabulary: the default chain and a no-top-k chain', () => {
    const logs: string[] = [];
    setLogCallback((_l, m) => logs.push(m));
    try {
      const n = 151_936;
      const logits = randomLogits(n, new Mt19937(1), 8);
      const chain = createSamplingChain({ seed: 1, penalty_repeat: 1.1 });
      for (let i = 0; i < 5; i++) chain.sample(logits);
      let t = performance.now();
      for (let i = 0; i < 50; i++) chain.sample(logits);
      const perToken = (performance.now() - t) / 50;
      const nok = createSamplingChain({ seed: 1, top_k: 0 });
      t = performance.now();
      for (let i = 0; i < 5; i++) nok.sample(logits);
      const perTokenFull = (performance.now() - t) / 5;
      console.log(`default chain ${perToken.toFixed(2)} ms/token, top_k 0 ${perTokenFull.toFixed(2)} ms/token`);
      assert.ok(perToken < 25, `${perToken} ms per token`);
    } finally {
      setLogCallback(null);
    }
  });
});
