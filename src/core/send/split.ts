import { InputError, InternalError, type Problem, UsageError } from '../../errors.js';
import { CurrencyTotals, formatMinor, moneyText, parseAmount } from '../../money/amount.js';
import type { CurrencyTable } from '../../money/currencies.js';
import { failedAtService } from './failed-earlier.js';
import type { MaxTotal } from './options.js';
import type { RunPlan } from './plan.js';
import type { PriorState } from './resume.js';

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
  toSend: CurrencyTotals;
  /** The runs that sent the payouts sent earlier, most recent first. */
  earlierRuns: EarlierRun[];
  /** Requests the payouts to send now take. */
  requestCount: number;
  /** Of the payouts sent earlier, those that failed or were canceled at the service. */
  failedEarlier: CurrencyTotals;
  /** Of the payouts sent earlier, those that failed and whose retry was paid (or is pending): the first few retries. */
  retried: { count: number; paid: string[]; pending: string[] };
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

/** The runs behind the payouts sent earlier, most recent first. */
function earlierRunsOf(prior: PriorState): EarlierRun[] {
  const runs = new Map<string, EarlierRun>();
  for (const s of prior.settled.values()) {
    const run = runs.get(s.runId) ?? { runId: s.runId, at: null, count: 0 };
    run.count += 1;
    if (s.at !== null && (run.at === null || s.at > run.at)) run.at = s.at;
    runs.set(s.runId, run);
  }
  return [...runs.values()].sort((a, b) => (b.at ?? '').localeCompare(a.at ?? ''));
}

/** The failed payouts of a run that a retry paid or holds pending: how many, the first few of each. */
function retriedOf(prior: PriorState): RunSplit['retried'] {
  const tails = [...prior.retried.values()].slice(0, 3);
  const refs = (kind: string) => tails.filter((t) => t.kind === kind).map((t) => t.ref);
  return { count: prior.retried.size, paid: refs('success'), pending: refs('pending') };
}

/** Splits a planned run by what earlier runs of the same service did with its payouts. */
export function splitRun(
  plan: RunPlan,
  prior: PriorState,
  currencies: CurrencyTable,
  chunkSize: number,
): RunSplit {
  const sentEarlier = totalsOf(prior.settled.values(), currencies);
  const readBack = totalsOf(
    [...prior.inFlight.values()].map((i) => i.payout),
    currencies,
  );
  const toSend = plan.totals.without(sentEarlier, readBack);
  return {
    files: plan.totals,
    sentEarlier,
    readBack,
    toSend,
    earlierRuns: earlierRunsOf(prior),
    requestCount: Math.ceil(toSend.count / chunkSize),
    failedEarlier: totalsOf([...prior.settled.values()].filter(failedAtService), currencies),
    retried: retriedOf(prior),
  };
}

/** Whether a run sends nothing: every payout was sent earlier, none is left to read back. */
export function sendsNothing(split: RunSplit): boolean {
  return split.toSend.count === 0 && split.readBack.count === 0;
}

/** The split of a run nothing was sent for, or whose service is not known. */
export function freshSplit(plan: RunPlan): RunSplit {
  const none = new CurrencyTotals();
  return {
    files: plan.totals,
    sentEarlier: none,
    readBack: none,
    toSend: plan.totals,
    earlierRuns: [],
    requestCount: plan.requestCount,
    failedEarlier: none,
    retried: { count: 0, paid: [], pending: [] },
  };
}

/**
 * Checks the --max-total ceilings against what this run may send: the payouts to send now
 * and those to read back (sent again if the service does not have them). Throws InputError.
 */
export function checkMaxTotals(
  split: RunSplit,
  maxTotals: MaxTotal[],
  currencies: CurrencyTable,
): void {
  const mayMove = split.files.without(split.sentEarlier);
  const problems: Problem[] = [];
  for (const limit of maxTotals) {
    const digits = currencies.minorUnits(limit.currency);
    const parsed = parseAmount(limit.amountText, digits);
    if (!parsed.ok || digits === undefined) {
      throw new UsageError(
        `--max-total ${limit.currency}=${limit.amountText}: ${parsed.ok ? 'unknown currency' : parsed.message}`,
      );
    }
    const total = mayMove.minorOf(limit.currency);
    if (total <= parsed.amount.minor) continue;
    const earlier = split.sentEarlier.minorOf(limit.currency);
    const money = (minor: bigint) => moneyText(limit.currency, formatMinor(minor, digits));
    const why = earlier
      ? ` (of ${money(split.files.minorOf(limit.currency))} in the files, ${money(earlier)} was sent earlier)`
      : '';
    problems.push({
      file: '--max-total',
      field: limit.currency,
      value: limit.amountText,
      message: `this run would send ${money(total)}${why}, above the limit of ${money(parsed.amount.minor)}; nothing was sent`,
    });
  }
  if (problems.length) throw new InputError(problems);
}
