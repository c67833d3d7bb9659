// The untrusted-work worker thread: renders chat templates and compiles grammars and JSON
// schemas for an UntrustedWorker (client.ts), one job at a time. Parsed templates (with
// their probe results) are kept for the next request. A template render stops itself at
// its limits (TemplateLimits) or when the client raises the cancel flag; the client
// terminates this thread when a job overruns anyway.
import { ChatTemplate, ChatTemplateError } from '../chat/template.js';
import { toolCallGrammar } from '../chat/tool-grammar.js';
import { setLogCallback } from '../log.js';
import { platform } from '../platform/index.js';
import { compileGrammar } from '../sampling/grammar/compile.js';
import { SchemaError } from '../sampling/grammar/json-schema.js';
import { GrammarError } from '../sampling/grammar/rules.js';
import type { ErrorData, Reply, Request, TemplateSpec, WorkerInit } from './protocol.js';

const side = await platform.workerSide();
if (!side) throw new Error('llama-ts: src/untrusted/worker.js runs as a worker thread');
const port = side.parent;
const cancel = new Int32Array((side.data as WorkerInit).cancel);

const post = (r: Reply, transfer: ArrayBuffer[] = []) => port.postMessage(r, transfer);
setLogCallback((level, message, source) => post({ log: [level, message, source] }));

/** Recently used templates, most recent last. */
const TEMPLATE_CACHE = 8;
const templates = new Map<string, ChatTemplate>();

function template(spec: TemplateSpec): ChatTemplate {
  const key = `${spec.label}\0${spec.bosToken}\0${spec.eosToken}\0${spec.addBos}\0${spec.addEos}\0${spec.source}`;
  let t = templates.get(key);
  if (t) templates.delete(key);
  else {
    const { bosToken, eosToken, addBos, addEos, label } = spec;
    t = new ChatTemplate(spec.source, { bosToken, eosToken, addBos, addEos, label });
  }
  templates.set(key, t);
  if (templates.size > TEMPLATE_CACHE) templates.delete(templates.keys().next().value as string);
  return t;
}

function errorData(e: unknown): ErrorData {
  if (e instanceof ChatTemplateError) return { name: e.name, message: e.message, kind: e.kind };
  if (e instanceof SchemaError) return { name: e.name, message: e.message, pointer: e.pointer, reason: e.reason };
  if (e instanceof GrammarError) {
    return { name: e.name, message: e.message, reason: e.reason, line: e.line, column: e.column };
  }
  if (e instanceof RangeError && /call stack/i.test(e.message)) {
    return { name: 'RangeError', message: 'nested too deeply (the call stack ran out)' };
  }
  const err = e instanceof Error ? e : new Error(String(e));
  return { name: err.name, message: err.message };
}

port.onMessage((message) => {
  const m = message as Request;
  post({ id: m.id, started: true });
  try {
    if (m.op === 'render') {
      const shouldStop = () => Atomics.load(cancel, 0) === m.id;
      const prompt = template(m.template).renderJinja(m.messages, {
        ...m.opts,
        limits: { ...m.opts.limits, shouldStop },
      });
      post({ id: m.id, ok: true, value: prompt });
    } else if (m.op === 'compile') {
      const c = compileGrammar(m.source, m.limits);
      post({ id: m.id, ok: true, value: c }, [c.types.buffer, c.values.buffer, c.ruleStart.buffer] as ArrayBuffer[]);
    } else {
      const g = toolCallGrammar(m.request);
      const c = compileGrammar({ grammar: g.grammar }, m.limits);
      post({ id: m.id, ok: true, value: { compiled: c, lazy: g.lazy, triggers: g.triggers } }, [
        c.types.buffer,
        c.values.buffer,
        c.ruleStart.buffer,
      ] as ArrayBuffer[]);
    }
  } catch (e) {
    post({ id: m.id, ok: false, error: errorData(e) });
  }
});
