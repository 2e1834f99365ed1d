import { abortableSleep, DEFAULT_READ_RETRY, type RetryPolicy } from '../../api/retry.js';
import { ApiError, errorMessage, quoteValue, RateLimitedError } from '../../errors.js';
import {
  ExitCode,
  type ExitCodeValue,
  exitCodeForError,
  exitCodeForServiceStatus,
  worstExitCode,
} from '../../exit-codes.js';
import { count, displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { Pace } from '../pace.js';
import { type LookupOutcome, LookupsInterrupted, lookupAll, type PayoutReader } from './lookup.js';
import { watchStatuses } from './watch.js';

/** What `payouts status` was asked to do. */
export interface StatusRequest {
  references: string[];
  /** A fixed ceiling of lookups in flight; undefined adapts to the service. */
  concurrency?: number;
  /** Present with --watch. */
  watch?: { intervalMs: number; maxIntervalMs: number; timeoutMs: number };
}

/** What the lookups found, and the exit code that sums it up. */
export interface StatusReport {
  outcomes: LookupOutcome[];
  timedOut: boolean;
  exitCode: ExitCodeValue;
  /** Set when no lookup got any answer: the first error, which stands for them all. */
  fatal?: Error;
}

/** What checkStatuses needs besides the client; timing hooks are injectable for tests. */
export interface StatusDeps {
  output: Output;
  signal?: AbortSignal;
  retry?: RetryPolicy;
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  random?: () => number;
  now?: () => number;
}

/** The exit code of one outcome; a status the interface does not document gives 5. */
export function exitCodeForOutcome(o: LookupOutcome): ExitCodeValue {
  if (o.kind === 'found') return exitCodeForServiceStatus(o.record.status);
  if (o.kind === 'not_found') return ExitCode.notFound;
  return exitCodeForError(o.error);
}

/** The exit code of a set of outcomes: the most important one wins (3 > 7 > 6 > 4 > 5). */
export function exitCodeForOutcomes(outcomes: Iterable<LookupOutcome>): ExitCodeValue {
  return worstExitCode([...outcomes].map(exitCodeForOutcome));
}

/**
 * A reader that refuses a record of another reference: status shows only the payout it asked
 * for. The error is not retried and counts as an unreadable answer (exit 7).
 */
export function checkedReader(reader: PayoutReader): PayoutReader {
  return {
    async getPayout(ref, signal) {
      const record = await reader.getPayout(ref, signal);
      if (record.reference_id === ref) return record;
      throw new ApiError(
        `the service answered the lookup of reference_id ${quoteValue(ref)} with the record of another payout, ${quoteValue(record.reference_id)}, so its status is not shown: look it up again, and if the answer stays wrong, tell the service's operator`,
      );
    },
  };
}

/**
 * Looks up more references as `checkStatuses` looks up its own (the service's pace, the
 * same retries and clock), with no progress line: the retries of failed payouts (chains.ts).
 */
export function lookUpMore(
  reader: PayoutReader,
  refs: string[],
  deps: Omit<StatusDeps, 'output'>,
): Promise<LookupOutcome[]> {
  const now = deps.now ?? Date.now;
  const sleep = deps.sleep ?? abortableSleep;
  return lookupAll(checkedReader(reader), refs, {
    concurrency: 16,
    pace: new Pace({ initial: 4, max: 16, clock: { now, sleep } }),
    retry: deps.retry ?? DEFAULT_READ_RETRY,
    signal: deps.signal,
    sleep,
    now,
    random: deps.random,
  });
}

/** Describes a status change for the --watch log on stderr. */
function changeLine(output: Output, o: LookupOutcome, previous: LookupOutcome | undefined): string {
  const c = output.errColor;
  const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const label = (x: LookupOutcome) =>
    x.kind === 'found' ? displayText(x.record.status) : 'not found';
  const was = previous ? `${label(previous)} -> ` : '';
  return `${c.dim(now)} ${displayText(o.reference_id)}: ${was}${c.bold(label(o))}`;
}

/**
 * Looks up the references (once, or until settled with --watch) and sums up the result.
 * Credentials errors stop everything and are thrown. When no lookup got any answer at all,
 * the first error is the report's `fatal`, so an unreachable service reads as one error, not
 * one per row.
 */
export async function checkStatuses(
  reader: PayoutReader,
  req: StatusRequest,
  deps: StatusDeps,
): Promise<StatusReport> {
  const { output } = deps;
  const checked = checkedReader(reader);
  const retry = deps.retry ?? DEFAULT_READ_RETRY;
  const progress = await output.progress(`checking ${count(req.references.length, 'payout')}`);
  const limits = req.concurrency
    ? { initial: req.concurrency, max: req.concurrency }
    : { initial: 4, max: 16 };
  const clock = { now: deps.now ?? Date.now, sleep: deps.sleep ?? abortableSleep };
  const pace = new Pace({
    ...limits,
    clock,
    onChange: (limit, why) => output.debug(`pace: ${limit} lookups at a time (${why})`),
  });
  // What the next retry waits for: told by onRetry, just before its sleep starts.
  let why = 'a lookup failed: trying again in';
  const common = {
    concurrency: limits.max,
    pace,
    retry,
    signal: deps.signal,
    // Each retry's wait is counted down on the live line, as a send's are.
    sleep: async (ms: number, signal?: AbortSignal) => {
      const end = progress.wait(why, ms);
      try {
        await (deps.sleep ?? abortableSleep)(ms, signal);
      } finally {
        end();
      }
    },
    now: deps.now,
    random: deps.random,
    onRetry: (
      ref: string,
      n: { attempt: number; maxAttempts: number; delayMs: number; error: unknown },
    ) => {
      why =
        n.error instanceof RateLimitedError
          ? 'the service asked to slow down (HTTP 429): next lookup in'
          : 'a lookup failed: trying again in';
      output.debug(
        `retrying ${displayText(ref)} in ${n.delayMs} ms (${n.error instanceof RateLimitedError ? 'the service asked to slow down, not counted as an attempt' : `attempt ${n.attempt} of ${n.maxAttempts} failed`}: ${displayText(errorMessage(n.error))})`,
      );
    },
    onDone: (done: number, total: number) => progress.update(`checked ${done} of ${total}`),
  };
  let outcomes: LookupOutcome[];
  let timedOut = false;
  try {
    if (req.watch) {
      const result = await watchStatuses(checked, req.references, {
        ...common,
        ...req.watch,
        growth: 1.5,
        now: deps.now,
        pause: deps.sleep,
        onChange: (o, previous) => {
          if (output.human) output.info(changeLine(output, o, previous));
        },
        onWait: (ms, pending) => {
          const what = `${count(pending, 'payout')} not final yet: polling again in`;
          const line = output.human ? `${what} ${Math.ceil(ms / 1000)} s` : undefined;
          return progress.wait(what, ms, line);
        },
        onPollError: (o) => {
          if (output.human) {
            output.warn(
              `${displayText(o.reference_id)}: ${displayText(o.error.message)} (will try again)`,
            );
          }
        },
      });
      outcomes = result.outcomes;
      timedOut = result.timedOut;
    } else {
      outcomes = await lookupAll(checked, req.references, common);
    }
  } catch (error) {
    // Interrupted: the lookups done so far are the report, with the interruption its error.
    if (!(error instanceof LookupsInterrupted)) throw error;
    const n = req.references.length;
    const what = req.watch
      ? `interrupted while watching: the last status seen of ${error.done.length} of ${count(n, 'payout')}`
      : `interrupted: ${error.done.length} of ${count(n, 'payout')} looked up before the stop; the rest were not`;
    const told = new LookupsInterrupted(what, error.done);
    return { outcomes: error.done, timedOut: false, exitCode: ExitCode.interrupted, fatal: told };
  } finally {
    progress.stop();
  }
  const first = outcomes[0];
  const fatal =
    first?.kind === 'error' && outcomes.every((o) => o.kind === 'error') ? first.error : undefined;
  return { outcomes, timedOut, exitCode: exitCodeForOutcomes(outcomes), fatal };
}
