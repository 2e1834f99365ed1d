/**
 * The approver's screen in text, for `approve`, `runs show PREP` and `send --prepare`: its
 * lines, then the payouts' table (the document is screen-doc.ts).
 */
import { type CurrencyTotals, formatMinor, groupThousands } from '../../money/amount.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import type { PreparedPayout } from '../../state/pg/approvals.js';
import { amountText, changeLines, countsText, seriesText } from '../series.js';
import type { OriginState } from '../send/fates.js';
import { totalsDoc } from '../send/render.js';
import { earlierCounts, newRecipientsDoc, type Totals } from './screen-doc.js';
import type { Comparison, PreparedScreen } from './screen.js';

/** Rows the table shows without --all. */
export const SCREEN_ROWS = 50;

/** Changes, and new recipients, a line names without --all. */
const NAMED = 10;

/** What the payout a retry retries is, as the Retries: line counts it. */
const ORIGIN_WORDS: Record<OriginState, string> = {
  paid: 'a payout already paid',
  pending: 'a payout pending at the service',
  in_doubt: 'a payout that may have been sent',
  retried: 'a payout already retried',
  reference_used: 'a payout under a new reference_id another payout holds',
  not_in_history: 'a payout this history does not hold',
  failed: 'a payout that failed',
  canceled: 'a payout that was canceled',
};

/** "1 retries a payout already paid and 2 a payout already retried". */
function countedWords(counts: Array<[OriginState, number]>): string {
  const parts = counts.map(
    ([state, n], i) => `${n}${i ? '' : n === 1 ? ' retries' : ' retry'} ${ORIGIN_WORDS[state]}`,
  );
  const last = parts.pop()!;
  return parts.length ? `${parts.join(', ')} and ${last}` : last;
}

/**
 * The Retries: line: how many rows retry a payout, and of which a send will refuse, as
 * "3, of which 1 retries a payout already paid: the send will refuse it, and so the whole run
 * (nothing is sent)".
 */
export function retriesText(s: PreparedScreen): string | undefined {
  const verdicts = [...s.retries.values()];
  const n = verdicts.length;
  if (!n) return undefined;
  const counts = (refused: boolean) =>
    (Object.keys(ORIGIN_WORDS) as OriginState[])
      .map((state): [OriginState, number] => [
        state,
        verdicts.filter((v) => v.state === state && v.refused === refused).length,
      ])
      .filter(([, k]) => k > 0);
  const refused = counts(true);
  const parts: string[] = [];
  const k = verdicts.filter((v) => v.refused).length;
  if (refused.length)
    parts.push(
      `${countedWords(refused)}: the send will refuse ${k === 1 ? 'it' : 'them'}, and so the whole run (nothing is sent)`,
    );
  const unheld = counts(false).filter(([state]) => state === 'not_in_history');
  if (unheld.length) parts.push(`${countedWords(unheld)}: the send asks the service first`);
  if (parts.length) return `${n}, of which ${parts.join('; ')}`;
  return `${n}, ${n === 1 ? 'of' : 'each of'} a payout that failed or was canceled`;
}

/** A time as send shows it: "2026-11-24 13:14 UTC". */
export function whenText(at: string): string {
  return `${shortTime(at)} UTC`;
}

/** "EUR 12,400.00 (3 payouts)", grouped for a person. */
export function totalsText(t: Totals, grouped: boolean): string {
  const entries = Object.entries(t);
  if (!entries.length) return 'none';
  return entries
    .map(([cur, v]) => {
      const total = grouped ? groupThousands(v.total) : v.total;
      return `${cur} ${total} (${v.count} payout${v.count === 1 ? '' : 's'})`;
    })
    .join(', ');
}

/** "+35.0 %" between two totals of a currency; "" when there was none then. */
function change(then: bigint, now: bigint): string {
  if (then === 0n) return '';
  const permille = ((now - then) * 1000n) / then;
  const sign = permille >= 0n ? '+' : '-';
  const abs = permille < 0n ? -permille : permille;
  return ` (${sign}${abs / 10n}.${abs % 10n} %)`;
}

