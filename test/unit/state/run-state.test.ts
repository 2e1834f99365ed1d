import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InputError } from '../../../src/errors.js';
import { openDatabase, STATE_DB, type StateDb } from '../../../src/state/index.js';
import { fakeClock, openDb, openRun, priorOf, rowsOf, states, tempStateDir } from './helpers.js';

/** A second connection to the same database file, as another process (or a crash) would see it. */
function otherConnection(stateDir: string): StateDb {
  return openDatabase(join(stateDir, STATE_DB), { readonly: true });
}

/** The state columns of one payout, through another connection. */
function seen(stateDir: string, ref: string) {
  const db = otherConnection(stateDir);
  try {
    return db
      .prepare('SELECT state, req, sent_at, status FROM journal WHERE reference_id = ?')
      .get(ref);
  } finally {
    db.close();
  }
}

describe('RunState: written ahead', () => {
  it('commits an intent, with its request and send time, before the promise resolves', async () => {
    const stateDir = await tempStateDir();
    const db = await openDb(stateDir);
    const state = openRun(db, ['A', 'B'], { now: fakeClock(Date.UTC(2026, 0, 2)) });
    const durable = state.recordIntent(1, rowsOf(state, 'A'));
    // Nothing is committed yet within this turn: the commit is shared by every intent of it.
    expect(seen(stateDir, 'A')).toMatchObject({ state: 'queued' });
    await durable;
    expect(seen(stateDir, 'A')).toMatchObject({
      state: 'in_flight',
      req: 1,
      sent_at: expect.stringMatching(/^2026-01-02T00:00:\d\d\.000Z$/),
    });
    // An outcome is buffered: committed with the next intent, flush or close.
    state.recordOutcome(1, [{ ref: 'A', status: 'success', transaction_id: 'T1', charges: 0.5 }]);
    expect(seen(stateDir, 'A')).toMatchObject({ state: 'in_flight' });
    await state.close();
    expect(seen(stateDir, 'A')).toMatchObject({ state: 'done', req: 1, status: 'success' });
    expect(() => state.recordOutcome(1, [{ ref: 'B', status: 'success' }])).toThrow(/closed/);
  });

  it('shares one commit between intents recorded in the same turn', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B', 'C', 'D']);
    const before = state.commitCount;
    await Promise.all(
      ['A', 'B', 'C', 'D'].map((ref, i) => state.recordIntent(i + 1, rowsOf(state, ref))),
    );
    expect(state.commitCount).toBe(before + 1);
    expect(state.lastRequestId).toBe(4);
    await expect(state.recordIntent(4, rowsOf(state, 'A'))).rejects.toThrow(/already used/);
  });

  it('turns a failed commit into a failure of every later durable call', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B']);
    db.close();
    await expect(state.recordIntent(1, [0])).rejects.toThrow();
    await expect(state.recordIntent(2, [1])).rejects.toThrow();
    await expect(state.flush()).rejects.toThrow();
  });
  it('writes a stated result as "done" and as the row\'s outcome, each kept apart when replaced', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B', 'C']);
    await state.recordIntent(1, rowsOf(state, 'A', 'B', 'C'));
    const base = { amount: '10.00', currency: 'EUR' };
    state.recordResults(1, [
      {
        row: 0,
        outcome: {
          ...base,
          reference_id: 'A',
          status: 'success',
          transaction_id: 'T1',
          charges: 0.5,
        },
      },
      { row: 1, outcome: { ...base, reference_id: 'B', status: 'failed', message: 'closed' } },
    ]);
    // A later outcome of the row replaces the reported one; the journal keeps what was stated.
    state.outcomes.set(1, { ...base, reference_id: 'B', status: 'unknown', message: 'later' });
    expect(state.outcomes.get(0)).toMatchObject({ status: 'success', transaction_id: 'T1' });
    await state.close();
    const row = (ref: string) =>
      db
        .prepare(
          `SELECT j.state, j.req, j.status, j.transaction_id, j.charges, j.message, j.note,
             o.status AS report_status, o.message AS report_message
           FROM journal j LEFT JOIN reports o ON o.run = j.run AND o.row = j.row
           WHERE j.run = ? AND j.reference_id = ?`,
        )
        .get(state.id, ref);
    expect(row('A')).toEqual({
      state: 'done',
      req: 1,
      status: 'success',
      transaction_id: 'T1',
      charges: '0.5',
      message: null,
      note: null,
      // The stated result is the outcome: no report of its own.
      report_status: null,
      report_message: null,
    });
    expect(row('B')).toMatchObject({
      state: 'done',
      status: 'failed',
      message: 'closed',
      report_status: 'unknown',
      report_message: 'later',
    });
    expect(row('C')).toMatchObject({ state: 'in_flight', status: null, report_status: null });
    expect([...state.outcomes.values()].map((o) => o.status)).toEqual(['success', 'unknown']);
  });
  it('lists every outcome from memory when the database cannot take them (a full disk)', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B', 'C']);
    const base = { amount: '1.00', currency: 'EUR' };
    state.outcomes.set(0, { ...base, reference_id: 'A', status: 'success', charges: 0.5 });
    state.outcomes.set(1, { ...base, reference_id: 'B', status: 'not_sent' });
    // Every write now fails, as on a full disk; reads still work.
    db.exec('PRAGMA query_only = ON');
    expect(String(state.outcomes.save())).toMatch(/readonly|read-only|cannot write/i);
    expect([...state.outcomes.values()].map((o) => [o.reference_id, o.status])).toEqual([
      ['A', 'success'],
      ['B', 'not_sent'],
    ]);
    const report = [...state.outcomes.reportRows()];
    expect(report.map((r) => r.outcome?.status)).toEqual(['success', 'not_sent', undefined]);
    db.exec('PRAGMA query_only = OFF');
  });
  it('keeps every outcome when the commit itself fails (a full disk met at COMMIT)', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B']);
    const base = { amount: '1.00', currency: 'EUR' };
    state.outcomes.set(0, { ...base, reference_id: 'A', status: 'success' }, { req: 1, at: 'now' });
    state.outcomes.set(1, { ...base, reference_id: 'B', status: 'not_sent' });
    // In WAL mode pages reach the disk at COMMIT: the writes are made, then rolled back.
    const transaction = db.transaction.bind(db);
    db.transaction = ((fn: () => void) =>
      transaction(() => {
        fn();
        throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
      })) as typeof db.transaction;
    expect(String(state.outcomes.save())).toMatch(/disk is full/);
    expect([...state.outcomes.values()].map((o) => [o.reference_id, o.status])).toEqual([
      ['A', 'success'],
      ['B', 'not_sent'],
    ]);
    expect(state.outcomes.countsOf()).toMatchObject({ success: 1, notSent: 1 });
  });
  it('puts every payout of an intent in flight, however many it names', async () => {
    const db = await openDb(await tempStateDir());
    const refs = Array.from({ length: 251 }, (_, i) => `R${i}`);
    const state = openRun(db, refs);
    await state.recordIntent(1, rowsOf(state, ...refs.slice(0, 250)));
    const all = states(db, state);
    expect(Object.values(all).filter((s) => s === 'in_flight')).toHaveLength(250);
    expect(all.R250).toBe('queued');
  });
});

