import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { serviceIdentity } from '../../src/api/base-url.js';
import { approvalHash, contentHash } from '../../src/state/approval-hash.js';
import { PG_MIGRATIONS } from '../../src/state/schema.js';
import { holdsFirst, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { freshDatabase, query, recycledDatabase, schemaOf, teamRoles } from '../helpers/pg.js';

// Issue 48, item 1: a person's PostgreSQL password, given on the command line, reached every
// role of the shared history through the lock row's recorded command line, and every sender
// who met the lock through the exit-8 message. Since issue 52 a command line carries no such
// password at all (refused); a password elsewhere on it (a webhook URL's) is still masked.

const fixture = ledgerPerTest();

/** A payout file of `n` rows PREFIX-1… */
function payoutFile(dir: string, prefix: string, n: number): string {
  const file = join(dir, `${prefix.toLowerCase()}.csv`);
  const rows = Array.from({ length: n }, (_, i) => `${prefix}-${i + 1},1.00,EUR,r${i}@ex.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/** Every row of every table and view of the history's schema, as text, read as `url`'s role. */
async function everyRow(url: string): Promise<string> {
  const schema = schemaOf(url);
  const rels = await query<{ name: string }>(
    url,
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relnamespace = $1::regnamespace AND c.relkind IN ('r', 'v')`,
    [schema],
  );
  const texts: string[] = [];
  for (const { name } of rels) {
    const rows = await query<{ row: string }>(url, `SELECT t::text AS row FROM ${name} t`);
    texts.push(`${name}: ${rows.map((r) => r.row).join('\n')}`);
  }
  return texts.join('\n');
}

/** A webhook URL whose user part holds a token: a password on the command line, to be masked. */
const WEBHOOK_TOKEN = 'HookTok-7c1e9a';
const WEBHOOK = `https://hook:${WEBHOOK_TOKEN}@hooks.example.invalid/payouts`;

describe('no password in the shared history', () => {
  it('--state-url with a password is refused: exit 2, nothing sent, nothing recorded', async () => {
    const url = await recycledDatabase();
    const { ana } = await teamRoles(url);
    const password = new URL(ana).password;
    const svc = await fixture.start();
    const home = fixture.home();
    const file = payoutFile(home.dir, 'ANA', 3);
    for (const json of [[], ['--json']]) {
      const r = await runMain(['send', file, '--yes', ...json, '--state-url', ana], {
        env: svc.env(home.env),
        clock: new FakeClock(),
      });
      expect(r.code).toBe(2);
      expect(`${r.stdout}${r.stderr}`).toMatch(/carries a password on the command line/);
      expect(`${r.stdout}${r.stderr}`).not.toContain(password);
    }
    expect(svc.creates).toBe(0);
    // Not a run, a staged row or a lock row: the history was never opened.
    const recorded = await query<{ n: number }>(
      url,
      `SELECT (SELECT count(*) FROM runs)::int + (SELECT count(*) FROM payouts)::int
            + (SELECT count(*) FROM locks)::int AS n`,
    );
    expect(recorded[0]!.n).toBe(0);
    expect(await everyRow(url)).not.toContain(password);
  });

  it('a send whose command line holds a password: not in any table, lock row or message', async () => {
    const url = await recycledDatabase();
    const { ana, bob } = await teamRoles(url);
    const password = new URL(ana).password;
    const secrets = [password, WEBHOOK_TOKEN];
    const { policy, posted, release } = holdsFirst();
    const svc = await fixture.start(policy);
    const [anaHome, bobHome] = [fixture.home(), fixture.home()];
    const file = payoutFile(anaHome.dir, 'ANA', 3);
    // Ana's password comes from the environment; her command line holds the webhook's token.
    const argv = ['send', file, '--yes', '--chunk-size', '1', '--concurrency', '1'];
    const sending = runMain([...argv, '--webhook-url', WEBHOOK], {
      env: { ...svc.env(anaHome.env), PAYOUTS_STATE_URL: ana },
      clock: new FakeClock(),
    });
    await posted;
    try {
      // While ana's send holds the service: bob reads every table with plain SQL, and sends.
      const seen = await everyRow(bob);
      expect(seen).toMatch(/locks: .*payouts send .*--webhook-url/);
      expect(seen).toContain('hook:***@hooks.example.invalid');
      const other = payoutFile(bobHome.dir, 'BOB', 1);
      const env = { ...svc.env(bobHome.env), PAYOUTS_STATE_URL: bob };
      const busy = await runMain(['send', other, '--yes'], { env, clock: new FakeClock() });
      const busyJson = await runMain(['send', other, '--yes', '--json'], {
        env,
        clock: new FakeClock(),
      });
      for (const r of [busy, busyJson]) {
        expect(r.code).toBe(8);
        expect(`${r.stdout}${r.stderr}`).toMatch(/sending: .*--webhook-url/);
        for (const secret of secrets) expect(`${r.stdout}${r.stderr}`).not.toContain(secret);
      }
      for (const secret of secrets) expect(seen).not.toContain(secret);
    } finally {
      release();
    }
    const done = await sending;
    expect(done.code).toBe(0);
    const after = await everyRow(url);
    // The run keeps the options a finishing command repeats, the webhook's password masked.
    expect(after).toMatch(/runs: .*--webhook-url.*hook:\*\*\*@hooks\.example\.invalid/);
    for (const secret of secrets) {
      expect(`${done.stdout}${done.stderr}`).not.toContain(secret);
      expect(after).not.toContain(secret);
    }
    const runs = await runMain(['runs', '--json'], {
      env: { ...svc.env(bobHome.env), PAYOUTS_STATE_URL: bob },
    });
    expect(runs.code).toBe(0);
    for (const secret of secrets) expect(runs.stdout).not.toContain(secret);
  });

  it('a lock row a send killed before this version left is masked when the history migrates', async () => {
    const admin = await freshDatabase();
    const step = PG_MIGRATIONS.findIndex((m) => m.includes('passwords were masked'));
    expect(step).toBeGreaterThan(0);
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      for (const s of PG_MIGRATIONS.slice(0, step)) if (s) await c.query(s);
      await c.query('CREATE TABLE schema_version (version INTEGER NOT NULL)');
      await c.query('INSERT INTO schema_version VALUES ($1)', [step]);
      await c.query(
        `INSERT INTO locks (service_id, host, os_user, pid, started_at, command)
         VALUES ('s1', 'h', 'ana', 1, 'then', 'payouts send a.csv --state-url postgres://ana:hunter2@db/x'),
                ('s2', 'h', 'bob', 2, 'then', 'payouts send b.csv --yes')`,
      );
    } finally {
      await c.end();
    }
    const svc = await fixture.start();
    const home = fixture.home();
    const r = await runMain(['runs'], { env: { ...svc.env(home.env), PAYOUTS_STATE_URL: admin } });
    expect(r.code).toBe(0);
    const rows = await query<{ command: string }>(
      admin,
      'SELECT command FROM locks ORDER BY service_id',
    );
    expect(rows.map((x) => x.command)).toEqual([
      'payouts send (a command line recorded before passwords were masked)',
      'payouts send b.csv --yes',
    ]);
  });
});

