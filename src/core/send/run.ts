import { join } from 'node:path';
import type { RetryPolicy } from '../../api/retry.js';
import { type Clock, systemClock } from '../../clock.js';
import { InterruptedError, UsageError } from '../../errors.js';
import {
  ExitCode,
  type ExitCodeValue,
  exitCodeForError,
  exitCodeForStatuses,
  worstExitCode,
} from '../../exit-codes.js';
import type { IntakeOptions } from '../../input/index.js';
import { CurrencyTable } from '../../money/currencies.js';
import { displayText } from '../../output/display.js';
import { type InStream, type Output, rawListItem } from '../../output/output.js';
import {
  acquireSendLock,
  openStateDb,
  RunIntake,
  RunState,
  type StateDb,
} from '../../state/index.js';
import type { ServiceConnection } from '../service.js';
import { DEFAULT_SEND_RETRY, SendEngine } from './engine.js';
import { concurrencyOf, type SendOptions } from './options.js';
import { planRun, type RunPlan } from './plan.js';
import {
  chargeMinorOf,
  closingLine,
  dryRunDoc,
  formatChargeTotals,
  formatRequestBody,
  interruptedLine,
  notSentTotals,
  type ResultsSummary,
  resultItems,
  resultsHead,
  resultsTable,
  summaryText,
} from './render.js';
import { writeFailedOut, writeReport } from './report.js';
import { applyReadBack, type PriorState, priorState } from './resume.js';
import { type HashedSource, hashedFileSource, spoolStdin } from './sources.js';

/** What `send` needs from its surroundings; it reads nothing from the process itself. */
export interface SendDeps {
  output: Output;
  stdin: InStream;
  stateDir: string;
  pid: number;
  interrupt: AbortSignal;
  /** The command line, recorded in the run lock so a second run can name the first. */
  commandLine: string;
  /** Connects to the service (or the sandbox); called only when something will be sent. */
  connect: () => Promise<ServiceConnection>;
  /** Base URL and profile for the summary of a dry run, which needs no credentials. */
  preview: () => Promise<{ baseUrl?: string; profile?: string }>;
  retry?: RetryPolicy;
  /** Time for retry waits and read-back timing; the real clock unless a test passes one. */
  clock?: Clock;
}

/** Builds the sources of a run; standard input is copied to a file, whose bytes are hashed as the files' are. */
async function openSources(
  files: string[],
  deps: SendDeps,
  hashing: boolean,
): Promise<{ sources: HashedSource[]; cleanup(): void }> {
  const cleanups: Array<() => void> = [];
  const sources: HashedSource[] = [];
  if (files.filter((f) => f === '-').length > 1)
    throw new UsageError('standard input ("-") can be read only once per run');
  for (const file of files) {
    if (file === '-') {
      const spool = await spoolStdin(deps.stdin, join(deps.stateDir, 'tmp'), deps.pid);
      cleanups.push(spool.remove);
      sources.push(hashedFileSource(spool.path, '-', hashing));
    } else {
      sources.push(hashedFileSource(file, file, hashing));
    }
  }
  return {
    sources,
    cleanup: () => {
      for (const c of cleanups) c();
    },
  };
}

/** A send's database and the rows pass 1 staged, until the run adopts them. */
interface Staging {
  db: StateDb;
  rows: RunIntake;
  adopted: boolean;
}

