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
    compileWithCache(mod, file);
  };

  /** Runs a dist file as the module `mod`, compiled with the code cache beside it. */
  const compileWithCache = (mod, file) => {
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
      .call(mod.exports, mod.exports, requireFor(mod, file), mod, file, dirname(file));
  };

  /**
   * The `require` of a dist file. The bundle's chunks require each other by relative path;
   * those are loaded here directly, because Node's resolution stats the file and reads the
   * package.json scope on every call (about 5 ms of `payouts status`). Anything else goes to
   * Node's own require.
   */
  const requireFor = (parent, file) => {
    const dir = dirname(file);
    let standard;
    return function requireDist(request) {
      if (request.startsWith('./') && request.endsWith('.cjs')) {
        const target = join(dir, request);
        const cached = Module._cache[target];
        if (cached !== undefined) return cached.exports;
        const child = new Module(target, parent);
        child.filename = target;
        child.paths = parent.paths;
        // Cached before it runs, as Node does, so a cycle gets the exports made so far.
        Module._cache[target] = child;
        let done = false;
        try {
          compileWithCache(child, target);
          done = true;
        } finally {
          if (!done) delete Module._cache[target];
        }
        child.loaded = true;
        return child.exports;
      }
      standard ??= Module.createRequire(file);
      return standard(request);
    };
  };
}
require('../dist/cli.cjs');
