/**
 * `payouts reconcile`: every payout of the history that is not final (or every payout of a
 * run or period) looked up at the service, at the pace it allows (status's pool of lookups:
 * lookup.ts, pace.ts), a page of the history at a time; each page decided as decide.ts's
 * reconcile mode says (what to ask; a payout's chain), each answer kept as the service's word
 * (keep.ts: both stores, appended, so two people reconciling at once is fine), each payout
 * judged (judge.ts). A stop keeps what was looked up so far.
 */
import { DEFAULT_READ_RETRY } from '../../api/retry.js';
import type { Clock } from '../../clock.js';
import { UsageError } from '../../errors.js';
import type { Output } from '../../output/output.js';
import type { Dialect } from '../../state/dialect.js';
import {
  heldOfPage,
  recordChecks,
  type RowReader,
  type RowWriter,
  runOfPrefix,
  type ScopePayout,
  type ScopeRun,
  scopeCount,
  scopePage,
  scopeRuns,
  serviceId,
} from '../../state/index.js';
import { serviceIdOf } from '../../state/hash.js';
import { Pace } from '../pace.js';
import { type RunsSource, withRunReader } from '../runs/reader.js';
import { decide } from '../send/decide.js';
import { asksOf, type Facts } from '../send/fates.js';
import { checkedReader } from '../status/check.js';
import { askedRightly, checkOf } from '../status/keep.js';
import {
  type LookupOutcome,
  LookupsInterrupted,
  lookupAll,
  type PayoutReader,
} from '../status/lookup.js';
import { judge, type Reconciled } from './judge.js';

/** Which payouts: one run's, those of runs begun since a day, every one, or (none) those not final. */
export interface Scope {
  run?: string;
  /** An ISO date or time. */
  since?: string;
  all?: boolean;
}

/** What reconcile needs besides the scope. */
export interface ReconcileDeps {
  from: RunsSource;
  service: { client: PayoutReader; serviceKey: string; sandbox: boolean; clientId: string };
  output: Output;
  clock: Clock;
  interrupt: AbortSignal;
  /** A fixed ceiling of lookups in flight (--concurrency); none adapts, 4 growing to 16. */
  concurrency?: number;
  /** Told after each lookup: looked up so far, of how many, and the changes so far. */
  progress?: (done: number, total: number, changed: number) => void;
}

/** What reconcile found. */
export interface ReconcileReport {
  rows: Reconciled[];
  /** The runs gone through, for the retry file's conventions. */
  runs: ScopeRun[];
  /** Payouts in the scope; those not looked up before a stop are not in `rows`. */
  total: number;
  interrupted: boolean;
  /** No history at all (no state.db in the folder). */
  noHistory: boolean;
}

/** Payouts read, decided and looked up at a time. */
export const RECONCILE_PAGE = 10_000;

/** The runs of the scope, checked to be the service's. */
async function runsOf(read: RowReader, scope: Scope, serviceKey: string): Promise<ScopeRun[]> {
  if (scope.run === undefined) return scopeRuns(read, serviceKey, scope.since);
  const run = await runOfPrefix(read, scope.run);
  if (serviceIdOf(run.service) !== serviceId(serviceKey)) {
    const to = run.service === 'sandbox' ? '--sandbox' : `--base-url ${run.service}`;
    throw new UsageError(
      `run ${run.run_id} was sent to ${run.service}, not to the service asked: reconcile it with ${to}`,
    );
  }
  return [run];
}

/** What a page's lookups share: the pace, the count so far, the stop. */
interface Looking {
  deps: ReconcileDeps;
  reader: PayoutReader;
  pace: Pace;
  done: number;
  total: number;
  changed: number;
}

/** Looks up a page's references; a stop gives those looked up before it. */
async function lookUp(
  refs: string[],
  l: Looking,
): Promise<{ outcomes: LookupOutcome[]; stopped: boolean }> {
  const { deps } = l;
  try {
    const outcomes = await lookupAll(l.reader, refs, {
      concurrency: deps.concurrency ?? 16,
      pace: l.pace,
      retry: DEFAULT_READ_RETRY,
      signal: deps.interrupt,
      sleep: (ms, signal) => deps.clock.sleep(ms, signal),
      now: () => deps.clock.now(),
      onRetry: (ref, n) =>
        deps.output.debug(
          `retrying the lookup of ${ref} in ${n.delayMs} ms (attempt ${n.attempt})`,
        ),
      onDone: () => {
        l.done += 1;
        deps.progress?.(l.done, l.total, l.changed);
      },
    });
    return { outcomes, stopped: false };
  } catch (error) {
    if (!(error instanceof LookupsInterrupted)) throw error;
    return { outcomes: error.done, stopped: true };
  }
}

/** The history's side of a page: where it is read and written. */
interface Store {
  read: RowReader;
  write: RowWriter;
  dialect: Dialect;
}

