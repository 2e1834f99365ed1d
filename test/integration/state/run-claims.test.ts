import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import type { HistoryStore, LockRequest, RunClaims } from '../../../src/domain/history.js';
import { localHistory } from '../../../src/state/local-history.js';
import { sharedHistory } from '../../../src/state/pg/store.js';
import { localRunClaims, runClaimPath } from '../../../src/state/send-lock.js';
import { recycledDatabase, STORES, type Store } from '../../helpers/pg.js';
import { tempStateDir } from '../../unit/state/helpers.js';

// Issue 51 item 1: a send claims the runs it decides (its own, and those holding its payouts
// in doubt); another send meeting those payouts leaves them to it while the claim is held.

const ME: LockRequest = {
  pid: process.pid,
  command: 'payouts send june.csv --state-url postgres://ana:hunter2@db.invalid/p',
  startedAt: '2026-11-24T12:00:00.000Z',
};

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** Two sends' views of one history of the store under test. */
async function twoSends(store: Store): Promise<[HistoryStore<unknown>, HistoryStore<unknown>]> {
  if (store === 'sqlite') {
    const dir = await tempStateDir();
    return [localHistory(dir), localHistory(dir)];
  }
  const url = await recycledDatabase();
  const a = await sharedHistory(url);
  const b = await sharedHistory(url);
  closers.push(
    () => a.close(),
    () => b.close(),
  );
  return [a, b];
}

describe.each(STORES)('claims on runs (%s)', (store) => {
  it("a run claimed by one send is the other one's to leave, until it is given back", async () => {
    const [a, b] = await twoSends(store);
    const mine: RunClaims = a.runClaims(ME);
    const theirs: RunClaims = b.runClaims(ME);
    expect(await mine.take(['R1', 'R2'])).toEqual(new Set());
    // Asked again, a send's own claims are still its own.
    expect(await mine.take(['R2', 'R1'])).toEqual(new Set());
    expect(await theirs.take(['R2', 'R3'])).toEqual(new Set(['R2']));
    expect(await mine.take(['R3'])).toEqual(new Set(['R3']));
    await mine.release();
    expect(await theirs.take(['R1', 'R2'])).toEqual(new Set());
    await theirs.release();
    expect(await mine.take(['R1', 'R2', 'R3'])).toEqual(new Set());
    await mine.release();
  });
});

describe('a claim goes with the send that held it', () => {
  it('a state folder: a claim whose process has ended is taken over', async () => {
    const stateDir = await tempStateDir();
    const dead = localRunClaims({ stateDir, pid: 999_999, command: ME.command });
    expect(await dead.take(['R1'])).toEqual(new Set());
    // Other users of the folder's locks read it: no password of any URL.
    const held = readFileSync(runClaimPath(stateDir, 'R1'), 'utf8');
    expect(held).toContain('postgres://ana:***@db.invalid/p');
    expect(held).not.toContain('hunter2');
    const next = localRunClaims({
      stateDir,
      pid: process.pid,
      command: ME.command,
      isAlive: (pid) => pid !== 999_999,
    });
    expect(await next.take(['R1'])).toEqual(new Set());
    await next.release();
  });

  it('a shared history: the server gives a claim back when its session ends', async () => {
    const url = await recycledDatabase();
    const gone = await sharedHistory(url);
    expect(await gone.runClaims(ME).take(['R1'])).toEqual(new Set());
    const next = await sharedHistory(url);
    closers.push(() => next.close());
    const claims = next.runClaims(ME);
    expect(await claims.take(['R1'])).toEqual(new Set(['R1']));
    await gone.close();
    expect(await claims.take(['R1'])).toEqual(new Set());
    await claims.release();
  });
});
