/**
 * What the decision (decide.ts) is given, the facts, and what it says of each row, its fate;
 * and what is folded from the fates:
 * the summary's totals per currency (the split), "nothing to send", the refusal that stops a
 * run, the questions for the service, and the payouts it was found to hold.
 */
import type { PayoutRequest } from '../../api/types.js';
import type { HeldRef } from '../../domain/chain.js';
import type { PriorRow } from '../../domain/history.js';
import { outcomeKind, type PayoutOutcome, paidByRetry } from '../../domain/outcome.js';
import { heldKind } from '../../domain/statuses.js';
import { InternalError } from '../../errors.js';
import { CurrencyTotals, parseAmount } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import type { StagedRetry } from '../../state/index.js';
import type { LookupOutcome } from '../status/lookup.js';
import type { RunPlan } from './plan.js';

/** Why a payout is looked up at the service before anything is asked or sent. */
export type LookupWhy =
  /** Only runs under another Client-Id recorded it: another key may be another account. */
  | 'other-client'
  /** --check-service: the history does not know it. */
  | 'not-in-history'
  /** The payout a retry row retries: only failed or canceled at the service lets it go. */
  | 'original'
  /** Pending or in doubt: followed to its final state (reconcile). */
  | 'not-final';

/** One question for the service: a payout (matched against its record), or an original. */
export interface Ask {
  /** The staged row whose fate waits for the answer. */
  row: number;
  ref: string;
  why: LookupWhy;
  payout?: PayoutRequest;
  /** The run, under another Client-Id, that recorded the payout as sent. */
  recordedBy?: { runId: string; clientId: string };
}

/** What refuses a row, in the order a run is refused: the first kind a decision holds stops it. */
export const REFUSALS = [
  /** The history holds its reference as another payout (another amount, currency or recipient). */
  'held-other',
  /** A retry row that would pay a payout again or leave one unpaid, as the history tells. */
  'retry',
  /** A retry row whose original this history never sent: a retry of it elsewhere is unseen. */
  'original-elsewhere',
  /** The service holds its reference as another payout. */
  'other-payout',
  /** The service did not answer about the payout. */
  'unanswered',
  /** It failed at the service in another run: its reference_id is used up. */
  'failed-earlier',
  /** The service does not hold a retry row's original as failed or canceled. */
  'not-proved',
  /** The service did not answer about a retry row's original. */
  'unproved',
] as const;
export type RefusalKind = (typeof REFUSALS)[number];

/** What a retry row does wrong: two rows pay one payout, its reference is used, or its original. */
export type RetryProblem = 'also-sent' | 'reference-used' | 'twin' | 'origin';

/** Why a row is refused, with what its words need (refusals.ts). */
export type Refusal =
  | { kind: 'held-other'; held: PriorRow[] }
  | { kind: 'retry'; retry: StagedRetry; problem: RetryProblem; origin: Origin; twin?: StagedRetry }
  | { kind: 'original-elsewhere'; retry: StagedRetry }
  | { kind: 'other-payout'; ask: Ask; why: string }
  | { kind: 'unanswered'; ask: Ask; why: string }
  | { kind: 'failed-earlier'; row: number; ref: string; earlier: SentEarlier; tail?: HeldRef }
  | { kind: 'not-proved'; retry: StagedRetry; answer: LookupOutcome; link?: HeldRef }
  | { kind: 'unproved'; retry: StagedRetry; why: string };

/** A recorded outcome, without the payout's own fields. */
export type KnownOutcome = Omit<PayoutOutcome, 'reference_id' | 'amount' | 'currency'>;

/** A payout sent before: by an earlier attempt of this run, another run, or found at the service. */
export interface SentEarlier {
  outcome: KnownOutcome;
  currency: string;
  /** Exact decimal text. */
  amount: string;
  /** The run that sent it ('' when found at the service) and when its request went out (null: not recorded). */
  runId: string;
  /** When its retry paid it (or it is pending as it: outcome.retried_as), the retry's. */
  at: string | null;
  /** When the service's latest word on it was kept (null: never since its run). */
  checkedAt?: string | null;
}

