import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  type CreatePolicy,
  type LedgerOptions,
  type LedgerService,
  holdsFirst,
  ledgerPerTest,
} from '../helpers/ledger-service.js';
import { sendJson } from '../helpers/http-servers.js';
import { FakeClock, type MainResult, runMain } from '../helpers/main.js';

// Issue 25: one history per service, whatever the machine, the state folder or the key.
// Every test asserts the two things that matter: no payout applied twice per the ledger, and
// --failed-out lists only payouts the service does not hold as paid.

const fixture = ledgerPerTest();

interface Doc {
  success_count: number;
  failed_count: number;
  sent_earlier_count: number;
  found_at_service_count: number;
  results: Array<{
    reference_id: string;
    status: string;
    sent_earlier?: boolean;
    found_at_service?: boolean;
  }>;
}

/** A file of `n` payouts H-1..H-n in a folder, and each one's amount as the service holds it. */
function payoutFile(dir: string, n: number) {
  const refs = Array.from({ length: n }, (_, i) => `H-${i + 1}`);
  const file = join(dir, 'run.csv');
  const rows = refs.map((r, i) => `${r},${i + 1}.50,EUR,${r.toLowerCase()}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  const amountOf = (ref: string) => refs.indexOf(ref) + 1.5;
  return { file, refs, amountOf };
}

/** One machine: its own home (config and state folder). */
function machine() {
  return fixture.home();
}

/** A send of `file` from `home` under `clientId`, with --failed-out, on `clock`. */
async function send(
  svc: LedgerService,
  how: { home: ReturnType<typeof machine>; file: string; clock: FakeClock },
  opts: { clientId?: string; args?: string[]; interrupt?: AbortSignal } = {},
): Promise<MainResult & { failedOut: string[] }> {
  const failedPath = join(how.home.dir, `failed-${Math.random().toString(36).slice(2)}.csv`);
  const env = { ...svc.env(how.home.env), PAYOUTS_CLIENT_ID: opts.clientId ?? 'client-1' };
  const args = ['send', how.file, '--yes', '--json', '--failed-out', failedPath];
  const r = await runMain([...args, ...(opts.args ?? [])], {
    env,
    clock: how.clock,
    interrupt: opts.interrupt,
  });
  const lines = existsSync(failedPath) ? readFileSync(failedPath, 'utf8').trim().split('\n') : [];
  return { ...r, failedOut: lines.slice(1).map((l) => l.split(',')[0]!) };
}

/** The two assertions of every story. */
function expectNeverTwice(
  svc: LedgerService,
  failedOut: string[],
  amountOf: (ref: string) => number,
): void {
  expect(svc.appliedTwice()).toEqual([]);
  for (const ref of failedOut) {
    const held = svc.held.get(ref);
    const ours = held !== undefined && held.amount === amountOf(ref);
    expect(!ours || ['failed', 'canceled'].includes(held.status), ref).toBe(true);
  }
}

async function start(policy?: CreatePolicy, options?: LedgerOptions) {
  return fixture.start(policy, options);
}

describe('a second, empty state folder', () => {
  it('against a service that refuses duplicates: its "failed" is read back and found, sent earlier', async () => {
    const svc = await start(undefined, { refuseDuplicates: true });
    const clock = new FakeClock();
    const [a, b] = [machine(), machine()];
    const { file, amountOf } = payoutFile(a.dir, 12);
    const first = await send(svc, { home: a, file, clock });
    expect(first.code).toBe(0);
    const second = await send(svc, { home: b, file, clock });
    // No history here: the run warns, sends, and the service refuses every one as a duplicate.
    expect(second.stderr).toMatch(/holds no run of .*--check-service/);
    expect(second.code).toBe(0);
    const doc = JSON.parse(second.stdout) as Doc;
    expect(doc.failed_count).toBe(0);
    expect(doc.found_at_service_count).toBe(12);
    expect(doc.results.every((r) => r.found_at_service && r.status === 'success')).toBe(true);
    expect(second.failedOut).toEqual([]);
    expectNeverTwice(svc, second.failedOut, amountOf);
    // This folder's history now knows them: a third run sends nothing.
    const creates = svc.creates;
    expect((await send(svc, { home: b, file, clock })).code).toBe(0);
    expect(svc.creates).toBe(creates);
    // As people read it: the table and the closing line say where they were found.
    const c = machine();
    const env = { ...svc.env(c.env), PAYOUTS_CLIENT_ID: 'client-1' };
    const text = await runMain(['send', file, '--yes'], { env, clock });
    expect(text.stdout).toContain('success (sent earlier, found at the service)');
    // On a pipe the closing line goes to stderr, keeping stdout one TSV table.
    expect(text.stderr).toMatch(
      /12 payouts: 12 succeeded, 0 failed, 0 pending \(12 sent earlier, not sent again, 12 of them found at the service\)/,
    );
  });

  it('against a service that does not: --check-service finds them before anything is sent', async () => {
    const svc = await start();
    const clock = new FakeClock();
    const [a, b] = [machine(), machine()];
    const { file, refs, amountOf } = payoutFile(a.dir, 12);
    expect((await send(svc, { home: a, file, clock })).code).toBe(0);
    const second = await send(svc, { home: b, file, clock }, { args: ['--check-service'] });
    expect(second.code).toBe(0);
    expect(second.stderr).not.toMatch(/holds no history/);
    const doc = JSON.parse(second.stdout) as Doc;
    expect(doc.found_at_service_count).toBe(12);
    expect(second.failedOut).toEqual([]);
    expect(refs.every((r) => svc.posts.get(r) === 1)).toBe(true);
    expectNeverTwice(svc, second.failedOut, amountOf);
  });
});

describe('a "failed" answer', () => {
  it('that cannot be read back is unknown (exit 7), never failed nor in --failed-out', async () => {
    const svc = await start(undefined, { refuseDuplicates: true });
    const clock = new FakeClock();
    const [a, b] = [machine(), machine()];
    const { file, amountOf } = payoutFile(a.dir, 2);
    expect((await send(svc, { home: a, file, clock })).code).toBe(0);
    svc.onGet = (_ref, res) => {
      sendJson(res, 500, { success: false, message: ['Internal error'], data: [] });
      return true;
    };
    const r = await send(svc, { home: b, file, clock });
    expect(r.code).toBe(7);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.failed_count).toBe(0);
    expect(doc.results.map((x) => x.status)).toEqual(['unknown', 'unknown']);
    expect(r.failedOut).toEqual([]);
    expectNeverTwice(svc, r.failedOut, amountOf);
  });

  it('that the service holds as another payout stays failed, in --failed-out', async () => {
    const svc = await start(undefined, { refuseDuplicates: true });
    const clock = new FakeClock();
    const home = machine();
    const { file, amountOf } = payoutFile(home.dir, 2);
    svc.preload({ reference_id: 'H-1', amount: 70, currency: 'EUR', recipient: 'x@example.com' });
    const r = await send(svc, { home, file, clock });
    expect(r.code).toBe(4);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.failed_count).toBe(1);
    expect(r.failedOut).toEqual(['H-1']);
    expectNeverTwice(svc, r.failedOut, amountOf);
  });
});

describe('a new Client-Id on the same service', () => {
  it('resumes a run interrupted under the old key without resending what it paid', async () => {
    const svc = await start((n) => {
      if (n === 4) stop.abort();
      return {};
    });
    const stop = new AbortController();
    const clock = new FakeClock();
    const home = machine();
    const { file, refs, amountOf } = payoutFile(home.dir, 100);
    const args = ['--chunk-size', '10', '--concurrency', '1'];
    const first = await send(svc, { home, file, clock }, { args, interrupt: stop.signal });
    expect(first.code).toBe(130);
    expect(svc.held.size).toBe(40);
    expectNeverTwice(svc, first.failedOut, amountOf);
    const second = await send(svc, { home, file, clock }, { clientId: 'client-2', args });
    expect(second.code).toBe(0);
    const doc = JSON.parse(second.stdout) as Doc;
    expect(doc.sent_earlier_count).toBe(40);
    expect(refs.every((r) => svc.posts.get(r) === 1)).toBe(true);
    expectNeverTwice(svc, second.failedOut, amountOf);
  });

  it('waits for the lock of a run under the old key: two runs at once, one sends', async () => {
    const { policy, posted: inFlight, release } = holdsFirst();
    const svc = await start(policy);
    const clock = new FakeClock();
    const home = machine();
    const { file, refs, amountOf } = payoutFile(home.dir, 12);
    const first = send(svc, { home, file, clock });
    await inFlight;
    const second = await send(svc, { home, file, clock }, { clientId: 'client-2' });
    expect(second.code).toBe(8);
    expect(second.stderr).toMatch(/another payouts send to this service is running/);
    release();
    const done = await first;
    expect(done.code).toBe(0);
    expect(refs.every((r) => svc.posts.get(r) === 1)).toBe(true);
    expectNeverTwice(svc, [...done.failedOut, ...second.failedOut], amountOf);
  });

  it('stops when the service holds another payout under a reference the old key recorded', async () => {
    const svc = await start();
    const clock = new FakeClock();
    const home = machine();
    const { file, amountOf } = payoutFile(home.dir, 3);
    expect((await send(svc, { home, file, clock })).code).toBe(0);
    // Under the new key the service shows another payout under H-2 (another account's).
    svc.held.set('H-2', { ...svc.held.get('H-2')!, amount: 999 });
    const creates = svc.creates;
    const second = await send(svc, { home, file, clock }, { clientId: 'client-2' });
    expect(second.code).toBe(2);
    expect(second.stderr).toMatch(/H-2.*recorded this payout as sent under Client-Id client-1/s);
    expect(second.stderr).toMatch(/asked with Client-Id client-2, holds another payout/);
    expect(svc.creates).toBe(creates);
    expectNeverTwice(svc, second.failedOut, amountOf);
  });
});

describe('a service whose lookups lag behind its writes', () => {
  for (const refuseDuplicates of [false, true]) {
    it(`reads "not found" twice before sending again (${refuseDuplicates ? 'refuses' : 'accepts'} duplicates)`, async () => {
      const clock = new FakeClock();
      // Applied, then the connection is cut; lookups see it 75 s later (the quiet time is 50 s).
      const svc = await start((n) => (n === 1 ? { cut: true } : {}), {
        refuseDuplicates,
        lag: { ms: 75_000, clock },
      });
      const home = machine();
      const { file, refs, amountOf } = payoutFile(home.dir, 3);
      const r = await send(svc, { home, file, clock });
      expect(r.code).toBe(0);
      expect(r.stderr).toMatch(/reading them once more in 50 s/);
      expect(svc.creates).toBe(1);
      expect(refs.every((ref) => svc.held.get(ref)?.times === 1)).toBe(true);
      expect(r.failedOut).toEqual([]);
      expectNeverTwice(svc, r.failedOut, amountOf);
    });
  }
});

describe('a quiet time set per profile', () => {
  it('is stored by `config set` and used for a service slower than twice the default', async () => {
    const clock = new FakeClock();
    // Lookups see a write 150 s late: 50 s and 100 s (the default, twice) would miss it.
    const svc = await start((n) => (n === 1 ? { cut: true } : {}), {
      lag: { ms: 150_000, clock },
    });
    const home = machine();
    const set = await runMain(['config', 'set', 'quiet_time', '120'], { env: home.env });
    expect(set.code).toBe(0);
    expect(set.stdout).toMatch(/Set quiet_time to 120 for profile "default"/);
    const bad = await runMain(['config', 'set', 'quiet_time', 'soon'], { env: home.env });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/quiet_time "soon": give the seconds/);
    // Shorter than the one PAYOUTS_TIMEOUT gives: kept, but the person is told it is not used.
    const short = await runMain(['config', 'set', 'quiet_time', '2'], { env: home.env });
    expect(short.code).toBe(0);
    expect(short.stderr).toContain(
      'warning: quiet_time 2 s is shorter than the 50 s that PAYOUTS_TIMEOUT (30 s, the default) gives: a send waits 50 s',
    );
    const quick = { ...home.env, PAYOUTS_TIMEOUT: '1' };
    expect((await runMain(['config', 'set', 'quiet_time', '2'], { env: quick })).stderr).toBe('');
    expect((await runMain(['config', 'set', 'quiet_time', '120'], { env: home.env })).stderr).toBe(
      '',
    );
    const { file, refs, amountOf } = payoutFile(home.dir, 2);
    const r = await send(svc, { home, file, clock });
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/waiting 120 s before reading them again/);
    expect(svc.creates).toBe(1);
    expect(refs.every((ref) => svc.held.get(ref)?.times === 1)).toBe(true);
    expectNeverTwice(svc, r.failedOut, amountOf);
  });
});

describe('--check-service on an empty history', () => {
  it('sends only what the service does not hold, and reports the rest found at the service', async () => {
    const svc = await start();
    const clock = new FakeClock();
    const home = machine();
    const { file, amountOf } = payoutFile(home.dir, 5);
    // Paid earlier from elsewhere: H-1 as success, H-3 still pending.
    svc.preload({
      reference_id: 'H-1',
      amount: 1.5,
      currency: 'EUR',
      recipient: 'h-1@example.com',
    });
    svc.preload(
      { reference_id: 'H-3', amount: 3.5, currency: 'EUR', recipient: 'h-3@example.com' },
      'pending',
    );
    const r = await send(svc, { home, file, clock }, { args: ['--check-service'] });
    // 5: one payout is still pending.
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/Looking up 5 payouts at the service/);
    const doc = JSON.parse(r.stdout) as Doc;
    expect(doc.found_at_service_count).toBe(2);
    const status = Object.fromEntries(doc.results.map((x) => [x.reference_id, x.status]));
    expect(status).toEqual({
      'H-1': 'success',
      'H-2': 'success',
      'H-3': 'pending',
      'H-4': 'success',
      'H-5': 'success',
    });
    expect(svc.posts.get('H-1')).toBeUndefined();
    expect(svc.posts.get('H-3')).toBeUndefined();
    expectNeverTwice(svc, r.failedOut, amountOf);
  });

  it('stops before sending anything when the service holds another payout under a reference', async () => {
    const svc = await start();
    const clock = new FakeClock();
    const home = machine();
    const { file, amountOf } = payoutFile(home.dir, 3);
    svc.preload({ reference_id: 'H-2', amount: 500, currency: 'EUR', recipient: 'x@example.com' });
    const r = await send(svc, { home, file, clock }, { args: ['--check-service'] });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/H-2.*holds another payout under this reference_id \(amount 500/s);
    expect(svc.creates).toBe(0);
    expectNeverTwice(svc, r.failedOut, amountOf);
  });
});
