/**
 * With PAYOUTS_TEST_CPU=1 (vitest.config.ts adds this setup file), the CPU each test file
 * costs, in three parts: its worker (module loading and collection included), the processes
 * it started and waited for (built CLIs, pseudo-terminal drivers, python), and the tests'
 * PostgreSQL server meanwhile (exact with --maxWorkers=1; shared among the files running
 * together otherwise). Each file adds a line to the file cpu-stats.ts prints at the end.
 */
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { afterAll, expect, inject } from 'vitest';

/** A process's CPU ticks: its own, with its waited-for children's when `children`. */
function ticks(pid: number | string, children: boolean): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields.slice(11, children ? 15 : 13).reduce((sum, f) => sum + Number(f), 0);
}

let postmaster: string | undefined;

/** The tests' PostgreSQL server's ticks, its children's included (0 when it is not local). */
function serverTicks(): number {
  const port = new URL(inject('pgUrl')).port;
  postmaster ??= readdirSync('/proc').find((pid) => {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      return argv[0]?.endsWith('/postgres') && argv[argv.indexOf('-p') + 1] === port;
    } catch {
      return false;
    }
  });
  if (postmaster === undefined) return 0;
  try {
    const running = readFileSync(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8');
    let sum = ticks(postmaster, true);
    for (const child of running.split(' ').filter((c) => c.trim() !== '')) {
      try {
        sum += ticks(child, false);
      } catch {}
    }
    return sum;
  } catch {
    return 0;
  }
}

// Evaluated again before each test file is imported: the file's loading counts as its own.
const own = ticks(process.pid, false);
const withChildren = ticks(process.pid, true);
const server = serverTicks();
const started = Date.now();

afterAll(() => {
  const nowOwn = ticks(process.pid, false);
  const children = ticks(process.pid, true) - nowOwn - (withChildren - own);
  const file = expect.getState().testPath ?? '?';
  const line = [file, nowOwn - own, children, serverTicks() - server, Date.now() - started];
  appendFileSync(inject('cpuStatsFile'), `${line.join('\t')}\n`);
});
