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
  concurrency: number;
  yes: boolean;
  dryRun: boolean;
  maxTotals: MaxTotal[];
  reportPath?: string;
  failedOutPath?: string;
  all: boolean;
  sandbox: boolean;
}
