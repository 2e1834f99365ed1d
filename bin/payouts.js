#!/usr/bin/env node
// CommonJS (bin/package.json says so): Node then never starts its ESM loader, a sixth of
// start-up. dist/cli.cjs is the bundle of src/cli.ts (scripts/build.mjs).
const Module = require('node:module');

if (Module.enableCompileCache) {
  // Node 22.1+ caches compiled code between runs itself.
  Module.enableCompileCache();
  require('../dist/cli.cjs');
} else {
  // Older Node: compile dist/cli.cjs with the V8 code cache written at build time
  // (scripts/code-cache.mjs), which spares parsing it and compiling the functions every
  // command runs. V8 ignores a cache that does not match the file or the Node version.
  const { readFileSync } = require('node:fs');
  const { dirname, join } = require('node:path');
  const { Script } = require('node:vm');
  const file = join(__dirname, '../dist/cli.cjs');
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
  const mod = new Module(file, module);
  mod.filename = file;
  script
    .runInThisContext()
    .call(mod.exports, mod.exports, Module.createRequire(file), mod, file, dirname(file));
}
