/**
 * One decision per payout (docs/history.md): what a run does with each of its staged rows,
 * from what the history holds of their references and chains, what the service answered so
 * far, and the mode. Pure: the history's rows and the service's answers are given, and the
 * lookups it asks for are made by facts.ts, which decides again with their answers. What
 * differs between modes is MODES; the words of every refusal are in refusals.ts; the totals,
 * --max-total and "nothing to send" are folds over the fates (fates.ts).
 */
import type { PayoutRequest } from '../../api/types.js';
import { addHeld, byRetry, type HeldRef, heldRef, retriesOf, tailOf } from '../../domain/chain.js';
import type { PriorRow } from '../../domain/history.js';
import { heldKind, isCanceled } from '../../domain/statuses.js';
import { sameHash } from '../../state/hash.js';
import type { StagedRetry } from '../../state/index.js';
import {
  type Answers,
  type Ask,
  type Decision,
  type Facts,
  type Fate,
  failed,
  type InFlight,
  type LookupWhy,
  type Origin,
  REFUSALS,
  REFUSED_ORIGINS,
  type Refusal,
  type RefusalKind,
  type RetryProblem,
} from './fates.js';
import { earlierOfHeld, foundAs, fromRecord, readBackOf } from './readback.js';
import { runText } from './refusals.js';

/** Who decides: a dry run, --prepare, a send (and a dry run with --check-service), the approver's screen, reconcile. */
export type Mode = 'dry-run' | 'prepare' | 'send' | 'screen' | 'reconcile';

/** What a mode does: what it asks the service, and which refusals stop the run. */
export interface ModeRules {
  /** Looked up before the question; a reason not listed is decided as the history says. */
  asks: readonly LookupWhy[];
  /** These stop the run (nothing sent); any other refusal is told, its row not sent. */
  stops: readonly RefusalKind[];
}

/** What differs between the modes: the one table. */
export const MODES: Record<Mode, ModeRules> = {
  // The summary without a service: failed-earlier rows are told ("Failed earlier:"); what the
  // history alone refuses (a retry whose original it never sent too) stops it as a send.
  'dry-run': { asks: [], stops: ['held-other', 'retry', 'original-elsewhere'] },
  // Checked as a send is, from the history alone: the send that follows asks the service.
  prepare: { asks: [], stops: REFUSALS },
  // A send; a dry run with --check-service decides so too, and says what the send will do.
  send: { asks: ['other-client', 'not-in-history', 'original'], stops: REFUSALS },
  // The approver's screen: the history alone, every refusal told on its row.
  screen: { asks: [], stops: [] },
  // Every payout followed to its final state: what is not final is asked, nothing refused.
  reconcile: { asks: ['other-client', 'not-final'], stops: [] },
};

const NO_ANSWERS: Answers = new Map();

/** Decides each staged row's fate (see the file's comment). */
export function decide(facts: Facts, mode: Mode, answers: Answers = NO_ANSWERS): Decision {
  const rules = MODES[mode];
  const asks = new Set(rules.asks);
  const held = sortHeld(facts.held);
  for (const s of facts.staged ?? [])
    if (!held.payouts.has(s.row)) held.payouts.set(s.row, s.payout);
  const fates = new Map<number, Fate>();
  const clientId = asks.has('other-client') ? facts.clientId : undefined;
  for (const [row, rows] of held.own) {
    const fate = ownFate(rows, clientId, facts.live);
    if (fate) fates.set(row, fate);
  }
  settleRetried(fates, held);
  const ctx: Judging = { facts, asks, answers, fates };
  if (asks.has('not-in-history')) for (const s of facts.staged ?? []) askUnknown(ctx, s);
  for (const [row, fate] of fates) fates.set(row, answered(ctx, fate));
  refuseFailedEarlier(fates, held, facts.runId);
  const { origins, elsewhere } = judgeRetries(ctx, held);
  if (asks.has('not-final')) {
    for (const [row, fate] of fates)
      fates.set(row, notFinal(ctx, row, fate, held.payouts.get(row)!));
  }
  return { fates, origins, stops: rules.stops, elsewhere };
}

/** The held rows of the staged references, by row, and each row's chain. */
interface Held {
  own: Map<number, PriorRow[]>;
  /** Each row's payout, as the staged rows hold it. */
  payouts: Map<number, PayoutRequest>;
  chains: Map<number, Map<string, HeldRef>>;
}