describe('RunState: states', () => {
  it('follows intent -> outcome, intent -> not applied, and unknown', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B', 'C', 'D', 'E']);
    await state.recordIntent(1, rowsOf(state, 'A', 'B', 'C'));
    state.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    state.recordNotApplied(1, ['B'], 'HTTP 429');
    state.recordUnknown(['C'], 'timed out');
    // Never named by an intent: unknown all the same (it may have been sent).
    state.recordUnknown(['E'], 'lost');
    await state.flush();
    expect(states(db, state)).toEqual({
      A: 'done',
      B: 'free',
      C: 'unknown',
      D: 'queued',
      E: 'unknown',
    });
    const e = db.prepare("SELECT req, sent_at, note FROM journal WHERE reference_id = 'E'").get();
    expect(e).toMatchObject({ req: -1, sent_at: expect.any(String), note: 'lost' });
  });

  it('frees only with the not-applied of the request carrying it, or of a read-back', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A', 'B']);
    await state.recordIntent(1, rowsOf(state, 'A'));
    await state.recordIntent(2, rowsOf(state, 'A'));
    state.recordNotApplied(1, ['A'], 'old request');
    await state.recordIntent(3, rowsOf(state, 'B'));
    expect(states(db, state)).toMatchObject({ A: 'in_flight', B: 'in_flight' });
    state.recordNotApplied(-1, ['B'], 'not found when read back');
    await state.flush();
    expect(states(db, state)).toMatchObject({ B: 'free' });
  });

  it('confirms by read-back (req -1) and never downgrades a confirmed payout', async () => {
    const db = await openDb(await tempStateDir());
    const state = openRun(db, ['A']);
    await state.recordIntent(1, rowsOf(state, 'A'));
    state.recordOutcome(-1, [{ ref: 'A', status: 'pending' }]);
    state.recordNotApplied(-1, ['A'], 'late');
    state.recordUnknown(['A'], 'late');
    await state.flush();
    expect(states(db, state)).toEqual({ A: 'done' });
    expect(state.lastRequestId).toBe(1);
  });
});

