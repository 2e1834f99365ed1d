import { abortableSleep } from './api/retry.js';

/** Time as the CLI sees it: the entry point passes the real one, tests a fake one. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Waits ms milliseconds; rejects when the signal aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** The real clock. */
export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: abortableSleep,
};
