/**
 * The service's later word on the payouts a history holds (`checks`, src/domain/checks.ts),
 * written and read the same way in both stores through a reader and a writer of portable SQL:
 * the payouts of given references (a probe of `payouts_reference` each), and checks appended
 * many to a statement. Two people checking at once is fine: rows are only ever added, and the
 * latest of a payout's is its word.
 */
import type { Check } from '../domain/checks.js';
import type { PayoutRequest } from '../domain/payout.js';
import type { Dialect } from './dialect.js';
import { serviceId, serviceIdOf } from './hash.js';
import { CHECK_ROWS, jsonTexts, rowsStatements } from './journal-sql.js';
import type { RowReader, RowWriter } from './run-counts.js';

/** A payout of a run of the service, as the history holds it now (the view `journal`). */
export interface HeldPayout {
  /** The run's row id and the payout's row in it: where a check of it goes. */
  run: number;
  row: number;
  run_id: string;
  client_id: string | null;
  payout: PayoutRequest;
  /** in_flight, unknown or done (a result, or a word the service gave since). */
  state: string;
  status: string | null;
  transaction_id: string | null;
  /** The latest word's time and what asked (null: never checked since its run). */
  checked_at: string | null;
  checked_by: string | null;
  /** The latest word was "not found". */
  missing: boolean;
}

/** The columns a HeldPayout is read from, of the view `journal` as j and `runs` as r. */
export const HELD_COLUMNS = `j.run, j.row, r.run_id, r.client_id, j.reference_id, j.amount,
    j.currency, j.recipient, j.description, j.state, j.status, j.transaction_id, j.checked_at,
    j.checked_by, j.missing`;

/** A row of HELD_COLUMNS. */
export interface HeldColumns {
  run: number;
  row: number;
  run_id: string;
  client_id: string | null;
  reference_id: string;
  amount: string | null;
  currency: string | null;
  recipient: string | null;
  description: string | null;
  state: string;
  status: string | null;
  transaction_id: string | null;
  checked_at: string | null;
  checked_by: string | null;
  missing: number | string | null;
}

/** A HeldPayout from its columns. */
export function heldPayoutOf(r: HeldColumns): HeldPayout {
  const payout: PayoutRequest = {
    reference_id: r.reference_id,
    amount: r.amount ?? '',
    currency: r.currency ?? '',
    recipient: r.recipient ?? '',
    ...(r.description ? { description: r.description } : {}),
  };
  return {
    run: Number(r.run),
    row: Number(r.row),
    run_id: r.run_id,
    client_id: r.client_id,
    payout,
    state: r.state,
    status: r.status,
    transaction_id: r.transaction_id,
    checked_at: r.checked_at,
    checked_by: r.checked_by,
    missing: Number(r.missing ?? 0) === 1,
  };
}

/** References looked up per query. */
const PER_QUERY = 5_000;

/**
 * The payouts the runs of a service hold under these references, sent (in flight, unknown or
 * done), in run order: each reference a probe of `payouts_reference`.
 */
export async function heldPayouts(
  read: RowReader,
  dialect: Dialect,
  serviceKey: string,
  refs: readonly string[],
): Promise<HeldPayout[]> {
  const sql = `SELECT ${HELD_COLUMNS}
    FROM ${jsonTexts(dialect)} v JOIN journal j ON j.reference_id = v.value
      JOIN runs r ON r.id = j.run
    WHERE r.service_id = ? AND r.run_id IS NOT NULL AND j.state IN ('in_flight', 'done', 'unknown')
    ORDER BY j.run, j.row`;
  const out: HeldPayout[] = [];
  const unique = [...new Set(refs)];
  for (let k = 0; k < unique.length; k += PER_QUERY) {
    const page = JSON.stringify(unique.slice(k, k + PER_QUERY));
    const rows = (await read(sql, [page, serviceId(serviceKey)])) as HeldColumns[];
    out.push(...rows.map(heldPayoutOf));
  }
  return out;
}

/** Appends checks, many to a statement (one on PostgreSQL). */
export async function recordChecks(
  write: RowWriter,
  dialect: Dialect,
  checks: readonly Check[],
): Promise<void> {
  const values: unknown[] = [];
  for (const c of checks) {
    values.push(c.run, c.row, c.held ? 1 : 0, c.status, c.transaction_id);
    values.push(c.updated_at, c.checked_at, c.checked_by);
  }
  const statements = rowsStatements(CHECK_ROWS, values, dialect);
  // state.db: one transaction (one fsync) for a page's checks, not one per statement.
  const tx = dialect === 'sqlite' && statements.length > 1;
  if (tx) await write('BEGIN IMMEDIATE', []);
  try {
    for (const s of statements) await write(s.sql, s.params);
  } catch (error) {
    if (tx) await write('ROLLBACK', []).catch(() => {});
    throw error;
  }
  if (tx) await write('COMMIT', []);
}

/** A reference a service's runs hold, with the run that holds it and when it was sent. */
export interface HeldReference {
  reference_id: string;
  run_id: string;
  sent_at: string | null;
}

/** The references of `refs` that runs of `service` (a base URL or "sandbox") hold. */
export async function heldReferences(
  read: RowReader,
  service: string,
  refs: string[],
): Promise<HeldReference[]> {
  const held: HeldReference[] = [];
  for (const ref of refs) {
    const rows = (await read(
      `SELECT j.reference_id, r.run_id, j.sent_at FROM journal j JOIN runs r ON r.id = j.run
       WHERE j.reference_id = ? AND r.service_id = ? AND r.run_id IS NOT NULL LIMIT 1`,
      [ref, serviceIdOf(service)],
    )) as HeldReference[];
    if (rows[0]) held.push(rows[0]);
  }
  return held;
}
