/**
 * A run's counts as `payouts runs` lists them (results by status, payouts in flight, sent
 * earlier), read from its own rows only, and kept in `run_counts` as of the commit they were
 * counted at: every commit of a run's journal adds one to `runs.commits`, so counts kept at
 * the run's present `commits` are its present counts, and a run of a million payouts is
 * counted once, not at every listing. Keeping them is a cache: a store that refuses the write
 * (a role that may only read, state.db busy) lists the same counts, counted each time.
 */

/** Reads rows from a store: `?` placeholders, in order. */
export type RowReader = (sql: string, params: unknown[]) => Promise<unknown[]>;

/** Writes to a store; a failure is the caller's to weigh. */
export type RowWriter = (sql: string, params: unknown[]) => Promise<void>;

/** What a run's counts are made of, as stored. */
const NAMES = ['success', 'failed', 'canceled', 'pending', 'in_flight', 'sent_earlier'] as const;

/** A run's counts. */
export type Counts = Record<(typeof NAMES)[number], number>;

/** The columns a listing selects to know a run's kept counts (run_counts as k, runs as r). */
export const KEPT_COLUMNS = `r.commits, k.commits AS counted, ${NAMES.map((n) => `k.${n}`).join(', ')}`;

/** A listed run's row: its id, its commits, and its counts as kept (null: none kept). */
export interface CountedRow {
  id: number;
  commits: number;
  counted: number | null;
  success: number | string | null;
  failed: number | string | null;
  canceled: number | string | null;
  pending: number | string | null;
  in_flight: number | string | null;
  sent_earlier: number | string | null;
}

/**
 * A run's counts and the commit they are of, in one statement (one snapshot): results by
 * status; intents sent or unknown with no result; reports of payouts sent earlier with none.
 * Each part reads the run's own rows, by the (run, row) keys.
 */
const COUNT = `SELECT r.commits, d.success, d.failed, d.canceled, d.pending, f.in_flight,
    e.sent_earlier
  FROM runs r,
    (SELECT count(CASE WHEN lower(status) = 'success' THEN 1 END) AS success,
       count(CASE WHEN lower(status) = 'failed' THEN 1 END) AS failed,
       count(CASE WHEN lower(status) = 'canceled' THEN 1 END) AS canceled,
       count(CASE WHEN lower(status) NOT IN ('success', 'failed', 'canceled') THEN 1 END)
         AS pending
     FROM results WHERE run = ?) d,
    (SELECT count(*) AS in_flight FROM intents i
     WHERE i.run = ? AND i.state IN ('in_flight', 'unknown')
       AND NOT EXISTS (SELECT 1 FROM results x WHERE x.run = i.run AND x.row = i.row)) f,
    (SELECT count(*) AS sent_earlier FROM reports o
     WHERE o.run = ? AND o.sent_earlier > 0
       AND NOT EXISTS (SELECT 1 FROM results x WHERE x.run = o.run AND x.row = o.row)) e
  WHERE r.id = ?`;

/** Keeps counts as of a commit, unless counts of a later one are kept already. */
const KEEP = `INSERT INTO run_counts (run, commits, ${NAMES.join(', ')})
  VALUES (?, ?, ${NAMES.map(() => '?').join(', ')})
  ON CONFLICT (run) DO UPDATE SET commits = excluded.commits,
    ${NAMES.map((n) => `${n} = excluded.${n}`).join(', ')}
  WHERE run_counts.commits <= excluded.commits`;

/** Counts from a row (PostgreSQL gives a bigint count as text). */
function countsOf(row: object): Counts {
  const r = row as Record<string, unknown>;
  return Object.fromEntries(NAMES.map((n) => [n, Number(r[n] ?? 0)])) as Counts;
}

/** Whether a row's kept counts are those of the run's present commit. */
function current(row: CountedRow): boolean {
  return row.counted !== null && Number(row.counted) === Number(row.commits);
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
    const [fresh] = (await read(COUNT, [row.id, row.id, row.id, row.id])) as Array<
      Record<string, unknown>
    >;
    const counts = countsOf(fresh ?? {});
    if (fresh && keep) {
      await keep(KEEP, [row.id, fresh.commits, ...NAMES.map((n) => counts[n])]).catch(() => {});
    }
    out.push({ ...row, ...counts });
  }
  return out;
}
