/**
 * What `payouts reconcile` shows: the payouts that changed or need attention as a table on
 * stdout (on a pipe, tab-separated; its `now` column one word), a payout recorded as paid
 * that the service does not hold as an error line each, the counts; or its --json document
 * (docs/schema/reconcile.schema.json).
 */
import type { ChalkInstance } from 'chalk';
import { ExitCode, type ExitCodeValue } from '../../exit-codes.js';
import { moneyText } from '../../money/amount.js';
import { count, displayText } from '../../output/display.js';
import { type Output, rawListItem } from '../../output/output.js';
import { documentHead, type ErrorObject, serviceStatusJson } from '../documents.js';
import { retriedJson } from '../runs/payouts.js';
import type { FailedOut } from './failed-out.js';
import { type Changes, countsOf, type Reconciled, type Standing, type Standings } from './judge.js';
import type { Scope } from './reconcile.js';

/** What a reconcile's output says besides its rows. */
export interface ReconcileView {
  /** The service: its base URL, or "sandbox". */
  service: string;
  scope: Scope;
  /** --run: the run's id, as found. */
  runId?: string;
  total: number;
  exitCode: ExitCodeValue;
  error: ErrorObject;
  failedOut: FailedOut | null;
}

/** The order the table lists payouts in: not held first, then those not paid, then the rest. */
const ORDER: Record<Standing, number> = {
  not_held: 0,
  failed: 1,
  canceled: 2,
  unanswered: 3,
  pending: 4,
  paid: 5,
};

/** The words of a change, for the table. */
const CHANGE_WORDS = {
  settled: 'settled',
  returned: 'returned',
  not_held: 'not held',
  held_again: 'held again',
  changed: 'changed',
} as const;

/** The status the history held before, as the table shows it. */
function recordedText(r: Reconciled): string {
  const s = r.was.status ?? 'in doubt';
  return r.was.missing ? `${s} (not held)` : s;
}

/** The standing of a payout, coloured. */
function standingText(r: Reconciled, c: ChalkInstance): string {
  const s = r.standing;
  if (s === 'paid') return c.green(s);
  if (s === 'pending') return c.yellow(s);
  return c.red(s);
}

/** Whether a payout is listed: it changed, or is not paid and final. */
function listed(r: Reconciled): boolean {
  return r.change !== null || r.standing !== 'paid';
}

/** The table of the payouts that changed or need attention. */
async function printTable(rows: readonly Reconciled[], output: Output): Promise<void> {
  const shown = rows.filter(listed).sort((a, b) => ORDER[a.standing] - ORDER[b.standing]);
  if (!shown.length) return;
  const c = output.color;
  const body = shown.map((r) => [
    displayText(r.payout.payout.reference_id),
    r.payout.run_id,
    moneyText(
      displayText(r.payout.payout.currency),
      r.payout.payout.amount,
      output.stdoutIsTerminal,
    ),
    displayText(recordedText(r)),
    standingText(r, c),
    r.change ? CHANGE_WORDS[r.change] : '',
    displayText(r.retried?.ref ?? ''),
    displayText(r.transaction_id ?? ''),
  ]);
  const head = ['reference_id', 'run', 'amount', 'recorded', 'now', 'change', 'retried_as'];
  output.print(
    await output.table([...head, 'transaction_id'], body, {
      drop: ['transaction_id', 'retried_as', 'run'],
    }),
  );
}

/** The loud line of a payout recorded as paid that the service does not hold. */
function notHeldLine(r: Reconciled): string {
  const p = r.payout;
  const what = `${displayText(p.payout.reference_id)} (run ${p.run_id}, ${moneyText(displayText(p.payout.currency), p.payout.amount)} to ${displayText(p.payout.recipient)})`;
  const why = r.other
    ? `the service holds another payout under its reference (${displayText(r.other)})`
    : 'the service answers "Payout not found"';
  return `recorded as paid but not held by the service: ${what}: the history says "${displayText(r.was.status ?? '')}", ${why}. Nothing is sent on its own: find out who recorded it (\`payouts runs show ${p.run_id}\`) and ask the service before paying it under a new reference`;
}

/** "3 settled (pending -> success or failed), 1 returned": the changes, those that happened. */
function changesText(changes: Changes): string {
  const parts = [
    changes.settled && `${changes.settled} settled`,
    changes.returned && `${changes.returned} returned (paid, then failed or canceled)`,
    changes.not_held && `${changes.not_held} recorded as paid but not held by the service`,
    changes.held_again && `${changes.held_again} held by the service again`,
    changes.changed && `${changes.changed} changed otherwise`,
  ].filter(Boolean);
  return parts.length ? parts.join(', ') : 'nothing changed';
}

/** "96 paid, 3 failed, 1 pending": where the payouts stand, those that do. */
function standingsText(now: Standings): string {
  const parts = [
    now.paid && `${now.paid} paid`,
    now.failed && `${now.failed} failed`,
    now.canceled && `${now.canceled} canceled`,
    now.pending && `${now.pending} pending`,
    now.not_held && `${now.not_held} not held by the service`,
    now.unanswered && `${now.unanswered} not answered`,
  ].filter(Boolean);
  return parts.join(', ');
}

