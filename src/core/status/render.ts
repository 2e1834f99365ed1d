import type { ChalkInstance } from 'chalk';
import type { PayoutRecord } from '../../api/types.js';
import { serviceStatusKind } from '../../domain/statuses.js';
import { errorMessage, NotFoundError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { formatServiceNumber, moneyText } from '../../money/amount.js';
import { isoMinorUnits } from '../../money/currencies.js';
import { count, displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import { errorObject } from '../documents.js';
import { type Chain, chainOf } from './chains.js';
import { attentionFirst, summarize } from './counts.js';
import { statusDocument } from './document.js';
import type { LookupOutcome } from './lookup.js';
import { didYouMean, type NotFoundContext, notFoundText } from './near.js';
import { isSettled } from './watch.js';

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

/**
 * The detail view's lines of what the history says: the service's reason, the retry and what
 * the service says of it (the payout's state by its chain), or that this history never sent
 * the payout, so a retry of it sent elsewhere cannot be seen.
 */
export function historyLines(
  o: LookupOutcome,
  ctx: NotFoundContext | undefined,
  c: ChalkInstance,
): string[] {
  const ref = o.reference_id;
  const lines: string[] = [];
  const reason = ctx?.reasons?.get(ref);
  // Aligned with the detail view's widest label, "Transaction ID".
  const label = (t: string) => c.bold(t.padEnd(DETAIL_WIDTH));
  if (reason !== undefined) lines.push(`${label('Reason')}  ${displayText(reason)}`);
  const chain = chainOf(o, ctx);
  if (chain) lines.push(`${label('Retried as')}  ${retryText(chain, c)}`);
  const failed = o.kind === 'found' && serviceStatusKind(o.record.status) === 'failed';
  if (failed && ctx?.held && !ctx.held.has(ref) && ctx.where)
    lines.push(`${label('History')}  ${notHeldText(ctx.where)}`);
  return lines;
}

/** What a history that never sent a failed payout cannot know. */
function notHeldText(where: string): string {
  return `never sent from ${displayText(where)}: a retry of it sent from another machine or folder cannot be seen here (one history for every machine: PAYOUTS_STATE_URL, docs/shared-history.md)`;
}

/** "NEW-1 in run 3f2a…: success at the service (the payout is paid by it)", coloured. */
function retryText(chain: Chain, c: ChalkInstance): string {
  const { tail, answer, by } = chain;
  const head = `${displayText(tail.ref)} in run ${tail.runId}: `;
  if (!answer) return `${head}${c.yellow('not looked up')}`;
  if (answer.kind === 'error') {
    const why = displayText(errorMessage(answer.error));
    return `${head}${c.red('could not be looked up')} (${why}): the payout's state is not known`;
  }
  if (answer.kind === 'not_found') return `${head}${c.red('not found')} at the service`;
  const status = `${head}${colorStatus(answer.record.status, c)} at the service`;
  if (by === 'paid_by_retry') return `${status} (the payout is paid by it)`;
  return by === 'pending_by_retry' ? `${status} (the payout is pending as it)` : status;
}

/**
 * A table's "Retried as" cell: on a pipe the retry's reference alone (the status cell stays
 * the service's one word); on a terminal with the service's word on it.
 */
function retriedCell(
  o: LookupOutcome,
  ctx: NotFoundContext | undefined,
  c: ChalkInstance,
  terminal: boolean,
): string {
  const chain = chainOf(o, ctx);
  if (!chain) return '';
  const ref = displayText(chain.tail.ref);
  if (!terminal) return ref;
  const a = chain.answer;
  if (!a || a.kind === 'error') return `${ref}: ${c.yellow('unknown')}`;
  return `${ref}: ${a.kind === 'not_found' ? c.red('not found') : colorStatus(a.record.status, c)}`;
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
  'Retried as',
];

/** The table row of one outcome. */
export function tableRow(o: LookupOutcome, c: ChalkInstance, grouped = true): string[] {
  const ref = displayText(o.reference_id);
  if (o.kind === 'not_found') return [ref, c.red('not found'), '', '', '', '', ''];
  if (o.kind === 'error') return [ref, c.red('error'), '', '', '', '', ''];
  const r = o.record;
  const updated = typeof r.updated_at === 'string' ? parseServiceTime(r.updated_at) : undefined;
  return [
    plain(r.reference_id),
    colorStatus(r.status, c),
    formatAmount(r.amount, r.currency, grouped),
    plain(r.recipient),
    plain(r.transaction_id),
    updated ? shortTime(updated) : plain(r.updated_at),
    '',
  ];
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
      for (const line of historyLines(only, how.notFound, c)) output.print(line);
    } else if (only.kind === 'not_found') {
      output.print(notFoundText(only.reference_id, how.notFound, c.red));
    } else output.print(`${ref}: ${c.red('error')}: ${displayText(only.error.message)}`);
    return;
  }
  const { rows, hidden } = attentionFirst(outcomes, how.all ?? false, how.notFound);
  const terminal = output.stdoutIsTerminal;
  if (rows.length) {
    output.print(
      await output.table(
        TABLE_HEAD,
        // Grouped for people; the rows on a pipe are for a program, their digits plain.
        rows.map((o) => {
          const row = tableRow(o, c, terminal);
          row[6] = retriedCell(o, how.notFound, c, terminal);
          return row;
        }),
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
  tellNotHeld(output, outcomes, how.notFound);
  output.info(summarize(outcomes, how.notFound));
}

/** After the table: the failed payouts this history never sent, whose retries it cannot see. */
function tellNotHeld(
  output: Output,
  outcomes: LookupOutcome[],
  ctx: NotFoundContext | undefined,
): void {
  const { held, where } = ctx ?? {};
  if (!held || !where) return;
  const refs = outcomes
    .filter((o) => o.kind === 'found' && serviceStatusKind(o.record.status) === 'failed')
    .map((o) => o.reference_id)
    .filter((ref) => !held.has(ref));
  if (!refs.length) return;
  const shown = refs.slice(0, 5).map(displayText).join(', ');
  const more = refs.length > 5 ? ` and ${refs.length - 5} more` : '';
  const n = refs.length;
  output.info(
    `${count(n, 'failed payout')} (${shown}${more}) ${n === 1 ? 'was' : 'were'} ${notHeldText(where)}`,
  );
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
