/**
 * The statements that write a run's journal, written once for both databases: state.db's
 * writer applies a commit's records with them, and a shared history the same records, with
 * the same statements in PostgreSQL's spelling (dialect.ts).
 */
import { type ColumnType, type Dialect, placeholders, type TableDef } from './dialect.js';
import type { JournalRecord } from '../domain/records.js';
import { ATTEMPTS, INTENTS, PAYOUTS_NOW, REPORTS, RESULTS, WITHDRAWALS } from './tables.js';
import { CHECKS } from './checks-table.js';

/** A statement with its values, written with `?` placeholders (see placeholders()). */
export interface Statement {
  sql: string;
  params: unknown[];
}

/**
 * An insert of rows of a table, `width` values each (its columns, in order), many to a
 * statement; `tail` settles a conflict. SQLite takes them as VALUES, PostgreSQL as one array
 * a column (unnest), so that a commit's rows are a few parameters whatever their number.
 */
export interface RowsInsert {
  table: string;
  /** The table's columns, in the order of each row's values. */
  columns: readonly string[];
  head: string;
  width: number;
  types: readonly ColumnType[];
  tail: string;
}

/** The RowsInsert of every column of a table. */
function rowsOf(table: TableDef, tail: string): RowsInsert {
  const names = table.columns.map(([name]) => name);
  return {
    table: table.name,
    columns: names,
    head: `INSERT INTO ${table.name} (${names.join(', ')})`,
    width: names.length,
    types: table.columns.map(([, type]) => type),
    tail,
  };
}

/** Rows one statement of a RowsInsert takes: a shorter rest goes by one of its own length. */
export const ROWS_PER_STATEMENT = 100;

/** The columns a conflict on (run, row) writes again from the new row. */
function upsert(columns: string[]): string {
  return `ON CONFLICT (run, row) DO UPDATE SET ${columns.map((c) => `${c} = excluded.${c}`).join(', ')}`;
}

/** Rows of `payouts`, as pass 1 stages them and a shared history copies them in. */
export const PAYOUT_ROWS = rowsOf(PAYOUTS_NOW, '');

/** A row of `intents` a payout, or its state again if it had one (sent again once freed). */
export const INTENT_ROWS = rowsOf(
  INTENTS,
  `ON CONFLICT (run, row) DO UPDATE SET state = 'in_flight', req = excluded.req,
    sent_at = excluded.sent_at, note = NULL, updated_at = excluded.updated_at`,
);

/** Rows of `attempts`: run, row, req, at, session; never written twice. */
export const ATTEMPT_ROWS = rowsOf(ATTEMPTS, '');

/** Rows of `withdrawals`, as `attempts`' (state push copies them in). */
export const WITHDRAWAL_ROWS = rowsOf(WITHDRAWALS, '');

/** Rows of `checks` but its id (the store's) and `by_role` (the database's); never written twice. */
export const CHECK_ROWS = rowsOf(
  { ...CHECKS, columns: CHECKS.columns.filter(([c]) => c !== 'id' && c !== 'by_role') },
  '',
);

/** Rows of `results`: run, row, req, status, transaction id, charges, message, at. */
export const RESULT_ROWS = rowsOf(
  RESULTS,
  upsert(['req', 'status', 'transaction_id', 'charges', 'message', 'at']),
);

/** Rows of `reports`: run, row, status, transaction id, charges, message, sent earlier. */
export const REPORT_ROWS = rowsOf(
  REPORTS,
  upsert(['status', 'transaction_id', 'charges', 'message', 'sent_earlier']),
);

/** The columns of a run's header, as adopting a run records them (adopt.ts). */
export const RUN_HEADER = [
  'run_id',
  'service_id',
  'service',
  'client_id',
  'inputs',
  'input_hash',
  'payout_count',
  'batch_reference',
  'created_at',
  'updated_at',
  'csv_style',
  'send_args',
] as const;

/**
 * What differs in the statements below: a JSON array's elements as rows of `value`, max, the
 * lock on a run being adopted (SQLite's BEGIN IMMEDIATE already holds the whole file), the
 * database role of a run's sender, and how a run's header is recorded: state.db's staged rows
 * are a run already (its row gets the header), a shared history's run is inserted.
 */
