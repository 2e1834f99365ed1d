/**
 * What reconcile makes of each payout it looked up (pure): where the payout stands now, by
 * its chain (a failed payout its retry paid is paid), and what changed in the service's word
 * since the history's: a pending payout settled, a paid one returned, a payout recorded as
 * paid that the service does not hold. Then the counts and the exit code of the README's
 * meanings: 7 a lookup unanswered, 4 any failed, canceled or not held, 5 any pending, else 0.
 */
import type { HeldRef } from '../../domain/chain.js';
import type { Check } from '../../domain/checks.js';
import { heldKind, isCanceled, statusKind } from '../../domain/statuses.js';
import { ExitCode, type ExitCodeValue, worstExitCode } from '../../exit-codes.js';
import type { ScopePayout } from '../../state/index.js';
import { outcomeKind } from '../../domain/outcome.js';
import type { Fate, SentEarlier } from '../send/fates.js';
import type { LookupOutcome } from '../status/lookup.js';

/** Where a payout stands after reconcile: paid (by itself or its retry), failed, and so on. */
export type Standing = 'paid' | 'failed' | 'canceled' | 'pending' | 'not_held' | 'unanswered';

/**
 * What changed in the service's word: a pending (or in doubt) payout became final; a paid one
 * failed or was canceled (a return); one recorded as paid or pending is not held by the
 * service; one not held is held again; any other change of a final status.
 */
export type Change = 'settled' | 'returned' | 'not_held' | 'held_again' | 'changed';

/** One payout as reconcile judged it. */
export interface Reconciled {
  payout: ScopePayout;
  /** The status the history held before (null: in doubt), and whether it was last not held. */
  was: { status: string | null; missing: boolean };
  standing: Standing;
  /** The service's status now (null: not found, or not answered). */
  status: string | null;
  transaction_id: string | null;
  change: Change | null;
  /** The retry that took a failed payout on, whatever became of it. */
  retried?: HeldRef;
  /** Why a lookup went unanswered. */
  error?: Error;
  /** Why the payout the service holds under the reference is another. */
  other?: string;
  /** What was kept of the answer (none: nothing to keep). */
  check?: Check;
}

/** The status a row's fate holds, when it holds one. */
function fateStatus(fate: Fate | undefined): string | null {
  if (fate?.kind === 'sent-earlier') return fate.earlier.outcome.status;
  if (fate?.kind === 'refused' && fate.refusal.kind === 'failed-earlier')
    return fate.refusal.earlier.outcome.status;
  return null;
}

/** The retry of a failed payout, as its fate names it. */
function retriedOf(fate: Fate | undefined): HeldRef | undefined {
  if (fate?.kind === 'refused' && fate.refusal.kind === 'failed-earlier') return fate.refusal.tail;
  return undefined;
}

/** Where a status leaves a payout. */
function standingOfStatus(status: string): Standing {
  const kind = statusKind(status.toLowerCase());
  if (kind === 'success') return 'paid';
  if (kind === 'failed') return isCanceled(status) ? 'canceled' : 'failed';
  return 'pending';
}

/** Where a payout stands, from its fate after the answers and what was kept of its answer. */
function standingOf(fate: Fate | undefined, answer: LookupOutcome | undefined, check?: Check) {
  if (answer?.kind === 'error') return 'unanswered';
  if (check && !check.held) return 'not_held';
  if (fate?.kind === 'sent-earlier' && fate.how === 'retried') {
    // The one rule (src/domain/chain.ts): paid by its retry, paid; pending as it, pending.
    return outcomeKind(fate.earlier.outcome) === 'success' ? 'paid' : 'pending';
  }
  if (fate?.kind === 'refused' && fate.refusal.kind === 'other-payout') return 'not_held';
  if (fate?.kind === 'look-up' || (fate?.kind === 'refused' && fate.refusal.kind === 'unanswered'))
    return 'unanswered';
  const status = answer?.kind === 'found' ? answer.record.status : fateStatus(fate);
  return status === null ? 'pending' : standingOfStatus(status);
}

/** What changed in the service's word on a payout (null: nothing). */
function changeOf(p: ScopePayout, answer: LookupOutcome | undefined, check?: Check): Change | null {
  if (check && !check.held) return p.missing ? null : 'not_held';
  if (answer?.kind !== 'found' || !check) return null;
  if (p.missing) return 'held_again';
  const before = p.state === 'done' ? p.status : null;
  const now = answer.record.status;
  const was = heldKind({ state: p.state, status: before });
  const is = heldKind({ state: 'done', status: now });
  if (was === 'pending' || was === 'doubt') return is === 'pending' ? null : 'settled';
  if (was === 'success' && is === 'failed') return 'returned';
  return before?.toLowerCase() === now.toLowerCase() ? null : 'changed';
}

/** Judges one payout of the scope from its fate, its answer, and what was kept of it. */
export function judge(
  p: ScopePayout,
  fate: Fate | undefined,
  answer: LookupOutcome | undefined,
  check?: Check,
): Reconciled {
  const found = answer?.kind === 'found' ? answer.record : undefined;
  const retried = retriedOf(fate);
  return {
    payout: p,
    was: { status: p.state === 'done' ? p.status : null, missing: p.missing },
    standing: standingOf(fate, answer, check),
    status: found ? found.status : null,
    transaction_id:
      typeof found?.transaction_id === 'string' ? found.transaction_id : p.transaction_id,
    change: changeOf(p, answer, check),
    ...(retried ? { retried } : {}),
    ...(fate?.kind === 'sent-earlier' && fate.earlier.outcome.retried_as
      ? { retried: retriedAsRef(fate.earlier) }
      : {}),
    ...(answer?.kind === 'error' ? { error: answer.error } : {}),
    ...(fate?.kind === 'refused' && fate.refusal.kind === 'other-payout'
      ? { other: fate.refusal.why }
      : {}),
    ...(check ? { check } : {}),
  };
}

/** The retry that paid a failed payout (or holds it pending), as a chain's link. */
function retriedAsRef(e: SentEarlier): HeldRef {
  const r = e.outcome.retried_as!;
  return {
    ref: r.reference_id,
    retryOf: null,
    runId: r.run_id,
    kind: heldKind({ state: 'done', status: r.status }),
    status: r.status,
    transactionId: null,
    message: null,
    charges: null,
    at: e.at,
  };
}

/** Whether a payout goes in the retry file: failed or canceled, and no retry took it on. */
export function toRetry(r: Reconciled): boolean {
  return (r.standing === 'failed' || r.standing === 'canceled') && !r.retried;
}

/** How many payouts stand where, and changed how. */
export type Standings = Record<Standing, number>;
export type Changes = Record<Change, number>;

/** The counts of a reconcile. */
export function countsOf(rows: readonly Reconciled[]): { now: Standings; changes: Changes } {
  const now: Standings = {
    paid: 0,
    failed: 0,
    canceled: 0,
    pending: 0,
    not_held: 0,
    unanswered: 0,
  };
  const changes: Changes = { settled: 0, returned: 0, not_held: 0, held_again: 0, changed: 0 };
  for (const r of rows) {
    now[r.standing] += 1;
    if (r.change) changes[r.change] += 1;
  }
  return { now, changes };
}

/** The exit code of where the payouts stand (an interruption is the caller's). */
export function exitCodeOf(now: Standings): ExitCodeValue {
  const codes: ExitCodeValue[] = [];
  if (now.unanswered) codes.push(ExitCode.unreachable);
  if (now.failed || now.canceled || now.not_held) codes.push(ExitCode.failed);
  if (now.pending) codes.push(ExitCode.pending);
  return worstExitCode(codes);
}
