// Bundles src/cli.ts into ES modules under dist/: one entry plus chunks that `await import()`
// loads on first use, so a command only loads the code it runs. Dependencies stay in
// node_modules (they are installed with the package), so none is both bundled and installed.
// A send's writer thread is an entry of its own, in chunks/ beside the code that starts it
// (src/state/writer.ts finds it there through import.meta.url).
import { rmSync } from 'node:fs';
import { build } from 'esbuild';

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli.ts', 'chunks/state-writer': 'src/state/state-writer.ts' },
  outdir: 'dist',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  packages: 'external',
  chunkNames: 'chunks/[name]-[hash]',
  logLevel: 'warning',
});
