/** Reading payouts back by reference, and when "not found" is proof (docs/never-twice.md). */
import { DEFAULT_READ_RETRY, type RetryPolicy } from '../../api/retry.js';
import type { PayoutRecord, PayoutRequest } from '../../api/types.js';
import type { Clock } from '../../clock.js';
import type { PriorRow } from '../../domain/history.js';
import type { PayoutOutcome } from '../../domain/outcome.js';
import type { KnownOutcome, SentEarlier } from './fates.js';
import type { Pace } from '../pace.js';
import { CredentialsError, errorMessage } from '../../errors.js';
import { type LookupOutcome, lookupAll, type PayoutReader } from '../status/lookup.js';
import { matchRecord, type Sent } from './verdict.js';

/** What reading payouts back needs. */
export interface ReadBackDeps {
  client: PayoutReader;
  clock: Clock;
  /** Aborting it stops a wait for the quiet time: the payouts waited for stay unknown. */
  interrupt: AbortSignal;
  /** Says on stderr why the run waits, and how long. */
  notify: (message: string) => void;
  /** Shows a wait (a countdown on a terminal) until the returned function is called. */
  wait?: (what: string, ms: number) => () => void;
  /** Whether the run said why waiting protects the money: said once, at the first wait. */
  why?: { told: boolean };
  retry?: RetryPolicy;
  /** Paces the lookups; without one, at most 8 run at once. */
  pace?: Pace;
}

/** What a read-back established about one payout. */
export type ReadBackOutcome =
  | { kind: 'found'; record: PayoutRecord }
  /** Another payout stands under our reference: ours was not made. */
  | { kind: 'other-payout'; record: PayoutRecord; why: string }
  /**
   * Taken as proof of not applied: not found after the quiet time, and again a quiet interval
   * later when one is given (what this trusts: docs/never-twice.md).
   */
  | { kind: 'not-found' }
  | { kind: 'unknown'; why: string };

/** Outcome fields from a payout record read back by GET. */
export function fromRecord(rec: PayoutRecord): Pick<PayoutOutcome, 'status' | 'transaction_id'> {
  return {
    status: rec.status,
    transaction_id: typeof rec.transaction_id === 'string' ? rec.transaction_id : undefined,
  };
}

/** What one lookup of a payout establishes: its record, checked against the payout. */
export function readBackOf(payout: PayoutRequest, o: LookupOutcome): ReadBackOutcome {
  if (o.kind === 'not_found') return { kind: 'not-found' };
  if (o.kind === 'error') return { kind: 'unknown', why: o.error.message };
  const m = matchRecord(payout, o.record);
  if (m.kind === 'ours') return { kind: 'found', record: o.record };
  if (m.kind === 'other-payout') return { kind: 'other-payout', record: o.record, why: m.why };
  return { kind: 'unknown', why: m.why };
}

/** A payout a read-back settled: the result it states, and the record or the other payout. */
export interface ReadBackSettled<T> {
  item: T;
  /** Found ours: its record's status; another payout under our reference: failed, saying so. */
  result: Pick<PayoutOutcome, 'status' | 'transaction_id' | 'message'>;
  found?: PayoutRecord;
  /** Why the payout the service holds under the reference is another. */
  other?: string;
}

/** The payouts of a read-back by what it established, each in the order of `items`. */
export interface ReadBackParts<T> {
  settled: Array<ReadBackSettled<T>>;
  notFound: T[];
  unknown: Array<[T, string]>;
}

/** Sorts the payouts of a read-back by its outcomes: the one switch over them. */
export function partsOf<T extends Sent>(items: readonly T[], r: ReadBackResult): ReadBackParts<T> {
  const parts: ReadBackParts<T> = { settled: [], notFound: [], unknown: [] };
  for (const item of items) {
    const o = r.outcomes.get(item.payout.reference_id);
    if (o?.kind === 'found') {
      parts.settled.push({ item, result: fromRecord(o.record), found: o.record });
    } else if (o?.kind === 'other-payout') {
      parts.settled.push({ item, result: { status: 'failed', message: o.why }, other: o.why });
    } else if (o?.kind === 'not-found') parts.notFound.push(item);
    else parts.unknown.push([item, o?.why ?? 'it was not read back']);
  }
  return parts;
}

