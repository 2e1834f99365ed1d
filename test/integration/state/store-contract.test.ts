import { afterEach, describe, expect, it } from 'vitest';
import {
  openScratchDb,
  openStateDb,
  priorRows,
  RunState,
  runIdFor,
  stagedPages,
} from '../../../src/state/index.js';
import { PgHistory } from '../../../src/state/pg/history.js';
import { adoptLocally } from '../../../src/state/adopt.js';
import { localHistory } from '../../../src/state/local-history.js';
import { query, recycledDatabase, STORES, type Store } from '../../helpers/pg.js';
import {
  fakeClock,
  type Prior,
  priorFrom,
  SERVICE,
  stage,
  tempStateDir,
} from '../../unit/state/helpers.js';

// One contract, two stores: what a run commits, what a later run finds, and how a run is
// resumed read the same from state.db and from a shared history on PostgreSQL.

/** A journal row as both stores show it. */
interface JournalRow {
  reference_id: string;
  state: string;
  req: number | null;
  status: string | null;
  note: string | null;
}

/** A store under test: runs staged and opened as a send does, and its truth read back. */
interface Subject {
  open(refs: string[], opts?: { amount?: string; inputHash?: string }): Promise<RunState>;
  prior(refs: string[], amount?: string): Promise<Prior>;
  journal(): Promise<JournalRow[]>;
  runIds(): Promise<string[]>;
  /** Runs statements as a person with SQL would, in a session of their own. */
  sql(text: string): Promise<void>;
  /** That session's name for itself, as SQL (on PostgreSQL, the server's: payouts_session()). */
  mine: string;
  close(): Promise<void>;
}

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

/** The header of a run of `refs`. */
function header(refs: string[], inputHash: string) {
  return {
    service: SERVICE,
    client_id: 'client-1',
    inputs: ['payouts.csv'],
    input_hash: inputHash,
    payout_count: refs.length,
  };
}

const JOURNAL = `SELECT p.reference_id, j.state, j.req, j.status, j.note
  FROM journal j JOIN payouts p ON p.run = j.run AND p.row = j.row
  JOIN runs r ON r.id = j.run WHERE r.run_id IS NOT NULL ORDER BY j.run, j.row`;

/** state.db in a state folder. */
async function sqlite(): Promise<Subject> {
  const db = await openStateDb(await tempStateDir());
  closers.push(async () => {
    db.close();
  });
  return {
    async open(refs, opts = {}) {
      const intake = stage(db, refs, opts.amount);
      const inputHash = opts.inputHash ?? 'a'.repeat(64);
      const runId = runIdFor(SERVICE, inputHash);
      const { run } = await localHistory('').adopt(intake, {
        runId,
        serviceKey: SERVICE,
        header: header(refs, inputHash),
        now: new Date().toISOString(),
      });
      return RunState.open({ db, run, runId, chargeMinor: () => undefined, now: fakeClock() });
    },
    async prior(refs, amount) {
      const rows = stage(db, refs, amount);
      try {
        return priorFrom(priorRows(rows, SERVICE, ''));
      } finally {
        rows.discard();
      }
    },
    journal: async () => db.prepare(JOURNAL).all() as JournalRow[],
    runIds: async () =>
      (db.prepare('SELECT run_id FROM runs ORDER BY id').all() as Array<{ run_id: string }>).map(
        (r) => r.run_id,
      ),
    sql: async (text) => {
      db.exec(text);
    },
    mine: "'a person'",
    close: async () => {},
  };
}

/** A shared history, with each run staged in a private database as a send stages it. */
async function postgres(): Promise<Subject> {
  const url = await recycledDatabase();
  const history = await PgHistory.open(url);
  closers.push(() => history.close());
  return {
    async open(refs, opts = {}) {
      const db = openScratchDb();
      closers.push(async () => {
        db.close();
      });
      const intake = stage(db, refs, opts.amount);
      const inputHash = opts.inputHash ?? 'a'.repeat(64);
      const runId = runIdFor(SERVICE, inputHash);
      const adopting = {
        runId,
        serviceKey: SERVICE,
        header: header(refs, inputHash),
        now: new Date().toISOString(),
      };
      const run = await history.adopt({ ...adopting, sender: history.senderOf }, () =>
        stagedPages(intake),
      );
      return RunState.open({
        db,
        run: adoptLocally(db, intake, { ...adopting, sender: undefined }),
        runId,
        chargeMinor: () => undefined,
        now: fakeClock(),
        mirror: history.mirrorOf(run.id),
        lastReqFloor: run.lastReq,
        session: history.session,
      });
    },
    async prior(refs, amount) {
      const db = openScratchDb();
      try {
        return priorFrom(await history.prior(SERVICE, stagedPages(stage(db, refs, amount))));
      } finally {
        db.close();
      }
    },
    journal: () => query<JournalRow>(url, JOURNAL),
    runIds: async () =>
      (await query<{ run_id: string }>(url, 'SELECT run_id FROM runs ORDER BY id')).map(
        (r) => r.run_id,
      ),
    sql: async (text) => {
      await query(url, text);
    },
    mine: 'payouts_session()',
    close: () => history.close(),
  };
}

const SUBJECTS: Record<Store, () => Promise<Subject>> = { sqlite, postgres };