const PIECES: Record<
  Dialect,
  { texts: string; items: string; greatest: string; lock: string; role: string; record: string }
> = {
  sqlite: {
    texts: 'json_each(?)',
    items: 'json_each(?)',
    greatest: 'max',
    lock: '',
    role: 'NULL',
    record: `UPDATE runs SET ${RUN_HEADER.map((c) => `${c} = ?`).join(', ')}, staged_by = NULL
      WHERE id = ? RETURNING id`,
  },
  pg: {
    texts: 'json_array_elements_text(?::json)',
    items: 'json_array_elements(?::json)',
    greatest: 'greatest',
    lock: ' FOR UPDATE',
    role: 'session_user',
    record: `INSERT INTO runs (${RUN_HEADER.join(', ')})
      VALUES (${RUN_HEADER.map(() => '?').join(', ')}) RETURNING id`,
  },
};

/** The rows of `value` of a JSON array of texts given as one parameter, in a dialect. */
export function jsonTexts(d: Dialect): string {
  return PIECES[d].texts;
}

/** The statements of the records that name payouts by reference, and of the run's header. */
function journalSql(d: Dialect) {
  const { texts, items, greatest, lock, role, record } = PIECES[d];
  // These take a record's references as one JSON array, found through the reference index.
  const named = `p.run = ? AND p.reference_id IN (SELECT value FROM ${texts})`;
  const open = 'NOT EXISTS (SELECT 1 FROM results d WHERE d.run = p.run AND d.row = p.row)';
  const sql = {
    // Results read back by reference: [ref, status, transaction id, charges, message] each.
    done: `${RESULT_ROWS.head}
      SELECT p.run, p.row, CAST(? AS INTEGER), j.value ->> 1, j.value ->> 2, j.value ->> 3,
        j.value ->> 4, ?
      FROM ${items} j, payouts p WHERE p.run = ? AND p.reference_id = j.value ->> 0
      ${RESULT_ROWS.tail}`,
    // Seen by the service, status not known: in flight, if this run had not sent it yet.
    seen: `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
      SELECT p.run, p.row, 'in_flight', CAST(? AS INTEGER), ?, ? FROM payouts p
      WHERE ${named} AND ${open}
      ON CONFLICT (run, row) DO NOTHING`,
    notApplied: `UPDATE intents SET state = 'free', note = ?, updated_at = ?
      WHERE run = ? AND row IN (SELECT p.row FROM payouts p WHERE ${named} AND ${open})
        AND state IN ('in_flight', 'unknown') AND (? = -1 OR req = ?)`,
    // ...and the request withdrawn, by the session that sent it (only its own counts).
    withdrawn: `INSERT INTO withdrawals (run, row, req, at, session)
      SELECT p.run, p.row, CAST(? AS INTEGER), ?, ? FROM payouts p WHERE ${named} AND ${open}
      ON CONFLICT (run, row, req) DO NOTHING`,
    // A payout never sent, or freed, becomes unknown as of now (request -1).
    unknown: `INSERT INTO intents (run, row, state, req, sent_at, note, updated_at)
      SELECT p.run, p.row, 'unknown', -1, ?, ?, ? FROM payouts p WHERE ${named} AND ${open}
      ON CONFLICT (run, row) DO UPDATE SET state = 'unknown', note = excluded.note,
        updated_at = excluded.updated_at,
        req = CASE WHEN intents.state = 'free' THEN -1 ELSE intents.req END,
        sent_at = CASE WHEN intents.state = 'free' THEN excluded.sent_at ELSE intents.sent_at END`,
    // Every commit counts: a run's counts kept as of an earlier commit are old (runs.ts).
    touch: `UPDATE runs SET last_req = ${greatest}(last_req, ?), updated_at = ?,
      commits = commits + 1 WHERE id = ?`,
    // The highest request id a run has used: a resumed run numbers new ones after it.
    lastReq: `SELECT ${greatest}(r.last_req, coalesce((SELECT max(req) FROM intents WHERE run = r.id), 0),
        coalesce((SELECT max(req) FROM results WHERE run = r.id), 0),
        coalesce((SELECT max(req) FROM attempts WHERE run = r.id), 0)) AS n
      FROM runs r WHERE r.id = ?`,
    // Adopting a run (adopt.ts): the run of the same id, resumed (its last send's reports
    // forgotten, as each send reports its own) or kept under a suffixed id when its payouts
    // differ; the header of a run recorded; who sends it.
    findRun: `SELECT id, payout_count FROM runs WHERE run_id = ?${lock}`,
    resumeRun: 'UPDATE runs SET updated_at = ?, commits = commits + 1 WHERE id = ?',
    forgetReports: 'DELETE FROM reports WHERE run = ?',
    supersede: "UPDATE runs SET run_id = run_id || '-' || id WHERE id = ?",
    record,
    sender: `UPDATE runs SET host = ?, os_user = ?, db_user = ${role} WHERE id = ?`,
  };
  return sql;
}

