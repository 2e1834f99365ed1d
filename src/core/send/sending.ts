/**
 * The service's lock (one sending run per service; `--wait` waits for another's), and a decided
 * run under it: its state opened (the staged rows become the run, or
 * resume it), what an earlier attempt left in flight read back, then every row handed to the
 * engine in row order, or recorded as sent earlier; whatever stops the run, every row gets an
 * outcome.
 */
import { systemClock } from '../../clock.js';
import { heldKind, OUTCOME_UNKNOWN } from '../../domain/statuses.js';
import { OutcomeUnknownError } from '../../errors.js';
import type { Progress } from '../../output/output.js';
import { type OutcomeResult, RunState, runIdFor } from '../../state/index.js';
import type { ServiceConnection } from '../service.js';
import { SendingLine } from './aside.js';
import { DEFAULT_SEND_RETRY, SendEngine } from './engine.js';
import {
  type Decision,
  decidingOf,
  type Facts,
  type InFlight,
  inFlightOf,
  type SentEarlier,
  sentEarlier,
} from './fates.js';
import { Pace } from '../pace.js';
import { concurrencyOf, runReportStyle } from './options.js';
import { storedStyle } from '../report-style.js';
import {
  heldTexts,
  type Proof,
  partsOf,
  type ReadBackResult,
  readBack,
  standing,
} from './readback.js';
import { lastCheckedText } from '../status/keep.js';
import { chargeMinorOf } from './render.js';
import type { SendContext } from './staging.js';
import { payouts } from './summary.js';

/** A run's decision as it is sent: the payouts sent earlier (not sent again) and those to read back. */
export interface Decided {
  decision: Decision;
  /** What the decision was made from: proofs stand only against the same held rows. */
  facts: Facts;
  nothingToSend: boolean;
  /** Payouts --check-service found at the service, recorded as the run's results. */
  found: OutcomeResult[];
  /** What a read-back before the lock established (readBackAhead). */
  ahead?: Ahead;
}

/** What a read-back before the lock established, by reference, and a refused secret that stopped it. */
export interface Ahead {
  proofs: ReadonlyMap<string, Proof>;
  fatal?: Error;
}

/**
 * What is left of a decision while sending: what was sent earlier, what is to read back, and
 * the payouts in doubt another live send decides (by row, its run), left to it.
 */
interface Left {
  earlier: Map<number, SentEarlier>;
  inFlight: Map<string, InFlight>;
  deciding: Map<number, string>;
}

/** A connected run's state and engine, from opening its state to its last outcome. */
export interface Sending {
  state: RunState;
  engine: SendEngine;
  /** An error thrown once the run had begun: its rows are reported all the same. */
  thrown?: unknown;
}

/** Sends what `decided` left to send; every row gets an outcome, whatever stops the run. */
export async function sendDecided(
  ctx: SendContext,
  service: ServiceConnection,
  decided: Decided,
): Promise<Sending> {
  const { output, plan } = ctx;
  const now = (ctx.deps.clock ?? systemClock).now();
  const left: Left = {
    earlier: lastChecked(sentEarlier(decided.decision), now),
    inFlight: inFlightOf(decided.decision),
    deciding: decidingOf(decided.decision),
  };
  const state = await openRunState(ctx, service, decided.nothingToSend);
  state.recordOutcome(-1, decided.found);
  const progress = decided.nothingToSend ? undefined : await output.progress('Sending payouts…');
  // The live line counts what this run may send, not the payouts sent earlier.
  const sending = plan.payoutCount - left.earlier.size;
  const engine = newRunEngine(ctx, service, state, { progress, sending });
  let thrown: unknown;
  try {
    await readBackInFlight(ctx, left, { engine, state, decided });
    await sendRows(state, left, engine);
    await engine.finish();
  } catch (error) {
    thrown = error;
    await windDown(error, { state, left, engine });
  } finally {
    progress?.stop();
  }
  thrown ??= leftToOthers(left);
  try {
    await state.close();
  } catch (error) {
    thrown ??= error;
  }
  return { state, engine, thrown };
}

/**
 * Payouts sent earlier that are not final, told when the service last said so and how to ask
 * it again (a re-run never calls a payout pending without saying how old that word is).
 */
function lastChecked(earlier: Map<number, SentEarlier>, now: number): Map<number, SentEarlier> {
  const out = new Map<number, SentEarlier>();
  for (const [row, e] of earlier) {
    const open =
      !e.outcome.retried_as && heldKind({ state: 'done', status: e.outcome.status }) === 'pending';
    const message = open ? lastCheckedText(e.checkedAt, now) : undefined;
    out.set(row, message ? { ...e, outcome: { ...e.outcome, message } } : e);
  }
  return out;
}

/**
 * Opens the run's state: the staged rows become the run, or resume it when sent before. With
 * a shared history, the run is adopted there first, and every commit goes there as well; the
 * commits go to the writer that staging started.
 */
