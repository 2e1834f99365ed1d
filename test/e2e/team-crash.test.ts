import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { parseJsonStdout } from '../helpers/cli.js';
import { sendJson } from '../helpers/http-servers.js';
import { ledgerPerTest, type Posted } from '../helpers/ledger-service.js';
import { type MainResult, PacedClock, runMain, runQueued } from '../helpers/main.js';
import { recycledDatabase } from '../helpers/pg.js';
import { prefixedRun } from '../helpers/sandbox.js';
import { onTerminal, storeProfile } from '../helpers/terminal.js';

// Issue 51 item 1, as a team runs it: four jobs on one PostgreSQL history, each with --wait,
// against a service answering in 50 ms with no duplicate check of its own. The one sending is
// killed (SIGKILL) and run again at once: its rerun reads back what the killed one left in
// doubt without the service's lock, so the other three, asking for the lock after it, send
// meanwhile (before, they queued behind its quiet time); nothing is paid twice.

const fixture = ledgerPerTest();

/** The pid the wrapper wrote (the command's own: the shell execs it), once it has. */
async function pidIn(path: string): Promise<number> {
  for (let i = 0; i < 500; i++) {
    const pid = Number.parseInt(
      (() => {
        try {
          return readFileSync(path, 'utf8');
        } catch {
          return '';
        }
      })(),
      10,
    );
    if (pid > 0) return pid;
    await sleep(20);
  }
  throw new Error(`no pid in ${path}`);
}

it.runIf(process.platform === 'linux')(
  'the sending job killed and rerun at once: the other three send while it reads back; none paid twice',
  async () => {
    const home = fixture.home();
    const events: string[] = [];
    let killedAt: number | undefined;
    // Every request answered in 50 ms; job A's first one reaches the service, is not applied,
    // and is never answered: A is killed while it is in flight.
    const svc = await fixture.start((_n, posted: Posted[]) => {
      const job = posted[0]!.reference_id.slice(0, 1);
      events.push(`POST ${job}${killedAt === undefined ? '' : ' after the kill'}`);
      if (job === 'A' && killedAt === undefined)
        return { apply: 'none', hold: new Promise(() => {}) };
      return { delayMs: 50 };
    });
    await storeProfile(home.env, svc.url);
    const env = { ...home.env, PAYOUTS_STATE_URL: await recycledDatabase(), PAYOUTS_TIMEOUT: '1' };
    const files = Object.fromEntries(
      ['A', 'B', 'C', 'D'].map((j) => [j, prefixedRun(home.dir, j, 20)]),
    );
    const args = (job: string) => [
      'send',
      files[job]!,
      '--yes',
      '--wait',
      '--chunk-size',
      '5',
      '--concurrency',
      '1',
    ];

    const pidFile = join(home.dir, 'pid');
    const wrapper = ['sh', '-c', `echo $$ > ${pidFile}; exec "$@"`, 'sh'];
    const killed = onTerminal(args('A'), [], env, { wrapper });
    const pid = await pidIn(pidFile);
    for (let i = 0; i < 1_000 && svc.creates < 1; i++) await sleep(20);
    expect(svc.creates).toBe(1);
    process.kill(pid, 'SIGKILL');
    killedAt = Date.now();
    await killed;

    // Rerun at once. B, C and D start as its first lookup of a payout in doubt arrives, in
    // that order; its lookups are answered once they are done (or after 30 s, when they could
    // not go on: the rerun would be holding the lock).
    let othersDone: Promise<MainResult[]> | undefined;
    const startOthers = async () => {
      const others: Array<Promise<MainResult>> = [];
      for (const job of ['B', 'C', 'D']) {
        const q = runQueued([...args(job), '--json'], { env });
        others.push(
          q.done.then((r) => {
            events.push(`${job} finished`);
            return r;
          }),
        );
        await Promise.race([q.queued, q.done]);
      }
      return Promise.all(others);
    };
    svc.onGet = (ref, res) => {
      if (!ref.startsWith('A-') || svc.held.has(ref)) return false;
      othersDone ??= startOthers();
      void Promise.race([othersDone, sleep(30_000)]).then(() => {
        events.push('GET A');
        sendJson(res, 404, { success: false, message: ['Payout not found'], data: [] });
      });
      return true;
    };
    const rerun = await runMain([...args('A'), '--json'], { env, clock: new PacedClock() });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(/before taking the service's lock: other sends go on meanwhile/);
    for (const r of await othersDone!) expect(r.code, r.stderr).toBe(0);
    // Every request of B, C and D arrived before the rerun's read-back ended, and A's went last.
    const firstGet = events.indexOf('GET A');
    expect(events.slice(0, firstGet).filter((e) => /^[BCD] finished$/.test(e))).toHaveLength(3);
    expect(events.slice(firstGet).filter((e) => /^POST [BCD]/.test(e))).toEqual([]);
    expect(parseJsonStdout<{ success_count: number }>(rerun).success_count).toBe(20);
    expect(svc.held.size).toBe(80);
    expect(svc.appliedTwice()).toEqual([]);
  },
  90_000,
);
