/**
 * `payouts send`, from top to bottom: the files read, checked and staged (pass 1); then a dry
 * run's summary, --prepare (approvals/prepare.ts), or the send: each row's fate decided from
 * what the history holds and the service answers (decide.ts, facts.ts), the summary and the
 * question, the service's lock, the rows sent (sending.ts), the results (results.ts). Every
 * step takes the run's context (SendContext): options, plan, history, output.
 */
import { BusyError, UsageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { CurrencyTable } from '../../money/currencies.js';
import { runIdFor } from '../../state/index.js';
import {
  approvalDocOf,
  approvalNoteOf,
  claimRun,
  nothingToSendNotes,
  refuseEarly,
  refuseUnapproved,
  type SummaryNotes,
  summaryNotes,
} from '../approvals/send.js';
import { SANDBOX_SERVICE_KEY, type ServiceConnection } from '../service.js';
import { decide } from './decide.js';
import {
  checkCredentials,
  type Deciding,
  decideAsking,
  factsOf,
  noHistoryWarning,
  type Read,
  readAndDecide,
  refuse,
  tellingOf,
} from './facts.js';
import {
  type Facts,
  foundAtService,
  freshSplit,
  inFlightOf,
  type RunSplit,
  sendsNothing,
  splitOf,
} from './fates.js';
import { checkOutputFiles, type SendOptions } from './options.js';
import { planRun } from './plan.js';
import { checkMaxTotals } from './refusals.js';
import { finishRun } from './results.js';
import { type Decided, type Sending, sendDecided } from './sending.js';
import { lockRequest, readBackFirst, takeLock } from './wait-lock.js';
import {
  EarlyService,
  endStaging,
  intakeOf,
  openSources,
  type SendContext,
  type SendDeps,
  type Staging,
  stage,
} from './staging.js';
import {
  destinationOf,
  dryRunDoc,
  formatRequestBody,
  heldAtServiceLine,
  nothingToSendText,
  notLookedUpLine,
  payouts,
  questionText,
  summaryText,
} from './summary.js';

export type { SendDeps };

/**
 * Runs `payouts send`: validate everything, summarise, confirm, send, report. Returns the exit
 * code. `--approved RUN` sends the approved run's payouts as a file (`approvals/prepare.ts`).
 */
export async function runSend(opts: SendOptions, deps: SendDeps): Promise<number> {
  checkOutputFiles(opts, deps);
  if ((opts.prepare || opts.approved !== undefined) && !deps.stateUrl) {
    const { needsSharedHistory } = await import('../approvals/common.js');
    throw needsSharedHistory(opts.prepare ? 'send --prepare' : 'send --approved');
  }
  const { approved } = opts;
  if (approved === undefined || !deps.stateUrl) return sendFiles(opts, deps);
  const { sendApproved } = await import('../approvals/prepare.js');
  return sendApproved({ ...opts, approved }, { ...deps, stateUrl: deps.stateUrl }, sendFiles);
}

/** `payouts send FILES`, once --approved has become a file: pass 1, then the run's way. */
async function sendFiles(opts: SendOptions, deps: SendDeps): Promise<number> {
  const currencies = new CurrencyTable(opts.allowCurrencies);
  // What a send needs opens while the files are read: the client, the credentials, the writer.
  const early =
    opts.dryRun || opts.prepare || opts.sandbox ? undefined : new EarlyService(deps.connect);
  let staging: Staging | undefined;
  let failed = false;
  let cleanup = () => {};
  try {
    // A dry run hashes its files only to know its run, as --check-service decides as a send.
    const hashing = !opts.dryRun || Boolean(opts.checkService && !opts.sandbox);
    const opened = await openSources(opts.files, deps, hashing);
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
    const ctx = {
      opts,
      deps: { ...deps, connect },
      output: deps.output,
      currencies,
      plan,
      staging,
    };
    if (opts.prepare) return await (await import('../approvals/prepare.js')).prepareRun(ctx);
    return opts.dryRun ? await preview(ctx) : await send(ctx);
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

/** --dry-run: the summary, split by each row's fate, and the first request. */
async function preview(ctx: SendContext): Promise<number> {
  const { opts, plan, currencies, output } = ctx;
  const where = opts.sandbox
    ? {
        baseUrl: '(sandbox, started when sending)',
        profile: 'sandbox',
        serviceKey: SANDBOX_SERVICE_KEY,
      }
    : await ctx.deps.preview();
  const split = where.serviceKey === undefined ? null : await dryRunSplit(ctx, where.serviceKey);
  checkMaxTotals(split ?? freshSplit(plan), opts.maxTotals, currencies);
  // The rule is about what moves: a run that sends nothing needs no approval.
  const notes =
    split && sendsNothing(split) && where.serviceKey !== undefined
      ? nothingToSendNotes(
          undefined,
          await approvalNoteOf(ctx, { serviceKey: where.serviceKey, sandbox: opts.sandbox }),
        )
      : await summaryNotes(ctx, { ...where, sandbox: opts.sandbox });
  const view = { plan, split, dest: destinationOf(ctx, where), maxTotals: opts.maxTotals, notes };
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

/**
 * A dry run's split: from the history alone, or with --check-service decided as a send
 * decides, the service asked what the send asks (so its credentials are needed).
 */
async function dryRunSplit(ctx: SendContext, serviceKey: string): Promise<RunSplit> {
  const { opts, plan, currencies, output } = ctx;
  if (!opts.checkService || opts.sandbox) {
    const decision = decide(await factsOf(ctx, { serviceKey }), 'dry-run');
    refuse(decision, tellingOf(ctx));
    const line = opts.sandbox ? undefined : notLookedUpLine(decision);
    if (line) output.info(line);
    return splitOf(decision, plan, currencies, opts.chunkSize);
  }
  const service = await ctx.deps.connect();
  try {
    const who = { ...whoDecides(ctx, service), serviceKey };
    const facts = await factsOf(ctx, who);
    const telling = tellingOf(ctx, who.clientId);
    const asking = { ...askingOf(ctx, service), telling };
    const { decision, asked } = await decideAsking(facts, decide(facts, 'send'), asking);
    output.info(heldAtServiceLine(asked, decision));
    refuse(decision, telling);
    return splitOf(decision, plan, currencies, opts.chunkSize);
  } finally {
    await service.close();
  }
}

/** Whose decision a send's is: the service, the Client-Id (none in the sandbox), the run. */
function whoDecides(ctx: SendContext, service: ServiceConnection): Deciding {
  const { opts, plan } = ctx;
  return {
    serviceKey: service.serviceKey,
    ...(service.sandbox ? {} : { clientId: service.settings.clientId }),
    runId: runIdFor(service.serviceKey, plan.inputHash),
    checkService: opts.checkService && !service.sandbox,
  };
}

/** What asking the service needs. */
function askingOf(ctx: SendContext, service: ServiceConnection) {
  return { service, output: ctx.output, clock: ctx.deps.clock, interrupt: ctx.deps.interrupt };
}

/** A send's decision once shown (and asked about), with what it was decided from. */
interface Shown extends Decided {
  facts: Facts;
  notes: SummaryNotes;
  /** Whether a person was asked: the figures they answered about must not change. */
  asked: boolean;
}

/**
 * Connects, decides each row's fate, shows what will move and asks, then sends under the
 * service's lock (taken once the question is answered); renders once the lock is released.
 */
async function send(staged: SendContext): Promise<number> {
  const service = await staged.deps.connect();
  // The runs this send decides, claimed as it reads the history, until it ends (facts.ts).
  const claims = staged.staging.history.runClaims(lockRequest(staged, service.serviceKey));
  const ctx = { ...staged, claims };
  try {
    const notes = await summaryNotes(ctx, service);
    const who = whoDecides(ctx, service);
    // The rule refuses now, before any lock or lookup, a run that moves money whatever the
    // service answers; the rows read are decided with.
    const read = notes.refusal ? await readAndDecide(ctx, who) : undefined;
    if (read) refuseEarly(notes, splitOf(read.first, ctx.plan, ctx.currencies, 1));
    const { shown, lock } = await decideAndLock(ctx, { service, who, notes }, read);
    let decided: Shown;
    let sent: Sending;
    try {
      decided = await recheck(ctx, { service, who, notes }, shown);
      if (notes.approved)
        await claimRun(ctx, service.serviceKey, notes.approved, decided.nothingToSend);
      sent = await sendDecided(ctx, service, decided);
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
    const final = decided.notes;
    const approval = {
      status: final.status,
      doc: final.approved && approvalDocOf(final.approved),
      changes: final.changes?.doc,
    };
    const { engine, state, thrown } = sent;
    const { elsewhere } = decided.decision;
    const runId = state.runId;
    return await finishRun(ctx, { service, engine, runId, thrown, approval, elsewhere });
  } finally {
    await claims.release().catch(() => {});
    // Closing waits for the requests in flight, which a run ended at once does not.
    const closed = service.close();
    if (ctx.deps.finishNow?.aborted) closed.catch(() => {});
    else await closed;
  }
}

/** What deciding a send needs besides its context. */
interface SendSide {
  service: ServiceConnection;
  who: Deciding;
  /** The summary's notes as the files stand, before anything was decided. */
  notes: SummaryNotes;
}

/**
 * Decides and shows what to send, asking unless --yes, and takes the service's lock: once the
 * question is answered, or under --yes (without --wait's live line) while the run is decided.
 */
async function decideAndLock(ctx: SendContext, side: SendSide, read?: Read) {
  const early = ctx.opts.yes && ctx.opts.waitSeconds === undefined;
  const locking = early ? takeLock(ctx, side.service) : undefined;
  locking?.catch(() => {});
  try {
    const shown = await decideShown(ctx, side, read ?? (await readAndDecide(ctx, side.who)));
    if (inFlightOf(shown.decision).size)
      return await readBackFirst(ctx, side.service, shown, locking);
    return { shown, lock: await (locking ?? takeLock(ctx, side.service)) };
  } catch (error) {
    // The error that stopped the run is the one to report, not one of giving the lock back.
    await locking?.then((lock) => lock.release()).catch(() => {});
    throw error;
  }
}

/**
 * Each row's fate, with the service's answers: shown, and asked about (nothing is asked when
 * everything was sent earlier). A run with no history of its service is warned under --yes.
 */
async function decideShown(ctx: SendContext, side: SendSide, read: Read): Promise<Shown> {
  const { opts, plan, currencies, output } = ctx;
  const { service } = side;
  if (!service.sandbox && !opts.checkService && opts.yes) {
    const { history, rows } = ctx.staging;
    if (!(await history.holdsService(rows, service.serviceKey)))
      output.warn(noHistoryWarning(history.name, service, ctx.deps));
  }
  const telling = tellingOf(ctx, side.who.clientId);
  const { facts, first } = read;
  const { decision, asked } = await decideAsking(facts, first, {
    ...askingOf(ctx, service),
    telling,
  });
  refuse(decision, telling);
  const split = splitOf(decision, plan, currencies, opts.chunkSize);
  checkMaxTotals(split, opts.maxTotals, currencies);
  const nothingToSend = sendsNothing(split);
  const files = side.notes.files ?? side.notes;
  refuseUnapproved(files, nothingToSend);
  const found = foundAtService(decision, asked);
  const shown = { facts, decision, nothingToSend, found, asked: false };
  if (nothingToSend) {
    const first = plan.firstRequest.payouts[0];
    if (!service.sandbox && first)
      await checkCredentials(service.client, first.reference_id, ctx.deps.interrupt);
    const notes = nothingToSendNotes(files);
    output.info(
      nothingToSendText(split, notes.silent ? undefined : notes.approval, output.errColor),
    );
    return { ...shown, notes };
  }
  const dest = destinationOf(ctx, {
    baseUrl: service.settings.baseUrl,
    profile: service.settings.profile,
  });
  output.info(
    summaryText(
      { plan, split, dest, maxTotals: opts.maxTotals, notes: files },
      currencies,
      output.errColor,
    ),
  );
  const asks = !service.sandbox && !opts.yes;
  if (asks) await confirm(ctx, split);
  return { ...shown, notes: files, asked: asks };
}

/**
 * Under the lock, reads what earlier runs hold again: another run may have sent while the
 * question was open. Unchanged, the answer stands; changed after a question, nothing is
 * sent (the person answered about other figures); changed under --yes, decided again.
 */
async function recheck(ctx: SendContext, side: SendSide, shown: Shown): Promise<Shown> {
  const read = await readAndDecide(ctx, side.who);
  if (JSON.stringify(read.facts.held) === JSON.stringify(shown.facts.held)) return shown;
  if (shown.asked) {
    throw new BusyError(
      'while the question was open, another run recorded some of these payouts: nothing was sent. Run the same command again to see what is left to send',
      'another run',
    );
  }
  ctx.output.info('Another run recorded some of these payouts meanwhile; what is left:');
  const ahead = shown.ahead ? { ahead: shown.ahead } : {};
  return { ...(await decideShown(ctx, { ...side, notes: shown.notes }, read)), ...ahead };
}

/** Asks on a terminal, naming what will move; elsewhere --yes is required. */
async function confirm(ctx: SendContext, split: RunSplit): Promise<void> {
  const { output } = ctx;
  if (!output.interactive) {
    throw new UsageError(
      'no terminal to confirm on: pass --yes to send without asking (nothing was sent)',
    );
  }
  const question = questionText(split, ctx.currencies);
  if (!(await output.confirm(question))) throw new UsageError('not confirmed: nothing was sent');
}
