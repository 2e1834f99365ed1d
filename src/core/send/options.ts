import type { InputFormat, PayoutField } from '../../input/index.js';

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
