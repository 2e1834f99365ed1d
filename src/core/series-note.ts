/**
 * What a send's summary (and a dry run's) says changed since its series' last run, and of each
 * retry against the original it retries (docs/history.md#what-changed): the lines, and the
 * --json document's `compared_with` and `retry_changes`. Read from the history through the
 * store's port, a few bounded reads; a run of more than MAX_COMPARED payouts is not compared.
 */
import type { EarlierRun, HeldPayout, HistoryStore } from '../domain/history.js';
import { CurrencyTotals } from '../money/amount.js';
import type { CurrencyTable } from '../money/currencies.js';
import { type RunIntake, runIdFor, stagedPages, stagedRetries } from '../state/index.js';
import { minorOf } from './approvals/screen.js';
import {
  amountText,
  changeLines,
  countsText,
  diffRows,
  type MatchRow,
  type RowChange,
  recipientChanges,
  retryChange,
  type SeriesRun,
  type SeriesWhy,
  seriesByName,
  seriesByRecipients,
  seriesText,
} from './series.js';
import { totalsDoc } from './send/render.js';

/** Payouts a run may hold to be compared row by row (a summary's, and the earlier run's). */
export const MAX_COMPARED = 50_000;

/** Changes a summary names; the rest are counted (--json lists every one). */
const NAMED = 10;

/** What the summary compares: the staged rows, where they go, what the run is. */
export interface Comparing {
  history: HistoryStore<RunIntake>;
  rows: RunIntake;
  serviceKey: string;
  run: SeriesRun & { inputHash: string; payoutCount: number };
  currencies: CurrencyTable;
}

/** The series' last run, why it is of the series, and its first payouts. */
interface LastOfSeries {
  run: EarlierRun;
  why: SeriesWhy;
  payouts: HeldPayout[];
}

/**
 * The newest of the service's latest runs that is of this run's series (src/core/series.ts);
 * a run with more than twice this run's payouts (and 100) is not compared.
 */
async function lastOfSeries(
  c: Comparing,
  runs: EarlierRun[],
  mine: MatchRow[],
): Promise<LastOfSeries | undefined> {
  const recipients = new Set(mine.map((r) => r.recipient));
  const limit = Math.min(2 * mine.length + 100, MAX_COMPARED);
  for (const run of runs) {
    const then = { batch_reference: run.batch_reference, inputs: inputsOf(run) };
    const payouts = await c.history.runPayouts(c.rows, run.run_id, limit + 1);
    if (payouts.length > limit) continue;
    const why =
      seriesByName(c.run, then) ??
      seriesByRecipients(recipients, new Set(payouts.map((p) => p.recipient)));
    if (why) return { run, why, payouts };
  }
  return undefined;
}

/** A run's inputs, as its header keeps them (a JSON array). */
function inputsOf(run: EarlierRun): string[] {
  try {
    const v = JSON.parse(run.inputs) as unknown;
    return Array.isArray(v) ? v.map(String) : [];
  } catch {
    return [];
  }
}

/** Per-currency totals of payouts, as a document has them. */
function totalsOfRows(
  rows: Array<{ amount: string; currency: string }>,
  currencies: CurrencyTable,
) {
  const totals = new CurrencyTotals();
  for (const r of rows) totals.add(r.currency, minorOf(r.amount, r.currency, currencies));
  return totalsDoc(totals, currencies);
}

/** The staged rows as compared: every field but where they were read. */
function stagedRows(rows: RunIntake): MatchRow[] {
  const out: MatchRow[] = [];
  for (const page of stagedPages(rows))
    for (const p of page) out.push({ ...p, description: p.description ?? null });
  return out;
}

