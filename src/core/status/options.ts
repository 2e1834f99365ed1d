import { UsageError } from '../../errors.js';
import type { StatusRequest } from './check.js';

/** Largest --concurrency accepted: more would only get the caller rate limited. */
export const MAX_CONCURRENCY = 32;

/** Longest wait between polls of --watch. */
export const MAX_WATCH_INTERVAL_MS = 30_000;

/** The options of `payouts status` as commander hands them over. */
export interface StatusFlags {
  concurrency?: string;
  watch?: boolean;
  interval?: string;
  timeout?: string;
}

/** Checks a --concurrency value (default: adapt to the service, see core/pace.ts). */
export function parseConcurrency(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > MAX_CONCURRENCY) {
    throw new UsageError(
      `--concurrency ${JSON.stringify(raw)}: use a whole number from 1 to ${MAX_CONCURRENCY}`,
    );
  }
  return n;
}

/** Checks a number of seconds given to an option, returning milliseconds. */
export function parseSeconds(raw: string, option: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || n <= 0) {
    throw new UsageError(`${option} ${JSON.stringify(raw)}: use a number of seconds above 0`);
  }
  return Math.round(n * 1000);
}

/** Turns the flags into the request settings (without the references). */
export function parseStatusFlags(flags: StatusFlags): Omit<StatusRequest, 'references'> {
  const concurrency = parseConcurrency(flags.concurrency);
  if (!flags.watch) {
    if (flags.interval !== undefined || flags.timeout !== undefined) {
      throw new UsageError('--interval and --timeout only apply with --watch');
    }
    return { concurrency };
  }
  return {
    concurrency,
    watch: {
      intervalMs: flags.interval === undefined ? 2_000 : parseSeconds(flags.interval, '--interval'),
      maxIntervalMs: MAX_WATCH_INTERVAL_MS,
      timeoutMs: flags.timeout === undefined ? 600_000 : parseSeconds(flags.timeout, '--timeout'),
    },
  };
}
