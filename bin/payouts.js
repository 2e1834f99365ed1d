#!/usr/bin/env node
// CommonJS (bin/package.json says so): Node then never starts its ESM loader, a sixth of
// start-up. dist/cli.cjs is the bundle of src/cli.ts (scripts/build.mjs).
const Module = require('node:module');

if (Module.enableCompileCache) {
  // Node 22.1+ caches compiled code between runs itself.
  Module.enableCompileCache();
} else {
  // Older Node: compile each file of dist/ with the V8 code cache written beside it at build
  // time (scripts/code-cache.mjs), which spares parsing it and compiling the functions the
  // common commands run. V8 ignores a cache that does not match the file or the Node version.
  const { readFileSync } = require('node:fs');
  const { dirname, join, sep } = require('node:path');
  const { Script } = require('node:vm');
  const dist = join(__dirname, '..', 'dist') + sep;
  const loadJs = Module._extensions['.js'];
  Module._extensions['.js'] = function loadWithCodeCache(mod, file) {
    if (!file.startsWith(dist) || !file.endsWith('.cjs')) return loadJs.call(this, mod, file);
    let cachedData;
    try {
      cachedData = readFileSync(`${file}.cache`);
    } catch {
      // No cache (a build that could not write it): compile as usual.
    }
    const script = new Script(Module.wrap(readFileSync(file, 'utf8')), {
      filename: file,
      cachedData,
    });
    script
      .runInThisContext()
      .call(mod.exports, mod.exports, Module.createRequire(file), mod, file, dirname(file));
  };
}
require('../dist/cli.cjs');
