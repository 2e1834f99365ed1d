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
import { heldPayoutsIn, paidRecipientsIn } from '../../state/pg/prepared-views.js';
import type { HeldPayout } from '../../state/earlier-runs.js';
import { HASH_VERSION, serviceIdOf } from '../../state/hash.js';
import { liveRunsIn, type RunSummary, runsByIdIn } from '../../state/runs.js';
import { serviceIdentity } from '../../api/base-url.js';
import type { StagedPayout } from '../../domain/records.js';
import { paidByRetry } from '../../domain/outcome.js';
import { type HeldKind, heldKind } from '../../domain/statuses.js';
import type { StagedRetry } from '../../state/index.js';
import { decide } from '../send/decide.js';
import type { Decision, Fate, OriginState } from '../send/fates.js';
import { originWords } from '../send/refusals.js';
import {
  diffRows,
  type RowChange,
  retryChange,
  type SeriesWhy,
  seriesByName,
  seriesByRecipients,
} from '../series.js';
import { approversOf, prepState } from './common.js';

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

/** How a prepared run differs from an earlier one of its series. */
export interface Comparison {
  /** The rejected run this one follows, or the last approved run of its series. */
  relation: 'rejected_predecessor' | 'last_approved';
  run: PreparedRun;
  state: ShownState;
  /** Why the earlier run is of this one's series (src/core/series.ts). */
  series: SeriesWhy;
  /** Rows are matched by reference_id when the runs share any, else by recipient and currency. */
  matched_by: 'reference_id' | 'recipient';
  changes: RowChange[];
  totalsBefore: CurrencyTotals;
}

/**
 * What earlier runs of the service hold of a reference: this payout sent, pending or failed,
 * or another payout under its reference_id (`other`: never "sent earlier").
 */
export type Earlier = 'sent' | 'pending' | 'failed' | 'other';

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
  /** Its service as this person's send spells it (their base URL, when the same service). */
  service: string;
  state: ShownState;
  rows: PreparedPayout[];
  totals: CurrencyTotals;
  /** Rows whose recipient no run of the service paid before. */
  newRows: PreparedPayout[];
  largest: PreparedPayout[];
  comparisons: Comparison[];
  /** By reference_id. */
  earlier: Map<string, Earlier>;
  /** By reference_id, the payout the history holds under a reference held as another (`other`). */
  others: Map<string, HeldPayout>;
  /** Other prepared runs of the service holding exactly these payouts, not rejected or expired. */
  duplicates: Array<{ run: PreparedRun; state: ShownState }>;
  /** By row, each retry row's original as the history holds it, judged as a send will. */
  retries: Map<number, RetryVerdict>;
  /** By row, each retry row whose amount, currency or recipient is not its original's. */
  retryChanges: Map<number, RowChange>;
  currencies: CurrencyTable;
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

/**
 * What a row's fate says it holds earlier, if anything (in doubt is pending: it is read back);
 * a reference held as another payout is `other`, whatever became of that payout.
 */
function earlierOfFate(fate: Fate | undefined): Earlier | undefined {
  if (fate?.kind === 'read-back') return 'pending';
  if (fate?.kind === 'sent-earlier') {
    const o = fate.earlier.outcome;
    // By the one rule, failed earlier and paid by its retry is sent; pending as it, pending.
    if (o.retried_as) return paidByRetry(o) ? 'sent' : 'pending';
    return EARLIER[heldKind({ state: 'done', ...o })];
  }
  if (fate?.kind !== 'refused') return undefined;
  const { refusal } = fate;
  if (refusal.kind === 'failed-earlier') return 'failed';
  return refusal.kind === 'held-other' ? 'other' : undefined;
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
  // What the history holds under the originals and the references held as another payout.
  const asked = rows.flatMap((r) => [
    ...(r.retry_of === null ? [] : [r.retry_of]),
    ...(earlier.get(r.reference_id) === 'other' ? [r.reference_id] : []),
  ]);
  const payouts = await heldPayoutsIn(h, serviceIdOf(service), asked);
  const others = new Map<string, HeldPayout>();
  const retryChanges = new Map<number, RowChange>();
  for (const r of rows) {
    const other = earlier.get(r.reference_id) === 'other' && payouts.get(r.reference_id);
    if (other) others.set(r.reference_id, other);
    const original = r.retry_of === null ? undefined : payouts.get(r.retry_of);
    const change = original && retryChange(original, r);
    if (change) retryChanges.set(r.row, change);
  }
  return { earlier, others, retries: retryVerdicts(decision), retryChanges };
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

/** Decided prepared runs looked at, at most, for a run's series. */
const CANDIDATES = 20;

/** Whether a prepared run was approved by as many people as its rule asked (sent or not). */
const approved = (q: PreparedRun) =>
  ['approved', 'sent'].includes(prepState(q)) ||
  approversOf(q).length >= Math.max(q.approvers_needed, 1);

/**
 * The earlier prepared runs of `p`'s series it is compared with: the last approved one, and
 * the rejected one it follows (the latest rejected since). Each candidate's payouts are read
 * only when its names do not tell its series (src/core/series.ts).
 */
async function predecessors(
  h: PgHistory,
  p: PreparedRun,
  rows: PreparedPayout[],
  all: PreparedRun[],
): Promise<Array<[Comparison['relation'], PreparedRun, SeriesWhy, PreparedPayout[]]>> {
  // all is the newest first.
  const decided = all
    .filter((q) => q.id < p.id && q.service === p.service)
    .filter((q) => approved(q) || prepState(q) === 'rejected')
    .slice(0, CANDIDATES);
  const mine = new Set(rows.map((r) => r.recipient));
  const out: Array<[Comparison['relation'], PreparedRun, SeriesWhy, PreparedPayout[]]> = [];
  let rejected: (typeof out)[number] | undefined;
  for (const q of decided) {
    const named = seriesByName(p, q);
    const theirs = await preparedPayouts(h, q.id);
    const series = named ?? seriesByRecipients(mine, new Set(theirs.map((r) => r.recipient)));
    if (!series) continue;
    if (prepState(q) === 'rejected') rejected ??= ['rejected_predecessor', q, series, theirs];
    else {
      out.push(['last_approved', q, series, theirs]);
      break;
    }
  }
  return rejected ? [rejected, ...out] : out;
}

/**
 * Reads and computes the approver's screen of prepared run `p`; `baseUrl`: the reader's own,
 * the spelling the screen shows when it names the run's service.
 */
export async function preparedScreen(
  h: PgHistory,
  p: PreparedRun,
  baseUrl?: string,
): Promise<PreparedScreen> {
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
  for (const [relation, q, series, theirs] of await predecessors(h, p, rows, all)) {
    comparisons.push({
      relation,
      run: q,
      state: shownState(q, runs),
      series,
      ...diffRows(theirs, rows),
      totalsBefore: totalsOf(theirs, currencies),
    });
  }
  const duplicates = all
    .filter((q) => q.id !== p.id && q.service === p.service && q.content_hash === p.content_hash)
    .map((q) => ({ run: q, state: shownState(q, runs) }))
    .filter((d) => d.state !== 'rejected' && d.state !== 'expired');
  const mine = baseUrl !== undefined && serviceIdentity(baseUrl) === p.service;
  return {
    run: p,
    service: mine ? baseUrl : p.service,
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
