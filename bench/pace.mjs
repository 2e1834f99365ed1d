// Throughput rows: `payouts send` against loopback services with real limits (issues 19, 28).
//
//   node bench/pace.mjs [--payouts 20000] [--runs 1] [--only bucket,cap16,cap10,nolimit,faulty,reconcile]
//                       [--reconcile-payouts 100000] [--out FILE]
//
// Each row sends the same file (chunks of 100) to a service with a limit, with default flags
// and with --concurrency 16, and reports the time from the service's first request to its
// last answer over the ideal that the limit allows:
//   token bucket of R requests/s:   requests / R
//   at most C requests in flight:   requests x latency / C
//   no limit:                       requests x latency / 16 (the CLI's cap)
// and, beside it, the process's whole wall time (start-up, intake, the send, the output) over
// the same ideal, with the share of requests answered 429, and a check that every payout was
// applied exactly once. The token bucket answers Retry-After: 1 on each 429, as real services
// round up. Target: at most 1.15x the ideal from the first request, at most 10% 429s. With
// --runs N each row runs N times (figures listed in run order). Exits 1 when a check fails.
//
// The faulty row (issue 33) is the no-limit service answering one request of 200 (the 20th)
// with a 500 it did not apply: its payouts are in doubt, read back after the quiet time and
// again a quiet time later, then sent again. Both it and the same service without the fault
// run with PAYOUTS_TIMEOUT=1 (a 1.7 s quiet time); its figure is its whole process's wall time
// over the fault-free one's. Target: at most 1.2x.
//
// The reconcile row (issue 47) sends --reconcile-payouts (100,000) payouts to a service whose
// lookups go through a token bucket of 250 a second (burst 10, each answered in 50 ms, as a
// distant service's; Retry-After: 1 on each 429; creates unlimited), then times `payouts
// reconcile --run RUN --json` of them: the service's first lookup to its last answer over the
// ideal, payouts / 250 s (400 s), and the process's wall time over the same. The CLI holds at
// most 16 lookups in flight, 320 a second at 50 ms: the bucket binds. Target: at most 1.15x
// from the first lookup, at most 10% 429s; checks: exit 0, every payout looked up and paid.
//
// Where the service holds 16 at once or more, the row also shows a floor: a bare undici client
// (no journal, no checks) that starts at 8 in flight, as the CLI does by default, and goes to
// 16 as soon as the first answers come back, against the same service. No client that starts
// at 8 can do better than it; it shows what the ideal leaves to the CLI.

import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

const BIN = fileURLToPath(new URL('../bin/payouts.js', import.meta.url));
const args = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : fallback;
};
const PAYOUTS = Number(opt('--payouts', '20000'));
const RECONCILE_PAYOUTS = Number(opt('--reconcile-payouts', '100000'));
const RUNS = Number(opt('--runs', '1'));
const ONLY = opt('--only')?.split(',');
const CHUNK = 100;
const REQUESTS = Math.ceil(PAYOUTS / CHUNK);

/** The interface's 404 for a reference the service does not hold. */
const NOT_FOUND = JSON.stringify({ success: false, message: ['Payout not found'], data: [] });

/** Answers a lookup from what the service applied. */
function lookup(url, records, res) {
  const ref = decodeURIComponent(url.slice(url.lastIndexOf('/') + 1));
  const rec = records.get(ref);
  res.writeHead(rec ? 200 : 404, { 'content-type': 'application/json' });
  if (!rec) return res.end(NOT_FOUND);
  const data = { ...rec, status: 'success', transaction_id: `T${ref}` };
  res.end(JSON.stringify({ success: true, message: ['Payout retrieved'], data }));
}

/**
 * A loopback service with one limit; it counts what it applies and what it refuses. With
 * `limit.fault` N, its Nth create request is answered 500 after its latency, unapplied.
 */
