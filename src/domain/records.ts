/**
 * What a run's commit writes, as data rather than statements: the local database applies a
 * record with its own statements, and a shared history (src/state/pg/) applies the same
 * records to its run in one transaction of its own.
 */

/** A stated result by reference: [reference, status, transaction id, charges, message]. */
export type StatedByRef = [string, string, string | null, string | null, string | null];

/** One thing a commit writes. */
export type JournalRecord =
  /**
   * The intent of request `req`: these rows are in flight as of `at`, and were in a request
   * for good (an attempt, recorded by `session`: the store's word for who writes).
   */
  | { kind: 'intent'; req: number; at: string; rows: readonly number[]; session: string }
  /** Results read back, by reference. */
  | { kind: 'done'; req: number; at: string; list: StatedByRef[] }
  /** Seen by the service, status not known: in flight, unless settled. */
  | { kind: 'seen'; req: number; at: string; refs: string[] }
  /**
   * The request provably did not apply (req -1: whichever request it was); a request of
   * `session` itself is withdrawn, which no other session can do.
   */
  | { kind: 'not-applied'; req: number; at: string; refs: string[]; why: string; session: string }
  /** The outcome could not be established. */
  | { kind: 'unknown'; at: string; refs: string[]; why: string }
  /** Rows of `results`, 8 values each: run, row, req, status, transaction id, charges, message, at. */
  | { kind: 'results'; values: unknown[] }
  /** Rows of `reports`, 7 values each: run, row, status, transaction id, charges, message, sent earlier. */
  | { kind: 'reports'; values: unknown[] }
  /** The run's highest request id so far. */
  | { kind: 'touch'; lastReq: number; at: string };

/** Where a run's commits go as well as the local database: resolves once they are durable there. */
export interface JournalMirror {
  apply(records: JournalRecord[]): Promise<void>;
}

/** A staged payout as the local database holds it. */
export interface StagedPayout {
  row: number;
  reference_id: string;
  file: string | null;
  line: number | null;
  location: string | null;
  amount: string;
  currency: string;
  recipient: string;
  description: string | null;
  hash: string | null;
  hash_version: number;
  /** The reference of the payout this row retries (null: none). */
  retry_of: string | null;
}
