/**
 * The payouts `payouts reconcile` looks up (issue 47), read a page at a time in both stores:
 * the runs of a service in a scope (one run, those begun since a day, or all), and of each
 * run its sent payouts, every one or those not final (pending, a status the interface does
 * not name, in doubt, or last found missing), in row order through the (run, row) key, so a
 * run's reconcile costs the same whatever else the history holds.
 */
import type { PriorRow } from '../domain/history.js';
import type { StagedPayout } from '../domain/records.js';
import { ChainWalk, type ChainHit } from './chains.js';
import type { Dialect } from './dialect.js';
import { serviceId } from './hash.js';
import { HELD_COLUMNS, type HeldColumns, type HeldPayout, heldPayoutOf } from './checks.js';
import { lookupSql } from './journal-sql.js';
import type { RowReader } from './run-counts.js';

/** A run of the scope, as reconcile goes through it. */
export interface ScopeRun {
  id: number;
  run_id: string;
  service: string;
  created_at: string;
  /** How its report and retry files are written (RunHeader.csv_style; null: not recorded). */
  csv_style: string | null;
}

const RUN_COLUMNS = 'r.id, r.run_id, r.service, r.created_at, r.csv_style';

/**
 * The runs of a service, oldest first: those begun on or after `since` (an ISO date or time)
 * when given, through `runs_updated` (a run is active at least as late as it began).
 */
export async function scopeRuns(
  read: RowReader,
  serviceKey: string,
  since?: string,
): Promise<ScopeRun[]> {
  const service = serviceId(serviceKey);
  const sql =
    since === undefined
      ? `SELECT ${RUN_COLUMNS} FROM runs r WHERE r.service_id = ? AND r.run_id IS NOT NULL
         ORDER BY r.id`
      : `SELECT ${RUN_COLUMNS} FROM runs r WHERE r.updated_at >= ? AND r.created_at >= ?
           AND r.service_id = ? AND r.run_id IS NOT NULL ORDER BY r.id`;
  const rows = (await read(
    sql,
    since === undefined ? [service] : [since, since, service],
  )) as ScopeRun[];
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/** A payout of the scope: as the history holds it now, and as a decision takes it. */
export interface ScopePayout extends HeldPayout {
  hash_version: number;
  req: number | null;
  sent_at: string | null;
  charges: string | null;
  message: string | null;
  retry_of: string | null;
}

/** What reconcile asks of the service without `every`: a payout that is not final. */
const NOT_FINAL = `(j.state IN ('in_flight', 'unknown') OR j.missing = 1
  OR lower(j.status) NOT IN ('success', 'failed', 'canceled'))`;

/** The run's sent payouts: all, or those not final; `j` the view journal of the run. */
function sentOf(every: boolean): string {
  return `j.run = ? AND j.state IN ('in_flight', 'done', 'unknown')${every ? '' : ` AND ${NOT_FINAL}`}`;
}

/** How many payouts scopePage gives of a run, in all. */
export async function scopeCount(read: RowReader, run: number, every: boolean): Promise<number> {
  const [r] = (await read(`SELECT count(*) AS n FROM journal j WHERE ${sentOf(every)}`, [
    run,
  ])) as Array<{ n: number | string }>;
  return Number(r?.n ?? 0);
}

/**
 * A page of a run's sent payouts from row `from`, in row order: every one, or those not final.
 */
export async function scopePage(
  read: RowReader,
  run: number,
  page: { from: number; size: number; every: boolean },
): Promise<ScopePayout[]> {
  const sql = `SELECT ${HELD_COLUMNS}, j.hash_version, j.req, j.sent_at, j.charges, j.message,
      j.retry_of
    FROM journal j JOIN runs r ON r.id = j.run
    WHERE ${sentOf(page.every)} AND j.row >= ?
    ORDER BY j.row LIMIT ?`;
  const rows = (await read(sql, [run, page.from, page.size])) as Array<
    HeldColumns & Omit<ScopePayout, keyof HeldPayout>
  >;
  return rows.map((r) => ({
    ...heldPayoutOf(r),
    hash_version: Number(r.hash_version),
    req: r.req === null ? null : Number(r.req),
    sent_at: r.sent_at,
    charges: r.charges,
    message: r.message,
    retry_of: r.retry_of,
  }));
}

/**
 * A page of payouts as a decision holds them (row i: the page's ith payout), with the rows of
 * their chains (the originals they retry, the references that retry them), as a send finds
 * them (chains.ts).
 */
export async function heldOfPage(
  read: RowReader,
  dialect: Dialect,
  serviceKey: string,
  page: readonly ScopePayout[],
): Promise<PriorRow[]> {
  const out: PriorRow[] = page.map((p, row) => ({
    row,
    payout: p.payout,
    run_id: p.run_id,
    client_id: p.client_id,
    hash: null,
    hash_version: p.hash_version,
    state: p.state as PriorRow['state'],
    req: p.req,
    sent_at: p.sent_at,
    status: p.status,
    transaction_id: p.transaction_id,
    charges: p.charges,
    message: p.message,
    retry_of: p.retry_of,
  }));
  const staged: StagedPayout[] = page.map((p, row) => ({
    row,
    reference_id: p.payout.reference_id,
    file: null,
    line: null,
    location: null,
    amount: p.payout.amount,
    currency: p.payout.currency,
    recipient: p.payout.recipient,
    description: p.payout.description ?? null,
    hash: null,
    hash_version: p.hash_version,
    retry_of: p.retry_of,
  }));
  const sql = lookupSql(dialect);
  const walk = new ChainWalk(staged, out);
  for (let q = walk.next(); q; q = walk.next()) {
    walk.take(q, (await read(sql[q.query], [q.refs, serviceId(serviceKey)])) as ChainHit[]);
  }
  return out;
}
