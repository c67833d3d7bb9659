// The untrusted-work worker: hostile chat templates end with errors naming the limit they
// hit (and the process survives: `range(1000000000)` used to abort it from V8), long jobs
// are stopped by their time limit or an AbortSignal while the calling thread stays
// responsive, an overrunning job gets the worker terminated and the next job a fresh one,
// and a grammar compiled there samples exactly as one compiled in-process.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { ChatTemplate, ChatTemplateError } from '../src/chat/index.js';
import { setLogCallback } from '../src/log.js';
import {
  GrammarError,
  GrammarMatcher,
  GrammarSampler,
  type GrammarVocab,
  parseGrammar,
  SchemaError,
} from '../src/sampling/grammar/index.js';
import { UntrustedBusyError, UntrustedWorker, workerRenderer } from '../src/untrusted/index.js';

const MSGS = [{ role: 'user', content: 'Hi' }];
const NESTED = '{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}';

/** Largest gap between 10 ms ticks while `p` runs: how long this thread was blocked. */
async function maxLag<T>(p: Promise<T>): Promise<{ lag: number; result: PromiseSettledResult<T> }> {
  let lag = 0;
  let last = performance.now();
  const iv = setInterval(() => {
    const now = performance.now();
    lag = Math.max(lag, now - last);
    last = now;
  }, 10);
  const [result] = await Promise.allSettled([p]);
  clearInterval(iv);
  return { lag, result: result! };
}

function rejection<T>(r: PromiseSettledResult<T>): unknown {
  assert.equal(r.status, 'rejected', 'the job fails');
  return (r as PromiseRejectedResult).reason;
}

describe('untrusted-work worker: chat templates', () => {
  const w = new UntrustedWorker({ graceMs: 2000 });
  after(() => w.close());

  test('a good template renders there', async () => {
    const t = new ChatTemplate('{% for m in messages %}<{{ m.role }}>{{ m.content }}{% endfor %}{{ bos_token }}', {
      bosToken: '<s>',
    });
    assert.equal(await w.renderChatTemplate(t, MSGS), '<user>Hi<s>');
  });

  test('range(1000000000): a limit error naming maxItems, no allocation (the process used to abort)', async () => {
    const t = new ChatTemplate('{% for i in range(1000000000) %}x{% endfor %}', { label: 'chat template of x.gguf' });
    await assert.rejects(
      w.renderChatTemplate(t, MSGS),
      (e: unknown) =>
        e instanceof ChatTemplateError &&
        e.kind === 'limit' &&
        /chat template of x\.gguf built a list of more than 100000 items \(maxItems\)/.test(e.message),
    );
  });

  test('two nested range(100000) loops stop at timeMs; this thread is never blocked', async () => {
    const t = new ChatTemplate(NESTED);
    const { lag, result } = await maxLag(w.renderChatTemplate(t, MSGS, { limits: { timeMs: 300 } }));
    const e = rejection(result);
    assert.ok(e instanceof ChatTemplateError && e.kind === 'limit', String(e));
    // the renderer's own clock stops it; on a starved machine the worker's watchdog
    // (timeMs + graceMs) may get there first and terminate it: bounded either way
    assert.match((e as Error).message, /took longer than 300 ms (to render )?\(timeMs\)/);
    assert.ok(lag < 1000, `the calling thread was blocked for ${lag.toFixed(0)} ms`);
  });

  test('steps are counted deterministically (maxSteps)', async () => {
    const t = new ChatTemplate('{% for i in range(5000) %}{{ i }}{% endfor %}');
    await assert.rejects(
      w.renderChatTemplate(t, MSGS, { limits: { maxSteps: 1000 } }),
      /more than 1000 evaluation steps/,
    );
    assert.equal((await w.renderChatTemplate(t, MSGS, { limits: { maxSteps: 1_000_000 } })).length, 18890);
  });

  test('strings that double, and indent widths, are refused before they are built', async () => {
    const doubling = new ChatTemplate(
      "{% set s = 'x' %}{% for i in range(64) %}{% set s = s + s %}{% endfor %}{{ s }}",
    );
    await assert.rejects(
      w.renderChatTemplate(doubling, MSGS, { limits: { maxOutputChars: 1 << 20 } }),
      /built a string of more than 1048576 characters \(maxOutputChars\)/,
    );
    const indent = new ChatTemplate("{{ 'a\\nb' | indent(100000000) }}{{ messages | tojson(indent=100000000) }}");
    await assert.rejects(w.renderChatTemplate(indent, MSGS), /asked for an indent of 100000000 \(at most 1024\)/);
  });

  test('raise_exception is an error of kind raise (not a fallback)', async () => {
    const t = new ChatTemplate("{{ raise_exception('roles must alternate') }}");
    await assert.rejects(
      w.renderChatTemplate(t, MSGS),
      (e: unknown) => e instanceof ChatTemplateError && e.kind === 'raise' && /roles must alternate/.test(e.message),
    );
    // through applyWith, the policy of ChatTemplate.apply: a parse error falls back, a raise does not
    const render = workerRenderer(w);
    await assert.rejects(t.applyWith(MSGS, {}, render), /roles must alternate/);
    const broken = new ChatTemplate("{% if x %}<|im_start|>{{ '");
    setLogCallback(() => {});
    try {
      const r = await broken.applyWith(MSGS, {}, render);
      assert.equal(r.format, 'chatml');
      assert.match(r.fallbackReason ?? '', /does not parse/);
    } finally {
      setLogCallback(null);
    }
  });

  test('an AbortSignal ends a running render at once; the worker serves the next job', async () => {
    const ac = new AbortController();
    const t0 = performance.now();
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(w.renderChatTemplate(new ChatTemplate(NESTED), MSGS, {}, { signal: ac.signal }), {
      name: 'AbortError',
    });
    assert.ok(performance.now() - t0 < 2000, 'the promise settles when aborted');
    const t = new ChatTemplate('{{ messages[0].content }}');
    assert.equal(await w.renderChatTemplate(t, MSGS), 'Hi');
  });

  test('an aborted job still waiting never runs', async () => {
    const ac = new AbortController();
    const first = w.renderChatTemplate(new ChatTemplate(NESTED), MSGS, { limits: { timeMs: 200 } });
    const second = w.renderChatTemplate(new ChatTemplate('{{ 1 }}'), MSGS, {}, { signal: ac.signal });
    ac.abort();
    await assert.rejects(second, { name: 'AbortError' });
    await assert.rejects(first, /timeMs/);
  });
});

