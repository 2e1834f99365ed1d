/**
 * The approver's screen (docs/approvals.md): a prepared run's payouts, and what the shared
 * history knows of them. Every figure is computed from the run's payout rows, never from the
 * counts and totals its header claims.
 */
import { CurrencyTotals, parseAmount } from '../../money/amount.js';
import { CurrencyTable } from '../../money/currencies.js';
import {
  listPrepared,
  type PreparedPayout,
  type PreparedRun,
  preparedPayouts,
} from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import { paidRecipientsIn } from '../../state/pg/prepared-views.js';
import { HASH_VERSION, serviceIdOf } from '../../state/hash.js';
import { liveRunsIn, type RunSummary, runsByIdIn } from '../../state/runs.js';
import { serviceIdentity } from '../../api/base-url.js';
import type { StagedPayout } from '../../domain/records.js';
import { type HeldKind, heldKind } from '../../domain/statuses.js';
import type { StagedRetry } from '../../state/index.js';
import { decide } from '../send/decide.js';
import type { Decision, Fate, OriginState } from '../send/fates.js';
import { originWords } from '../send/refusals.js';
import { prepState } from './common.js';

/** Where a prepared run stands, with its send: `sending` and `partly sent` while unfinished. */
export type ShownState =
  | 'prepared'
  | 'approved'
  | 'rejected'
  | 'expired'
  | 'sending'
  | 'partly sent'
  | 'sent';

/** A run that sent (or sends) a prepared run, as the runs table has it. */
export type SendingRun = RunSummary & { running: boolean };

/** A prepared run's state, refined by the run its `sent` event names. */
export function shownState(p: PreparedRun, runs: Map<string, SendingRun>): ShownState {
  const base = prepState(p);
  if (base !== 'sent') return base;
  const sent = p.events.find((e) => e.decision === 'sent');
  if (!sent?.run_id) return 'sent';
  const run = runs.get(sent.run_id);
  // Marked before its first request, a send whose run was never recorded did not finish.
  if (!run) return 'partly sent';
  if (run.running) return 'sending';
  return run.counts.in_flight + run.counts.not_sent > 0 ? 'partly sent' : 'sent';
}

/**
 * The runs that sent prepared runs of `prepared`, by id, those being sent marked running:
 * each read by its id, with its counts as kept (run-counts.ts), whatever the history's size.
 */
export async function sendingRuns(
  h: PgHistory,
  prepared: PreparedRun[],
): Promise<Map<string, SendingRun>> {
  const ids = prepared.flatMap((p) =>
    p.events.flatMap((e) => (e.decision === 'sent' && e.run_id ? [e.run_id] : [])),
  );
  if (!ids.length) return new Map();
  const read = (sql: string, params: unknown[]) => h.rows(sql, params);
  const keep = async (sql: string, params: unknown[]) => {
    await h.rows(sql, params);
  };
  const [runs, live] = await Promise.all([runsByIdIn(read, ids, keep), liveRunsIn(read)]);
  return new Map(runs.map((r) => [r.run_id, { ...r, running: live.has(r.run_id) }]));
}

/** An amount's minor units, the digits its currency has (or its text shows). */
export function minorOf(amount: string, currency: string, currencies: CurrencyTable): bigint {
  const digits = currencies.minorUnits(currency) ?? (amount.split('.')[1] ?? '').length;
  const parsed = parseAmount(amount, digits);
  return parsed.ok ? parsed.amount.minor : 0n;
}

/** Per-currency totals of payout rows. */
export function totalsOf(rows: PreparedPayout[], currencies: CurrencyTable): CurrencyTotals {
  const totals = new CurrencyTotals();
  for (const r of rows) totals.add(r.currency, minorOf(r.amount, r.currency, currencies));
  return totals;
}

/** One row's side of a change. */
export interface RowSide {
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
}

/** A row added, removed or changed between two prepared runs. */
export interface RowChange {
  change: 'added' | 'removed' | 'changed';
  before: RowSide | null;
  after: RowSide | null;
}

/** How a prepared run differs from an earlier one. */
export interface Comparison {
  /** The rejected run this one follows, or the last approved run of its batch or preparer. */
  relation: 'rejected_predecessor' | 'last_approved';
  run: PreparedRun;
  state: ShownState;
  /** Rows are matched by reference_id when the runs share any, else by recipient and currency. */
  matched_by: 'reference_id' | 'recipient';
  changes: RowChange[];
  totalsBefore: CurrencyTotals;
}

/** What earlier runs of the service hold of a reference. */
export type Earlier = 'sent' | 'pending' | 'failed';

/** A retry row's original, judged as a send judges it, in the words the send refuses it with. */
export interface RetryVerdict {
  state: OriginState;
  /** Whether a send refuses the row (exit 2, nothing sent) for what the history holds. */
  refused: boolean;
  /** What follows "retries X": ", which was paid (run … on …)", ", already retried as …". */
  which: string;
  /** What to do about a refused row ('' when `which` already says it). */
  fix: string;
}

