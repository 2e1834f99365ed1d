/** The --json document of `payouts status` (docs/schema/status.schema.json): its keys, one result per reference. */
import type { PayoutRecord } from '../../api/types.js';
import { serviceStatusKind } from '../../domain/statuses.js';
import { ExitCode } from '../../exit-codes.js';
import { formatServiceAmount } from '../../money/amount.js';
import { isoMinorUnits } from '../../money/currencies.js';
import { type ErrorObject, serviceStatusJson, statusDocHead } from '../documents.js';
import { retriedJson } from '../runs/payouts.js';
import { chainJson, counted, paidByRetryCount } from './chains.js';
import type { LookupOutcome } from './lookup.js';
import type { NotFoundContext } from './near.js';

/** The message of a not-found reference, as the service words it. */
export const NOT_FOUND_MESSAGE = 'Payout not found';

/** The interface's fields of a payout record (its part 2.5): --json always has them. */
export const RECORD_FIELDS = [
  'reference_id',
  'status',
  'amount',
  'currency',
  'created_at',
  'updated_at',
  'transaction_id',
  'recipient',
  'description',
] as const;

/** A field the service sent as text (or a number, as services differ), else null. */
function textOrNull(value: unknown): string | null {
  if (typeof value === 'string') return value;
  return typeof value === 'number' && Number.isFinite(value) ? String(value) : null;
}

/**
 * The record as --json gives it: as the service sent it, every field it has, but the
 * interface's fields are always there (null when the service left one out, or sent one that
 * is not text), the amount is a decimal string like every amount of ours (in the currency's
 * decimals when it is known), and the status is as `status` gives it (statusJson).
 */
function recordJson(record: PayoutRecord): Record<string, unknown> {
  const doc: Record<string, unknown> = { ...record };
  for (const field of RECORD_FIELDS) doc[field] = textOrNull(record[field]);
  const { amount, currency } = record;
  const cur = typeof currency === 'string' ? currency.toUpperCase() : '';
  doc.amount =
    typeof amount === 'number' && Number.isFinite(amount)
      ? formatServiceAmount(amount, isoMinorUnits(cur))
      : typeof amount === 'string' && /^-?\d+(\.\d+)?$/.test(amount)
        ? amount
        : null;
  doc.status = serviceStatusJson(record.status).status;
  return doc;
}

/**
 * What the history says of a failed payout: whether it sent it (a retry sent from a machine
 * whose history this is not cannot be seen), the service's reason, and the retry that took it
 * on, as the history holds it. Absent when the history could not be read for it.
 */
export function historyJson(ref: string, status: string, ctx: NotFoundContext | undefined) {
  if (serviceStatusKind(status) !== 'failed') return {};
  const reason = ctx?.reasons?.get(ref);
  const retried = ctx?.retried?.get(ref);
  const held = ctx?.held === undefined ? undefined : ctx.held.has(ref);
  if (held === undefined && reason === undefined && !retried) return {};
  return {
    history: {
      held: held ?? null,
      reason: reason ?? null,
      retried: retried ? retriedJson(retried) : null,
    },
  };
}

/** The JSON form of one outcome: every key present, null where it does not apply. */
export function outcomeJson(o: LookupOutcome, ctx?: NotFoundContext) {
  if (o.kind === 'found') {
    return {
      reference_id: o.reference_id,
      outcome: 'found',
      ...serviceStatusJson(o.record.status),
      error: null,
      record: recordJson(o.record),
      ...chainJson(o, ctx),
      ...historyJson(o.reference_id, o.record.status, ctx),
    };
  }
  const error = o.kind === 'not_found' ? NOT_FOUND_MESSAGE : o.error.message;
  return {
    reference_id: o.reference_id,
    outcome: o.kind,
    status: null,
    service_status: null,
    error,
    record: null,
    retried_as: null,
    paid_by_retry: false,
  };
}

/** What a status document says besides its results. */
export interface StatusDocFacts {
  watch: boolean;
  timedOut: boolean;
  exitCode: number;
  error: ErrorObject;
  /** What the history says of the references (near ones, reasons, retries). */
  history?: NotFoundContext;
}

/** Counts of a status document: by documented status, not found, error, and any other status. */
function statusCounts(outcomes: LookupOutcome[]) {
  const c = { success: 0, pending: 0, failed: 0, unknown: 0, notFound: 0, error: 0 };
  for (const o of outcomes) {
    if (o.kind === 'not_found') c.notFound += 1;
    else if (o.kind === 'error') c.error += 1;
    else {
      const kind = serviceStatusKind(o.record.status);
      if (kind === 'success' || kind === 'pending' || kind === 'failed') c[kind] += 1;
      else c.unknown += 1;
    }
  }
  return c;
}

/** The --json document of `payouts status`: its fixed keys, then one result per reference. */
export function statusDocument(outcomes: LookupOutcome[], facts: StatusDocFacts) {
  // Each payout counted by its chain: a failed one its retry paid is a success.
  const c = statusCounts(outcomes.map((o) => counted(o, facts.history)));
  return {
    ...statusDocHead({ watch: facts.watch }),
    exit_code: facts.exitCode,
    interrupted: facts.exitCode === ExitCode.interrupted,
    timed_out: facts.timedOut,
    reference_count: outcomes.length,
    success_count: c.success,
    paid_by_retry_count: paidByRetryCount(outcomes, facts.history),
    pending_count: c.pending,
    failed_count: c.failed,
    unknown_count: c.unknown,
    not_found_count: c.notFound,
    error_count: c.error,
    error: facts.error,
    results: outcomes.map((o) => outcomeJson(o, facts.history)),
  };
}