/**
 * The lookups of what the runs of a service hold: whether there is any run, the journal rows
 * of references given as one JSON array (a probe each on `payouts_reference`), by run, and
 * the journal rows of the references that retry any of them (a probe each on
 * `payouts_retry_of`). `schema` names the database SQLite attached the history as.
 *
 * The rule of an attempt (issue 48): a payout that was ever in a request (a row of
 * `attempts`) and has no stated result is in flight, to be read back before it goes again,
 * whatever its intent says now (freed, or gone), unless the session that sent that request
 * withdrew it (a row of `withdrawals` naming the same request and session: the request never
 * went, or provably did not apply). Its time is its latest such request's.
 */
export function lookupSql(
  d: Dialect,
  schema?: string,
): { hasRuns: string; prior: string; retries: string } {
  const s = schema ? `${schema}.` : '';
  // The latest request of the row that its own session did not withdraw (null: none).
  const open = `(SELECT max(x.at) FROM ${s}attempts x WHERE x.run = o.run AND x.row = o.row
          AND NOT EXISTS (SELECT 1 FROM ${s}withdrawals w WHERE w.run = x.run AND w.row = x.row
            AND w.req = x.req AND w.session = x.session))`;
  const settled = "o.state IN ('in_flight', 'unknown') OR (o.state = 'done' AND o.status <> '')";
  const inner = `o.reference_id, o.run, r.run_id, r.client_id, o.hash, o.hash_version, o.state,
        o.req, o.sent_at, o.status, o.transaction_id, o.charges, o.message, o.retry_of,
        o.checked_at, CASE WHEN ${settled} THEN NULL ELSE ${open} END AS open_at`;
  const held = `JOIN ${s}runs r ON r.id = o.run WHERE r.service_id = ?) h
      WHERE h.state IN ('in_flight', 'done', 'unknown') OR h.open_at IS NOT NULL
      ORDER BY h.run`;
  const columns = `SELECT h.reference_id, h.run_id, h.client_id, h.hash, h.hash_version,
      CASE WHEN h.open_at IS NULL THEN h.state ELSE 'in_flight' END AS state, h.req,
      CASE WHEN h.open_at IS NULL OR h.open_at < coalesce(h.sent_at, '') THEN h.sent_at
        ELSE h.open_at END AS sent_at,
      h.status, h.transaction_id, h.charges, h.message, h.retry_of, h.checked_at
    FROM (SELECT ${inner}`;
  return {
    hasRuns: `SELECT 1 FROM ${s}runs WHERE service_id = ? LIMIT 1`,
    prior: `${columns}
      FROM ${PIECES[d].texts} j JOIN ${s}journal o ON o.reference_id = j.value
        ${held}`,
    retries: `${columns}
      FROM ${PIECES[d].texts} j JOIN ${s}payouts p ON p.retry_of = j.value
        JOIN ${s}journal o ON o.run = p.run AND o.row = p.row
        ${held}`,
  };
}

/** Each dialect's statements, made once. */
export const JOURNAL_SQL = { sqlite: journalSql('sqlite'), pg: journalSql('pg') };

/** The text of a RowsInsert of `rows` rows, kept: full statements share one text. */
const texts = new Map<RowsInsert, Map<number, string>>();

