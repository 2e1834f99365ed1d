/** The runs in state.db, as `payouts runs` lists and shows them. */
import { UsageError } from '../errors.js';
import { serviceIdOf } from './hash.js';
import { type HeldRef, tailOf } from '../domain/chain.js';
import { retryLinks } from './retry-links.js';
import { statusKind } from '../domain/statuses.js';

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
  counts: {
    success: number;
    failed: number;
    canceled: number;
    pending: number;
    in_flight: number;
    /** Payouts an earlier run had sent: reported, not sent again. */
    sent_earlier: number;
    not_sent: number;
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
  }>;
}

/**
 * The columns of a run and its counts: results by status, and payouts in flight (sent or
 * unknown, with no result).
 */
const SUMMARY = `
  SELECT r.id, r.run_id, r.service, r.client_id, r.inputs, r.created_at, r.updated_at,
    r.host, r.os_user, r.db_user, r.csv_style, r.payout_count, coalesce(d.success, 0) AS success, coalesce(d.failed, 0) AS failed,
    coalesce(d.canceled, 0) AS canceled, coalesce(d.pending, 0) AS pending,
    coalesce(f.in_flight, 0) AS in_flight, coalesce(e.sent_earlier, 0) AS sent_earlier
  FROM runs r
  LEFT JOIN (
    SELECT run,
      count(CASE WHEN lower(status) = 'success' THEN 1 END) AS success,
      count(CASE WHEN lower(status) = 'failed' THEN 1 END) AS failed,
      count(CASE WHEN lower(status) = 'canceled' THEN 1 END) AS canceled,
      count(CASE WHEN lower(status) NOT IN ('success', 'failed', 'canceled') THEN 1 END) AS pending
    FROM results GROUP BY run) d ON d.run = r.id
  LEFT JOIN (
    SELECT i.run, count(*) AS in_flight FROM intents i
    WHERE i.state IN ('in_flight', 'unknown')
      AND NOT EXISTS (SELECT 1 FROM results x WHERE x.run = i.run AND x.row = i.row)
    GROUP BY i.run) f ON f.run = r.id
  LEFT JOIN (
    SELECT o.run, count(*) AS sent_earlier FROM reports o
    WHERE o.sent_earlier > 0
      AND NOT EXISTS (SELECT 1 FROM results x WHERE x.run = o.run AND x.row = o.row)
    GROUP BY o.run) e ON e.run = r.id`;

/** A row of SUMMARY. */
interface SummaryRow {
  id: number;
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
  payout_count: number;
  success: number;
  failed: number;
  canceled: number;
  pending: number;
  in_flight: number;
  sent_earlier: number;
}

/** A run's summary from its row; payouts never sent, or freed, are "not sent". */
function summaryOf(r: SummaryRow): RunSummary {
  // PostgreSQL gives counts as text (bigint): Number() reads both stores' alike.
  const counts = {
    success: Number(r.success),
    failed: Number(r.failed),
    canceled: Number(r.canceled),
    pending: Number(r.pending),
    in_flight: Number(r.in_flight),
    sent_earlier: Number(r.sent_earlier),
    not_sent: 0,
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
    counts,
  };
}

/** Reads rows from a store: `?` placeholders, in order. */
export type RowReader = (sql: string, params: unknown[]) => Promise<unknown[]>;

/** The most recently active run first; of runs active at the same moment, the later made. */
const LIST = `${SUMMARY} WHERE r.run_id IS NOT NULL ORDER BY r.updated_at DESC, r.id DESC`;

