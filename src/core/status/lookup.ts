import { setMaxListeners } from 'node:events';
import {
  abortableSleep,
  backoffDelay,
  isRetryableRead,
  type RetryNotice,
  type RetryPolicy,
  withRetry,
} from '../../api/retry.js';
import type { PayoutRecord } from '../../api/types.js';
import {
  CredentialsError,
  InterruptedError,
  NotFoundError,
  RateLimitedError,
} from '../../errors.js';
import type { Answered, Pace, Permit } from '../pace.js';

/** What status lookups need of the client: reading one payout (PayoutClient fits). */
export interface PayoutReader {
  getPayout(referenceId: string, signal?: AbortSignal): Promise<PayoutRecord>;
}

/** The outcome of looking up one reference. */
export type LookupOutcome =
  | { reference_id: string; kind: 'found'; record: PayoutRecord }
  | { reference_id: string; kind: 'not_found' }
  | { reference_id: string; kind: 'error'; error: Error };

/** An interruption of lookups, with every lookup done before it, in the order of the references. */
export class LookupsInterrupted extends InterruptedError {
  override name = 'InterruptedError';
  constructor(
    message: string,
    readonly done: LookupOutcome[],
  ) {
    super(message);
  }
}

/** How lookups run: bounded concurrency, bounded retries, stopped by the signal. */
export interface LookupOptions {
  /** Lookups in flight at most; with `pace`, the most the pace may reach. */
  concurrency: number;
  /** Adapts the lookups in flight to the service, as sends do (see core/pace.ts). */
  pace?: Pace;
  retry: RetryPolicy;
  signal?: AbortSignal;
  /** Injected into withRetry, for tests. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Milliseconds since the epoch, as Date.now (the clock the waits keep to). */
  now?: () => number;
  random?: () => number;
  /** Told before a lookup is retried. */
  onRetry?: (referenceId: string, notice: RetryNotice) => void;
  /** Told after every lookup that completes, for a progress indicator. */
  onDone?: (done: number, total: number) => void;
}

/** Looks up one reference, retrying within the policy. Credentials errors are thrown. */
export async function lookupOne(
  reader: PayoutReader,
  ref: string,
  opts: Omit<LookupOptions, 'concurrency' | 'onDone'>,
): Promise<LookupOutcome> {
  try {
    const record = await withRetry((_attempt) => reader.getPayout(ref, opts.signal), opts.retry, {
      signal: opts.signal,
      sleep: opts.sleep,
      random: opts.random,
      onRetry: opts.onRetry ? (n) => opts.onRetry?.(ref, n) : undefined,
    });
    return { reference_id: ref, kind: 'found', record };
  } catch (error) {
    if (error instanceof NotFoundError) return { reference_id: ref, kind: 'not_found' };
    // Wrong credentials or a refused IP fail every lookup alike: stop at the first.
    if (error instanceof CredentialsError || error instanceof InterruptedError) throw error;
    return {
      reference_id: ref,
      kind: 'error',
      error: error instanceof Error ? error : new Error(String(error)),
    };
  }
}

/** A reader that tells the pace how each of its answers went. */
function pacedReader(reader: PayoutReader, pace: Pace, permit: Permit): PayoutReader {
  return {
    async getPayout(ref, signal) {
      pace.sending(permit);
      try {
        const record = await reader.getPayout(ref, signal);
        pace.answered(permit, { kind: 'ok' });
        return record;
      } catch (error) {
        pace.answered(permit, answeredOf(error));
        throw error;
      }
    },
  };
}

/** How a failed lookup went, for the pace: "not found" is an answer like any other. */
function answeredOf(error: unknown): Answered {
  if (error instanceof RateLimitedError)
    return { kind: 'throttled', retryAfterMs: error.retryAfterMs };
  if (error instanceof NotFoundError) return { kind: 'ok' };
  return { kind: 'failed' };
}

