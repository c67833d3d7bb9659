'use strict';
// The CommonJS entry of llama-ts (`require('llama-ts')`). The library is an ES module;
// this facade loads it with import() on first use, so it works on every Node 20 (older
// 20.x cannot require() an ES module). loadModel() and loadLlamaModelInfo() are async
// anyway, so they forward directly; `load()` gives the whole ES module namespace.

let esm;

/** The ES module namespace of llama-ts (everything `import ... from 'llama-ts'` exports). */
function load() {
  if (!esm) esm = import('../dist/src/index.js');
  return esm;
}

exports.load = load;
exports.loadModel = (options, onProgress) => load().then((m) => m.loadModel(options, onProgress));
exports.loadLlamaModelInfo = (path) => load().then((m) => m.loadLlamaModelInfo(path));
exports.initLlama = () => load().then((m) => m.initLlama());
