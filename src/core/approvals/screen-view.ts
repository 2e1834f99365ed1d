/**
 * The one shape of a prepared run (docs/schema/prepared-run.schema.json) and the approver's
 * screen in text, for `approve`, `runs show PREP` and `send --prepare`.
 */
import { type CurrencyTotals, formatMinor, groupThousands } from '../../money/amount.js';
import { displayText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { shortTime } from '../../output/table.js';
import type { PreparedPayout, PreparedRun } from '../../state/pg/approvals.js';
import { totalsDoc } from '../send/render.js';
import type { OriginState } from '../send/fates.js';
import type { Comparison, PreparedScreen, RetryVerdict, RowChange, ShownState } from './screen.js';
import { totalsOf } from './screen.js';

/** The version of the prepared-run document; a change that breaks a reader raises it. */
export const PREPARED_SCHEMA_VERSION = 1;

/** Rows the table shows without --all. */
export const SCREEN_ROWS = 50;

type Totals = Record<string, { count: number; total: string }>;

/** What every view of a prepared run has: who, when, what happened; the figures from its rows. */
export function preparedHead(
  p: PreparedRun,
  state: ShownState,
  figures: { payout_count: number; totals: Totals },
) {
  return {
    schema_version: PREPARED_SCHEMA_VERSION,
    kind: 'prepared' as const,
    prepared_run_id: p.prep_id,
    state,
    service: p.service,
    inputs: p.inputs,
    content_hash: p.content_hash,
    payout_count: figures.payout_count,
    totals: figures.totals,
    batch_reference: p.batch_reference,
    webhook_url: p.webhook_url,
    note: p.note,
    prepared_by: { role: p.prepared_by, os_user: p.os_user, host: p.host },
    created_at: p.created_at,
    expires_at: p.expires_at,
    expired: p.expired,
    approve_command: `payouts approve ${p.prep_id}`,
    events: p.events.map(({ by_role, os_user, host, ...e }) => ({
      ...e,
      by: { role: by_role, os_user, host },
    })),
  };
}

const payoutDoc = (r: PreparedPayout) => ({
  row: r.row,
  reference_id: r.reference_id,
  amount: r.amount,
  currency: r.currency,
  recipient: r.recipient,
});

/** Per-currency totals of some rows. */
function rowTotals(rows: PreparedPayout[], s: PreparedScreen): Totals {
  return totalsDoc(totalsOf(rows, s.currencies), s.currencies);
}

/** The new recipients: how many, their payouts and totals, each with its own. */
function newRecipientsDoc(s: PreparedScreen) {
  const by = new Map<string, PreparedPayout[]>();
  for (const r of s.newRows) by.set(r.recipient, [...(by.get(r.recipient) ?? []), r]);
  return {
    count: by.size,
    payout_count: s.newRows.length,
    totals: rowTotals(s.newRows, s),
    recipients: [...by].map(([recipient, rows]) => ({
      recipient,
      payout_count: rows.length,
      totals: rowTotals(rows, s),
      reference_ids: rows.map((r) => r.reference_id),
    })),
  };
}

/** A comparison in the document. */
function comparisonDoc(c: Comparison, s: PreparedScreen) {
  const count = (k: RowChange['change']) => c.changes.filter((x) => x.change === k).length;
  return {
    relation: c.relation,
    prepared_run_id: c.run.prep_id,
    state: c.state,
    matched_by: c.matched_by,
    added_count: count('added'),
    removed_count: count('removed'),
    changed_count: count('changed'),
    totals_then: totalsDoc(c.totalsBefore, s.currencies),
    totals_now: totalsDoc(s.totals, s.currencies),
    changes: c.changes,
  };
}

/** What earlier runs hold of the payouts, in counts. */
function earlierCounts(s: PreparedScreen) {
  const n = (k: string) => [...s.earlier.values()].filter((v) => v === k).length;
  const known = s.rows.filter((r) => s.earlier.has(r.reference_id)).length;
  return {
    sent_count: n('sent'),
    pending_count: n('pending'),
    failed_count: n('failed'),
    to_send_count: s.rows.length - known,
  };
}

/**
 * "retries X, which was paid (run … on …): the send will refuse this row": a retry row's
 * original as the history holds it, in the words a send refuses the row with (retries.ts).
 */
function retryWords(retryOf: string, v: RetryVerdict | undefined, sentEarlier: boolean): string {
  const head = `retries ${retryOf}${v?.which ?? ''}`;
  if (!v) return head;
  if (v.refused) return `${head}: the send will refuse this row`;
  if (v.state === 'not_in_history')
    return `${head}: the send refuses it unless given --original-elsewhere, then sends it only if the service says it failed or was canceled`;
  // Sent earlier, the row is not sent again ("sent earlier" says so).
  return sentEarlier ? head : `${head}: this retry sends it`;
}

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

/** What each row calls attention to, in words: new recipient, changed, sent earlier, largest. */
export function attentionOf(s: PreparedScreen, grouped = false): Map<number, string[]> {
  const newRows = new Set(s.newRows.map((r) => r.row));
  const largest = new Set(s.largest.map((r) => r.row));
  const first = s.comparisons[0];
  const changes = new Map<string, RowChange>();
  for (const c of first?.changes ?? []) if (c.after) changes.set(c.after.reference_id, c);
  const out = new Map<number, string[]>();
  for (const r of s.rows) {
    const words: string[] = [];
    if (newRows.has(r.row)) words.push('new recipient');
    // A retry pays what its original did not: the approver sees where the original stands.
    if (r.retry_of !== null)
      words.push(retryWords(r.retry_of, s.retries.get(r.row), s.earlier.has(r.reference_id)));
    const c = changes.get(r.reference_id);
    if (c?.change === 'added') words.push(`added since ${first!.run.prep_id}`);
    if (c?.change === 'changed' && c.before)
      words.push(
        `was ${amountText(c.before.amount, c.before.currency, grouped)} to ${c.before.recipient}`,
      );
    const e = s.earlier.get(r.reference_id);
    if (e) words.push(e === 'sent' ? 'sent earlier' : `${e} earlier`);
    if (largest.has(r.row)) words.push('largest');
    out.set(r.row, words);
  }
  return out;
}

/** The prepared run as its one --json document: approve, runs show PREP, send --prepare. */
export function preparedDoc(s: PreparedScreen) {
  const attention = attentionOf(s);
  return {
    ...preparedHead(s.run, s.state, {
      payout_count: s.rows.length,
      totals: totalsDoc(s.totals, s.currencies),
    }),
    new_recipients: newRecipientsDoc(s),
    largest: s.largest.map(payoutDoc),
    compared_with: s.comparisons.map((c) => comparisonDoc(c, s)),
    earlier: earlierCounts(s),
    duplicates: s.duplicates.map((d) => ({ prepared_run_id: d.run.prep_id, state: d.state })),
    retries: {
      count: s.retries.size,
      refused_count: [...s.retries.values()].filter((v) => v.refused).length,
    },
    payouts: s.rows.map((r) => ({
      ...payoutDoc(r),
      description: r.description,
      retry_of: r.retry_of,
      retry_of_state: s.retries.get(r.row)?.state ?? null,
      attention: attention.get(r.row) ?? [],
    })),
  };
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

/** An amount for a person: "EUR 45,000.00". */
function amountText(amount: string, currency: string, grouped: boolean): string {
  return `${currency} ${grouped ? groupThousands(amount) : amount}`;
}

/** "+35.0 %" between two totals of a currency; "" when there was none then. */
function change(then: bigint, now: bigint): string {
  if (then === 0n) return '';
  const permille = ((now - then) * 1000n) / then;
  const sign = permille >= 0n ? '+' : '-';
  const abs = permille < 0n ? -permille : permille;
  return ` (${sign}${abs / 10n}.${abs % 10n} %)`;
}

/** A comparison's lines: the counts, the totals then and now, the first changed rows. */
function comparisonLines(c: Comparison, s: PreparedScreen, grouped: boolean): string[] {
  const count = (k: RowChange['change']) => c.changes.filter((x) => x.change === k).length;
  const who = c.run.events.find((e) => e.decision !== 'sent');
  const decided = who && who.decision !== c.state ? `; ${who.decision}` : '';
  const by = who ? `${decided} by ${who.by_role} at ${whenText(who.at)}` : '';
  const why = who?.reason ? `: ${JSON.stringify(who.reason)}` : '';
  const what = c.relation === 'rejected_predecessor' ? 'the rejected run' : 'the last approved run';
  const lines = [
    `Against ${what} ${c.run.prep_id} (${c.state}${by}${why}): ${count('added')} added, ${count('removed')} removed, ${count('changed')} changed, matched by ${c.matched_by === 'reference_id' ? 'reference_id' : 'recipient'}`,
  ];
  const currencies = new Set(
    [...c.totalsBefore.entries(), ...s.totals.entries()].map((t) => t.currency),
  );
  for (const cur of [...currencies].sort()) {
    const digits = s.currencies.minorUnits(cur) ?? 2;
    const fmt = (t: CurrencyTotals) =>
      amountText(formatMinor(t.minorOf(cur), digits), cur, grouped);
    lines.push(
      `  ${fmt(c.totalsBefore)} then, ${fmt(s.totals)} now${change(c.totalsBefore.minorOf(cur), s.totals.minorOf(cur))}`,
    );
  }
  for (const x of c.changes.slice(0, 10)) lines.push(`  ${changeText(x, grouped)}`);
  if (c.changes.length > 10) lines.push(`  and ${c.changes.length - 10} more (see --json)`);
  return lines;
}

/** A row's change in words. */
function changeText(x: RowChange, grouped: boolean): string {
  const words = (r: NonNullable<RowChange['after']>) =>
    `${displayText(r.reference_id)} ${amountText(r.amount, r.currency, grouped)} to ${displayText(r.recipient)}`;
  if (x.change === 'added') return `added: ${words(x.after!)}`;
  if (x.change === 'removed') return `removed: ${words(x.before!)}`;
  return `changed: ${words(x.after!)}, was ${words(x.before!)}`;
}

/** A label and its value, as send's summary aligns them. */
const field = (label: string, value: string) => `${label.padEnd(16)}${value}`;

/** The screen's lines above its table. */
export function screenLines(s: PreparedScreen, grouped: boolean): string[] {
  const p = s.run;
  const doc = preparedDoc(s);
  const shown = (v: string | null, none: string) => (v === null ? none : displayText(v));
  const lines = [
    field('Prepared run:', p.prep_id),
    field('Inputs:', p.inputs.map(displayText).join(' ')),
    field('Payouts:', String(s.rows.length)),
    field('Totals:', totalsText(doc.totals, grouped)),
    field('Service:', displayText(p.service)),
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
  const nr = doc.new_recipients;
  lines.push(
    field(
      'New recipients:',
      nr.count
        ? `${nr.count}, ${totalsText(nr.totals, grouped)}: ${nr.recipients.map((r) => displayText(r.recipient)).join(', ')}`
        : 'none: every recipient was paid before by this history',
    ),
  );
  lines.push(
    field(
      'Largest:',
      s.largest
        .map((r) => `${displayText(r.reference_id)} ${amountText(r.amount, r.currency, grouped)}`)
        .join(', ') || 'none',
    ),
  );
  const e = doc.earlier;
  lines.push(
    field(
      'Sent earlier:',
      e.sent_count + e.pending_count + e.failed_count
        ? `${e.sent_count} sent, ${e.pending_count} pending, ${e.failed_count} failed; ${e.to_send_count} of ${s.rows.length} would be sent now`
        : `none; all ${s.rows.length} would be sent now`,
    ),
  );
  const retries = retriesText(s);
  if (retries) lines.push(field('Retries:', displayText(retries)));
  if (!s.comparisons.length)
    lines.push(field('Compared:', 'no earlier approved or rejected run of this batch or preparer'));
  for (const c of s.comparisons) lines.push(...comparisonLines(c, s, grouped));
  for (const d of s.duplicates)
    lines.push(
      `Warning: run ${d.run.prep_id} (${d.state}, prepared by ${d.run.prepared_by} at ${whenText(d.run.created_at)}) holds exactly these payouts`,
    );
  return lines;
}

/** The payouts' table: rows that call for attention first; 50 rows unless `all`. */
export async function screenTable(
  s: PreparedScreen,
  output: Output,
  opts: { all: boolean; grouped: boolean; toErr?: boolean },
): Promise<void> {
  const attention = attentionOf(s, opts.grouped);
  // Rows a send will refuse first, then those a person must look at; those only among the
  // largest next; then the rest.
  const rank = (r: PreparedPayout) => {
    const words = attention.get(r.row) ?? [];
    if (s.retries.get(r.row)?.refused) return 0;
    return words.some((w) => w !== 'largest') ? 1 : words.length ? 2 : 3;
  };
  const ordered = [0, 1, 2, 3].flatMap((k) => s.rows.filter((r) => rank(r) === k));
  const shown = opts.all ? ordered : ordered.slice(0, SCREEN_ROWS);
  const rows = shown.map((r) => [
    String(r.row + 1),
    displayText(r.reference_id),
    opts.grouped ? groupThousands(r.amount) : r.amount,
    displayText(r.currency),
    displayText(r.recipient),
    displayText((attention.get(r.row) ?? []).join('; ')),
  ]);
  if (!rows.length) return;
  const head = ['row', 'reference_id', 'amount', 'currency', 'recipient', 'attention'];
  const layout = { wrap: ['recipient', 'attention'], below: ['attention'] };
  const table = await output.table(head, rows, layout);
  const more = `${ordered.length - shown.length} more payouts: --all shows them, --json lists every one`;
  if (opts.toErr) output.info(table);
  else output.print(table);
  if (shown.length === ordered.length) return;
  if (opts.toErr) output.info(more);
  else output.printAside(more);
}
