#!/usr/bin/env node
import { existsSync } from 'node:fs';
import module from 'node:module';

// A clone (scripts/ is not in the package) builds dist/ on first use: the package itself
// ships dist/ built by prepack, so installing it runs no script of ours.
const built = new URL('../dist/cli.js', import.meta.url);
const buildScript = new URL('../scripts/build.mjs', import.meta.url);
if (!existsSync(built) && existsSync(buildScript)) {
  process.stderr.write('payouts: building dist/ (first run from a clone)\n');
  await import(buildScript.href);
}
// Node 22.1+ keeps compiled code between runs; imported after, so the bundle benefits.
if (typeof module.enableCompileCache === 'function') module.enableCompileCache();
await import('../dist/cli.js');
