/** A send's results: the table, the closing line, the --json results and counts. */
import type { ChalkInstance } from 'chalk';
import {
  CurrencyTotals,
  formatMinor,
  formatServiceAmount,
  minorFromServiceNumber,
  moneyText,
} from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { count, displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { type ErrorObject, type SendDocHead, sendDocHead, sendStatusJson } from '../documents.js';
import { isDocumentedStatus, statusKind } from '../../domain/statuses.js';
import {
  countOutcomes,
  type OutcomeCounts,
  outcomeKind,
  type PayoutOutcome,
  paidByRetry,
} from '../../domain/outcome.js';

/** Rows beyond which the results table shows only the rows that need attention. */
export const LONG_RUN_ROWS = 50;

/** The per-currency totals as {CUR: {count, total}} with exact decimal totals. */
export function totalsDoc(
  totals: CurrencyTotals,
  currencies: CurrencyTable,
): Record<string, { count: number; total: string }> {
  const doc: Record<string, { count: number; total: string }> = {};
  for (const t of totals.entries()) {
    doc[t.currency] = {
      count: t.count,
      total: formatMinor(t.minor, currencies.minorUnits(t.currency) ?? 2),
    };
  }
  return doc;
}

/** Converts charges the service sent into minor units (max(digits, 6)), remembering each value. */
export function chargeMinorOf(
  currencies: CurrencyTable,
): (currency: string, charges: number) => bigint | undefined {
  // A run's charges take few distinct values: converting each once saves a parse per row.
  const memo = new Map<string, Map<number, bigint | undefined>>();
  return (currency, charges) => {
    let byValue = memo.get(currency);
    if (!byValue) {
      byValue = new Map();
      memo.set(currency, byValue);
    }
    if (byValue.has(charges)) return byValue.get(charges);
    const digits = currencies.minorUnits(currency) ?? 2;
    const minor = minorFromServiceNumber(charges, Math.max(digits, 6));
    if (byValue.size < 4096) byValue.set(charges, minor);
    return minor;
  };
}

/** Per-currency charge totals (minor units of max(digits, 6)) in each currency's decimals. */
export function formatChargeTotals(
  totals: Iterable<{ currency: string; minor: bigint }>,
  currencies: CurrencyTable,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const t of totals) {
    const digits = currencies.minorUnits(t.currency) ?? 2;
    out[t.currency] = trimToDigits(formatMinor(t.minor, Math.max(digits, 6)), digits);
  }
  return out;
}

/** Charges summed per currency from the service's numbers, exactly. */
export function chargesByCurrency(
  outcomes: Iterable<PayoutOutcome>,
  currencies: CurrencyTable,
): Record<string, string> {
  const totals = new CurrencyTotals();
  const toMinor = chargeMinorOf(currencies);
  for (const o of outcomes) {
    if (o.charges === undefined) continue;
    const minor = toMinor(o.currency, o.charges);
    if (minor !== undefined) totals.add(o.currency, minor);
  }
  return formatChargeTotals(totals.entries(), currencies);
}

/** Drops zeros beyond the currency's own decimals: "1.230000" with 2 digits -> "1.23". */
function trimToDigits(text: string, digits: number): string {
  const [int, frac = ''] = text.split('.');
  let f = frac;
  while (f.length > digits && f.endsWith('0')) f = f.slice(0, -1);
  return f ? `${int}.${f}` : (int ?? text);
}

/** What the head of the results and the closing line need: the counts and charge totals. */
export interface ResultsSummary {
  /** Number of results. */
  total: number;
  counts: OutcomeCounts;
  /** Charges per currency, as chargesByCurrency makes them. */
  charges: Record<string, string>;
  /**
   * Payouts that reached the service whose charges are not in `charges`: settled by reading
   * back (a payout record carries no charges), outcome unknown, or charges not exact.
   */
  chargesUnknown: number;
}

