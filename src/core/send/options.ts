import { checkWriteTargets } from '../../files.js';
import type { InputEncoding, InputFormat, PayoutField } from '../../input/index.js';

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
  all: boolean;
  sandbox: boolean;
  /** --check-service: look up at the service every payout the history does not know. */
  checkService?: boolean;
  /** --prepare: record the run for another person's approval, send nothing. */
  prepare?: boolean;
  /** --note TEXT: said with a prepared run. */
  note?: string;
  /** --approved RUN: send an approved prepared run from the shared history, without files. */
  approved?: string;
  /** --wait: how long to wait for another send's lock, in seconds (Infinity: no limit). */
  waitSeconds?: number;
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
