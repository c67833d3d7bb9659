// KaTeX as its own bundle (dist/webui/math.js), fetched the first time a reply holds math.
// MathML output: the browser draws it, so no KaTeX fonts or stylesheet are shipped.
import katex from 'katex';

export function renderMath(tex: string, display: boolean): string {
  const html = katex.renderToString(tex, { displayMode: display, output: 'mathml', throwOnError: false, trust: false });
  // the TeX source KaTeX keeps beside the MathML (<semantics>, <annotation>) is left out:
  // the sanitiser does not pass those elements, and their text would show
  return html.replace(/<\/?semantics>/g, '').replace(/<annotation\b[^>]*>[\s\S]*?<\/annotation>/g, '');
}
