import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { PayoutRequest } from '../api/types.js';
import { STATE_DB, type StateDb } from './db.js';
import { serviceId } from './hash.js';
import { type PayoutRow, payoutOf } from './run-state.js';

/** One of a run's staged payouts that an earlier run of the same service sent. */
export interface PriorRow {
  row: number;
  payout: PayoutRequest;
  /** The run that holds the state. */
  run_id: string;
  /** That run's payout hash for the reference, and its version (null: not known). */
  hash: string | null;
  hash_version: number;
  state: 'in_flight' | 'done' | 'unknown';
  req: number | null;
  sent_at: string | null;
  status: string | null;
  transaction_id: string | null;
  charges: string | null;
  message: string | null;
}

/**
 * What the runs of a service hold about the references of a run's staged rows: one indexed
 * lookup per row, on (reference_id, run). `history` names the schema the runs are in, so a
 * dry run can stage its rows in a scratch database and attach the state database read-only.
 */
export function priorRows(
  db: StateDb,
  stagedRun: number,
  serviceKey: string,
  history = 'main',
): PriorRow[] {
  const rows = db
    .prepare(
      `SELECT m.row, m.reference_id, m.amount, m.currency, m.recipient, m.description,
         r.run_id, o.hash, o.hash_version, o.state, o.req, o.sent_at,
         o.status, o.transaction_id, o.charges, o.message
       FROM main.payouts m
       JOIN ${history}.payouts o ON o.reference_id = m.reference_id
       JOIN ${history}.runs r ON r.id = o.run
       WHERE m.run = ? AND r.service_id = ? AND o.state IN ('in_flight', 'done', 'unknown')
       ORDER BY m.row, o.run`,
    )
    .all(stagedRun, serviceId(serviceKey)) as Array<PayoutRow & Omit<PriorRow, 'payout'>>;
  return rows.map((r) => ({
    row: r.row,
    payout: payoutOf(r),
    run_id: r.run_id,
    hash: r.hash,
    hash_version: r.hash_version,
    state: r.state,
    req: r.req,
    sent_at: r.sent_at,
    status: r.status,
    transaction_id: r.transaction_id,
    charges: r.charges,
    message: r.message,
  }));
}

/**
 * Attaches a state folder's database to a scratch database as `history`, for reading only;
 * false when there is none yet (nothing was ever sent from this folder).
 */
export function attachHistory(db: StateDb, stateDir: string): boolean {
  const path = join(stateDir, STATE_DB);
  if (!existsSync(path)) return false;
  // A scratch database locks exclusively; the state database must stay open to other runs.
  db.exec('PRAGMA locking_mode = NORMAL');
  db.prepare('ATTACH DATABASE ? AS history').run(path);
  db.exec('PRAGMA query_only = 1');
  return true;
}