async function openRunState(
  ctx: SendContext,
  service: ServiceConnection,
  sendsNothing: boolean,
): Promise<RunState> {
  const { plan, deps, staging } = ctx;
  const now = () => new Date((deps.clock ?? systemClock).now());
  const header = {
    service: service.sandbox ? 'sandbox' : service.settings.baseUrl,
    client_id: service.settings.clientId,
    inputs: plan.sources.map((s) => s.name),
    input_hash: plan.inputHash,
    payout_count: plan.payoutCount,
    ...(plan.batchReference ? { batch_reference: plan.batchReference } : {}),
    csv_style: storedStyle(runReportStyle(ctx.opts, plan).style),
    send_args: deps.fileArgs ?? [],
  };
  const runId = runIdFor(service.serviceKey, plan.inputHash);
  const adopted = await staging.history.adopt(staging.rows, {
    runId,
    serviceKey: service.serviceKey,
    header,
    now: now().toISOString(),
    sendsNothing,
  });
  const state = RunState.open({
    ...(staging.writer ? { writer: staging.writer } : {}),
    db: staging.rows.db,
    runId,
    chargeMinor: chargeMinorOf(ctx.currencies),
    ...(deps.clock ? { now } : {}),
    ...adopted,
  });
  staging.kept = true;
  return state;
}

/**
 * The engine of a run, reporting progress and waits on `live.progress` (a spinner's line),
 * counted out of the `live.sending` payouts this run may send.
 */
