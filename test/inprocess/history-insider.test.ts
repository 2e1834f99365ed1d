import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/state/db.js';
import { insiderTeam, sql, type Team } from '../helpers/insider.js';
import { type CreatePolicy, type LedgerService, ledgerPerTest } from '../helpers/ledger-service.js';
import { FakeClock, runMain } from '../helpers/main.js';
import { sendJson } from '../helpers/http-servers.js';
import { parseJsonStdout } from '../helpers/cli.js';
import { queryOne } from '../helpers/pg.js';

// Issue 48, items 2 and 3: the history of what was sent, attacked as an insider would, with
// plain SQL from an ordinary role granted every right on its tables (the tables owned by a
// role that is not a superuser). The service has no duplicate check of its own: a payout
// sent twice is paid twice. None may be.

const fixture = ledgerPerTest();

/**
 * A service that, while `broken.now`, applies every request and answers 500 without results,
 * and cannot be read back: a send stops with its payouts in flight, as a killed one does.
 */
function breakable(): { policy: CreatePolicy; broken: { now: boolean } } {
  const broken = { now: true };
  const down = { success: false, message: ['Internal error'], data: [] };
  return { broken, policy: () => (broken.now ? { status: 500, body: down } : {}) };
}

/** While broken, lookups fail too. */
function lookupsFail(svc: LedgerService, broken: { now: boolean }): void {
  svc.onGet = (_ref, res) => {
    if (!broken.now) return false;
    sendJson(res, 500, { success: false, message: ['Internal error'], data: [] });
    return true;
  };
}

/** A payout file of `refs` in a folder, 1.00 each. */
function payoutFile(dir: string, name: string, refs: string[]): string {
  const file = join(dir, name);
  const rows = refs.map((r) => `${r},1.00,EUR,${r.toLowerCase()}@ex.com`);
  writeFileSync(file, `reference_id,amount,currency,recipient\n${rows.join('\n')}\n`);
  return file;
}

const REFS = ['K-1', 'K-2', 'K-3', 'K-4', 'K-5', 'K-6'];
const SEND = ['--yes', '--chunk-size', '2', '--concurrency', '1'];

/** Every reference paid exactly once, and nothing posted again once paid. */
function paidOnce(svc: LedgerService): void {
  expect([...svc.held.keys()].sort()).toEqual(REFS);
  expect([...svc.held.values()].map((h) => h.times)).toEqual(REFS.map(() => 1));
  expect(svc.appliedTwice()).toEqual([]);
}

/** ci's send stopped with payouts in flight (exit 7); what the history holds of them. */
async function stoppedSend(t: Team, file: string): Promise<number> {
  const r = await t.run(t.ci, ['send', file, ...SEND]);
  expect(r.code, r.stderr).toBe(7);
  return t.svc.held.size;
}