/** Everything the approver's screen shows. */
export interface PreparedScreen {
  run: PreparedRun;
  state: ShownState;
  rows: PreparedPayout[];
  totals: CurrencyTotals;
  /** Rows whose recipient no run of the service paid before. */
  newRows: PreparedPayout[];
  largest: PreparedPayout[];
  comparisons: Comparison[];
  /** By reference_id. */
  earlier: Map<string, Earlier>;
  /** Other prepared runs of the service holding exactly these payouts, not rejected or expired. */
  duplicates: Array<{ run: PreparedRun; state: ShownState }>;
  /** By row, each retry row's original as the history holds it, judged as a send will. */
  retries: Map<number, RetryVerdict>;
  currencies: CurrencyTable;
}

const side = (r: PreparedPayout): RowSide => ({
  reference_id: r.reference_id,
  amount: r.amount,
  currency: r.currency,
  recipient: r.recipient,
});

/** Rows by key; a key seen again gets its count appended, so no row is lost. */
function keyed(rows: PreparedPayout[], key: (r: PreparedPayout) => string) {
  const out = new Map<string, PreparedPayout>();
  for (const r of rows) {
    let k = key(r);
    for (let n = 2; out.has(k); n++) k = `${key(r)}#${n}`;
    out.set(k, r);
  }
  return out;
}

/** The rows added, removed and changed from `then` to `now`. */
export function diffRows(
  then: PreparedPayout[],
  now: PreparedPayout[],
): { matched_by: Comparison['matched_by']; changes: RowChange[] } {
  const refs = new Set(now.map((r) => r.reference_id));
  const byRef = then.some((r) => refs.has(r.reference_id));
  const key = byRef
    ? (r: PreparedPayout) => r.reference_id
    : (r: PreparedPayout) => `${r.recipient}\u0000${r.currency}`;
  const before = keyed(then, key);
  const changes: RowChange[] = [];
  for (const [k, r] of keyed(now, key)) {
    const t = before.get(k);
    before.delete(k);
    if (!t) changes.push({ change: 'added', before: null, after: side(r) });
    // By recipient, a month's new description is no change; by reference, all of it is.
    else if (byRef ? differs(t, r) : t.amount !== r.amount)
      changes.push({ change: 'changed', before: side(t), after: side(r) });
  }
  for (const t of before.values())
    changes.push({ change: 'removed', before: side(t), after: null });
  return { matched_by: byRef ? 'reference_id' : 'recipient', changes };
}

/** Whether two rows of one reference differ in what the approval covers. */
function differs(a: PreparedPayout, b: PreparedPayout): boolean {
  return (
    a.amount !== b.amount ||
    a.currency !== b.currency ||
    a.recipient !== b.recipient ||
    a.description !== b.description
  );
}

/** The largest payouts: three per currency, the largest first. */
function largestOf(rows: PreparedPayout[], currencies: CurrencyTable): PreparedPayout[] {
  const minor = (r: PreparedPayout) => minorOf(r.amount, r.currency, currencies);
  const sorted = [...rows].sort((a, b) => {
    if (a.currency !== b.currency) return a.currency < b.currency ? -1 : 1;
    const d = minor(b) - minor(a);
    return d > 0n ? 1 : d < 0n ? -1 : a.row - b.row;
  });
  const seen = new Map<string, number>();
  return sorted.filter((r) => {
    const n = (seen.get(r.currency) ?? 0) + 1;
    seen.set(r.currency, n);
    return n <= 3;
  });
}

/** Each held kind as the screen's Sent earlier: line counts it: sent beats pending beats failed. */
const EARLIER: Record<HeldKind, Earlier> = {
  success: 'sent',
  pending: 'pending',
  doubt: 'pending',
  failed: 'failed',
};
const RANK: Record<Earlier, number> = { sent: 3, pending: 2, failed: 1 };

/** What a row's fate says it holds earlier, if anything (in doubt is pending: it is read back). */
function earlierOfFate(fate: Fate | undefined): Earlier | undefined {
  if (fate?.kind === 'read-back') return 'pending';
  if (fate?.kind === 'sent-earlier')
    return EARLIER[heldKind({ state: 'done', ...fate.earlier.outcome })];
  if (fate?.kind !== 'refused') return undefined;
  const { refusal } = fate;
  if (refusal.kind === 'failed-earlier') return 'failed';
  if (refusal.kind !== 'held-other') return undefined;
  const kinds = refusal.held.map((h) => EARLIER[heldKind(h)]);
  return kinds.sort((a, b) => RANK[b] - RANK[a])[0];
}

/** Prepared rows looked up at once (one JSON array a query, as a send's pages). */
const PAGE = 5_000;

