// The chat page (webui/) in Debian's chromium through puppeteer-core, against `llama-ts
// serve` on loopback with the generated tiny llama: a streamed reply, Stop, Regenerate
// and edit-and-resend as branches, the conversation again after a reload, a text file
// attached, export and import; then, with /v1/models answered as a router's two models
// (in the browser: this branch has no router mode) and scripted replies, the model picker,
// image and audio parts, reasoning, highlighted code with its Copy button, math; hostile
// markdown runs nothing; light and dark; a phone's width; axe-core finds nothing serious.
// The server wants an API key, typed in Settings. Screenshots go to a temporary folder (WEBUI_DOCS_SHOT=1 also writes docs/webui.png).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { HTTPRequest, Page } from 'puppeteer-core';
import { tinyLlama, tinyQwen2 } from './helpers/models.js';
import { BIN, startServe } from './helpers/serve-child.js';
import { REPO_ROOT } from './helpers/shared.js';

const CHROMIUM = '/usr/bin/chromium';

// The page-side callbacks below run in the browser; this program has no DOM library, so the
// few browser globals they name are declared here, for this file only.
// biome-ignore lint/suspicious/noExplicitAny: browser globals, typed by the browser
type Dom = any;
declare const document: Dom;
declare const window: Dom;
declare const navigator: Dom;
declare const getComputedStyle: Dom;
declare const MouseEvent: Dom;

const noBrowser = existsSync(CHROMIUM)
  ? false
  : `${CHROMIUM} is absent (Debian's chromium package); the browser test is skipped`;

/** One scripted streamed reply, as the server sends it. */
function sse(reasoning: string, content: string): string {
  const chunk = (delta: object) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
  return `${chunk({ role: 'assistant' })}${reasoning ? chunk({ reasoning_content: reasoning }) : ''}${chunk({ content })}data: [DONE]\n\n`;
}

const NICE_REPLY = [
  'Here is **Euler**: $e^{i\\pi} + 1 = 0$, and the sum',
  '',
  '$$\\sum_{k=1}^{n} k = \\frac{n(n+1)}{2}$$',
  '',
  '```python',
  'def total(n):',
  '    return n * (n + 1) // 2  # closed form',
  '```',
  '',
  '- one, for $5 or $6',
  '- [two](https://example.com/two), \\(x^2\\) inside a line',
].join('\n');

const HOSTILE_REPLY = [
  'Hi <img src=x onerror="window.__ran.push(\'img\')"> **bold <svg onload="window.__ran.push(\'svg\')">**',
  "<script>window.__ran.push('script')</script>",
  "[click](javascript:window.__ran.push('link')) [js2](JavaScript:alert(1)) [d](data:text/html,x) [ok](https://example.com/a?b=1)",
  "![pic](javascript:window.__ran.push('image')) <a href=\"javascript:window.__ran.push('a')\">a</a>",
  '`<b onmouseover="window.__ran.push(\'code\')">x</b>` *it<iframe src="javascript:window.__ran.push(\'iframe\')"></iframe>*',
  '<details open ontoggle="window.__ran.push(\'toggle\')">d</details> <math><mi xlink:href="javascript:window.__ran.push(\'mi\')">m</mi></math>',
  '$\\href{javascript:window.__ran.push(1)}{x}$',
  '',
  '```html',
  '<img src=y onerror="window.__ran.push(\'fence\')">',
  '```',
].join('\n');

