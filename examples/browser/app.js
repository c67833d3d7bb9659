// The llama-ts browser example: pick a model (a URL, downloaded once into the browser's
// storage, or a local file), then chat; replies stream in, Stop ends one. The engine runs
// in the page's workers (llama-ts/web), so the page never blocks.
import { clearDownloadCache, loadModel } from '/dist/src/web/index.js';

const $ = (id) => document.getElementById(id);
let ctx;
let messages = [];

$('env').textContent = crossOriginIsolated
  ? `cross-origin isolated: up to ${navigator.hardwareConcurrency} threads`
  : 'not cross-origin isolated: one thread (serve the page with COOP/COEP for more)';

// the models this server offers (llama-ts web -m FILE)
fetch('/models.json')
  .then((r) => (r.ok ? r.json() : []))
  .then((list) => {
    for (const u of list) $('served').append(new Option(u, u));
    if (list.length > 0 && !$('url').value) $('url').value = list[0];
  })
  .catch(() => {});

function bubble(role, text = '') {
  const div = document.createElement('div');
  div.className = `msg ${role}`;
  div.textContent = text;
  $('chat').append(div);
  div.scrollIntoView({ block: 'end' });
  return div;
}

function busy(on) {
  $('send').disabled = on || !ctx;
  $('input').disabled = !ctx;
  $('stop').disabled = !on;
}

$('load').addEventListener('click', async () => {
  const file = $('file').files[0];
  const model = file ?? $('url').value.trim();
  if (!model) return;
  $('load').disabled = true;
  $('progress').hidden = false;
  try {
    await ctx?.release();
    ctx = undefined;
    const t0 = performance.now();
    ctx = await loadModel({ model, n_threads: Number($('threads').value) || 1 }, (f, info) => {
      $('phase').textContent = info.phase === 'download' ? 'Downloading' : 'Loading';
      $('bar').value = f;
      $('pct').textContent =
        info.phase === 'download' && info.total
          ? `${(info.loaded / 2 ** 20).toFixed(1)} / ${(info.total / 2 ** 20).toFixed(1)} MiB`
          : `${Math.round(f * 100)}%`;
    });
    messages = [];
    $('chat').replaceChildren();
    const name = ctx.getModelInfo?.().metadata?.['general.name'] ?? (file ? file.name : model);
    $('stats').textContent = `${name} loaded in ${((performance.now() - t0) / 1000).toFixed(1)} s`;
    document.body.dataset.loaded = '1';
  } catch (e) {
    bubble('error', String(e.message ?? e));
  } finally {
    $('load').disabled = false;
    $('progress').hidden = true;
    busy(false);
  }
});

$('clear').addEventListener('click', () => clearDownloadCache().then(() => ($('stats').textContent = 'cache cleared')));

$('ask').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const text = $('input').value.trim();
  if (!text || !ctx) return;
  $('input').value = '';
  messages.push({ role: 'user', content: text });
  bubble('user', text);
  const reply = bubble('assistant');
  delete document.body.dataset.replied;
  busy(true);
  try {
    const r = await ctx.completion(
      { messages, n_predict: 256, temperature: Number($('temperature').value), jinja: true },
      (t) => {
        reply.textContent += t.token;
      },
    );
    reply.textContent = r.text;
    messages.push({ role: 'assistant', content: r.text });
    const tps = r.timings.predicted_per_second.toFixed(1);
    const pps = r.timings.prompt_per_second.toFixed(1);
    $('stats').textContent =
      `${r.timings.predicted_n} tokens, ${tps} tokens/s (prompt: ${r.timings.prompt_n} tokens, ${pps} tokens/s)${r.interrupted ? ', stopped' : ''}`;
  } catch (e) {
    reply.classList.add('error');
    reply.textContent = String(e.message ?? e);
  } finally {
    busy(false);
    document.body.dataset.replied = '1';
  }
});

$('stop').addEventListener('click', () => ctx?.stopCompletion());
