import type { InputEncoding, InputFormat, PayoutField } from '../../input/index.js';
import { type CsvStyle, reportStyleOf, type StyleSource } from '../report-style.js';

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