test('the chat page in chromium', { skip: noBrowser, timeout: 90_000 }, async (t) => {
  const { default: puppeteer } = await import('puppeteer-core');
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-webui-'));
  const shots = join(dir, 'artifacts');
  const downloads = join(dir, 'downloads');
  mkdirSync(shots);
  mkdirSync(downloads);
  const child = await startServe(['-m', tinyLlama(), '-np', '1', '-c', '8192', '-t', '1', '--api-key', 'sesame']);
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: join(dir, 'profile'),
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  const started = Date.now();
  try {
    const page = await browser.newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error' && !m.text().includes('Failed to load resource')) errors.push(m.text());
    });
    // every chat request the page sends, as sent
    const sent: Record<string, unknown>[] = [];
    const keys = new Set<string | undefined>();
    page.on('request', (r) => {
      if (!r.url().endsWith('/v1/chat/completions')) return;
      sent.push(JSON.parse(r.postData() ?? 'null'));
      keys.add(r.headers().authorization);
    });
    const cdp = await page.createCDPSession();
    await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
    await browser
      .defaultBrowserContext()
      .overridePermissions(child.url, ['clipboard-read', 'clipboard-sanitized-write']);

    const text = (sel: string) => page.$eval(sel, (e) => (e.textContent ?? '') as string);
    const count = (sel: string) => page.$$eval(sel, (l) => l.length);
    /** A field changed as by typing. */
    const setValue = (sel: string, value: string) =>
      page.$eval(
        sel,
        (el, v) => {
          (el as Dom).value = v;
          el.dispatchEvent(new Event('input', { bubbles: true }));
        },
        value,
      );
    const setField = (id: string, value: string) => setValue(`#${id}`, value);
    const upload = async (sel: string, ...files: string[]) => {
      const input = await page.$(sel);
      await (input as unknown as { uploadFile(...f: string[]): Promise<void> }).uploadFile(...files);
    };
    /** Does `action`, then waits for the reply it asks for to end, with `n` replies on screen. */
    const replyTo = async (action: () => Promise<unknown>, n: number) => {
      const before = sent.length;
      await action();
      for (let i = 0; i < 100 && sent.length === before; i++) await new Promise((r) => setTimeout(r, 50));
      assert.ok(sent.length > before, 'a request was sent');
      await page
        .waitForFunction(
          (k: number) =>
            document.querySelectorAll('.msg.assistant[data-state="done"], .msg.assistant[data-state="stopped"]')
              .length === k && !document.querySelector('#stop'),
          { timeout: 15_000 },
          n,
        )
        .catch(async (e: Error) => {
          throw new Error(
            `${e.message}; page: ${(await text('main')).slice(-1500)}; serve: ${child.stderr().slice(-1000)}`,
          );
        });
    };
    /** Text content of the screenshotted state, checked against what it should show. */
    const shot = async (name: string, expect: string[]) => {
      const shown = await text('#app-root');
      for (const s of expect)
        assert.ok(shown.includes(s), `${name}: ${JSON.stringify(s)} not in ${shown.slice(0, 500)}`);
      await page.screenshot({ path: join(shots, `${name}.png`) });
      assert.ok(statSync(join(shots, `${name}.png`)).size > 5000, name);
    };
    /** axe-core over the page as it is: no serious or critical violation. */
    const axe = async (state: string) => {
      if (!(await page.evaluate(() => 'axe' in window)))
        await page.evaluate(readFileSync(join(REPO_ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8'));
      const found = (await page.evaluate(async () => {
        const r = await window.axe.run(document, { resultTypes: ['violations'] });
        return r.violations.map((v: Dom) => ({ id: v.id, impact: v.impact, nodes: v.nodes.map((n: Dom) => n.target) }));
      })) as { id: string; impact: string }[];
      const bad = found.filter((v) => v.impact === 'serious' || v.impact === 'critical');
      assert.deepEqual(bad, [], `${state}: ${JSON.stringify(bad)}`);
    };

    await page.setViewport({ width: 1100, height: 760 });
    await page.goto(`${child.url}/`, { waitUntil: 'load' });
    await page.waitForSelector('body[data-started]');
    // one model: the picker shows it (/v1/models is public, as llama-server's)
    const models = (await (await fetch(`${child.url}/v1/models`)).json()) as { data: { id: string }[] };
    const modelId = models.data[0]!.id;
    await page.waitForFunction(() => document.querySelectorAll('#model option').length > 0);
    assert.deepEqual(await page.$$eval('#model option', (o) => o.map((x) => x.textContent)), [modelId]);
    // the server wants a key: typed in Settings
    await page.click('#toggle-settings');
    await setField('api-key', 'sesame');

    // ---- a streamed reply, stopped midway ----
    await setField('s-temperature', '0');
    await setField('s-max-tokens', '6000');
    await setField('system', 'Be brief.');
    // a slow link keeps the stream going long enough to stop it midway
    await page.emulateNetworkConditions({ download: 4000, upload: 1_000_000, latency: 0 });
    await page.type('#input', 'Hello there');
    await page.click('#send');
    await page.waitForFunction(
      () => (document.querySelector('.msg.assistant .content')?.textContent ?? '').length > 0,
      {
        timeout: 15_000,
      },
    );
    assert.equal(await page.$eval('.msg.assistant', (m) => m.dataset.state), 'streaming');
    assert.deepEqual(sent[0], {
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hello there' },
      ],
      model: modelId,
      temperature: 0,
      max_tokens: 6000,
      stream: true,
    });
    await page.click('#stop');
    await page.waitForSelector('.msg.assistant[data-state="stopped"]', { timeout: 5000 });
    await page.emulateNetworkConditions(null);
    const stopped = await text('.msg.assistant .content');
    assert.ok(stopped.length > 0);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(await text('.msg.assistant .content'), stopped, 'no text after Stop');
    assert.equal(await text('.msg.assistant .note'), '(stopped)');

    // ---- regenerate: a second version of the reply, the stopped one a click away ----
    await setField('s-max-tokens', '8');
    await setField('system', '');
    await page.click('#toggle-settings');
    await replyTo(() => page.click('.msg.assistant .regenerate'), 1);
    assert.equal(await count('.msg.assistant'), 1);
    assert.equal(await text('.msg.assistant .branch-pos'), '2/2');
    const regenerated = await text('.msg.assistant .content');
    // the server's timings and finish_reason, under the reply
    const stats = /^(\d+) tokens, \d+\.\d tokens\/s$/.exec(await text('.msg.assistant .stats'));
    assert.ok(stats && Number(stats[1]) >= 1 && Number(stats[1]) <= 8, String(stats));
    assert.equal(
      await page.$$eval('.msg.assistant .note', (l) => l.map((x) => x.textContent)).then(String),
      Number(stats[1]) === 8 ? '(cut at the token limit)' : '',
    );
    await page.click('.msg.assistant .prev');
    assert.equal(await text('.msg.assistant .content'), stopped);
    assert.equal(await text('.msg.assistant .branch-pos'), '1/2');
    await page.click('.msg.assistant .next');
    assert.equal(await text('.msg.assistant .content'), regenerated);

    // ---- edit and resend: a branch from the user's message ----
    await page.click('.msg.user .edit');
    await setValue('.msg.user .edit-text', 'Hello again');
    await replyTo(() => page.click('.msg.user .resend'), 1);
    assert.equal(await text('.msg.user .text'), 'Hello again');
    assert.equal(await text('.msg.user .branch-pos'), '2/2');
    assert.equal(await count('.msg.assistant .branches'), 0, 'the new branch has one reply');
    assert.deepEqual((sent.at(-1)!.messages as unknown[]).at(-1), { role: 'user', content: 'Hello again' });
    await page.click('.msg.user .prev');
    assert.equal(await text('.msg.user .text'), 'Hello there');
    assert.equal(await text('.msg.assistant .content'), regenerated, 'the old branch, its latest reply');
    await page.click('.msg.user .next');
    assert.equal(await text('.msg.user .text'), 'Hello again');

    // ---- a text file attached goes into the message's text ----
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'alpha beta\ngamma');
    await upload('#attach-file', notes);
    await page.waitForSelector('#composer .chip.kind-text');
    assert.match(await text('#composer .chips'), /notes\.txt/);
    await page.type('#input', 'Summarize');
    await replyTo(() => page.keyboard.press('Enter'), 2);
    assert.equal(await count('#composer .chip'), 0);
    assert.deepEqual(await page.$$eval('.msg.user .chips', (l) => l.map((x) => x.textContent)), ['textnotes.txt']);
    assert.deepEqual((sent.at(-1)!.messages as unknown[]).at(-1), {
      role: 'user',
      content: 'Summarize\n\nnotes.txt:\n```\nalpha beta\ngamma\n```',
    });
    assert.equal((sent.at(-1)!.messages as unknown[]).length, 3, 'the branch on screen, and the new message');

    assert.deepEqual([...keys], ['Bearer sesame']);

    // ---- kept in IndexedDB: after a reload, listed and opened as it was ----
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('#conversations li');
    assert.deepEqual(await page.$$eval('#conversations li .open', (b) => b.map((x) => x.textContent)), ['Hello there']);
    assert.equal(await count('.msg'), 0);
    await page.click('#conversations li .open');
    await page.waitForSelector('.msg.assistant');
    assert.deepEqual(await page.$$eval('.msg.user .text', (l) => l.map((x) => x.textContent)), [
      'Hello again',
      'Summarize',
    ]);

    // ---- export, delete, import ----
    await page.click('#export');
    let file = '';
    for (let i = 0; i < 50 && !file; i++) {
      await new Promise((r) => setTimeout(r, 100));
      file = readdirSync(downloads).find((f) => f.endsWith('.json')) ?? '';
    }
    assert.match(file, /^llama-ts-chats-\d{4}-\d\d-\d\d\.json$/);
    const exported = JSON.parse(readFileSync(join(downloads, file), 'utf8'));
    assert.equal(exported.format, 'llama-ts-chat');
    assert.equal(exported.conversations.length, 1);
    // two user versions, the first with two replies, the second with one then "Summarize"
    assert.equal(Object.keys(exported.conversations[0].nodes).length, 7);
    await page.click('#conversations li .delete');
    await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 0);
    await upload('#import-file', join(downloads, file));
    await page.waitForSelector('#conversations li');
    assert.match(await text('#notice'), /Imported 1 conversation from/);
    await page.click('#conversations li .open');
    await page.waitForSelector('.msg.user');
    assert.deepEqual(await page.$$eval('.msg.user .text', (l) => l.map((x) => x.textContent)), [
      'Hello again',
      'Summarize',
    ]);
    // a file that is not an export: an error naming it, nothing imported
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, '{"format":"other","conversations":[]}');
    await upload('#import-file', bad);
    await page.waitForFunction(() => !document.getElementById('error').hidden);
    assert.match(await text('#error'), /bad\.json: format "other" is not llama-ts-chat/);
    // nor one whose messages' parents form a loop
    const loop = structuredClone(exported);
    const [first, second] = Object.keys(loop.conversations[0].nodes);
    loop.conversations[0].id = 'loop';
    loop.conversations[0].nodes[first].parent = second;
    writeFileSync(bad, JSON.stringify(loop));
    await upload('#import-file', bad);
    await page.waitForFunction(() => /form a loop/.test(document.getElementById('error').textContent));
    assert.equal(await count('#conversations li'), 1);

    // ---- Branch: a new conversation with the branch up to a reply ----
    await page.click('.msg.assistant .branch');
    await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 2);
    assert.equal(await text('#title'), 'Hello there (branch)');
    assert.deepEqual(await page.$$eval('.msg', (l) => l.map((m) => m.className)), ['msg user', 'msg assistant']);
    assert.equal(await text('.msg.user .text'), 'Hello again');
    assert.equal(await count('.msg .branches'), 0, 'a copy of one branch');

    // ---- deleted while its reply streams: the reply ends and is not saved back ----
    await page.click('#new-chat');
    await page.click('#toggle-settings');
    await setField('s-max-tokens', '6000');
    await page.click('#toggle-settings');
    await page.emulateNetworkConditions({ download: 4000, upload: 1_000_000, latency: 0 });
    await page.type('#input', 'Hello there');
    await page.click('#send');
    await page.waitForSelector('.msg.assistant[data-state="streaming"]', { timeout: 5000 });
    await page.waitForFunction(() => document.querySelectorAll('#conversations li').length === 3);
    await page.click('#conversations li.current .delete');
    await page.waitForFunction(
      () => document.querySelectorAll('#conversations li').length === 2 && !document.querySelector('#stop'),
    );
    await page.emulateNetworkConditions(null);
    await page.click('#toggle-settings');
    await setField('s-max-tokens', '8');
    await page.click('#toggle-settings');

    // ---- a conversation the first page kept (a flat list of messages) still opens ----
    await page.evaluate(
      () =>
        new Promise((resolve, reject) => {
          const req = window.indexedDB.open('llama-ts-chat', 1);
          req.onsuccess = () => {
            const tx = req.result.transaction('conversations', 'readwrite');
            tx.objectStore('conversations').put({
              id: 'old',
              title: 'Old chat',
              updated: 1,
              messages: [
                { role: 'user', content: 'Hi' },
                { role: 'assistant', content: 'Hello *there*', incomplete: true },
              ],
            });
            tx.oncomplete = resolve;
            tx.onerror = reject;
          };
          req.onerror = reject;
        }),
    );

    // ---- a router's two models (answered in the browser), scripted replies ----
    await page.setRequestInterception(true);
    const scripted: string[] = [];
    let secondState = 'unloaded';
    const propsAutoload = new Set<string | null>();
    page.on('request', (req: HTTPRequest) => {
      const url = new URL(req.url());
      const json = (body: unknown) =>
        req.respond({ status: 200, contentType: 'application/json', body: JSON.stringify(body) });
      if (url.pathname === '/v1/models')
        return void json({
          object: 'list',
          data: [
            { id: modelId, object: 'model', status: { value: 'loaded' } },
            {
              id: 'second-model',
              object: 'model',
              // llama-ts's router: a model with a projector, from its header
              capabilities: ['completion', 'multimodal', 'vision', 'audio'],
              status: { value: secondState },
            },
            // not for chat: left out of the picker
            { id: 'embedder', object: 'model', capabilities: ['embedding'], status: { value: 'unloaded' } },
          ],
        });
      if (url.pathname === '/props') {
        // the page never loads a model only to ask what it takes
        propsAutoload.add(url.searchParams.get('autoload'));
        if (url.searchParams.get('model') === 'second-model') {
          // as the router answers autoload=false for a model not loaded: the page then
          // offers what the list's capabilities say
          if (secondState !== 'loaded')
            return void req.respond({
              status: 400,
              contentType: 'application/json',
              body: JSON.stringify({ error: { code: 400, message: "model 'second-model' is not loaded" } }),
            });
          return void json({ modalities: { vision: true, audio: true } });
        }
      }
      if (url.pathname === '/v1/chat/completions' && JSON.parse(req.postData() ?? '{}').model === 'second-model') {
        // as a router does: the model named is loaded for the request
        secondState = 'loaded';
        const body = scripted.shift() ?? sse('', 'no script left');
        return void req.respond({ status: 200, contentType: 'text/event-stream', body });
      }
      void req.continue();
    });
    await page.reload({ waitUntil: 'load' });
    await page.waitForSelector('body[data-started]');
    await page.waitForSelector('#conversations li[data-id="old"]');
    assert.deepEqual(await page.$$eval('#conversations li .open', (b) => b.map((x) => x.textContent)), [
      'Hello there (branch)',
      'Hello there',
      'Old chat',
    ]);
    await page.click('#conversations li[data-id="old"] .open');
    await page.waitForSelector('.msg.assistant');
    assert.deepEqual(
      await page.$eval('.msg.assistant', (m) => [m.dataset.state, m.querySelector('.content em')?.textContent]),
      ['stopped', 'there'],
    );
    await page.click('#new-chat');
    await page.waitForFunction(() => document.querySelectorAll('#model option').length === 2);
    assert.deepEqual(await page.$$eval('#model option', (o) => o.map((x) => x.textContent)), [
      `${modelId} (loaded)`,
      'second-model (unloaded)',
    ]);
    await page.select('#model', 'second-model');
    await page.waitForFunction(() => document.getElementById('attach-file').accept.includes('image/*'));
    assert.match(await page.$eval('#attach-file', (e) => e.accept as string), /audio\/wav/);
    // an image and a sound go as image_url and input_audio parts
    const png = join(dir, 'dot.png');
    writeFileSync(
      png,
      Buffer.from(
        'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==',
        'base64',
      ),
    );
    const wav = join(dir, 'beep.wav');
    writeFileSync(
      wav,
      Buffer.from(
        'RIFF$\0\0\0WAVEfmt \x10\0\0\0\x01\0\x01\0\x40\x1f\0\0\x80\x3e\0\0\x02\0\x10\0data\0\0\0\0',
        'latin1',
      ),
    );
    await upload('#attach-file', png, wav);
    await page
      .waitForFunction(() => document.querySelectorAll('#composer .chip').length === 2, { timeout: 5000 })
      .catch(async (e: Error) => {
        throw new Error(`${e.message}: ${await text('#composer')} ${await text('#error')}`);
      });
    scripted.push(sse('The user wants <b>identities</b>; recall e^{iπ}.', NICE_REPLY));
    await page.type('#input', 'Show me some math');
    await replyTo(() => page.click('#send'), 1);
    const req = sent.at(-1)!;
    assert.equal(req.model, 'second-model');
    assert.deepEqual([...propsAutoload], ['false']);
    // the picker asks again after a reply: the router's state for each model
    await page.waitForFunction(
      () => document.getElementById('model').selectedOptions[0].textContent === 'second-model (loaded)',
    );
    const parts = (req.messages as { content: { type: string }[] }[]).at(-1)!.content as Dom[];
    assert.deepEqual(
      parts.map((p) => p.type),
      ['text', 'image_url', 'input_audio'],
    );
    assert.equal(parts[0].text, 'Show me some math');
    assert.match(parts[1].image_url.url, /^data:image\/png;base64,iVBORw0KGgo/);
    assert.equal(parts[2].input_audio.format, 'wav');
    assert.equal(Buffer.from(parts[2].input_audio.data, 'base64').subarray(0, 4).toString(), 'RIFF');
    // reasoning apart and folded; code highlighted with a Copy button; math as MathML
    await page.waitForSelector('.msg.assistant .content math', { timeout: 5000 });
    const shown = await page.$eval('.msg.assistant', (m) => ({
      open: m.querySelector('details.reasoning').open,
      reasoning: m.querySelector('.reasoning-text').textContent,
      strong: m.querySelector('.content strong').textContent,
      lang: m.querySelector('.code-bar span').textContent,
      keyword: m.querySelector('pre code .hljs-keyword')?.textContent,
      comment: m.querySelector('pre code .hljs-comment')?.textContent,
      maths: m.querySelectorAll('.content math').length,
      prices: m.querySelector('.content li').textContent === 'one, for $5 or $6',
      display: m.querySelectorAll('.content math[display="block"]').length,
      links: [...m.querySelectorAll('.content a')].map((a: Dom) => [a.getAttribute('href'), a.rel, a.target]),
      model: m.querySelector('.model-name').textContent,
    }));
    assert.deepEqual(shown, {
      open: false,
      reasoning: 'The user wants <b>identities</b>; recall e^{iπ}.',
      strong: 'Euler',
      lang: 'python',
      keyword: 'def',
      comment: '# closed form',
      maths: 3,
      display: 1,
      prices: true,
      links: [['https://example.com/two', 'noopener noreferrer nofollow', '_blank']],
      model: 'second-model',
    });
    await page.click('.msg.assistant .code-bar .copy');
    await page.waitForFunction(() => document.querySelector('.code-bar .copy').textContent === 'Copied');
    assert.equal(
      await page.evaluate(() => navigator.clipboard.readText()),
      'def total(n):\n    return n * (n + 1) // 2  # closed form',
    );
    await page.click('.msg.assistant details.reasoning summary');
    assert.equal(await page.$eval('.msg.assistant details.reasoning', (d) => d.open), true);
    await page.click('.msg.assistant details.reasoning summary');

    // ---- screenshots: light and dark at a desktop's width, a phone's width; axe ----
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor as string);
    assert.equal(await background(), 'rgb(255, 255, 255)');
    await shot('desktop-light', ['Show me some math', 'Reasoning', 'Euler', 'def total(n)', 'Copy', 'second-model']);
    if (process.env.WEBUI_DOCS_SHOT === '1') await page.screenshot({ path: join(REPO_ROOT, 'docs/webui.png') });
    await axe('desktop, light');
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'dark' }]);
    assert.equal(await background(), 'rgb(23, 24, 27)');
    await shot('desktop-dark', ['Show me some math', 'Euler']);
    await axe('desktop, dark');
    // the theme picked in Settings wins over the system's
    await page.click('#toggle-settings');
    await page.select('#theme', 'light');
    await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(255, 255, 255)');
    await axe('settings open');
    await page.select('#theme', 'system');
    await page.waitForFunction(() => getComputedStyle(document.body).backgroundColor === 'rgb(23, 24, 27)');
    await page.click('#toggle-settings');
    await page.emulateMediaFeatures([{ name: 'prefers-color-scheme', value: 'light' }]);
    // at a phone's width the list folds behind a button
    await page.setViewport({ width: 390, height: 844 });
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 390), 'nothing wider than the phone');
    await shot('phone', ['Show me some math', 'Euler']);
    await page.click('#toggle-sidebar');
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().left >= 0);
    await shot('phone-list', ['New chat', 'Show me some math', 'Export', 'Import']);
    await axe('phone, list open');
    await page.mouse.click(360, 500);
    await page.waitForFunction(() => document.getElementById('sidebar').getBoundingClientRect().right <= 0);
    await page.setViewport({ width: 1100, height: 760 });

    // ---- a reply drawn as it streams (block by block) is the reply drawn whole ----
    const streamed = await page.evaluate(async (text: string) => {
      const m = await import(document.querySelector('script[type="module"]').src);
      const whole = document.createElement('div');
      whole.append(m.renderMarkdown(text));
      const box = document.createElement('div');
      const view = new m.MarkdownView(box);
      const differ: number[] = [];
      for (let n = 0; n <= text.length; n += 7) {
        view.render(text.slice(0, n));
        const once = document.createElement('div');
        once.append(m.renderMarkdown(text.slice(0, n)));
        if (once.innerHTML !== box.innerHTML) differ.push(n);
      }
      view.render(text);
      return { same: box.innerHTML === whole.innerHTML, differ, blocks: box.childNodes.length };
    }, `${NICE_REPLY}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n1. first\n2. second\n\n> quoted\n\n${HOSTILE_REPLY}`);
    assert.deepEqual(streamed.differ, []);
    assert.ok(streamed.same && streamed.blocks > 8, JSON.stringify(streamed));

    // ---- hostile markdown runs nothing: under the page's CSP, and with it bypassed ----
    const hostile = async (p: Page) => {
      await p.evaluate(() => {
        window.__ran = [];
        window.__violations = 0;
        document.addEventListener('securitypolicyviolation', () => window.__violations++);
      });
      scripted.push(sse('<img src=r onerror="window.__ran.push(\'reasoning\')">', HOSTILE_REPLY));
      await p.click('#new-chat');
      await p.type('#input', 'Be hostile');
      await p.click('#send');
      await p.waitForSelector('.msg.assistant[data-state="done"] .content p', { timeout: 10_000 });
      // KaTeX's turn (\\href is not trusted), then hover everything, wait
      await new Promise((r) => setTimeout(r, 300));
      return p.evaluate(async () => {
        const host = document.querySelector('.msg.assistant');
        for (const el of host.querySelectorAll('*')) el.dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
        await new Promise((r) => setTimeout(r, 300));
        // the hook works: the same markup through innerHTML does run (where the CSP lets it)
        const control = document.createElement('div');
        control.innerHTML = '<img src=z onerror="window.__ran.push(\'control\')">';
        document.body.appendChild(control);
        await new Promise((r) => setTimeout(r, 300));
        const all = [...host.querySelectorAll('.content *')];
        return {
          ran: window.__ran,
          violations: window.__violations,
          onAttrs: all.filter((e: Dom) => [...e.attributes].some((a: Dom) => a.name.toLowerCase().startsWith('on')))
            .length,
          tags: [...new Set(all.map((e: Dom) => e.tagName.toLowerCase()))].filter((x) =>
            ['img', 'svg', 'script', 'iframe', 'details'].includes(x as string),
          ),
          hrefs: [...host.querySelectorAll('.content [href]')].map((a: Dom) => a.getAttribute('href')),
          fence: host.querySelector('pre code')?.textContent,
          text: host.querySelector('.content').textContent,
        };
      });
    };
    const strict = await hostile(page);
    assert.deepEqual(strict.ran, [], 'under the CSP');
    assert.equal(strict.violations, 1, 'only the control was refused by the CSP');
    const bypass = await browser.newPage();
    bypass.on('pageerror', (e) => errors.push(String(e)));
    await bypass.setBypassCSP(true);
    await bypass.setRequestInterception(true);
    bypass.on('request', (req: HTTPRequest) => {
      if (new URL(req.url()).pathname === '/v1/chat/completions')
        return void req.respond({
          status: 200,
          contentType: 'text/event-stream',
          body: scripted.shift() ?? sse('', 'no script left'),
        });
      void req.continue();
    });
    await bypass.goto(`${child.url}/`, { waitUntil: 'load' });
    await bypass.waitForSelector('body[data-started]');
    const loose = await hostile(bypass);
    for (const r of [strict, loose]) {
      assert.equal(r.onAttrs, 0);
      assert.deepEqual(r.tags, []);
      assert.deepEqual(r.hrefs, ['https://example.com/a?b=1']);
      assert.equal(r.fence, '<img src=y onerror="window.__ran.push(\'fence\')">');
      assert.ok(r.text.includes("<script>window.__ran.push('script')</script>"), r.text);
      assert.ok(r.text.includes("[click](javascript:window.__ran.push('link'))"), r.text);
    }
    assert.deepEqual(loose.ran, ['control'], 'without the CSP only the control ran');
    await bypass.screenshot({ path: join(shots, 'xss.png') });
    await bypass.close();
    // the one CSP refusal is the control's, counted above
    assert.deepEqual(
      errors.filter((e) => !e.includes('Content Security Policy')),
      [],
    );
    t.diagnostic(`browser part: ${Date.now() - started} ms; screenshots in ${shots}`);
  } finally {
    await browser.close();
    // the artifacts stay; the browser's profile goes
    rmSync(join(dir, 'profile'), { recursive: true, force: true });
    await new Promise((res) => {
      child.process.once('exit', res);
      child.process.kill('SIGTERM');
    });
  }
});

