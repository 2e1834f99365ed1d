// Writes dist/cli.cjs.cache, the V8 code cache that bin/payouts.js hands to V8 on Node
// versions without module.enableCompileCache (before 22.1). It compiles dist/cli.cjs exactly as
// the bin does and runs `payouts --help` once, so that the cache also holds the functions
// that build the command tree and parse arguments, which every command runs; V8 otherwise
// compiles them on each start. Run by scripts/build.mjs with the Node that will run the CLI
// (npm install runs the build); a cache from another V8 is rejected and ignored.
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

const file = new URL('../dist/cli.cjs', import.meta.url).pathname;
const script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file });
process.argv = [process.execPath, file, '--help'];
process.on('exit', () => writeFileSync(`${file}.cache`, script.createCachedData()));
const mod = new Module(file);
mod.filename = file;
script
  .runInThisContext()
  .call(mod.exports, mod.exports, createRequire(file), mod, file, dirname(file));