/**
 * Each row of a prepared run decided from the history alone, as a send decides it (its
 * original for a retry row): what earlier runs hold of each reference, and each retry row's
 * original in the words a send refuses the row with.
 */
async function judged(h: PgHistory, service: string, rows: PreparedPayout[]) {
  const staged: StagedPayout[] = rows.map((r) => ({
    ...r,
    file: null,
    line: null,
    location: null,
    // The approval hash is not a payout hash: none, so the held rows' hashes decide.
    hash: null,
    hash_version: HASH_VERSION,
  }));
  const pages: StagedPayout[][] = [];
  for (let i = 0; i < staged.length; i += PAGE) pages.push(staged.slice(i, i + PAGE));
  const held = await h.prior(serviceIdentity(service), pages);
  const decision = decide({ held, retries: retryRowsOf(rows) }, 'screen');
  const earlier = new Map<string, Earlier>();
  for (const r of rows) {
    const e = earlierOfFate(decision.fates.get(r.row));
    if (e) earlier.set(r.reference_id, e);
  }
  return { earlier, retries: retryVerdicts(decision) };
}

/** The prepared run's retry rows, as a send stages them (a row named by its number). */
function retryRowsOf(rows: PreparedPayout[]): StagedRetry[] {
  const own = new Map(rows.map((r) => [r.reference_id, r.row]));
  return rows.flatMap((r) => {
    if (r.retry_of === null) return [];
    const at = own.get(r.retry_of);
    const place = { file: '', location: `row ${r.row + 1}` };
    const alsoSent = at === undefined ? {} : { alsoSent: { file: '', location: `row ${at + 1}` } };
    return [
      { row: r.row, reference_id: r.reference_id, retry_of: r.retry_of, ...place, ...alsoSent },
    ];
  });
}

/** Each retry row's verdict: refused as the send refuses it, in the send's words. */
export function retryVerdicts(decision: Decision): Map<number, RetryVerdict> {
  const out = new Map<number, RetryVerdict>();
  for (const [row, origin] of decision.origins) {
    const fate = decision.fates.get(row);
    const refused = fate?.kind === 'refused' && fate.refusal.kind === 'retry';
    out.set(row, { state: origin.state, refused, ...originWords(origin) });
  }
  return out;
}

/** The earlier prepared runs a run is compared with: a rejected predecessor, the last approved. */
function predecessors(
  p: PreparedRun,
  all: PreparedRun[],
): Array<[Comparison['relation'], PreparedRun]> {
  const earlier = all.filter((q) => q.id < p.id && q.service === p.service);
  const sameBatch = (q: PreparedRun) =>
    p.batch_reference !== null && q.batch_reference === p.batch_reference;
  const approved = (q: PreparedRun) => ['approved', 'sent'].includes(prepState(q));
  // all is the newest first.
  const base =
    earlier.find((q) => approved(q) && sameBatch(q)) ??
    earlier.find((q) => approved(q) && q.prepared_by === p.prepared_by);
  const rejected = earlier.find(
    (q) =>
      prepState(q) === 'rejected' &&
      (sameBatch(q) || q.prepared_by === p.prepared_by) &&
      (!base || q.id > base.id),
  );
  const out: Array<[Comparison['relation'], PreparedRun]> = [];
  if (rejected) out.push(['rejected_predecessor', rejected]);
  if (base) out.push(['last_approved', base]);
  return out;
}

/** Reads and computes the approver's screen of prepared run `p`. */
export async function preparedScreen(h: PgHistory, p: PreparedRun): Promise<PreparedScreen> {
  const currencies = new CurrencyTable();
  const [rows, all] = await Promise.all([preparedPayouts(h, p.id), listPrepared(h)]);
  // Runs are filed under their service's identity (serviceIdOf), as a prepared run names it.
  const sid = serviceIdOf(p.service);
  const runs = await sendingRuns(h, all);
  const paid = await paidRecipientsIn(
    h,
    sid,
    rows.map((r) => r.recipient),
  );
  const comparisons: Comparison[] = [];
  for (const [relation, q] of predecessors(p, all)) {
    const theirs = await preparedPayouts(h, q.id);
    comparisons.push({
      relation,
      run: q,
      state: shownState(q, runs),
      ...diffRows(theirs, rows),
      totalsBefore: totalsOf(theirs, currencies),
    });
  }
  const duplicates = all
    .filter((q) => q.id !== p.id && q.service === p.service && q.content_hash === p.content_hash)
    .map((q) => ({ run: q, state: shownState(q, runs) }))
    .filter((d) => d.state !== 'rejected' && d.state !== 'expired');
  return {
    run: p,
    state: shownState(p, runs),
    rows,
    totals: totalsOf(rows, currencies),
    newRows: rows.filter((r) => !paid.has(r.recipient)),
    largest: largestOf(rows, currencies),
    comparisons,
    ...(await judged(h, p.service, rows)),
    duplicates,
    currencies,
  };
}