describe('the history of every request, against an insider with plain SQL', () => {
  it('freeing in-flight intents, forging rows or shadowing tables never makes a send pay twice', async () => {
    const { policy, broken } = breakable();
    const t = await insiderTeam(fixture, ['runs'], policy);
    lookupsFail(t.svc, broken);
    const s = t.schema;
    const file = payoutFile(t.home.dir, 'june.csv', REFS);
    const applied = await stoppedSend(t, file);
    expect(applied).toBeGreaterThan(0);
    const open = `SELECT count(*)::int AS n FROM ${s}.journal WHERE state IN ('in_flight', 'unknown')`;
    const before = await openRows(t, open);
    expect(before).toBeGreaterThan(0);
    // ana frees them, as a person granted UPDATE may: the send's own move, made by another.
    expect(await sql(t.ana, `UPDATE ${s}.intents SET state = 'free', note = 'freed by ana'`)).toBe(
      undefined,
    );
    expect(await openRows(t, open)).toBe(0);
    // The record of every request is not hers to change, delete or forge in another's name.
    for (const attack of [
      `DELETE FROM ${s}.intents`,
      `DELETE FROM ${s}.attempts`,
      `UPDATE ${s}.attempts SET session = 'elsewhere'`,
      `UPDATE ${s}.attempts SET at = '2000-01-01T00:00:00.000Z'`,
      `TRUNCATE ${s}.attempts`,
      `TRUNCATE ${s}.withdrawals`,
      `INSERT INTO ${s}.withdrawals SELECT run, row, req, at, session FROM ${s}.attempts`,
    ]) {
      expect(await sql(t.ana, attack), attack).toMatch(
        /payouts: .*(never|only the owner of the tables|name the session that inserts them)/,
      );
    }
    // Shadowed in her own session, the tables and the session's name stand in for nothing.
    expect(
      await sql(
        t.ana,
        `CREATE TEMP TABLE withdrawals AS SELECT * FROM ${s}.attempts`,
        `CREATE FUNCTION pg_temp.payouts_session() RETURNS text LANGUAGE sql AS
           $$ SELECT session FROM ${s}.attempts LIMIT 1 $$`,
        'SET search_path = pg_temp, public',
        `INSERT INTO ${s}.withdrawals SELECT * FROM pg_temp.withdrawals`,
      ),
    ).toMatch(/withdrawals rows name the session that inserts them/);
    // What she may add names her session, and frees nothing: a withdrawal of her own, a
    // result without a status.
    expect(
      await sql(
        t.ana,
        `INSERT INTO ${s}.withdrawals SELECT run, row, req, at, ${s}.payouts_session() FROM ${s}.attempts`,
        `INSERT INTO ${s}.results (run, row, req, status, at)
           SELECT run, row, req, '', 'x' FROM ${s}.attempts ORDER BY row LIMIT 1`,
      ),
    ).toBe(undefined);
    // The service is back. The same file (its run, resumed) and the same payouts in another
    // order (a run of its own) read back what may have been paid: found, not sent again.
    broken.now = false;
    const again = await t.run(t.ci, ['send', file, ...SEND]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stderr).toMatch(
      /Reading back \d+ payouts? whose earlier request has no recorded outcome/,
    );
    paidOnce(t.svc);
    const other = payoutFile(t.home.dir, 'june-again.csv', [...REFS].reverse());
    const third = await t.run(t.ci, ['send', other, ...SEND]);
    expect(third.code, third.stderr).toBe(0);
    paidOnce(t.svc);
  });

  it('on state.db the same rule holds: a freed or deleted intent is read back first', async () => {
    const { policy, broken } = breakable();
    const svc = await fixture.start(policy);
    lookupsFail(svc, broken);
    const home = fixture.home();
    const file = payoutFile(home.dir, 'july.csv', REFS);
    const send = () =>
      runMain(['send', file, ...SEND], { env: svc.env(home.env), clock: new FakeClock() });
    expect((await send()).code).toBe(7);
    expect(svc.held.size).toBeGreaterThan(0);
    // A person with the file: one intent freed, the others deleted.
    const db = openDatabase(join(home.env.XDG_STATE_HOME!, 'payouts', 'state.db'));
    try {
      db.exec(`UPDATE intents SET state = 'free' WHERE row = 0; DELETE FROM intents WHERE row > 0`);
    } finally {
      db.close();
    }
    broken.now = false;
    const again = await send();
    expect(again.code, again.stderr).toBe(0);
    paidOnce(svc);
  });

  it('a forged result is shown with the role that forged it', async () => {
    const t = await insiderTeam(fixture, ['runs']);
    const s = t.schema;
    const file = payoutFile(t.home.dir, 'aug.csv', ['F-1', 'F-2']);
    expect((await t.run(t.ci, ['send', file, '--yes'])).code).toBe(0);
    // ana records a run of her own, in ci's name, holding a third payout she says was paid.
    expect(
      await sql(
        t.ana,
        `INSERT INTO ${s}.runs (run_id, service_id, service, client_id, inputs, input_hash,
           payout_count, created_at, updated_at, host, os_user, db_user)
         SELECT 'f0f0f0f0f0f0f0f0', service_id, service, client_id, '["aug.csv"]', 'x', 1,
           created_at, updated_at, 'ci-runner', 'ci', 'ci' FROM ${s}.runs LIMIT 1`,
        `INSERT INTO ${s}.payouts (run, row, reference_id, amount, currency, recipient, hash_version)
         SELECT id, 0, 'F-3', '1.00', 'EUR', 'f-3@ex.com', 2 FROM ${s}.runs WHERE run_id = 'f0f0f0f0f0f0f0f0'`,
        `INSERT INTO ${s}.results (run, row, req, status, transaction_id, at, by_role)
         SELECT id, 0, 1, 'success', 'tx-forged', 'x', 'ci' FROM ${s}.runs WHERE run_id = 'f0f0f0f0f0f0f0f0'`,
        // And a success for ci's own second payout, in ci's name.
        `UPDATE ${s}.results SET by_role = 'ci' WHERE transaction_id <> 'tx-forged'`,
      ),
    ).toBe(undefined);
    const ana = t.roleOf(t.ana);
    const ci = t.roleOf(t.ci);
    const listed = parseJsonStdout<{
      runs: Array<{ run_id: string; sent_by: { os_user: string; db_user: string } }>;
    }>(await t.run(t.bob, ['runs', '--json']));
    const forged = listed.runs.find((r) => r.run_id === 'f0f0f0f0f0f0f0f0')!;
    expect(forged.sent_by).toEqual({ os_user: 'ci', host: 'ci-runner', db_user: ana });
    expect(listed.runs.find((r) => r.run_id !== forged.run_id)!.sent_by.db_user).toBe(ci);
    const text = await t.run(t.bob, ['runs']);
    expect(text.stdout).toMatch(new RegExp(`ci@ci-runner \\(role ${ana}\\)`));
    const shown = parseJsonStdout<{
      payouts: Array<{ reference_id: string; recorded_by: string }>;
    }>(await t.run(t.bob, ['runs', 'show', 'f0f0f0f0f0f0f0f0', '--json']));
    expect(shown.payouts).toEqual([
      expect.objectContaining({ reference_id: 'F-3', recorded_by: ana }),
    ]);
    // Her results in ci's run name her too (she changed who recorded them).
    const ciRun = listed.runs.find((r) => r.run_id !== forged.run_id)!.run_id;
    const own = await t.run(t.bob, ['runs', 'show', ciRun]);
    expect(own.stdout).toMatch(new RegExp(`F-1\\s.*success \\(recorded by role ${ana}\\)`));
  });
});

/** A count as the tables' owner reads it. */
async function openRows(t: Team, query: string): Promise<number> {
  return (await queryOne<{ n: number }>(t.owner, query)).n;
}