function sortHeld(rows: readonly PriorRow[]): Held {
  const held: Held = { own: new Map(), payouts: new Map(), chains: new Map() };
  for (const r of rows) {
    held.payouts.set(r.row, r.payout);
    if (r.via === undefined) {
      held.own.set(r.row, [...(held.own.get(r.row) ?? []), r]);
      continue;
    }
    const chain = held.chains.get(r.row) ?? new Map<string, HeldRef>();
    addHeld(chain, r, r.via);
    held.chains.set(r.row, chain);
  }
  return held;
}

/** What a decision's steps share. */
interface Judging {
  facts: Facts;
  asks: ReadonlySet<LookupWhy>;
  answers: Answers;
  fates: Map<number, Fate>;
}

/**
 * A row's fate from what the history holds of its own reference: sent earlier, in flight, held
 * as another payout, or recorded only under another Client-Id (looked up with this run's).
 */
function ownFate(
  rows: PriorRow[],
  clientId: string | undefined,
  live: ReadonlySet<string> | undefined,
): Fate | undefined {
  let settled: PriorRow | undefined;
  let recheck: PriorRow | undefined;
  let inFlight: InFlight | undefined;
  let deciding: string | undefined;
  const conflicts: PriorRow[] = [];
  for (const r of rows) {
    const result = r.state === 'done' && Boolean(r.status);
    // Another key may be another account, whose payouts under our references are not ours:
    // only the service, asked with this key, can tell (whatever fields it recorded).
    if (result && foreign(r, clientId)) {
      if (!settled) recheck = r;
    } else if (r.hash !== null && !sameHash(r.hash, r.hash_version, r.payout)) conflicts.push(r);
    else if (result) {
      settled = r;
      recheck = inFlight = deciding = undefined;
    } else if (r.state !== 'done' && !settled) {
      inFlight = inFlightOf(r, inFlight);
      if (live?.has(r.run_id)) deciding = r.run_id;
    }
  }
  if (conflicts.length)
    return { kind: 'refused', refusal: { kind: 'held-other', held: conflicts } };
  if (settled) return { kind: 'sent-earlier', earlier: earlierOfHeld(settled), how: 'history' };
  // A payout still in flight is read back after the lock in any case.
  if (inFlight) return { kind: 'read-back', inFlight, ...(deciding ? { deciding } : {}) };
  if (!recheck) return undefined;
  const recordedBy = { runId: recheck.run_id, clientId: recheck.client_id ?? '' };
  const ask: Ask = {
    row: recheck.row,
    ref: recheck.payout.reference_id,
    why: 'other-client',
    payout: recheck.payout,
    recordedBy,
  };
  return { kind: 'look-up', asks: [ask] };
}

/** Whether a held row was recorded under a Client-Id other than `clientId` (undefined: any). */
function foreign(r: PriorRow, clientId: string | undefined): boolean {
  return clientId !== undefined && r.client_id !== null && r.client_id !== clientId;
}

/** An in-flight row, its request's time the latest of those that may carry it. */
function inFlightOf(r: PriorRow, had: InFlight | undefined): InFlight {
  const sentAt = r.sent_at === null ? Number.NaN : Date.parse(r.sent_at);
  // Unreadable times cannot bound the request: read back as late as possible.
  const at = Number.isNaN(sentAt) ? Number.POSITIVE_INFINITY : sentAt;
  return { row: r.row, payout: r.payout, sentAt: Math.max(at, had?.sentAt ?? at) };
}

/**
 * A payout that failed and was retried is in the state of its chain (byRetry): paid (or
 * pending) by its retry, it is sent earlier with its own status, the retry named beside it
 * (`retried_as`), and counts as the retry's state; its run and time are the retry's.
 */
function settleRetried(fates: Map<number, Fate>, held: Held): void {
  for (const [row, fate] of fates) {
    if (fate.kind !== 'sent-earlier' || !failed(fate.earlier)) continue;
    const s = fate.earlier;
    const tail = tailOf(held.chains.get(row), held.payouts.get(row)?.reference_id ?? '');
    const by = byRetry(s.outcome.status, tail);
    if (!tail || !by) continue;
    const how = by === 'paid_by_retry' ? 'paid by' : 'pending as';
    // Its own status and transaction; its charges are its paying retry's (what the payout cost).
    const { charges: _charges, ...own } = s.outcome;
    const retried = { reference_id: tail.ref, run_id: tail.runId, status: tail.status ?? '' };
    const outcome = {
      ...own,
      ...(tail.charges !== null ? { charges: Number(tail.charges) } : {}),
      message: `${s.outcome.status} earlier; retried: ${how} ${tail.ref} in ${runText(tail)}`,
      retried_as: retried,
    };
    const earlier = { ...s, outcome, runId: tail.runId, at: tail.at };
    fates.set(row, { kind: 'sent-earlier', earlier, how: 'retried' });
  }
}