/** The outcomes of a read-back, and a credentials error that stopped it, if one did. */
export interface ReadBackResult {
  outcomes: Map<string, ReadBackOutcome>;
  fatal?: Error;
}

/** When "not found" counts: after `quietAt` (ms since the epoch), and how often. */
export interface QuietTime {
  quietAt: number;
  /**
   * When given, "not found" must hold twice: once read after `quietAt`, and again this long
   * later, so a service whose lookups lag behind its writes gets a second chance.
   */
  intervalMs?: number;
}

/**
 * Reads payouts back by reference_id. A "Payout not found" proves nothing while the request
 * that carried the payout may still be in progress at the service, so those found missing
 * before `quietAt` are read again once it has passed, and, with an interval, once more after it.
 */
export async function readBack<T extends Sent>(
  items: T[],
  quiet: QuietTime,
  deps: ReadBackDeps,
): Promise<ReadBackResult> {
  const byRef = new Map(items.map((i) => [i.payout.reference_id, i]));
  const out: ReadBackResult = { outcomes: new Map() };
  let readAt = deps.clock.now();
  let missing = await readOnce(items, deps, out);
  let confirmed = 0;
  const needed = quiet.intervalMs === undefined ? 1 : 2;
  while (missing.length && !out.fatal) {
    if (readAt >= quiet.quietAt) confirmed += 1;
    if (confirmed >= needed) break;
    const first = confirmed === 0;
    // Until the quiet time itself: a read that took long has already waited part of it.
    const waitMs = first ? quiet.quietAt - deps.clock.now() : quiet.intervalMs!;
    const waited = waitMs > 0 ? await waitForQuiet(missing.length, waitMs, deps, first) : true;
    if (!waited || deps.interrupt.aborted) {
      for (const ref of missing) out.outcomes.set(ref, { kind: 'unknown', why: STOPPED_WAITING });
      return out;
    }
    readAt = deps.clock.now();
    missing = await readOnce(
      missing.map((ref) => byRef.get(ref)!),
      deps,
      out,
    );
  }
  return out;
}

/**
 * What a read-back made before the service's lock established about a payout in doubt, and
 * the history it was read against: the payout's held rows as text (heldTexts). Under the lock
 * it stands only while the history holds the same rows: a request that carried the payout
 * since (a new intent) or a result recorded meanwhile voids it, and the payout is read again.
 */
export interface Proof {
  outcome: ReadBackOutcome;
  against: string;
}

/** The rows the history holds of each of `rows` (staged rows), as text: what a proof is read against. */
export function heldTexts(
  held: readonly PriorRow[],
  rows: ReadonlySet<number>,
): Map<number, string> {
  const byRow = new Map<number, PriorRow[]>();
  for (const r of held) {
    if (r.via === undefined && rows.has(r.row)) byRow.set(r.row, [...(byRow.get(r.row) ?? []), r]);
  }
  return new Map([...byRow].map(([row, rs]) => [row, JSON.stringify(rs)]));
}

/** Of `items`, the outcomes their proofs establish while the history holds what they were read against. */
export function standing<T extends Sent & { row: number }>(
  items: readonly T[],
  proofs: ReadonlyMap<string, Proof>,
  held: readonly PriorRow[],
): Map<string, ReadBackOutcome> {
  const out = new Map<string, ReadBackOutcome>();
  if (!proofs.size) return out;
  const texts = heldTexts(held, new Set(items.map((i) => i.row)));
  for (const i of items) {
    const proof = proofs.get(i.payout.reference_id);
    if (proof && proof.against === texts.get(i.row)) out.set(i.payout.reference_id, proof.outcome);
  }
  return out;
}

const STOPPED_WAITING =
  'the run was stopped while waiting for the service to finish the request that carried it';

