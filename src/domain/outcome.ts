import { byRetry, chainKind } from './chain.js';
import { heldKind, type StatusKind } from './statuses.js';

/** The last retry of a failed payout's chain, as a send's results name it. */
export interface RetriedAs {
  reference_id: string;
  run_id: string;
  /** Its status as the history records it (unknown: in doubt). */
  status: string;
}

/** The outcome of one payout of a run, as reported in tables, --json and --report. */
export interface PayoutOutcome {
  reference_id: string;
  /**
   * success, pending, failed, canceled, or another status the service sent; or the CLI's own
   * "not_sent" (never reached the service) or "unknown" (outcome unknown).
   */
  status: string;
  /** The amount as written in the input (exact decimal text). */
  amount: string;
  currency: string;
  transaction_id?: string;
  charges?: number;
  message?: string;
  /** Sent by an earlier run (or an earlier attempt of this one) and not sent again. */
  sent_earlier?: boolean;
  /**
   * Sent earlier from somewhere this history has not seen: the service holds it (with the
   * same amount, currency and recipient) though it answered failed, or --check-service found it.
   */
  found_at_service?: boolean;
  /**
   * A payout that failed or was canceled earlier (its `status`), taken on by a retry: the last
   * retry of its chain. By the one rule it counts as that retry's state (outcomeKind).
   */
  retried_as?: RetriedAs;
}

/** What a retry's recorded status says of it, as the one rule reads it. */
function retryKind(r: RetriedAs | undefined) {
  return (
    r && {
      kind: heldKind({ state: r.status === 'unknown' ? 'unknown' : 'done', status: r.status }),
    }
  );
}

/**
 * What an outcome counts as (counts, exit codes, --failed-out), by the one rule for a failed
 * payout that its retry paid (src/domain/chain.ts): paid by its retry, a success; pending as
 * it, pending; else its own status's kind.
 */
export function outcomeKind(o: Pick<PayoutOutcome, 'status' | 'retried_as'>): StatusKind {
  return chainKind(o.status, retryKind(o.retried_as));
}

/** Whether a payout failed earlier and its retry paid it. */
export function paidByRetry(o: Pick<PayoutOutcome, 'status' | 'retried_as'>): boolean {
  return byRetry(o.status, retryKind(o.retried_as)) === 'paid_by_retry';
}

/** How many outcomes of each kind a run has. */
export interface OutcomeCounts {
  success: number;
  /** Failed or canceled, as the service stated. */
  failed: number;
  /** Of those failed, the canceled ones (told apart, as `status` tells them). */
  canceled: number;
  pending: number;
  /** Outcome unknown, or a status the interface does not document (e.g. "processing"). */
  unknown: number;
  sentEarlier: number;
  /** Of those sent earlier, the ones found at the service (see found_at_service). */
  foundAtService: number;
  /** Of those succeeded, the ones that failed and that their retry paid (see retried_as). */
  paidByRetry: number;
  /** Never applied: not sent, or refused whole by the service. */
  notSent: number;
}

/** Counts outcomes: canceled counts as failed, not sent apart; see statusKind for the rest. */
export function countOutcomes(outcomes: Iterable<PayoutOutcome>): OutcomeCounts {
  const c = {
    success: 0,
    failed: 0,
    canceled: 0,
    pending: 0,
    unknown: 0,
    sentEarlier: 0,
    foundAtService: 0,
    paidByRetry: 0,
    notSent: 0,
  };
  for (const o of outcomes) {
    const kind = outcomeKind(o);
    if (kind === 'success') c.success += 1;
    else if (kind === 'pending') c.pending += 1;
    else if (kind === 'failed') {
      c.failed += 1;
      if (o.status === 'canceled') c.canceled += 1;
    } else if (kind === 'not_sent') c.notSent += 1;
    else c.unknown += 1;
    if (o.sent_earlier) c.sentEarlier += 1;
    if (o.found_at_service) c.foundAtService += 1;
    if (paidByRetry(o)) c.paidByRetry += 1;
  }
  return c;
}
