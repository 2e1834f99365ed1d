/**
 * Copies a state folder's history into a shared one, so that a team starts from what one
 * person already sent. A run is copied whole (its payouts, intents, results and reports) in
 * one transaction, under the lock of its service, and marked in the shared `meta` as pushed
 * from this folder (its state.db gets an id of its own for that): pushing twice copies nothing
 * the second time. Two folders that sent the same files have runs of the same id: the second
 * one pushed keeps its states under a suffixed id, so that what either sent is found.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { StateDb } from '../db.js';
import type { StagedPayout } from '../../domain/records.js';
import type { LockHolder, PgHistory } from './history.js';
import { insertPayouts } from './statements.js';
import { placeholders } from '../dialect.js';
import {
  ATTEMPT_ROWS,
  INTENT_ROWS,
  REPORT_ROWS,
  RESULT_ROWS,
  type RowsInsert,
  rowsStatements,
  WITHDRAWAL_ROWS,
} from '../journal-sql.js';

/** Rows read from state.db per statement. */
const PAGE = 5_000;

/** What a push did. */
export interface PushResult {
  copied: Array<{ run_id: string; service: string; payouts: number }>;
  /** Runs the shared history already held, by id. */
  present: string[];
}

/** A run's header in state.db. */
interface LocalRun {
  id: number;
  run_id: string;
  service_id: string;
  service: string;
  client_id: string | null;
  inputs: string;
  input_hash: string | null;
  payout_count: number;
  batch_reference: string | null;
  csv_style: string | null;
  send_args: string | null;
  last_req: number;
  created_at: string;
  updated_at: string;
  host: string | null;
  os_user: string | null;
}

/** The narrow tables, copied as their inserts write them (journal-sql.ts, from tables.ts). */
const TABLES: readonly RowsInsert[] = [INTENT_ROWS, RESULT_ROWS, REPORT_ROWS];

/** Rows of a run's table in state.db, a page at a time in row order. */
function* pagesOf<T extends { row: number }>(
  db: StateDb,
  sql: string,
  run: number,
): Generator<T[]> {
  let from = 0;
  for (;;) {
    const page = db.prepare(`${sql} AND row >= ? ORDER BY row LIMIT ${PAGE}`).all(run, from) as T[];
    if (page.length) yield page;
    if (page.length < PAGE) return;
    from = page[page.length - 1]!.row + 1;
  }
}

/** The id of a state folder's history, made on its first push. */
function historyIdOf(db: StateDb): string {
  const read = db.prepare("SELECT value FROM meta WHERE key = 'history_id'");
  const found = read.get() as { value: string } | undefined;
  if (found) return found.value;
  const id = randomBytes(8).toString('hex');
  db.prepare("INSERT OR IGNORE INTO meta (key, value) VALUES ('history_id', ?)").run(id);
  return (read.get() as { value: string }).value;
}

/** Copies one run of state.db into the shared history under `runId`; its payouts. */
async function copyRun(
  c: pg.Client,
  db: StateDb,
  local: LocalRun,
  to: { runId: string; session: string },
): Promise<number> {
  const { runId } = to;
  const r = await c.query<{ id: number }>(
    `INSERT INTO runs (run_id, service_id, service, client_id, inputs, input_hash, payout_count,
       batch_reference, last_req, created_at, updated_at, host, os_user, csv_style, send_args)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id`,
    [
      runId,
      local.service_id,
      local.service,
      local.client_id,
      local.inputs,
      local.input_hash,
      local.payout_count,
      local.batch_reference,
      local.last_req,
      local.created_at,
      local.updated_at,
      local.host,
      local.os_user,
      local.csv_style,
      local.send_args,
    ],
  );
  const id = r.rows[0]!.id;
  let payouts = 0;
  const payoutSql = `SELECT row, reference_id, file, line, location, amount, currency, recipient,
    description, hash, hash_version, retry_of FROM payouts WHERE run = ?`;
  for (const page of pagesOf<StagedPayout>(db, payoutSql, local.id)) {
    await insertPayouts(c, id, page);
    payouts += page.length;
  }
  for (const t of TABLES) {
    const sql = `SELECT ${t.columns.join(', ')} FROM ${t.table} WHERE run = ?`;
    for (const page of pagesOf<Record<string, unknown> & { row: number }>(db, sql, local.id)) {
      const values = page.flatMap((r) => t.columns.map((c) => r[c] ?? null));
      for (const statement of rowsStatements(t, values, 'pg', id)) {
        await c.query(placeholders(statement.sql, 'pg'), statement.params);
      }
    }
  }
  await copyAttempts(c, db, local.id, { id, session: to.session });
  return payouts;
}

