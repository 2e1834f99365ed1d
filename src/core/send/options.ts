/** What a send takes: its options (SendOptions), and what its engine takes (EngineDeps, EngineSettings). */
import { checkWriteTargets } from '../../files.js';
import type { InputEncoding, InputFormat, PayoutField } from '../../input/index.js';
import { type CsvStyle, reportStyleOf, type StyleSource } from '../report-style.js';
import type { PayoutClient } from '../../api/client.js';
import type { RetryPolicy } from '../../api/retry.js';
import type { PayoutRequest } from '../../api/types.js';
import type { Clock } from '../../clock.js';
import type { RunOutcomes, RunState } from '../../state/index.js';

/** A per-currency ceiling from --max-total CUR=AMOUNT. */
export interface MaxTotal {
  currency: string;
  amountText: string;
}

/** The options of one `payouts send`, parsed from the command line. */
export interface SendOptions {
  files: string[];
  format?: InputFormat;
  /** --sheet: the worksheet of .xlsx files (else the first visible one). */
  sheet?: string;
  /** --include-hidden: pay the hidden rows of .xlsx files too. */
  includeHidden?: boolean;
  delimiter?: string;
  map?: Partial<Record<PayoutField, string>>;
  /** --encoding: of files without a byte-order mark (else UTF-8). */
  encoding?: InputEncoding;
  /** --decimal-comma: CSV amounts written 1.234,56. */
  decimalComma?: boolean;
  /** Extra currency codes with their number of decimals. */
  allowCurrencies: Array<[string, number]>;
  batchReference?: string;
  webhookUrl?: string;
  chunkSize: number;
  /** --concurrency N: a fixed ceiling, climbed back to after backing off. */
  concurrency?: number;
  /** --max-concurrency: the most an adaptive run may reach. */
  maxConcurrency: number;
  yes: boolean;
  dryRun: boolean;
  /** --show-request: a dry run prints its first request on stdout. */
  showRequest?: boolean;
  maxTotals: MaxTotal[];
  reportPath?: string;
  failedOutPath?: string;
  /** --report-encoding: "excel" (BOM and CRLF, the default) or "utf8". */
  reportEncoding?: 'excel' | 'utf8';
  /** --report-delimiter: ",", ";" (Excel where "," is the decimal separator) or a tab. */
  reportDelimiter?: string;
  /** --report-locale: the delimiter and decimal mark of a language's spreadsheets. */
  reportLocale?: CsvStyle;
  all: boolean;
  sandbox: boolean;
  /** --check-service: look up at the service every payout the history does not know. */
  checkService?: boolean;
  /**
   * --original-elsewhere: send a retry row whose original this history never sent (a retry of
   * it sent from another machine cannot be seen here), on the service's word that it failed.
   */
  originalElsewhere?: boolean;
  /** --prepare: record the run for another person's approval, send nothing. */
  prepare?: boolean;
  /** --note TEXT: said with a prepared run. */
  note?: string;
  /** --approved RUN: send an approved prepared run from the shared history, without files. */
  approved?: string;
  /** --wait: how long to wait for another send's lock, in seconds (Infinity: no limit). */
  waitSeconds?: number;
}

/**
 * How a run's --report and --failed-out are written, and why (the history keeps it with the
 * run): --report-locale, else as its CSV files were read; --report-delimiter on top.
 */
export function runReportStyle(
  opts: Pick<SendOptions, 'reportLocale' | 'reportDelimiter'>,
  plan: { csvReads?: Parameters<typeof reportStyleOf>[1] },
): { style: CsvStyle; source: StyleSource } {
  return reportStyleOf(
    { locale: opts.reportLocale, delimiter: opts.reportDelimiter },
    plan.csvReads ?? [],
  );
}

/** Requests in flight a send starts with, and the most it may reach (see core/pace.ts). */
export function concurrencyOf(opts: Pick<SendOptions, 'concurrency' | 'maxConcurrency'>): {
  initial: number;
  max: number;
} {
  if (opts.concurrency !== undefined) return { initial: opts.concurrency, max: opts.concurrency };
  return { initial: Math.min(8, opts.maxConcurrency), max: opts.maxConcurrency };
}

/** Where a send runs: its folders, and where relative names are resolved. */
export interface SendPlace {
  stateDir: string;
  configDir?: string;
  cwd?: string;
}

/**
 * Refuses, before anything is read or sent, a --report or --failed-out file payouts must not
 * write: a folder, a link, a FIFO or device, a file of its own folders (state.db, the config),
 * an input of the run, a folder that is missing or cannot be written (exit 2, naming the
 * option, the path and the fix).
 */
export function checkOutputFiles(opts: SendOptions, place: SendPlace): void {
  const cwd = place.cwd ?? '.';
  checkWriteTargets(
    [
      { option: '--report', path: opts.reportPath, cwd },
      { option: '--failed-out', path: opts.failedOutPath, cwd },
    ],
    {
      folders: place.configDir ? [place.stateDir, place.configDir] : [place.stateDir],
      inputs: opts.files.filter((f) => f !== '-'),
    },
  );
}

/* What the send engine (engine.ts) takes: its dependencies, its settings, what it sends. */

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
