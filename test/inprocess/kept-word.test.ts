import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseTriggerList } from '../../src/sandbox/index.js';
import { openStateDb } from '../../src/state/index.js';
import { parseJsonStdout, tempHomesPerTest } from '../helpers/cli.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { query, STORES, schemaOf, storeEnv } from '../helpers/pg.js';
import { testService } from '../helpers/sandbox.js';

// What `status` reads is kept (issue 47.2): the history takes the service's later word, and
// every reader of it (runs, runs show, its --failed-out, a re-run) follows.

const home = tempHomesPerTest();
const services: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const s of services.splice(0)) await s.close();
});

function monthFile(dir: string, recipients: string[]): string {
  const file = join(dir, 'month.csv');
  const rows = recipients.map((r, i) => `M-${i + 1},${100 + i}.00,EUR,${r}`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

describe('status keeps what it reads', () => {
  it('turns a late failure into a failed payout of its run, retried through the tool', async () => {
    const h = home();
    const clock = new FakeClock();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: 'ref=M-1:pending:failed' };
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = monthFile(h.dir, ['ana@example.com', 'bo@example.com']);
    const sent = await run(['send', file, '--sandbox', '--yes', '--json']);
    expect(sent.code).toBe(5);
    const runId = parseJsonStdout<{ run_id: string }>(sent).run_id;
    clock.t += 30_000;
    expect((await run(['status', 'M-1', 'M-2', '--sandbox'])).code).toBe(4);
    const list = await run(['runs', '--json']);
    const counts = parseJsonStdout<{ runs: Array<{ counts: object }> }>(list).runs[0]!.counts;
    expect(counts).toMatchObject({ success: 1, failed: 1, pending: 0 });
    const retry = join(h.dir, 'retry.csv');
    const out = await run([
      'runs',
      'show',
      runId,
      '--failed-out',
      retry,
      '--new-references',
      '-R1',
    ]);
    expect(out.code).toBe(0);
    expect(out.stderr).toContain('1 failed or canceled payout');
    const again = await run(['send', file, '--sandbox', '--yes']);
    expect(again.code).toBe(4);
    expect(again.stdout).toMatch(/^M-1\tfailed/m);
    expect(again.stderr).toContain('1 succeeded, 1 failed, 0 pending');
    const retried = await run(['send', retry, '--sandbox', '--yes']);
    expect(retried.code).toBe(0);
    const last = await run(['send', file, '--sandbox', '--yes', '--json']);
    expect(last.code).toBe(0);
  });
});

describe('a re-run of a sent file', () => {
  it('says how old the word on a pending payout is, and how to ask again', async () => {
    const h = home();
    const clock = new FakeClock();
    const env = { ...h.env, PAYOUTS_SANDBOX_TRIGGERS: 'ref=M-1:pending:success:600000000' };
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = monthFile(h.dir, ['ana@example.com', 'bo@example.com']);
    expect((await run(['send', file, '--sandbox', '--yes'])).code).toBe(5);
    const first = await run(['send', file, '--sandbox', '--yes']);
    expect(first.code).toBe(5);
    expect(first.stdout).toMatch(
      /^M-1\tpending \(sent earlier\)\t.*not checked since it was sent: `payouts reconcile`\t$/m,
    );
    clock.t += 3_600_000;
    expect((await run(['status', 'M-1', '--sandbox'])).code).toBe(5);
    clock.t += 3 * 86_400_000;
    const again = await run(['send', file, '--sandbox', '--yes']);
    expect(again.stdout).toMatch(
      /^M-1\tpending \(sent earlier\)\t.*last checked 3 days ago: `payouts reconcile`\t$/m,
    );
    expect(again.stdout).toMatch(/^M-2\tsuccess \(sent earlier\)\t[^`]*$/m);
    const runId = /Run ([0-9a-f]{16})/.exec(again.stderr)![1]!;
    const shown = await run(['runs', 'show', runId]);
    expect(shown.stdout).toMatch(
      /^M-1\t.*pending\t.*last checked 2026-11-24 13:00 UTC: `payouts reconcile`\t$/m,
    );
  });
});

describe.each(STORES)('what status keeps (%s)', (store) => {
  const withStore = storeEnv(store, { migrated: true });

  it('keeps the answers about payouts the history holds, --watch too, and nothing else', async () => {
    const clock = new FakeClock();
    const svc = await testService({
      triggers: parseTriggerList('ref=W-1:pending:failed:60000', 'PAYOUTS_SANDBOX_TRIGGERS'),
      now: () => clock.now(),
    });
    services.push(svc);
    const env = withStore(svc.env);
    const run = (args: string[]) => runMain(args, { env, clock });
    const file = join(svc.home.dir, 'w.csv');
    writeFileSync(file, 'reference_id,amount,currency,recipient\nW-1,5.00,EUR,w@example.com\n');
    expect((await run(['send', file, '--yes'])).code).toBe(5);
    // W-2 is not the history's: looked up, never kept.
    expect((await run(['status', 'W-1', 'W-2'])).code).toBe(6);
    const watched = await run(['status', 'W-1', '--watch', '--interval', '20']);
    expect(watched.code).toBe(4);
    const kept = await checksOf(store, withStore.url(), env);
    expect(kept).toEqual([
      ['pending', 'status'],
      ['failed', 'status --watch'],
    ]);
    const shown = await run(['runs', '--json']);
    const counts = parseJsonStdout<{ runs: Array<{ counts: object }> }>(shown).runs[0]!.counts;
    expect(counts).toMatchObject({ failed: 1, pending: 0 });
  });

  if (store === 'postgres')
    it('leaves the history as it is for a role that may only read it, and the status stands', async () => {
      const svc = await testService();
      services.push(svc);
      const env = withStore(svc.env);
      const file = join(svc.home.dir, 'r.csv');
      writeFileSync(file, 'reference_id,amount,currency,recipient\nRO-1,5.00,EUR,r@example.com\n');
      expect((await runMain(['send', file, '--yes'], { env })).code).toBe(0);
      const url = withStore.url()!;
      const reader = `reader_${Math.random().toString(16).slice(2, 10)}`;
      await query(url, `CREATE ROLE ${reader} LOGIN PASSWORD 'pw'`);
      await query(url, `GRANT USAGE ON SCHEMA ${schemaOf(url)} TO ${reader}`);
      await query(url, `GRANT SELECT ON ALL TABLES IN SCHEMA ${schemaOf(url)} TO ${reader}`);
      const as = new URL(url);
      as.username = reader;
      as.password = 'pw';
      const status = await runMain(['status', 'RO-1'], {
        env: { ...env, PAYOUTS_STATE_URL: as.toString() },
      });
      expect(status.code).toBe(0);
      expect(status.stderr).toBe('');
      expect(await query(url, 'SELECT * FROM checks')).toEqual([]);
      await query(url, `DROP OWNED BY ${reader}`);
      await query(url, `DROP ROLE ${reader}`);
    });
});

/** The checks a history holds, in order: [status, checked_by]. */
async function checksOf(
  store: string,
  url: string | undefined,
  env: Record<string, string>,
): Promise<Array<[string | null, string]>> {
  const sql = 'SELECT status, checked_by FROM checks ORDER BY id';
  const rows =
    store === 'sqlite'
      ? await (async () => {
          const db = await openStateDb(join(env.XDG_STATE_HOME!, 'payouts'));
          try {
            return db.prepare(sql).all() as Array<{ status: string | null; checked_by: string }>;
          } finally {
            db.close();
          }
        })()
      : await query<{ status: string | null; checked_by: string }>(url!, sql);
  return rows.map((r) => [r.status, r.checked_by]);
}
