import { CredentialsError, InputError, type Problem } from '../../errors.js';
import { type RunIntake, stagedLocations, stagedRetries } from '../../state/index.js';
import { heldKind } from '../../domain/statuses.js';
import type { PriorState, SentEarlier } from './resume.js';
import { tailOf } from '../../domain/chain.js';
import { retryProblems, tailText } from './retries.js';

/** Whether a payout sent earlier failed or was canceled at the service. */
export function failedAtService(s: SentEarlier): boolean {
  return heldKind({ state: 'done', status: s.outcome.status }) === 'failed';
}

/** Problems named one by one; the rest are counted. */
const LISTED = 50;

/**
 * A file that sends again payouts the service already failed: a failed payout is final, so
 * its reference_id can never be paid; the person gives each a new one.
 */
export class FailedEarlierError extends InputError {
  override name = 'FailedEarlierError';
  constructor(
    problems: Problem[],
    readonly references: string[],
    runIds: string[],
  ) {
    super(problems.slice(0, LISTED), problems.length);
    const n = references.length;
    const run = runIds.length === 1 ? runIds[0] : 'RUN';
    this.message = `${n === 1 ? 'this reference' : `these ${n} references`} already failed at the service: give ${n === 1 ? 'it a new reference_id' : 'them new reference_ids'} (the new_reference_id column of the file \`payouts runs show ${run} --failed-out FILE\` writes); nothing was sent`;
  }
}

/** A retry file whose rows would pay a payout again, or drop one: each row says why. */
export class RetryRefusedError extends InputError {
  override name = 'RetryRefusedError';
  constructor(problems: Problem[]) {
    super(problems.slice(0, LISTED), problems.length);
    const n = problems.length;
    this.message = `${n === 1 ? 'this retry row' : `these ${n} retry rows`} would pay a payout again or leave one unpaid: ${n === 1 ? 'it was' : 'they were'} refused; nothing was sent`;
  }
}

/** "run 3f2a… on 2026-11-24 14:02 UTC", or "the service" when found there. */
function where(s: SentEarlier): string {
  if (!s.runId) return 'found so by --check-service';
  const at = s.at === null ? '' : ` on ${s.at.slice(0, 16).replace('T', ' ')} UTC`;
  return `sent by run ${s.runId}${at}`;
}

/** Refuses a run whose retry rows would pay a payout again or drop one (retries.ts); returns `prior`. */
export function refuseRetries(prior: PriorState, intake: RunIntake): PriorState {
  if (!intake.retryCount) return prior;
  const refused = retryProblems(stagedRetries(intake), prior);
  if (refused.length) throw new RetryRefusedError(refused);
  return prior;
}

/**
 * Refuses a run whose files hold payouts that failed or were canceled at the service in
 * another run (or were found so with --check-service): sending them again under the same
 * reference would only be answered as a duplicate. This run's own earlier attempt (`runId`)
 * is a resume, whose failed rows are its results.
 */
export function refuseFailedEarlier(prior: PriorState, intake: RunIntake, runId: string): void {
  refuseRetries(prior, intake);
  const failed = [...prior.settled].filter(([, s]) => s.runId !== runId && failedAtService(s));
  if (!failed.length) return;
  const places = stagedLocations(
    intake,
    failed.map(([row]) => row),
  );
  const problems: Problem[] = [];
  const references: string[] = [];
  for (const [row, s] of failed) {
    const place = places.get(row);
    const ref = place?.reference_id ?? '';
    references.push(ref);
    // Retried already (the retry failed too, or is in doubt): the chain's last link is told.
    const tail = tailOf(prior.chains.get(row), ref);
    const fix = tail
      ? `retried as ${tail.ref} in run ${tail.runId}, ${tailText(tail)}`
      : 'give this row a new reference_id';
    problems.push({
      file: place?.file ?? '(input)',
      location: place?.location,
      field: 'reference_id',
      value: ref,
      message: `already ${s.outcome.status} at the service (${where(s)}): ${fix}`,
    });
  }
  const runIds = [...new Set(failed.map(([, s]) => s.runId).filter(Boolean))];
  throw new FailedEarlierError(problems, references, runIds);
}

/**
 * Checks the credentials of a run that has nothing to send with one status lookup, so that a
 * wrong secret is told now rather than on the day something is sent. Only a rejection of the
 * credentials stops the run; any other answer (found, not found, unreachable) tells nothing.
 */
export async function checkCredentials(
  client: { getPayout(ref: string, signal?: AbortSignal): Promise<unknown> },
  reference: string,
  signal: AbortSignal,
): Promise<void> {
  try {
    await client.getPayout(reference, signal);
  } catch (error) {
    if (error instanceof CredentialsError) throw error;
  }
}
