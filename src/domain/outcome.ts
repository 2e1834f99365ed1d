import { statusKind } from './statuses.js';

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
    notSent: 0,
  };
  for (const o of outcomes) {
    const kind = statusKind(o.status);
    if (kind === 'success') c.success += 1;
    else if (kind === 'pending') c.pending += 1;
    else if (kind === 'failed') {
      c.failed += 1;
      if (o.status === 'canceled') c.canceled += 1;
    } else if (kind === 'not_sent') c.notSent += 1;
    else c.unknown += 1;
    if (o.sent_earlier) c.sentEarlier += 1;
    if (o.found_at_service) c.foundAtService += 1;
  }
  return c;
}
