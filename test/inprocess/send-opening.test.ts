import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import { acquireSendLock, sendLockPath } from '../../src/state/index.js';
import { ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, type MainOptions, runMain } from '../helpers/main.js';

// Issue 42: a send opens its client, credentials and writer while the files are read, and
// under --yes takes the service's lock while it decides. None of that may send anything
// early, change which problem is reported, or hold the lock while a question is open.

const ledger = ledgerPerTest();

/** A payout file of `count` rows of 1.00 EUR in `dir`, `bad` adding a row with no amount. */
function payoutFile(dir: string, count: number, bad = false): string {
  const rows = Array.from({ length: count }, (_, i) => `OPEN-${i + 1},1.00,EUR,r${i}@example.com`);
  if (bad) rows.push('OPEN-BAD,,EUR,bad@example.com');
  const path = join(dir, 'run.csv');
  writeFileSync(path, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return path;
}

async function setup() {
  const svc = await ledger.start();
  const home = ledger.home();
  const env = { ...svc.env(home.env), NO_COLOR: '1' };
  const run = (args: string[], opts: MainOptions = {}) =>
    runMain(['send', ...args], { env, clock: new FakeClock(), ...opts });
  const lockPath = sendLockPath(join(home.dir, 'state', 'payouts'), serviceKeyOf(svc.url));
  return { svc, home, env, run, lockPath };
}

describe('what a send opens while it reads its files', () => {
  it('a file with a problem is refused for it, not for the credentials opened meanwhile', async () => {
    const t = await setup();
    const file = payoutFile(t.home.dir, 3, true);
    const r = await t.run([file, '--yes'], { env: { ...t.env, PAYOUTS_CLIENT_SECRET: '' } });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/line 5.*amount/);
    expect(r.stderr).not.toMatch(/PAYOUTS_CLIENT_SECRET|Client-Secret/);
    expect(t.svc.creates + t.svc.gets).toBe(0);
  });

  it('missing credentials are reported after a sound file was read, and nothing is sent', async () => {
    const t = await setup();
    const file = payoutFile(t.home.dir, 3);
    const r = await t.run([file, '--yes'], { env: { ...t.env, PAYOUTS_CLIENT_SECRET: '' } });
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/PAYOUTS_CLIENT_SECRET/);
    expect(t.svc.creates + t.svc.gets).toBe(0);
    // The staged rows were dropped: the next run with credentials sends every payout once.
    expect((await t.run([file, '--yes'])).code).toBe(0);
    expect(t.svc.held.size).toBe(3);
    expect(t.svc.appliedTwice()).toEqual([]);
  });

  it('under --yes, a run refused while deciding gives the lock it took back', async () => {
    const t = await setup();
    const file = payoutFile(t.home.dir, 4);
    const refused = await t.run([file, '--yes', '--max-total', 'EUR=2.00']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/EUR/);
    expect(t.svc.creates).toBe(0);
    expect(existsSync(t.lockPath)).toBe(false);
    expect((await t.run([file, '--yes'])).code).toBe(0);
    expect(t.svc.held.size).toBe(4);
  });

  it('under --yes, a service locked by another send is exit 8 and nothing is sent', async () => {
    const t = await setup();
    const file = payoutFile(t.home.dir, 2);
    const other = await acquireSendLock({
      stateDir: join(t.home.dir, 'state', 'payouts'),
      serviceKey: serviceKeyOf(t.svc.url),
      pid: process.pid,
      command: 'payouts send other.csv',
    });
    try {
      const r = await t.run([file, '--yes']);
      expect(r.code).toBe(8);
      expect(r.stderr).toMatch(/another payouts send to this service is running/);
      expect(t.svc.creates).toBe(0);
      // The other send's lock is left as it was.
      expect(existsSync(t.lockPath)).toBe(true);
    } finally {
      await other.release();
    }
  });

  it('without --yes the lock is taken only once the question is answered', async () => {
    const t = await setup();
    const file = payoutFile(t.home.dir, 2);
    const typed = new PassThrough();
    // The prompt starts reading standard input when it asks.
    const atQuestion = new Promise<void>((r) => typed.once('resume', () => r()));
    const asking = t.run([file], { input: typed, terminal: { columns: 100 } });
    await atQuestion;
    expect(t.svc.creates).toBe(0);
    // Another send to the service goes through while the question is open.
    const theirs = join(t.home.dir, 'theirs.csv');
    writeFileSync(
      theirs,
      'reference_id,amount,currency,recipient\nTHEIRS-1,2.00,EUR,t@example.com\n',
    );
    expect((await t.run([theirs, '--yes'])).code).toBe(0);
    typed.end('y\n');
    const r = await asking;
    expect(r.code).toBe(0);
    expect([...t.svc.held.keys()].sort()).toEqual(['OPEN-1', 'OPEN-2', 'THEIRS-1']);
    expect(t.svc.appliedTwice()).toEqual([]);
    expect(existsSync(t.lockPath)).toBe(false);
  });
});