function newRunEngine(
  ctx: SendContext,
  service: ServiceConnection,
  state: RunState,
  live: { progress: Progress | undefined; sending: number },
): SendEngine {
  const { opts, plan, deps, output } = ctx;
  const clock = deps.clock ?? systemClock;
  const began = clock.now();
  const line = new SendingLine(live.progress, live.sending, () => ({
    inFlight: engine.pace.inFlight,
    aside: engine.aside.count,
    rate: (n) => Math.round((n * 1000) / Math.max(1, clock.now() - began)),
  }));
  const engine: SendEngine = new SendEngine(
    {
      client: service.client,
      journal: state,
      outcomes: state.outcomes,
      interrupt: deps.interrupt,
      finishNow: deps.finishNow,
      interactive: output.interactive,
      warn: (m) => output.warn(m),
      progress: (d) => line.advance(d.payouts),
      paceChanged: (limit, why) => output.debug(`pace: ${limit} requests at a time (${why})`),
      wait: (what, ms, text) => line.wait(what, ms, text),
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
  return engine;
}

/**
 * Reads back the payouts an earlier attempt left in flight, before anything new is sent: what
 * a read-back before the lock proved, while the history is as it was read against, stands;
 * the rest is read back now.
 */
async function readBackInFlight(
  ctx: SendContext,
  left: Left,
  run: { engine: SendEngine; state: RunState; decided: Decided },
): Promise<void> {
  if (!left.inFlight.size) return;
  const items = [...left.inFlight.values()];
  const { decided, state } = run;
  const { ahead } = decided;
  const proven = standing(items, ahead?.proofs ?? new Map(), decided.facts.held);
  const rest = items.filter((i) => !proven.has(i.payout.reference_id));
  const r: ReadBackResult = { outcomes: proven, ...(ahead?.fatal ? { fatal: ahead.fatal } : {}) };
  if (rest.length) {
    ctx.output.info(
      `Reading back ${payouts(rest.length)} whose earlier request has no recorded outcome…`,
    );
    const read = await run.engine.readBackEarlier(rest, latestSentAt(rest));
    for (const [ref, o] of read.outcomes) r.outcomes.set(ref, o);
    if (read.fatal) r.fatal = read.fatal;
  }
  const parts = partsOf(items, r);
  const found = parts.settled.map(({ item, result }) => ({
    ref: item.payout.reference_id,
    ...result,
  }));
  if (found.length) state.recordOutcome(-1, found);
  for (const { item, result } of parts.settled) {
    const { currency, amount } = item.payout;
    left.earlier.set(item.row, { outcome: result, currency, amount, runId: state.runId, at: null });
    left.inFlight.delete(item.payout.reference_id);
  }
  const notFound = parts.notFound.map((i) => i.payout.reference_id);
  if (notFound.length) state.recordNotApplied(-1, notFound, 'not found when read back');
  for (const ref of notFound) left.inFlight.delete(ref);
  const unknown = parts.unknown.map(([i]) => i.payout.reference_id);
  if (!unknown.length) return;
  state.recordUnknown(unknown, 'could not be read back');
  throw (
    r.fatal ??
    new OutcomeUnknownError(
      `${unknown.length} payout${unknown.length === 1 ? '' : 's'} of an earlier attempt may have been sent, and could not be read back from the service; nothing new was sent: run the same command again when the service answers`,
      unknown,
    )
  );
}

/** A payout an earlier attempt may have sent whose read-back did not finish: read back next time. */
const IN_DOUBT = {
  status: OUTCOME_UNKNOWN,
  message: 'outcome unknown: an earlier request carried it, and it was not read back',
};

/** A payout in doubt that another live send decides: left to it, reported in doubt. */
function decidedElsewhere(runId: string): { status: string; message: string } {
  return {
    status: OUTCOME_UNKNOWN,
    message: `outcome unknown: a request of run ${runId} carried it, and another payouts send running now decides that run (it reads it back, or is sending it); this run left it to that send`,
  };
}

/** What stops a run that left payouts in doubt to the sends deciding them: exit 7, run again. */
function leftToOthers(left: Left): OutcomeUnknownError | undefined {
  const n = left.deciding.size;
  if (!n) return undefined;
  const runs = [...new Set(left.deciding.values())].join(', ');
  return new OutcomeUnknownError(
    `${payouts(n)} in doubt ${n === 1 ? 'is' : 'are'} decided by another payouts send running now (run ${runs}: it reads ${n === 1 ? 'it' : 'them'} back, or is sending ${n === 1 ? 'it' : 'them'}); this run left ${n === 1 ? 'it' : 'them'} to that send and sent the rest. Run the same command again once it has finished; nothing will be sent twice`,
    [],
  );
}

/** The latest time a request of these payouts in flight went out. */
function latestSentAt(items: readonly InFlight[]): number {
  return items.reduce((latest, i) => Math.max(latest, i.sentAt), 0);
}

/**
 * Hands the run's payouts to the engine in row order, from row `from` on, or records them as
 * sent earlier. Once the run stops, the rest are not sent, and those an earlier attempt left
 * in flight (not read back) are in doubt.
 */
async function sendRows(state: RunState, left: Left, engine: SendEngine, from = 0): Promise<void> {
  for (const { row, payout, hash } of state.payouts()) {
    if (row < from) continue;
    const known = left.earlier.get(row);
    if (known) {
      engine.record(payout, { ...known.outcome, sent_earlier: true });
      continue;
    }
    const decider = left.deciding.get(row);
    if (decider !== undefined) {
      engine.record(payout, decidedElsewhere(decider));
      engine.unknown.push(payout.reference_id);
      continue;
    }
    // Every row has an outcome, whatever stopped the run: those never reached were not sent.
    if (engine.stopping) {
      const inDoubt = left.inFlight.get(payout.reference_id)?.row === row;
      engine.record(payout, inDoubt ? IN_DOUBT : { status: 'not_sent' });
      continue;
    }
    engine.enqueue({ payout, hash });
    await engine.ready();
  }
}

/**
 * After an error thrown mid-run: no new request starts, those in flight settle, and every
 * row gets an outcome, so the results and --report still list them all.
 */
async function windDown(
  error: unknown,
  run: { state: RunState; left: Left; engine: SendEngine },
): Promise<void> {
  const { engine } = run;
  engine.fatal ??= error instanceof Error ? error : new Error(String(error));
  try {
    await engine.finish();
  } catch {
    // The error that stopped the run is the one reported.
  }
  await sendRows(run.state, run.left, engine, engine.rowCount);
}

/**
 * Reads back, before the service's lock, the payouts in doubt this send decides (its claims
 * keep other sends off them, facts.ts): a lookup sends nothing, so the sends queued for the
 * lock go on while this one waits out the quiet time (issue 51). What it established, "could
 * not read it back" and a stop included, is recorded under the lock, where it stands while the
 * history holds what it was read against (readback.ts), as if read there.
 */
export async function readBackAhead(
  ctx: SendContext,
  service: Pick<ServiceConnection, 'client' | 'timing'>,
  decided: Pick<Decided, 'decision' | 'facts'>,
): Promise<Ahead> {
  const items = [...inFlightOf(decided.decision).values()];
  const { output, deps } = ctx;
  const them = payouts(items.length);
  output.info(
    `Reading back ${them} whose earlier request has no recorded outcome, before taking the service's lock: other sends go on meanwhile…`,
  );
  const clock = deps.clock ?? systemClock;
  const quietMs = service.timing.quietMs;
  const progress = await output.progress(`Reading back ${them}…`);
  let r: ReadBackResult;
  try {
    const quiet = { quietAt: latestSentAt(items) + quietMs, intervalMs: quietMs };
    r = await readBack(items, quiet, {
      client: service.client,
      clock,
      interrupt: deps.interrupt,
      notify: (m) => output.warn(m),
      wait: (what, ms) => progress.wait(what, ms),
      why: { told: false },
      pace: new Pace({ initial: 4, max: 16, clock }),
    });
  } finally {
    progress.stop();
  }
  const texts = heldTexts(decided.facts.held, new Set(items.map((i) => i.row)));
  const proofs = new Map<string, Proof>();
  for (const i of items) {
    const ref = i.payout.reference_id;
    const outcome = r.outcomes.get(ref) ?? { kind: 'unknown', why: 'it was not read back' };
    proofs.set(ref, { outcome, against: texts.get(i.row) ?? '' });
  }
  return { proofs, ...(r.fatal ? { fatal: r.fatal } : {}) };
}
