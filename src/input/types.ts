/** Types shared by the readers of payout files. */
import type { Readable } from 'node:stream';
import type { Problem } from '../errors.js';
import type { Amount } from '../money/amount.js';
import type { CurrencyTable } from '../money/currencies.js';
import type { InputEncoding } from './encoding.js';

/** The formats a payout file can have. */
export type InputFormat = 'csv' | 'json' | 'ndjson' | 'xlsx';

/** The fields of a payout, as the service names them. */
export type PayoutField = 'reference_id' | 'amount' | 'currency' | 'recipient' | 'description';

/** Every payout field, required ones first, in the order of the documented columns. */
export const PAYOUT_FIELDS: readonly PayoutField[] = [
  'reference_id',
  'amount',
  'currency',
  'recipient',
  'description',
];

/** The fields a payout cannot do without. */
export const REQUIRED_FIELDS: readonly PayoutField[] = [
  'reference_id',
  'amount',
  'currency',
  'recipient',
];

/** A file (or standard input) to read payouts from. */
export interface InputSource {
  /** The name as the user wrote it; "-" for standard input. */
  name: string;
  /** Opens a fresh stream of the bytes at each call (a send reads each file twice). */
  open(): NodeJS.ReadableStream | Readable;
}

/** How to read the files of a run. */
export interface IntakeOptions {
  /** Else from the file's extension. */
  format?: InputFormat;
  /** ',', ';' or tab (also written 'tab' or '\\t'); else detected from the header line. */
  delimiter?: string;
  /** --sheet: the worksheet of an .xlsx workbook to read; else its first visible one. */
  sheet?: string;
  /** --include-hidden: pay the hidden rows of a workbook too; else they are refused. */
  includeHidden?: boolean;
  /** Header names (CSV, .xlsx) standing for payout fields, from --map. */
  map?: Partial<Record<PayoutField, string>>;
  /** From --encoding; a byte-order mark wins over it. Else UTF-8. */
  encoding?: InputEncoding;
  /** --decimal-comma: CSV amounts are written 1.234,56. */
  decimalComma?: boolean;
  /** ISO 4217 plus the codes allowed with --allow-currency. */
  currencies: CurrencyTable;
}

/** One row that passed every check, ready to become a payout request. */
export interface ValidPayout {
  file: string;
  /** "line 12" (CSV, NDJSON), "item 3" (JSON) or "sheet Payouts row 12" (.xlsx). */
  location: string;
  /** The line number, when the location is a line (CSV, NDJSON). */
  line?: number;
  reference_id: string;
  amount: Amount;
  currency: string;
  recipient: string;
  description?: string;
  /** A retry file's row: the reference_id of the payout it retries (sent under its new_reference_id). */
  retry_of?: string;
}

/** Receives what a reader finds, row by row, so nothing accumulates in the reader. */
export interface IntakeSink {
  payout(p: ValidPayout): void;
  problem(p: Problem): void;
  warning(message: string): void;
  /**
   * Optional: the reference_id of a row refused for other problems, so that a duplicate of
   * it can be reported in the same run rather than after the row is fixed.
   */
  refused?(reference_id: string, file: string, location: string): void;
  /**
   * Optional backpressure: asked between chunks of input; when it returns a promise,
   * reading waits for it (a send slows the reader to the pace of its requests).
   */
  ready?(): Promise<void> | undefined;
}

/** What a file says about the run besides its payouts. */
export interface FileMeta {
  batch_reference?: string;
  webhook_url?: string;
  /** Records read, the invalid ones included; blank lines are not records. */
  rows: number;
  /** The sheet of a workbook that was read. */
  sheet?: string;
  /** Rows sent under their new_reference_id (a retry file's), with the first few as examples. */
  renamed?: Renames;
  /** The file has a new_reference_id column: a retry file, as --failed-out writes one. */
  retryFile?: true;
  /** How a CSV file was read: its delimiter, and whether its amounts had a decimal comma. */
  csv?: { delimiter: string; decimalComma: boolean };
}

/** How many rows took their new_reference_id, and the first few pairs (reference_id, new one). */
export interface Renames {
  count: number;
  examples: Array<[from: string, to: string]>;
}
