import { systemClock } from '../../clock.js';
import { BusyError, UsageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { CurrencyTable } from '../../money/currencies.js';
import type { Output } from '../../output/output.js';
import { waitForLock } from './wait-lock.js';
import type { OutcomeResult } from '../../state/index.js';
import type { PriorRow } from '../../domain/history.js';
import { type RunIntake, type RunState, runIdFor, stagedPayouts } from '../../state/index.js';
import { historyLabel } from '../../state/pg/url.js';
import { SANDBOX_SERVICE_KEY, type ServiceConnection } from '../service.js';
import type { SendEngine } from './engine.js';
import { newRunEngine, openRunState } from './open-run.js';
import { checkOutputFiles, concurrencyOf, type SendOptions } from './options.js';
import { planRun, type RunPlan } from './plan.js';
import { approvalDocOf } from '../approvals/gate.js';
import { nothingToSendNotes, type SummaryNotes, summaryNotes } from './notes.js';
import { applyReadBack, type PriorState, priorState } from './resume.js';
import { checkCredentials, refuseFailedEarlier, refuseRetries } from './failed-earlier.js';
import { finishRun } from './results.js';
import { proveOriginalsUnpaid } from './retry-proof.js';
import { noHistoryWarning } from './next-steps.js';
import { sendRows, windDown } from './rows.js';
import {
  EarlyService,
  endStaging,
  intakeOf,
  openSources,
  type SendDeps,
  type Staging,
  stage,
} from './staging.js';
import { type CheckItem, dryRunPrior, settleAtService } from './service-check.js';
import { checkMaxTotals, freshSplit, type RunSplit, sendsNothing, splitRun } from './split.js';
import {
  type Destination,
  dryRunDoc,
  formatRequestBody,
  nothingToSendText,
  payouts,
  questionText,
  summaryText,
} from './summary.js';

export type { SendDeps };

/**
 * Runs `payouts send`: validate everything, summarise, confirm, send, report. Returns the exit
 * code. `--approved RUN` sends the approved run's payouts as a file (`approvals/send.ts`).
 */
export async function runSend(opts: SendOptions, deps: SendDeps): Promise<number> {
  checkOutputFiles(opts, deps);
  if ((opts.prepare || opts.approved !== undefined) && !deps.stateUrl) {
    const { needsSharedHistory } = await import('../approvals/common.js');
    throw needsSharedHistory(opts.prepare ? 'send --prepare' : 'send --approved');
  }
  const { approved } = opts;
  if (approved === undefined || !deps.stateUrl) return sendFiles(opts, deps);
  const { sendApproved } = await import('../approvals/send.js');
  return sendApproved({ ...opts, approved }, { ...deps, stateUrl: deps.stateUrl }, sendFiles);
}

/** `payouts send FILES`, once --approved has become a file. */
async function sendFiles(opts: SendOptions, deps: SendDeps): Promise<number> {
  const currencies = new CurrencyTable(opts.allowCurrencies);
  // What a send needs opens while the files are read: the client, the credentials, the writer.
  const early =
    opts.dryRun || opts.prepare || opts.sandbox ? undefined : new EarlyService(deps.connect);
  let staging: Staging | undefined;
  let failed = false;
  let cleanup = () => {};
  try {
    const opened = await openSources(opts.files, deps, !opts.dryRun);
    cleanup = opened.cleanup;
    staging = await stage(opts, deps);
    const plan = await planRun(opened.sources, {
      intake: intakeOf(opts, currencies),
      currencies,
      chunkSize: opts.chunkSize,
      commandLine: deps.commandLine,
      batchReference: opts.batchReference,
      webhookUrl: opts.webhookUrl,
      warn: (m) => deps.output.warn(m),
      withHashes: !opts.dryRun,
      rows: staging.rows,
    });
    const connect = early ? () => early.take() : deps.connect;
    const run = new SendRun({ opts, deps: { ...deps, connect }, currencies, plan, staging });
    if (opts.prepare) return await run.prepare();
    return opts.dryRun ? await run.preview() : await run.send();
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    await early?.drop();
    if (staging) {
      await endStaging(staging, failed);
      await staging.history.close();
    }
    cleanup();
  }
}

/** What a run decided before sending: what earlier runs hold, and whether a person was asked. */
interface Decision {
  rows: PriorRow[];
  prior: PriorState;
  nothingToSend: boolean;
  asked: boolean;
}

/** A connected run's state and engine, from opening its state to its last outcome. */
interface Sending {
  state: RunState;
  engine: SendEngine;
  /** An error thrown once the run had begun: its rows are reported all the same. */
  thrown?: unknown;
}

/**
 * One `payouts send` once pass 1 has read its files: the options, the plan, the staged rows
 * and the currency table. `preview` is --dry-run; `send` resolves what earlier runs did, asks,
 * sends under the service's run lock, and renders the results.
 */
export class SendRun {
  readonly opts: SendOptions;
  readonly deps: SendDeps;
  readonly currencies: CurrencyTable;
  readonly plan: RunPlan;
  private readonly staging: Staging;
  /** Payouts --check-service found at the service, recorded as this run's results. */
  private foundAtService: OutcomeResult[] = [];
  /** The summary's new recipients and approval lines, once the service is known. */
  private notes: SummaryNotes | undefined;

  constructor(parts: {
    opts: SendOptions;
    deps: SendDeps;
    currencies: CurrencyTable;
    plan: RunPlan;
    staging: Staging;
  }) {
    this.opts = parts.opts;
    this.deps = parts.deps;
    this.currencies = parts.currencies;
    this.plan = parts.plan;
    this.staging = parts.staging;
  }

  get output(): Output {
    return this.deps.output;
  }

  /** Where the run goes, for its summary. */
  destination(where: { baseUrl?: string; profile?: string }): Destination {
    const { opts } = this;
    return {
      ...where,
      sandbox: opts.sandbox,
      chunkSize: opts.chunkSize,
      concurrency: concurrencyOf(opts),
      history:
        this.deps.stateUrl && !opts.sandbox ? historyLabel(this.deps.stateUrl) : 'this folder only',
    };
  }

  /** --dry-run: the summary, split by what this folder's runs sent earlier, and the first request. */
  async preview(): Promise<number> {
    const { opts, plan, currencies, output } = this;
    const where = opts.sandbox
      ? {
          baseUrl: '(sandbox, started when sending)',
          profile: 'sandbox',
          serviceKey: SANDBOX_SERVICE_KEY,
        }
      : await this.deps.preview();
    let split: RunSplit | null = null;
    if (where.serviceKey !== undefined) {
      const prior = refuseRetries(await dryRunPrior(this, where.serviceKey), this.rows);
      split = splitRun(plan, prior, currencies, opts.chunkSize);
    }
    checkMaxTotals(split ?? freshSplit(plan), opts.maxTotals, currencies);
    // The rule is about what moves: a run that sends nothing needs no approval.
    const notes =
      split && sendsNothing(split)
        ? nothingToSendNotes()
        : await summaryNotes(this, { ...where, sandbox: opts.sandbox });
    const view = { plan, split, dest: this.destination(where), maxTotals: opts.maxTotals, notes };
    if (output.json) {
      output.printJson(dryRunDoc(view, currencies));
      return ExitCode.ok;
    }
    // As before a send, the summary goes to stderr; stdout holds the request, when asked for.
    const first = plan.firstRequest;
    output.info(summaryText(view, currencies, output.errColor));
    if (opts.showRequest) {
      output.info(
        `Dry run: nothing was sent. The first request of the files (${payouts(first.payouts.length)}) is on standard output.`,
      );
      output.print(formatRequestBody(first));
    } else {
      output.info('Dry run: nothing was sent. --show-request prints the first request.');
    }
    return ExitCode.ok;
  }

  /** --prepare: records the run for another person's approval; sends nothing (`approvals/send.ts`). */
  async prepare(): Promise<number> {
    const { prepareRun } = await import('../approvals/send.js');
    return prepareRun(this);
  }

  /** Those of `recipients` the service's runs paid before, as the history knows. */
  paidRecipients(serviceKey: string, recipients: () => string[]): Promise<Set<string> | null> {
    return this.staging.history.paidRecipients(this.staging.rows, serviceKey, recipients);
  }

  /** The approval a send carries in its --json document (`approval`), when one let it go. */
  get approvalDoc() {
    return this.notes?.approved && approvalDocOf(this.notes.approved);
  }

  /** What its Approval: line said, for its --json document (`approval_status`). */
  get approvalStatus() {
    return this.notes?.status;
  }

  /** The run's staged rows. */
  get rows(): RunIntake {
    return this.staging.rows;
  }

  /** What the runs of a service hold about the staged rows. */
  priorRows(serviceKey: string): Promise<PriorRow[]> {
    return this.staging.history.prior(this.staging.rows, serviceKey);
  }

  /**
   * Connects, shows what will move and asks, then sends under the service's run lock (taken
   * only once the question is answered); renders once the lock is released.
   */
  async send(): Promise<number> {
    const { deps } = this;
    const service = await deps.connect();
    try {
      this.notes = await summaryNotes(this, service);
      const early = await this.refuseUnapproved(service);
      const approved = this.notes.approved;
      const { asked, lock } = await this.decideAndLock(service, early);
      let sent: Sending;
      try {
        const decided = await this.recheck(service, asked);
        if (approved) {
          const { claimRun } = await import('../approvals/send.js');
          await claimRun(this, service.serviceKey, approved, decided.nothingToSend);
        }
        sent = await this.sendLocked(service, decided);
      } catch (error) {
        // The error that stopped the run is the one to report, not one of giving the lock back.
        await lock.release().catch(() => {});
        throw error;
      }
      try {
        await lock.release();
      } catch (error) {
        // A lost connection gives the lock back by itself; the run's rows are reported all the same.
        sent.thrown ??= error;
      }
      return await finishRun(this, {
        service,
        engine: sent.engine,
        runId: sent.state.runId,
        thrown: sent.thrown,
      });
    } finally {
      // Closing waits for the requests in flight, which a run ended at once does not.
      const closed = service.close();
      if (deps.finishNow?.aborted) closed.catch(() => {});
      else await closed;
    }
  }

  /**
   * Decides what to send, asking unless --yes, and takes the service's lock: once the question
   * is answered, or under --yes (without --wait's live line) while the run is being decided.
   */
  private async decideAndLock(service: ServiceConnection, read?: PriorRow[]) {
    const early = this.opts.yes && this.opts.waitSeconds === undefined;
    const locking = early ? this.takeLock(service) : undefined;
    locking?.catch(() => {});
    try {
      const asked = await this.decide(service, read ?? (await this.priorRows(service.serviceKey)));
      return { asked, lock: await (locking ?? this.takeLock(service)) };
    } catch (error) {
      // The error that stopped the run is the one to report, not one of giving the lock back.
      await locking?.then((lock) => lock.release()).catch(() => {});
      throw error;
    }
  }

  /**
   * Refuses now a run the approval rule refuses (before any lock or lookup), unless what earlier
   * runs hold leaves it nothing to send: then the rows read are returned for deciding, and
   * `decide` refuses it all the same if it finds something to send.
   */
  private async refuseUnapproved(service: ServiceConnection): Promise<PriorRow[] | undefined> {
    const refusal = this.notes?.refusal;
    if (!refusal) return undefined;
    const rows = await this.priorRows(service.serviceKey);
    let split: RunSplit;
    try {
      const prior = priorState(rows, service.sandbox ? undefined : service.settings.clientId);
      split = splitRun(this.plan, prior, this.currencies, this.opts.chunkSize);
    } catch {
      throw refusal;
    }
    if (!sendsNothing(split)) throw refusal;
    return rows;
  }

  /** The service's lock; with --wait, waited for on a live line naming who holds it. */
  private takeLock(service: ServiceConnection): Promise<{ release(): Promise<void> }> {
    const { deps, plan } = this;
    const clock = deps.clock ?? systemClock;
    const take = () =>
      this.staging.history.lockService(service.serviceKey, {
        pid: deps.pid,
        command: deps.commandLine,
        startedAt: new Date(clock.now()).toISOString(),
        runId: runIdFor(service.serviceKey, plan.inputHash),
      });
    if (this.opts.waitSeconds === undefined) return take();
    return waitForLock(take, {
      seconds: this.opts.waitSeconds,
      output: this.output,
      clock,
      interrupt: deps.interrupt,
    });
  }

  /**
   * What earlier runs did with these payouts, and what this run will send: shown, and asked
   * about (nothing is asked when everything was sent earlier).
   */
  private async decide(service: ServiceConnection, rows: PriorRow[]): Promise<Decision> {
    const { opts, plan, currencies, output } = this;
    const clientId = service.sandbox ? undefined : service.settings.clientId;
    const prior = priorState(rows, clientId);
    this.foundAtService = [];
    if (!service.sandbox) await this.checkService(service, prior);
    refuseFailedEarlier(prior, this.staging.rows, runIdFor(service.serviceKey, plan.inputHash));
    await proveOriginalsUnpaid(this, service, prior);
    const split = splitRun(plan, prior, currencies, opts.chunkSize);
    checkMaxTotals(split, opts.maxTotals, currencies);
    const nothingToSend = sendsNothing(split);
    const asks = !nothingToSend && !service.sandbox && !opts.yes;
    // Never sent without the approval the rule asks, whatever was read or decided before.
    const files = this.notes?.files ?? this.notes;
    if (!nothingToSend && files?.refusal) throw files.refusal;
    if (nothingToSend) {
      const first = plan.firstRequest.payouts[0];
      if (!service.sandbox && first)
        await checkCredentials(service.client, first.reference_id, this.deps.interrupt);
      this.notes = nothingToSendNotes(files);
      output.info(nothingToSendText(split, this.notes.approval, output.errColor));
    } else {
      this.notes = files;
      const where = { baseUrl: service.settings.baseUrl, profile: service.settings.profile };
      const dest = this.destination(where);
      const view = { plan, split, dest, maxTotals: opts.maxTotals, notes: this.notes };
      output.info(summaryText(view, currencies, output.errColor));
      if (asks) await this.confirm(split);
    }
    return { rows, prior, nothingToSend, asked: asks };
  }

  /**
   * Under the lock, reads what earlier runs hold again: another run may have sent while the
   * question was open. Unchanged, the answer stands; changed after a question, nothing is
   * sent (the person answered about other figures); changed under --yes, decided again.
   */
  private async recheck(service: ServiceConnection, asked: Decision): Promise<Decision> {
    const rows = await this.priorRows(service.serviceKey);
    if (JSON.stringify(rows) === JSON.stringify(asked.rows)) return asked;
    if (asked.asked) {
      throw new BusyError(
        'while the question was open, another run recorded some of these payouts: nothing was sent. Run the same command again to see what is left to send',
        'another run',
      );
    }
    this.output.info('Another run recorded some of these payouts meanwhile; what is left:');
    return this.decide(service, rows);
  }

  /** Sends what `decided` left to send; every row gets an outcome, whatever stops the run. */
  private async sendLocked(service: ServiceConnection, decided: Decision): Promise<Sending> {
    const { output, plan } = this;
    const { prior, nothingToSend } = decided;
    const state = await openRunState(this, this.staging, service, nothingToSend);
    state.recordOutcome(-1, this.foundAtService);
    const progress = nothingToSend ? undefined : await output.progress('Sending payouts…');
    // The live line counts what this run may send, not the payouts sent earlier.
    const sending = plan.payoutCount - prior.settled.size;
    const engine = newRunEngine(this, service, state, { progress, sending });
    let thrown: unknown;
    try {
      await this.readBackInFlight(prior, engine, state);
      await sendRows(state, prior, engine);
      await engine.finish();
    } catch (error) {
      thrown = error;
      await windDown(error, { state, prior, engine });
    } finally {
      progress?.stop();
    }
    try {
      await state.close();
    } catch (error) {
      thrown ??= error;
    }
    return { state, engine, thrown };
  }

  /**
   * Before the summary, looks up with this run's credentials the payouts only runs under
   * another Client-Id recorded, and with --check-service every payout the history does not
   * know; those found are sent earlier (returned, with the count looked up). A --yes run with
   * no history of the service and no --check-service is warned of resending what others sent.
   */
  async checkService(service: ServiceConnection, prior: PriorState) {
    const items: CheckItem[] = [...prior.recheck.values()].map((r) => ({
      row: r.row,
      payout: r.payout,
      recordedBy: { runId: r.runId, clientId: r.clientId },
    }));
    if (this.opts.checkService) {
      for (const s of stagedPayouts(this.staging.rows)) {
        const known = prior.settled.has(s.row) || prior.recheck.has(s.row);
        if (!known && !prior.inFlight.has(s.payout.reference_id)) items.push(s);
      }
    } else if (this.opts.yes && !(await this.historyKnows(service.serviceKey))) {
      this.output.warn(noHistoryWarning(this.staging.history.name, service, this.deps));
    }
    prior.recheck.clear();
    if (!items.length) return { looked: 0, found: [] };
    const { clock = systemClock, interrupt } = this.deps;
    const ctx = { service, output: this.output, clock, interrupt };
    this.foundAtService.push(...(await settleAtService(items, prior, ctx)));
    return { looked: items.length, found: this.foundAtService };
  }

  /** Whether the history holds any run of the service. */
  private historyKnows(serviceKey: string): Promise<boolean> {
    return this.staging.history.holdsService(this.staging.rows, serviceKey);
  }

  /** Asks on a terminal, naming what will move; elsewhere --yes is required. */
  private async confirm(split: RunSplit): Promise<void> {
    const { output } = this;
    if (!output.interactive) {
      throw new UsageError(
        'no terminal to confirm on: pass --yes to send without asking (nothing was sent)',
      );
    }
    const question = questionText(split, this.currencies);
    if (!(await output.confirm(question))) throw new UsageError('not confirmed: nothing was sent');
  }

  /** Reads back the payouts an earlier attempt left in flight, before anything new is sent. */
  private async readBackInFlight(
    prior: PriorState,
    engine: SendEngine,
    state: RunState,
  ): Promise<void> {
    if (!prior.inFlight.size) return;
    this.output.info(
      `Reading back ${payouts(prior.inFlight.size)} whose earlier request has no recorded outcome…`,
    );
    const items = [...prior.inFlight.values()];
    const sentAt = items.reduce((latest, i) => Math.max(latest, i.sentAt), 0);
    applyReadBack(prior, await engine.readBackEarlier(items, sentAt), state);
  }
}
