#!/usr/bin/env node
import module from 'node:module';

// Node 22.1+ keeps compiled code between runs; imported after, so the bundle benefits.
if (typeof module.enableCompileCache === 'function') module.enableCompileCache();
await import('../dist/cli.js');
