import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import type { ServiceLock } from '../../src/domain/history.js';
import { acquireSendLock } from '../../src/state/index.js';
import { PgHistory } from '../../src/state/pg/history.js';
import { type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainResult, runMain, runQueued } from '../helpers/main.js';
import { recycledDatabase, STORES, type Store, teamRoles } from '../helpers/pg.js';
import { prefixedRun } from '../helpers/sandbox.js';

// Issue 51 item 2: sends waiting for a service's lock (--wait) get it in the order they asked,
// and each says how many wait before it; issue 48 item 5 on PostgreSQL: a holder of this host
// that has ended does not hold the lock, though its session lingers.

const fixture = ledgerPerTest();

/** Holds the service's lock as another send of this host would, in the store under test. */
async function holdLock(store: Store, svc: LedgerService, stateDir: string, url?: string) {
  if (store === 'sqlite') {
    const lock = await acquireSendLock({
      stateDir,
      serviceKey: serviceKeyOf(svc.url),
      pid: process.pid,
      command: 'payouts send june.csv',
    });
    return { release: () => lock.release(), close: async () => {} };
  }
  const other = await PgHistory.open(url!);
  const lock = await other.lockService(serviceKeyOf(svc.url), {
    host: 'laptop-2.invalid',
    user: 'ana',
    pid: 4242,
    started_at: '2026-11-24T11:58:00.000Z',
    command: 'payouts send june.csv',
  });
  return { release: () => lock.release(), close: () => other.close() };
}

describe.each(STORES)('sends waiting for the lock (%s)', (store) => {
  it('get it in the order they asked, each told how many wait before it', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const url = store === 'postgres' ? await recycledDatabase() : undefined;
    const env = { ...svc.env(home.env), ...(url ? { PAYOUTS_STATE_URL: url } : {}) };
    const holder = await holdLock(store, svc, join(home.env.XDG_STATE_HOME!, 'payouts'), url);
    const runs: Array<Promise<MainResult>> = [];
    try {
      // Each asks once the one before is waiting: A first, then B, then C.
      for (const name of ['A', 'B', 'C']) {
        const args = ['send', prefixedRun(home.dir, name), '--yes', '--wait', '--chunk-size', '1'];
        const send = runQueued(args, { env });
        runs.push(send.done);
        await send.queued;
      }
      expect(svc.creates).toBe(0);
    } finally {
      await holder.release();
      await holder.close();
    }
    const [a, b, c] = await Promise.all(runs);
    for (const r of [a, b, c]) expect(r!.code, r!.stderr).toBe(0);
    expect([...svc.held.keys()]).toEqual(['A-1', 'A-2', 'B-1', 'B-2', 'C-1', 'C-2']);
    expect(a!.stderr).toMatch(/waiting for it to finish; Ctrl-C stops waiting/);
    expect(b!.stderr).toMatch(/waiting for it to finish; 1 send waits before this one; Ctrl-C/);
    expect(c!.stderr).toMatch(/waiting for it to finish; 2 sends wait before this one; Ctrl-C/);
    // B and C waited for more than one send: the line says so when the wait ends.
    expect(c!.stderr).toMatch(
      /^The \d sends ahead of this one finished after \d+ s; this one goes on$/m,
    );
    expect(svc.appliedTwice()).toEqual([]);
  });

  it('a send without --wait does not go before those waiting: exit 8, saying how many wait', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const url = store === 'postgres' ? await recycledDatabase() : undefined;
    const env = { ...svc.env(home.env), ...(url ? { PAYOUTS_STATE_URL: url } : {}) };
    const holder = await holdLock(store, svc, join(home.env.XDG_STATE_HOME!, 'payouts'), url);
    let waiter: Promise<MainResult> | undefined;
    try {
      const send = runQueued(['send', prefixedRun(home.dir, 'W'), '--yes', '--wait'], { env });
      waiter = send.done;
      await send.queued;
      const busy = await runMain(['send', prefixedRun(home.dir, 'N'), '--yes'], { env });
      expect(busy.code).toBe(8);
      expect(busy.stderr).toMatch(/; 1 send waits for it before this one; nothing was sent/);
    } finally {
      await holder.release();
      await holder.close();
    }
    expect((await waiter!).code).toBe(0);
    expect([...svc.held.keys()]).toEqual(['W-1', 'W-2']);
  });
});

/** A pid that certainly belonged to a process which has exited. */
function deadPid(): number {
  return spawnSync(process.execPath, ['-e', '0']).pid!;
}

describe('a holder of this host that has ended, its database session lingering', () => {
  /** A session holding the lock for a process of this host that has ended. */
  async function lingering(url: string, svc: LedgerService): Promise<PgHistory> {
    const session = await PgHistory.open(url);
    await session.lockService(serviceKeyOf(svc.url), {
      host: hostname(),
      user: 'ci',
      pid: deadPid(),
      started_at: '2026-11-24T11:58:00.000Z',
      command: 'payouts send june.csv',
    });
    return session;
  }

  it('holds nothing: its session is ended and the send goes on', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const url = await recycledDatabase();
    const session = await lingering(url, svc);
    try {
      const r = await runMain(['send', prefixedRun(home.dir, 'L'), '--yes'], {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
      });
      expect(r.code, r.stderr).toBe(0);
      expect([...svc.held.keys()]).toEqual(['L-1', 'L-2']);
      expect(session.lost).toBe(true);
    } finally {
      await session.close();
    }
  });

  it('whose session this role may not end: exit 8 saying so, and how to end it', async () => {
    const svc = await fixture.start();
    const home = fixture.home();
    const url = await recycledDatabase();
    const { ana, bob } = await teamRoles(url);
    const session = await lingering(ana, svc);
    let lock: ServiceLock | undefined;
    try {
      const r = await runMain(['send', prefixedRun(home.dir, 'L'), '--yes'], {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: bob },
        clock: new FakeClock(),
      });
      expect(r.code).toBe(8);
      expect(r.stderr).toMatch(
        /has ended, but its database session \(backend pid (\d+)\) still holds the lock; nothing was sent\. .*SELECT pg_terminate_backend\(\1\)/,
      );
      expect(svc.creates).toBe(0);
      expect(session.lost).toBe(false);
    } finally {
      await lock?.release();
      await session.close();
    }
  });
});
