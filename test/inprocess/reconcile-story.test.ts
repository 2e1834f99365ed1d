import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStateDb } from '../../src/state/index.js';
import { parseTriggerList } from '../../src/sandbox/index.js';
import { parseJsonStdout, tempHome } from '../helpers/cli.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { query, STORES, storeEnv } from '../helpers/pg.js';
import { doubleSends, testService } from '../helpers/sandbox.js';

// Finance's month (issue 47): a send whose payouts fail late and are returned, reconciled at
// month's end by two people at once, the failures retried through the tool, and everything
// paid once, on state.db and on a shared history.

/** The month: two payouts answered pending that fail later, one paid and returned, one paid. */
const TRIGGERS = 'ref=NOV-1:pending:failed,ref=NOV-2:pending:canceled,ref=NOV-3:success:failed';

const services: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});

function monthFile(dir: string): string {
  const file = join(dir, 'nov.csv');
  const rows = [1, 2, 3, 4].map((i) => `NOV-${i},${i}0.00,EUR,person${i}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/** The reconcile document's results, by reference: [standing, change]. */
function judged(r: { stdout: string; stderr: string }) {
  const doc = parseJsonStdout<{
    results: Array<{ reference_id: string; standing: string; change: string | null }>;
  }>(r);
  return Object.fromEntries(doc.results.map((x) => [x.reference_id, [x.standing, x.change]]));
}

describe.each(STORES)('a month reconciled and retried (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('finds two late failures and a return, retries them, and pays each payout once', async () => {
    const clock = new FakeClock();
    const svc = await testService({
      triggers: parseTriggerList(TRIGGERS, 'PAYOUTS_SANDBOX_TRIGGERS'),
      now: () => clock.now(),
    });
    services.push(svc);
    const env = withStore(svc.env);
    const run = (args: string[], e = env) => runMain(args, { env: e, clock });
    const dir = svc.home.dir;
    const file = monthFile(dir);
    const report = join(dir, 'nov.report.csv');
    const sent = await run(['send', file, '--yes', '--json', '--report', report]);
    expect(sent.code).toBe(5);
    const runId = parseJsonStdout<{ run_id: string }>(sent).run_id;

    // Days later: the service has settled; two people reconcile the month at once (two
    // machines sharing the history on PostgreSQL; two terminals of one machine on state.db).
    clock.t += 86_400_000;
    const other = tempHome();
    services.push({ close: async () => other.cleanup() });
    const second = store === 'sqlite' ? env : { ...env, ...other.env };
    const both = await Promise.all([
      run(['reconcile', '--run', runId, '--json'], env),
      run(['reconcile', '--run', runId, '--json'], second),
    ]);
    for (const r of both) {
      expect(r.code).toBe(4);
      const standings = Object.values(judged(r)).map(([s]) => s);
      expect(standings).toEqual(['failed', 'canceled', 'failed', 'paid']);
    }
    // Whichever looked first saw the changes (the other may have found them kept already).
    expect(judged(both[0]!.code === 4 ? both[0]! : both[1]!)).toBeTruthy();
    expect(both.map(judged)).toContainEqual({
      'NOV-1': ['failed', 'settled'],
      'NOV-2': ['canceled', 'settled'],
      'NOV-3': ['failed', 'returned'],
      'NOV-4': ['paid', null],
    });
    // Each kept its answers: the history holds both people's, the latest its word.
    expect(await checkCount(store, withStore.url(), env)).toBe(8);
    const listed = await run(['runs', '--json']);
    const counts = parseJsonStdout<{ runs: Array<{ counts: object }> }>(listed).runs[0]!.counts;
    expect(counts).toMatchObject({ success: 1, failed: 2, canceled: 1, pending: 0 });

    // A person reads the same, as the history now has it: the three named, what to do next.
    const told = await run(['reconcile', '--run', runId]);
    expect(told.code).toBe(4);
    expect(told.stdout).toMatch(/^NOV-1\t\S+\tEUR 10\.00\tfailed\tfailed\t/m);
    expect(told.stdout).toMatch(/^NOV-2\t\S+\tEUR 20\.00\tcanceled\tcanceled\t/m);
    expect(told.stdout).toMatch(/^NOV-3\t\S+\tEUR 30\.00\tfailed\tfailed\t/m);
    expect(told.stdout).not.toMatch(/^NOV-4/m);
    expect(told.stderr).toContain('4 payouts looked up at ');
    expect(told.stderr).toContain(`payouts reconcile --run ${runId} --failed-out FILE`);

    const retry = join(dir, 'nov.retry.csv');
    const out = await run([
      'reconcile',
      '--run',
      runId,
      '--failed-out',
      retry,
      '--new-references',
      '-R1',
    ]);
    expect(out.code).toBe(4);
    expect(readFileSync(retry, 'utf8')).toMatch(/NOV-1,NOV-1-R1,10\.00,EUR/);
    expect(readFileSync(retry, 'utf8').trim().split(/\r?\n/)).toHaveLength(4);
    const retried = await run(['send', retry, '--yes', '--json', '--report', join(dir, 'r.csv')]);
    expect(retried.code).toBe(0);

    // The original file again: nothing to send, every payout paid (by itself or its retry).
    const before = await svc.ledger();
    const again = await run(['send', file, '--yes', '--json']);
    expect(again.code).toBe(0);
    const doc = parseJsonStdout<{ request_count: number | null; sent_earlier_count: number }>(
      again,
    );
    expect(doc.request_count ?? 0).toBe(0);
    expect(doc.sent_earlier_count).toBe(4);
    expect(await svc.ledger()).toEqual(before);
    expect((await run(['status', '--from', join(dir, 'r.csv')])).code).toBe(0);
    // Reconciled again, the month is paid: the three by their retries.
    const paid = await run(['reconcile', '--run', runId, '--json']);
    expect(paid.code).toBe(0);
    expect(Object.values(judged(paid)).map(([s]) => s)).toEqual(['paid', 'paid', 'paid', 'paid']);
    expect(doubleSends(await svc.ledger())).toEqual([]);
    expect(report).toBeTruthy();
  });
});

/** How many checks the history holds. */
async function checkCount(
  store: string,
  url: string | undefined,
  env: Record<string, string>,
): Promise<number> {
  if (store !== 'sqlite') {
    const [r] = await query<{ n: string }>(url!, 'SELECT count(*) AS n FROM checks');
    return Number(r!.n);
  }
  const db = await openStateDb(join(env.XDG_STATE_HOME!, 'payouts'));
  try {
    return (db.prepare('SELECT count(*) AS n FROM checks').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('a reconcile stopped, and on a terminal', () => {
  it('keeps what was looked up before a Ctrl-C (exit 130); the next goes on from there', async () => {
    const stop = new AbortController();
    let lookups = 0;
    const svc = await testService({
      // The tenth lookup answered: Ctrl-C.
      log: (line) => {
        if (/^GET .* -> 200/.test(line) && ++lookups === 10) stop.abort();
      },
      triggers: parseTriggerList('+late:pending:success:1000', 'PAYOUTS_SANDBOX_TRIGGERS'),
    });
    services.push(svc);
    const run = (args: string[], more = {}) => runMain(args, { env: svc.env, ...more });
    const file = join(svc.home.dir, 'stop.csv');
    const rows = Array.from({ length: 30 }, (_, i) => `S-${i},1.00,EUR,s${i}+late@example.com`);
    writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
    expect((await run(['send', file, '--yes'])).code).toBe(5);
    await new Promise((r) => setTimeout(r, 1100));
    const stopped = await run(['reconcile', '--json', '--concurrency', '1'], {
      interrupt: stop.signal,
    });
    expect(stopped.code).toBe(130);
    const doc = parseJsonStdout<{ looked_up_count: number; payout_count: number }>(stopped);
    expect(doc.payout_count).toBe(30);
    expect(doc.looked_up_count).toBeGreaterThan(0);
    expect(doc.looked_up_count).toBeLessThan(30);
    // What was looked up is kept: the next reconcile asks only the rest.
    const rest = await run(['reconcile', '--json']);
    expect(rest.code).toBe(0);
    const after = parseJsonStdout<{ looked_up_count: number }>(rest);
    expect(after.looked_up_count).toBe(30 - doc.looked_up_count);
  });

  it('shows its progress on a terminal: counts, changes and the time left', async () => {
    const svc = await testService({
      latencyMs: 150,
      triggers: parseTriggerList('+late:pending:failed:500', 'PAYOUTS_SANDBOX_TRIGGERS'),
    });
    services.push(svc);
    const file = join(svc.home.dir, 'tty.csv');
    const rows = Array.from({ length: 6 }, (_, i) => `T-${i},1.00,EUR,t${i}+late@example.com`);
    writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
    expect((await runMain(['send', file, '--yes'], { env: svc.env })).code).toBe(5);
    await new Promise((r) => setTimeout(r, 600));
    const argv = ['reconcile', '--concurrency', '1'];
    const r = await runMain(argv, { env: svc.env, terminal: { columns: 120 } });
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(
      /Reconciling: [1-5] of 6 payouts looked up · 0 changed · about \d+ s left/,
    );
    const table = r.stdout.replace(/\x1b\[[0-9;]*m/g, '');
    expect(table).toMatch(/T-0\s.*EUR 1\.00\s+pending\s+failed\s+settled/);
    expect(r.stderr).toContain('6 payouts looked up at ');
  });
});
