import { NOTHING_SENT } from '../../api/client.js';
import {
  errorCode,
  errorMessage,
  InterruptedError,
  NetworkError,
  OutcomeUnknownError,
} from '../../errors.js';
import {
  ExitCode,
  type ExitCodeValue,
  exitCodeForError,
  exitCodeForStatuses,
  worstExitCode,
} from '../../exit-codes.js';
import { outcomeKind, type PayoutOutcome } from '../../domain/outcome.js';
import { statusKind } from '../../domain/statuses.js';
import { CurrencyTotals, parseAmount } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { count, displayText } from '../../output/display.js';
import { rawListItem, resultLine } from '../../output/output.js';
import { errorObject } from '../documents.js';
import type { SendEngine } from './engine.js';
import {
  closingLine,
  formatChargeTotals,
  type ResultsSummary,
  resultItems,
  resultsHead,
  resultsTable,
  totalsDoc,
  totalsText,
} from './render.js';
import { runReportStyle } from './options.js';
import { type FilesWritten, retryHint, writeFiles } from './report.js';
import { styleText } from '../report-style.js';
import { shellWord } from '../../output/display.js';
import type { ServiceConnection } from '../service.js';
import type { SendContext } from './staging.js';

/** A run once its requests have settled, for its results. */
export interface Finished {
  service: ServiceConnection;
  engine: SendEngine;
  runId: string;
  /** An error thrown once the run had begun (the engine's own is `engine.fatal`). */
  thrown?: unknown;
  /**
   * What the Approval: line said (`approval_status`), the approval that let it go
   * (`approval`), and what changed since the series' last run (`compared_with`, `retry_changes`).
   */
  approval?: { status?: unknown; doc?: unknown; changes?: object };
  /** The retry rows --original-elsewhere let through (`original_elsewhere`). */
  elsewhere?: Array<{ reference_id: string; retry_of: string }>;
}

/**
 * The --json results list as raw text (rawListItem lines), or --json-lines' result lines
 * (resultLine), in pieces of about 64 KiB.
 */
function* resultListText(items: Iterable<string>, lines: boolean): Generator<string> {
  const form = lines ? resultLine : rawListItem;
  let text = '';
  for (const item of items) {
    text += form(item);
    if (text.length >= 1 << 16) {
      yield text;
      text = '';
    }
  }
  if (text) yield text;
}

/** How a run ended: its exit code, the error that stopped it, the line of an interruption. */
interface Ending {
  exitCode: ExitCodeValue;
  error?: Error;
  interrupted?: string;
  /** What stopped the run (before an interruption's own error), in words of the whole run. */
  fatal?: Error;
}

/**
 * The error that stopped the run, told of the whole run: a create request that never reached
 * the service says "nothing was sent" of itself, which is untrue of a run that sent earlier
 * requests, so its tail then gives the run's counts.
 */
function runError(thrown: unknown, summary: ResultsSummary): Error | undefined {
  if (thrown === undefined) return undefined;
  const error = thrown instanceof Error ? thrown : new Error(String(thrown));
  const sent = summary.total - summary.counts.notSent;
  if (!(error instanceof NetworkError) || !error.message.endsWith(NOTHING_SENT) || sent === 0)
    return error;
  const words = error.message.slice(0, -NOTHING_SENT.length);
  const told = `${words}; ${sent} of ${summary.total} payouts sent, ${summary.counts.notSent} not sent`;
  return Object.assign(new NetworkError(told, error.mayHaveBeenApplied, error.code), {
    stack: error.stack,
  });
}

/**
 * Says what became of the files asked for: written, and how (the user's conventions, said
 * once), or not (an error line naming the file and why, with how to have it again; the run's
 * results and exit code stand as they are).
 */