/** "approved by bob at … and carol at …", "rejected by bob at …: "why"": every decision. */
function decidedText(c: Comparison): string {
  const decisions = c.run.events.filter((e) => e.decision !== 'sent');
  if (!decisions.length) return '';
  const parts = decisions.map((e) => `${e.by_role} at ${whenText(e.at)}`);
  const first = decisions[0]!.decision;
  const reason = decisions.find((e) => e.reason)?.reason;
  const said = first === c.state ? '' : `; ${first}`;
  const why = reason ? `: ${JSON.stringify(reason)}` : '';
  return `${said} by ${parts.join(' and ')}${why}`;
}

/** A comparison's lines: the counts, the series, the totals then and now, the changed rows. */
function comparisonLines(c: Comparison, s: PreparedScreen, all: boolean): string[] {
  const what = c.relation === 'rejected_predecessor' ? 'the rejected run' : 'the last approved run';
  const lines = [
    `Against ${what} ${c.run.prep_id} (${c.state}${decidedText(c)}): ${countsText(c.changes)}, matched by ${c.matched_by}`,
    `  of this series: ${seriesText(c.series)}`,
  ];
  const currencies = new Set(
    [...c.totalsBefore.entries(), ...s.totals.entries()].map((t) => t.currency),
  );
  for (const cur of [...currencies].sort()) {
    const digits = s.currencies.minorUnits(cur) ?? 2;
    const fmt = (t: CurrencyTotals) => amountText(formatMinor(t.minorOf(cur), digits), cur);
    lines.push(
      `  ${fmt(c.totalsBefore)} then, ${fmt(s.totals)} now${change(c.totalsBefore.minorOf(cur), s.totals.minorOf(cur))}`,
    );
  }
  return [
    ...lines,
    ...changeLines(c.changes, { most: all ? undefined : NAMED, usual: c.matched_by }),
  ];
}

/** A label and its value, as send's summary aligns them. */
export const field = (label: string, value: string) => `${label.padEnd(16)}${value}`;

/** "3, EUR 8,000.00 (3 payouts): a@…, b@…", or "all 40, …" (then no row says it). */
function newRecipientsText(s: PreparedScreen, all: boolean): string {
  const nr = newRecipientsDoc(s);
  if (!nr.count) return 'none: every recipient was paid before by this history';
  const totals = totalsText(nr.totals, true);
  if (nr.all)
    return `all ${nr.count}, ${totals}: this history has paid none of them at this service before`;
  const names = nr.recipients.map((r) => displayText(r.recipient));
  const shown = all ? names : names.slice(0, NAMED);
  const more = names.length - shown.length;
  return `${nr.count}, ${totals}: ${shown.join(', ')}${more ? ` and ${more} more (--all lists them)` : ''}`;
}

/** The Sent earlier: line: what earlier runs hold of the references. */
function earlierText(s: PreparedScreen): string {
  const e = earlierCounts(s);
  const n = s.rows.length;
  if (!(e.sent_count + e.pending_count + e.failed_count + e.other_count))
    return `none; all ${n} would be sent now`;
  const other = e.other_count
    ? `, ${e.other_count} under a reference_id that is another payout's (not this payout)`
    : '';
  return `${e.sent_count} sent, ${e.pending_count} pending, ${e.failed_count} failed${other}; ${e.to_send_count} of ${n} would be sent now`;
}

/** The screen's lines above its table; every change and new recipient named with `all`. */
export function screenLines(s: PreparedScreen, all = false): string[] {
  return [...headLines(s), ...bodyLines(s, all)];
}