describe("a prepared run's webhook URL", () => {
  /** Ana prepares three payouts with WEBHOOK under the rule; Bob approves them. */
  async function approvedRun() {
    const admin = await recycledDatabase();
    const svc = await fixture.start();
    const [anaHome, bobHome] = [fixture.home(), fixture.home()];
    const as = (home: typeof anaHome, url: string, args: string[]) =>
      runMain(args, {
        env: { ...svc.env(home.env), PAYOUTS_STATE_URL: url },
        clock: new FakeClock(),
      });
    expect((await as(anaHome, admin, ['approvals', 'require'])).code).toBe(0);
    const { ana, bob } = await teamRoles(admin);
    const file = payoutFile(anaHome.dir, 'HOOK', 3);
    const prepared = await as(anaHome, ana, ['send', file, '--prepare', '--webhook-url', WEBHOOK]);
    expect(prepared.code).toBe(0);
    const prep = /^Prepared run (p[0-9a-f]{15})/m.exec(prepared.stdout)![1]!;
    expect((await as(bobHome, bob, ['approve', prep, '--yes'])).code).toBe(0);
    return { admin, svc, file, prep, send: (args: string[]) => as(anaHome, ana, args) };
  }

  it('is kept without its password; the send gives it again and the service gets it whole', async () => {
    const { admin, svc, file, prep, send } = await approvedRun();
    const kept = await everyRow(admin);
    expect(kept).toMatch(/prepared_runs: .*https:\/\/hook:\*\*\*@hooks\.example\.invalid\/payouts/);
    expect(kept).not.toContain(WEBHOOK_TOKEN);
    // The history cannot give the password back: the sender is asked for it, nothing is sent.
    const bare = await send(['send', '--approved', prep, '--yes']);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toMatch(
      /whose password the shared history does not keep: give the whole URL with --webhook-url/,
    );
    const other = `https://hook:${WEBHOOK_TOKEN}@hooks.example.invalid/elsewhere`;
    const moved = await send(['send', '--approved', prep, '--yes', '--webhook-url', other]);
    expect(moved.code).toBe(2);
    expect(moved.stderr).toMatch(/was approved to go as it was prepared: the webhook URL is/);
    expect(svc.creates).toBe(0);
    // The file itself, with the whole URL, is the approved run: sent once, the token to the service.
    const sent = await send(['send', file, '--yes', '--webhook-url', WEBHOOK]);
    expect(sent.code).toBe(0);
    expect(svc.creates).toBe(1);
    expect(svc.bodies[0]).toContain(WEBHOOK_TOKEN);
    expect(await everyRow(admin)).not.toContain(WEBHOOK_TOKEN);
  });

  it('one recorded with its password before this version is masked when the history migrates', async () => {
    const { admin, svc, prep, send } = await approvedRun();
    // As an older version kept it: the whole URL, its content hash made over it.
    const c = new pg.Client({ connectionString: admin });
    await c.connect();
    try {
      const p = await c.query<{ id: number; service: string; batch_reference: string | null }>(
        'SELECT id, service, batch_reference FROM prepared_runs WHERE prep_id = $1',
        [prep],
      );
      const rows = await c.query('SELECT * FROM prepared_payouts WHERE prep = $1', [p.rows[0]!.id]);
      const payouts = rows.rows.map((x) => ({ ...x, hash: approvalHash(x) }));
      const bound = {
        ...p.rows[0]!,
        service: serviceIdentity(p.rows[0]!.service),
        webhook_url: WEBHOOK,
      };
      await c.query('ALTER TABLE prepared_runs DISABLE TRIGGER prepared_runs_append_only');
      await c.query('UPDATE prepared_runs SET webhook_url = $1, content_hash = $2 WHERE id = $3', [
        WEBHOOK,
        contentHash(payouts, bound),
        p.rows[0]!.id,
      ]);
      await c.query('ALTER TABLE prepared_runs ENABLE TRIGGER prepared_runs_append_only');
      await c.query('UPDATE schema_version SET version = $1', [PG_MIGRATIONS.length - 1]);
    } finally {
      await c.end();
    }
    expect(await everyRow(admin)).toContain(WEBHOOK_TOKEN);
    // The owner's next command migrates; the approved run still sends, its figures true, once.
    const env = { ...svc.env(fixture.home().env), PAYOUTS_STATE_URL: admin };
    expect((await runMain(['runs'], { env })).code).toBe(0);
    const sent = await send(['send', '--approved', prep, '--yes', '--webhook-url', WEBHOOK]);
    expect(sent.code).toBe(0);
    expect(svc.creates).toBe(1);
    expect(svc.bodies[0]).toContain(WEBHOOK_TOKEN);
    expect(await everyRow(admin)).not.toContain(WEBHOOK_TOKEN);
  });
});
