import type { PayoutRequest } from '../../api/types.js';
import type { Problem } from '../../errors.js';
import { InputError, OutcomeUnknownError } from '../../errors.js';
import type { PriorRow } from '../../domain/history.js';
import type { RunState } from '../../state/index.js';
import { sameHash } from '../../state/hash.js';
import { heldKind } from '../../domain/statuses.js';
import type { PayoutOutcome } from '../../domain/outcome.js';
import { partsOf, type ReadBackResult } from './readback.js';
import { addHeld, type HeldRef, tailOf } from '../../domain/chain.js';
import { runText } from './retries.js';

/** A recorded outcome, without the payout's own fields. */
export type KnownOutcome = Omit<PayoutOutcome, 'reference_id' | 'amount' | 'currency'>;

/** A payout sent before, by this run's earlier attempt or another run of the same service. */
export interface SentEarlier {
  outcome: KnownOutcome;
  currency: string;
  /** Exact decimal text. */
  amount: string;
  /** The run that sent it ('' when found at the service) and when its request went out (null when not recorded). */
  runId: string;
  at: string | null;
  /** The reference that retried it and was paid (or is pending): the run and time are that retry's. */
  retriedAs?: string;
}

/** What earlier attempts tell about a run's payouts, before anything new is sent. */
export interface PriorState {
  /** Sent before, by row: not to be sent again. */
  settled: Map<number, SentEarlier>;
  /** Possibly sent, outcome never recorded, by reference: read back before sending. */
  inFlight: Map<string, InFlight>;
  /**
   * Settled by a run under another Client-Id only, by row: read back with this run's
   * credentials before anything is decided (another key may be another account).
   */
  recheck: Map<number, Recheck>;
  /** What the history holds of each row's chain (its original, its retries), by row. */
  chains: Map<number, Map<string, HeldRef>>;
  /** Every row the history holds of the staged references and their chains (retries.ts reads them). */
  rows: readonly PriorRow[];
  /** Rows that failed and whose retry was paid or is pending: that retry, by row. */
  retried: Map<number, HeldRef>;
}

/** A payout a run under another Client-Id recorded as sent. */
export interface Recheck {
  row: number;
  payout: PayoutRequest;
  runId: string;
  clientId: string;
}

/** A payout an earlier attempt may have sent, and when its request went out at the latest. */
export interface InFlight {
  row: number;
  payout: PayoutRequest;
  /** Milliseconds since the epoch. */
  sentAt: number;
}

/** Fields of a confirmed payout, as an outcome. */
function confirmedOutcome(r: PriorRow): SentEarlier {
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
  };
}

/** The problem of a reference another run sent as a different payout. */
function conflict(r: PriorRow): Problem {
  return {
    file: `run ${r.run_id}`,
    field: 'reference_id',
    value: r.payout.reference_id,
    message:
      'was already sent to this service with a different amount, currency or recipient: give this payout a new reference_id (see `payouts runs show ' +
      `${r.run_id}\`)`,
  };
}

/** Whether a prior row was recorded under a Client-Id other than `clientId` (undefined: any). */
function foreign(r: PriorRow, clientId: string | undefined): boolean {
  return clientId !== undefined && r.client_id !== null && r.client_id !== clientId;
}

/**
 * Gathers what this run's earlier attempts and every other run of the same service know
 * about the run's references (priorRows). A reference held elsewhere with a different
 * amount, currency or recipient is an input problem: nothing is sent. With `clientId`, a
 * payout only runs under other Client-Ids settled is to be read back (`recheck`).
 */