/**
 * Copies a run's attempts, and the withdrawals the sending session made of its own requests,
 * as this session's: the shared history takes them as the word of the one who pushes.
 */
async function copyAttempts(
  c: pg.Client,
  db: StateDb,
  run: number,
  to: { id: number; session: string },
): Promise<void> {
  const own = `EXISTS (SELECT 1 FROM attempts a WHERE a.run = w.run AND a.row = w.row
    AND a.req = w.req AND a.session = w.session)`;
  // A row may have several requests: pages go by (row, req).
  const after = 'AND (row > ? OR (row = ? AND req > ?)) ORDER BY row, req';
  for (const [insert, sql] of [
    [ATTEMPT_ROWS, `SELECT row, req, at FROM attempts w WHERE run = ? ${after}`],
    [WITHDRAWAL_ROWS, `SELECT row, req, at FROM withdrawals w WHERE ${own} AND run = ? ${after}`],
  ] as const) {
    const read = db.prepare(`${sql} LIMIT ${PAGE}`);
    for (let last = { row: -1, req: -2 }; ; ) {
      const page = read.all(run, last.row, last.row, last.req) as Array<{
        row: number;
        req: number;
        at: string;
      }>;
      if (page.length === 0) break;
      last = page[page.length - 1]!;
      const values = page.flatMap((r) => [to.id, r.row, r.req, r.at, to.session]);
      for (const statement of rowsStatements(insert, values, 'pg')) {
        await c.query(placeholders(statement.sql, 'pg'), statement.params);
      }
    }
  }
}

/** Copies every run of state.db that the shared history does not hold yet. */
export async function pushHistory(
  db: StateDb,
  history: PgHistory,
  me: Omit<LockHolder, 'host' | 'user'>,
): Promise<PushResult> {
  const runs = db
    .prepare(
      `SELECT id, run_id, service_id, service, client_id, inputs, input_hash, payout_count,
         batch_reference, last_req, created_at, updated_at, host, os_user, csv_style, send_args
       FROM runs WHERE run_id IS NOT NULL AND service IS NOT NULL ORDER BY id`,
    )
    .all() as LocalRun[];
  const result: PushResult = { copied: [], present: [] };
  const historyId = historyIdOf(db);
  const services = [...new Set(runs.map((r) => r.service))];
  for (const service of services) {
    // A send to the service through the shared history must not run while its past is copied in.
    const lock = await history.lockService(service, me);
    try {
      for (const run of runs.filter((r) => r.service === service)) {
        const copied = await history.write('copying a run', async (c) => {
          const mark = `pushed ${historyId} ${run.run_id}`;
          const pushed = await c.query('SELECT 1 FROM meta WHERE key = $1', [mark]);
          if (pushed.rows.length) return undefined;
          const taken = await c.query('SELECT 1 FROM runs WHERE run_id = $1', [run.run_id]);
          const runId = taken.rows.length ? `${run.run_id}-${historyId.slice(0, 8)}` : run.run_id;
          const payouts = await copyRun(c, db, run, { runId, session: history.session });
          await c.query('INSERT INTO meta (key, value) VALUES ($1, $2)', [mark, runId]);
          return payouts;
        });
        if (copied === undefined) result.present.push(run.run_id);
        else result.copied.push({ run_id: run.run_id, service, payouts: copied });
      }
    } finally {
      await lock.release();
    }
  }
  return result;
}