/** A page whose lookups have begun. */
interface Begun {
  page: ScopePayout[];
  facts: Facts;
  asked: Set<number>;
  lookups: Promise<{ outcomes: LookupOutcome[]; stopped: boolean }>;
}

/** A page decided and its lookups begun (in the pace every page shares). */
async function begin(page: ScopePayout[], store: Store, l: Looking, every: boolean) {
  const { serviceKey, sandbox, clientId } = l.deps.service;
  const held = await heldOfPage(store.read, store.dialect, serviceKey, page);
  const facts: Facts = { held, retries: [], every, ...(sandbox ? {} : { clientId }) };
  const asks = asksOf(decide(facts, 'reconcile'));
  const refs = [...new Set(asks.map((a) => a.ref))];
  const begun: Begun = {
    page,
    facts,
    asked: new Set(asks.map((a) => a.row)),
    lookups: lookUp(refs, l),
  };
  return begun;
}

/** A page's answers: decided again, each payout judged, and the answers kept. */
async function finish(b: Begun, store: Store, l: Looking) {
  const { deps } = l;
  const { outcomes, stopped } = await b.lookups;
  const answers = new Map(outcomes.map((o) => [o.reference_id, o]));
  const decision = decide(b.facts, 'reconcile', answers);
  const how = { at: new Date(deps.clock.now()).toISOString(), by: 'reconcile' as const };
  const rows: Reconciled[] = [];
  b.page.forEach((p, i) => {
    const answer = answers.get(p.payout.reference_id);
    // Stopped before its lookup: not judged, nothing said of it.
    if (b.asked.has(i) && !answer) return;
    const check =
      answer && askedRightly(p, deps.service.clientId) ? checkOf(p, answer, how) : undefined;
    rows.push(judge(p, decision.fates.get(i), answer, check));
  });
  const checks = rows.flatMap((r) => (r.check ? [r.check] : []));
  if (checks.length) await recordChecks(store.write, store.dialect, checks);
  l.changed += rows.filter((r) => r.change).length;
  return { rows, stopped };
}

/** The pages of the scope's runs, in run and row order. */
async function* pagesOf(runs: ScopeRun[], read: RowReader, every: boolean) {
  for (const run of runs) {
    for (let from = 0; ; ) {
      const page = await scopePage(read, run.id, { from, size: RECONCILE_PAGE, every });
      if (page.length) yield page;
      if (page.length < RECONCILE_PAGE) break;
      from = page[page.length - 1]!.row + 1;
    }
  }
}

/**
 * Goes through the pages, the next one's lookups begun before this one's are judged, so the
 * pace never drains at a page's end (a lookup held by a Retry-After would idle it).
 */
async function throughPages(runs: ScopeRun[], store: Store, l: Looking, every: boolean) {
  const rows: Reconciled[] = [];
  const pages = pagesOf(runs, store.read, every);
  const first = await pages.next();
  let current = first.done ? undefined : await begin(first.value, store, l, every);
  while (current) {
    const following = l.deps.interrupt.aborted ? undefined : await pages.next();
    const next =
      following && !following.done ? await begin(following.value, store, l, every) : undefined;
    const r = await finish(current, store, l);
    rows.push(...r.rows);
    if (r.stopped) {
      if (next) rows.push(...(await finish(next, store, l)).rows);
      return { rows, interrupted: true };
    }
    current = next;
  }
  return { rows, interrupted: false };
}

/** Counts the payouts of the scope, for the progress line's "of N" and time left. */
async function totalOf(runs: ScopeRun[], read: RowReader, every: boolean): Promise<number> {
  let n = 0;
  for (const run of runs) n += await scopeCount(read, run.id, every);
  return n;
}

/** Runs reconcile (see the file's comment). */
export async function reconcile(scope: Scope, deps: ReconcileDeps): Promise<ReconcileReport> {
  const every = scope.run !== undefined || scope.since !== undefined || Boolean(scope.all);
  const dialect: Dialect = deps.from.stateUrl ? 'pg' : 'sqlite';
  const limits = deps.concurrency
    ? { initial: deps.concurrency, max: deps.concurrency }
    : { initial: 4, max: 16 };
  const pace = new Pace({
    ...limits,
    clock: deps.clock,
    onChange: (limit, why) => deps.output.debug(`pace: ${limit} lookups at a time (${why})`),
  });
  const reader = checkedReader(deps.service.client);
  const done = await withRunReader(deps.from, deps.output, async (read, _keep, write) => {
    const runs = await runsOf(read, scope, deps.service.serviceKey);
    const l: Looking = { deps, reader, pace, done: 0, total: 0, changed: 0 };
    l.total = await totalOf(runs, read, every);
    const r = await throughPages(runs, { read, write, dialect }, l, every);
    return { ...r, runs, total: l.total };
  });
  return done
    ? { ...done, noHistory: false }
    : { rows: [], runs: [], total: 0, interrupted: false, noHistory: true };
}