function limitedService(limit) {
  const applied = new Map();
  const records = new Map();
  const stats = { requests: 0, throttled: 0, creates: 0, first: 0, last: 0 };
  const gets = { requests: 0, throttled: 0, first: 0, last: 0, looked: new Set() };
  let inFlight = 0;
  let tokens = limit.burst ?? 0;
  let refilled = Date.now();
  const lookups = limit.lookups;
  let lookupTokens = lookups?.burst ?? 0;
  let lookupRefilled = Date.now();
  /** A lookup through the lookups' bucket, answered after their latency (or refused, 429). */
  const limitedLookup = (req, res, now) => {
    gets.requests++;
    gets.first ||= now;
    lookupTokens = Math.min(
      lookups.burst,
      lookupTokens + ((now - lookupRefilled) * lookups.rate) / 1000,
    );
    lookupRefilled = now;
    if (lookupTokens < 1) {
      gets.throttled++;
      const headers = { 'content-type': 'application/json', 'retry-after': '1' };
      res.writeHead(429, headers);
      res.end(JSON.stringify({ success: false, message: ['Too Many Requests'], data: [] }));
      return;
    }
    lookupTokens -= 1;
    setTimeout(() => {
      gets.looked.add(req.url);
      lookup(req.url, records, res);
      gets.last = Date.now();
    }, lookups.latencyMs);
  };
  const refuse = (res) => {
    stats.throttled++;
    const headers = { 'content-type': 'application/json' };
    if (limit.retryAfter !== undefined) headers['retry-after'] = String(limit.retryAfter);
    res.writeHead(429, headers);
    res.end(JSON.stringify({ success: false, message: ['Too Many Requests'], data: [] }));
  };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const now = Date.now();
      if (req.method === 'GET' && lookups) return limitedLookup(req, res, now);
      if (req.method === 'GET') return lookup(req.url, records, res);
      stats.requests++;
      stats.first ||= now;
      if (req.method !== 'POST') {
        res.writeHead(404).end();
        return;
      }
      const nth = ++stats.creates;
      if (limit.rate) {
        tokens = Math.min(limit.burst, tokens + ((now - refilled) * limit.rate) / 1000);
        refilled = now;
        if (tokens < 1) return refuse(res);
        tokens -= 1;
      }
      if (limit.cap !== undefined && inFlight >= limit.cap) return refuse(res);
      inFlight++;
      const payouts = JSON.parse(Buffer.concat(chunks).toString('utf8')).payouts;
      setTimeout(() => {
        inFlight--;
        if (nth === limit.fault) {
          res.writeHead(500, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ success: false, message: ['Internal Server Error'], data: [] }));
          stats.last = Date.now();
          return;
        }
        const results = payouts.map((p) => {
          applied.set(p.reference_id, (applied.get(p.reference_id) ?? 0) + 1);
          records.set(p.reference_id, p);
          return {
            reference_id: p.reference_id,
            status: 'success',
            transaction_id: `T${p.reference_id}`,
          };
        });
        const body = JSON.stringify({
          success: true,
          message: ['ok'],
          data: { success_count: results.length, failed_count: 0, results },
        });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(body);
        stats.last = Date.now();
      }, limit.latencyMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({ url: `http://127.0.0.1:${server.address().port}`, applied, stats, gets, server }),
    ),
  );
}

/** Runs `payouts send` to completion; resolves with its exit code and output. */
function send(file, url, flags, home, extraEnv = {}) {
  const args = ['send', file, '--yes', '--json', '--chunk-size', String(CHUNK), ...flags];
  return payouts(args, url, home, extraEnv);
}

/** Runs `payouts ARGS` to completion against a service; resolves with its exit code and output. */
function payouts(args, url, home, extraEnv = {}) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_STATE_HOME: join(home, 'state'),
        XDG_CONFIG_HOME: join(home, 'config'),
        PAYOUTS_BASE_URL: url,
        PAYOUTS_CLIENT_ID: 'bench',
        PAYOUTS_CLIENT_SECRET: 'bench-secret',
        ...extraEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => {
      out += d;
    });
    child.stderr.on('data', (d) => {
      err += d;
    });
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

/**
 * The bare client's span over the ideal: the same chunks to the same service, starting at
 * `start` in flight, 3 more per answer up to 16 (16 after the first round trip from 4).
 */