/** What a prepared run is: its files, figures, service, who prepared it, its state. */
export function headLines(s: PreparedScreen): string[] {
  const p = s.run;
  const shown = (v: string | null, none: string) => (v === null ? none : displayText(v));
  const lines = [
    field('Prepared run:', p.prep_id),
    field('Inputs:', p.inputs.map(displayText).join(' ')),
    field('Payouts:', String(s.rows.length)),
    field('Totals:', totalsText(totalsDoc(s.totals, s.currencies), true)),
    field('Service:', displayText(s.service)),
    field('Batch:', shown(p.batch_reference, '(none: the service assigns one)')),
    field('Webhook:', shown(p.webhook_url, '(account default)')),
    field(
      'Prepared by:',
      `role ${p.prepared_by} (${p.os_user ?? '?'}@${p.host ?? '?'}) at ${whenText(p.created_at)}`,
    ),
    field('Note:', shown(p.note, '(none)')),
    field('Expires:', `${whenText(p.expires_at)}${p.expired ? ' (expired)' : ''}`),
    field('State:', s.state),
  ];
  return lines;
}

/** The lines of what the history knows of the payouts: what a review keeps. */
export function bodyLines(s: PreparedScreen, all: boolean): string[] {
  const lines = [field('New recipients:', newRecipientsText(s, all))];
  lines.push(
    field(
      'Largest:',
      s.largest
        .map((r) => `${displayText(r.reference_id)} ${amountText(r.amount, r.currency)}`)
        .join(', ') || 'none',
    ),
  );
  lines.push(field('Sent earlier:', earlierText(s)));
  const retries = retriesText(s);
  if (retries) lines.push(field('Retries:', displayText(retries)));
  const moved = [...s.retryChanges.values()];
  if (moved.length) lines.push(...changeLines(moved, { most: all ? undefined : NAMED }));
  if (!s.comparisons.length)
    lines.push(field('Compared:', 'no earlier approved or rejected run of this series'));
  for (const c of s.comparisons) lines.push(...comparisonLines(c, s, all));
  for (const d of s.duplicates)
    lines.push(
      `Warning: run ${d.run.prep_id} (${d.state}, prepared by ${d.run.prepared_by} at ${whenText(d.run.created_at)}) holds exactly these payouts`,
    );
  return lines;
}

/** A table's rows in the order a person reads them: refused first, attention, largest, the rest. */
export function attentionOrder(
  s: PreparedScreen,
  attention: ReadonlyMap<number, string[]>,
): PreparedPayout[] {
  const rank = (r: PreparedPayout) => {
    const words = attention.get(r.row) ?? [];
    if (s.retries.get(r.row)?.refused) return 0;
    return words.some((w) => w !== 'largest') ? 1 : words.length ? 2 : 3;
  };
  return [0, 1, 2, 3].flatMap((k) => s.rows.filter((r) => rank(r) === k));
}

/**
 * The payouts' table: rows that call for attention first; 50 rows unless `all`. `columns`:
 * the words of each row under each heading ("attention"; "as reviewed" and "now").
 */
export async function screenTable(
  s: PreparedScreen,
  output: Output,
  opts: { all: boolean; grouped: boolean; toErr?: boolean },
  columns: Array<[string, ReadonlyMap<number, string[]>]>,
): Promise<void> {
  const ordered = attentionOrder(s, columns[0]![1]);
  const shown = opts.all ? ordered : ordered.slice(0, SCREEN_ROWS);
  const rows = shown.map((r) => [
    String(r.row + 1),
    displayText(r.reference_id),
    opts.grouped ? groupThousands(r.amount) : r.amount,
    displayText(r.currency),
    displayText(r.recipient),
    ...columns.map(([, words]) => displayText((words.get(r.row) ?? []).join('; '))),
  ]);
  if (!rows.length) return;
  const names = columns.map(([name]) => name);
  const head = ['row', 'reference_id', 'amount', 'currency', 'recipient', ...names];
  const layout = { wrap: ['recipient', ...names], below: names };
  const table = await output.table(head, rows, layout);
  const more = `${ordered.length - shown.length} more payouts: --all shows them, --json lists every one`;
  if (opts.toErr) output.info(table);
  else output.print(table);
  if (shown.length === ordered.length) return;
  if (opts.toErr) output.info(more);
  else output.printAside(more);
}
