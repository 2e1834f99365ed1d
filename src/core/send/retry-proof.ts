/**
 * A retry pays a payout under a new reference, so it goes only on the service's word that the
 * original did not pay: the history may be wrong, or a person may have written a `failed`
 * result into it. Before the question, each original a retry row retries is looked up at the
 * service (one lookup per retry row, at the service's pace); only `failed` or `canceled`
 * there lets the retry go (docs/history.md#retries).
 */
import { DEFAULT_READ_RETRY } from '../../api/retry.js';
import type { PayoutRecord } from '../../api/types.js';
import { type Clock, systemClock } from '../../clock.js';
import type { HeldRef } from '../../domain/chain.js';
import { OutcomeUnknownError, type Problem, quoteValue } from '../../errors.js';
import type { Output } from '../../output/output.js';
import { type RunIntake, type StagedRetry, stagedRetries } from '../../state/index.js';
import { Pace } from '../pace.js';
import type { ServiceConnection } from '../service.js';
import { type LookupOutcome, lookupAll } from '../status/lookup.js';
import { RetryRefusedError } from './failed-earlier.js';
import type { PriorState } from './resume.js';

/** What the look-up of the originals needs of a run (`SendRun` fits). */
export interface ProvingRun {
  readonly rows: RunIntake;
  readonly output: Output;
  readonly deps: { clock?: Clock; interrupt: AbortSignal };
}

/**
 * The retry rows this run may send: all not sent earlier. One in flight is proved too, since a
 * read-back that finds nothing sends it, and its "earlier request" may be a row a person wrote.
 */
export function retriesToSend(intake: RunIntake, prior: PriorState): StagedRetry[] {
  if (!intake.retryCount) return [];
  return stagedRetries(intake).filter((r) => !prior.settled.has(r.row));
}

/** "the history says failed", from the history's link of the original, if it knows it. */
function historySays(origin: HeldRef | undefined): string {
  if (!origin) return 'the history does not know it';
  const said =
    origin.kind === 'doubt' ? 'its outcome is not known' : (origin.status ?? origin.kind);
  return `the history says ${said} (run ${origin.runId})`;
}

/** Why the service's answer about the original refuses the retry, if it does. */
export function proofProblem(
  r: StagedRetry,
  outcome: LookupOutcome,
  origin: HeldRef | undefined,
): string | undefined {
  const of = `retries reference_id ${quoteValue(r.retry_of)}`;
  const check = `check with \`payouts status ${r.retry_of}\``;
  if (outcome.kind === 'not_found') {
    return `${of}, which the service holds no payout of (${historySays(origin)}): a retry goes only on the service's word that the original failed; ${check}`;
  }
  if (outcome.kind !== 'found') return undefined;
  const rec: PayoutRecord = outcome.record;
  if (rec.status === 'failed' || rec.status === 'canceled') return undefined;
  const tx = rec.transaction_id ? ` (transaction ${rec.transaction_id})` : '';
  const held = `${of}, which the service holds as ${quoteValue(rec.status)}${tx}`;
  const history = origin?.kind === 'failed' ? `; ${historySays(origin)}, which is wrong` : '';
  return rec.status === 'success'
    ? `${held}: a new reference would pay it again${history}; clear this new_reference_id`
    : `${held}: not final, it may still be paid, and a new reference would pay it twice${history}; retry it only once the service says failed or canceled (${check})`;
}

/**
 * Looks up at the service each original the run's retry rows (to send now) retry, before
 * anything is asked or sent: a retry row whose original the service holds paid, pending, in
 * another status or not at all is refused (exit 2, nothing sent); a lookup left unanswered
 * stops the run (exit 7, nothing sent). Returns how many originals were looked up.
 */
export async function proveOriginalsUnpaid(
  run: ProvingRun,
  service: Pick<ServiceConnection, 'client'>,
  prior: PriorState,
): Promise<number> {
  const retries = retriesToSend(run.rows, prior);
  if (!retries.length) return 0;
  const origins = [...new Set(retries.map((r) => r.retry_of))];
  const n = origins.length;
  run.output.info(
    `Looking up ${n === 1 ? 'the payout' : `the ${n} payouts`} the retry rows retry at the service before sending…`,
  );
  const clock = run.deps.clock ?? systemClock;
  const outcomes = await lookupAll(service.client, origins, {
    concurrency: 16,
    pace: new Pace({ initial: 4, max: 16, clock }),
    retry: DEFAULT_READ_RETRY,
    signal: run.deps.interrupt,
    sleep: (ms, signal) => clock.sleep(ms, signal),
    now: () => clock.now(),
  });
  const byRef = new Map(outcomes.map((o) => [o.reference_id, o]));
  const problems: Problem[] = [];
  const unknown: Array<{ ref: string; why: string }> = [];
  for (const r of retries) {
    const outcome = byRef.get(r.retry_of)!;
    if (outcome.kind === 'error') unknown.push({ ref: r.retry_of, why: outcome.error.message });
    const why = proofProblem(r, outcome, prior.chains.get(r.row)?.get(r.retry_of));
    if (why) problems.push({ ...rowOf(r), message: why });
  }
  if (problems.length) throw new RetryRefusedError(problems);
  if (unknown.length) throw unanswered(unknown);
  return n;
}

/** The row a problem names. */
function rowOf(r: StagedRetry): Omit<Problem, 'message'> {
  return { file: r.file, location: r.location, field: 'new_reference_id', value: r.reference_id };
}

/** Exit 7, nothing sent: the service did not say whether the originals were paid. */
function unanswered(unknown: Array<{ ref: string; why: string }>): OutcomeUnknownError {
  const refs = [...new Set(unknown.map((u) => u.ref))];
  const n = refs.length;
  const which = n === 1 ? `reference_id ${quoteValue(refs[0]!)}` : `${n} retried references`;
  return new OutcomeUnknownError(
    `could not look up ${which} at the service (${unknown[0]!.why}): a retry is sent only once the service says its original failed; nothing was sent: run the same command again when the service answers`,
    refs,
  );
}
