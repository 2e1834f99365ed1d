#!/usr/bin/env node
import module from 'node:module';

// Caches compiled code between runs where Node supports it (22.1+), which trims start-up.
module.enableCompileCache?.();
await import('../dist/cli.js');