function rowsSql(insert: RowsInsert, rows: number): string {
  let byCount = texts.get(insert);
  if (!byCount) {
    byCount = new Map();
    texts.set(insert, byCount);
  }
  let sql = byCount.get(rows);
  if (sql === undefined) {
    const one = `(${new Array(insert.width).fill('?').join(', ')})`;
    sql = `${insert.head} VALUES ${new Array(rows).fill(one).join(', ')} ${insert.tail}`;
    byCount.set(rows, sql);
  }
  return sql;
}

/** PostgreSQL's spelling of the statements' texts, kept per text. */
const pgTexts = new Map<string, string>();

/** A statement's text as PostgreSQL takes it. */
export function pgText(sql: string): string {
  let text = pgTexts.get(sql);
  if (text === undefined) {
    text = placeholders(sql, 'pg');
    pgTexts.set(sql, text);
  }
  return text;
}

/** PostgreSQL's array type of each column type. */
const ARRAYS: Record<ColumnType, string> = { int: 'int[]', id: 'int[]', text: 'text[]' };

/** The rows as one statement of a column array each (PostgreSQL). */
function unnestStatement(insert: RowsInsert, values: readonly unknown[], run?: number): Statement {
  const w = insert.width;
  const params: unknown[][] = insert.types.map(() => []);
  for (let k = 0; k < values.length; k += w) {
    for (let j = 0; j < w; j++) params[j]!.push(values[k + j] ?? null);
    if (run !== undefined) params[0]![params[0]!.length - 1] = run;
  }
  const arrays = insert.types.map((t) => `?::${ARRAYS[t]}`).join(', ');
  return { sql: `${insert.head} SELECT * FROM unnest(${arrays}) ${insert.tail}`, params };
}

/**
 * Statements that insert rows of values (`insert.width` each): on SQLite at most
 * ROWS_PER_STATEMENT to one, on PostgreSQL one; with `run`, each row's run is that run's id.
 */
export function rowsStatements(
  insert: RowsInsert,
  values: readonly unknown[],
  d: Dialect,
  run?: number,
): Statement[] {
  if (values.length === 0) return [];
  if (d === 'pg') return [unnestStatement(insert, values, run)];
  const out: Statement[] = [];
  const step = insert.width * ROWS_PER_STATEMENT;
  for (let k = 0; k < values.length; k += step) {
    const params = values.slice(k, k + step);
    if (run !== undefined) for (let j = 0; j < params.length; j += insert.width) params[j] = run;
    out.push({ sql: rowsSql(insert, params.length / insert.width), params });
  }
  return out;
}

/** The statements that apply one record of run `run`'s journal to a database of the dialect. */
export function recordStatements(run: number, r: JournalRecord, d: Dialect): Statement[] {
  const sql = JOURNAL_SQL[d];
  switch (r.kind) {
    case 'intent': {
      const values: unknown[] = [];
      const attempts: unknown[] = [];
      for (const row of r.rows) {
        values.push(run, row, 'in_flight', r.req, r.at, null, r.at);
        attempts.push(run, row, r.req, r.at, r.session);
      }
      return [
        ...rowsStatements(INTENT_ROWS, values, d),
        ...rowsStatements(ATTEMPT_ROWS, attempts, d),
      ];
    }
    case 'done':
      return [{ sql: sql.done, params: [r.req, r.at, JSON.stringify(r.list), run] }];
    case 'seen':
      return [{ sql: sql.seen, params: [r.req, r.at, r.at, run, JSON.stringify(r.refs)] }];
    case 'not-applied': {
      const refs = JSON.stringify(r.refs);
      const freed = { sql: sql.notApplied, params: [r.why, r.at, run, run, refs, r.req, r.req] };
      if (r.req === -1) return [freed];
      return [freed, { sql: sql.withdrawn, params: [r.req, r.at, r.session, run, refs] }];
    }
    case 'unknown': {
      const params = [r.at, r.why, r.at, run, JSON.stringify(r.refs)];
      return [{ sql: sql.unknown, params }];
    }
    case 'results':
      return rowsStatements(RESULT_ROWS, r.values, d, run);
    case 'reports':
      return rowsStatements(REPORT_ROWS, r.values, d, run);
    case 'touch':
      return [{ sql: sql.touch, params: [r.lastReq, r.at, run] }];
  }
}