/**
 * Reads each payout once; records what is established in `out` and returns the references
 * the service said it does not have (recorded as not-found in `out` too, final only when
 * no wait is needed).
 */
async function readOnce<T extends Sent>(
  items: T[],
  deps: ReadBackDeps,
  out: ReadBackResult,
): Promise<string[]> {
  let found: LookupOutcome[];
  try {
    found = await lookupAll(
      deps.client,
      items.map((i) => i.payout.reference_id),
      {
        concurrency: deps.pace ? 16 : 8,
        pace: deps.pace,
        retry: deps.retry ?? DEFAULT_READ_RETRY,
        sleep: (ms, signal) => deps.clock.sleep(ms, signal),
        now: () => deps.clock.now(),
      },
    );
  } catch (error) {
    const why = errorMessage(error);
    for (const i of items) out.outcomes.set(i.payout.reference_id, { kind: 'unknown', why });
    if (error instanceof CredentialsError) out.fatal = error;
    return [];
  }
  const missing: string[] = [];
  found.forEach((o, k) => {
    const payout = items[k]!.payout;
    const outcome = readBackOf(payout, o);
    if (outcome.kind === 'not-found') missing.push(payout.reference_id);
    out.outcomes.set(payout.reference_id, outcome);
  });
  return missing;
}

/**
 * Waits out the quiet time (`first`) or the second interval, telling the user; false when the
 * run was stopped meanwhile.
 */
async function waitForQuiet(
  count: number,
  waitMs: number,
  deps: ReadBackDeps,
  first: boolean,
): Promise<boolean> {
  const { clock, interrupt } = deps;
  if (interrupt.aborted) return false;
  const seconds = Math.ceil(waitMs / 1000);
  const them = count === 1 ? 'it' : 'them';
  const what = first
    ? `the service has no record yet of ${count} payout${count === 1 ? '' : 's'} whose request may still be in progress there: waiting ${seconds} s before reading ${them} again`
    : `the service still has no record of ${count} payout${count === 1 ? '' : 's'} after the quiet time: reading ${them} once more in ${seconds} s before sending ${them} again, in case its lookups lag behind its writes`;
  deps.notify(
    `${what} (Ctrl-C stops waiting: ${count === 1 ? 'its' : 'their'} outcome stays unknown, and the next run reads ${them} back before sending anything)${whyOnce(deps)}`,
  );
  const until = clock.now() + waitMs;
  const payouts = `${count} payout${count === 1 ? '' : 's'}`;
  const end = deps.wait?.(`reading ${payouts} back ${first ? '' : 'again '}in`, waitMs);
  try {
    for (let left = waitMs; left > 0; left = until - clock.now()) {
      await clock.sleep(Math.min(left, 1000), interrupt);
    }
  } catch (error) {
    if (interrupt.aborted) return false;
    throw error;
  } finally {
    end?.();
  }
  return !interrupt.aborted;
}

/** The first wait of a run says, in plain words, why it waits rather than send again. */
function whyOnce(deps: ReadBackDeps): string {
  if (!deps.why || deps.why.told) return '';
  deps.why.told = true;
  return '. The wait is what keeps a payout from being paid twice: one whose answer was lost is sent again only once the service shows it does not have it';
}

/** A held row with a result, as sent earlier. */
export function earlierOfHeld(r: PriorRow): SentEarlier {
  return {
    outcome: {
      status: r.status ?? '',
      ...(r.transaction_id ? { transaction_id: r.transaction_id } : {}),
      ...(r.charges !== null ? { charges: Number(r.charges) } : {}),
      ...(r.message ? { message: r.message } : {}),
    },
    currency: r.payout.currency,
    amount: r.payout.amount,
    runId: r.run_id,
    at: r.sent_at,
    ...(r.checked_at ? { checkedAt: r.checked_at } : {}),
  };
}

/** A payout the service holds as ours, as sent earlier (by the run that recorded it, if one did). */
export function foundAs(payout: PayoutRequest, outcome: KnownOutcome, runId = ''): SentEarlier {
  return { outcome, currency: payout.currency, amount: payout.amount, runId, at: null };
}
