/**
 * The one shape of a prepared run (docs/schema/prepared-run.schema.json) for `approve`,
 * `runs show PREP` and `send --prepare`, and its body: what the approver's screen shows of the
 * payouts, kept as it was reviewed with each decision (review.ts).
 */
import type { PreparedPayout, PreparedRun } from '../../state/pg/approvals.js';
import { amountText, recipientChanges, type RowChange } from '../series.js';
import { totalsDoc } from '../send/render.js';
import type { Comparison, PreparedScreen, RetryVerdict, ShownState } from './screen.js';
import { totalsOf } from './screen.js';

/** The version of the prepared-run document; a change that breaks a reader raises it. */
export const PREPARED_SCHEMA_VERSION = 1;

export type Totals = Record<string, { count: number; total: string }>;

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

/** Whether every recipient of the run is new: one line says so, no row. */
export function allNew(s: PreparedScreen): boolean {
  return s.rows.length > 0 && s.newRows.length === s.rows.length;
}

/** The new recipients: how many, their payouts and totals, each with its own. */
export function newRecipientsDoc(s: PreparedScreen) {
  const by = new Map<string, PreparedPayout[]>();
  for (const r of s.newRows) by.set(r.recipient, [...(by.get(r.recipient) ?? []), r]);
  return {
    count: by.size,
    all: allNew(s),
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

/** A comparison in the document: with what, why of the series, and every change. */
function comparisonDoc(c: Comparison, s: PreparedScreen) {
  const count = (k: RowChange['change']) => c.changes.filter((x) => x.change === k).length;
  return {
    relation: c.relation,
    prepared_run_id: c.run.prep_id,
    state: c.state,
    decisions: c.run.events
      .filter((e) => e.decision !== 'sent')
      .map((e) => ({ decision: e.decision, role: e.by_role, at: e.at, reason: e.reason })),
    series: c.series,
    matched_by: c.matched_by,
    added_count: count('added'),
    removed_count: count('removed'),
    changed_count: count('changed'),
    recipient_changed_count: recipientChanges(c.changes),
    totals_then: totalsDoc(c.totalsBefore, s.currencies),
    totals_now: totalsDoc(s.totals, s.currencies),
    changes: c.changes,
  };
}

/** A comparison as the document has it. */
export type ComparisonDoc = ReturnType<typeof comparisonDoc>;

/** What earlier runs hold of the payouts, in counts. */
export function earlierCounts(s: PreparedScreen) {
  const n = (k: string) => [...s.earlier.values()].filter((v) => v === k).length;
  const known = s.rows.filter((r) => s.earlier.has(r.reference_id)).length;
  return {
    sent_count: n('sent'),
    pending_count: n('pending'),
    failed_count: n('failed'),
    other_count: n('other'),
    to_send_count: s.rows.length - known,
  };
}

/**
 * A change on its row, for a person: "recipient changed: was e3@ex.com, now mallory@… (NOV-3
 * in p18be…)", or "was EUR 8,000.00 to e5@ex.com (NOV-5 in p18be…)"; `where` names the run.
 */
export function changeWords(c: RowChange, where: string): string {
  const b = c.before!;
  const a = c.after!;
  const ref = b.reference_id === a.reference_id ? '' : `${b.reference_id} `;
  const at = c.matched_by === 'retry_of' ? `(its original ${b.reference_id})` : `(${ref}${where})`;
  if (!c.fields.includes('recipient'))
    return `was ${amountText(b.amount, b.currency)} to ${b.recipient} ${at}`;
  const amount = c.fields.some((f) => f === 'amount' || f === 'currency')
    ? `, amount was ${amountText(b.amount, b.currency)}`
    : '';
  return `recipient changed: was ${b.recipient}, now ${a.recipient}${amount} ${at}`;
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

/** What the history holds of a row's reference, in words ('' when nothing). */
function earlierWords(s: PreparedScreen, r: PreparedPayout): string {
  const e = s.earlier.get(r.reference_id);
  if (!e) return '';
  if (e !== 'other') return e === 'sent' ? 'sent earlier' : `${e} earlier`;
  // Held as another payout: never "sent earlier", which would say this one went.
  const o = s.others.get(r.reference_id);
  const what = o ? `: ${amountText(o.amount, o.currency)} to ${o.recipient} (run ${o.run_id})` : '';
  return `its reference_id is another payout's${what}; not this payout`;
}

/** The words of each comparison's change on a row (every comparison, so none is lost). */
function comparedWords(s: PreparedScreen, r: PreparedPayout): string[] {
  const words: string[] = [];
  for (const c of s.comparisons) {
    const x = c.changes.find((y) => y.after?.reference_id === r.reference_id);
    if (x?.change === 'added') words.push(`added since ${c.run.prep_id}`);
    if (x?.change === 'changed') words.push(changeWords(x, `in ${c.run.prep_id}`));
  }
  return words;
}

/** What each row calls attention to, in words: new recipient, changed, sent earlier, largest. */
export function attentionOf(s: PreparedScreen): Map<number, string[]> {
  // Every recipient new: the New recipients: line says it once, not on each row.
  const newRows = new Set(allNew(s) ? [] : s.newRows.map((r) => r.row));
  const largest = new Set(s.largest.map((r) => r.row));
  const out = new Map<number, string[]>();
  for (const r of s.rows) {
    const words: string[] = [];
    if (newRows.has(r.row)) words.push('new recipient');
    // A retry pays what its original did not: the approver sees where the original stands.
    if (r.retry_of !== null)
      words.push(retryWords(r.retry_of, s.retries.get(r.row), s.earlier.has(r.reference_id)));
    const moved = s.retryChanges.get(r.row);
    if (moved) words.push(changeWords(moved, ''));
    words.push(...comparedWords(s, r));
    const e = earlierWords(s, r);
    if (e) words.push(e);
    if (largest.has(r.row)) words.push('largest');
    out.set(r.row, words);
  }
  return out;
}

/**
 * What the screen shows beyond the run's own head and payouts: kept as the approver saw it
 * with each decision (review.ts), and the document's now.
 */
export function bodyOf(s: PreparedScreen) {
  const attention = attentionOf(s);
  return {
    new_recipients: newRecipientsDoc(s),
    largest: s.largest.map(payoutDoc),
    compared_with: s.comparisons.map((c) => comparisonDoc(c, s)),
    earlier: earlierCounts(s),
    duplicates: s.duplicates.map((d) => ({ prepared_run_id: d.run.prep_id, state: d.state })),
    retries: {
      count: s.retries.size,
      refused_count: [...s.retries.values()].filter((v) => v.refused).length,
    },
    retry_changes: [...s.retryChanges.values()],
    attention: s.rows.map((r) => ({ row: r.row, attention: attention.get(r.row) ?? [] })),
  };
}

/** The screen's body, as kept and as the document has it. */
export type ScreenBody = ReturnType<typeof bodyOf>;

/** A decision with the screen it was made on (null: none kept, before this version). */
export interface ReviewDoc {
  decision: 'approved' | 'rejected';
  by: { role: string; os_user: string | null; host: string | null };
  at: string;
  reason: string | null;
  /** The screen's lines above its table, as shown, and its body. */
  screen: (ScreenBody & { lines: string[] }) | null;
}

/** The prepared run as its one --json document: approve, runs show PREP, send --prepare. */
export function preparedDoc(s: PreparedScreen, reviews: ReviewDoc[] = []) {
  const { attention, ...body } = bodyOf(s);
  const words = new Map(attention.map((a) => [a.row, a.attention]));
  return {
    ...preparedHead(s.run, s.state, {
      payout_count: s.rows.length,
      totals: totalsDoc(s.totals, s.currencies),
    }),
    ...body,
    reviews,
    payouts: s.rows.map((r) => ({
      ...payoutDoc(r),
      description: r.description,
      retry_of: r.retry_of,
      retry_of_state: s.retries.get(r.row)?.state ?? null,
      attention: words.get(r.row) ?? [],
    })),
  };
}

/** The prepared-run document. */
export type PreparedDoc = ReturnType<typeof preparedDoc>;
