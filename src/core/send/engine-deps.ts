/** What the send engine (engine.ts) takes: its dependencies, its settings, what it sends. */
import type { PayoutClient } from '../../api/client.js';
import type { RetryPolicy } from '../../api/retry.js';
import type { PayoutRequest } from '../../api/types.js';
import type { Clock } from '../../clock.js';
import type { RunOutcomes, RunState } from '../../state/index.js';

/** How create requests are retried: never applied ones only, within these bounds. */
export const DEFAULT_SEND_RETRY: RetryPolicy = {
  maxAttempts: 6,
  baseDelayMs: 250,
  maxDelayMs: 8_000,
  maxTotalMs: 120_000,
  maxRetryAfterMs: 30_000,
};

/** A payout on its way: the wire form and its identity hash for the journal. */
export interface PendingPayout {
  payout: PayoutRequest;
  hash: string;
}

/** What the engine needs from outside. */
export interface EngineDeps {
  client: Pick<PayoutClient, 'createPayouts' | 'getPayout'>;
  journal: RunState;
  /**
   * Where each payout's outcome goes, by row number (the order of enqueue/record
   * calls): the journal's own store, which its commits write (stated results go through it).
   */
  outcomes: RunOutcomes;
  /** Aborted on SIGINT/SIGTERM: no new request starts after that. */
  interrupt: AbortSignal;
  /**
   * Aborted when the run is to end now: requests in flight are no longer waited for, their
   * payouts are in doubt (their intents are committed), and later answers are not recorded.
   */
  finishNow?: AbortSignal;
  /** Whether a person can press Ctrl-C again (stdin is a terminal): the stop's notice says so. */
  interactive?: boolean;
  warn: (message: string) => void;
  /** Called after each request settles, for the progress display. */
  progress: (done: { requests: number; payouts: number }) => void;
  /**
   * Shows a wait (a countdown on a terminal; off one, `line` once) until the returned
   * function is called: a quiet time, a Retry-After.
   */
  wait?: (what: string, ms: number, line?: string) => () => void;
  /** Told about each change of the pace, with its reason (--debug). */
  paceChanged?: (limit: number, why: string) => void;
  clock?: Clock;
  random?: () => number;
}

/** The shape of the requests the engine sends. */
export interface EngineSettings {
  chunkSize: number;
  /** Requests in flight at the start, and at most (see core/pace.ts). */
  concurrency: { initial: number; max: number };
  batchReference?: string;
  webhookUrl?: string;
  retry: RetryPolicy;
  /** See Timing.quietMs. */
  quietMs?: number;
}
