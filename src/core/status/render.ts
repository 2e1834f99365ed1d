import type { ChalkInstance } from 'chalk';
import type { PayoutRecord } from '../../api/types.js';
import { formatServiceNumber, moneyText } from '../../money/amount.js';
import { isoMinorUnits } from '../../money/currencies.js';
import { count, displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import { errorObject } from '../documents.js';
import { NotFoundError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { LONG_RUN_ROWS } from '../send/render.js';
import { serviceStatusKind } from '../../domain/statuses.js';
import type { LookupOutcome } from './lookup.js';
import { statusDocument } from './document.js';
import { didYouMean, type NotFoundContext, notFoundText } from './near.js';
import { isSettled } from './watch.js';
import type { HeldRef } from '../../domain/chain.js';

/** The --json document, which the status command prints (document.ts). */
export { statusDocument };

/**
 * A status as it came, escaped, and coloured: green success, red failed or canceled, yellow
 * pending and any status the interface does not document (not known to be final).
 */
export function colorStatus(status: string, c: ChalkInstance): string {
  const kind = serviceStatusKind(status);
  const text = displayText(status);
  if (kind === 'success') return c.green(text);
  if (kind === 'failed') return c.red(text);
  return c.yellow(text);
}

/**
 * An amount as people read it (moneyText), in its currency's decimals when the currency is
 * known: 1234.5 USD -> "USD 1,234.50"; `grouped: false` for a table's rows on a pipe.
 */
export function formatAmount(amount: unknown, currency: unknown, grouped = true): string {
  const cur = typeof currency === 'string' ? displayText(currency) : '';
  if (typeof amount !== 'number')
    return amount === undefined ? '' : moneyText(cur, plain(amount), grouped);
  const text = formatServiceNumber(amount, isoMinorUnits(cur.toUpperCase()));
  return moneyText(cur, text, grouped);
}

/** Two-digit padding. */
function pad(n: number, width = 2): string {
  return String(n).padStart(width, '0');
}

/** Parses a service timestamp; one without a zone is UTC, as the interface says. */
export function parseServiceTime(text: string): Date | undefined {
  const t = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}/.test(t)) return undefined;
  const hasZone = /(Z|[+-]\d{2}:?\d{2})$/i.test(t);
  const iso = hasZone || !/[T ]\d{2}:\d{2}/.test(t) ? t : `${t.replace(' ', 'T')}Z`;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** A date in the local time zone, with its offset: "2024-05-01 19:00:00 +09:00". */
export function formatLocal(d: Date): string {
  const offset = -d.getTimezoneOffset();
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())} ${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

/** A timestamp in ISO UTC and in local time; the raw text when it cannot be read. */
export function formatTimestamp(value: unknown): string {
  if (typeof value !== 'string') return plain(value);
  const d = parseServiceTime(value);
  if (!d) return displayText(value);
  return `${d.toISOString()} (local ${formatLocal(d)})`;
}

/** Fields shown in the detail view, in order; amount and currency are shown together. */
const DETAIL_FIELDS: Array<[string, string]> = [
  ['reference_id', 'Reference ID'],
  ['status', 'Status'],
  ['amount', 'Amount'],
  ['recipient', 'Recipient'],
  ['description', 'Description'],
  ['transaction_id', 'Transaction ID'],
  ['created_at', 'Created at'],
  ['updated_at', 'Updated at'],
];

/** Text of any other field the service sent, escaped for a terminal. */
function plain(value: unknown): string {
  if (value === undefined || value === null) return '';
  return displayText(typeof value === 'string' ? value : JSON.stringify(value));
}

/** The detail view of one payout record: every field, one per line. */
export function renderDetail(record: PayoutRecord, c: ChalkInstance): string {
  const rows: Array<[string, string]> = [];
  for (const [key, label] of DETAIL_FIELDS) {
    let value: string;
    if (key === 'status') value = colorStatus(record.status, c);
    else if (key === 'amount') value = formatAmount(record.amount, record.currency);
    else if (key === 'created_at' || key === 'updated_at') value = formatTimestamp(record[key]);
    else value = plain(record[key]);
    rows.push([label, value]);
  }
  const shown = new Set([...DETAIL_FIELDS.map(([k]) => k), 'currency']);
  for (const [key, value] of Object.entries(record)) {
    if (!shown.has(key)) rows.push([displayText(key), plain(value)]);
  }
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${c.bold(label.padEnd(width))}  ${value}`).join('\n');
}

/** The detail view's lines of what the history says: the service's reason, the retry. */
export function historyLines(
  ref: string,
  ctx: NotFoundContext | undefined,
  c: ChalkInstance,
): string[] {
  const lines: string[] = [];
  const reason = ctx?.reasons?.get(ref);
  // Aligned with the detail view's widest label, "Transaction ID".
  const label = (t: string) => c.bold(t.padEnd(DETAIL_WIDTH));
  if (reason !== undefined) lines.push(`${label('Reason')}  ${displayText(reason)}`);
  const r = ctx?.retried?.get(ref);
  if (r) lines.push(`${label('Retried as')}  ${retryText(r, c)}`);
  return lines;
}

/** "NEW-1 in run 3f2a…: success" (coloured), the last retry of a chain. */
function retryText(r: HeldRef, c: ChalkInstance): string {
  const status = r.kind === 'doubt' ? c.yellow('outcome unknown') : colorStatus(r.status ?? '', c);
  const paid = r.kind === 'success' ? ' (the payout is paid by it)' : '';
  return `${displayText(r.ref)} in run ${r.runId}: ${status}${paid}`;
}

/** A table row whose failed payout was retried: its status cell names the retry. */
function withRetry(
  row: string[],
  ref: string,
  ctx: NotFoundContext | undefined,
  c: ChalkInstance,
): string[] {
  const r = ctx?.retried?.get(ref);
  if (r) row[1] = `${row[1]}, retried as ${retryText(r, c)}`;
  return row;
}

/** The widest label of the detail view. */
const DETAIL_WIDTH = 'Transaction ID'.length;

/** The table header of several outcomes. */
export const TABLE_HEAD = [
  'Reference ID',
  'Status',
  'Amount',
  'Recipient',
  'Transaction ID',
  'Updated at (UTC)',
];

/** The table row of one outcome. */
export function tableRow(o: LookupOutcome, c: ChalkInstance, grouped = true): string[] {
  const ref = displayText(o.reference_id);
  if (o.kind === 'not_found') return [ref, c.red('not found'), '', '', '', ''];
  if (o.kind === 'error') return [ref, c.red('error'), '', '', '', ''];
  const r = o.record;
  const updated = typeof r.updated_at === 'string' ? parseServiceTime(r.updated_at) : undefined;
  return [
    plain(r.reference_id),
    colorStatus(r.status, c),
    formatAmount(r.amount, r.currency, grouped),
    plain(r.recipient),
    plain(r.transaction_id),
    updated ? shortTime(updated) : plain(r.updated_at),
  ];
}

/** The counts of the summary line, in their fixed order, with the words `send` uses. */
const SUMMARY_WORDS = [
  ['success', 'succeeded'],
  ['failed', 'failed'],
  ['canceled', 'canceled'],
  ['pending', 'pending'],
  ['not found', 'not found'],
] as const;

/**
 * Counts outcomes for the summary line, always in one order: "200 payouts: 194 succeeded,
 * 4 failed, 2 canceled, 0 pending, 0 not found"; statuses the interface does not document
 * are counted together as unknown, with their names, and lookups with no answer last.
 */
export function summarize(outcomes: LookupOutcome[]): string {
  const counts = new Map<string, number>();
  const unknown = new Map<string, number>();
  for (const o of outcomes) {
    if (o.kind === 'found' && serviceStatusKind(o.record.status) === 'undocumented') {
      unknown.set(o.record.status, (unknown.get(o.record.status) ?? 0) + 1);
      continue;
    }
    const key =
      o.kind === 'found' ? o.record.status : o.kind === 'not_found' ? 'not found' : 'error';
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const parts: string[] = SUMMARY_WORDS.map(([key, word]) => `${counts.get(key) ?? 0} ${word}`);
  if (unknown.size) {
    let n = 0;
    for (const count of unknown.values()) n += count;
    const names = [...unknown.keys()].map(displayText).join(', ');
    parts.push(`${n} unknown status${n === 1 ? '' : 'es'} (${names})`);
  }
  const errors = counts.get('error');
  if (errors) parts.push(`${errors} could not be looked up`);
  const n = outcomes.length;
  return `${count(n, 'payout')}: ${parts.join(', ')}`;
}

/** Whether an outcome needs no one's attention: a payout found succeeded. */
function succeeded(o: LookupOutcome): boolean {
  return o.kind === 'found' && serviceStatusKind(o.record.status) === 'success';
}

/**
 * The rows of the table: those needing attention (failed, canceled, not found, pending, any
 * other status, no answer) first, in input order, then the successes, which a list longer
 * than LONG_RUN_ROWS shows only with --all, as `send` does. Returns the rows and how many
 * successes were left out.
 */
export function attentionFirst(
  outcomes: LookupOutcome[],
  all: boolean,
): { rows: LookupOutcome[]; hidden: number } {
  const attention = outcomes.filter((o) => !succeeded(o));
  const fine = outcomes.filter(succeeded);
  if (all || outcomes.length <= LONG_RUN_ROWS) return { rows: [...attention, ...fine], hidden: 0 };
  return { rows: attention, hidden: fine.length };
}

/**
 * What an exit code other than 0, 4 or 5 stands for when no single error stopped the lookups:
 * payouts not found (6), or lookups that got no usable answer (7).
 */
export function statusError(
  outcomes: LookupOutcome[],
  exitCode: number,
  notFound?: NotFoundContext,
): Error | undefined {
  const listed = (refs: string[]) =>
    refs.length > 5
      ? `${refs.slice(0, 5).join(', ')} and ${refs.length - 5} more`
      : refs.join(', ');
  if (exitCode === ExitCode.notFound) {
    const refs = outcomes.filter((o) => o.kind === 'not_found').map((o) => o.reference_id);
    const error = new NotFoundError(refs[0] ?? '');
    const at = notFound ? ` at ${notFound.service}` : '';
    const hints = refs
      .map((r) => [r, didYouMean(notFound?.near.get(r))])
      .filter(([, hint]) => hint)
      .map(([r, hint]) => `${r}: ${hint}`);
    error.message = `${refs.length} of ${count(outcomes.length, 'payout')} not found${at}: ${listed(refs)}${hints.length ? ` (${hints.join('; ')})` : ''}`;
    return error;
  }
  const failed = outcomes.filter((o) => o.kind === 'error');
  const first = failed[0];
  if (exitCode !== ExitCode.unreachable || first?.kind !== 'error') return undefined;
  const refs = failed.map((o) => o.reference_id);
  return Object.assign(new Error(), {
    name: first.error.name,
    message: `${refs.length} of ${count(outcomes.length, 'payout')} could not be looked up (${listed(refs)}): ${first.error.message}`,
  });
}

/** Writes the result of `payouts status`: JSON, the detail view, or a table. */
export async function renderStatus(
  output: Output,
  report: { outcomes: LookupOutcome[]; timedOut: boolean; exitCode?: number; fatal?: Error },
  how: { single: boolean; watch: boolean; all?: boolean; notFound?: NotFoundContext },
): Promise<void> {
  const { outcomes } = report;
  if (report.timedOut) {
    const open = outcomes.filter((o) => !isSettled(o)).map((o) => displayText(o.reference_id));
    output.warn(`stopped watching at the timeout; not final yet: ${open.join(', ')}`);
  }
  if (output.json) {
    const exitCode = report.exitCode ?? 0;
    const why = report.fatal ?? statusError(outcomes, exitCode, how.notFound);
    const error = why ? errorObject(why, exitCode) : null;
    const facts = {
      watch: how.watch,
      timedOut: report.timedOut,
      exitCode,
      error,
      history: how.notFound,
    };
    output.printJson(statusDocument(outcomes, facts));
    return;
  }
  const c = output.color;
  const only = outcomes[0];
  if (how.single && only && outcomes.length === 1) {
    const ref = displayText(only.reference_id);
    if (only.kind === 'found') {
      output.print(renderDetail(only.record, c));
      for (const line of historyLines(only.reference_id, how.notFound, c)) output.print(line);
    } else if (only.kind === 'not_found') {
      output.print(notFoundText(only.reference_id, how.notFound, c.red));
    } else output.print(`${ref}: ${c.red('error')}: ${displayText(only.error.message)}`);
    return;
  }
  const { rows, hidden } = attentionFirst(outcomes, how.all ?? false);
  if (rows.length) {
    output.print(
      await output.table(
        TABLE_HEAD,
        // Grouped for people; the rows on a pipe are for a program, their digits plain.
        rows.map((o) =>
          withRetry(tableRow(o, c, output.stdoutIsTerminal), o.reference_id, how.notFound, c),
        ),
        { drop: ['Recipient', 'Updated at (UTC)'] },
      ),
    );
  }
  const note =
    hidden > 0
      ? `${count(hidden, 'successful payout')} not shown (use --all to list every row)`
      : undefined;
  // On a terminal the note follows the table; on a pipe it goes to stderr, as send's does.
  if (note && output.stdoutIsTerminal) output.print(note);
  else if (note) output.info(note);
  for (const o of outcomes) {
    if (o.kind === 'error') {
      output.warn(`${displayText(o.reference_id)}: ${displayText(o.error.message)}`);
    }
  }
  tellNotFound(output, outcomes, how.notFound);
  output.info(summarize(outcomes));
}

/** After the table: where the payouts were not found, and any near reference in the history. */
function tellNotFound(
  output: Output,
  outcomes: LookupOutcome[],
  ctx: NotFoundContext | undefined,
): void {
  const missing = outcomes.filter((o) => o.kind === 'not_found');
  if (!ctx || !missing.length) return;
  for (const o of missing) {
    if (ctx.near.has(o.reference_id)) output.info(notFoundText(o.reference_id, ctx));
  }
  const n = missing.length;
  output.info(
    `${count(n, 'payout')} not found at ${displayText(ctx.service)} (a reference_id is case-sensitive)`,
  );
}
