import { abortableSleep } from '../../api/retry.js';
import {
  type LookupOptions,
  type LookupOutcome,
  LookupsInterrupted,
  lookupAll,
  type PayoutReader,
} from './lookup.js';

/** Statuses after which a payout no longer changes. */
export const FINAL_STATUSES: ReadonlySet<string> = new Set(['success', 'failed', 'canceled']);

/** Whether an outcome needs no more polling: a final status, or no such payout. */
export function isSettled(outcome: LookupOutcome): boolean {
  if (outcome.kind === 'not_found') return true;
  return outcome.kind === 'found' && FINAL_STATUSES.has(outcome.record.status);
}

/** How --watch polls. */
export interface WatchOptions extends LookupOptions {
  /** First wait between polls. */
  intervalMs: number;
  /** The wait grows by `growth` per poll up to this (never below intervalMs). */
  maxIntervalMs: number;
  growth: number;
  /** Stop polling this long after the start, with whatever is known. */
  timeoutMs: number;
  /** Waits between polls; rejects when the signal aborts. */
  pause?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A payout was seen for the first time or its status changed (not-found counts). */
  onChange?: (outcome: LookupOutcome, previous: LookupOutcome | undefined) => void;
  /** A wait between polls begins, for `pending` payouts; the returned function ends it. */
  onWait?: (ms: number, pending: number) => () => void;
  /** A lookup failed in this poll even after retries; it is tried again at the next. */
  onPollError?: (outcome: Extract<LookupOutcome, { kind: 'error' }>) => void;
}

/** The end of a watch: the last known outcome of each reference, in order. */
export interface WatchResult {
  outcomes: LookupOutcome[];
  /** True when the timeout ended the watch before every payout settled. */
  timedOut: boolean;
}

/** The status text of an outcome, for change detection. */
function statusKey(o: LookupOutcome): string {
  return o.kind === 'found' ? `found:${o.record.status}` : o.kind;
}

/**
 * Polls the references until each one settles (success, failed, canceled, not found) or
 * the timeout passes. The wait between polls grows by `growth` up to maxIntervalMs. A
 * failed lookup keeps the last known state and is retried at the next poll.
 */
export async function watchStatuses(
  reader: PayoutReader,
  refs: readonly string[],
  opts: WatchOptions,
): Promise<WatchResult> {
  const now = opts.now ?? Date.now;
  const pause = opts.pause ?? abortableSleep;
  const deadline = now() + opts.timeoutMs;
  const ceiling = Math.max(opts.maxIntervalMs, opts.intervalMs);
  const known = new Map<string, LookupOutcome>();
  let active = [...refs];
  let wait = opts.intervalMs;
  // What is known when the watch is interrupted: every reference seen so far, in order.
  const knownSoFar = (more: LookupOutcome[] = []) => {
    for (const o of more)
      if (o.kind !== 'error' || !known.has(o.reference_id)) known.set(o.reference_id, o);
    return refs.flatMap((ref) => known.get(ref) ?? []);
  };
  for (;;) {
    let outcomes: LookupOutcome[];
    try {
      outcomes = await lookupAll(reader, active, opts);
    } catch (error) {
      if (error instanceof LookupsInterrupted) {
        throw new LookupsInterrupted('interrupted while watching', knownSoFar(error.done));
      }
      throw error;
    }
    for (const outcome of outcomes) {
      const previous = known.get(outcome.reference_id);
      if (outcome.kind === 'error') {
        opts.onPollError?.(outcome);
        // A payout seen before keeps its last known state; one never seen shows the error.
        if (!previous || previous.kind === 'error') known.set(outcome.reference_id, outcome);
        continue;
      }
      known.set(outcome.reference_id, outcome);
      if (!previous || previous.kind === 'error' || statusKey(previous) !== statusKey(outcome)) {
        opts.onChange?.(outcome, previous?.kind === 'error' ? undefined : previous);
      }
    }
    active = active.filter((ref) => {
      const o = known.get(ref);
      return !o || !isSettled(o);
    });
    const remaining = deadline - now();
    if (active.length === 0 || remaining <= 0) {
      return {
        outcomes: refs.map((ref) => known.get(ref) as LookupOutcome),
        timedOut: active.length > 0,
      };
    }
    const pauseMs = Math.min(wait, remaining);
    const end = opts.onWait?.(pauseMs, active.length);
    try {
      await pause(pauseMs, opts.signal);
    } catch (error) {
      if (opts.signal?.aborted) {
        throw new LookupsInterrupted('interrupted while watching', knownSoFar());
      }
      throw error;
    } finally {
      end?.();
    }
    wait = Math.min(wait * opts.growth, ceiling);
  }
}
