import { InterruptedError, NetworkError, RateLimitedError, ServiceError } from '../errors.js';

/** How a read-only request is retried: bounded in attempts and in total time. */
export interface RetryPolicy {
  /** Attempts in all, the first included (1 = no retry). */
  maxAttempts: number;
  /** Ceiling of the first backoff; it doubles on every retry (full jitter picks below it). */
  baseDelayMs: number;
  /** Largest single backoff. */
  maxDelayMs: number;
  /** No retry starts when it would end later than this after the first attempt began. */
  maxTotalMs: number;
  /** Largest wait a Retry-After header is allowed to impose. */
  maxRetryAfterMs: number;
  /** Which errors are worth another attempt; defaults to isRetryableRead. */
  retryable?: (error: unknown) => boolean;
}

/** One retry about to happen, for --debug traces. */
export interface RetryNotice {
  /** The attempt that failed, from 1. */
  attempt: number;
  maxAttempts: number;
  delayMs: number;
  error: unknown;
}

/** What withRetry needs from its caller; sleep, random and now are injectable for tests. */
export interface RetryOptions {
  /** Aborting stops waiting and makes withRetry throw InterruptedError. */
  signal?: AbortSignal;
  /** Waits ms milliseconds, rejecting when the signal aborts. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** A number in [0, 1), as Math.random. */
  random?: () => number;
  /** Milliseconds since the epoch, as Date.now. */
  now?: () => number;
  /** Told before every retry. */
  onRetry?: (notice: RetryNotice) => void;
}

/** The retry policy of GET requests (status lookups, read-backs): about 30 seconds at most. */
export const DEFAULT_READ_RETRY: RetryPolicy = {
  maxAttempts: 5,
  baseDelayMs: 300,
  maxDelayMs: 8_000,
  maxTotalMs: 30_000,
  maxRetryAfterMs: 20_000,
};

/**
 * Whether a failed read is worth repeating: no answer, 5xx or 429. Only for requests that
 * change nothing (GET): a create request that lost its answer must never be repeated blindly.
 */
export function isRetryableRead(error: unknown): boolean {
  return (
    error instanceof NetworkError ||
    error instanceof ServiceError ||
    error instanceof RateLimitedError
  );
}

/** The Retry-After an error carries, in milliseconds, if any. */
function retryAfterOf(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const v = (error as { retryAfterMs?: unknown }).retryAfterMs;
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** Backoff before retry number `retry` (from 1): full jitter below an exponential ceiling. */
export function backoffDelay(policy: RetryPolicy, retry: number, random: () => number): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (retry - 1));
  return Math.floor(random() * ceiling);
}

/**
 * Sleeps, rejecting with the abort when the signal fires. node:timers/promises is fetched on
 * the first wait: most runs never retry, and loading it cost every command start-up time.
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return process.getBuiltinModule('node:timers/promises').setTimeout(ms, undefined, { signal });
}

/**
 * Runs fn, repeating it on retryable errors with exponential backoff and full jitter. A
 * Retry-After from the service is honoured (capped by maxRetryAfterMs). Gives up with the
 * last error when attempts or total time run out; throws InterruptedError once the signal
 * aborts, even when fn failed because of that abort.
 */
export async function withRetry<T>(
  fn: (attempt: number) => Promise<T>,
  policy: RetryPolicy,
  opts: RetryOptions = {},
): Promise<T> {
  const sleep = opts.sleep ?? abortableSleep;
  const random = opts.random ?? Math.random;
  const now = opts.now ?? Date.now;
  const retryable = policy.retryable ?? isRetryableRead;
  const started = now();
  for (let attempt = 1; ; attempt++) {
    if (opts.signal?.aborted) throw new InterruptedError('interrupted');
    try {
      return await fn(attempt);
    } catch (error) {
      if (opts.signal?.aborted) throw new InterruptedError('interrupted');
      if (attempt >= policy.maxAttempts || !retryable(error)) throw error;
      const retryAfter = retryAfterOf(error);
      const wait =
        retryAfter !== undefined
          ? Math.min(retryAfter, policy.maxRetryAfterMs)
          : backoffDelay(policy, attempt, random);
      if (now() + wait - started > policy.maxTotalMs) throw error;
      opts.onRetry?.({ attempt, maxAttempts: policy.maxAttempts, delayMs: wait, error });
      try {
        await sleep(wait, opts.signal);
      } catch (sleepError) {
        if (opts.signal?.aborted) throw new InterruptedError('interrupted');
        throw sleepError;
      }
    }
  }
}