/** Summaries of every run of every service in a store, the most recently active first. */
export async function listRunsIn(read: RowReader): Promise<RunSummary[]> {
  return ((await read(LIST, [])) as SummaryRow[]).map(summaryOf);
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
const PAYOUT_STATES = `SELECT j.reference_id, j.amount, j.currency, j.recipient, j.description,
  j.state, j.req, j.hash,
  j.sent_at, j.status, j.transaction_id, j.charges, j.message, o.sent_earlier, d.by_role
  FROM journal j LEFT JOIN reports o ON o.run = j.run AND o.row = j.row
    LEFT JOIN results d ON d.run = j.run AND d.row = j.row
  WHERE j.run = ? ORDER BY j.row`;

/** A run's detail from its summary row and its payouts' rows. */
function detailOf(only: SummaryRow, rows: StateRow[]): RunDetail {
  const payouts = rows.map((r) => ({
    reference_id: r.reference_id,
    amount: r.amount ?? '',
    currency: r.currency ?? '',
    recipient: r.recipient ?? '',
    description: r.description,
    state: stateOf(r),
  }));
  return { summary: summaryOf(only), payouts };
}

/** The run whose id starts with a prefix, with each payout's state; UsageError when none or several match. */
export async function readRunIn(read: RowReader, runIdPrefix: string): Promise<RunDetail> {
  const prefix = prefixOf(runIdPrefix);
  const only = onlyRun(
    (await read(BY_PREFIX, [prefix.length, prefix])) as SummaryRow[],
    runIdPrefix,
  );
  const detail = detailOf(only, (await read(PAYOUT_STATES, [only.id])) as StateRow[]);
  const failed = detail.payouts.filter(
    (p) => p.state.state === 'confirmed' && statusKind(p.state.status) === 'failed',
  );
  if (!failed.length) return detail;
  const links = await retryLinks(
    read,
    only.service,
    failed.map((p) => p.reference_id),
  );
  for (const p of failed) {
    const tail = tailOf(links, p.reference_id);
    if (tail) p.retried = tail;
  }
  return detail;
}

/** A reference a service's runs hold, with the run that holds it and when it was sent. */
export interface HeldReference {
  reference_id: string;
  run_id: string;
  sent_at: string | null;
}

/** The references of `refs` that runs of `service` (a base URL or "sandbox") hold. */
export async function heldReferences(
  read: RowReader,
  service: string,
  refs: string[],
): Promise<HeldReference[]> {
  const held: HeldReference[] = [];
  for (const ref of refs) {
    const rows = (await read(
      `SELECT j.reference_id, r.run_id, j.sent_at FROM journal j JOIN runs r ON r.id = j.run
       WHERE j.reference_id = ? AND r.service_id = ? AND r.run_id IS NOT NULL LIMIT 1`,
      [ref, serviceIdOf(service)],
    )) as HeldReference[];
    if (rows[0]) held.push(rows[0]);
  }
  return held;
}

/**
 * The references a service's runs hold that are near `ref` (the same but for case, `-`,
 * `_` or spaces, or one character added, dropped or changed), each with the latest run
 * that holds it; the exact reference itself is left out.
 */
export async function nearReferences(
  read: RowReader,
  service: string,
  ref: string,
): Promise<HeldReference[]> {
  const rows = (await read(
    `SELECT j.reference_id, r.run_id, coalesce(j.sent_at, r.created_at) AS sent_at
     FROM journal j JOIN runs r ON r.id = j.run
     WHERE r.service_id = ? AND r.run_id IS NOT NULL
       AND length(j.reference_id) BETWEEN ? AND ? AND j.reference_id <> ?
     ORDER BY r.updated_at DESC, j.row`,
    [serviceIdOf(service), Math.max(1, ref.length - 3), ref.length + 3, ref],
  )) as HeldReference[];
  const seen = new Set<string>();
  const near: HeldReference[] = [];
  for (const r of rows) {
    if (seen.has(r.reference_id) || !isNear(ref, r.reference_id)) continue;
    seen.add(r.reference_id);
    near.push(r);
  }
  return near;
}

/** A reference as a person may have meant it: case, dashes, underscores and spaces ignored. */
function loose(ref: string): string {
  return ref.toLowerCase().replace(/[\s_-]+/g, '');
}

/** Whether two references differ only loosely (see loose) or by one character. */
export function isNear(a: string, b: string): boolean {
  return loose(a) === loose(b) || oneEdit(a, b) || oneEdit(a.toLowerCase(), b.toLowerCase());
}

/** Whether b is a with one character added, dropped or changed. */
function oneEdit(a: string, b: string): boolean {
  if (a === b || Math.abs(a.length - b.length) > 1) return false;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  let i = 0;
  while (i < short.length && short[i] === long[i]) i++;
  const skip = short.length === long.length ? 1 : 0;
  return short.slice(i + skip) === long.slice(i + 1);
}