async function bareFloor(limit, start, ideal) {
  const svc = await limitedService(limit);
  const agent = new Agent({ connections: 16 });
  let inFlight = 0;
  let next = 0;
  let done = 0;
  let cap = start;
  await new Promise((resolve, reject) => {
    const one = async (k) => {
      const payouts = [];
      for (let i = k * CHUNK + 1; i <= Math.min(PAYOUTS, (k + 1) * CHUNK); i++) {
        payouts.push({
          reference_id: `B-${i}`,
          amount: '1.00',
          currency: 'EUR',
          recipient: 'b@example.com',
        });
      }
      const r = await request(`${svc.url}/api/v1/payouts`, {
        method: 'POST',
        body: JSON.stringify({ payouts }),
        headers: { 'content-type': 'application/json' },
        dispatcher: agent,
      });
      JSON.parse(await r.body.text());
      inFlight--;
      done++;
      cap = Math.min(16, cap + 3);
      pump();
    };
    const pump = () => {
      while (inFlight < cap && next < REQUESTS) {
        inFlight++;
        one(next++).catch(reject);
      }
      if (done === REQUESTS) resolve();
    };
    pump();
  });
  await agent.close();
  svc.server.close();
  svc.server.closeAllConnections?.();
  return (svc.stats.last - svc.stats.first) / ideal;
}

const LIMITS = [
  {
    id: 'bucket',
    name: 'token bucket 20/s (burst 5), 100 ms, Retry-After: 1',
    rate: 20,
    burst: 5,
    latencyMs: 100,
    retryAfter: 1,
  },
  { id: 'cap16', name: 'at most 16 in flight, 250 ms', cap: 16, latencyMs: 250 },
  { id: 'cap10', name: 'at most 10 in flight, 250 ms', cap: 10, latencyMs: 250 },
  { id: 'nolimit', name: 'no limit, 300 ms', latencyMs: 300 },
].filter((l) => !ONLY || ONLY.includes(l.id));
/** The faulty row: the no-limit service, with and without a 500 on one request in ten. */
const FAULT_AT = Math.max(1, Math.round(REQUESTS / 10));
const FAULTY = {
  id: 'faulty',
  name: `no limit, 300 ms, a 500 on request ${FAULT_AT} of ${REQUESTS} (not applied)`,
  latencyMs: 300,
  env: { PAYOUTS_TIMEOUT: '1' },
};
/** The lookups' limit of the reconcile row. */
const LOOKUPS = { rate: 250, burst: 10, latencyMs: 50 };
const FLAGS = [
  { name: 'default', flags: [] },
  { name: '--concurrency 16', flags: ['--concurrency', '16'] },
];

const dir = mkdtempSync(join(tmpdir(), 'payouts-pace-bench-'));
const file = join(dir, 'payouts.csv');
const lines = ['reference_id,amount,currency,recipient'];
for (let i = 1; i <= PAYOUTS; i++) lines.push(`B-${i},1.00,EUR,b${i}@example.com`);
writeFileSync(file, `${lines.join('\n')}\n`);

const table = [];
let failed = false;

/** One send of the file to a fresh service with this limit: its figures and problems. */
async function once(limit, f) {
  const svc = await limitedService(limit);
  const home = mkdtempSync(join(dir, 'home-'));
  const started = Date.now();
  const r = await send(file, svc.url, f.flags, home, limit.env);
  const wall = Date.now() - started;
  svc.server.close();
  svc.server.closeAllConnections?.();
  const span = svc.stats.last - svc.stats.first;
  const capacity = limit.rate ? undefined : Math.min(limit.cap ?? 16, 16);
  const ideal = limit.rate
    ? (REQUESTS / limit.rate) * 1000
    : (REQUESTS * limit.latencyMs) / capacity;
  const twice = [...svc.applied.values()].filter((n) => n > 1).length;
  const problems = [];
  if (r.code !== 0) problems.push(`exit ${r.code}: ${r.err.slice(-300)}`);
  if (svc.applied.size !== PAYOUTS) problems.push(`${svc.applied.size} of ${PAYOUTS} applied`);
  if (twice) problems.push(`${twice} applied twice`);
  let doc = {};
  try {
    const head = r.out.slice(0, r.out.indexOf('"results"'));
    doc = JSON.parse(`${head.replace(/,\s*$/, '')}}`);
  } catch {}
  return {
    ratio: span / ideal,
    wallRatio: wall / ideal,
    wall,
    share: svc.stats.throttled / svc.stats.requests,
    peak: doc.peak_concurrency ?? '?',
    problems,
  };
}

