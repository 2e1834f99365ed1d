/**
 * `payouts reconcile`, from the command's request to its exit code: a live line while the
 * payouts are looked up (counts, and the time left at the pace so far), reconcile.ts, the
 * retry file (failed-out.ts), then what render.ts shows, and the exit code of where the
 * payouts stand (judge.ts); a stop keeps what was looked up (exit 130).
 */
import type { Clock } from '../../clock.js';
import { InterruptedError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { count, displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { errorObject } from '../documents.js';
import { checkRetryTarget, type RetryRequest } from '../runs/retry.js';
import type { RunsSource } from '../runs/reader.js';
import type { PayoutReader } from '../status/lookup.js';
import { writeReconcileRetry } from './failed-out.js';
import { countsOf, exitCodeOf } from './judge.js';
import { type ReconcileReport, reconcile, type Scope } from './reconcile.js';
import { printReconcile, printReconcileJson, type ReconcileView } from './render.js';

/** What `payouts reconcile` was asked. */
export interface ReconcileRequest {
  scope: Scope;
  concurrency?: number;
  failedOut?: RetryRequest;
}

/** The service reconciled with. */
export interface ReconcileService {
  client: PayoutReader;
  serviceKey: string;
  sandbox: boolean;
  settings: { baseUrl: string; clientId: string };
}

/** What it needs. */
export interface ReconcileRun {
  from: RunsSource;
  service: ReconcileService;
  output: Output;
  clock: Clock;
  interrupt: AbortSignal;
}

/** "about 2 min left", "about 40 s left", from the pace so far. */
function timeLeft(elapsedMs: number, done: number, total: number): string {
  if (done === 0 || done >= total) return '';
  const ms = (elapsedMs / done) * (total - done);
  const s = Math.ceil(ms / 1000);
  return s < 120 ? ` · about ${s} s left` : ` · about ${Math.ceil(s / 60)} min left`;
}

/** Runs reconcile with its live line. */
async function looked(req: ReconcileRequest, run: ReconcileRun): Promise<ReconcileReport> {
  const progress = await run.output.progress('Reconciling: reading the history…');
  const began = run.clock.now();
  try {
    return await reconcile(req.scope, {
      ...run,
      service: { ...run.service, clientId: run.service.settings.clientId },
      ...(req.concurrency ? { concurrency: req.concurrency } : {}),
      progress: (done, total, changed) =>
        progress.update(
          `Reconciling: ${done} of ${count(total, 'payout')} looked up · ${changed} changed${timeLeft(run.clock.now() - began, done, total)}`,
        ),
    });
  } finally {
    progress.stop();
  }
}

/** Runs `payouts reconcile` (see the file's comment); returns the exit code. */
export async function runReconcile(req: ReconcileRequest, run: ReconcileRun): Promise<number> {
  const { output, service } = run;
  // A retry file that could not be written is refused before any lookup.
  if (req.failedOut) checkRetryTarget(req.failedOut);
  const report = await looked(req, run);
  const { rows } = report;
  // An unreachable service is one error, not one per payout.
  const first = rows[0]?.error;
  if (first && rows.every((r) => r.standing === 'unanswered')) throw first;
  const name = service.sandbox ? 'sandbox' : service.settings.baseUrl;
  const failedOut =
    req.failedOut && !report.interrupted
      ? await writeReconcileRetry(rows, report.runs, req.failedOut, {
          from: run.from,
          output,
          service: name,
        })
      : null;
  const exitCode = report.interrupted ? ExitCode.interrupted : exitCodeOf(countsOf(rows).now);
  const stop = report.interrupted
    ? new InterruptedError(
        `interrupted: ${rows.length} of ${count(report.total, 'payout')} looked up and kept before the stop; run the same command again to look up the rest${req.failedOut ? ` (${req.failedOut.path} was not written)` : ''}`,
      )
    : undefined;
  const unanswered = rows.find((r) => r.error)?.error;
  const error = stop ?? (exitCode === ExitCode.unreachable ? unanswered : undefined);
  const view: ReconcileView = {
    service: name,
    scope: req.scope,
    ...(req.scope.run !== undefined && report.runs[0] ? { runId: report.runs[0].run_id } : {}),
    total: report.total,
    exitCode,
    error: error ? errorObject(error, exitCode) : null,
    failedOut,
  };
  if (output.json) await printReconcileJson(rows, view, output);
  else {
    if (report.noHistory) output.info(`Nothing to reconcile: no history is kept here yet`);
    else await printReconcile(rows, view, output);
    if (stop) output.error(displayText(stop.message));
  }
  return exitCode;
}
