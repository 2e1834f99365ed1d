/** The files a send writes when asked: --report (every row's outcome) and --failed-out (a retry file). */
import { resolve } from 'node:path';
import { errorCode, errorMessage } from '../../errors.js';
import { replaceFile, UnsafeFileError } from '../../files.js';
import { guardFormula } from '../../input/formula.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { ReportRow } from '../../state/index.js';
import { outcomeKind } from '../../domain/outcome.js';
import { isKnownUnpaid, NOT_SENT, statusKind } from '../../domain/statuses.js';
import { shellWord } from '../../output/display.js';
import type { SendEngine } from './engine.js';
import { runReportStyle } from './options.js';
import { formatCharges } from './render.js';
import type { SendContext } from './staging.js';
import { amountCell, amountHeader, type CsvStyle, PLAIN_STYLE } from '../report-style.js';

/** Quotes a CSV cell when it holds the delimiter, a quote, a line break or edge spaces. */
export function csvCell(value: string, delimiter = ','): string {
  const quote = /["\r\n]|^\s|\s$/.test(value) || value.includes(delimiter);
  return quote ? `"${value.replace(/"/g, '""')}"` : value;
}

const REPORT_HEADER = [
  'file',
  'line',
  'reference_id',
  'amount',
  'currency',
  'recipient',
  'description',
  'status',
  'transaction_id',
  'charges',
  'message',
  'sent_earlier',
  'retried_as',
];

/**
 * How --report and --failed-out are written: "excel" (the default) starts with a byte-order
 * mark and ends lines with CRLF, since Excel on Windows reads a CSV without a mark as its ANSI
 * code page and shows "müller" as "mÃ¼ller"; "utf8" is plain UTF-8 with LF, for scripts.
 */
export type ReportEncoding = 'excel' | 'utf8';

/** The byte-order mark and line end of a report written in `encoding`. */
function bytesOf(encoding: ReportEncoding = 'excel'): { bom: string; eol: string } {
  return encoding === 'utf8' ? { bom: '', eol: '\n' } : { bom: '\ufeff', eol: '\r\n' };
}

/**
 * How --report and --failed-out are written: --report-encoding, and the style of their cells
 * (core/report-style.ts: the delimiter, and the decimal mark of amounts and charges, whose
 * header then says `(decimal comma)`); "," and a point unless given.
 */
export interface ReportFormat {
  encoding?: ReportEncoding;
  style?: CsvStyle;
}

/** Writes the --report CSV: every input row with its outcome, formula-safe for spreadsheets. */
export async function writeReport(
  path: string,
  rows: Iterable<ReportRow>,
  currencies: CurrencyTable,
  format: ReportFormat = {},
): Promise<void> {
  const { bom, eol } = bytesOf(format.encoding);
  const style = format.style ?? PLAIN_STYLE;
  const d = style.delimiter;
  const header = REPORT_HEADER.map((h) =>
    h === 'amount' || h === 'charges' ? amountHeader(h, style) : h,
  );
  replaceFile(path, (append) => {
    append(`${bom}${header.map((h) => csvCell(h, d)).join(d)}${eol}`);
    const text = (v: string | undefined) => csvCell(guardFormula(v ?? ''), d);
    const money = (v: string) => csvCell(amountCell(v, style), d);
    for (const p of rows) {
      const o = p.outcome;
      const cells = [
        text(p.file),
        // The row's number: the last one in "line 12", "item 3" or "sheet Sheet1 row 12".
        /\d+$/.exec(p.location)?.[0] ?? '',
        text(p.reference_id),
        money(p.amount),
        text(p.currency),
        text(p.recipient),
        text(p.description),
        text(o?.status ?? NOT_SENT),
        text(o?.transaction_id),
        o ? money(formatCharges(o, currencies)) : '',
        text(o?.message),
        o?.sent_earlier ? 'true' : '',
        text(o?.retried_as?.reference_id),
      ];
      append(`${cells.join(d)}${eol}`);
    }
  });
}

/** One row of a retry file: a payout known not to have been paid, and the reference to send it under. */
export interface RetryRow {
  reference_id: string;
  /** Empty for the person to fill in, or derived by --new-references. */
  new_reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
  description?: string;
}

/** The header of a retry file: intake sends a row under its new_reference_id when one is given. */
export const RETRY_HEADER = [
  'reference_id',
  'new_reference_id',
  'amount',
  'currency',
  'recipient',
  'description',
];

/**
 * Writes a retry file (--failed-out): a valid input CSV whose new_reference_id column is to be
 * filled in, in the style of the run's input (its amount header says a decimal comma, so
 * `payouts send` reads it back without flags).
 */
export async function writeRetryFile(
  path: string,
  rows: Iterable<RetryRow>,
  format: ReportFormat = {},
): Promise<number> {
  let count = 0;
  const { bom, eol } = bytesOf(format.encoding);
  const style = format.style ?? PLAIN_STYLE;
  const d = style.delimiter;
  const header = RETRY_HEADER.map((h) => (h === 'amount' ? amountHeader(h, style) : h));
  replaceFile(path, (append) => {
    append(`${bom}${header.map((h) => csvCell(h, d)).join(d)}${eol}`);
    for (const p of rows) {
      count += 1;
      // Guarded for the spreadsheet it is opened in; intake removes the guard (input/formula.ts).
      const cells = [
        p.reference_id,
        p.new_reference_id,
        amountCell(p.amount, style),
        p.currency,
        p.recipient,
        p.description ?? '',
      ];
      append(`${cells.map((c) => csvCell(guardFormula(c), d)).join(d)}${eol}`);
    }
  });
  return count;
}

/**
 * Writes --failed-out: the rows known not to have been paid (failed, canceled, not sent), as a
 * valid input CSV. Pending rows, rows whose outcome is unknown and rows with a status the
 * interface does not document are left out: they may still be paid, and resending them under
 * a new reference could pay twice.
 */
export function writeFailedOut(
  path: string,
  rows: Iterable<ReportRow>,
  format: ReportFormat = {},
): Promise<number> {
  return writeRetryFile(path, knownUnpaid(rows), format);
}

/** The rows known not to have been paid, as retry rows with no new reference yet. */
function* knownUnpaid(rows: Iterable<ReportRow>): Generator<RetryRow> {
  for (const p of rows) {
    // By the one rule: a payout its retry paid (or is paying) is never written here.
    if (!isKnownUnpaid(p.outcome ? outcomeKind(p.outcome) : statusKind(NOT_SENT))) continue;
    const { reference_id, amount, currency, recipient, description } = p;
    yield { reference_id, new_reference_id: '', amount, currency, recipient, description };
  }
}

/** The hint after a retry file is written, naming the column to fill and the command to run. */
export function retryHint(path: string): string {
  return `give each row a new reference_id in its new_reference_id column, then \`payouts send ${shellWord(path)}\``;
}

/** What became of a file the user asked for: the rows written, or why it was not written. */
type Written = { rows: number } | { failed: string };

/** Why a file could not be written, in words (the error's own for ours, such as a link found there). */
function whyNotWritten(error: unknown): string {
  const words: Record<string, string> = {
    ENOSPC: 'the disk is full',
    EDQUOT: 'the disk quota is used up',
    EACCES: 'permission denied',
    EPERM: 'permission denied',
    EROFS: 'the file system is read-only',
    ENOENT: 'its folder is gone',
    EIO: 'an input/output error',
  };
  if (error instanceof UnsafeFileError) return `it ${error.problem}`;
  const code = errorCode(error);
  return (code && words[code]) ?? errorMessage(error);
}

/** Writes one file, or says why it could not be: never an error of the run. */
async function tryWrite(write: () => Promise<unknown>): Promise<Written> {
  try {
    const rows = await write();
    return { rows: typeof rows === 'number' ? rows : 0 };
  } catch (error) {
    return { failed: whyNotWritten(error) };
  }
}

/** What became of the report and failed-rows files. */
export type FilesWritten = { report?: Written; failedOut?: Written };

/**
 * Writes the report and failed-rows files the user asked for, in the run's conventions (each
 * checked before anything was sent, so a failure now is the disk's or the folder's).
 */
export async function writeFiles(ctx: SendContext, engine: SendEngine): Promise<FilesWritten> {
  const { opts, currencies } = ctx;
  const outcomes = engine.outcomes;
  const format = { encoding: opts.reportEncoding, style: runReportStyle(opts, ctx.plan).style };
  const at = (path: string) => resolve(ctx.deps.cwd ?? '.', path);
  const { reportPath, failedOutPath } = opts;
  return {
    report:
      reportPath === undefined
        ? undefined
        : await tryWrite(() =>
            writeReport(at(reportPath), outcomes.reportRows(), currencies, format),
          ),
    failedOut:
      failedOutPath === undefined
        ? undefined
        : await tryWrite(() => writeFailedOut(at(failedOutPath), outcomes.reportRows(), format)),
  };
}
