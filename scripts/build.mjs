// Bundles src/cli.ts into dist/ with one lazily loaded chunk per command, so start-up
// only pays for the modules the invoked command needs.
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  sourcemap: 'linked',
  legalComments: 'none',
  chunkNames: 'chunks/[name]-[hash]',
  banner: {
    // CommonJS dependencies bundled into ESM still call require() for Node built-ins.
    js: "import { createRequire as __payoutsCreateRequire } from 'node:module'; const require = __payoutsCreateRequire(import.meta.url);",
  },
  logLevel: 'warning',
});