const list = (xs, fmt) => xs.map(fmt).join(', ');

/** The runs' problems and the pace targets they miss (1.15x the ideal, 10% 429s); marks the bench failed. */
function judged(runs) {
  const problems = runs.flatMap((o) => o.problems);
  const worst = Math.max(...runs.map((o) => o.ratio));
  const worstShare = Math.max(...runs.map((o) => o.share));
  if (worst > 1.15) problems.push(`${worst.toFixed(2)}x the ideal (target 1.15x)`);
  if (worstShare > 0.1) problems.push(`${(worstShare * 100).toFixed(1)}% 429s (target 10%)`);
  failed ||= problems.length > 0;
  return problems;
}
try {
  for (const limit of LIMITS) {
    const bare =
      limit.rate || (limit.cap ?? 16) < 16
        ? undefined
        : await bareFloor(limit, 8, (REQUESTS * limit.latencyMs) / 16);
    for (const f of FLAGS) {
      const runs = [];
      for (let i = 0; i < RUNS; i++) {
        const o = await once(limit, f);
        runs.push(o);
        process.stderr.write(
          `${limit.name}, ${f.name}: ${o.ratio.toFixed(2)}x from the first request, ${o.wallRatio.toFixed(2)}x wall, ${(o.share * 100).toFixed(1)}% 429s\n`,
        );
      }
      const problems = judged(runs);
      table.push({
        service: limit.name,
        flags: f.name,
        'from first request': list(runs, (o) => o.ratio.toFixed(2)),
        'whole process': list(runs, (o) => o.wallRatio.toFixed(2)),
        'bare client from 8': bare === undefined ? '—' : bare.toFixed(2),
        '429 share': list(runs, (o) => `${(o.share * 100).toFixed(1)}%`),
        'peak in flight': list(runs, (o) => o.peak),
        check: problems.length ? problems.join('; ') : 'ok: each payout applied once',
      });
    }
  }
  if (!ONLY || ONLY.includes('faulty')) await faultyRow();
  if (!ONLY || ONLY.includes('reconcile')) await reconcileRow();
} finally {
  rmSync(dir, { recursive: true, force: true });
}

/** The faulty service against the same without the fault, alternating, default flags. */
async function faultyRow() {
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const clean = await once(FAULTY, FLAGS[0]);
    const faulty = await once({ ...FAULTY, fault: FAULT_AT }, FLAGS[0]);
    const o = {
      span: faulty.ratio / clean.ratio,
      wall: faulty.wall / clean.wall,
      problems: [...clean.problems, ...faulty.problems],
    };
    runs.push(o);
    process.stderr.write(
      `${FAULTY.name}: ${o.wall.toFixed(2)}x the fault-free wall time (${faulty.wall} / ${clean.wall} ms), ${o.span.toFixed(2)}x its span\n`,
    );
  }
  const problems = runs.flatMap((o) => o.problems);
  const worst = Math.max(...runs.map((o) => o.wall));
  if (worst > 1.2) problems.push(`${worst.toFixed(2)}x the fault-free time (target 1.2x)`);
  failed ||= problems.length > 0;
  table.push({
    service: FAULTY.name,
    flags: 'default, PAYOUTS_TIMEOUT=1',
    'from first request': `${list(runs, (o) => o.span.toFixed(2))} of the fault-free span`,
    'whole process': `${list(runs, (o) => o.wall.toFixed(2))} of the fault-free time`,
    'bare client from 8': '—',
    '429 share': '0%',
    'peak in flight': '—',
    check: problems.length ? problems.join('; ') : 'ok: each payout applied once',
  });
}

