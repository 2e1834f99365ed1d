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

/**
 * What each exit code means, as the README's table says it (Markdown): the one source of the
 * README's table and of every command's "Exit codes" in its --help (test/unit/exit-codes.test.ts).
 */
export const EXIT_CODE_MEANINGS: ReadonlyArray<readonly [ExitCodeValue, string]> = [
  [ExitCode.ok, 'every payout succeeded'],
  [
    ExitCode.internal,
    'internal error, or a run that ended with work unfinished (a bug: report it with `--debug` output)',
  ],
  [
    ExitCode.usage,
    "usage error, invalid input, or a shared history's refusal (a grant, its rules); nothing was sent",
  ],
  [
    ExitCode.credentials,
    "credentials (or a shared history's login) missing, unusable or rejected (or this machine's IP is not allowed)",
  ],
  [ExitCode.failed, 'a payout failed, was canceled or was not sent'],
  [
    ExitCode.pending,
    'a payout is still pending, or has a status the service does not document; none failed',
  ],
  [ExitCode.notFound, 'payout not found (`status`)'],
  [
    ExitCode.unreachable,
    "service or shared history unreachable, its answer unreadable, a payout's outcome unknown, or [`state.db` unusable](docs/state-db.md)",
  ],
  [
    ExitCode.busy,
    'another send to the service is running, or others wait for it (`--wait` waits in turn); nothing was sent',
  ],
  [
    ExitCode.awaitingApproval,
    "the [approval rule](docs/approvals.md) asks another person's approval, not given yet (or given to other payouts); nothing was sent",
  ],
  [
    ExitCode.rejected,
    'the prepared run was rejected (the reason is in the message); nothing was sent',
  ],
  [ExitCode.expired, 'the prepared run or its approval expired; nothing was sent'],
  [ExitCode.interrupted, 'interrupted (Ctrl-C, SIGTERM, SIGHUP, Ctrl-Break, a killed `npx`)'],
];

/**
 * Whether running the same command again can help, per code (the README's "Run again?" column):
 * a CI job retries on "yes" and stops on "no"; "later" once something else happened (a
 * pending payout settled: `payouts status`; another person approved).
 */
export const EXIT_CODE_RETRY: Readonly<Record<ExitCodeValue, 'yes' | 'no' | 'later' | ''>> = {
  0: 'no',
  1: 'no',
  2: 'no',
  3: 'no',
  4: 'no',
  5: 'later',
  6: 'no',
  7: 'yes',
  8: 'yes',
  9: 'later',
  10: 'no',
  11: 'no',
  130: 'yes',
};

/** The codes each command can end with (besides 1 and 130, which any can), by its path. */
export const COMMAND_EXIT_CODES: Readonly<Record<string, readonly ExitCodeValue[]>> = {
  send: [0, 2, 3, 4, 5, 7, 8, 9, 10, 11],
  status: [0, 2, 3, 4, 5, 6, 7],
  reconcile: [0, 2, 3, 4, 5, 7],
  'config check': [0, 2, 3, 7],
  'config remove': [0, 2],
  approve: [0, 2, 7, 10, 11],
};

/**
 * What 0 means for a command that sends nothing: "every payout succeeded" is `send`'s and
 * `status`'s word; `approve` and the config commands succeed at something else.
 */
const OWN_ZERO: Readonly<Record<string, string>> = {
  'config check': 'the service accepted the credentials (and the shared history was reached)',
  'config remove': 'the profile was removed',
  approve: 'the decision was recorded',
  reconcile: 'every payout looked up is final and paid (by itself or its retry)',
};

/** The README's table of exit codes, as Markdown. */
export function exitCodeTable(): string {
  const rows = EXIT_CODE_MEANINGS.map(
    ([code, meaning]) => `| ${code} | ${meaning} | ${EXIT_CODE_RETRY[code]} |`,
  );
  return ['| Code | Meaning | Run again? |', '|---|---|---|', ...rows].join('\n');
}

/** A meaning as plain text for --help: Markdown's links and code marks taken out. */
function plainMeaning(meaning: string, code: ExitCodeValue): string {
  const again = EXIT_CODE_RETRY[code] === 'yes' && code !== ExitCode.busy ? ': run again' : '';
  return (meaning + again).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replaceAll('`', '');
}

/**
 * The "Exit codes:" of a --help: each code `command` can end with (every code for the root,
 * when none is named) with its meaning, 0 in that command's own words.
 */
export function exitCodesHelp(command?: string): string {
  const codes = command === undefined ? undefined : COMMAND_EXIT_CODES[command];
  const listed = codes ? [...codes, ExitCode.internal, ExitCode.interrupted] : undefined;
  const shown = EXIT_CODE_MEANINGS.filter(([c]) => listed === undefined || listed.includes(c));
  const own = command === undefined ? undefined : OWN_ZERO[command];
  const lines = shown.map(
    ([c, meaning]) =>
      `  ${String(c).padEnd(3)}  ${plainMeaning(c === ExitCode.ok && own ? own : meaning, c)}`,
  );
  const rank = RANK.filter((c) => listed === undefined || listed.includes(c)).join(' > ');
  return `Exit codes (when several apply: ${rank}):\n${lines.join('\n')}\n`;
}

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

/** The exit codes by importance, most important first (0 is the least). */
const RANK: readonly ExitCodeValue[] = [
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

/** Picks the most important of several exit codes: 130 > 1 > 2 > 10 > 11 > 9 > 8 > 3 > 7 > 6 > 4 > 5 > 0. */
export function worstExitCode(codes: Iterable<ExitCodeValue>): ExitCodeValue {
  const rank = RANK;
  let best: ExitCodeValue = ExitCode.ok;
  for (const c of codes) {
    if (c === ExitCode.ok) continue;
    if (best === ExitCode.ok || rank.indexOf(c) < rank.indexOf(best)) best = c;
  }
  return best;
}