/** With --check-service, a payout the history knows nothing of is asked of the service. */
function askUnknown(ctx: Judging, s: { row: number; payout: PayoutRequest }): void {
  if (ctx.fates.has(s.row)) return;
  const ask: Ask = {
    row: s.row,
    ref: s.payout.reference_id,
    why: 'not-in-history',
    payout: s.payout,
  };
  ctx.fates.set(s.row, { kind: 'look-up', asks: [ask] });
}

/**
 * A payout looked up, once the service answered: found with the same amount, currency and
 * recipient, it was sent earlier; not found, it is sent; another payout, or no answer, refused.
 */
function answered(ctx: Judging, fate: Fate): Fate {
  if (fate.kind !== 'look-up') return fate;
  const [ask] = fate.asks;
  const answer = ask && ctx.answers.get(ask.ref);
  if (!ask?.payout || !answer) return fate;
  const o = readBackOf(ask.payout, answer);
  if (o.kind === 'found') {
    const by = ask.recordedBy;
    const outcome = { ...fromRecord(o.record), ...(by ? {} : { found_at_service: true }) };
    return {
      kind: 'sent-earlier',
      earlier: foundAs(ask.payout, outcome, by?.runId),
      how: 'service',
    };
  }
  if (o.kind === 'not-found') return { kind: 'send' };
  const kind = o.kind === 'other-payout' ? 'other-payout' : 'unanswered';
  return { kind: 'refused', refusal: { kind, ask, why: o.why } };
}

/**
 * A payout that failed or was canceled at the service in another run (or was found so) is
 * refused: sent again under the same reference it would only be answered as a duplicate. This
 * run's own earlier attempt is a resume, whose failed payouts are its results.
 */
function refuseFailedEarlier(
  fates: Map<number, Fate>,
  held: Held,
  runId: string | undefined,
): void {
  for (const [row, fate] of fates) {
    if (fate.kind !== 'sent-earlier' || fate.how === 'retried') continue;
    const { earlier } = fate;
    if (earlier.runId === runId || !failed(earlier)) continue;
    // Retried already (the retry failed too, or is in doubt): the chain's last link is told.
    const ref = held.payouts.get(row)?.reference_id ?? '';
    const tail = tailOf(held.chains.get(row), ref);
    const refusal = { row, ref, earlier, ...(tail ? { tail } : {}) };
    fates.set(row, { kind: 'refused', refusal: { kind: 'failed-earlier', ...refusal } });
  }
}

/**
 * Reconcile: a payout held pending, or in doubt, is asked of the service (with `every`, any
 * payout held); its answer is kept. A failed payout still failed stays as its chain has it.
 */
function notFinal(ctx: Judging, row: number, fate: Fate, payout: PayoutRequest): Fate {
  const held =
    fate.kind === 'sent-earlier' ||
    (fate.kind === 'refused' && fate.refusal.kind === 'failed-earlier');
  const open =
    (fate.kind === 'sent-earlier' &&
      heldKind({ state: 'done', status: fate.earlier.outcome.status }) === 'pending') ||
    fate.kind === 'read-back' ||
    (ctx.facts.every === true && held);
  if (!open) return fate;
  const ask: Ask = { row, ref: payout.reference_id, why: 'not-final', payout };
  const answer = ctx.answers.get(ask.ref);
  if (!answer)
    return {
      kind: 'look-up',
      asks: [ask],
      ...(fate.kind === 'read-back' ? { inFlight: fate.inFlight } : {}),
    };
  const o = readBackOf(payout, answer);
  if (o.kind !== 'found') return fate;
  const earlier = foundAs(payout, fromRecord(o.record));
  const chained =
    fate.kind === 'refused' || (fate.kind === 'sent-earlier' && fate.how === 'retried');
  if (chained && failed(earlier)) return fate;
  return { kind: 'sent-earlier', earlier, how: 'service' };
}

/**
 * Judges each retry row (see retries in docs/history.md): refused when two rows would pay one
 * payout, its new reference is another payout's, or its original was paid, may have been, or
 * was already retried; else it goes only on the service's word that its original failed.
 */