/** One reconcile of RECONCILE_PAYOUTS sent payouts: its figures and problems. */
async function reconcileOnce(file) {
  const svc = await limitedService({ latencyMs: 5, lookups: LOOKUPS });
  const home = mkdtempSync(join(dir, 'home-'));
  const problems = [];
  const sent = await payouts(['send', file, '--yes', '--json'], svc.url, home);
  if (sent.code !== 0) problems.push(`send exit ${sent.code}: ${sent.err.slice(-300)}`);
  const runId = /"run_id":\s*"([0-9a-f]+)"/.exec(sent.out)?.[1];
  const started = Date.now();
  const r = await payouts(['reconcile', '--run', runId ?? '?', '--json'], svc.url, home);
  const wall = Date.now() - started;
  svc.server.close();
  svc.server.closeAllConnections?.();
  const ideal = (RECONCILE_PAYOUTS / LOOKUPS.rate) * 1000;
  if (r.code !== 0) problems.push(`reconcile exit ${r.code}: ${r.err.slice(-300)}`);
  let doc = {};
  try {
    const head = r.out.slice(0, r.out.indexOf('"results"'));
    doc = JSON.parse(`${head.replace(/,\s*$/, '')}}`);
  } catch {}
  if (doc.looked_up_count !== RECONCILE_PAYOUTS || doc.counts?.paid !== RECONCILE_PAYOUTS) {
    problems.push(`looked up ${doc.looked_up_count}, paid ${doc.counts?.paid}`);
  }
  if (svc.gets.looked.size !== RECONCILE_PAYOUTS) {
    problems.push(`${svc.gets.looked.size} of ${RECONCILE_PAYOUTS} payouts answered`);
  }
  return {
    ratio: (svc.gets.last - svc.gets.first) / ideal,
    wallRatio: wall / ideal,
    share: svc.gets.throttled / svc.gets.requests,
    problems,
  };
}

/** The reconcile row: RECONCILE_PAYOUTS payouts looked up against the lookups' limit. */
async function reconcileRow() {
  const file = join(dir, 'reconcile.csv');
  const rows = ['reference_id,amount,currency,recipient'];
  for (let i = 1; i <= RECONCILE_PAYOUTS; i++) rows.push(`R-${i},1.00,EUR,r${i}@example.com`);
  writeFileSync(file, `${rows.join('\n')}\n`);
  const runs = [];
  for (let i = 0; i < RUNS; i++) {
    const o = await reconcileOnce(file);
    runs.push(o);
    process.stderr.write(
      `reconcile of ${RECONCILE_PAYOUTS}: ${o.ratio.toFixed(2)}x from the first lookup, ${o.wallRatio.toFixed(2)}x wall, ${(o.share * 100).toFixed(1)}% 429s\n`,
    );
  }
  const problems = judged(runs);
  table.push({
    service: `reconcile --run of ${RECONCILE_PAYOUTS} payouts; lookups: token bucket ${LOOKUPS.rate}/s (burst ${LOOKUPS.burst}), ${LOOKUPS.latencyMs} ms, Retry-After: 1`,
    flags: 'default',
    'from first request': list(runs, (o) => o.ratio.toFixed(2)),
    'whole process': list(runs, (o) => o.wallRatio.toFixed(2)),
    'bare client from 8': '—',
    '429 share': list(runs, (o) => `${(o.share * 100).toFixed(1)}%`),
    'peak in flight': '—',
    check: problems.length ? problems.join('; ') : 'ok: every payout looked up and paid',
  });
}

const head = Object.keys(table[0] ?? {});
const md = [
  `| ${head.join(' | ')} |`,
  `|${head.map(() => '---').join('|')}|`,
  ...table.map((row) => `| ${head.map((h) => row[h]).join(' | ')} |`),
].join('\n');
process.stdout.write(
  `${PAYOUTS} payouts, ${REQUESTS} requests of ${CHUNK}; from first request: the service's first request to its last answer over the ideal the limit allows; whole process: the process's wall time over the same ideal\n\n${md}\n`,
);
const out = opt('--out');
if (out) writeFileSync(out, `${md}\n`);
process.exitCode = failed ? 1 : 0;
