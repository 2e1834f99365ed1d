/** The runs in state.db, as `payouts runs` lists and shows them. */
import { UsageError } from '../errors.js';
import { openDatabase, type StateDb } from './db.js';
import type { HeldRef } from '../domain/chain.js';
import { countByRetry, failedOfRun, markRetries } from './run-retries.js';
import type { Checked } from '../domain/checks.js';
import {
  type CountedRow,
  type Counts,
  countedIn,
  KEPT_COLUMNS,
  type RowReader,
  type RowWriter,
} from './run-counts.js';

/** The first key of every advisory lock payouts takes ("payo"), so other users' keys do not meet ours. */
export const ADVISORY_CLASS = 0x7061796f;

/** A run as `payouts runs` lists it. */
export interface RunSummary {
  run_id: string;
  service: string;
  client_id: string;
  inputs: string[];
  created_at: string;
  updated_at: string;
  payout_count: number;
  /** Who sent it: the OS user and host, and on a shared history the database role (null: not recorded). */
  sent_by: { os_user: string | null; host: string | null; db_user: string | null };
  /** How its input was read, for its retry files (RunHeader.csv_style; null: not recorded). */
  csv_style: string | null;
  /** The options its files were read with (RunHeader.send_args; none when not recorded). */
  send_args: string[];
  counts: {
    success: number;
    failed: number;
    canceled: number;
    pending: number;
    in_flight: number;
    /** Payouts an earlier run had sent: reported, not sent again. */
    sent_earlier: number;
    not_sent: number;
    /**
     * Of `success`, the payouts that failed or were canceled and that their retry paid: by the
     * one rule (run-retries.ts) they count as succeeded, and one whose retry is pending as pending.
     */
    paid_by_retry: number;
  };
}

/** What the state database says about one payout of a run. */
export type PayoutState =
  | {
      state: 'confirmed';
      req: number;
      status: string;
      transaction_id?: string;
      /** Decimal text, as the service wrote it: money is never a float. */
      charges?: string;
      message?: string;
      /** The database role that recorded the result (a shared history's word, session_user). */
      recorded_by?: string;
    }
  /** `at`: when the request that may carry it was sent (at the latest), ISO 8601. */
  | { state: 'in-flight'; req: number; hash: string; at: string }
  /** An earlier run had sent it: this run reported it, and did not send it again. */
  | { state: 'sent-earlier' }
  | { state: 'free' };

/** A run with the state of each of its payouts. */
export interface RunDetail {
  summary: RunSummary;
  payouts: Array<{
    reference_id: string;
    amount: string;
    currency: string;
    recipient: string;
    description: string | null;
    state: PayoutState;
    /** A failed payout's last retry, when one retried it (src/domain/chain.ts). */
    retried?: HeldRef;
    /** The service's latest word on it since its run (none: never checked). */
    checked?: Checked;
  }>;
}

/**
 * The columns of a run, with its counts as kept at some commit (run-counts.ts): countedIn or
 * countedNow makes them its present counts.
 */
const SUMMARY = `
  SELECT r.id, r.run_id, r.service, r.client_id, r.inputs, r.created_at, r.updated_at,
    r.host, r.os_user, r.db_user, r.csv_style, r.send_args, r.payout_count, ${KEPT_COLUMNS}
  FROM runs r LEFT JOIN run_counts k ON k.run = r.id`;

/** A row of SUMMARY. */
interface SummaryRow extends CountedRow {
  run_id: string;
  service: string;
  client_id: string;
  inputs: string;
  created_at: string;
  updated_at: string;
  host: string | null;
  os_user: string | null;
  db_user: string | null;
  csv_style: string | null;
  send_args: string | null;
  payout_count: number;
}

/** A list of words as a history holds it (JSON text), else none: any role may write the column. */
export function wordsOf(text: string | null): string[] {
  if (text === null) return [];
  try {
    const v: unknown = JSON.parse(text);
    return Array.isArray(v) && v.every((w) => typeof w === 'string') ? v : [];
  } catch {
    return [];
  }
}

/** A run's summary from its row and present counts; payouts never sent, or freed, are "not sent". */
function summaryOf(r: SummaryRow & Counts): RunSummary {
  const counts = {
    success: r.success,
    failed: r.failed,
    canceled: r.canceled,
    pending: r.pending,
    in_flight: r.in_flight,
    sent_earlier: r.sent_earlier,
    not_sent: 0,
    paid_by_retry: 0,
  };
  const accounted =
    counts.success +
    counts.failed +
    counts.canceled +
    counts.pending +
    counts.in_flight +
    counts.sent_earlier;
  counts.not_sent = Math.max(0, r.payout_count - accounted);
  return {
    run_id: r.run_id,
    service: r.service,
    client_id: r.client_id,
    inputs: JSON.parse(r.inputs) as string[],
    created_at: r.created_at,
    updated_at: r.updated_at,
    payout_count: r.payout_count,
    sent_by: { os_user: r.os_user, host: r.host, db_user: r.db_user },
    csv_style: r.csv_style,
    send_args: wordsOf(r.send_args),
    counts,
  };
}

