#!/usr/bin/env node
import { existsSync } from 'node:fs';
import module from 'node:module';

// Listening comes first: a stop while the bundle loads is heard, and src/cli.ts (which takes
// these over) counts it, so a --json run still prints its document instead of dying silently.
const heard = [];
const listener = (signal) => heard.push(signal);
const stops = ['SIGINT', 'SIGTERM', 'SIGHUP'];
if (process.platform === 'win32') stops.push('SIGBREAK');
for (const signal of stops) process.on(signal, listener);
globalThis[Symbol.for('payouts.earlyStops')] = { heard, listener };

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
