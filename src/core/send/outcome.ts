/** The outcome of one payout of a run, as reported in tables, --json and --report. */
export interface PayoutOutcome {
  reference_id: string;
  /** success, pending, failed, canceled; or "not_sent" when it never reached the service. */
  status: string;
  /** The amount as written in the input (exact decimal text). */
  amount: string;
  currency: string;
  transaction_id?: string;
  charges?: number;
  message?: string;
  /** Sent by an earlier run (or an earlier attempt of this one) and not sent again. */
  sent_earlier?: boolean;
}

/** How many outcomes of each kind a run has. */
export interface OutcomeCounts {
  success: number;
  failed: number;
  pending: number;
  sentEarlier: number;
  notSent: number;
}

/** Counts outcomes: canceled, not sent and any unknown status count as failed. */
export function countOutcomes(outcomes: Iterable<PayoutOutcome>): OutcomeCounts {
  const c = { success: 0, failed: 0, pending: 0, sentEarlier: 0, notSent: 0 };
  for (const o of outcomes) {
    if (o.status === 'success') c.success += 1;
    else if (o.status === 'pending') c.pending += 1;
    else c.failed += 1;
    if (o.status === 'not_sent') c.notSent += 1;
    if (o.sent_earlier) c.sentEarlier += 1;
  }
  return c;
}
