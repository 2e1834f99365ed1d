import { describe, expect, it } from 'vitest';
import { showRunList } from '../../../src/core/runs/runs.js';
import { serviceIdOf } from '../../../src/state/hash.js';
import {
  isNear,
  listRunsIn,
  recordChecks,
  nearReferences,
  type RowReader,
  runIdFor,
  runPageIn,
  type StateDb,
  stateDbKeeper,
} from '../../../src/state/index.js';
import { PgHistory } from '../../../src/state/pg/history.js';
import { query, recycledDatabase } from '../../helpers/pg.js';
import { memoryOutput } from '../../unit/status/output-helper.js';
import {
  fakeClock,
  openDb,
  openRun,
  rowsOf,
  SERVICE,
  tempStateDir,
} from '../../unit/state/helpers.js';

// Issue 51 item 4: a history of millions costs nothing to daily commands. What a test can
// assert without a clock: the near-reference search probes the reference index, never reads
// the whole history, and suggests only one edit or a case change; a run's counts are counted
// once per commit.

describe('near references', () => {
  it('are one edit or a case change away, never both', () => {
    expect(isNear('m-0500000', 'M-0500000')).toBe(true);
    expect(isNear('M-050000', 'M-0500000')).toBe(true);
    expect(isNear('M-0500000x', 'M-0500000')).toBe(true);
    expect(isNear('M-0500001', 'M-0500000')).toBe(true);
    expect(isNear('DEC0047', 'DEC-0047')).toBe(true);
    expect(isNear('m-0500000', 'M-0100000')).toBe(false);
    expect(isNear('dec0047', 'DEC-0047')).toBe(false);
    expect(isNear('M-0500000', 'M-0500000')).toBe(false);
  });
});