/** Each retry row whose amount, currency or recipient is not its original's. */
async function retryChangesOf(c: Comparing, mine: MatchRow[]): Promise<RowChange[]> {
  if (!c.rows.retryCount) return [];
  const retries = stagedRetries(c.rows);
  const held = await c.history.heldPayouts(c.rows, c.serviceKey, [
    ...new Set(retries.map((r) => r.retry_of)),
  ]);
  // The latest run's record of each original (heldPayouts gives the latest first).
  const originals = new Map<string, HeldPayout>();
  for (const h of held) if (!originals.has(h.reference_id)) originals.set(h.reference_id, h);
  const byRow = new Map(mine.map((r) => [r.row, r]));
  return retries.flatMap((r) => {
    const original = originals.get(r.retry_of);
    const row = byRow.get(r.row);
    const change = original && row && retryChange(original, row);
    return change ? [change] : [];
  });
}

/** What the summary says: its lines (label, value; '' continues), and the --json keys. */
export interface SeriesNote {
  lines: Array<[string, string]>;
  doc: { compared_with: ReturnType<typeof comparedDoc> | null; retry_changes: RowChange[] };
}

/** The series' last run compared with, as --json has it. */
function comparedDoc(last: LastOfSeries, mine: MatchRow[], currencies: CurrencyTable) {
  const diff = diffRows(
    last.payouts.map((p, row) => ({ ...p, row })),
    mine,
  );
  const count = (k: RowChange['change']) => diff.changes.filter((x) => x.change === k).length;
  return {
    run_id: last.run.run_id,
    created_at: last.run.created_at,
    series: last.why,
    matched_by: diff.matched_by,
    added_count: count('added'),
    removed_count: count('removed'),
    changed_count: count('changed'),
    recipient_changed_count: recipientChanges(diff.changes),
    totals_then: totalsOfRows(last.payouts, currencies),
    totals_now: totalsOfRows(mine, currencies),
    changes: diff.changes,
  };
}

/** "EUR 40,000.00 then, EUR 77,000.00 now" of each currency. */
function totalsLine(doc: ReturnType<typeof comparedDoc>): string {
  const curs = [
    ...new Set([...Object.keys(doc.totals_then), ...Object.keys(doc.totals_now)]),
  ].sort();
  const money = (t: Record<string, { total: string }>, cur: string) =>
    amountText(t[cur]?.total ?? '0', cur);
  return curs
    .map((cur) => `${money(doc.totals_then, cur)} then, ${money(doc.totals_now, cur)} now`)
    .join('; ');
}

/**
 * The summary's Changes: and Retry changes: lines, and the document's keys; undefined when the
 * history holds no earlier run of the service and the run retries nothing (or it is too large).
 */
export async function seriesNoteOf(c: Comparing): Promise<SeriesNote | undefined> {
  if (c.run.payoutCount > MAX_COMPARED) return undefined;
  const own = runIdFor(c.serviceKey, c.run.inputHash);
  const runs = await c.history.latestRuns(c.rows, c.serviceKey, own);
  // A first run of the service, retrying nothing, reads none of its rows again.
  if (!runs.length && !c.rows.retryCount) return undefined;
  const mine = stagedRows(c.rows);
  const last = await lastOfSeries(c, runs, mine);
  const moved = await retryChangesOf(c, mine);
  const lines: Array<[string, string]> = [];
  const compared = last ? comparedDoc(last, mine, c.currencies) : null;
  const more = { most: NAMED, more: 'see --json' };
  if (compared) {
    const run = `run ${compared.run_id} of ${compared.created_at.slice(0, 10)}`;
    lines.push([
      'Changes:',
      `against ${run} (${seriesText(compared.series)}): ${countsText(compared.changes)}`,
    ]);
    lines.push(['', totalsLine(compared)]);
    for (const l of changeLines(compared.changes, { ...more, usual: compared.matched_by }))
      lines.push(['', l.trimStart()]);
  }
  if (moved.length) {
    const n = moved.length;
    lines.push([
      'Retry changes:',
      `${n} ${n === 1 ? 'retry pays' : 'retries pay'} another amount or recipient than the original`,
    ]);
    for (const l of changeLines(moved, more)) lines.push(['', l.trimStart()]);
  }
  if (!compared && !moved.length) return undefined;
  return { lines, doc: { compared_with: compared, retry_changes: moved } };
}