/** Whether a payout of this status may carry charges: any but one never sent. */
function mayHaveCharges(status: string): boolean {
  return statusKind(status) !== 'not_sent';
}

/** How many outcomes may carry charges but have none that count. */
export function countChargesUnknown(
  outcomes: Iterable<PayoutOutcome>,
  currencies: CurrencyTable,
): number {
  const toMinor = chargeMinorOf(currencies);
  let n = 0;
  for (const o of outcomes) {
    if (!mayHaveCharges(o.status)) continue;
    if (o.charges === undefined || toMinor(o.currency, o.charges) === undefined) n += 1;
  }
  return n;
}

/** The summary of a list of outcomes. */
export function summarize(outcomes: PayoutOutcome[], currencies: CurrencyTable): ResultsSummary {
  return {
    total: outcomes.length,
    counts: countOutcomes(outcomes),
    charges: chargesByCurrency(outcomes, currencies),
    chargesUnknown: countChargesUnknown(outcomes, currencies),
  };
}

/** What a send document says besides the counts. */
export interface ResultsExtra {
  batchReference?: string;
  runId: string;
  sandbox: boolean;
  unknown: string[];
  interrupted: boolean;
  /** The pace the run reached: most requests in flight, and 429s answered. */
  pace: { peakConcurrency: number; throttled: number };
  /** Payouts in the files, and their totals, when known. */
  payoutCount?: number;
  totals?: Record<string, { count: number; total: string }>;
  exitCode?: number;
  error?: ErrorObject;
  /** The retry rows --original-elsewhere let through (RunSplit.elsewhere). */
  elsewhere?: Array<{ reference_id: string; retry_of: string }>;
}

/** The fields of a finished run's --json document that come before its results. */
export function resultsHead(summary: ResultsSummary, extra: ResultsExtra): SendDocHead {
  const c = summary.counts;
  return {
    ...sendDocHead({ dryRun: false, sandbox: extra.sandbox }),
    exit_code: extra.exitCode ?? 0,
    interrupted: extra.interrupted,
    run_id: extra.runId,
    batch_reference: extra.batchReference ?? null,
    payout_count: extra.payoutCount ?? summary.total,
    totals: extra.totals ?? null,
    success_count: c.success,
    failed_count: c.failed,
    canceled_count: c.canceled,
    pending_count: c.pending,
    unknown_count: c.unknown,
    not_sent_count: c.notSent,
    sent_earlier_count: c.sentEarlier,
    found_at_service_count: c.foundAtService,
    paid_by_retry_count: c.paidByRetry,
    original_elsewhere: (extra.elsewhere ?? []).map((r) => ({
      reference_id: r.reference_id,
      retry_of: r.retry_of,
    })),
    charges: summary.charges,
    charges_unknown_count: summary.chargesUnknown,
    outcome_unknown: extra.unknown,
    peak_concurrency: extra.pace.peakConcurrency,
    rate_limited_count: extra.pace.throttled,
    error: extra.error ?? null,
  };
}

/**
 * A string as JSON text, exactly as JSON.stringify writes it. Printable ASCII without quotes
 * or backslashes, which references, statuses and ids almost always are, is only wrapped in
 * quotes: JSON.stringify per field was most of the cost of a result line.
 */
export function jsonText(s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(s);
  }
  return `"${s}"`;
}

/**
 * One result of a run as a line of JSON, every key present: the amount keeps the input's exact
 * digits and, like the charges, is a decimal string; the status as sendStatusJson gives it.
 */
