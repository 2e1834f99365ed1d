/**
 * The service's later word on a payout the history holds (issue 47): what a lookup answered
 * after the payout's run, kept beside its result (the table `checks`), the latest word being
 * what every reader of the history takes as the payout's status (docs/history.md).
 */

/** What asked the service: `status` (or `status --watch`), or `reconcile`. */
export type CheckedBy = 'status' | 'status --watch' | 'reconcile';

/** One answer about one payout of a run (the run's id and the payout's row in it). */
export interface Check {
  run: number;
  row: number;
  /** False: "Payout not found", kept only of a payout the history records as paid or pending. */
  held: boolean;
  status: string | null;
  transaction_id: string | null;
  /** The record's `updated_at`, as the service gave it. */
  updated_at: string | null;
  /** When it was asked (ISO 8601, UTC). */
  checked_at: string;
  checked_by: CheckedBy;
}

/** When the service last answered about a payout, asked by what and whom, and if it held it. */
export interface Checked {
  at: string;
  /** `status`, `status --watch` or `reconcile`. */
  by: string;
  /** The database role that kept it (a shared history), else null. */
  role: string | null;
  /** The answer was "not found" of a payout recorded as paid or pending. */
  notHeld: boolean;
}