describe('RunState: resume and other runs', () => {
  it('resumes a run sent before from the same files, with its states and request ids', async () => {
    const db = await openDb(await tempStateDir());
    const first = openRun(db, ['A', 'B', 'C']);
    await first.recordIntent(7, rowsOf(first, 'A'));
    first.recordOutcome(7, [{ ref: 'A', status: 'success', transaction_id: 'T-A' }]);
    await first.recordIntent(8, rowsOf(first, 'B'));
    await first.close();
    const prior = priorOf(db, ['A', 'B', 'C']);
    expect([...prior.settled]).toEqual([
      [
        0,
        {
          outcome: { status: 'success', transaction_id: 'T-A' },
          currency: 'EUR',
          amount: '1.00',
          runId: first.runId,
          at: expect.stringMatching(/^2026-01-02T/),
        },
      ],
    ]);
    expect([...prior.inFlight.keys()]).toEqual(['B']);
    expect(prior.inFlight.get('B')?.payout).toMatchObject({ reference_id: 'B', amount: '1.00' });
    const again = openRun(db, ['A', 'B', 'C']);
    expect(again.resumed).toBe(true);
    expect(again.runId).toBe(first.runId);
    expect(again.lastRequestId).toBe(8);
    expect(db.prepare('SELECT count(*) AS n FROM runs').get()).toEqual({ n: 1 });
  });

  it('keeps an earlier run of the same files whose rows differ under its own id', async () => {
    const db = await openDb(await tempStateDir());
    const first = openRun(db, ['A', 'B']);
    await first.recordIntent(1, rowsOf(first, 'A'));
    first.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    await first.close();
    // Same bytes read with other options: other payouts.
    expect([...priorOf(db, ['A', 'C']).settled.keys()]).toEqual([0]);
    const again = openRun(db, ['A', 'C']);
    expect(again.resumed).toBe(false);
    const ids = db.prepare('SELECT run_id FROM runs ORDER BY id').all();
    expect(ids).toEqual([{ run_id: `${first.runId}-${first.id}` }, { run_id: again.runId }]);
  });

  it('sees what other runs of the same service sent, and only of that service', async () => {
    const db = await openDb(await tempStateDir());
    const other = openRun(db, ['A', 'B', 'X'], { inputHash: 'other' });
    await other.recordIntent(1, rowsOf(other, 'A', 'B', 'X'));
    other.recordOutcome(1, [{ ref: 'A', status: 'failed', message: 'closed account' }]);
    await other.close();
    const elsewhere = openRun(db, ['C'], { inputHash: 'elsewhere', serviceKey: 'sandbox' });
    await elsewhere.recordIntent(1, rowsOf(elsewhere, 'C'));
    await elsewhere.close();
    const prior = priorOf(db, ['C', 'B', 'A', 'D']);
    expect([...prior.settled]).toEqual([
      [2, expect.objectContaining({ outcome: { status: 'failed', message: 'closed account' } })],
    ]);
    expect([...prior.inFlight.keys()]).toEqual(['B']);
  });

  it('refuses a reference another run of the service sent as a different payout, naming it', async () => {
    const db = await openDb(await tempStateDir());
    const other = openRun(db, ['A', 'B'], { inputHash: 'other', amount: '2.00' });
    await other.recordIntent(1, rowsOf(other, 'A'));
    await other.close();
    const err = (() => {
      try {
        return priorOf(db, ['A', 'B']);
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(InputError);
    const problems = (err as InputError).problems;
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ file: `run ${other.runId}`, value: 'A' });
  });
});