export type { RowReader, RowWriter };

/**
 * Keeps counts in state.db (run-counts.ts) on a connection of its own that never waits: while
 * a send's writer holds the file, a listing counts again next time rather than wait.
 */
export function stateDbKeeper(file: string): RowWriter {
  let db: StateDb | undefined;
  return async (sql, params) => {
    db ??= openDatabase(file, { timeout: 0 });
    db.prepare(sql).run(...params);
  };
}

/** The most recently active run first; of runs active at the same moment, the later made. */
const LIST = `${SUMMARY} WHERE r.run_id IS NOT NULL ORDER BY r.updated_at DESC, r.id DESC`;
/** A page of LIST: through the index on (updated_at, id), the runs before it are not read. */
const PAGE = `${LIST} LIMIT ? OFFSET ?`;
const RUN_COUNT = 'SELECT count(*) AS n FROM runs WHERE run_id IS NOT NULL';

/** Which runs a listing shows: `size` of them after the first `from` (every run: Infinity). */
export interface RunsPage {
  from: number;
  size: number;
}

/** A page of the runs of a store, and how many runs it holds in all. */
export interface ListedPage {
  runs: RunSummary[];
  total: number;
}

/**
 * A page of the runs of every service in a store, the most recently active first, with their
 * counts (kept for next time through `keep`, when given: run-counts.ts).
 */
export async function runPageIn(
  read: RowReader,
  page: RunsPage,
  keep?: RowWriter,
): Promise<ListedPage> {
  const size = Number.isFinite(page.size) ? page.size : 2 ** 31 - 1;
  const rows = (await read(PAGE, [size, page.from])) as SummaryRow[];
  const [count] = (await read(RUN_COUNT, [])) as Array<{ n: number | string }>;
  const runs = await byRetries(read, await countedIn(read, rows, keep));
  return { runs, total: Number(count?.n ?? 0) };
}

/** Summaries of counted runs, each run's failed payouts counted by their retries. */
async function byRetries(read: RowReader, rows: Array<SummaryRow & Counts>): Promise<RunSummary[]> {
  const out: RunSummary[] = [];
  for (const r of rows) {
    const s = summaryOf(r);
    s.counts = countByRetry(s.counts, await failedOfRun(read, r));
    out.push(s);
  }
  return out;
}

/** Summaries of every run of every service in a store, the most recently active first. */
export async function listRunsIn(read: RowReader, keep?: RowWriter): Promise<RunSummary[]> {
  return (await runPageIn(read, { from: 0, size: Number.POSITIVE_INFINITY }, keep)).runs;
}

/** The summaries of the runs of these ids (those the store holds), read by the run_id index. */
export async function runsByIdIn(
  read: RowReader,
  ids: string[],
  keep?: RowWriter,
): Promise<RunSummary[]> {
  if (ids.length === 0) return [];
  const rows = (await read(`${SUMMARY} WHERE r.run_id IN (${ids.map(() => '?').join(', ')})`, [
    ...ids,
  ])) as SummaryRow[];
  return byRetries(read, await countedIn(read, rows, keep));
}

/**
 * The runs a live session of a shared history is sending: a lock's row whose session still
 * holds one of payouts' advisory locks (a dead sender's row stays, its lock does not).
 */
export async function liveRunsIn(read: RowReader): Promise<Set<string>> {
  const rows = (await read(
    `SELECT l.run_id FROM locks l WHERE l.run_id IS NOT NULL AND EXISTS (
       SELECT 1 FROM pg_locks k WHERE k.locktype = 'advisory' AND k.granted
         AND k.pid = l.backend_pid AND k.classid = ?)`,
    [ADVISORY_CLASS],
  )) as Array<{ run_id: string }>;
  return new Set(rows.map((r) => r.run_id));
}

/** A payout's state columns, from the view `journal`. */
interface StateRow {
  reference_id: string;
  amount: string | null;
  currency: string | null;
  recipient: string | null;
  description: string | null;
  state: string;
  req: number | null;
  hash: string | null;
  sent_at: string | null;
  status: string | null;
  transaction_id: string | null;
  charges: string | null;
  message: string | null;
  sent_earlier: number | null;
  checked_at: string | null;
  checked_by: string | null;
  checked_role: string | null;
  missing: number | string | null;
  by_role: string | null;
}

