#!/usr/bin/env node
// CommonJS (bin/package.json says so): Node then never starts its ESM loader, a sixth of
// start-up. dist/cli.cjs is the bundle of src/cli.ts (scripts/build.mjs).
const { enableCompileCache } = require('node:module');

// Caches compiled code between runs where Node supports it (22.1+), which trims start-up.
enableCompileCache?.();
require('../dist/cli.cjs');