function tellFiles(ctx: SendContext, done: Finished, files: FilesWritten): void {
  const { opts, output } = ctx;
  const { report, failedOut } = files;
  const { style, source } = runReportStyle(opts, ctx.plan);
  const how = styleText(style, source, opts.reportEncoding);
  if (opts.reportPath && report) {
    if ('rows' in report) output.info(`Report written to ${opts.reportPath}: ${how}`);
    else
      output.error(
        `--report ${opts.reportPath} could not be written (${report.failed}); nothing was left in its place. The run's results are as shown: \`payouts runs show ${done.runId}\` lists them again`,
      );
  }
  if (opts.failedOutPath && failedOut) {
    if ('rows' in failedOut) {
      const n = failedOut.rows;
      const rows = `${n} row${n === 1 ? '' : 's'} known not to be paid written to ${opts.failedOutPath}`;
      const written = report && 'rows' in report ? 'as the report' : how;
      output.info(`${rows} (${written})${n ? `: ${retryHint(opts.failedOutPath)}` : ''}`);
    } else
      output.error(
        `--failed-out ${opts.failedOutPath} could not be written (${failedOut.failed}); nothing was left in its place. The run's results are as shown: \`payouts runs show ${done.runId} --failed-out FILE\` writes its failed and canceled payouts`,
      );
  }
}

/** The counts and charge totals of a run's outcomes. */
function summaryOf(ctx: SendContext, engine: SendEngine): ResultsSummary {
  const outcomes = engine.outcomes;
  return {
    total: outcomes.size,
    counts: outcomes.countsOf(),
    charges: formatChargeTotals(outcomes.chargeEntries(), ctx.currencies),
    chargesUnknown: outcomes.chargesUnknownCount(),
  };
}

/**
 * The exit code and the error of a run: an interruption is 130, whatever it left in doubt
 * (the closing line says what the next run does with those); else the error that stopped
 * the run decides with the statuses.
 */
function endingOf(ctx: SendContext, done: Finished, summary: ResultsSummary): Ending {
  const { engine } = done;
  const codes: ExitCodeValue[] = [exitCodeForStatuses(engine.outcomes.statusKinds())];
  const error = runError(done.thrown ?? engine.fatal, summary);
  if (ctx.deps.interrupt.aborted) {
    const { currencies } = ctx;
    const notSent = notSentTotals(engine.outcomes.values(), currencies);
    const line = interruptedLine(summary, notSent, engine.unknown.length);
    const interruption = new InterruptedError(line);
    codes.push(exitCodeForError(interruption));
    return { exitCode: worstExitCode(codes), error: interruption, interrupted: line, fatal: error };
  }
  if (error) codes.push(exitCodeForError(error));
  return { exitCode: worstExitCode(codes), error, fatal: error };
}

/** Prints the --json document: the head, then every result. */
async function printDocument(
  ctx: SendContext,
  done: Finished,
  ending: Ending,
  summary: ResultsSummary,
): Promise<void> {
  const { plan, currencies, output } = ctx;
  const { engine } = done;
  const head = resultsHead(summary, {
    batchReference: plan.batchReference ?? [...engine.batchReferences][0],
    runId: done.runId,
    sandbox: done.service.sandbox,
    unknown: engine.unknown,
    interrupted: ctx.deps.interrupt.aborted,
    pace: engine.pace.record,
    payoutCount: plan.payoutCount,
    totals: totalsDoc(plan.totals, currencies),
    exitCode: ending.exitCode,
    error: ending.error && errorObject(ending.error, ending.exitCode),
    ...(done.elsewhere ? { elsewhere: done.elsewhere } : {}),
  });
  const approval = {
    ...(done.approval?.status ? { approval_status: done.approval.status } : {}),
    ...(done.approval?.doc ? { approval: done.approval.doc } : {}),
    ...(done.approval?.changes ?? {}),
  };
  const items = resultListText(resultItems(engine.outcomes.values(), currencies), output.lines);
  if (output.lines) await output.printJsonLines({ ...head, ...approval }, items);
  else await output.printJsonWithRawList({ ...head, ...approval }, 'results', items);
}

