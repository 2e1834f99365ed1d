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

// V8 accepts a cache only under the flags it was made with, and the CLI sets V8 flags as it
// runs (src/core/v8-flags.ts): each file's cache is made under the flags that were set when
// the file was first compiled. The flags set so far are tracked here, by name.
/** Flags at their default value: setting one takes it out of the set flags. */
const DEFAULT_VALUES = new Set(['--semi-space-growth-factor=2']);
// Turning --liftoff-only off again needs the flags it implied restored too (V8 11, Node 20).
const DEFAULT_FLAGS = `--no-liftoff-only --wasm-tier-up --wasm-dynamic-tiering ${[...DEFAULT_VALUES].join(' ')}`;
/** The flags set now that differ from Node's defaults, by name. */
const flagsSet = new Map();
const setFlags = v8.setFlagsFromString;
v8.setFlagsFromString = (flags) => {
  for (const token of flags.split(/\s+/).filter(Boolean)) {
    const name = token.replace(/^--(no-)?/, '').split('=')[0];
    if (token.startsWith('--no-') || DEFAULT_VALUES.has(token)) flagsSet.delete(name);
    else flagsSet.set(name, token);
  }
  setFlags(flags);
};
/** The flags set now, as one string: a file's cache is made under exactly these. */
const flagsNow = () => [...flagsSet.values()].sort().join(' ');
/** Puts V8's flags back to Node's defaults, then sets `flags`, as a process that set them has. */
function setFlagsTo(flags) {
  v8.setFlagsFromString(DEFAULT_FLAGS);
  if (flags) v8.setFlagsFromString(flags);
}

/** Every dist file compiled so far, by path: one Script each (reused when run again). */
const scripts = new Map();
const loadJs = Module._extensions['.js'];
Module._extensions['.js'] = function loadForCache(mod, file) {
  if (!file.startsWith(dist) || !file.endsWith('.cjs')) return loadJs.call(this, mod, file);
  let script = scripts.get(file)?.script;
  if (!script) {
    script = new Script(Module.wrap(readFileSync(file, 'utf8')), { filename: file });
    scripts.set(file, { script, flags: flagsNow() });
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
  setFlagsTo('');
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
for (const flags of new Set([...scripts.values()].map((made) => made.flags))) {
  setFlagsTo(flags);
  for (const [file, made] of scripts) {
    if (made.flags === flags) writeFileSync(`${file}.cache`, made.script.createCachedData());
  }
}
server.close();
rmSync(home, { recursive: true, force: true });
if (failures.length) process.stderr.write(`code-cache: ${failures.join('; ')}\n`);
exit(failures.length ? 1 : 0);
