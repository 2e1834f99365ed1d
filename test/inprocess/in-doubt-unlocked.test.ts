import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import type { RunClaims } from '../../src/domain/history.js';
import { localRunClaims } from '../../src/state/send-lock.js';
import { sharedHistory } from '../../src/state/pg/store.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { sendJson } from '../helpers/http-servers.js';
import { type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { clockStoppedAtLongWait, type MainResult, PacedClock, runMain } from '../helpers/main.js';
import { recycledDatabase, STORES, type Store } from '../helpers/pg.js';
import { prefixedRun } from '../helpers/sandbox.js';

// Issue 51 item 1: a crash costs the team seconds. A rerun that must wait out the quiet time
// before it can decide a stopped run's payouts in doubt reads them back without the service's
// lock, so the others' sends go on; and any send meeting payouts in doubt that a live send
// decides leaves them to it.

const fixture = ledgerPerTest();

interface Doc {
  run_id: string;
  results: Array<{ reference_id: string; status: string; message: string | null }>;
}

/** A history of the store under test: a home, and the env of a run against `svc` in it. */
async function history(store: Store, svc: LedgerService) {
  const home = fixture.home();
  const url = store === 'postgres' ? await recycledDatabase() : undefined;
  const env = {
    ...svc.env(home.env),
    PAYOUTS_TIMEOUT: '2',
    ...(url ? { PAYOUTS_STATE_URL: url } : {}),
  };
  return { home, url, env, stateDir: join(home.env.XDG_STATE_HOME!, 'payouts') };
}

/**
 * Run A of four payouts, two a request: its second request is cut unapplied, and it is
 * stopped while it waits to read A-3 and A-4 back, which it leaves in doubt (as a killed send
 * does). Returns its clock (at the stop) and its run's id.
 */
async function stoppedRun(file: string, env: Record<string, string>) {
  const { clock, stop } = clockStoppedAtLongWait();
  const r = await runMain(
    ['send', file, '--yes', '--json', '--chunk-size', '2', '--concurrency', '1'],
    {
      env,
      clock,
      interrupt: stop.signal,
    },
  );
  expect(r.code, r.stderr).toBe(130);
  return { at: clock.t, runId: parseJsonStdout<Doc>(r).run_id };
}

/** A PacedClock from `t` on: waits pass on it, each taking a little real time. */
function pacedFrom(t: number): PacedClock {
  const clock = new PacedClock();
  clock.t = t;
  return clock;
}

const IN_DOUBT = new Set(['A-3', 'A-4']);

describe.each(STORES)('payouts in doubt and the lock (%s)', (store) => {
  it('a rerun reads them back without the lock: a send waiting for it goes on meanwhile', async () => {
    const svc = await fixture.start((n) => (n === 2 ? { apply: 'none', cut: true } : {}));
    const h = await history(store, svc);
    const a = prefixedRun(h.home.dir, 'A', 4);
    const stopped = await stoppedRun(a, h.env);
    const events: string[] = [];
    let b: Promise<MainResult> | undefined;
    // The rerun's first lookup of a payout in doubt starts B, and is answered once B is done
    // (or after 20 s, when B could not go on: the rerun would be holding the lock).
    svc.onGet = (ref, res) => {
      if (!IN_DOUBT.has(ref)) return false;
      b ??= runMain(
        ['send', prefixedRun(h.home.dir, 'B', 4), '--yes', '--wait', '--chunk-size', '2'],
        {
          env: h.env,
          clock: new PacedClock(),
        },
      ).then((r) => {
        events.push('B finished');
        return r;
      });
      void Promise.race([b, sleep(20_000)]).then(() => {
        events.push(`read ${ref}`);
        sendJson(res, 404, { success: false, message: ['Payout not found'], data: [] });
      });
      return true;
    };
    const rerun = await runMain(['send', a, '--yes', '--wait', '--json', '--chunk-size', '2'], {
      env: h.env,
      clock: pacedFrom(stopped.at),
    });
    expect(rerun.code, rerun.stderr).toBe(0);
    expect(rerun.stderr).toMatch(
      /Reading back 2 payouts whose earlier request has no recorded outcome, before taking the service's lock: other sends go on meanwhile/,
    );
    const other = await b!;
    expect(other.code, other.stderr).toBe(0);
    expect(events[0]).toBe('B finished');
    expect([...svc.held.keys()].sort()).toEqual(
      ['A-1', 'A-2', 'A-3', 'A-4', 'B-1', 'B-2', 'B-3', 'B-4'].sort(),
    );
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('a send leaves them to the live send that decides them: the rest sent, those unknown (exit 7)', async () => {
    const svc = await fixture.start((n) => (n === 2 ? { apply: 'none', cut: true } : {}));
    const h = await history(store, svc);
    const a = prefixedRun(h.home.dir, 'A', 6);
    const stopped = await stoppedRun(a, h.env);
    // Another send decides run A now (it claims it, as a rerun reading it back does).
    const me = {
      pid: process.pid,
      command: 'payouts send a.csv',
      startedAt: '2026-11-24T12:00:00.000Z',
    };
    const shared = h.url ? await sharedHistory(h.url) : undefined;
    const decider: RunClaims = shared
      ? shared.runClaims(me)
      : localRunClaims({ stateDir: h.stateDir, ...me });
    expect(await decider.take([stopped.runId])).toEqual(new Set());
    const gets = svc.gets;
    try {
      const left = await runMain(['send', a, '--yes', '--json', '--chunk-size', '2'], {
        env: h.env,
        clock: pacedFrom(stopped.at),
      });
      expect(left.code, left.stderr + left.stdout).toBe(7);
      const { results } = parseJsonStdout<Doc>(left);
      const unknown = results.filter((r) => r.status === 'unknown');
      expect(unknown.map((r) => r.reference_id)).toEqual(['A-3', 'A-4']);
      expect(unknown[0]!.message).toMatch(
        /a request of run [0-9a-f]+ carried it, and another payouts send running now decides that run \(it reads it back, or is sending it\); this run left it to that send/,
      );
      expect(left.stderr).toMatch(
        /2 payouts in doubt are decided by another payouts send running now \(run [0-9a-f]+: it reads them back, or is sending them\); this run left them to that send and sent the rest\. Run the same command again once it has finished/,
      );
      // Not read back, not sent: the rest was.
      expect(svc.gets).toBe(gets);
      expect(svc.posts.get('A-3')).toBe(1);
      expect(svc.held.has('A-5') && svc.held.has('A-6')).toBe(true);
    } finally {
      await decider.release();
      await shared?.close();
    }
    // Its decider gone, the next run reads them back and sends them, once.
    const next = await runMain(['send', a, '--yes', '--json', '--chunk-size', '2'], {
      env: h.env,
      clock: pacedFrom(stopped.at),
    });
    expect(next.code, next.stderr).toBe(0);
    expect([...svc.held.keys()].sort()).toEqual(['A-1', 'A-2', 'A-3', 'A-4', 'A-5', 'A-6']);
    expect(svc.appliedTwice()).toEqual([]);
  });
});