/** A payout an earlier attempt may have sent, and when its request went out at the latest. */
export interface InFlight {
  row: number;
  payout: PayoutRequest;
  /** Milliseconds since the epoch. */
  sentAt: number;
}

/** A row's fate. A row a decision does not name is sent. */
export type Fate =
  /** `unasked`: the original of a retry row, which this mode does not ask the service about. */
  | { kind: 'send'; unasked?: string }
  /** How: as the history holds it, as the service answered, or paid by a later retry. */
  | { kind: 'sent-earlier'; earlier: SentEarlier; how: 'history' | 'service' | 'retried' }
  /** Read back after the quiet time; `deciding`: a run another process sends now, whose it is. */
  | { kind: 'read-back'; inFlight: InFlight; unasked?: string; deciding?: string }
  /** Asked of the service before anything is decided; `inFlight` when read back after. */
  | { kind: 'look-up'; asks: Ask[]; inFlight?: InFlight }
  | { kind: 'refused'; refusal: Refusal };

/** Where the original a retry row retries stands in the history, as a send judges it. */
export type OriginState =
  | 'failed'
  | 'canceled'
  | 'paid'
  | 'pending'
  | 'in_doubt'
  | 'retried'
  | 'reference_used'
  | 'not_in_history';

/** The states of an original that refuse its retry whatever the service says. */
export const REFUSED_ORIGINS: ReadonlySet<OriginState> = new Set([
  'paid',
  'pending',
  'in_doubt',
  'retried',
  'reference_used',
]);

/** A retry row's original as the history holds it: only failed or canceled lets the row go. */
export interface Origin {
  state: OriginState;
  /** The original's link of the chain (none when the history does not hold it). */
  link?: HeldRef;
  /** Retried already: the first retry, and the last of the chain. */
  first?: HeldRef;
  tail?: HeldRef;
  /** The payout that holds the row's own (new) reference. */
  usedBy?: HeldRef;
}

/** What a decision is given. */
export interface Facts {
  /** What the history holds of the staged references and their chains (HistoryStore.prior). */
  held: readonly PriorRow[];
  /** The staged rows that retry another reference, in row order. */
  retries: readonly StagedRetry[];
  /** Every staged payout, when the payouts the history does not know are looked up (--check-service). */
  staged?: ReadonlyArray<{ row: number; payout: PayoutRequest }>;
  /** The Client-Id the run sends under; none in the sandbox. */
  clientId?: string;
  /** The run's id: its own earlier attempt's failed payouts are its results, not refused. */
  runId?: string;
  /** Runs that another process sends now: what they hold in flight is theirs to decide. */
  live?: ReadonlySet<string>;
  /** --original-elsewhere: a retry row whose original this history never sent is not refused. */
  originalElsewhere?: boolean;
  /** Reconcile of a run or a period: every payout is asked, final ones too. */
  every?: boolean;
}

/** The service's answers, by reference. */
export type Answers = ReadonlyMap<string, LookupOutcome>;

/** Each row's fate (a row not named is sent), each retry row's original, and what stops the run. */
export interface Decision {
  fates: Map<number, Fate>;
  origins: Map<number, Origin>;
  /** The refusals that stop the run in this mode; any other is told. */
  stops: readonly RefusalKind[];
  /** The retry rows to send whose original this history never sent (--original-elsewhere). */
  elsewhere: StagedRetry[];
}

/**
 * Whether a payout sent earlier failed or was canceled at the service, and is still failed by
 * the one rule: not paid by a retry, nor pending as one (outcomeKind).
 */
export function failed(s: SentEarlier): boolean {
  if (heldKind({ state: 'done', status: s.outcome.status }) !== 'failed') return false;
  const kind = outcomeKind(s.outcome);
  return kind !== 'success' && kind !== 'pending';
}

/** The refused rows of the first kind of refusal that stops the run, in row order; none: it goes on. */
export function stopping(decision: Decision): Refusal[] {
  const refused: Array<[number, Refusal]> = [];
  for (const [row, f] of decision.fates) if (f.kind === 'refused') refused.push([row, f.refusal]);
  const kind = REFUSALS.find(
    (k) => decision.stops.includes(k) && refused.some(([, r]) => r.kind === k),
  );
  if (!kind) return [];
  return refused
    .filter(([, r]) => r.kind === kind)
    .sort(([a], [b]) => a - b)
    .map(([, r]) => r);
}