export function priorState(rows: PriorRow[], clientId?: string): PriorState {
  const settled: PriorState['settled'] = new Map();
  const inFlight = new Map<string, InFlight>();
  const recheck = new Map<number, Recheck>();
  const conflicts: Problem[] = [];
  const chains: PriorState['chains'] = new Map();
  for (const r of rows) {
    if (r.via !== undefined) {
      const chain = chains.get(r.row) ?? new Map<string, HeldRef>();
      addHeld(chain, r, r.via);
      chains.set(r.row, chain);
      continue;
    }
    // Another key may be another account, whose payouts under our references are not ours:
    // only the service, asked with this key, can tell (whatever fields it recorded).
    if (r.state === 'done' && r.status && foreign(r, clientId)) {
      if (!settled.has(r.row)) {
        const { row, payout, run_id: runId } = r;
        recheck.set(row, { row, payout, runId, clientId: r.client_id ?? '' });
      }
      continue;
    }
    if (r.hash !== null && !sameHash(r.hash, r.hash_version, r.payout)) {
      conflicts.push(conflict(r));
      continue;
    }
    const ref = r.payout.reference_id;
    if (r.state === 'done' && r.status) {
      settled.set(r.row, confirmedOutcome(r));
      recheck.delete(r.row);
      inFlight.delete(ref);
    } else if (r.state !== 'done' && !settled.has(r.row)) {
      const sentAt = r.sent_at === null ? Number.NaN : Date.parse(r.sent_at);
      // Unreadable times cannot bound the request: read back as late as possible.
      const at = Number.isNaN(sentAt) ? Number.POSITIVE_INFINITY : sentAt;
      const prev = inFlight.get(ref);
      inFlight.set(ref, { row: r.row, payout: r.payout, sentAt: Math.max(at, prev?.sentAt ?? at) });
    }
  }
  if (conflicts.length) throw new InputError(conflicts);
  // A payout still in flight is read back after the lock in any case.
  for (const [row, r] of recheck) if (inFlight.has(r.payout.reference_id)) recheck.delete(row);
  const state = { settled, inFlight, recheck, chains, rows, retried: new Map<number, HeldRef>() };
  settleRetried(state, rows);
  return state;
}

/**
 * A payout that failed and was retried is in the state of its chain: paid (or pending) by its
 * retry, it is settled as that retry's outcome, naming it; its run and time are the retry's.
 */
function settleRetried(prior: PriorState, rows: PriorRow[]): void {
  if (!prior.chains.size) return;
  const refs = new Map(rows.map((r) => [r.row, r.payout.reference_id]));
  for (const [row, s] of prior.settled) {
    if (heldKind({ state: 'done', status: s.outcome.status }) !== 'failed') continue;
    const tail = tailOf(prior.chains.get(row), refs.get(row) ?? '');
    if (!tail || (tail.kind !== 'success' && tail.kind !== 'pending')) continue;
    prior.retried.set(row, tail);
    const how = tail.kind === 'success' ? 'paid by' : 'pending as';
    prior.settled.set(row, {
      outcome: {
        status: tail.status ?? tail.kind,
        ...(tail.transactionId ? { transaction_id: tail.transactionId } : {}),
        message: `${s.outcome.status} earlier; retried: ${how} ${tail.ref} in ${runText(tail)}`,
      },
      currency: s.currency,
      amount: s.amount,
      runId: tail.runId,
      at: tail.at,
      retriedAs: tail.ref,
    });
  }
}

/** Applies a read-back of in-flight payouts to the prior state and the run's state. */
export function applyReadBack(prior: PriorState, r: ReadBackResult, state: RunState): void {
  const parts = partsOf([...prior.inFlight.values()], r);
  const found = parts.settled.map(({ item, result }) => ({
    ref: item.payout.reference_id,
    ...result,
  }));
  const notFound = parts.notFound.map((i) => i.payout.reference_id);
  const unknown = parts.unknown.map(([i]) => i.payout.reference_id);
  if (found.length) state.recordOutcome(-1, found);
  for (const { ref, ...outcome } of found) {
    const item = prior.inFlight.get(ref);
    if (item) {
      const { currency, amount } = item.payout;
      prior.settled.set(item.row, { outcome, currency, amount, runId: state.runId, at: null });
    }
    prior.inFlight.delete(ref);
  }
  if (notFound.length) state.recordNotApplied(-1, notFound, 'not found when read back');
  for (const ref of notFound) prior.inFlight.delete(ref);
  if (unknown.length) {
    state.recordUnknown(unknown, 'could not be read back');
    throw (
      r.fatal ??
      new OutcomeUnknownError(
        `${unknown.length} payout${unknown.length === 1 ? '' : 's'} of an earlier attempt may have been sent, and could not be read back from the service; nothing new was sent: run the same command again when the service answers`,
        unknown,
      )
    );
  }
}