/** Runs `payouts send`: validate everything, summarise, confirm, send, report. Returns the exit code. */
export async function runSend(opts: SendOptions, deps: SendDeps): Promise<number> {
  const { output } = deps;
  const currencies = new CurrencyTable(opts.allowCurrencies);
  const intake: IntakeOptions = {
    format: opts.format,
    sheet: opts.sheet,
    delimiter: opts.delimiter,
    map: opts.map,
    encoding: opts.encoding,
    decimalComma: opts.decimalComma,
    currencies,
  };
  const { sources, cleanup } = await openSources(opts.files, deps, !opts.dryRun);
  let staging: Staging | undefined;
  try {
    if (!opts.dryRun) {
      const db = await openStateDb(deps.stateDir);
      const now = deps.clock ? new Date(deps.clock.now()) : new Date();
      staging = {
        db,
        rows: RunIntake.begin(db, { pid: deps.pid, inputs: opts.files, now }),
        adopted: false,
      };
    }
    const plan = await planRun(sources, {
      intake,
      currencies,
      chunkSize: opts.chunkSize,
      batchReference: opts.batchReference,
      webhookUrl: opts.webhookUrl,
      maxTotals: opts.maxTotals,
      warn: (m) => output.warn(m),
      withHashes: !opts.dryRun,
      ...(staging ? { rows: staging.rows } : {}),
    });
    const dest = {
      sandbox: opts.sandbox,
      chunkSize: opts.chunkSize,
      concurrency: concurrencyOf(opts),
    };
    if (!staging) {
      const where = opts.sandbox
        ? { baseUrl: '(sandbox, started when sending)', profile: 'sandbox' }
        : await deps.preview();
      output.result(dryRunDoc(plan, currencies), () =>
        [
          summaryText(
            plan,
            { ...dest, ...where, grouped: output.stdoutIsTerminal },
            currencies,
            output.color,
          ),
          '',
          `Dry run: nothing was sent. First request (${plan.firstRequest.payouts.length} payout${plan.firstRequest.payouts.length === 1 ? '' : 's'}):`,
          formatRequestBody(plan.firstRequest),
        ].join('\n'),
      );
      return ExitCode.ok;
    }
    const service = await deps.connect();
    try {
      output.info(
        summaryText(
          plan,
          {
            ...dest,
            baseUrl: service.settings.baseUrl,
            profile: service.settings.profile,
            grouped: output.stderrIsTerminal,
          },
          currencies,
          output.errColor,
        ),
      );
      await confirm(opts, service, output);
      return await sendPlan(plan, staging, { opts, currencies, service, deps });
    } finally {
      await service.close();
    }
  } finally {
    if (staging) {
      // Rows of a run that never began are of no use to anyone.
      if (!staging.adopted) staging.rows.discard();
      staging.db.close();
    }
    cleanup();
  }
}

/** Asks for confirmation on a terminal; requires --yes elsewhere. A sandbox run needs neither. */
async function confirm(
  opts: SendOptions,
  service: ServiceConnection,
  output: Output,
): Promise<void> {
  if (service.sandbox || opts.yes) return;
  if (!output.interactive) {
    throw new UsageError(
      'no terminal to confirm on: pass --yes to send without asking (nothing was sent)',
    );
  }
  if (!(await output.confirm('Send these payouts? They cannot be taken back.'))) {
    throw new UsageError('not confirmed: nothing was sent');
  }
}

/** What sending a plan needs besides the plan and its rows. */
interface SendContext {
  opts: SendOptions;
  currencies: CurrencyTable;
  service: ServiceConnection;
  deps: SendDeps;
}

/** Sends a validated plan under the run lock, its state written ahead, then renders the results. */
async function sendPlan(plan: RunPlan, staging: Staging, ctx: SendContext): Promise<number> {
  const { opts, service, deps } = ctx;
  const { output } = deps;
  const lock = await acquireSendLock({
    stateDir: deps.stateDir,
    serviceKey: service.serviceKey,
    pid: deps.pid,
    command: deps.commandLine,
  });
  let engine: SendEngine;
  let state: RunState;
  try {
    state = RunState.open({
      db: staging.db,
      intake: staging.rows,
      serviceKey: service.serviceKey,
      chargeMinor: chargeMinorOf(ctx.currencies),
      ...(deps.clock ? { now: () => new Date(deps.clock!.now()) } : {}),
      header: {
        service: service.sandbox ? 'sandbox' : service.settings.baseUrl,
        client_id: service.settings.clientId,
        inputs: plan.sources.map((s) => s.name),
        input_hash: plan.inputHash,
        payout_count: plan.payoutCount,
        ...(plan.batchReference ? { batch_reference: plan.batchReference } : {}),
      },
    });
    staging.adopted = true;
    const progress = await output.progress('Sending payouts…');
    const clock = deps.clock ?? systemClock;
    const began = clock.now();
    const rate = (n: number) => Math.round((n * 1000) / Math.max(1, clock.now() - began));
    try {
      engine = new SendEngine(
        {
          client: service.client,
          journal: state,
          outcomes: state.outcomes,
          interrupt: deps.interrupt,
          warn: (m) => output.warn(m),
          progress: (d) =>
            progress.update(
              `Sending: ${d.payouts}/${plan.payoutCount} payouts done, ${engine.pace.inFlight} requests in flight, ${rate(d.payouts)} payouts/s`,
            ),
          paceChanged: (limit, why) => output.debug(`pace: ${limit} requests at a time (${why})`),
          countdown: (s) =>
            progress.update(
              `Waiting ${s} s for the service to finish a request before reading back…`,
            ),
          clock: deps.clock,
        },
        {
          chunkSize: opts.chunkSize,
          concurrency: concurrencyOf(opts),
          batchReference: plan.batchReference,
          webhookUrl: plan.webhookUrl,
          retry: deps.retry ?? DEFAULT_SEND_RETRY,
          quietMs: service.timing.quietMs,
        },
      );
      const prior = priorState(state, service.serviceKey);
      if (prior.inFlight.size) {
        output.info(
          `Reading back ${prior.inFlight.size} payout${prior.inFlight.size === 1 ? '' : 's'} whose earlier request has no recorded outcome…`,
        );
        const items = [...prior.inFlight.values()];
        const sentAt = items.reduce((latest, i) => Math.max(latest, i.sentAt), 0);
        applyReadBack(prior, await engine.readBackEarlier(items, sentAt), state);
      }
      if (state.resumed || prior.settled.size) {
        output.info(
          `Resuming: ${prior.settled.size} of ${plan.payoutCount} payouts were sent earlier and will not be sent again.`,
        );
      }
      await sendRows(state, prior.settled, engine);
      await engine.finish();
    } finally {
      progress.stop();
      await state.close();
    }
  } finally {
    await lock.release();
  }
  return finishRun(plan, ctx, engine, state.runId);
}