/** What to do next, by where the payouts stand. */
function nextLines(rows: readonly Reconciled[], now: Standings, view: ReconcileView): string[] {
  const lines: string[] = [];
  const failed = rows.filter(
    (r) => (r.standing === 'failed' || r.standing === 'canceled') && !r.retried,
  );
  if (failed.length && !view.failedOut) {
    lines.push(
      `${count(failed.length, 'payout')} failed or canceled and not retried: \`payouts reconcile ${scopeArgs(view.scope)}--failed-out FILE\` writes them to a file to send again under new references`,
    );
  }
  if (now.pending) {
    lines.push(
      `${count(now.pending, 'payout')} not final yet: \`payouts reconcile\` again later follows them`,
    );
  }
  if (now.unanswered) {
    lines.push(`${count(now.unanswered, 'lookup')} went unanswered: run the same command again`);
  }
  return lines;
}

/** The scope's options as given, for a command to suggest. */
function scopeArgs(scope: Scope): string {
  if (scope.run !== undefined) return `--run ${scope.run} `;
  if (scope.since !== undefined) return `--since ${scope.since} `;
  return scope.all ? '--all ' : '';
}

/** Shows a reconcile for a person: the table, the loud lines, the counts and what next. */
export async function printReconcile(
  rows: readonly Reconciled[],
  view: ReconcileView,
  output: Output,
): Promise<void> {
  await printTable(rows, output);
  for (const r of rows) if (r.standing === 'not_held') output.error(notHeldLine(r));
  const { now, changes } = countsOf(rows);
  if (!rows.length) {
    output.info(
      view.total
        ? 'Nothing was looked up before the stop'
        : `Nothing to reconcile: every payout the history holds of ${serviceText(view.service)} is final (\`payouts reconcile --all\` looks every one up again)`,
    );
    return;
  }
  const of = rows.length < view.total ? ` of ${view.total}` : '';
  output.info(
    `${count(rows.length, 'payout')}${of} looked up at ${serviceText(view.service)}: ${changesText(changes)}; now ${standingsText(now)}`,
  );
  for (const line of nextLines(rows, now, view)) output.info(line);
}

/** The service as a person knows it. */
function serviceText(service: string): string {
  return service === 'sandbox' ? 'the sandbox' : displayText(service);
}

/** One payout of the document's `results`. */
function resultJson(r: Reconciled) {
  const recorded = r.was.status === null ? null : serviceStatusJson(r.was.status);
  const now = r.status === null ? null : serviceStatusJson(r.status);
  const p = r.payout;
  return {
    reference_id: p.payout.reference_id,
    run_id: p.run_id,
    amount: p.payout.amount,
    currency: p.payout.currency,
    recorded_status: recorded?.status ?? null,
    recorded_service_status: recorded?.service_status ?? null,
    recorded_not_held: r.was.missing,
    standing: r.standing,
    status: now?.status ?? null,
    service_status: now?.service_status ?? null,
    transaction_id: r.transaction_id,
    change: r.change,
    retried: r.retried ? retriedJson(r.retried) : null,
    checked_at: r.check?.checked_at ?? null,
    error: r.error?.message ?? null,
  };
}

/**
 * Prints the --json document of a reconcile: its head, then `results` a payout a line, so
 * that a reconcile of a million payouts is never one object or one string in memory.
 */
export async function printReconcileJson(
  rows: readonly Reconciled[],
  view: ReconcileView,
  output: Output,
): Promise<void> {
  const { results: _, ...head } = reconcileDocument([], view);
  const { now, changes } = countsOf(rows);
  const counted = { ...head, looked_up_count: rows.length, counts: now, changes };
  await output.printJsonWithRawList(counted, 'results', resultChunks(rows));
}

/** The document's results as printJsonWithRawList takes them, a thousand items a chunk. */
function* resultChunks(rows: readonly Reconciled[]): Generator<string> {
  for (let k = 0; k < rows.length; k += 1000) {
    yield rows
      .slice(k, k + 1000)
      .map((r) => rawListItem(JSON.stringify(resultJson(r))))
      .join('');
  }
}

/** The --json document of a reconcile. */
export function reconcileDocument(rows: readonly Reconciled[], view: ReconcileView) {
  const { now, changes } = countsOf(rows);
  return {
    ...documentHead('reconcile'),
    exit_code: view.exitCode,
    interrupted: view.exitCode === ExitCode.interrupted,
    service: view.service,
    scope: {
      run_id: view.runId ?? null,
      since: view.scope.since ?? null,
      all: Boolean(view.scope.all),
    },
    payout_count: view.total,
    looked_up_count: rows.length,
    counts: now,
    changes,
    failed_out: view.failedOut,
    error: view.error,
    results: rows.map(resultJson),
  };
}