/** What the lookups of one lookupAll share: when the service last answered anything but 429. */
interface Shared {
  signal: AbortSignal;
  lastAnswerAt: number;
}

/**
 * Looks up one reference under the pace. A 429 is the pace's to answer, not an attempt: the
 * place is given back for its Retry-After (or a backoff), then taken again behind the limit,
 * which has shrunk meanwhile; so at any --concurrency the lookups keep to what the service
 * takes. Only after the retry policy's whole time without any other answer does it give up.
 */
async function lookupPaced(
  reader: PayoutReader,
  ref: string,
  opts: LookupOptions & { pace: Pace },
  shared: Shared,
): Promise<LookupOutcome> {
  const { pace, retry } = opts;
  const notThrottled = (e: unknown) =>
    !(e instanceof RateLimitedError) && (retry.retryable ?? isRetryableRead)(e);
  const now = opts.now ?? Date.now;
  const permit = await pace.acquire();
  try {
    for (let throttled = 1; ; throttled++) {
      const outcome = await lookupOne(pacedReader(reader, pace, permit), ref, {
        ...opts,
        retry: { ...retry, retryable: notThrottled },
        signal: shared.signal,
      });
      if (outcome.kind !== 'error' || !(outcome.error instanceof RateLimitedError)) {
        shared.lastAnswerAt = now();
        return outcome;
      }
      if (now() - shared.lastAnswerAt > retry.maxTotalMs) return outcome;
      const asked = outcome.error.retryAfterMs;
      const wait =
        asked === undefined
          ? backoffDelay(retry, throttled, opts.random ?? Math.random)
          : Math.min(asked, retry.maxRetryAfterMs);
      const notice = { attempt: throttled, maxAttempts: retry.maxAttempts, delayMs: wait };
      opts.onRetry?.(ref, { ...notice, error: outcome.error });
      await pace.again(permit, (opts.sleep ?? abortableSleep)(wait, shared.signal));
    }
  } finally {
    pace.done(permit);
  }
}

/**
 * Looks up references with at most `concurrency` requests in flight (and, with a pace, at
 * the pace the service allows), returning outcomes in the order of `refs`: the one worker
 * pool of lookups (status, --watch, read-backs, --check-service). The first credentials
 * error stops every lookup and is thrown; an aborted signal throws LookupsInterrupted,
 * holding the lookups done before it.
 */
export async function lookupAll(
  reader: PayoutReader,
  refs: readonly string[],
  opts: LookupOptions,
): Promise<LookupOutcome[]> {
  const inner = new AbortController();
  const workers = Math.max(1, Math.min(opts.concurrency, refs.length));
  // Each lookup in flight listens on it (its request, its wait): not a leak.
  setMaxListeners(Math.max(10, workers * 4), inner.signal);
  const forward = () => inner.abort();
  opts.signal?.addEventListener('abort', forward, { once: true });
  if (opts.signal?.aborted) inner.abort();
  const shared: Shared = { signal: inner.signal, lastAnswerAt: (opts.now ?? Date.now)() };
  const results: LookupOutcome[] = new Array(refs.length);
  let next = 0;
  let done = 0;
  let fatal: unknown;
  const { pace } = opts;
  const worker = async () => {
    while (fatal === undefined && !inner.signal.aborted && next < refs.length) {
      const i = next++;
      const ref = refs[i] as string;
      try {
        results[i] = pace
          ? await lookupPaced(reader, ref, { ...opts, pace }, shared)
          : await lookupOne(reader, ref, { ...opts, signal: inner.signal });
        done += 1;
        opts.onDone?.(done, refs.length);
      } catch (error) {
        fatal ??= error;
        inner.abort();
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: workers }, worker));
  } finally {
    opts.signal?.removeEventListener('abort', forward);
  }
  if (opts.signal?.aborted) {
    throw new LookupsInterrupted(
      'interrupted',
      results.filter((o) => o !== undefined),
    );
  }
  if (fatal !== undefined) throw fatal;
  return results;
}
