import { serviceStatusKind, statusKind } from './domain/statuses.js';
import {
  ApiError,
  ApprovalStateError,
  BusyError,
  CredentialsError,
  InternalError,
  InterruptedError,
  NetworkError,
  NotFoundError,
  OutcomeUnknownError,
  StateStoreError,
  UsageError,
} from './errors.js';
import { StateError } from './state/errors.js';

/** The exit codes of `payouts`, documented in the README. */
export const ExitCode = {
  ok: 0,
  internal: 1,
  usage: 2,
  credentials: 3,
  failed: 4,
  pending: 5,
  notFound: 6,
  unreachable: 7,
  busy: 8,
  /** The approval rule asks another person's approval, not given yet (docs/approvals.md). */
  awaitingApproval: 9,
  rejected: 10,
  expired: 11,
  interrupted: 130,
} as const;

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

/** Maps an error to the exit code that describes it. */
export function exitCodeForError(error: unknown): ExitCodeValue {
  if (error instanceof InternalError) return ExitCode.internal;
  if (error instanceof InterruptedError) return ExitCode.interrupted;
  if (error instanceof UsageError) return ExitCode.usage;
  if (error instanceof ApprovalStateError) {
    const { state } = error.approval;
    return state === 'rejected'
      ? ExitCode.rejected
      : state === 'expired'
        ? ExitCode.expired
        : ExitCode.awaitingApproval;
  }
  if (error instanceof BusyError) return ExitCode.busy;
  // The state database could not be used: nothing is wrong with the code, the run could not complete.
  if (error instanceof StateError) return ExitCode.unreachable;
  if (error instanceof CredentialsError) return ExitCode.credentials;
  if (error instanceof NotFoundError) return ExitCode.notFound;
  if (error instanceof OutcomeUnknownError) return ExitCode.unreachable;
  if (error instanceof NetworkError) return ExitCode.unreachable;
  if (error instanceof StateStoreError) return ExitCode.unreachable;
  if (error instanceof ApiError) return ExitCode.unreachable;
  return ExitCode.internal;
}

/**
 * Exit code for a set of send outcome statuses: failed, canceled, not sent (and the CLI's own
 * "outcome unknown", which always comes with exit 7 anyway) give 4 and beat pending; pending
 * and any status the interface does not document give 5; success alone gives 0.
 */
export function exitCodeForStatuses(statuses: Iterable<string>): ExitCodeValue {
  let pending = false;
  for (const s of statuses) {
    const kind = statusKind(s);
    if (kind === 'failed' || kind === 'not_sent' || kind === 'outcome_unknown') {
      return ExitCode.failed;
    }
    if (kind !== 'success') pending = true;
  }
  return pending ? ExitCode.pending : ExitCode.ok;
}

/** Exit code of one status the service reported on a lookup: an undocumented one gives 5. */
export function exitCodeForServiceStatus(status: string): ExitCodeValue {
  return serviceStatusKind(status) === 'undocumented'
    ? ExitCode.pending
    : exitCodeForStatuses([status]);
}

/** Picks the most important of several exit codes: 130 > 1 > 2 > 10 > 11 > 9 > 8 > 3 > 7 > 6 > 4 > 5 > 0. */
export function worstExitCode(codes: Iterable<ExitCodeValue>): ExitCodeValue {
  const rank: ExitCodeValue[] = [
    ExitCode.interrupted,
    ExitCode.internal,
    ExitCode.usage,
    ExitCode.rejected,
    ExitCode.expired,
    ExitCode.awaitingApproval,
    ExitCode.busy,
    ExitCode.credentials,
    ExitCode.unreachable,
    ExitCode.notFound,
    ExitCode.failed,
    ExitCode.pending,
  ];
  let best: ExitCodeValue = ExitCode.ok;
  for (const c of codes) {
    if (c === ExitCode.ok) continue;
    if (best === ExitCode.ok || rank.indexOf(c) < rank.indexOf(best)) best = c;
  }
  return best;
}
