import { describe, expect, it } from 'vitest';
import type { Check } from '../../../src/domain/checks.js';
import { PgHistory } from '../../../src/state/pg/history.js';
import { query, recycledDatabase, teamRoles } from '../../helpers/pg.js';
import {
  heldPayouts,
  listRunsIn,
  priorRows,
  readRunIn,
  recordChecks,
  runPageIn,
  type StateDb,
} from '../../../src/state/index.js';
import {
  fakeClock,
  openDb,
  openRun,
  rowsOf,
  SERVICE,
  stage,
  tempStateDir,
} from '../../unit/state/helpers.js';

// The service's later word (issue 47): appended to `checks`, and taken by every reader of the
// journal as the payout's status, its run's counts kept as of its latest word.

const read = (db: StateDb) => async (sql: string, params: unknown[]) =>
  db.prepare(sql).all(...params);
const write = (db: StateDb) => async (sql: string, params: unknown[]) => {
  db.prepare(sql).run(...params);
};

/** A run of a success, a pending payout, one in flight and one never sent. */
async function sentRun(db: StateDb) {
  const run = openRun(db, ['S1', 'P1', 'IF', 'Q'], { now: fakeClock(Date.UTC(2026, 0, 1)) });
  await run.recordIntent(1, rowsOf(run, 'S1', 'P1', 'IF'));
  run.recordOutcome(1, [
    { ref: 'S1', status: 'success', transaction_id: 'T-S1' },
    { ref: 'P1', status: 'pending', transaction_id: 'T-P1', message: 'processing' },
  ]);
  await run.close();
  return run;
}

/** A check of `ref` in run `run`. */
function check(db: StateDb, run: number, ref: string, word: Partial<Check>): Check {
  const { row } = db
    .prepare('SELECT row FROM payouts WHERE run = ? AND reference_id = ?')
    .get(run, ref) as { row: number };
  return {
    run,
    row,
    held: true,
    status: 'success',
    transaction_id: null,
    updated_at: '2026-01-02T00:00:00.000Z',
    checked_at: '2026-01-03T00:00:00.000Z',
    checked_by: 'reconcile',
    ...word,
  };
}

describe('the service word on a payout', () => {
  it('is its status in the journal, its counts and a later lookup of it', async () => {
    const db = await openDb(await tempStateDir());
    const run = await sentRun(db);
    expect((await listRunsIn(read(db)))[0]!.counts).toMatchObject({
      success: 1,
      pending: 1,
      in_flight: 1,
    });
    await recordChecks(write(db), 'sqlite', [
      check(db, run.id, 'P1', { status: 'failed' }),
      check(db, run.id, 'IF', { status: 'success', transaction_id: 'T-IF' }),
      check(db, run.id, 'S1', { held: false, status: null }),
      // Never sent: a word about it is no one's.
      check(db, run.id, 'Q', { status: 'success' }),
    ]);
    expect((await listRunsIn(read(db)))[0]!.counts).toEqual({
      success: 2,
      failed: 1,
      canceled: 0,
      pending: 0,
      in_flight: 0,
      sent_earlier: 0,
      not_sent: 1,
      paid_by_retry: 0,
    });
    const shown = (await readRunIn(read(db), run.runId)).payouts.map((p) => [
      p.reference_id,
      p.state,
    ]);
    expect(shown).toEqual([
      ['S1', { state: 'confirmed', req: 1, status: 'success', transaction_id: 'T-S1' }],
      // The pending answer's message was about pending: it is not the failure's.
      ['P1', { state: 'confirmed', req: 1, status: 'failed', transaction_id: 'T-P1' }],
      ['IF', { state: 'confirmed', req: 1, status: 'success', transaction_id: 'T-IF' }],
      ['Q', { state: 'free' }],
    ]);
    const held = await heldPayouts(read(db), 'sqlite', SERVICE, ['S1', 'P1', 'IF', 'Q']);
    expect(held.map((h) => [h.payout.reference_id, h.status, h.missing, h.checked_by])).toEqual([
      ['S1', 'success', true, 'reconcile'],
      ['P1', 'failed', false, 'reconcile'],
      ['IF', 'success', false, 'reconcile'],
    ]);
    // A send of the same references finds them by their latest word.
    const staged = stage(db, ['P1', 'IF']);
    const prior = priorRows(staged, SERVICE, '');
    staged.discard();
    expect(prior.map((p) => [p.payout.reference_id, p.state, p.status])).toEqual([
      ['P1', 'done', 'failed'],
      ['IF', 'done', 'success'],
    ]);
  });

  it('takes the latest of several words, and makes kept counts old', async () => {
    const db = await openDb(await tempStateDir());
    const run = await sentRun(db);
    const keep = write(db);
    const page = { from: 0, size: 20 };
    expect((await runPageIn(read(db), page, keep)).runs[0]!.counts.pending).toBe(1);
    const kept = () => db.prepare('SELECT * FROM run_counts').get() as Record<string, number>;
    expect(kept()).toMatchObject({ pending: 1, checked: 0 });
    await recordChecks(keep, 'sqlite', [check(db, run.id, 'P1', { status: 'pending' })]);
    await recordChecks(keep, 'sqlite', [check(db, run.id, 'P1', { status: 'canceled' })]);
    const counts = (await runPageIn(read(db), page, keep)).runs[0]!.counts;
    expect(counts).toMatchObject({ pending: 0, canceled: 1 });
    expect(kept()).toMatchObject({ pending: 0, canceled: 1, checked: 2 });
  });
});

describe('many checks at once', () => {
  it('are kept in one transaction of state.db, or none of them', async () => {
    const db = await openDb(await tempStateDir());
    const run = await sentRun(db);
    const many = Array.from({ length: 250 }, () => check(db, run.id, 'P1', { status: 'failed' }));
    await recordChecks(write(db), 'sqlite', many);
    const n = () => (db.prepare('SELECT count(*) AS n FROM checks').get() as { n: number }).n;
    expect(n()).toBe(250);
    // A statement that fails takes the others of its transaction with it.
    const broken = [...many.slice(0, 150), { ...many[0]!, checked_at: null as unknown as string }];
    await expect(recordChecks(write(db), 'sqlite', broken)).rejects.toThrow(/NOT NULL/);
    expect(n()).toBe(250);
    expect(db.inTransaction).toBe(false);
  });
});

describe('checks in a shared history', () => {
  it('are only ever added, each naming the role that added it', async () => {
    const url = await recycledDatabase();
    await (await PgHistory.open(url)).close();
    const { ana } = await teamRoles(url);
    // An insider, granted more than a send needs.
    await query(url, `GRANT UPDATE, DELETE, TRUNCATE ON checks TO ${new URL(ana).username}`);
    await query(
      ana,
      `INSERT INTO checks (run, row, held, status, checked_at, checked_by, by_role)
       VALUES (1, 0, 1, 'failed', '2026-01-03T00:00:00.000Z', 'reconcile', 'someone_else')`,
    );
    const [row] = await query<{ by_role: string }>(ana, 'SELECT by_role FROM checks');
    expect(row!.by_role).toBe(new URL(ana).username);
    for (const sql of [
      "UPDATE checks SET status = 'success'",
      'DELETE FROM checks',
      'TRUNCATE checks',
    ]) {
      await expect(query(ana, sql)).rejects.toThrow(
        /only the owner of the tables changes or deletes them/,
      );
    }
    expect(await query(ana, 'SELECT status FROM checks')).toEqual([{ status: 'failed' }]);
  });
});
