import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { serviceKeyOf } from '../../src/core/service.js';
import { serviceId } from '../../src/state/hash.js';
import { PgHistory } from '../../src/state/pg/history.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { holdsFirst, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { freshDatabase, query, recycledDatabase } from '../helpers/pg.js';

// Issue 25's story: two state folders (two machines, or a laptop and a CI runner) sharing one
// PostgreSQL history, against a ledger that applies a payout again whenever it is posted again.

const fixture = ledgerPerTest();

/** A file of `n` payouts, and its references. */
function payoutFile(dir: string, n: number): { file: string; refs: string[] } {
  const refs = Array.from({ length: n }, (_, i) => `TEAM-${i + 1}`);
  const file = join(dir, 'run.csv');
  const rows = refs.map((r, i) => `${r},${i + 1}.50,EUR,${r.toLowerCase()}@example.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return { file, refs };
}

/** The references of a --failed-out file (none when it was not written). */
function failedRefs(path: string): string[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8')
    .trim()
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((l) => l.split(',')[0]!);
}

/**
 * Two machines: a state folder each, one shared history, already migrated unless `fresh` (for
 * the tests of its first use, or of a connection that fails before it is used).
 */
async function twoMachines(n: number, how: { fresh?: boolean } = {}) {
  const url = how.fresh ? await freshDatabase() : await recycledDatabase();
  const svc = await fixture.start();
  const a = fixture.home();
  const b = fixture.home();
  const { file, refs } = payoutFile(a.dir, n);
  writeFileSync(join(b.dir, 'run.csv'), readFileSync(file));
  const send = (home: typeof a, extra: { interrupt?: AbortSignal } = {}) =>
    runMain(
      [
        'send',
        join(home.dir, 'run.csv'),
        '--yes',
        '--json',
        '--failed-out',
        join(home.dir, 'failed.csv'),
      ],
      { env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url }, clock: new FakeClock(), ...extra },
    );
  return { url, svc, a, b, refs, send };
}

describe('two state folders sharing one PostgreSQL history', () => {
  it('sent one after the other: the second finds every payout sent earlier and sends none', async () => {
    const m = await twoMachines(6);
    const first = await m.send(m.a);
    expect(first.code).toBe(0);
    const creates = m.svc.creates;
    const second = await m.send(m.b);
    expect(second.code).toBe(0);
    expect(m.svc.creates).toBe(creates);
    const doc = parseJsonStdout<{ sent_earlier_count: number; failed_count: number }>(second);
    expect(doc.sent_earlier_count).toBe(6);
    expect(doc.failed_count).toBe(0);
    expect(m.svc.appliedTwice()).toEqual([]);
    expect([...m.svc.held.keys()].sort()).toEqual([...m.refs].sort());
    expect(failedRefs(join(m.a.dir, 'failed.csv'))).toEqual([]);
    expect(failedRefs(join(m.b.dir, 'failed.csv'))).toEqual([]);
    // A dry run from a third folder sees the same history.
    const c = fixture.home();
    const dry = await runMain(['send', join(m.a.dir, 'run.csv'), '--dry-run', '--json'], {
      env: { ...m.svc.env(c.env), PAYOUTS_STATE_URL: m.url },
    });
    expect(dry.code).toBe(0);
    expect(parseJsonStdout<{ sent_earlier: { payout_count: number } }>(dry).sent_earlier).toEqual(
      expect.objectContaining({ payout_count: 6 }),
    );
  });

  it('sent at the same time: the second exits 8 naming the first, and sends nothing', async () => {
    const m = await twoMachines(4);
    const { policy, posted, release } = holdsFirst();
    const svc = await fixture.start(policy);
    const env = (home: typeof m.a) => ({ ...svc.env(home.env), PAYOUTS_STATE_URL: m.url });
    const args = (home: typeof m.a) => [
      'send',
      join(home.dir, 'run.csv'),
      '--yes',
      '--json',
      '--failed-out',
      join(home.dir, 'failed.csv'),
    ];
    const first = runMain(args(m.a), { env: env(m.a), clock: new FakeClock() });
    await posted;
    const second = await runMain(args(m.b), { env: env(m.b), clock: new FakeClock() });
    release();
    expect(second.code).toBe(8);
    const message = second.stderr;
    expect(message).toMatch(/another payouts send to this service is running/);
    expect(message).toContain(`host ${hostname()}`);
    expect(message).toContain(`user ${userInfo().username}`);
    expect(message).toMatch(/started \d{4}-\d\d-\d\dT/);
    expect(message).not.toContain(':payouts-test@');
    expect((await first).code).toBe(0);
    expect(svc.creates).toBe(1);
    // Once the first is done, the second finds everything sent earlier.
    const again = await runMain(args(m.b), { env: env(m.b), clock: new FakeClock() });
    expect(again.code).toBe(0);
    expect(svc.creates).toBe(1);
    expect(svc.appliedTwice()).toEqual([]);
    expect(failedRefs(join(m.b.dir, 'failed.csv'))).toEqual([]);
  });

  it('started at the very same moment: one sends, the other exits 8 or finds all sent earlier', async () => {
    // Both make the history's schema at once, too.
    const m = await twoMachines(8, { fresh: true });
    const [ra, rb] = await Promise.all([m.send(m.a), m.send(m.b)]);
    const codes = [ra.code, rb.code].sort();
    expect([
      [0, 0],
      [0, 8],
    ]).toContainEqual(codes);
    if (codes[1] === 0) {
      const earlier = [ra, rb].map(
        (r) => parseJsonStdout<{ sent_earlier_count: number }>(r).sent_earlier_count,
      );
      expect(earlier.sort()).toEqual([0, 8]);
    }
    expect(m.svc.appliedTwice()).toEqual([]);
    expect([...m.svc.held.keys()].sort()).toEqual([...m.refs].sort());
    expect(failedRefs(join(m.a.dir, 'failed.csv'))).toEqual([]);
    expect(failedRefs(join(m.b.dir, 'failed.csv'))).toEqual([]);
  });

  it('a lock whose session died is given back by the server', async () => {
    const m = await twoMachines(2);
    const other = await PgHistory.open(m.url);
    await other.lockService(serviceKeyOf(m.svc.url), {
      pid: 1,
      started_at: 'then',
      command: 'payouts send x',
    });
    const blocked = await m.send(m.a);
    expect(blocked.code).toBe(8);
    expect(blocked.stderr).toMatch(/pid 1, started then/);
    // The session ends without giving the lock back, as when its process is killed.
    const key = Number.parseInt(serviceId(serviceKeyOf(m.svc.url)).slice(0, 8), 16);
    const killed = await query<{ pid: number }>(
      m.url,
      `SELECT pg_terminate_backend(pid), pid FROM pg_locks
       WHERE locktype = 'advisory' AND classid = 1885436271 AND objid = $1 AND granted`,
      [key],
    );
    expect(killed).toHaveLength(1);
    await other.close();
    const r = await m.send(m.a);
    expect(r.code).toBe(0);
    expect(m.svc.appliedTwice()).toEqual([]);
  });

  it('payouts runs lists the shared runs from either folder, and runs show reads one', async () => {
    const m = await twoMachines(3);
    expect((await m.send(m.a)).code).toBe(0);
    const env = { ...m.svc.env(m.b.env), PAYOUTS_STATE_URL: m.url };
    const list = await runMain(['runs', '--json'], { env });
    expect(list.code).toBe(0);
    const { runs } = JSON.parse(list.stdout) as {
      runs: Array<{ run_id: string; counts: { success: number } }>;
    };
    expect(runs).toHaveLength(1);
    expect(runs[0]!.counts.success).toBe(3);
    const local = await runMain(['runs', '--json'], { env: m.svc.env(m.b.env) });
    expect(JSON.parse(local.stdout)).toMatchObject({ runs: [], prepared_runs: [] });
    const show = await runMain(['runs', 'show', runs[0]!.run_id.slice(0, 6), '--json'], { env });
    expect(show.code).toBe(0);
    const detail = JSON.parse(show.stdout) as { payouts: Array<{ state: string }> };
    expect(detail.payouts.map((p) => p.state)).toEqual(['result', 'result', 'result']);
  });

  it('state push copies a local history in, once; a second folder then sends nothing again', async () => {
    const m = await twoMachines(5);
    const local = await runMain(['send', join(m.a.dir, 'run.csv'), '--yes'], {
      env: m.svc.env(m.a.env),
      clock: new FakeClock(),
    });
    expect(local.code).toBe(0);
    // The password from the environment: on a command line it would be refused.
    const withUrl = { ...m.a.env, PAYOUTS_STATE_URL: m.url };
    const push = await runMain(['state', 'push', '--json'], { env: withUrl });
    expect(push.code).toBe(0);
    const doc = JSON.parse(push.stdout) as {
      to: string;
      copied: unknown[];
      already_there: unknown[];
    };
    expect(doc.copied).toHaveLength(1);
    expect(doc.to).not.toContain(':payouts-test@');
    const twice = await runMain(['state', 'push'], { env: withUrl });
    expect(twice.code).toBe(0);
    expect(twice.stdout).toMatch(
      /0 runs \(0 payouts\) copied to postgres:\/\/postgres:\*\*\*@.*; 1 already there/,
    );
    // What to do next: use it for every send, push from the other machines.
    expect(twice.stdout).toContain(
      'Next: make it the history of every send here (`payouts config set state_url URL`',
    );
    expect(push.stdout).not.toContain('Next:');
    const rows = await query<{ n: number }>(m.url, 'SELECT count(*)::int AS n FROM payouts');
    expect(rows[0]!.n).toBe(5);
    // Every request's payouts come along, as the pushing session's (issue 48).
    const attempts = await query<{ n: number; sessions: number }>(
      m.url,
      'SELECT count(*)::int AS n, count(DISTINCT session)::int AS sessions FROM attempts',
    );
    expect(attempts).toEqual([{ n: 5, sessions: 1 }]);
    // Who sent it comes along.
    const who = await query<{ host: string; os_user: string }>(
      m.url,
      'SELECT host, os_user FROM runs',
    );
    expect(who).toEqual([{ host: hostname(), os_user: userInfo().username }]);
    const creates = m.svc.creates;
    const b = await m.send(m.b);
    expect(b.code).toBe(0);
    expect(parseJsonStdout<{ sent_earlier_count: number }>(b).sent_earlier_count).toBe(5);
    expect(m.svc.creates).toBe(creates);
    expect(m.svc.appliedTwice()).toEqual([]);
    expect(failedRefs(join(m.b.dir, 'failed.csv'))).toEqual([]);
  });

  it('state push from two folders that sent the same files keeps both runs', async () => {
    const m = await twoMachines(3);
    // Both folders sent the file on their own (the ledger applied it twice: this test is
    // about what the shared history keeps, so that neither folder's sends are lost).
    for (const home of [m.a, m.b]) {
      const r = await runMain(['send', join(home.dir, 'run.csv'), '--yes'], {
        env: m.svc.env(home.env),
        clock: new FakeClock(),
      });
      expect(r.code).toBe(0);
    }
    for (const home of [m.a, m.b, m.a]) {
      const env = { ...home.env, PAYOUTS_STATE_URL: m.url };
      expect((await runMain(['state', 'push'], { env })).code).toBe(0);
    }
    const runs = await query<{ run_id: string }>(m.url, 'SELECT run_id FROM runs ORDER BY id');
    expect(runs).toHaveLength(2);
    expect(runs[1]!.run_id).toMatch(new RegExp(`^${runs[0]!.run_id}-[0-9a-f]{8}$`));
    const results = await query<{ n: number }>(m.url, 'SELECT count(*)::int AS n FROM results');
    expect(results[0]!.n).toBe(6);
  });

  it("a profile's state_url is used even when the credentials come from the environment", async () => {
    const m = await twoMachines(2);
    // A command line carries no password: the profile's URL has none, PGPASSWORD gives it.
    const bare = m.url.replace(':payouts-test@', '@');
    const set = await runMain(['config', 'set', 'state_url', bare], { env: m.a.env });
    expect(set.code).toBe(0);
    expect(set.stdout).toContain('postgres://postgres@');
    const show = await runMain(['config', 'show'], { env: m.a.env });
    expect(show.stdout).toMatch(
      /State\s+postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres\?options=\S+ \(from file\)/,
    );
    const r = await runMain(['send', join(m.a.dir, 'run.csv'), '--yes'], {
      env: { ...m.svc.env(m.a.env), PGPASSWORD: 'payouts-test' },
      clock: new FakeClock(),
    });
    expect(r.code).toBe(0);
    const rows = await query<{ n: number }>(m.url, 'SELECT count(*)::int AS n FROM results');
    expect(rows[0]!.n).toBe(2);
  });

  it("keeps a working URL's password out of the output of every command", async () => {
    const m = await twoMachines(2);
    const canary = 'PgLeakCanary-51d0c2';
    await query(
      m.url,
      `DO $$ BEGIN
         IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'leak') THEN
           CREATE ROLE leak LOGIN SUPERUSER PASSWORD '${canary}';
         END IF;
       END $$`,
    );
    const url = m.url.replace('postgres:payouts-test@', `leak:${canary}@`);
    const env = { ...m.svc.env(m.a.env), PAYOUTS_STATE_URL: url };
    const file = join(m.a.dir, 'run.csv');
    const outputs: string[] = [];
    const keep = async (args: string[], e: Record<string, string> = env) => {
      const r = await runMain(args, { env: e, clock: new FakeClock() });
      outputs.push(`${r.stdout}\n${r.stderr}`);
      return r;
    };
    expect((await keep(['send', file, '--yes', '--json', '--debug'])).code).toBe(0);
    expect((await keep(['send', file, '--yes', '--debug'])).code).toBe(0);
    await keep(['send', file, '--dry-run', '--debug']);
    await keep(['runs', '--debug']);
    await keep(['runs', '--json']);
    await keep(['config', 'set', 'state_url', url], m.a.env);
    await keep(['config', 'show'], m.a.env);
    await keep(['config', 'show', '--json'], m.a.env);
    // A folder with a local history to push (sent again without the shared one: this test
    // looks only at output).
    expect((await keep(['send', file, '--yes'], m.svc.env(m.b.env))).code).toBe(0);
    const pushed = await keep(['state', 'push', '--json'], { ...m.b.env, PAYOUTS_STATE_URL: url });
    expect(pushed.code).toBe(0);
    // On a command line a password is refused, without showing it.
    expect((await keep(['state', 'push', '--to', url], m.b.env)).code).toBe(2);
    expect((await keep(['send', file, '--yes', '--state-url', url])).code).toBe(2);
    const elsewhere = (to: string) => ({ ...env, PAYOUTS_STATE_URL: to });
    await keep(['send', file, '--yes'], elsewhere(url.replace('/postgres?', '/nodb?')));
    await keep(['send', file, '--yes'], elsewhere(url.replace(canary, `${canary}-wrong`)));
    const all = outputs.join('\n');
    expect(all).toContain('leak:***@');
    expect(all).not.toContain(canary);
  });

  it("honours the URL's sslmode: a server without TLS is refused, nothing is sent", async () => {
    const m = await twoMachines(1, { fresh: true });
    const r = await runMain(['send', join(m.a.dir, 'run.csv'), '--yes'], {
      env: { ...m.svc.env(m.a.env), PAYOUTS_STATE_URL: `${m.url}&sslmode=verify-full` },
      clock: new FakeClock(),
    });
    expect(r.code).toBe(7);
    expect(r.stderr).toMatch(/failed while connecting: .*SSL/i);
    expect(m.svc.creates).toBe(0);
  });

  it('keeps the password of the URL out of every message', async () => {
    const m = await twoMachines(1, { fresh: true });
    const bad = m.url.replace('payouts-test@', 'wrong-secret-pw@');
    const r = await runMain(['send', join(m.a.dir, 'run.csv'), '--yes', '--debug'], {
      env: { ...m.svc.env(m.a.env), PAYOUTS_STATE_URL: bad },
      clock: new FakeClock(),
    });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/shared history at postgres:\/\/postgres:\*\*\*@127\.0\.0\.1/);
    expect(`${r.stdout}${r.stderr}`).not.toContain('wrong-secret-pw');
    expect(m.svc.creates).toBe(0);
  });
});

describe('the first send into an empty shared history', () => {
  it('from a folder whose state.db holds earlier runs: advises state push, with the command', async () => {
    const url = await freshDatabase();
    const svc = await fixture.start();
    const home = fixture.home();
    const { file } = payoutFile(home.dir, 2);
    const env = svc.env(home.env);
    expect((await runMain(['send', file, '--yes'], { env, clock: new FakeClock() })).code).toBe(0);
    const shared = { ...env, PAYOUTS_STATE_URL: url };
    const r = await runMain(['send', file, '--yes'], { env: shared, clock: new FakeClock() });
    const stateDb = join(home.env.XDG_STATE_HOME as string, 'payouts', 'state.db');
    // The command to copy names no password: PGPASSWORD or ~/.pgpass give it.
    const bare = new URL(url);
    bare.password = '';
    expect(r.stderr).toContain(
      `, but ${stateDb} holds the runs sent from this folder: their payouts would be sent again. Copy them in first with \`payouts state push --to '${bare}'\` (its password in PGPASSWORD or ~/.pgpass)`,
    );
    expect(r.stderr).not.toContain('Share one history');
  });
});