/** Hands the run's payouts to the engine in row order, or records them as sent earlier. */
async function sendRows(
  state: RunState,
  settled: PriorState['settled'],
  engine: SendEngine,
): Promise<void> {
  for (const { row, payout, hash } of state.payouts()) {
    const known = settled.get(row);
    // Every row has an outcome, whatever stopped the run: those never reached were not sent.
    if (engine.stopping && !known) {
      engine.notReached(payout);
      continue;
    }
    if (known) {
      engine.addSentEarlier(payout, known);
      continue;
    }
    engine.enqueue({ payout, hash });
    await engine.ready();
  }
}

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

/** Renders results, writes reports and decides the exit code. */
async function finishRun(
  plan: RunPlan,
  ctx: SendContext,
  engine: SendEngine,
  runId: string,
): Promise<number> {
  const { opts, currencies, service, deps } = ctx;
  const { output } = deps;
  const outcomes = engine.outcomes;
  const interrupted = deps.interrupt.aborted;
  const batchReference = plan.batchReference ?? [...engine.batchReferences][0];
  if (opts.reportPath) await writeReport(opts.reportPath, outcomes.reportRows(), currencies);
  let failedOut = 0;
  if (opts.failedOutPath)
    failedOut = await writeFailedOut(opts.failedOutPath, outcomes.reportRows());
  const counts = outcomes.countsOf();
  const summary: ResultsSummary = {
    total: outcomes.size,
    counts,
    charges: formatChargeTotals(outcomes.chargeEntries(), currencies),
  };
  const head = resultsHead(summary, {
    batchReference,
    runId,
    sandbox: service.sandbox,
    unknown: engine.unknown,
    interrupted,
    pace: engine.pace.record,
  });
  if (output.json)
    await output.printJsonWithRawList(
      head,
      'results',
      resultListText(resultItems(outcomes.values())),
    );
  else {
    const table = await resultsTable(
      {
        total: summary.total,
        successCount: counts.success,
        withSuccess: (s) => outcomes.withSuccess(s),
      },
      output,
      opts.all,
      currencies,
    );
    if (table) output.print(table);
    output.print(
      (service.sandbox ? `${output.color.bold.yellow('SANDBOX')} ` : '') +
        closingLine(summary, output.color, output.stdoutIsTerminal),
    );
  }
  if (opts.reportPath) output.info(`Report written to ${opts.reportPath}`);
  if (opts.failedOutPath)
    output.info(
      `${failedOut} row${failedOut === 1 ? '' : 's'} known not to be paid written to ${opts.failedOutPath}`,
    );
  const codes: ExitCodeValue[] = [exitCodeForStatuses(outcomes.statusKinds())];
  if (interrupted) {
    // Grouped by thousands where a person reads it; plain digits on a pipe or beside --json.
    const grouped = output.json ? output.stderrIsTerminal : output.stdoutIsTerminal;
    const line = interruptedLine(summary, notSentTotals(outcomes.values(), currencies, grouped));
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
