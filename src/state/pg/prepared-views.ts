/**
 * What a shared history knows about a prepared run's payouts, for the approver's screen
 * (docs/approvals.md): recipients paid before, and what earlier runs hold of its references.
 */
import { type HeldPayout, heldPayoutsSql, latestOf } from '../earlier-runs.js';
import { lookupSql } from '../journal-sql.js';
import { paidRecipientsSql, recipientPages } from '../recipients.js';
import type { PgHistory } from './history.js';

/** Those of `recipients` that runs of the service (its id) paid before (not failed or canceled). */
export async function paidRecipientsIn(
  h: PgHistory,
  sid: string,
  recipients: Iterable<string>,
): Promise<Set<string>> {
  const paid = new Set<string>();
  const sql = paidRecipientsSql('pg');
  for (const page of recipientPages(recipients)) {
    const rows = (await h.rows(sql, [page, sid])) as Array<{
      recipient: string;
    }>;
    for (const r of rows) paid.add(r.recipient);
  }
  return paid;
}

/** What an earlier run holds of a reference. */
export interface EarlierHit {
  reference_id: string;
  run_id: string;
  state: 'in_flight' | 'done' | 'unknown';
  status: string | null;
}

/** What the runs of a service (its id) hold of these references (send's own lookup), by run. */
export async function earlierHits(
  h: PgHistory,
  sid: string,
  refs: string[],
): Promise<EarlierHit[]> {
  const out: EarlierHit[] = [];
  const sql = lookupSql('pg').prior;
  for (let i = 0; i < refs.length; i += 5_000) {
    const page = JSON.stringify(refs.slice(i, i + 5_000));
    out.push(...((await h.rows(sql, [page, sid])) as EarlierHit[]));
  }
  return out;
}

/** A prepared run's payout count and per-currency sums, computed from its payout rows. */
export interface RowTotals {
  prep: number;
  currency: string;
  count: number;
  /** Exact, as PostgreSQL's numeric adds the decimal texts. */
  total: string;
}

/** The payout rows of every prepared run summed per currency (for the list of runs). */
export async function preparedRowTotals(h: PgHistory): Promise<RowTotals[]> {
  const rows = (await h.rows(
    `SELECT prep, currency, count(*) AS count, sum(amount::numeric)::text AS total
     FROM prepared_payouts GROUP BY prep, currency ORDER BY prep, currency`,
    [],
  )) as Array<{ prep: number; currency: string; count: string; total: string }>;
  return rows.map((r) => ({ ...r, count: Number(r.count) }));
}

/** The prepared runs of a service (its id) holding all `n` of these references, newest first. */
export async function preparedHoldingAll(
  h: PgHistory,
  sid: string,
  refs: string[],
): Promise<number[]> {
  const rows = (await h.rows(
    `SELECT x.prep FROM prepared_payouts x JOIN prepared_runs q ON q.id = x.prep
     WHERE q.service_id = ? AND x.reference_id IN (SELECT value FROM json_array_elements_text(?::json))
     GROUP BY x.prep HAVING count(*) = ? ORDER BY x.prep DESC LIMIT 20`,
    [sid, JSON.stringify(refs), refs.length],
  )) as Array<{ prep: number }>;
  return rows.map((r) => r.prep);
}

/**
 * The payout the runs of a service (its id) hold under each of these references, the latest
 * run's: a retry's original, a reference held as another payout.
 */
export async function heldPayoutsIn(
  h: PgHistory,
  sid: string,
  refs: string[],
): Promise<Map<string, HeldPayout>> {
  if (!refs.length) return new Map();
  const rows = (await h.rows(heldPayoutsSql('pg'), [JSON.stringify(refs), sid])) as HeldPayout[];
  return latestOf(rows);
}

/** A decision on a prepared run, with the screen it was made on (JSON; null: none was kept). */
export interface ReviewRow {
  decision: 'approved' | 'rejected';
  reason: string | null;
  by_role: string;
  os_user: string | null;
  host: string | null;
  at: string;
  review: string | null;
}

/** The decisions on a prepared run (its id), the first first, each with its kept screen. */
export async function reviewsIn(h: PgHistory, prep: number): Promise<ReviewRow[]> {
  return (await h.rows(
    `SELECT decision, reason, by_role, os_user, host, at, review FROM approvals
     WHERE prep = ? AND decision <> 'sent' ORDER BY id`,
    [prep],
  )) as ReviewRow[];
}
