import { describe, expect, it } from 'vitest';
import { openScratchDb } from '../../../src/state/db.js';
import { PgHistory } from '../../../src/state/pg/history.js';
import { oneStatement } from '../../../src/state/pg/statements.js';
import { recordStatements } from '../../../src/state/journal-sql.js';
import type { JournalRecord } from '../../../src/domain/records.js';
import { applierOf } from '../../../src/state/writer.js';
import { query, recycledDatabase } from '../../helpers/pg.js';

// Each journal statement is written once: the same commits leave the same tables in state.db
// and in a shared history, and a commit of intents and outcomes is one round trip on the latter.

const REFS = ['A', 'B', 'C', 'D', 'E'];

/**
 * The commits of a run: each record kind, the later ones over the earlier ones' rows; its
 * attempts and withdrawals by `session` (a shared history checks it is the one writing).
 */
const commitsOf = (session: string): JournalRecord[][] => [
  [
    { kind: 'intent', req: 1, at: 't1', rows: [0, 1, 2], session },
    { kind: 'touch', lastReq: 1, at: 't1' },
  ],
  [
    { kind: 'done', req: 1, at: 't2', list: [['A', 'success', 'T-A', '0.5', null]] },
    { kind: 'seen', req: 1, at: 't2', refs: ['B', 'D'] },
    { kind: 'not-applied', req: 1, at: 't2', refs: ['C'], why: 'HTTP 429', session },
    { kind: 'unknown', at: 't2', refs: ['E'], why: 'cut' },
    { kind: 'touch', lastReq: 1, at: 't2' },
  ],
  [
    { kind: 'intent', req: 2, at: 't3', rows: [2], session },
    { kind: 'results', values: [99, 1, 1, 'failed', null, null, 'no', 't3'] },
    { kind: 'reports', values: [99, 0, 'success', 'T-A', null, null, 1] },
    { kind: 'touch', lastReq: 2, at: 't3' },
  ],
];

/** The commits as a session that is not a shared history's writes them. */
const COMMITS = commitsOf('s');

const TABLES = [
  'SELECT row, req, at, session FROM attempts ORDER BY row, req',
  'SELECT row, req, at, session FROM withdrawals ORDER BY row, req',
  'SELECT row, state, req, sent_at, note, updated_at FROM intents ORDER BY row',
  'SELECT row, req, status, transaction_id, charges, message, at FROM results ORDER BY row',
  'SELECT row, status, transaction_id, charges, message, sent_earlier FROM reports ORDER BY row',
  'SELECT last_req, updated_at FROM runs',
];

const PAYOUT = `INSERT INTO payouts (run, row, reference_id, amount, hash_version)
  VALUES (?, ?, ?, '1.00', 2)`;

describe('the journal statements, written once', () => {
  it('leave the same journal in state.db and in a shared history', async () => {
    const url = await recycledDatabase();
    const history = await PgHistory.open(url);
    const commits = commitsOf(history.session);
    const db = openScratchDb();
    db.prepare(
      `INSERT INTO runs (id, inputs, created_at, updated_at) VALUES (7, '[]', 't', 't')`,
    ).run();
    for (const [row, ref] of REFS.entries()) db.prepare(PAYOUT).run(7, row, ref);
    const apply = applierOf(db);
    for (const records of commits) db.transaction(() => apply(7, records))();
    const local = TABLES.map((sql) => db.prepare(sql).all());
    try {
      await history.write('setting up', async (c) => {
        await c.query(
          `INSERT INTO runs (id, inputs, created_at, updated_at) VALUES (3, '[]', 't', 't')`,
        );
        for (const [row, ref] of REFS.entries()) {
          await c.query(
            'INSERT INTO payouts (run, row, reference_id, amount, hash_version) VALUES ($1, $2, $3, $4, 2)',
            [3, row, ref, '1.00'],
          );
        }
      });
      const mirror = history.mirrorOf(3);
      for (const records of commits) await mirror.apply(records);
    } finally {
      await history.close();
    }
    const shared = await Promise.all(TABLES.map((sql) => query(url, sql)));
    // Every payout's intent, as each kind of record left it.
    expect(local[2]!.map((r) => (r as { state: string }).state)).toEqual([
      'in_flight',
      'in_flight',
      'in_flight',
      'in_flight',
      'unknown',
    ]);
    expect(shared).toEqual(local);
    // Each request's payouts, and the one request its own session withdrew.
    expect(local[0]!.map((r) => (r as { row: number }).row)).toEqual([0, 1, 2, 2]);
    expect(local[1]).toEqual([{ row: 2, req: 1, at: 't2', session: history.session }]);
  });

  it('make a commit of intents, results, reports and the run one statement on PostgreSQL', () => {
    const plain = COMMITS[2]!;
    const statements = plain.flatMap((r) => recordStatements(3, r, 'pg'));
    const one = oneStatement(plain, statements);
    expect(one?.text).toMatch(
      /^WITH w0 AS \(INSERT INTO intents .*\) UPDATE runs SET last_req = greatest\(last_req, \$\d+\)/s,
    );
    expect(one?.values).toEqual(statements.flatMap((s) => s.params));
    // A record that reads what precedes it, or a row named twice, takes a transaction.
    const reading = COMMITS[1]!;
    expect(
      oneStatement(
        reading,
        reading.flatMap((r) => recordStatements(3, r, 'pg')),
      ),
    ).toBeUndefined();
    const touched: JournalRecord[] = [COMMITS[0]![1]!, ...COMMITS[0]!];
    expect(
      oneStatement(
        touched,
        touched.flatMap((r) => recordStatements(3, r, 'pg')),
      ),
    ).toBeUndefined();
    const twice: JournalRecord[] = [COMMITS[0]![0]!, COMMITS[0]![0]!, COMMITS[0]![1]!];
    expect(
      oneStatement(
        twice,
        twice.flatMap((r) => recordStatements(3, r, 'pg')),
      ),
    ).toBeUndefined();
  });
});