function judgeRetries(ctx: Judging, held: Held) {
  const origins = new Map<number, Origin>();
  const elsewhere: StagedRetry[] = [];
  const first = new Map<string, StagedRetry>();
  for (const r of ctx.facts.retries) {
    const origin = originOf(r, held);
    origins.set(r.row, origin);
    const twin = first.get(r.retry_of);
    if (!twin) first.set(r.retry_of, r);
    const problem = retryProblem(r, origin, twin);
    const had = ctx.fates.get(r.row);
    if (had?.kind === 'refused' && had.refusal.kind === 'held-other') continue;
    // An original this history never sent: a retry of it sent elsewhere cannot be seen here.
    const unseen =
      origin.state === 'not_in_history' && had?.kind !== 'sent-earlier' && had?.kind !== 'refused';
    const refusal: Refusal | undefined = problem
      ? { kind: 'retry', retry: r, problem, origin, ...(twin ? { twin } : {}) }
      : unseen && !ctx.facts.originalElsewhere
        ? { kind: 'original-elsewhere', retry: r }
        : undefined;
    if (refusal) ctx.fates.set(r.row, { kind: 'refused', refusal });
    else {
      if (unseen) elsewhere.push(r);
      prove(ctx, r, origin);
    }
  }
  return { origins, elsewhere };
}

/** What a retry row does wrong, if anything, in the order a row is told it. */
function retryProblem(
  r: StagedRetry,
  origin: Origin,
  twin: StagedRetry | undefined,
): RetryProblem | undefined {
  if (r.alsoSent !== undefined) return 'also-sent';
  if (origin.state === 'reference_used') return 'reference-used';
  if (twin) return 'twin';
  return REFUSED_ORIGINS.has(origin.state) ? 'origin' : undefined;
}

/** Where the original a retry row retries stands in the history (and its own reference). */
function originOf(r: StagedRetry, held: Held): Origin {
  const usedBy = (held.own.get(r.row) ?? [])
    .map((h) => heldRef(h, h.payout.reference_id))
    .find((h) => h.retryOf !== r.retry_of);
  if (usedBy) return { state: 'reference_used', usedBy };
  const chain = held.chains.get(r.row);
  const link = chain?.get(r.retry_of);
  if (!chain || !link) return { state: 'not_in_history' };
  if (link.kind === 'success') return { state: 'paid', link };
  if (link.kind === 'pending') return { state: 'pending', link };
  if (link.kind === 'doubt') return { state: 'in_doubt', link };
  const first = retriesOf(chain, r.retry_of, r.reference_id)[0];
  if (first) return { state: 'retried', link, first, tail: tailOf(chain, first.ref) ?? first };
  return { state: isCanceled(link.status) ? 'canceled' : 'failed', link };
}

/**
 * A retry row to send (or read back) goes only on the service's word that its original failed
 * or was canceled: asked where the mode asks, else left unasked (a dry run says so).
 */
function prove(ctx: Judging, r: StagedRetry, origin: Origin): void {
  const fate = ctx.fates.get(r.row) ?? { kind: 'send' };
  if (fate.kind === 'sent-earlier' || fate.kind === 'refused') return;
  const inFlight =
    fate.kind === 'read-back' ? fate.inFlight : fate.kind === 'look-up' ? fate.inFlight : undefined;
  if (!ctx.asks.has('original')) {
    if (fate.kind === 'read-back' || fate.kind === 'send')
      ctx.fates.set(r.row, { ...fate, unasked: r.retry_of });
    return;
  }
  const answer = ctx.answers.get(r.retry_of);
  if (!answer || fate.kind === 'look-up') {
    const ask: Ask = { row: r.row, ref: r.retry_of, why: 'original' };
    const asks = fate.kind === 'look-up' ? [...fate.asks, ask] : [ask];
    ctx.fates.set(r.row, { kind: 'look-up', asks, ...(inFlight ? { inFlight } : {}) });
    return;
  }
  if (answer.kind === 'error') {
    ctx.fates.set(r.row, {
      kind: 'refused',
      refusal: { kind: 'unproved', retry: r, why: answer.error.message },
    });
    return;
  }
  if (answer.kind === 'found' && ['failed', 'canceled'].includes(answer.record.status)) return;
  const refusal: Refusal = {
    kind: 'not-proved',
    retry: r,
    answer,
    ...(origin.link ? { link: origin.link } : {}),
  };
  ctx.fates.set(r.row, { kind: 'refused', refusal });
}
