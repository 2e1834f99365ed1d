import { UsageError } from '../errors.js';

/** How long the CLI waits on the service, all derived from one setting. */
export interface Timing {
  /** For the answer's headers, and between body chunks. */
  responseTimeoutMs: number;
  connectTimeoutMs: number;
  /** For a whole request, however the answer trickles in. */
  deadlineMs: number;
  /**
   * After a request was sent, how long it may still be in progress at the service: only a
   * read-back after that proves, by "Payout not found", that it did not apply.
   */
  quietMs: number;
}

/**
 * The timing with a profile's quiet time (seconds), for a service slow to show what it
 * applied: it only lengthens the quiet time, which must outlast the request's deadline.
 */
export function withQuietTime(timing: Timing, seconds: number | undefined): Timing {
  if (seconds === undefined || !Number.isFinite(seconds)) return timing;
  return { ...timing, quietMs: Math.max(timing.quietMs, Math.round(seconds * 1000)) };
}

/** The response timeout when PAYOUTS_TIMEOUT is not set, in seconds. */
export const DEFAULT_TIMEOUT_SECONDS = 30;

/**
 * The timing for a response timeout of `text` seconds (PAYOUTS_TIMEOUT): connect within a
 * third of it (10 s at most), a request's deadline 1.5 times it, and the quiet time a sixth
 * more (30 s gives 10, 45 and 50 s).
 */
export function timingFor(text: string | undefined): Timing {
  let seconds = DEFAULT_TIMEOUT_SECONDS;
  if (text !== undefined && text.trim() !== '') {
    seconds = Number(text.trim());
    if (!/^\d+(\.\d+)?$/.test(text.trim()) || seconds < 0.1 || seconds > 600) {
      throw new UsageError(
        `PAYOUTS_TIMEOUT ${JSON.stringify(text)}: give the seconds to wait for an answer, from 0.1 to 600 (default ${DEFAULT_TIMEOUT_SECONDS})`,
      );
    }
  }
  const responseTimeoutMs = Math.round(seconds * 1000);
  const connectTimeoutMs = Math.min(10_000, Math.round(responseTimeoutMs / 3));
  const deadlineMs = Math.round(responseTimeoutMs * 1.5);
  return {
    responseTimeoutMs,
    connectTimeoutMs,
    deadlineMs,
    quietMs: deadlineMs + Math.round(responseTimeoutMs / 6),
  };
}
