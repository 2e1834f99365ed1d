import { statSync } from 'node:fs';
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
import { RunJournal, RunLock, runIdFor } from '../../journal/index.js';
import { CurrencyTable } from '../../money/currencies.js';
import { displayText } from '../../output/display.js';
import type { InStream, Output } from '../../output/output.js';
import type { ServiceConnection } from '../service.js';
import { DEFAULT_SEND_RETRY, SendEngine } from './engine.js';
import { concurrencyOf, type SendOptions } from './options.js';
import { OutcomeStore } from './outcome-store.js';
import { planRun, type RunPlan } from './plan.js';
import {
  chargeMinorOf,
  closingLine,
  dryRunDoc,
  formatChargeTotals,
  formatRequestBody,
  type ResultsSummary,
  resultsHead,
  resultsTable,
  summaryText,
} from './render.js';
import { writeFailedOut, writeReport } from './report.js';
import { applyReadBack, type PriorState, priorState } from './resume.js';
import { type HashedSource, hashedFileSource, spoolStdin } from './sources.js';
import { PayoutSpool, spoolMemoryBudget } from './spool.js';

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

/** Builds the sources of a run; standard input is spooled to a file so it can be read twice. */
async function openSources(
  files: string[],
  deps: SendDeps,
  hashing: boolean,
): Promise<{ sources: HashedSource[]; bytes: number; cleanup(): void }> {
  const cleanups: Array<() => void> = [];
  const sources: HashedSource[] = [];
  const paths: string[] = [];
  if (files.filter((f) => f === '-').length > 1)
    throw new UsageError('standard input ("-") can be read only once per run');
  for (const file of files) {
    if (file === '-') {
      const spool = await spoolStdin(deps.stdin, join(deps.stateDir, 'tmp'), deps.pid);
      cleanups.push(spool.remove);
      sources.push(hashedFileSource(spool.path, '-', hashing));
      paths.push(spool.path);
    } else {
      sources.push(hashedFileSource(file, file, hashing));
      paths.push(file);
    }
  }
  return {
    sources,
    bytes: totalBytes(paths),
    cleanup: () => {
      for (const c of cleanups) c();
    },
  };
}