describe.each(STORES)('the state store contract (%s)', (store) => {
  it('an intent is in the store once recordIntent resolves; outcomes once flushed', async () => {
    const s = await SUBJECTS[store]();
    const state = await s.open(['A', 'B', 'C', 'D']);
    await state.recordIntent(1, [0, 1, 2, 3]);
    expect((await s.journal()).map((r) => r.state)).toEqual([
      'in_flight',
      'in_flight',
      'in_flight',
      'in_flight',
    ]);
    state.recordResults(1, [
      {
        row: 0,
        outcome: { reference_id: 'A', amount: '1.00', currency: 'EUR', status: 'success' },
      },
    ]);
    state.recordOutcome(1, [{ ref: 'B', status: 'failed', message: 'no such account' }]);
    state.recordNotApplied(1, ['C'], 'refused: 422');
    state.recordUnknown(['D'], 'timed out');
    await state.close();
    expect(await s.journal()).toEqual([
      { reference_id: 'A', state: 'done', req: 1, status: 'success', note: null },
      { reference_id: 'B', state: 'done', req: 1, status: 'failed', note: null },
      { reference_id: 'C', state: 'free', req: 1, status: null, note: 'refused: 422' },
      { reference_id: 'D', state: 'unknown', req: 1, status: null, note: 'timed out' },
    ]);
  });

  it('a later run finds what an earlier one sent: settled, in flight, or another payout', async () => {
    const s = await SUBJECTS[store]();
    const state = await s.open(['A', 'B', 'C']);
    await state.recordIntent(1, [0, 1]);
    state.recordOutcome(1, [{ ref: 'A', status: 'success' }]);
    await state.close();
    const prior = await s.prior(['C', 'B', 'A', 'N']);
    expect([...prior.settled.keys()]).toEqual([2]);
    expect(prior.settled.get(2)?.outcome.status).toBe('success');
    expect([...prior.inFlight.keys()]).toEqual(['B']);
    await expect(s.prior(['A'], '2.00')).rejects.toThrow(/1 problem in the input/);
  });

  // Issue 48, item 2: the rule of an attempt (journal-sql.ts, lookupSql), on both stores.
  it('a payout ever in a request is read back whatever its intent says, unless its own session withdrew it', async () => {
    const s = await SUBJECTS[store]();
    const refs = ['A', 'B', 'C', 'D', 'E', 'F'];
    const state = await s.open(refs);
    await state.recordIntent(1, [0, 1, 2, 3, 4]);
    // E's request provably did not apply: the session that sent it withdraws it.
    state.recordNotApplied(1, ['E'], 'HTTP 429');
    await state.close();
    expect((await s.prior(refs)).inFlight.size).toBe(4);
    // A person frees A to D, forges a result without a status for C, and a withdrawal of D
    // (by their own session: PostgreSQL refuses any other name).
    await s.sql(`UPDATE intents SET state = 'free', note = 'freed by a person'`);
    await s.sql(
      `INSERT INTO results (run, row, req, status, at) SELECT run, row, 1, '', 'x' FROM payouts WHERE reference_id = 'C'`,
    );
    await s.sql(
      `INSERT INTO withdrawals (run, row, req, at, session)
       SELECT run, row, 1, 'x', ${s.mine} FROM payouts WHERE reference_id = 'D'`,
    );
    const prior = await s.prior(refs);
    expect([...prior.inFlight.keys()].sort()).toEqual(['A', 'B', 'C', 'D']);
    expect(prior.settled.size).toBe(0);
    // Read back after the quiet time of its request, whatever the intent's time says now.
    await s.sql(`UPDATE intents SET sent_at = '2000-01-01T00:00:00.000Z' WHERE row = 0`);
    const at = (await s.prior(refs)).inFlight.get('A')!.sentAt;
    expect(at).toBeGreaterThan(Date.parse('2020-01-01T00:00:00.000Z'));
  });

  it('the same files again resume the run; other payouts under its id keep the old run apart', async () => {
    const s = await SUBJECTS[store]();
    const first = await s.open(['A', 'B']);
    await first.recordIntent(1, [0]);
    await first.close();
    const again = await s.open(['A', 'B']);
    expect(again.lastRequestId).toBe(1);
    await again.close();
    expect(await s.runIds()).toEqual([runIdFor(SERVICE, 'a'.repeat(64))]);
    const other = await s.open(['A', 'C']);
    await other.close();
    const ids = await s.runIds();
    expect(ids).toHaveLength(2);
    expect(ids).toContain(runIdFor(SERVICE, 'a'.repeat(64)));
    expect(ids.some((id) => id.startsWith(`${runIdFor(SERVICE, 'a'.repeat(64))}-`))).toBe(true);
  });
});

describe('a shared history copies a run in while it sends', () => {
  it('an intent waits until its payouts are copied; every payout is there once closed', async () => {
    const url = await recycledDatabase();
    const history = await PgHistory.open(url);
    closers.push(() => history.close());
    const db = openScratchDb();
    closers.push(async () => {
      db.close();
    });
    const refs = Array.from({ length: 2500 }, (_, i) => `C-${i}`);
    const intake = stage(db, refs);
    const run = await history.adopt(
      {
        header: header(refs, 'c'.repeat(64)),
        runId: 'copy-run',
        serviceKey: SERVICE,
        now: new Date().toISOString(),
        sender: history.senderOf,
      },
      () => stagedPages(intake, 1000),
    );
    const mirror = history.mirrorOf(run.id, run.copied);
    await mirror.apply([
      {
        kind: 'intent',
        req: 1,
        at: new Date().toISOString(),
        rows: [2400, 2401],
        session: history.session,
      },
      { kind: 'touch', lastReq: 1, at: new Date().toISOString() },
    ]);
    const orphans = await query<{ n: number }>(
      url,
      `SELECT count(*)::int AS n FROM intents i
       LEFT JOIN payouts p ON p.run = i.run AND p.row = i.row WHERE p.row IS NULL`,
    );
    expect(orphans[0]!.n).toBe(0);
    await history.close();
    const all = await query<{ n: number }>(url, 'SELECT count(*)::int AS n FROM payouts');
    expect(all[0]!.n).toBe(2500);
  });
});