describe('untrusted-work worker: time limits, termination, queue', () => {
  test('a job past its time is stopped by terminating the worker; the next job gets a fresh one', async () => {
    const w = new UntrustedWorker({ graceMs: 0 });
    try {
      const big = { enum: Array.from({ length: 100_000 }, (_, k) => `value-${k}`) };
      const { lag, result } = await maxLag(w.compileGrammar({ jsonSchema: big }, { timeMs: 1 }));
      const e = rejection(result);
      assert.ok(e instanceof GrammarError, String(e));
      assert.match((e as Error).message, /compiling the JSON schema took longer than 1 ms \(timeMs\)/);
      assert.ok(lag < 1000, `blocked for ${lag.toFixed(0)} ms`);
      const startsBefore = w.starts;
      const c = await w.compileGrammar({ grammar: 'root ::= "a"' });
      assert.equal(w.starts, startsBefore + 1, 'a fresh worker');
      assert.equal(c.names[c.root], 'root');
    } finally {
      await w.close();
    }
  });

  test('too many waiting jobs: UntrustedBusyError', async () => {
    const w = new UntrustedWorker({ maxQueue: 2 });
    try {
      const jobs = [1, 2, 3].map(() => w.compileGrammar({ grammar: 'root ::= "a"' }));
      await assert.rejects(w.compileGrammar({ grammar: 'root ::= "a"' }), UntrustedBusyError);
      await Promise.all(jobs);
    } finally {
      await w.close();
    }
  });
});

describe('untrusted-work worker: grammars', () => {
  const w = new UntrustedWorker();
  after(() => w.close());

  test('GBNF and JSON-schema errors come back as GrammarError (line:column) and SchemaError (pointer)', async () => {
    await assert.rejects(
      w.compileGrammar({ grammar: 'root ::= "a" | foo\nbar ::= "x"' }),
      (e: unknown) =>
        e instanceof GrammarError && e.line === 1 && e.column === 16 && /undefined rule 'foo'/.test(e.message),
    );
    await assert.rejects(
      w.compileGrammar({ jsonSchema: { properties: { a: { type: 'nope' } } } }),
      (e: unknown) => e instanceof SchemaError && e.pointer === '#/properties/a/type',
    );
    await assert.rejects(
      w.compileGrammar({ grammar: 'root ::= "a"' }, { limits: { maxGrammarChars: 5 } }),
      /maxGrammarChars/,
    );
  });

  test('a compiled grammar samples exactly as one parsed in-process, <text> tokens resolved at attach', async () => {
    const pieces = ['<|end|>', 'a', 'b', 'ab', '<|sep|>', '{', '}', 'x', ':', ',', ' ', 'yes', 'no'];
    const vocab: GrammarVocab & { encode(t: string): number[] } = {
      nTokens: pieces.length,
      pieceBytes: (id) => pieces[id]!,
      isEog: (id) => id === 0,
      encode: (t) => (pieces.includes(t) ? [pieces.indexOf(t)] : [1, 1]),
    };
    const gbnf = 'root ::= ("a" | "b")+ <|sep|> | "yes" x\nx ::= " " "no"';
    const remote = GrammarSampler.fromCompiled(await w.compileGrammar({ grammar: gbnf }), vocab);
    const local = new GrammarSampler(parseGrammar(gbnf, { vocab }), vocab);
    const ids = Int32Array.from(pieces.keys());
    for (const walk of [
      [1, 3, 2, 4],
      [11, 10, 12],
    ]) {
      for (const id of walk) {
        const a = { ids, logits: new Float32Array(pieces.length), n: pieces.length };
        const b = { ids, logits: new Float32Array(pieces.length), n: pieces.length };
        remote.apply(a);
        local.apply(b);
        assert.deepEqual(a.logits, b.logits);
        remote.accept(id);
        local.accept(id);
      }
      remote.reset();
      local.reset();
    }
    assert.ok(new GrammarMatcher(remote.grammar).acceptString('ab'));
  });
});
