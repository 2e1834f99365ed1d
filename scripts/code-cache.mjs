// Writes a V8 code cache beside each file of dist/ (FILE.cjs.cache), which bin/payouts.js hands
// to V8 on Node versions without module.enableCompileCache (before 22.1). V8 otherwise parses
// each file and compiles every function it runs, on every start: for `payouts status` that was
// most of the time the CLI added to Node's own start-up.
//
// A cache holds the functions compiled when it is made, so this compiles dist/ exactly as the
// bin does and runs the common commands in this one process first: `--help`, `status` against
// a canned loopback server, and a dry run of the sample file. Run by scripts/build.mjs with the
// Node that will run the CLI (npm install runs the build); V8 rejects a cache from another
// Node version or another build of the file, and the bin then compiles as usual.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createRequire, Module } from 'node:module';
import os from 'node:os';
import v8 from 'node:v8';
import { dirname, join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Script } from 'node:vm';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist') + sep;
const cli = join(dist, 'cli.cjs');

// V8 accepts a cache only under the flags it was made with, and commands that connect set
// --liftoff-only (src/core/service.ts) before loading the HTTP client: each file's cache is
// made under the flags that were set when the file was first compiled.
// Turning --liftoff-only off again needs the flags it implied restored too (V8 11, Node 20).
let liftoffOnly = false;
const setFlags = v8.setFlagsFromString;
v8.setFlagsFromString = (flags) => {
  if (flags === '--liftoff-only') liftoffOnly = true;
  setFlags(flags);
};
const DEFAULT_FLAGS = '--no-liftoff-only --wasm-tier-up --wasm-dynamic-tiering';
/** Sets --liftoff-only on or off, as a process that did or did not connect has it. */
function setLiftoffOnly(on) {
  setFlags(on ? '--liftoff-only' : DEFAULT_FLAGS);
  liftoffOnly = on;
}

/** Every dist file compiled so far, by path: one Script each (reused when run again). */
const scripts = new Map();
const loadJs = Module._extensions['.js'];
Module._extensions['.js'] = function loadForCache(mod, file) {
  if (!file.startsWith(dist) || !file.endsWith('.cjs')) return loadJs.call(this, mod, file);
  let script = scripts.get(file)?.script;
  if (!script) {
    script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file });
    scripts.set(file, { script, liftoffOnly });
  }
  script
    .runInThisContext()
    .call(mod.exports, mod.exports, createRequire(file), mod, file, dirname(file));
};

/** A stand-in for the service: every payout it is asked about exists and succeeded. */
const server = http.createServer((req, res) => {
  req.resume();
  const ref = decodeURIComponent((req.url ?? '').split('/').pop() ?? '');
  const body = {
    success: true,
    message: ['Payout retrieved'],
    data: {
      reference_id: ref,
      status: 'success',
      amount: 10.5,
      currency: 'EUR',
      created_at: '2026-01-01T10:00:00.000Z',
      updated_at: '2026-01-01T10:00:01.000Z',
      transaction_id: `T-${ref}`,
      recipient: 'warm-up@example.com',
      description: '',
    },
  };
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));

const home = mkdtempSync(join(os.tmpdir(), 'payouts-code-cache-'));
for (const k of Object.keys(process.env)) {
  if (/^(PAYOUTS_|NODE_OPTIONS$|https?_proxy$|no_proxy$)/i.test(k)) delete process.env[k];
}
Object.assign(process.env, {
  XDG_STATE_HOME: join(home, 'state'),
  XDG_CONFIG_HOME: join(home, 'config'),
  PAYOUTS_BASE_URL: `http://127.0.0.1:${server.address().port}`,
  PAYOUTS_CLIENT_ID: 'warm-up',
  PAYOUTS_CLIENT_SECRET: 'warm-up-secret',
});

// The CLI ends with process.exit(code); here that ends one warm-up run instead.
const exit = process.exit;
let finished;
process.exit = (code) => finished?.(code);

/** Runs the CLI once with these arguments and resolves with its exit code. */
function runCli(args) {
  // Each run starts with Node's default flags, as each real process does.
  setLiftoffOnly(false);
  process.argv = [process.execPath, cli, ...args];
  const done = new Promise((resolve) => {
    finished = resolve;
  });
  delete createRequire(cli).cache[cli];
  createRequire(cli)(cli);
  return done;
}

const failures = [];
for (const args of [
  ['--help'],
  ['status', 'WARM-UP-1'],
  ['send', join(root, 'samples/payouts.csv'), '--dry-run'],
]) {
  const code = await runCli(args);
  if (code !== 0) failures.push(`payouts ${args.join(' ')} exited ${code}`);
}
for (const flag of [false, true]) {
  setLiftoffOnly(flag);
  for (const [file, made] of scripts) {
    if (made.liftoffOnly === flag) writeFileSync(`${file}.cache`, made.script.createCachedData());
  }
}
server.close();
rmSync(home, { recursive: true, force: true });
if (failures.length) process.stderr.write(`code-cache: ${failures.join('; ')}\n`);
exit(failures.length ? 1 : 0);
