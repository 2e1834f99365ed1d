import type { PayoutRequest } from '../../api/types.js';
import { InputError, OutcomeUnknownError, type Problem } from '../../errors.js';
import { fromRecord, type ReadBackDeps, readBack } from './readback.js';
import { type PriorState, priorState, type SentEarlier } from './resume.js';
import type { PriorRow } from '../../domain/history.js';
import type { Clock } from '../../clock.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import type { OutcomeResult } from '../../state/index.js';
import { Pace } from '../pace.js';
import type { ServiceConnection } from '../service.js';
import { payouts } from './summary.js';
import { refuseRetries } from './failed-earlier.js';
import { type ProvingRun, proveOriginalsUnpaid, retriesToSend } from './retry-proof.js';

/** A payout to look up at the service before the run decides to send it. */
export interface CheckItem {
  row: number;
  payout: PayoutRequest;
  /** The run, under another Client-Id, that recorded it as sent; none for --check-service. */
  recordedBy?: { runId: string; clientId: string };
}

/** The problem of a reference the service holds as another payout than the one recorded or to send. */
function otherPayout(item: CheckItem, why: string, clientId: string): Problem {
  const by = item.recordedBy;
  const recorded = by
    ? `run ${by.runId} recorded this payout as sent under Client-Id ${by.clientId}, but `
    : '';
  return {
    file: by ? `run ${by.runId}` : 'the service',
    field: 'reference_id',
    value: item.payout.reference_id,
    message: `${recorded}the service, asked with Client-Id ${clientId}, ${why.replace(/^the service /, '')}`,
  };
}

/**
 * Reads payouts back before anything is sent, with this run's credentials: found with the
 * same amount, currency and recipient, they were sent earlier (returned by row); not found,
 * they are to be sent; found as another payout, the run stops (InputError, exit 2). A lookup
 * that cannot be answered stops the run too: nothing was sent.
 */
export async function checkAtService(
  items: CheckItem[],
  deps: ReadBackDeps & { clientId: string },
): Promise<Map<number, SentEarlier>> {
  const found = new Map<number, SentEarlier>();
  if (!items.length) return found;
  // Nothing this history knows of was in progress for these: "not found" needs no wait.
  const r = await readBack(items, { quietAt: Number.NEGATIVE_INFINITY }, deps);
  if (r.fatal) throw r.fatal;
  const problems: Problem[] = [];
  const unknown: string[] = [];
  let why = '';
  for (const item of items) {
    const { payout } = item;
    const o = r.outcomes.get(payout.reference_id);
    if (o?.kind === 'found') {
      const outcome = {
        ...fromRecord(o.record),
        ...(item.recordedBy ? {} : { found_at_service: true }),
      };
      const runId = item.recordedBy?.runId ?? '';
      found.set(item.row, {
        outcome,
        currency: payout.currency,
        amount: payout.amount,
        runId,
        at: null,
      });
    } else if (o?.kind === 'other-payout') problems.push(otherPayout(item, o.why, deps.clientId));
    else if (o?.kind !== 'not-found') {
      unknown.push(payout.reference_id);
      why ||= o?.why ?? 'it was not read back';
    }
  }
  if (problems.length) throw new InputError(problems);
  if (unknown.length) {
    throw new OutcomeUnknownError(
      `could not look up ${unknown.length} payout${unknown.length === 1 ? '' : 's'} at the service before sending (${why}); nothing was sent: run the same command again when the service answers`,
      unknown,
    );
  }
  return found;
}

/**
 * Looks the items up at the service before the summary, with this run's credentials: those
 * found become sent earlier in `prior`, and are returned as the results the run records.
 */
export async function settleAtService(
  items: CheckItem[],
  prior: PriorState,
  ctx: { service: ServiceConnection; output: Output; clock: Clock; interrupt: AbortSignal },
): Promise<OutcomeResult[]> {
  const { service, output, clock } = ctx;
  output.info(`Looking up ${payouts(items.length)} at the service before sending…`);
  const found = await checkAtService(items, {
    client: service.client,
    clock,
    interrupt: ctx.interrupt,
    notify: (m) => output.warn(m),
    pace: new Pace({ initial: 4, max: 16, clock }),
    clientId: service.settings.clientId,
  });
  const byRow = new Map(items.map((i) => [i.row, i.payout.reference_id]));
  const results: OutcomeResult[] = [];
  for (const [row, s] of found) {
    prior.settled.set(row, s);
    const { status, transaction_id } = s.outcome;
    if (s.outcome.found_at_service) results.push({ ref: byRow.get(row)!, status, transaction_id });
  }
  return results;
}

/** How many payouts a dry run names of those the service holds; the rest are counted. */
const NAMED = 10;

/**
 * What --dry-run --check-service found: which of the payouts looked up the service holds
 * (a send counts them as sent earlier), or that it holds none.
 */
export function heldAtServiceLine({ looked, found }: ServiceCheck): string {
  if (looked === 0)
    return 'Nothing to look up at the service: earlier runs of this history hold every payout.';
  if (found.length === 0) return `The service holds none of the ${payouts(looked)} looked up.`;
  const named = found.slice(0, NAMED).map((f) => `${displayText(f.ref)} (${f.status})`);
  const more = found.length > NAMED ? ` and ${found.length - NAMED} more` : '';
  return `The service holds ${found.length} of the ${payouts(looked)} looked up: ${named.join(', ')}${more}. A send counts them as sent earlier.`;
}

/** What a look-up before the summary did: how many payouts it looked up, those found. */
export interface ServiceCheck {
  looked: number;
  found: OutcomeResult[];
}

/** What a dry run's look-up needs of its run (`SendRun` fits). */
export interface DryRunCheck extends ProvingRun {
  readonly opts: { checkService?: boolean; sandbox?: boolean };
  readonly deps: ProvingRun['deps'] & { connect(): Promise<ServiceConnection> };
  priorRows(serviceKey: string): Promise<PriorRow[]>;
  /** Looks up what a send would before its summary. */
  checkService(service: ServiceConnection, prior: PriorState): Promise<ServiceCheck>;
}

/**
 * What earlier runs hold, for a dry run; with --check-service the payouts are looked up at
 * the service as a send would (its credentials needed), and those it holds are named, and
 * the originals of retry rows too (retry-proof.ts); without it, a dry run asks no service.
 */
export async function dryRunPrior(run: DryRunCheck, serviceKey: string): Promise<PriorState> {
  const rows = await run.priorRows(serviceKey);
  if (!run.opts.checkService || run.opts.sandbox) {
    const prior = priorState(rows);
    const n = new Set(retriesToSend(run.rows, prior).map((r) => r.retry_of)).size;
    if (n && !run.opts.sandbox) run.output.info(notLookedUpLine(n));
    return prior;
  }
  const service = await run.deps.connect();
  try {
    const prior = priorState(rows, service.settings.clientId);
    run.output.info(heldAtServiceLine(await run.checkService(service, prior)));
    // As a send would, before its question: the service's word on each retried original.
    await proveOriginalsUnpaid(run, service, refuseRetries(prior, run.rows));
    return prior;
  } finally {
    await service.close();
  }
}

/** A dry run without --check-service says what a send looks up first. */
function notLookedUpLine(n: number): string {
  const them = n === 1 ? 'the payout a retry row retries' : `the ${n} payouts the retry rows retry`;
  return `Not looked up: a send first asks the service whether ${them} failed (--check-service asks now).`;
}