/** Prints the table and the closing line. */
async function printTable(
  ctx: SendContext,
  done: Finished,
  summary: ResultsSummary,
): Promise<void> {
  const { opts, currencies, output } = ctx;
  const outcomes = done.engine.outcomes;
  const rows = {
    total: summary.total,
    successCount: summary.counts.success,
    withSuccess: (s: boolean) => outcomes.withSuccess(s),
  };
  const table = await resultsTable(rows, output, opts.all, currencies);
  if (table) output.print(table);
  output.printAside(
    (done.service.sandbox ? `${output.color.bold.yellow('SANDBOX')} ` : '') +
      closingLine(summary, output.color),
  );
}

/** Renders a finished run's results, writes its reports and decides the exit code. */
export async function finishRun(ctx: SendContext, done: Finished): Promise<number> {
  const { output } = ctx;
  // Outcomes the database cannot take (a full disk) are still listed, from memory: the error
  // says they were not recorded.
  done.thrown ??= done.engine.outcomes.save();
  // A file that cannot be written is told beside the results: the run's outcome is the payouts'.
  const files = await writeFiles(ctx, done.engine);
  const summary = summaryOf(ctx, done.engine);
  const ending = endingOf(ctx, done, summary);
  if (output.json) await printDocument(ctx, done, ending, summary);
  else await printTable(ctx, done, summary);
  tellFiles(ctx, done, files);
  reportEnding(ctx, done, ending);
  for (const line of nextSteps(ctx, done, summary)) output.info(line);
  return ending.exitCode;
}

/** Says on stderr (and after the table) what stopped the run. */
function reportEnding(ctx: SendContext, done: Finished, ending: Ending): void {
  const { output } = ctx;
  const { engine } = done;
  if (ending.interrupted) {
    // Not a warning: log scanners count those, and a stop is what the job asked for.
    if (output.json) output.info(ending.interrupted);
    else output.print(ending.interrupted);
  }
  const fatal = ending.fatal;
  // Stopped while reading back: the interruption's line already says what is in doubt.
  const said = ending.interrupted && fatal instanceof OutcomeUnknownError;
  if (fatal !== undefined && !said) {
    // A bug, or a failure no typed error names, is said to be one, as main.ts says it.
    const internal = exitCodeForError(fatal) === ExitCode.internal;
    output.error(`${internal ? 'internal error: ' : ''}${errorMessage(fatal)}`);
    const code = errorCode(fatal);
    if (code) output.debug(`error code: ${code}`);
    if (fatal instanceof Error && fatal.stack) output.debug(fatal.stack);
    if (engine.unknown.length)
      output.info(`Outcome unknown: ${engine.unknown.map(displayText).join(', ')}`);
  }
}

/** Pending payouts named one by one in the command that watches them; more need a file. */
const WATCH_INLINE = 5;

/** "1 payout is not final yet; to watch it until it is", and its plural. */
function notFinal(n: number): string {
  return n === 1
    ? '1 payout is not final yet; to watch it until it is'
    : `${n} payouts are not final yet; to watch them until they are`;
}

/** The references of payouts not final yet (pending, or a status not documented), up to `max`. */
function openReferences(run: Finished, max: number): string[] {
  const refs: string[] = [];
  for (const o of run.engine.outcomes.values()) {
    const kind = outcomeKind(o);
    if (kind !== 'pending' && kind !== 'undocumented') continue;
    // Pending as its retry: the retry is the payout to watch.
    refs.push(o.retried_as?.reference_id ?? o.reference_id);
    if (refs.length > max) break;
  }
  return refs;
}