export function resultItemJson(o: PayoutOutcome, charges: string | null): string {
  const q = jsonText;
  const opt = (v: string | null | undefined) => (v === undefined || v === null ? 'null' : q(v));
  const s = sendStatusJson(o.status);
  const r = o.retried_as;
  const retried = r
    ? `{"reference_id": ${q(r.reference_id)}, "run_id": ${q(r.run_id)}, "status": ${q(retriedStatus(r.status))}}`
    : 'null';
  return `{"reference_id": ${q(o.reference_id)}, "status": ${q(s.status)}, "service_status": ${opt(s.service_status)}, "transaction_id": ${opt(o.transaction_id)}, "amount": ${q(o.amount)}, "currency": ${q(o.currency)}, "charges": ${opt(charges)}, "message": ${opt(o.message || undefined)}, "sent_earlier": ${o.sent_earlier ? 'true' : 'false'}, "found_at_service": ${o.found_at_service ? 'true' : 'false'}, "retried_as": ${retried}, "paid_by_retry": ${paidByRetry(o) ? 'true' : 'false'}}`;
}

/** A retry's status in --json: a documented one, or unknown (in doubt, or undocumented). */
function retriedStatus(status: string): string {
  return isDocumentedStatus(status) ? status : 'unknown';
}

/** The results of a run as --json items, made one at a time. */
export function* resultItems(
  outcomes: Iterable<PayoutOutcome>,
  currencies: CurrencyTable,
): Generator<string> {
  // A run's charges take few distinct values: each is formatted once.
  const memo = new Map<string, string>();
  for (const o of outcomes) {
    let charges: string | null = null;
    if (o.charges !== undefined) {
      const key = `${o.currency} ${o.charges}`;
      charges = memo.get(key) ?? formatCharges(o, currencies);
      if (memo.size < 4096) memo.set(key, charges);
    }
    yield resultItemJson(o, charges);
  }
}

/** Charges in the currency's own decimals (1 USD -> "1.00"), or as the service wrote them. */
export function formatCharges(o: PayoutOutcome, currencies: CurrencyTable): string {
  if (o.charges === undefined) return '';
  return formatServiceAmount(o.charges, currencies.minorUnits(o.currency));
}

/**
 * A status for a table, escaped, and coloured: green success; yellow pending and statuses the
 * interface does not document (not known to be final); red anything else.
 */
export function colourStatus(status: string, c: ChalkInstance): string {
  const kind = statusKind(status);
  const text = displayText(status);
  if (kind === 'success') return c.green(text);
  if (kind === 'pending' || kind === 'undocumented') return c.yellow(text);
  return c.red(text);
}

/**
 * " (sent earlier)" or " (sent earlier, found at the service)" after a status, if so; a
 * payout that failed earlier is never called sent: its reference_id is used up.
 */
function earlierMark(o: PayoutOutcome, c: ChalkInstance): string {
  // Failed earlier, then paid (or pending) by its retry: the retry column names it.
  if (o.retried_as) {
    const as = paidByRetry(o) ? 'paid by its retry' : 'pending as its retry';
    return c.dim(` (earlier; ${as})`);
  }
  if (o.sent_earlier && statusKind(o.status) === 'failed') {
    return c.dim(' (earlier: needs a new reference_id)');
  }
  if (o.found_at_service) return c.dim(' (sent earlier, found at the service)');
  return o.sent_earlier ? c.dim(' (sent earlier)') : '';
}

/** The rows of a run's results, in input order, as the table asks for them. */
export interface ResultRows {
  total: number;
  successCount: number;
  /** Outcomes that succeeded (true) or need attention (false), in input order. */
  withSuccess(success: boolean): Iterable<PayoutOutcome>;
}

/** Result rows over a list of outcomes. */
export function listRows(outcomes: PayoutOutcome[]): ResultRows {
  return {
    total: outcomes.length,
    successCount: outcomes.filter((o) => outcomeKind(o) === 'success').length,
    withSuccess: (success) => outcomes.filter((o) => (outcomeKind(o) === 'success') === success),
  };
}

