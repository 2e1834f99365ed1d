/** The payout statuses the interface documents; any other status is an "unknown status". */
export const DOCUMENTED_STATUSES = ['success', 'pending', 'failed', 'canceled'] as const;

/** A status the interface documents. */
export type PayoutStatus = (typeof DOCUMENTED_STATUSES)[number];

/** The CLI's own status of a payout that never reached the service. */
export const NOT_SENT = 'not_sent';

/** The CLI's own status of a payout whose create request may or may not have been applied. */
export const OUTCOME_UNKNOWN = 'unknown';

/**
 * What a status means for counts, exit codes and --failed-out. `undocumented` is a status the
 * interface does not name (e.g. "processing"): not known to be final, so never counted as failed.
 */
export type StatusKind =
  | 'success'
  | 'pending'
  | 'failed'
  | 'not_sent'
  | 'outcome_unknown'
  | 'undocumented';

/** Whether the interface documents this (lower-cased) status. */
export function isDocumentedStatus(status: string): status is PayoutStatus {
  return (
    status === 'success' || status === 'pending' || status === 'failed' || status === 'canceled'
  );
}

/** The kind of a send outcome's status, which may be one of the CLI's own (not_sent, unknown). */
export function statusKind(status: string): StatusKind {
  switch (status) {
    case 'success':
    case 'pending':
      return status;
    case 'failed':
    case 'canceled':
      return 'failed';
    case NOT_SENT:
      return 'not_sent';
    case OUTCOME_UNKNOWN:
      return 'outcome_unknown';
    default:
      return 'undocumented';
  }
}

/** The kind of a status the service reported (a status lookup): the CLI's own names mean nothing there. */
export function serviceStatusKind(status: string): StatusKind {
  return isDocumentedStatus(status) ? statusKind(status) : 'undocumented';
}

/** Whether a payout of this kind belongs in --failed-out: it is known not to have been paid. */
export function isKnownUnpaid(kind: StatusKind): boolean {
  return kind === 'failed' || kind === 'not_sent';
}

/** Whether a payout of this kind is counted as unknown: its outcome or its status is not known. */
export function isUnknownKind(kind: StatusKind): boolean {
  return kind === 'outcome_unknown' || kind === 'undocumented';
}

/**
 * What the history says of a payout by one of its rows, as every reader of the history (the
 * send's decision, a chain, `runs`, the approver's screen) classifies it: no result is doubt
 * (in flight, or unknown); a result's status, in any case, is success, failed (canceled too),
 * or pending (pending, or a status the interface does not name: held, not final).
 */
export type HeldKind = 'success' | 'pending' | 'failed' | 'doubt';

/** The kind of a held row: its state (`done` once it has a result) and that result's status. */
export function heldKind(row: { state: string; status: string | null }): HeldKind {
  if (row.state !== 'done' || !row.status) return 'doubt';
  const status = row.status.toLowerCase();
  if (status === 'success') return 'success';
  return status === 'failed' || status === 'canceled' ? 'failed' : 'pending';
}

/** Whether a held row's status is canceled (a kind of failed), in any case. */
export function isCanceled(status: string | null): boolean {
  return status?.toLowerCase() === 'canceled';
}