/** The line that says how to watch the payouts not final yet, with the exact command. */
function watchLine(ctx: SendContext, done: Finished, open: number): string {
  const service = (ctx.deps.serviceArgs ?? []).map(shellWord).join(' ');
  const tail = `--watch${service ? ` ${service}` : ''}`;
  const refs = openReferences(done, WATCH_INLINE);
  if (refs.length <= WATCH_INLINE) {
    return `${notFinal(open)}: payouts status ${refs.map(shellWord).join(' ')} ${tail}`;
  }
  const report = ctx.opts.reportPath;
  if (report) {
    return `${notFinal(open)}: payouts status --from ${shellWord(report)} ${tail}`;
  }
  return `${open} payouts are not final yet: run the same command again with --report FILE (what was sent is not sent again), then watch them with: payouts status --from FILE ${tail}`;
}

/**
 * What to do next, for the end of a finished or stopped send: how to watch the payouts not
 * final yet, where the failed ones are (or the flag that writes them), and the run's id.
 */
export function nextSteps(ctx: SendContext, done: Finished, summary: ResultsSummary): string[] {
  const lines: string[] = [];
  const n = summary.counts;
  // Unknown counts outcomes in doubt too, which a later run reads back; those are not watched.
  const open = n.pending + Math.max(0, n.unknown - done.engine.unknown.length);
  if (open) lines.push(watchLine(ctx, done, open));
  if (n.failed && !ctx.opts.failedOutPath) {
    lines.push(
      `${n.failed} payout${n.failed === 1 ? '' : 's'} failed or ${n.failed === 1 ? 'was' : 'were'} canceled: a failed payout needs a new reference_id; \`payouts runs show ${done.runId} --failed-out FILE\` writes ${n.failed === 1 ? 'it' : 'them'} to a file to send again`,
    );
  }
  lines.push(`Run ${done.runId}: payouts runs show ${done.runId}`);
  return lines;
}

/** Per-currency totals of the payouts not sent, as "EUR 579,071.29, USD 12.00". */
export function notSentTotals(
  outcomes: Iterable<PayoutOutcome>,
  currencies: CurrencyTable,
): string {
  const totals = new CurrencyTotals();
  for (const o of outcomes) {
    if (statusKind(o.status) !== 'not_sent') continue;
    const r = parseAmount(o.amount, currencies.minorUnits(o.currency));
    if (r.ok) totals.add(o.currency, r.amount.minor);
  }
  return totalsText(totals, currencies);
}

/**
 * What an interrupted run did with the money, in one line: "Interrupted: 800 of 2000 payouts
 * sent (800 succeeded); 1200 not sent, EUR 579071.29. Run the same command again ...".
 * Payouts in doubt (`inDoubt`: stopped while waiting to read them back) are never called
 * "to send": the next run reads them back before it sends anything.
 */
export function interruptedLine(summary: ResultsSummary, notSent: string, inDoubt = 0): string {
  const n = summary.counts;
  const sent = summary.total - n.notSent;
  const how = [
    `${n.success} succeeded`,
    n.failed - n.canceled && `${n.failed - n.canceled} failed`,
    n.canceled && `${n.canceled} canceled`,
    n.pending && `${n.pending} pending`,
    n.unknown && `${n.unknown} unknown`,
  ].filter(Boolean);
  let line = `Interrupted: ${sent} of ${count(summary.total, 'payout')} sent (${how.join(', ')})`;
  if (inDoubt) {
    line += `; ${inDoubt} in doubt: ${inDoubt === 1 ? 'its' : 'their'} outcome is not known (the run stopped before reading ${inDoubt === 1 ? 'it' : 'them'} back)`;
  }
  if (n.notSent) line += `; ${n.notSent} not sent, ${notSent}`;
  if (inDoubt) {
    const then = n.notSent ? ', then sends those not sent' : '';
    return `${line}. Run the same command again: it reads back the payouts in doubt before sending anything${then}; nothing will be sent twice.`;
  }
  if (!n.notSent) return `${line}.`;
  return `${line}. Run the same command again to send them; nothing will be sent twice.`;
}
