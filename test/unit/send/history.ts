import type { PayoutRequest } from '../../../src/api/types.js';
import type { LookupOutcome } from '../../../src/core/status/lookup.js';
import type { PriorRow } from '../../../src/domain/history.js';
import { payoutHash, type StagedRetry } from '../../../src/state/index.js';

// What the decision's unit tests build histories and answers from.

/** A payout of 1.00 EUR (unless `amount`) under `ref`. */
export const payout = (ref: string, amount = '1.00'): PayoutRequest => ({
  reference_id: ref,
  amount,
  currency: 'EUR',
  recipient: `${ref.toLowerCase()}@ex.com`,
});

/**
 * A held row of staged row `row` for reference `ref`, paid in run `run-a` under Client-Id
 * `key-1` unless `at` says otherwise; a row of its chain with `via` (and the staged payout).
 */
export function held(row: number, ref: string, at: Partial<PriorRow> = {}): PriorRow {
  const p = payout(ref);
  return {
    row,
    payout: p,
    run_id: 'run-a',
    client_id: 'key-1',
    hash: payoutHash(p),
    hash_version: 2,
    state: 'done',
    req: 1,
    sent_at: '2026-11-24T12:00:00.000Z',
    status: 'success',
    transaction_id: `T-${ref}`,
    charges: null,
    message: null,
    ...at,
  };
}

/** A held row of the chain of staged row `row` (whose payout is `staged`), for reference `ref`. */
export function link(
  row: number,
  staged: string,
  ref: string,
  at: Partial<PriorRow> = {},
): PriorRow {
  return { ...held(row, ref, at), payout: payout(staged), via: ref };
}

/** A staged row retrying `original`, under `ref`. */
export const retry = (row: number, ref: string, original: string, more = {}): StagedRetry => ({
  row,
  reference_id: ref,
  retry_of: original,
  file: 'retry.csv',
  location: `line ${row + 2}`,
  ...more,
});

/** The service holds `ref` in `status` (1.00 EUR unless `amount`). */
export const found = (ref: string, status = 'success', amount = 1): LookupOutcome => ({
  reference_id: ref,
  kind: 'found',
  record: { reference_id: ref, status, transaction_id: `T-${ref}`, amount, currency: 'EUR' },
});
/** The service holds no payout under `ref`. */
export const missing = (ref: string): LookupOutcome => ({ reference_id: ref, kind: 'not_found' });
/** The service did not answer about `ref`. */
export const failing = (ref: string): LookupOutcome => ({
  reference_id: ref,
  kind: 'error',
  error: new Error('HTTP 503'),
});
/** The answers, by reference. */
export const answers = (...o: LookupOutcome[]) => new Map(o.map((x) => [x.reference_id, x]));
