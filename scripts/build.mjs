// Bundles src/cli.ts into CommonJS files under dist/, with one lazily loaded chunk per command
// and per heavy dependency, so start-up only pays for the modules the invoked command needs.
//
// CommonJS because bin/payouts.js is CommonJS (bin/package.json says so): Node then never
// starts its ESM loader, a sixth of the start-up of `payouts --help`. esbuild splits only ESM
// output, so the build has two steps: esbuild bundles and splits into ESM chunks (each module
// exists in exactly one chunk, so `instanceof` on our error classes holds everywhere), then
// each chunk is turned into CommonJS on its own: `import` becomes require() and
// `await import()` becomes a require() on first use.
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import Module from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const ESM_DIR = 'dist/.esm';

/**
 * commander requires node:child_process at load time for stand-alone subcommand executables,
 * which payouts does not have; it costs every start-up the net, dgram and spawn modules. Here
 * it is required when commander first spawns instead.
 */
const lazyChildProcess = {
  name: 'lazy-child-process',
  setup(b) {
    b.onLoad({ filter: /[\\/]commander[\\/]lib[\\/]command\.js$/ }, (args) => {
      const eager = "const childProcess = require('node:child_process');";
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes(eager)) {
        throw new Error(`${args.path} no longer has the line ${eager} that the build replaces`);
      }
      const lazy =
        "const childProcess = { spawn: (...a) => require('node:child_process').spawn(...a) };";
      return { contents: text.replace(eager, lazy), loader: 'js' };
    });
  },
};

/**
 * undici's client requires its HTTP/2 module, and with it node:http2 and node:tls, at load
 * time; it only uses it when TLS negotiates h2, which needs the allowH2 option payouts never
 * sets. Here it is required on first use instead.
 */
const lazyUndiciH2 = {
  name: 'lazy-undici-h2',
  setup(b) {
    b.onLoad({ filter: /[\\/]undici[\\/]lib[\\/]dispatcher[\\/]client\.js$/ }, (args) => {
      const eager = "const connectH2 = require('./client-h2.js')";
      const text = readFileSync(args.path, 'utf8');
      if (!text.includes(eager)) {
        throw new Error(`${args.path} no longer has the line ${eager} that the build replaces`);
      }
      const lazy = "const connectH2 = (...a) => require('./client-h2.js')(...a)";
      return { contents: text.replace(eager, lazy), loader: 'js' };
    });
  },
};

/**
 * Small stand-ins for two built-in modules that undici requires at load time; only undici's
 * own requires are redirected.
 *
 * node:assert: undici requires it in 18 of its files, only ever to call assert(value, message)
 * on its own invariants; loading it (and the four internal modules it brings) was 7M of the
 * 245M instructions of `payouts status`. Undici gets this function instead, which throws the
 * same kind of error (code ERR_ASSERTION) when an invariant fails.
 *
 * node:http: undici reads two things from it. IncomingMessage, to treat a request body that
 * is an incoming HTTP message specially: the CLI's bodies are strings, so a class nothing is an
 * instance of will do. maxHeaderSize, the default limit on an answer's headers: Node's default,
 * 16 KiB, which payouts keeps whatever flags node runs with. Loading node:http and its eight
 * internal modules took about 2 ms of every `payouts status`.
 */
const UNDICI_SHIMS = {
  assert: `module.exports = function assert(value, message) {
  if (value) return;
  if (message instanceof Error) throw message;
  const err = new Error(message === undefined ? 'undici: an internal assertion failed' : String(message));
  err.name = 'AssertionError';
  err.code = 'ERR_ASSERTION';
  throw err;
};`,
  http: `module.exports = { IncomingMessage: class UnusedIncomingMessage {}, maxHeaderSize: 16 * 1024 };`,
};
const undiciShims = {
  name: 'undici-shims',
  setup(b) {
    b.onResolve({ filter: /^(node:)?(assert|http)$/ }, (args) => {
      if (!/[\\/]undici[\\/]/.test(args.importer)) return undefined;
      return { path: args.path.replace(/^node:/, ''), namespace: 'payouts-undici-shim' };
    });
    b.onLoad({ filter: /.*/, namespace: 'payouts-undici-shim' }, (args) => ({
      contents: UNDICI_SHIMS[args.path],
      loader: 'js',
    }));
  },
};

rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
await build({
  entryPoints: { cli: 'src/cli.ts' },
  outdir: ESM_DIR,
  // The chunks are named .cjs already, so that their imports of each other name the final files.
  outExtension: { '.js': '.cjs' },
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.18',
  sourcemap: 'linked',
  legalComments: 'none',
  chunkNames: 'chunks/[name]-[hash]',
  plugins: [lazyChildProcess, lazyUndiciH2, undiciShims],
  logLevel: 'warning',
});

/** Every file of a folder, recursively. */
const files = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(join(dir, e.name)) : [join(dir, e.name)],
  );

await build({
  entryPoints: files(ESM_DIR).filter((f) => f.endsWith('.cjs')),
  outbase: ESM_DIR,
  outdir: 'dist',
  outExtension: { '.js': '.cjs' },
  loader: { '.cjs': 'js' },
  // import() becomes require() on first use, not a trip through the ESM loader.
  supported: { 'dynamic-import': false },
  bundle: false,
  format: 'cjs',
  platform: 'node',
  target: 'node20.18',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
});
rmSync(new URL(`../${ESM_DIR}`, import.meta.url), { recursive: true, force: true });

// The V8 code caches of dist/ for Node 20 (see scripts/code-cache.mjs). Written by a child
// process, as the warm-up runs end with process.exit; their output is shown only on failure.
// Failing to write them only costs start-up time, so the build goes on.
// Node 22.1+ keeps its own compile cache (bin/payouts.js enables it) and needs none.
const cache = Module.enableCompileCache
  ? { status: 0 }
  : spawnSync(process.execPath, [fileURLToPath(new URL('code-cache.mjs', import.meta.url))], {
      stdio: ['ignore', 'pipe', 'pipe'],
      encoding: 'utf8',
    });
if (cache.status !== 0) {
  console.warn(`build: the code caches of dist/ may be incomplete\n${cache.stderr}`);
}
