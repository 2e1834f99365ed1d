// What a crash costs a team (issue 51): `--jobs` jobs (4) send files of their own through one
// shared history on PostgreSQL, each `payouts send FILE --yes --wait 600 --json`, against
// bench/service.mjs answering in 50 ms with no duplicate check of its own (`--ledger`: its
// lookups find only what it received). Each scenario runs the same jobs fault-free first, then:
//
//   at-start     the jobs start together; the one holding the service's lock is SIGKILLed once
//                the service has received `--kill-after` create requests, and run again at once;
//   after-rerun  the first job starts alone and is killed so; its rerun starts at once, and the
//                other jobs right after it (they ask for the lock while it reads back).
//
// Prints each job's time from the start, the others' last against the fault-free team time,
// and checks that every payout arrived exactly once.
//
// Usage: node bench/team.mjs [--jobs 4] [--payouts 5000] [--timeout SECONDS] [--kill-after 4]
//                            [--scenario at-start|after-rerun|both]
// (--timeout sets PAYOUTS_TIMEOUT; the default, 30 s, gives the default quiet time of 50 s.)

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fmtMs, fmtRatio, NODE, ROOT, startService } from './lib.mjs';
import { startPostgres } from './pg.mjs';

function option(name, fallback) {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : process.argv[at + 1];
}

const JOBS = Number(option('jobs', 4));
const PAYOUTS = Number(option('payouts', 5000));
const TIMEOUT = option('timeout', undefined);
const KILL_AFTER = Number(option('kill-after', 4));
const SCENARIO = option('scenario', 'both');

const dir = mkdtempSync(join(tmpdir(), 'payouts-team-'));
const names = Array.from({ length: JOBS }, (_, i) => String.fromCharCode(65 + i));

/** A job's file: PAYOUTS payouts whose references start with its letter. */
function fileOf(job) {
  const file = join(dir, `${job}.csv`);
  const rows = Array.from(
    { length: PAYOUTS },
    (_, i) =>
      `${job}-${String(i + 1).padStart(7, '0')},${(i % 900) + 1}.25,EUR,${job}${i}@example.com`,
  );
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

const files = Object.fromEntries(names.map((j) => [j, fileOf(j)]));

/** Starts a job (a runner with a state folder of its own); resolves to its end, ms from `t0`. */
function startJob(job, env, t0) {
  const home = join(dir, `home-${job}-${Math.random().toString(16).slice(2)}`);
  const child = spawn(
    NODE,
    [`${ROOT}bin/payouts.js`, 'send', files[job], '--yes', '--wait', '600', '--json'],
    {
      env: {
        ...env,
        HOME: home,
        XDG_STATE_HOME: join(home, 'state'),
        XDG_CONFIG_HOME: join(home, 'config'),
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr.on('data', (c) => {
    stderr = (stderr + c).slice(-4000);
  });
  const ended = once(child, 'close').then(([code, signal]) => ({
    job,
    code,
    signal,
    ms: performance.now() - t0,
    stderr,
  }));
  return { child, ended };
}

/** The OS pid of the send holding the service's lock, once one does. */
async function holderPid(db, url) {
  for (;;) {
    const rows = await db.query(url, 'SELECT pid FROM locks').catch(() => []);
    if (rows[0]?.pid) return Number(rows[0].pid);
    await sleep(10);
  }
}

/** Waits until the service has received `n` create requests. */
async function untilRequests(service, n) {
  while ((await service.call('GET', '/__stats')).requests < n) await sleep(10);
}

/**
 * One run of the jobs as `scenario` says, the lock's holder killed and rerun when `kill` (else
 * the same start, fault-free). Resolves to the jobs' ends, the service's counts, and which job
 * was killed, when.
 */
async function teamRun(db, service, scenario, kill) {
  await service.call('POST', '/__reset');
  const env = {
    PATH: process.env.PATH ?? '',
    LANG: 'C.UTF-8',
    PAYOUTS_BASE_URL: service.baseUrl,
    PAYOUTS_CLIENT_ID: 'bench',
    PAYOUTS_CLIENT_SECRET: 'bench-secret',
    PAYOUTS_STATE_URL: await db.schemaUrl(),
    ...(TIMEOUT ? { PAYOUTS_TIMEOUT: TIMEOUT } : {}),
  };
  const t0 = performance.now();
  const jobs = new Map();
  const first = scenario === 'after-rerun' ? [names[0]] : names;
  for (const j of first) jobs.set(j, startJob(j, env, t0));
  await untilRequests(service, KILL_AFTER);
  let killed;
  let rerunAt;
  if (kill) {
    const pid = await holderPid(db, env.PAYOUTS_STATE_URL);
    killed = [...jobs.keys()].find((j) => jobs.get(j).child.pid === pid);
    if (!killed) throw new Error(`the lock's holder (pid ${pid}) is not one of the jobs`);
    jobs.get(killed).child.kill('SIGKILL');
    await jobs.get(killed).ended;
    rerunAt = performance.now() - t0;
    jobs.set(killed, startJob(killed, env, t0));
  }
  if (scenario === 'after-rerun') for (const j of names.slice(1)) jobs.set(j, startJob(j, env, t0));
  const ends = await Promise.all([...jobs.values()].map((j) => j.ended));
  const stats = await service.call('GET', '/__stats');
  return { ends, stats, killed, rerunAt };
}

/** Prints a run; returns the team's time (the last job's end). */
function report(label, run, faultFree) {
  const team = Math.max(...run.ends.map((e) => e.ms));
  const lines = [`${label}: team ${fmtMs(team)}`];
  for (const e of run.ends) {
    const how = e.job === run.killed ? ' (the rerun)' : '';
    lines.push(`  ${e.job}${how}: ${fmtMs(e.ms)}, exit ${e.code ?? e.signal}`);
    if (e.code !== 0) lines.push(`    ${e.stderr.trim().split('\n').slice(-2).join('\n    ')}`);
  }
  if (run.rerunAt !== undefined) {
    const others = Math.max(...run.ends.filter((e) => e.job !== run.killed).map((e) => e.ms));
    lines.push(`  ${run.killed} killed and rerun at ${fmtMs(run.rerunAt)}`);
    lines.push(
      `  the others' last: ${fmtMs(others)}, ${fmtRatio(others / faultFree)} the fault-free team`,
    );
  }
  const { distinct, duplicates } = run.stats;
  lines.push(`  payouts arrived: ${distinct} of ${JOBS * PAYOUTS}, ${duplicates} twice`);
  console.log(lines.join('\n'));
  return team;
}

const db = await startPostgres();
const service = await startService({ latencyMs: 50, ledger: true });
try {
  const scenarios = SCENARIO === 'both' ? ['at-start', 'after-rerun'] : [SCENARIO];
  console.log(
    `${JOBS} jobs of ${PAYOUTS} payouts, service answering in 50 ms, PAYOUTS_TIMEOUT ${TIMEOUT ?? 'default (30)'}`,
  );
  for (const scenario of scenarios) {
    const faultFree = report(
      `${scenario}, fault-free`,
      await teamRun(db, service, scenario, false),
    );
    const run = await teamRun(db, service, scenario, true);
    report(`${scenario}, the lock's holder killed and rerun`, run, faultFree);
  }
} finally {
  await service.stop();
  await db.stop();
  rmSync(dir, { recursive: true, force: true });
}