/** The questions a decision has for the service, in row order. */
export function asksOf(decision: Decision): Ask[] {
  const asks = [...decision.fates.values()].flatMap((f) => (f.kind === 'look-up' ? f.asks : []));
  return asks.sort((a, b) => a.row - b.row);
}

/** The payouts sent earlier, by row: not sent again. */
export function sentEarlier(decision: Decision): Map<number, SentEarlier> {
  const out = new Map<number, SentEarlier>();
  for (const [row, f] of decision.fates) if (f.kind === 'sent-earlier') out.set(row, f.earlier);
  return out;
}

/** Of the payouts `asked` about, those the service holds as ours, with what it said. */
export function foundOf(
  decision: Decision,
  asked: Ask[],
): Array<{ ref: string; earlier: SentEarlier }> {
  return asked.flatMap((a) => {
    const f = a.payout && decision.fates.get(a.row);
    return f?.kind === 'sent-earlier' ? [{ ref: a.ref, earlier: f.earlier }] : [];
  });
}

/** The payouts --check-service found at the service, as the results the run records. */
export function foundAtService(
  decision: Decision,
  asked: Ask[],
): Array<{ ref: string; status: string; transaction_id?: string }> {
  return foundOf(decision, asked).flatMap(({ ref, earlier: { outcome } }) =>
    outcome.found_at_service
      ? [{ ref, status: outcome.status, transaction_id: outcome.transaction_id }]
      : [],
  );
}

/** What is left for this run to read back, by reference (not what another run decides). */
export function inFlightOf(decision: Decision): Map<string, InFlight> {
  const out = new Map<string, InFlight>();
  for (const f of decision.fates.values()) {
    if (f.kind === 'read-back' && !f.deciding) out.set(f.inFlight.payout.reference_id, f.inFlight);
  }
  return out;
}

/** The payouts in doubt that another live send decides, by row, with its run: left to it. */
export function decidingOf(decision: Decision): Map<number, string> {
  const out = new Map<number, string>();
  for (const [row, f] of decision.fates)
    if (f.kind === 'read-back' && f.deciding) out.set(row, f.deciding);
  return out;
}

/** A run that sent some of this run's payouts earlier. */
export interface EarlierRun {
  runId: string;
  /** When its latest request of these payouts went out (ISO), if recorded. */
  at: string | null;
  count: number;
}

/**
 * What a run will do with each of its payouts, per currency, known before anything is sent:
 * the payouts of the files are those sent earlier, those to read back and those to send now.
 */
export interface RunSplit {
  files: CurrencyTotals;
  /** Sent by an earlier attempt or another run of the service: not sent again. */
  sentEarlier: CurrencyTotals;
  /** Left in flight by an earlier attempt: sent only if the service proves not to have them. */
  readBack: CurrencyTotals;
  /** To look up at the service, which may hold them: not known yet whether they are sent. */
  toLookUp: CurrencyTotals;
  toSend: CurrencyTotals;
  /** The runs that sent the payouts sent earlier, most recent first. */
  earlierRuns: EarlierRun[];
  /** Requests the payouts to send now take. */
  requestCount: number;
  /** Of the payouts sent earlier, those that failed or were canceled at the service. */
  failedEarlier: CurrencyTotals;
  /** Of the payouts sent earlier, those that failed and whose retry was paid (or is pending): the first few retries. */
  retried: { count: number; paid: string[]; pending: string[] };
  /** The retry rows --original-elsewhere let through: their originals this history never sent. */
  elsewhere: Array<{ reference_id: string; retry_of: string }>;
}

/** Per-currency totals of stored payouts, whose amounts pass 1 validated. */
function totalsOf(
  items: Iterable<{ currency: string; amount: string }>,
  currencies: CurrencyTable,
): CurrencyTotals {
  const totals = new CurrencyTotals();
  for (const { currency, amount } of items) {
    const r = parseAmount(amount, currencies.minorUnits(currency));
    if (!r.ok) throw new InternalError(`stored amount ${amount} ${currency}: ${r.message}`);
    totals.add(currency, r.amount.minor);
  }
  return totals;
}