/** Records `n` payouts M-0000001… more in one run of SERVICE. */
async function recordMany(db: StateDb, n: number): Promise<void> {
  const run = openRun(db, ['SEED'], { inputHash: 'seed', now: fakeClock() });
  const { id } = run;
  await run.close();
  db.exec(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ${n})
    INSERT INTO payouts (run, row, reference_id, hash_version)
      SELECT ${id}, i, 'M-' || substr('0000000' || i, -7), 2 FROM s`);
}

/** The plan SQLite makes for the search of `ref`'s near references, as one text. */
function sqlitePlan(db: StateDb): (sql: string, params: unknown[]) => Promise<unknown[]> {
  return async (sql, params) => {
    const plan = db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params) as Array<{
      detail: string;
    }>;
    plans.push(plan.map((p) => p.detail).join('\n'));
    return db.prepare(sql).all(...params);
  };
}
const plans: string[] = [];

describe('the near-reference search on state.db', () => {
  it('probes the reference index, never reads the history, and finds what is near', async () => {
    const db = await openDb(await tempStateDir());
    await recordMany(db, 20_000);
    const read = sqlitePlan(db);
    plans.length = 0;
    const near = await nearReferences(read, 'sqlite', SERVICE, 'm-0005000');
    expect(near.map((h) => h.reference_id)).toEqual(['M-0005000']);
    // Never a scan of payouts: each reference looked up is a probe of the reference index.
    expect(plans.join('\n')).toMatch(
      /SEARCH p USING (COVERING )?INDEX payouts_reference \(reference_id=\?\)/,
    );
    expect(plans.join('\n')).not.toMatch(/SCAN p\b|SCAN payouts\b/);
    const edits = await nearReferences(read, 'sqlite', SERVICE, 'M-0005000x');
    expect(edits.map((h) => h.reference_id)).toEqual(['M-0005000']);
    const changed = await nearReferences(read, 'sqlite', SERVICE, 'M-0015X00');
    expect(changed.map((h) => h.reference_id).sort()).toEqual(
      Array.from({ length: 10 }, (_, d) => `M-0015${d}00`),
    );
  });
});

describe('the near-reference search on a shared history', () => {
  it('probes the reference index, never reads the history', async () => {
    const url = await recycledDatabase();
    await query(
      url,
      `INSERT INTO runs (run_id, service_id, service, inputs, created_at, updated_at)
       VALUES ('0123456789abcdef', $1, $2, '[]', 'now', 'now')`,
      [serviceIdOf(SERVICE), SERVICE],
    );
    await query(
      url,
      `INSERT INTO payouts (run, row, reference_id, hash_version)
       SELECT r.id, i, 'M-' || lpad(i::text, 7, '0'), 2 FROM runs r, generate_series(1, 20000) i`,
    );
    await query(url, 'ANALYZE payouts');
    const h = await PgHistory.open(url);
    try {
      const plansPg: string[] = [];
      const read: RowReader = async (sql, params) => {
        const plan = (await h.rows(`EXPLAIN ${sql}`, params)) as Array<Record<string, string>>;
        plansPg.push(plan.map((r) => Object.values(r)[0]).join('\n'));
        return h.rows(sql, params);
      };
      const near = await nearReferences(read, 'pg', SERVICE, 'm-0005000');
      expect(near.map((x) => x.reference_id)).toEqual(['M-0005000']);
      expect(plansPg.join('\n')).toMatch(
        /Index (Only )?Scan using payouts_reference on payouts p|Bitmap Index Scan on payouts_reference/,
      );
      expect(plansPg.join('\n')).not.toMatch(/Seq Scan on payouts/);
    } finally {
      await h.close();
    }
  });
});

describe('the runs listed', () => {
  it('a page at a time, each run counted once per commit and kept', async () => {
    const stateDir = await tempStateDir();
    const db = await openDb(stateDir);
    for (let i = 0; i < 23; i++) {
      const run = openRun(db, [`R${i}-A`, `R${i}-B`], {
        inputHash: `run-${i}`,
        now: fakeClock(Date.UTC(2026, 0, 1) + i * 60_000),
      });
      await run.recordIntent(1, rowsOf(run, `R${i}-A`));
      run.recordOutcome(1, [{ ref: `R${i}-A`, status: 'success' }]);
      await run.close();
    }
    const counted: string[] = [];
    const read: RowReader = async (sql, params) => {
      if (/FROM journal j WHERE j\.run = \?/.test(sql)) counted.push(String(params[0]));
      return db.prepare(sql).all(...params);
    };
    const keep = stateDbKeeper(db.name);
    const first = await runPageIn(read, { from: 0, size: 20 }, keep);
    expect(first.total).toBe(23);
    expect(first.runs).toHaveLength(20);
    expect(first.runs[0]!.run_id).toBe(runIdFor(SERVICE, 'run-22'));
    expect(first.runs[0]!.counts).toMatchObject({ success: 1, not_sent: 1 });
    expect(counted).toHaveLength(20);
    const second = await runPageIn(read, { from: 20, size: 20 }, keep);
    expect(second.runs.map((r) => r.run_id)).toEqual(
      [2, 1, 0].map((i) => runIdFor(SERVICE, `run-${i}`)),
    );
    // Listed again: every count is kept as of its run's commit, none counted again.
    counted.length = 0;
    const again = await listRunsIn(read, keep);
    expect(again).toHaveLength(23);
    expect(counted).toEqual([]);
    expect(again[0]!.counts).toEqual(first.runs[0]!.counts);
    // A commit of a run makes its kept counts old: it alone is counted again.
    const resumed = openRun(db, ['R22-A', 'R22-B'], {
      inputHash: 'run-22',
      now: fakeClock(Date.UTC(2026, 1, 1)),
    });
    await resumed.recordIntent(2, rowsOf(resumed, 'R22-B'));
    resumed.recordOutcome(2, [{ ref: 'R22-B', status: 'failed' }]);
    await resumed.close();
    counted.length = 0;
    const after = await runPageIn(read, { from: 0, size: 20 }, keep);
    expect(counted).toHaveLength(1);
    expect(after.runs[0]!.counts).toMatchObject({ success: 1, failed: 1, not_sent: 0 });
    // So does the service's later word on one of its payouts (a return, say).
    const row = (ref: string) =>
      db.prepare('SELECT run, row FROM payouts WHERE reference_id = ?').get(ref) as {
        run: number;
        row: number;
      };
    const at = '2026-02-02T00:00:00.000Z';
    const word = { held: true, status: 'failed', transaction_id: null, updated_at: at };
    await recordChecks(keep, 'sqlite', [
      { ...row('R21-A'), ...word, checked_at: at, checked_by: 'reconcile' },
    ]);
    counted.length = 0;
    const checked = await runPageIn(read, { from: 0, size: 20 }, keep);
    expect(counted).toHaveLength(1);
    expect(checked.runs[1]!.counts).toMatchObject({ success: 0, failed: 1 });
  });
});

describe('payouts runs, a page at a time', () => {
  it('shows 20, says which and how to see the next; --all shows every run', async () => {
    const stateDir = await tempStateDir();
    const db = await openDb(stateDir);
    for (let i = 0; i < 23; i++) {
      await openRun(db, [`R${i}`], {
        inputHash: `run-${i}`,
        now: fakeClock(Date.UTC(2026, 0, 1) + i * 60_000),
      }).close();
    }
    const json = memoryOutput({ json: true });
    await showRunList({ stateDir }, json.output, { page: 1, all: false });
    const doc = JSON.parse(json.stdout()) as {
      runs: unknown[];
      total_runs: number;
      next_page: number;
    };
    expect([doc.runs.length, doc.total_runs, doc.next_page]).toEqual([20, 23, 2]);
    const last = memoryOutput({ json: true });
    await showRunList({ stateDir }, last.output, { page: 2, all: false });
    expect(JSON.parse(last.stdout())).toMatchObject({ total_runs: 23, next_page: null });
    expect((JSON.parse(last.stdout()) as { runs: unknown[] }).runs).toHaveLength(3);
    const text = memoryOutput();
    await showRunList({ stateDir }, text.output, { page: 1, all: false });
    expect(text.stdout().trim().split('\n')).toHaveLength(21);
    expect(text.stderr()).toContain(
      'Runs 1 to 20 of 23, the most recently active first: `payouts runs --page 2` shows the next 20, `payouts runs --all` every run',
    );
    const all = memoryOutput();
    await showRunList({ stateDir }, all.output, { page: 1, all: true });
    expect(all.stdout().trim().split('\n')).toHaveLength(24);
    expect(all.stderr()).toContain('Runs 1 to 23 of 23, the most recently active first\n');
  });
});