// Router mode (`serve --models-dir`), where the branch has it: two generated models, picked
// in the page in turn; each reply is from the model picked, whose state the list then shows.
const routerless = spawnSync(process.execPath, [BIN, 'serve', '--help'], { encoding: 'utf8' }).stdout.includes(
  '--models-dir',
)
  ? false
  : 'serve has no --models-dir (router mode) on this branch: the picker is tested above against a stubbed /v1/models';

test('the model picker against serve --models-dir', { skip: noBrowser || routerless, timeout: 90_000 }, async () => {
  const { default: puppeteer } = await import('puppeteer-core');
  const dir = mkdtempSync(join(tmpdir(), 'llama-ts-webui-router-'));
  const models = join(dir, 'models');
  mkdirSync(models);
  copyFileSync(tinyLlama(), join(models, 'llama.gguf'));
  copyFileSync(tinyQwen2(), join(models, 'qwen.gguf'));
  // an empty cache of its own: the router lists the download cache's models too (as
  // llama-server's), and the machine's cache would add to the two options asserted
  const child = await startServe([
    '--models-dir',
    models,
    '--cache-dir',
    join(dir, 'cache'),
    '--models-max',
    '2',
    '-c',
    '512',
    '-np',
    '1',
    '-t',
    '1',
  ]);
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: join(dir, 'profile'),
    args: ['--no-sandbox', '--disable-gpu', '--no-first-run'],
  });
  try {
    const page = await browser.newPage();
    const sent: string[] = [];
    page.on('request', (r) => {
      if (r.url().endsWith('/v1/chat/completions')) sent.push(JSON.parse(r.postData() ?? '{}').model);
    });
    await page.goto(`${child.url}/`, { waitUntil: 'load' });
    await page.waitForFunction(() => document.querySelectorAll('#model option').length === 2);
    const options = () => page.$$eval('#model option', (o) => o.map((x) => x.textContent));
    assert.deepEqual((await options()).sort(), ['llama (unloaded)', 'qwen (unloaded)']);
    await page.click('#toggle-settings');
    await page.$eval('#s-max-tokens', (el) => {
      (el as Dom).value = '4';
      el.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await page.click('#toggle-settings');
    for (const [model, prompt, replies] of [
      ['qwen', 'Hi', 1],
      ['llama', 'Again', 2],
    ] as const) {
      await page.select('#model', model);
      await page.type('#input', prompt);
      await page.click('#send');
      await page.waitForFunction(
        (n: number) =>
          document.querySelectorAll('.msg.assistant[data-state="done"]').length === n &&
          !document.querySelector('#stop'),
        { timeout: 30_000 },
        replies,
      );
      assert.equal(await page.$$eval('.msg.assistant .model-name', (l) => l.at(-1)?.textContent), model);
      await page.waitForFunction(
        (m: string) => document.getElementById('model').selectedOptions[0].textContent === `${m} (loaded)`,
        {},
        model,
      );
      assert.equal(await page.$eval('#error', (e) => e.hidden), true);
    }
    assert.deepEqual(sent, ['qwen', 'llama']);
  } finally {
    await browser.close();
    rmSync(dir, { recursive: true, force: true });
    await new Promise((res) => {
      child.process.once('exit', res);
      child.process.kill('SIGTERM');
    });
  }
});