/** The state of a payout from its row. */
function stateOf(r: StateRow): PayoutState {
  if (r.state === 'done') {
    const s: PayoutState = { state: 'confirmed', req: r.req ?? -1, status: r.status ?? '' };
    if (r.transaction_id !== null) s.transaction_id = r.transaction_id;
    if (r.charges !== null) s.charges = r.charges;
    if (r.message !== null) s.message = r.message;
    if (r.by_role !== null) s.recorded_by = r.by_role;
    return s;
  }
  if (r.state === 'in_flight' || r.state === 'unknown') {
    return { state: 'in-flight', req: r.req ?? -1, hash: r.hash ?? '', at: r.sent_at ?? '' };
  }
  return r.sent_earlier ? { state: 'sent-earlier' } : { state: 'free' };
}

/** A run id prefix as given, checked and lowered. */
function prefixOf(runIdPrefix: string): string {
  const prefix = runIdPrefix.trim().toLowerCase();
  if (!/^[a-z0-9_-]+$/.test(prefix)) {
    throw new UsageError(
      `invalid run id ${JSON.stringify(runIdPrefix)}: give the run id or its first characters`,
    );
  }
  return prefix;
}

/** The one run that matched a prefix; UsageError when none or several did. */
function onlyRun(runs: SummaryRow[], runIdPrefix: string): SummaryRow {
  const [only, ...others] = runs;
  if (!only) {
    throw new UsageError(`no run id starts with ${JSON.stringify(runIdPrefix)}: see payouts runs`);
  }
  if (others.length > 0) {
    const ids = runs.map((r) => r.run_id).join(', ');
    throw new UsageError(
      `${runs.length} runs start with ${JSON.stringify(runIdPrefix)} (${ids}): give more characters`,
    );
  }
  return only;
}

const BY_PREFIX = `${SUMMARY} WHERE substr(lower(r.run_id), 1, ?) = ? ORDER BY r.run_id`;

/** The run whose id starts with a prefix, as reconcile goes through it; UsageError as readRunIn. */
export async function runOfPrefix(
  read: RowReader,
  runIdPrefix: string,
): Promise<{
  id: number;
  run_id: string;
  service: string;
  created_at: string;
  csv_style: string | null;
}> {
  const prefix = prefixOf(runIdPrefix);
  const r = onlyRun((await read(BY_PREFIX, [prefix.length, prefix])) as SummaryRow[], runIdPrefix);
  const { run_id, service, created_at, csv_style } = r;
  return { id: Number(r.id), run_id, service, created_at, csv_style };
}
const PAYOUT_STATES = `SELECT j.reference_id, j.amount, j.currency, j.recipient, j.description,
  j.state, j.req, j.hash,
  j.sent_at, j.status, j.transaction_id, j.charges, j.message, o.sent_earlier, d.by_role,
  j.checked_at, j.checked_by, j.checked_role, j.missing
  FROM journal j LEFT JOIN reports o ON o.run = j.run AND o.row = j.row
    LEFT JOIN results d ON d.run = j.run AND d.row = j.row
  WHERE j.run = ? ORDER BY j.row`;

/** The service's latest word on a payout, as runs show tells it. */
function checkedOf(r: StateRow, at: string): Checked {
  return {
    at,
    by: r.checked_by ?? '',
    role: r.checked_role,
    notHeld: Number(r.missing ?? 0) === 1,
  };
}

/** A run's detail from its summary row and its payouts' rows. */
function detailOf(only: SummaryRow & Counts, rows: StateRow[]): RunDetail {
  const payouts = rows.map((r) => ({
    reference_id: r.reference_id,
    amount: r.amount ?? '',
    currency: r.currency ?? '',
    recipient: r.recipient ?? '',
    description: r.description,
    state: stateOf(r),
    ...(r.checked_at === null ? {} : { checked: checkedOf(r, r.checked_at) }),
  }));
  return { summary: summaryOf(only), payouts };
}

/**
 * The run whose id starts with a prefix, with each payout's state (UsageError when none or
 * several match); the run's counts kept through `keep`, when given.
 */
export async function readRunIn(
  read: RowReader,
  runIdPrefix: string,
  keep?: RowWriter,
): Promise<RunDetail> {
  const prefix = prefixOf(runIdPrefix);
  const found = onlyRun(
    (await read(BY_PREFIX, [prefix.length, prefix])) as SummaryRow[],
    runIdPrefix,
  );
  const [only] = await countedIn(read, [found], keep);
  const detail = detailOf(only!, (await read(PAYOUT_STATES, [only!.id])) as StateRow[]);
  // Each failed payout's last retry, and the run counted by the one rule (run-retries.ts).
  detail.summary.counts = await markRetries(
    read,
    only!.service,
    detail.payouts,
    detail.summary.counts,
  );
  return detail;
}
