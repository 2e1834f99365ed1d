import { type RetryNotice, type RetryPolicy, withRetry } from '../../api/retry.js';
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

/**
 * Looks up references with at most `concurrency` requests in flight, returning outcomes
 * in the order of `refs`. The first credentials error stops every lookup and is thrown;
 * an aborted signal throws LookupsInterrupted, holding the lookups done before it.
 */
export async function lookupAll(
  reader: PayoutReader,
  refs: readonly string[],
  opts: LookupOptions,
): Promise<LookupOutcome[]> {
  const inner = new AbortController();
  const forward = () => inner.abort();
  opts.signal?.addEventListener('abort', forward, { once: true });
  if (opts.signal?.aborted) inner.abort();
  const results: LookupOutcome[] = new Array(refs.length);
  let next = 0;
  let done = 0;
  let fatal: unknown;
  const worker = async () => {
    while (fatal === undefined && !inner.signal.aborted && next < refs.length) {
      const i = next++;
      const permit = await opts.pace?.acquire();
      try {
        const paced = opts.pace && permit ? pacedReader(reader, opts.pace, permit) : reader;
        results[i] = await lookupOne(paced, refs[i] as string, { ...opts, signal: inner.signal });
        done += 1;
        opts.onDone?.(done, refs.length);
      } catch (error) {
        fatal ??= error;
        inner.abort();
      } finally {
        if (permit) opts.pace?.release();
      }
    }
  };
  const workers = Math.max(1, Math.min(opts.concurrency, refs.length));
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
