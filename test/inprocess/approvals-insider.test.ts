import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ledgerPerTest, type LedgerService } from '../helpers/ledger-service.js';
import { runMain } from '../helpers/main.js';
import { insiderTeam, sql, type Team } from '../helpers/insider.js';
import { PG_MIGRATIONS } from '../../src/state/schema.js';
import { freshDatabase, queryOne, schemaOf } from '../helpers/pg.js';

// Issue 39: the approval rules attacked as an insider would, with plain SQL (as psql would)
// from ordinary PostgreSQL roles holding broad grants, the tables owned by a role that is
// not a superuser. Each attack must send nothing and apply nothing twice.

const fixture = ledgerPerTest();

/** The team of this file: its first command turns the rule on (`approvals require`). */
const team = (rule: string[] = ['approvals', 'require']) => insiderTeam(fixture, rule);

/** A payout file of `n` rows REF-1… in `currency`, each 1.00 more than the last. */
function payoutFile(t: Team, name: string, n: number, currency = 'EUR'): string {
  const file = join(t.home.dir, name);
  const rows = Array.from(
    { length: n },
    (_, i) => `${name}-${i + 1},${i + 1}.00,${currency},r${i + 1}@ex.com`,
  );
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

/** Prepares a file as ana: the prepared run's id and its row id. */
async function prepare(t: Team, file: string): Promise<{ prep: string; id: number }> {
  const r = await t.run(t.ana, ['send', file, '--prepare']);
  expect(r.stderr).not.toMatch(/^error/m);
  const prep = /^Prepared run (p[0-9a-f]{15})/m.exec(r.stdout)![1]!;
  const { id } = await queryOne<{ id: number }>(
    t.ana,
    'SELECT id FROM prepared_runs WHERE prep_id = $1',
    [prep],
  );
  return { prep, id };
}

/** Nothing was sent since `creates`, and nothing was ever applied twice. */
function sentNothing(svc: LedgerService, creates: number): void {
  expect(svc.creates).toBe(creates);
  expect(svc.appliedTwice()).toEqual([]);
}

describe('approvals against an insider with plain SQL', () => {
  it("temporary tables shadow no approval table in the database's checks", async () => {
    const t = await team(['approvals', 'require', '--expires-days', '1']);
    const { prep, id } = await prepare(t, payoutFile(t, 'shadow.csv', 3));
    const s = t.schema;
    // prepared_runs saying another role prepared it: ana's own approval is still hers.
    expect(
      await sql(
        t.ana,
        `CREATE TEMP TABLE prepared_runs AS SELECT * FROM ${s}.prepared_runs`,
        "UPDATE pg_temp.prepared_runs SET prepared_by = 'someone_else'",
        `INSERT INTO ${s}.approvals (prep, decision, by_role, at) VALUES (${id}, 'approved', 'x', 'x')`,
      ),
    ).toMatch(/ana_\w+ prepared run p\w+ and cannot approve or reject it/);
    // approvals holding a forged approval: a `sent` event is still refused.
    expect(
      await sql(
        t.ana,
        `CREATE TEMP TABLE approvals AS SELECT * FROM ${s}.approvals`,
        `INSERT INTO pg_temp.approvals (id, prep, decision, by_role, at) VALUES (1, ${id}, 'approved', 'bob', 'x')`,
        `INSERT INTO ${s}.approvals (prep, decision, by_role, run_id, at) VALUES (${id}, 'sent', 'x', 'r', 'x')`,
      ),
    ).toMatch(/run p\w+ is not approved \(0 of 1 approvals/);
    // approval_rules with a long expiry: the rule's one day holds.
    expect(
      await sql(
        t.ana,
        `CREATE TEMP TABLE approval_rules AS SELECT * FROM ${s}.approval_rules`,
        'UPDATE pg_temp.approval_rules SET expires_days = 36500',
        'BEGIN',
        `INSERT INTO ${s}.prepared_runs (prep_id, service_id, service, inputs, content_hash,
           payout_count, totals, prepared_by, created_at, expires_at)
         VALUES ('p00000000000001', 'x', '${t.service}', '[]', 'h', 1,
           '{"EUR":{"count":1,"total":"1.00"}}', '', '', '')`,
        `INSERT INTO ${s}.prepared_payouts SELECT id, 1, 'X-1', '1.00', 'EUR', 'x@ex.com', NULL, 'h'
           FROM ${s}.prepared_runs WHERE prep_id = 'p00000000000001'`,
        'COMMIT',
      ),
    ).toBe(undefined);
    const forged = await queryOne<{ days: number }>(
      t.ana,
      `SELECT extract(day FROM expires_at::timestamptz - created_at::timestamptz)::int AS days
       FROM prepared_runs WHERE prep_id = 'p00000000000001'`,
    );
    expect(forged.days).toBe(1);
    // prepared_payouts of one cheap row: the figures are checked against the real rows.
    expect(
      await sql(
        t.ana,
        `CREATE TEMP TABLE prepared_payouts AS SELECT * FROM ${s}.prepared_payouts WHERE false`,
        'BEGIN',
        `INSERT INTO ${s}.prepared_runs (prep_id, service_id, service, inputs, content_hash,
           payout_count, totals, prepared_by, created_at, expires_at)
         VALUES ('p00000000000002', 'x', 'http://localhost:1', '[]', 'h', 1,
           '{"EUR":{"count":1,"total":"1.00"}}', '', '', '')`,
        `INSERT INTO pg_temp.prepared_payouts SELECT id, 1, 'X-1', '1.00', 'EUR', 'x@ex.com', NULL, 'h'
           FROM ${s}.prepared_runs WHERE prep_id = 'p00000000000002'`,
        `INSERT INTO ${s}.prepared_payouts SELECT id, g, 'Y-' || g, '900.00', 'EUR', 'm@evil.example', NULL, 'h'
           FROM ${s}.prepared_runs, generate_series(1, 20) g WHERE prep_id = 'p00000000000002'`,
        'COMMIT',
      ),
    ).toMatch(/prepared run p0+2 says 1 payouts and holds 20/);
    // Every function keeps its own search_path, pg_temp last.
    const fns = await queryOne<{ n: number; fixed: number }>(
      t.owner,
      `SELECT count(*)::int AS n, count(*) FILTER (WHERE proconfig::text LIKE
         '%search_path=pg_catalog, ${s}, pg_temp%')::int AS fixed
       FROM pg_proc WHERE pronamespace = '${s}'::regnamespace`,
    );
    expect(fns.fixed).toBe(fns.n);
    expect(fns.n).toBeGreaterThanOrEqual(10);
    // And CI sends nothing of ana's run.
    const ci = await t.run(t.ci, ['send', '--approved', prep, '--yes']);
    expect(ci.code).toBe(9);
    expect(ci.stderr).toMatch(/is not approved yet \(0 of 1 approvals\)/);
    sentNothing(t.svc, 0);
  });

  it('a decision keeps the screen it was made on: granted every right, no one changes it', async () => {
    const t = await team();
    const s = t.schema;
    const { prep, id } = await prepare(t, payoutFile(t, 'kept.csv', 2));
    const decided = await t.run(t.bob, ['approve', prep, '--yes', '--json']);
    expect(decided.code, decided.stderr).toBe(0);
    const kept = (JSON.parse(decided.stdout) as { reviews: Array<{ screen: unknown }> }).reviews;
    expect(kept).toHaveLength(1);
    expect(kept[0]!.screen).toMatchObject({
      lines: expect.arrayContaining([expect.stringMatching(/^New recipients: all 2, EUR 3\.00/)]),
    });
    const people = [t.ana, t.bob, t.carol].map(t.roleOf).join(', ');
    expect(await sql(t.owner, `GRANT UPDATE, DELETE, TRUNCATE ON approvals TO ${people}`)).toBe(
      undefined,
    );
    const forged = `'{"lines":["New recipients: none"],"attention":[]}'`;
    for (const who of [t.ana, t.bob, t.carol]) {
      expect(
        await sql(who, `UPDATE ${s}.approvals SET review = ${forged} WHERE prep = ${id}`),
      ).toMatch(/approvals rows are never changed or deleted/);
      expect(await sql(who, `DELETE FROM ${s}.approvals WHERE prep = ${id}`)).toMatch(
        /approvals rows are never changed or deleted/,
      );
      expect(await sql(who, `TRUNCATE ${s}.approvals`)).toMatch(
        /approvals rows are never changed or deleted/,
      );
    }
    // Nor is another decision, with a screen of carol's making, taken once the run is decided.
    expect(
      await sql(
        t.carol,
        `INSERT INTO ${s}.approvals (prep, decision, by_role, at, review)
         VALUES (${id}, 'rejected', '${t.roleOf(t.bob)}', '', ${forged})`,
      ),
    ).toMatch(/was already approved, rejected or sent/);
    const shown = await t.run(t.carol, ['runs', 'show', prep, '--json']);
    expect((JSON.parse(shown.stdout) as { reviews: unknown }).reviews).toEqual(kept);
    const by = await queryOne<{ n: number }>(
      t.ana,
      `SELECT count(*)::int AS n FROM approvals WHERE prep = $1 AND review IS NOT NULL`,
      [id],
    );
    expect(by.n).toBe(1);
    sentNothing(t.svc, 0);
  });

  it('what the approver sees is computed from the payouts; none join once recorded', async () => {
    const t = await team();
    const s = t.schema;
    // Figures that are not the payouts' are refused at commit.
    const forged = await sql(
      t.ana,
      'BEGIN',
      `INSERT INTO ${s}.prepared_runs (prep_id, service_id, service, inputs, content_hash,
         payout_count, totals, prepared_by, created_at, expires_at)
       VALUES ('p00000000000003', 'x', 'http://localhost:1', '["small.csv"]', 'h', 1,
         '{"USD":{"count":1,"total":"1.00"}}', '', '', '')`,
      `INSERT INTO ${s}.prepared_payouts SELECT id, g, 'BIG-' || g, '100.00', 'USD', 'm@evil.example', NULL, 'h'
         FROM ${s}.prepared_runs, generate_series(1, 200) g WHERE prep_id = 'p00000000000003'`,
      'COMMIT',
    );
    expect(forged).toMatch(/says 1 payouts and holds 200/);
    // Checked at once instead of at commit, the claim holds for what is there; a payout
    // added by a later statement of the same transaction is refused.
    expect(
      await sql(
        t.ana,
        'BEGIN',
        'SET CONSTRAINTS ALL IMMEDIATE',
        `WITH r AS (INSERT INTO ${s}.prepared_runs (prep_id, service_id, service, inputs,
           content_hash, payout_count, totals, prepared_by, created_at, expires_at)
         VALUES ('p00000000000004', 'x', 'http://localhost:1', '[]', 'h', 1,
           '{"USD":{"count":1,"total":"1.00"}}', '', '', '') RETURNING id)
         INSERT INTO ${s}.prepared_payouts SELECT id, 1, 'C-1', '1.00', 'USD', 'a@ex.com', NULL, 'h' FROM r`,
        `INSERT INTO ${s}.prepared_payouts SELECT id, 2, 'C-2', '20000.00', 'USD', 'm@evil.example', NULL, 'h'
           FROM ${s}.prepared_runs WHERE prep_id = 'p00000000000004'`,
        'COMMIT',
      ),
    ).toMatch(/prepared run p0+4 says 1 payouts and holds 2/);
    // A row whose figures are not its payouts' (its check switched off, as only the owner
    // can): the client computes them again, so the approver and CI refuse it.
    expect(
      await sql(
        t.admin,
        'ALTER TABLE prepared_runs DISABLE TRIGGER prepared_runs_figures',
        `INSERT INTO prepared_runs (prep_id, service_id, service, inputs, content_hash,
           payout_count, totals, prepared_by, created_at, expires_at)
         VALUES ('p00000000000005', 'x', '${t.service}', '[]', 'h', 1,
           '{"USD":{"count":1,"total":"1.00"}}', '', '', '')`,
        'ALTER TABLE prepared_runs ENABLE TRIGGER prepared_runs_figures',
      ),
    ).toBe(undefined);
    const told = await t.run(t.bob, ['approve', 'p00000000000005', '--yes']);
    expect(told.code).toBe(2);
    expect(told.stderr).toMatch(/says 1 payouts \(it holds 0\); totals .*not recorded by payouts/);
    // A payout added to a recorded run is refused; the approver sees the run's own three.
    const { prep, id } = await prepare(t, payoutFile(t, 'late.csv', 3));
    expect(
      await sql(
        t.ana,
        `INSERT INTO ${s}.prepared_payouts VALUES (${id}, 4, 'late.csv-4', '9000.00', 'EUR', 'm@evil.example', NULL, 'h')`,
      ),
    ).toMatch(/payouts join prepared run id \d+ only as it is recorded, never later/);
    const seen = await t.run(t.bob, ['approve', prep, '--yes']);
    expect(seen.code).toBe(0);
    expect(seen.stderr).toMatch(/Payouts: +3\n/);
    expect(seen.stderr).toMatch(/Totals: +EUR 6\.00 \(3 payouts\)/);
    const shown = await t.run(t.bob, ['runs', 'show', prep]);
    // On a pipe the screen's lines go to stderr and its rows to stdout.
    expect(shown.stderr).toMatch(/Totals: +EUR 6\.00 \(3 payouts\)/);
    expect(shown.stdout.trim().split('\n')).toHaveLength(4);
    const ci = await t.run(t.ci, ['send', '--approved', prep, '--yes']);
    expect(ci.code).toBe(0);
    expect([...t.svc.held.keys()].sort()).toEqual(['late.csv-1', 'late.csv-2', 'late.csv-3']);
    sentNothing(t.svc, t.svc.creates);
  });

  it('the history of what was sent cannot be erased or rewritten, so nothing goes twice', async () => {
    const t = await team();
    const s = t.schema;
    const file = payoutFile(t, 'may.csv', 4);
    const { prep } = await prepare(t, file);
    expect((await t.run(t.bob, ['approve', prep, '--yes'])).code).toBe(0);
    expect((await t.run(t.ci, ['send', '--approved', prep, '--yes'])).code).toBe(0);
    expect(t.svc.held.size).toBe(4);
    const creates = t.svc.creates;
    for (const attack of [
      `DELETE FROM ${s}.results`,
      `DELETE FROM ${s}.intents`,
      `DELETE FROM ${s}.payouts`,
      `DELETE FROM ${s}.runs`,
      `TRUNCATE ${s}.results`,
      `TRUNCATE ${s}.intents, ${s}.payouts, ${s}.runs`,
      `UPDATE ${s}.payouts SET reference_id = reference_id || '-x'`,
      `UPDATE ${s}.payouts SET amount = '1.00'`,
      `UPDATE ${s}.runs SET service_id = 'elsewhere'`,
      `UPDATE ${s}.runs SET run_id = 'r0'`,
      `UPDATE ${s}.results SET status = 'failed'`,
      `UPDATE ${s}.results SET transaction_id = 'tx-other'`,
      `UPDATE ${s}.intents SET state = 'free'`,
      `UPDATE ${s}.intents SET run = run + 100`,
    ]) {
      expect(await sql(t.ana, attack), attack).toMatch(/payouts: .*(never|history|changes only)/);
    }
    // The send's own moves still go: its bookkeeping of the run.
    expect(await sql(t.ana, `UPDATE ${s}.runs SET updated_at = 'x', last_req = last_req`)).toBe(
      undefined,
    );
    // Sent again, by the file and from the history: all was sent earlier.
    for (const args of [
      ['send', file, '--yes'],
      ['send', '--approved', prep, '--yes'],
    ]) {
      const again = await t.run(t.ci, args);
      expect(again.code).toBe(0);
    }
    sentNothing(t.svc, creates);
    // Erased all the same by a superuser (triggers off): the approval was used by a run the
    // history no longer holds, so it sends nothing again, by the file or from the history.
    expect(
      await sql(
        t.admin,
        "SET session_replication_role = 'replica'",
        'DELETE FROM results',
        'DELETE FROM intents',
        'DELETE FROM payouts',
        'DELETE FROM runs',
      ),
    ).toBe(undefined);
    for (const args of [
      ['send', file, '--yes'],
      ['send', '--approved', prep, '--yes'],
    ]) {
      const erased = await t.run(t.ci, args);
      expect(erased.code).toBe(2);
      expect(erased.stderr).toMatch(/approval of run p\w+ was used by run \w+ .*sends once/);
    }
    sentNothing(t.svc, creates);
  });

  it('an approval sends once: a second sent event or another run of it is refused', async () => {
    const t = await team();
    const s = t.schema;
    const { prep, id } = await prepare(t, payoutFile(t, 'once.csv', 3));
    expect((await t.run(t.bob, ['approve', prep, '--yes'])).code).toBe(0);
    // Ana uses the approval up with a run that sent nothing: the real one is refused.
    expect(
      await sql(
        t.ana,
        `INSERT INTO ${s}.approvals (prep, decision, by_role, run_id, at) VALUES (${id}, 'sent', 'x', 'r-fake', 'x')`,
      ),
    ).toBe(undefined);
    expect(
      await sql(
        t.ana,
        `INSERT INTO ${s}.approvals (prep, decision, by_role, run_id, at) VALUES (${id}, 'sent', 'x', 'r-2', 'x')`,
      ),
    ).toMatch(/already approved, rejected or sent \(sent by run r-fake\): an approval sends once/);
    const ci = await t.run(t.ci, ['send', '--approved', prep, '--yes']);
    expect(ci.code).toBe(2);
    expect(ci.stderr).toMatch(/approval of run p\w+ was used by run r-fake .*nothing was sent/);
    sentNothing(t.svc, 0);
  });

  it('a changed webhook, batch or service is refused, naming the difference', async () => {
    const t = await team();
    const file = payoutFile(t, 'hook.csv', 2);
    const { prep } = await prepare(t, file);
    const seen = await t.run(t.bob, ['approve', prep, '--yes']);
    expect(seen.stderr).toMatch(/Webhook: +\(account default\)/);
    expect(seen.stderr).toMatch(/Batch: +\(none/);
    for (const [flags, named] of [
      [
        ['--webhook-url', 'https://evil.invalid/steal'],
        /the webhook URL is https:\/\/evil\.invalid\/steal here, \(none\) approved/,
      ],
      [['--batch-reference', 'B-OTHER'], /the batch reference is B-OTHER here, \(none\) approved/],
    ] as const) {
      const r = await t.run(t.ci, ['send', file, '--yes', ...flags]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(named);
      expect(r.stderr).toMatch(/nothing was sent/);
    }
    // send --approved goes as approved: another webhook, batch or service is refused too.
    for (const [flags, env, named] of [
      [['--webhook-url', 'https://evil.invalid/steal'], {}, /the webhook URL is https:\/\/evil/],
      [['--batch-reference', 'B-OTHER'], {}, /the batch reference is B-OTHER here/],
      [
        [],
        { PAYOUTS_BASE_URL: 'https://pay.example.invalid' },
        /the service is https:\/\/pay\.example\.invalid here, http:\/\/localhost:\d+ approved/,
      ],
    ] as const) {
      const r = await t.run(t.ci, ['send', '--approved', prep, '--yes', ...flags], env);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(named);
    }
    sentNothing(t.svc, 0);
    // The approved file with nothing changed goes, to the service spelled another way.
    const port = new URL(t.svc.url).port;
    const spelled = await t.run(t.ci, ['send', file, '--yes'], {
      PAYOUTS_BASE_URL: `http://LOCALHOST:${port}/`,
    });
    expect(spelled.code).toBe(0);
    expect(spelled.stderr).toMatch(/Approval: +approved: p\w+ by /);
  });

  it('an expired, rejected or short approval is refused by the client and the database', async () => {
    const t = await team(['approvals', 'require', '--approvers', '2']);
    const s = t.schema;
    const file = payoutFile(t, 'two.csv', 3);
    const { prep, id } = await prepare(t, file);
    // One approval of two: CI and a forged sent event are refused.
    expect((await t.run(t.bob, ['approve', prep, '--yes'])).stdout).toMatch(/1 of 2 approvals/);
    expect((await t.run(t.bob, ['approve', prep, '--yes'])).stderr).toMatch(/already approved/);
    const short = await t.run(t.ci, ['send', '--approved', prep, '--yes']);
    expect(short.code).toBe(9);
    expect(short.stderr).toMatch(/not approved yet \(1 of 2 approvals\)/);
    expect(
      await sql(
        t.ana,
        `INSERT INTO ${s}.approvals (prep, decision, by_role, run_id, at) VALUES (${id}, 'sent', 'x', 'r', 'x')`,
      ),
    ).toMatch(/is not approved \(1 of 2 approvals/);
    // Past its expiry (the clock moved by the superuser), the second approval makes no use.
    expect(
      await sql(
        t.admin,
        'ALTER TABLE prepared_runs DISABLE TRIGGER prepared_runs_append_only',
        `UPDATE prepared_runs SET expires_at = '2000-01-01T00:00:00.000Z' WHERE id = ${id}`,
        'ALTER TABLE prepared_runs ENABLE TRIGGER prepared_runs_append_only',
      ),
    ).toBe(undefined);
    expect((await t.run(t.carol, ['approve', prep, '--yes'])).stderr).toMatch(/expired at 2000/);
    expect(
      await sql(
        t.carol,
        `INSERT INTO ${s}.approvals (prep, decision, by_role, at) VALUES (${id}, 'approved', 'x', 'x')`,
      ),
    ).toMatch(/expired at 2000/);
    const late = await t.run(t.ci, ['send', '--approved', prep, '--yes']);
    expect(late.code).toBe(11);
    expect(late.stderr).toMatch(/expired at 2000-01-01 00:00 UTC before it was sent/);
    // A rejected run: no approval or sent event after it, and nothing sent.
    const { prep: p2, id: id2 } = await prepare(t, payoutFile(t, 'rej.csv', 2));
    expect((await t.run(t.bob, ['approve', p2, '--reject', '--reason', 'no', '--yes'])).code).toBe(
      0,
    );
    for (const [who, decision] of [
      [t.carol, 'approved'],
      [t.ana, 'sent'],
    ] as const) {
      expect(
        await sql(
          who,
          `INSERT INTO ${s}.approvals (prep, decision, by_role, run_id, at) VALUES (${id2}, '${decision}', 'x', 'r', 'x')`,
        ),
      ).toMatch(/already approved, rejected or sent \(rejected\)/);
    }
    expect((await t.run(t.ci, ['send', '--approved', p2, '--yes'])).code).toBe(10);
    sentNothing(t.svc, 0);
  });

  it('two approvers: sent once both approved, never by the preparer', async () => {
    const t = await team(['approvals', 'require', '--approvers', '2', '--above', 'EUR=5.00']);
    const shown = await t.run(t.bob, ['approvals', 'show']);
    expect(shown.stdout).toMatch(/above EUR 5\.00: 2 approvers/);
    expect(shown.stdout).toMatch(/any other currency: 2 approvers/);
    const { prep } = await prepare(t, payoutFile(t, 'pair.csv', 3));
    expect((await t.run(t.ana, ['approve', prep, '--yes'])).code).toBe(2);
    expect((await t.run(t.bob, ['approve', prep, '--yes'])).code).toBe(0);
    expect((await t.run(t.carol, ['approve', prep, '--yes'])).stdout).toMatch(/^Approved run/);
    const ci = await t.run(t.ci, ['send', '--approved', prep, '--yes']);
    expect(ci.code).toBe(0);
    expect(t.svc.held.size).toBe(3);
    sentNothing(t.svc, t.svc.creates);
  });

  it('the rule has no silent holes: other currencies, other spellings of the URL', async () => {
    const t = await team(['approvals', 'require', '--above', 'EUR=50000']);
    // A USD run under a EUR threshold needs approval.
    const usd = await t.run(t.ci, ['send', payoutFile(t, 'usd.csv', 2, 'USD'), '--yes']);
    expect(usd.code).toBe(9);
    expect(usd.stderr).toMatch(/asks another person's approval/);
    // The rule was set for 127.0.0.1; localhost, a trailing / and upper case are the same.
    const port = new URL(t.svc.url).port;
    const eur = payoutFile(t, 'eur.csv', 2);
    for (const base of [`http://localhost:${port}/`, `HTTP://LocalHost:${port}`]) {
      const alias = await t.run(t.ci, ['send', payoutFile(t, 'usd2.csv', 1, 'USD'), '--yes'], {
        PAYOUTS_BASE_URL: base,
      });
      expect(alias.code, base).toBe(9);
    }
    // EUR below the threshold goes; USD=none says USD never needs approval.
    expect((await t.run(t.ci, ['send', eur, '--yes'])).code).toBe(0);
    expect(
      (
        await t.run(t.owner, [
          'approvals',
          'require',
          '--above',
          'EUR=50000',
          '--above',
          'USD=none',
        ])
      ).code,
    ).toBe(0);
    expect((await t.run(t.ci, ['send', payoutFile(t, 'usd3.csv', 1, 'USD'), '--yes'])).code).toBe(
      0,
    );
    expect(t.svc.held.has('usd.csv-1')).toBe(false);
    expect(t.svc.appliedTwice()).toEqual([]);
  });

  it('a person granted INSERT on approval_rules cannot turn the rule off or loosen it', async () => {
    const t = await team();
    const s = t.schema;
    const ana = new URL(t.ana).username;
    expect(await sql(t.owner, `GRANT INSERT ON ${s}.approval_rules TO ${ana}`)).toBe(undefined);
    const rule = (active: number, above: string | null) =>
      [
        `INSERT INTO ${s}.approval_rules (service_id, service, active, above, expires_days, set_by, at)
         VALUES ('x', $1, $2, $3, 7, 'x', 'x')`,
        [t.service, active, above],
      ] as [string, unknown[]];
    expect(await sql(t.ana, rule(0, null))).toMatch(
      /only the owner of the tables changes the rule/,
    );
    expect(await sql(t.ana, rule(1, '[{"currency":"EUR","amount":"999999999"}]'))).toMatch(
      /only the owner of the tables/,
    );
    // Through payouts too: the database's refusal is exit 2 (issue 48, item 4), not 7.
    const off = await t.run(t.ana, ['approvals', 'off']);
    expect(off.code, off.stderr).toBe(2);
    expect(off.stderr).toMatch(
      /refused that \(recording the approval rule\): only the owner of the tables changes the rule of approvals, not role ana_\w+\. It is a rule the database keeps/,
    );
    const sent = await t.run(t.ci, ['send', payoutFile(t, 'loose.csv', 2), '--yes']);
    expect(sent.code).toBe(9);
    sentNothing(t.svc, 0);
    // The owner still changes it.
    expect((await t.run(t.owner, ['approvals', 'off'])).code).toBe(0);
  });

  it('a history of the step before migrates: every function gets its fixed search_path', async () => {
    const admin = await freshDatabase();
    const schema = schemaOf(admin);
    const step = PG_MIGRATIONS.findIndex((m) => m.includes('payouts_history_kept'));
    expect(step).toBeGreaterThan(0);
    expect(
      await sql(
        admin,
        ...PG_MIGRATIONS.slice(0, step),
        'CREATE TABLE schema_version (version INTEGER NOT NULL)',
        `INSERT INTO schema_version VALUES (${step})`,
      ),
    ).toBe(undefined);
    const unfixed = `SELECT count(*)::int AS n FROM pg_proc WHERE pronamespace = '${schema}'::regnamespace
      AND proconfig IS NULL`;
    expect((await queryOne<{ n: number }>(admin, unfixed)).n).toBeGreaterThan(0);
    const svc = await fixture.start();
    const home = fixture.home();
    const r = await runMain(['approvals', 'show'], {
      env: { ...svc.env(home.env), PAYOUTS_STATE_URL: admin },
    });
    expect(r.code).toBe(0);
    expect((await queryOne<{ n: number }>(admin, unfixed)).n).toBe(0);
    expect(
      (await queryOne<{ version: number }>(admin, 'SELECT version FROM schema_version')).version,
    ).toBe(PG_MIGRATIONS.length);
  });
});