/** The results table: rows needing attention first; on a long run only those unless --all. */
export async function resultsTable(
  results: ResultRows,
  output: Output,
  all: boolean,
  currencies: CurrencyTable,
): Promise<string> {
  const long = results.total > LONG_RUN_ROWS && !all;
  // A long run reads back only the rows it shows: the successful ones are only counted.
  // Rows never sent are summed up in one line unless --all lists every row.
  const attention = [...results.withSuccess(false)];
  const rows = all ? attention : attention.filter((o) => statusKind(o.status) !== 'not_sent');
  const notSent = attention.length - rows.length;
  if (!long) rows.push(...results.withSuccess(true));
  const fineCount = results.successCount;
  const c = output.color;
  const d = displayText;
  // Grouped for people; a table on a pipe is rows for a program, its digits plain.
  const grouped = output.stdoutIsTerminal;
  const body = rows.map((o) => [
    d(o.reference_id),
    colourStatus(o.status, c) + earlierMark(o, c),
    moneyText(d(o.currency), o.amount, grouped),
    formatCharges(o, currencies),
    d(o.transaction_id ?? ''),
    d(o.message ?? ''),
    d(o.retried_as?.reference_id ?? ''),
  ]);
  const text = rows.length
    ? await output.table(
        ['reference_id', 'status', 'amount', 'charges', 'transaction_id', 'message', 'retried_as'],
        body,
        { wrap: ['status', 'message'], below: ['message'], drop: ['charges'] },
      )
    : '';
  const notes: string[] = [];
  if (long && fineCount) {
    notes.push(`${count(fineCount, 'successful payout')} not shown (use --all to list every row)`);
  }
  if (notSent) {
    notes.push(`${count(notSent, 'payout')} not sent, not listed (use --all to list every row)`);
  }
  // On a pipe the table stays plain rows: the notes go to stderr.
  if (!output.stdoutIsTerminal) {
    for (const note of notes) output.info(note);
    return text;
  }
  return [text, ...notes].filter(Boolean).join('\n');
}

/** The closing summary line: counts and charges per currency. */
export function closingLine(summary: ResultsSummary, c: ChalkInstance): string {
  const n = summary.counts;
  const total = summary.total;
  const charges = Object.entries(summary.charges)
    .map(([cur, v]) => moneyText(cur, v))
    .join(', ');
  const parts = [
    c.green(`${n.success} succeeded`),
    (n.failed ? c.red : (s: string) => s)(`${n.failed - n.canceled} failed`),
    // Canceled apart from failed, as `status` counts them (and only when there are some).
    ...(n.canceled ? [c.red(`${n.canceled} canceled`)] : []),
    (n.pending ? c.yellow : (s: string) => s)(`${n.pending} pending`),
  ];
  // Outcome unknown, or a status the interface does not document: neither failed nor paid.
  if (n.unknown) parts.push(c.yellow(`${n.unknown} unknown`));
  if (n.notSent) parts.push(`${n.notSent} not sent`);
  let line = `${count(total, 'payout')}: ${parts.join(', ')}`;
  if (n.sentEarlier) {
    const found = n.foundAtService ? `, ${n.foundAtService} of them found at the service` : '';
    line += ` (${n.sentEarlier} sent earlier, not sent again${found})`;
  }
  return line + chargesText(charges, summary.chargesUnknown);
}

/**
 * The charges part of the closing line. A total that leaves payouts out says how many, so
 * it never reads as complete: "; charges EUR 7,208.72 (+ 40 payouts with unknown charges)".
 */
function chargesText(charges: string, unknown: number): string {
  const more = `${count(unknown, 'payout')} with unknown charges`;
  if (!unknown) return charges ? `; charges ${charges}` : '';
  return charges ? `; charges ${charges} (+ ${more})` : `; charges unknown (${more})`;
}

/** Totals as "EUR 579,071.29, USD 12.00": the one form of money for people. */
export function totalsText(totals: CurrencyTotals, currencies: CurrencyTable): string {
  return Object.entries(totalsDoc(totals, currencies))
    .map(([cur, t]) => moneyText(cur, t.total))
    .join(', ');
}
