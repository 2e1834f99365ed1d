import { InterruptedError } from '../../errors.js';
import {
  type ExitCodeValue,
  exitCodeForError,
  exitCodeForStatuses,
  worstExitCode,
} from '../../exit-codes.js';
import { displayText } from '../../output/display.js';
import { rawListItem } from '../../output/output.js';
import type { ServiceConnection } from '../service.js';
import type { SendEngine } from './engine.js';
import {
  closingLine,
  formatChargeTotals,
  interruptedLine,
  notSentTotals,
  type ResultsSummary,
  resultItems,
  resultsHead,
  resultsTable,
} from './render.js';
import { writeFailedOut, writeReport } from './report.js';
import type { SendRun } from './run.js';

/** The --json results list as raw text: rawListItem lines, in pieces of about 64 KiB. */
function* resultListText(items: Iterable<string>): Generator<string> {
  let text = '';
  for (const item of items) {
    text += rawListItem(item);
    if (text.length >= 1 << 16) {
      yield text;
      text = '';
    }
  }
  if (text) yield text;
}

/** Writes the report and failed-rows files the user asked for; returns the failed rows written. */
async function writeFiles(run: SendRun, engine: SendEngine): Promise<number> {
  const { opts, currencies } = run;
  const outcomes = engine.outcomes;
  const encoding = opts.reportEncoding;
  if (opts.reportPath)
    await writeReport(opts.reportPath, outcomes.reportRows(), currencies, encoding);
  return opts.failedOutPath
    ? writeFailedOut(opts.failedOutPath, outcomes.reportRows(), encoding)
    : 0;
}

/** Prints the results: the --json document, or the table and the closing line. */
async function printResults(
  run: SendRun,
  service: ServiceConnection,
  engine: SendEngine,
  runId: string,
): Promise<ResultsSummary> {
  const { opts, plan, currencies, output } = run;
  const outcomes = engine.outcomes;
  const counts = outcomes.countsOf();
  const summary: ResultsSummary = {
    total: outcomes.size,
    counts,
    charges: formatChargeTotals(outcomes.chargeEntries(), currencies),
  };
  if (output.json) {
    const head = resultsHead(summary, {
      batchReference: plan.batchReference ?? [...engine.batchReferences][0],
      runId,
      sandbox: service.sandbox,
      unknown: engine.unknown,
      interrupted: run.deps.interrupt.aborted,
      pace: engine.pace.record,
    });
    await output.printJsonWithRawList(
      head,
      'results',
      resultListText(resultItems(outcomes.values())),
    );
    return summary;
  }
  const rows = {
    total: summary.total,
    successCount: counts.success,
    withSuccess: (s: boolean) => outcomes.withSuccess(s),
  };
  const table = await resultsTable(rows, output, opts.all, currencies);
  if (table) output.print(table);
  output.printAside(
    (service.sandbox ? `${output.color.bold.yellow('SANDBOX')} ` : '') +
      closingLine(summary, output.color, output.stdoutIsTerminal),
  );
  return summary;
}

/** Renders a finished run's results, writes its reports and decides the exit code. */
export async function finishRun(
  run: SendRun,
  service: ServiceConnection,
  engine: SendEngine,
  runId: string,
): Promise<number> {
  const { opts, currencies, output } = run;
  const failedOut = await writeFiles(run, engine);
  const summary = await printResults(run, service, engine, runId);
  if (opts.reportPath) output.info(`Report written to ${opts.reportPath}`);
  if (opts.failedOutPath)
    output.info(
      `${failedOut} row${failedOut === 1 ? '' : 's'} known not to be paid written to ${opts.failedOutPath}`,
    );
  const codes: ExitCodeValue[] = [exitCodeForStatuses(engine.outcomes.statusKinds())];
  if (run.deps.interrupt.aborted) {
    // Grouped by thousands where a person reads it; plain digits on a pipe or beside --json.
    const grouped = output.json ? output.stderrIsTerminal : output.stdoutIsTerminal;
    const notSent = notSentTotals(engine.outcomes.values(), currencies, grouped);
    const line = interruptedLine(summary, notSent);
    if (output.json) output.warn(line);
    else output.print(line);
    // Payouts of unknown outcome must be checked first: exit 7 then outranks the interruption.
    if (!engine.unknown.length) codes.push(exitCodeForError(new InterruptedError('interrupted')));
  }
  if (engine.fatal) {
    output.error(engine.fatal.message);
    if (engine.unknown.length)
      output.info(`Outcome unknown: ${engine.unknown.map(displayText).join(', ')}`);
    codes.push(exitCodeForError(engine.fatal));
  }
  return worstExitCode(codes);
}
