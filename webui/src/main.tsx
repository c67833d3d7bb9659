// The page's entry (bundled into dist/webui/app.js): opens IndexedDB and mounts the App.
import { render } from 'preact';
import { App } from './app.js';
import { Store } from './store.js';
import './app.css';

export { MarkdownView, renderMarkdown, safeHref } from './markdown.js';

// started only as the page's script (a test may import the module for its renderer)
const root = document.getElementById('app');
if (root && !root.dataset.started) {
  root.dataset.started = '1';
  Store.open()
    .then((store) => {
      root.replaceChildren(); // the <noscript> note
      render(<App store={store} />, root);
      document.body.dataset.started = '1';
    })
    .catch((e: Error) => {
      root.textContent = `The chat page could not start: ${e.message}`;
      root.setAttribute('role', 'alert');
    });
}