/** The payouts sent earlier (those failed earlier too, told or refused), those to read back and to look up. */
function partsOf(decision: Decision) {
  const earlier: SentEarlier[] = [];
  const readBack: PayoutRequest[] = [];
  const lookUp: PayoutRequest[] = [];
  const retried: Array<{ ref: string; paid: boolean }> = [];
  for (const f of decision.fates.values()) {
    if (f.kind === 'sent-earlier') earlier.push(f.earlier);
    else if (f.kind === 'refused' && f.refusal.kind === 'failed-earlier')
      earlier.push(f.refusal.earlier);
    else if (f.kind === 'read-back') readBack.push(f.inFlight.payout);
    else if (f.kind === 'look-up') {
      // A payout the service may hold is not known to move; a retry to prove, or in flight, is.
      const payout = f.asks.find((a) => a.payout)?.payout;
      if (payout) lookUp.push(payout);
      else if (f.inFlight) readBack.push(f.inFlight.payout);
    }
    const by = f.kind === 'sent-earlier' ? f.earlier.outcome.retried_as : undefined;
    if (f.kind === 'sent-earlier' && by) {
      retried.push({ ref: by.reference_id, paid: paidByRetry(f.earlier.outcome) });
    }
  }
  return { earlier, readBack, lookUp, retried };
}

/** The runs behind the payouts sent earlier, most recent first. */
function earlierRunsOf(earlier: SentEarlier[]): EarlierRun[] {
  const runs = new Map<string, EarlierRun>();
  for (const s of earlier) {
    const run = runs.get(s.runId) ?? { runId: s.runId, at: null, count: 0 };
    run.count += 1;
    if (s.at !== null && (run.at === null || s.at > run.at)) run.at = s.at;
    runs.set(s.runId, run);
  }
  return [...runs.values()].sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
}

/** Splits a planned run by its fates, per currency: a fold over them. */
export function splitOf(
  decision: Decision,
  plan: Pick<RunPlan, 'totals'>,
  currencies: CurrencyTable,
  chunkSize: number,
): RunSplit {
  const parts = partsOf(decision);
  const sentEarlier = totalsOf(parts.earlier, currencies);
  const readBack = totalsOf(parts.readBack, currencies);
  const toLookUp = totalsOf(parts.lookUp, currencies);
  const toSend = plan.totals.without(sentEarlier, readBack, toLookUp);
  const shown = parts.retried.slice(0, 3);
  const refs = (paid: boolean) => shown.filter((r) => r.paid === paid).map((r) => r.ref);
  return {
    files: plan.totals,
    sentEarlier,
    readBack,
    toLookUp,
    toSend,
    earlierRuns: earlierRunsOf(parts.earlier),
    requestCount: Math.ceil(toSend.count / chunkSize),
    failedEarlier: totalsOf(parts.earlier.filter(failed), currencies),
    retried: { count: parts.retried.length, paid: refs(true), pending: refs(false) },
    elsewhere: decision.elsewhere.map((r) => ({
      reference_id: r.reference_id,
      retry_of: r.retry_of,
    })),
  };
}

/** Whether a run sends nothing: every payout was sent earlier, none is left to read back or look up. */
export function sendsNothing(split: RunSplit): boolean {
  return split.toSend.count === 0 && split.readBack.count === 0 && split.toLookUp.count === 0;
}

/** Whether a run moves money whatever the service answers: some payout is to send or read back. */
export function moves(split: RunSplit): boolean {
  return split.toSend.count > 0 || split.readBack.count > 0;
}

/** The split of a run whose service is not known (a dry run without one). */
export function freshSplit(plan: Pick<RunPlan, 'totals' | 'requestCount'>): RunSplit {
  const none = new CurrencyTotals();
  return {
    files: plan.totals,
    sentEarlier: none,
    readBack: none,
    toLookUp: none,
    toSend: plan.totals,
    earlierRuns: [],
    requestCount: plan.requestCount,
    failedEarlier: none,
    retried: { count: 0, paid: [], pending: [] },
    elsewhere: [],
  };
}