/** The combined size of the input files; one that cannot be read counts as none (reading reports it). */
function totalBytes(paths: string[]): number {
  let n = 0;
  for (const path of paths) {
    try {
      n += statSync(path).size;
    } catch {
      // Pass 1 names the file and the reason.
    }
  }
  return n;
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
  const { sources, bytes, cleanup } = await openSources(opts.files, deps, !opts.dryRun);
  const spool = opts.dryRun
    ? undefined
    : PayoutSpool.create(join(deps.stateDir, 'tmp'), deps.pid, spoolMemoryBudget(bytes));
  try {
    const plan = await planRun(sources, {
      intake,
      currencies,
      chunkSize: opts.chunkSize,
      batchReference: opts.batchReference,
      webhookUrl: opts.webhookUrl,
      maxTotals: opts.maxTotals,
      warn: (m) => output.warn(m),
      withHashes: !opts.dryRun,
      spool,
    });
    spool?.finish();
    const dest = {
      sandbox: opts.sandbox,
      chunkSize: opts.chunkSize,
      concurrency: concurrencyOf(opts),
    };
    if (opts.dryRun) {
      const where = opts.sandbox
        ? { baseUrl: '(sandbox, started when sending)', profile: 'sandbox' }
        : await deps.preview();
      output.result(dryRunDoc(plan, currencies), () =>
        [
          summaryText(plan, { ...dest, ...where }, currencies, output.color),
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
          { ...dest, baseUrl: service.settings.baseUrl, profile: service.settings.profile },
          currencies,
          output.errColor,
        ),
      );
      await confirm(opts, service, output);
      return await sendPlan(plan, spool!, opts, intake, currencies, service, deps);
    } finally {
      await service.close();
    }
  } finally {
    spool?.remove();
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

/** Sends a validated plan under the run lock and the journal, then renders the results. */
async function sendPlan(
  plan: RunPlan,
  spool: PayoutSpool,
  opts: SendOptions,
  intake: IntakeOptions,
  currencies: CurrencyTable,
  service: ServiceConnection,
  deps: SendDeps,
): Promise<number> {
  const { output } = deps;
  const lock = await RunLock.acquire({
    stateDir: deps.stateDir,
    serviceKey: service.serviceKey,
    pid: deps.pid,
    command: deps.commandLine,
  });
  let engine: SendEngine;
  let journal: RunJournal;
  const outcomes = OutcomeStore.create(
    join(deps.stateDir, 'tmp'),
    deps.pid,
    plan.payoutCount,
    chargeMinorOf(currencies),
  );
  try {
    journal = await RunJournal.open({
      stateDir: deps.stateDir,
      serviceKey: service.serviceKey,
      runId: runIdFor(service.serviceKey, plan.inputHash),
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
    const progress = await output.progress('Sending payouts…');
    const clock = deps.clock ?? systemClock;
    const began = clock.now();
    const rate = (n: number) => Math.round((n * 1000) / Math.max(1, clock.now() - began));
    try {
      engine = new SendEngine(
        {
          client: service.client,
          journal,
          outcomes,
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
      const prior = await priorState({
        stateDir: deps.stateDir,
        serviceKey: service.serviceKey,
        journal,
        refs: plan.refs,
        spool,
      });
      if (prior.inFlight.size) {
        output.info(
          `Reading back ${prior.inFlight.size} payout${prior.inFlight.size === 1 ? '' : 's'} whose earlier request has no recorded outcome…`,
        );
        const items = [...prior.inFlight.values()];
        const sentAt = items.reduce((latest, i) => Math.max(latest, i.sentAt), 0);
        applyReadBack(prior, await engine.readBackEarlier(items, sentAt), journal);
      }
      // Both were only needed to learn what earlier runs sent; pass 2 sends from the spool.
      // (The index's collection, for a large run, takes the states along.)
      journal.releaseStates();
      plan.refs.clear();
      if (journal.resumed || prior.settled.size) {
        output.info(
          `Resuming: ${prior.settled.size} of ${plan.payoutCount} payouts were sent earlier and will not be sent again.`,
        );
      }
      await sendFromSpool(spool, prior.settled, engine);
      await engine.finish();
    } finally {
      progress.stop();
      await journal.close();
    }
  } catch (err) {
    outcomes.remove();
    throw err;
  } finally {
    await lock.release();
  }
  try {
    return await finishRun(plan, opts, intake, currencies, service, engine, journal.runId, deps);
  } finally {
    outcomes.remove();
  }
}

/** Pass 2: reads the validated payouts back from the spool and hands each to the engine, or records it as sent earlier. */
async function sendFromSpool(
  spool: PayoutSpool,
  settled: PriorState['settled'],
  engine: SendEngine,
): Promise<void> {
  await spool.read(({ payout, hash }) => {
    if (engine.stopping) return undefined;
    const known = settled.get(payout.reference_id);
    if (known) {
      engine.addSentEarlier(payout, known);
      return undefined;
    }
    engine.enqueue({ payout, hash });
    return engine.ready();
  });
}

/** Renders results, writes reports and decides the exit code. */
async function finishRun(
  plan: RunPlan,
  opts: SendOptions,
  intake: IntakeOptions,
  currencies: CurrencyTable,
  service: ServiceConnection,
  engine: SendEngine,
  runId: string,
  deps: SendDeps,
): Promise<number> {
  const { output } = deps;
  const outcomes = engine.outcomes;
  const interrupted = deps.interrupt.aborted;
  const batchReference = plan.batchReference ?? [...engine.batchReferences][0];
  const lookup = (row: number, ref: string) => outcomes.forRow(row, ref);
  if (opts.reportPath) await writeReport(opts.reportPath, plan.sources, intake, lookup);
  let failedOut = 0;
  if (opts.failedOutPath)
    failedOut = await writeFailedOut(opts.failedOutPath, plan.sources, intake, lookup);
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
  if (output.json) await output.printJsonWithRawList(head, 'results', outcomes.resultListText());
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
        closingLine(summary, output.color),
    );
  }
  if (opts.reportPath) output.info(`Report written to ${opts.reportPath}`);
  if (opts.failedOutPath)
    output.info(
      `${failedOut} row${failedOut === 1 ? '' : 's'} known not to be paid written to ${opts.failedOutPath}`,
    );
  const codes: ExitCodeValue[] = [exitCodeForStatuses(outcomes.statusKinds())];
  // Payouts of unknown outcome must be checked first: exit 7 then outranks the interruption.
  if (interrupted && !engine.unknown.length) {
    const notSent = counts.notSent;
    output.warn(
      `interrupted: ${notSent} payout${notSent === 1 ? '' : 's'} not sent. Run the same command again to resume; nothing will be sent twice.`,
    );
    codes.push(exitCodeForError(new InterruptedError('interrupted')));
  }
  if (engine.fatal) {
    output.error(engine.fatal.message);
    if (engine.unknown.length)
      output.info(`Outcome unknown: ${engine.unknown.map(displayText).join(', ')}`);
    codes.push(exitCodeForError(engine.fatal));
  }
  return worstExitCode(codes);
}
