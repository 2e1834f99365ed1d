/**
 * A run's counts as `payouts runs` lists them (results by status, payouts in flight, sent
 * earlier), read from its own rows only, and kept in `run_counts` as of the commit they were
 * counted at: every commit of a run's journal adds one to `runs.commits`, so counts kept at
 * the run's present `commits` are its present counts, and a run of a million payouts is
 * counted once, not at every listing. A payout's status is its latest word (the view
 * `journal`, which takes `checks`), so counts are kept as of the run's latest check too
 * (`checked`, the highest id of its checks): a word recorded since makes them old. Keeping
 * them is a cache: a store that refuses the write (a role that may only read, state.db busy)
 * lists the same counts, counted each time.
 */

import type { StateDb } from './db.js';

/** Reads rows from a store: `?` placeholders, in order. */
export type RowReader = (sql: string, params: unknown[]) => Promise<unknown[]>;

/** Writes to a store; a failure is the caller's to weigh. */
export type RowWriter = (sql: string, params: unknown[]) => Promise<void>;

/** A writer that runs its statements through a reader (their rows, if any, unread). */
export function rowWriterOf(read: RowReader): RowWriter {
  return async (sql, params) => {
    await read(sql, params);
  };
}

/** A writer on a state.db connection, waiting for its lock as the connection does. */
export function stateDbWriter(db: StateDb): RowWriter {
  return async (sql, params) => {
    db.prepare(sql).run(...params);
  };
}

/** What a run's counts are made of, as stored. */
const NAMES = ['success', 'failed', 'canceled', 'pending', 'in_flight', 'sent_earlier'] as const;

/** A run's counts. */
export type Counts = Record<(typeof NAMES)[number], number>;

/** The highest id of the checks of run r: a probe of `checks_run`, whatever the history's size. */
const LATEST_CHECK = '(SELECT coalesce(max(x.id), 0) FROM checks x WHERE x.run = r.id)';

/** The columns a listing selects to know a run's kept counts (run_counts as k, runs as r). */
export const KEPT_COLUMNS = `r.commits, k.commits AS counted, ${LATEST_CHECK} AS checked,
    k.checked AS counted_checked, ${NAMES.map((n) => `k.${n}`).join(', ')}`;

/** A listed run's row: its id, its commits, and its counts as kept (null: none kept). */
export interface CountedRow {
  id: number;
  commits: number;
  counted: number | null;
  /** The run's latest check, and the one its kept counts are of. */
  checked: number | string | null;
  counted_checked: number | string | null;
  success: number | string | null;
  failed: number | string | null;
  canceled: number | string | null;
  pending: number | string | null;
  in_flight: number | string | null;
  sent_earlier: number | string | null;
}

/**
 * A run's counts and the commit and check they are of, in one statement (one snapshot): its
 * payouts with a result or a word, by their latest status; those sent or unknown with
 * neither; reports of payouts sent earlier with neither. Each part reads the run's own rows,
 * by the (run, row) keys.
 */
const COUNT = `SELECT r.commits, ${LATEST_CHECK} AS checked, d.success, d.failed, d.canceled,
    d.pending, d.in_flight, e.sent_earlier
  FROM runs r,
    (SELECT count(CASE WHEN j.state = 'done' AND lower(j.status) = 'success' THEN 1 END)
         AS success,
       count(CASE WHEN j.state = 'done' AND lower(j.status) = 'failed' THEN 1 END) AS failed,
       count(CASE WHEN j.state = 'done' AND lower(j.status) = 'canceled' THEN 1 END)
         AS canceled,
       count(CASE WHEN j.state = 'done'
         AND lower(j.status) NOT IN ('success', 'failed', 'canceled') THEN 1 END) AS pending,
       count(CASE WHEN j.state IN ('in_flight', 'unknown') THEN 1 END) AS in_flight
     FROM journal j WHERE j.run = ?) d,
    (SELECT count(*) AS sent_earlier FROM reports o
     WHERE o.run = ? AND o.sent_earlier > 0
       AND NOT EXISTS (SELECT 1 FROM journal x
         WHERE x.run = o.run AND x.row = o.row AND x.state = 'done')) e
  WHERE r.id = ?`;

/** Keeps counts as of a commit and a check, unless counts of later ones are kept already. */
const KEEP = `INSERT INTO run_counts (run, commits, checked, ${NAMES.join(', ')})
  VALUES (?, ?, ?, ${NAMES.map(() => '?').join(', ')})
  ON CONFLICT (run) DO UPDATE SET commits = excluded.commits, checked = excluded.checked,
    ${NAMES.map((n) => `${n} = excluded.${n}`).join(', ')}
  WHERE run_counts.commits <= excluded.commits AND run_counts.checked <= excluded.checked`;

/** Counts from a row (PostgreSQL gives a bigint count as text). */
function countsOf(row: object): Counts {
  const r = row as Record<string, unknown>;
  return Object.fromEntries(NAMES.map((n) => [n, Number(r[n] ?? 0)])) as Counts;
}

/** Whether a row's kept counts are those of the run's present commit and latest check. */
function current(row: CountedRow): boolean {
  return (
    row.counted !== null &&
    Number(row.counted) === Number(row.commits) &&
    Number(row.counted_checked ?? 0) === Number(row.checked ?? 0)
  );
}

/**
 * The counts of listed runs: those kept at their present commit as they are, the others
 * counted from the run's rows and kept for next time (when `keep` is given; a failure to keep
 * them changes nothing here).
 */
export async function countedIn<R extends CountedRow>(
  read: RowReader,
  rows: R[],
  keep?: RowWriter,
): Promise<Array<R & Counts>> {
  const out: Array<R & Counts> = [];
  for (const row of rows) {
    if (current(row)) {
      out.push({ ...row, ...countsOf(row) });
      continue;
    }
    const [fresh] = (await read(COUNT, [row.id, row.id, row.id])) as Array<Record<string, unknown>>;
    const counts = countsOf(fresh ?? {});
    if (fresh && keep) {
      const at = [row.id, fresh.commits, Number(fresh.checked ?? 0)];
      await keep(KEEP, [...at, ...NAMES.map((n) => counts[n])]).catch(() => {});
    }
    out.push({ ...row, ...counts });
  }
  return out;
}
