/**
 * A payout's chain: its original reference and every reference that retries it (a retry
 * file's row, sent under its new_reference_id, retries the reference_id of its row). The
 * payout's state is its chain's: failed, then retried and paid, is paid by the retry.
 */
import { type HeldKind, heldKind, type StatusKind, statusKind } from './statuses.js';

/** A journal row of a reference of a chain, as the history's lookups give it. */
export interface HeldRow {
  /** The reference it retries (null or absent: an original). */
  retry_of?: string | null;
  run_id: string;
  state: string;
  sent_at: string | null;
  status: string | null;
  transaction_id: string | null;
  /** The charges the service stated (null or absent: none recorded). */
  charges?: string | null;
  message: string | null;
}

/** What the history last says of one reference of a chain. */
export interface HeldRef {
  ref: string;
  /** The reference it retries (null: an original). */
  retryOf: string | null;
  runId: string;
  /** As heldKind classifies its row: failed covers canceled; doubt is in flight or unknown. */
  kind: HeldKind;
  status: string | null;
  transactionId: string | null;
  /** The charges the service stated for it (null: none recorded). */
  charges: string | null;
  message: string | null;
  at: string | null;
}

/** Links followed along a chain at most: a payout is retried by hand a few times; the bound keeps lookups cheap. */
export const CHAIN_LINKS = 8;

/** A held row as a HeldRef of reference `ref`. */
export function heldRef(r: HeldRow, ref: string): HeldRef {
  return {
    ref,
    retryOf: r.retry_of ?? null,
    runId: r.run_id,
    kind: heldKind(r),
    status: r.status,
    transactionId: r.transaction_id,
    charges: r.charges ?? null,
    message: r.message,
    at: r.sent_at,
  };
}

/** Adds a held row to a chain: a result beats a row in doubt, a later run an earlier one. */
export function addHeld(chain: Map<string, HeldRef>, r: HeldRow, ref: string): void {
  const had = chain.get(ref);
  if (had && had.kind !== 'doubt' && r.state !== 'done') return;
  chain.set(ref, heldRef(r, ref));
}

/** How good a retry's state is, to follow the best of several (older histories may hold two). */
const RANK: Record<HeldRef['kind'], number> = { success: 0, pending: 1, doubt: 2, failed: 3 };

/** The references of a chain that retry `ref`, best first; `except` left out. */
export function retriesOf(chain: Map<string, HeldRef>, ref: string, except?: string): HeldRef[] {
  return [...chain.values()]
    .filter((h) => h.retryOf === ref && h.ref !== except)
    .sort((a, b) => RANK[a.kind] - RANK[b.kind]);
}

/** The last retry along the chain from `ref` (undefined: `ref` was never retried). */
export function tailOf(chain: Map<string, HeldRef> | undefined, ref: string): HeldRef | undefined {
  if (!chain) return undefined;
  let tail: HeldRef | undefined;
  let at = ref;
  const seen = new Set([ref]);
  for (let i = 0; i < CHAIN_LINKS; i++) {
    const next = retriesOf(chain, at)[0];
    if (!next || seen.has(next.ref)) break;
    seen.add(next.ref);
    tail = next;
    at = next.ref;
  }
  return tail;
}

/**
 * A payout's state by the one rule for a failed payout that a retry took on
 * (docs/history.md#retries): its reference failed or was canceled at the service, and the last
 * retry of its chain succeeded: the payout is paid, by that retry (`paid_by_retry`); is pending
 * (or holds a status the interface does not name): the payout is pending as that retry
 * (`pending_by_retry`). Anything else (never retried; the retry failed too, or is in doubt):
 * undefined, and its own status stands.
 */
export type ByRetry = 'paid_by_retry' | 'pending_by_retry';

/**
 * The one rule (see ByRetry), for every reader: `send`, `status`, `runs`, `runs show` and
 * `reconcile`. `status` is the reference's own (the service's word, or the history's record of
 * it); `retry` the last retry of its chain, as tailOf finds it, its kind from the history or,
 * where the service was asked, from its answer (`heldKind` of the status it holds).
 */
export function byRetry(
  status: string | null | undefined,
  retry: Pick<HeldRef, 'kind'> | undefined,
): ByRetry | undefined {
  if (!retry || !status || heldKind({ state: 'done', status }) !== 'failed') return undefined;
  if (retry.kind === 'success') return 'paid_by_retry';
  return retry.kind === 'pending' ? 'pending_by_retry' : undefined;
}

/**
 * What a payout counts as, for counts and exit codes (statusKind's kinds), by the one rule: paid
 * by its retry, success; pending as its retry, pending; else its own status's kind.
 */
export function chainKind(status: string, retry: Pick<HeldRef, 'kind'> | undefined): StatusKind {
  const by = byRetry(status, retry);
  if (by === 'paid_by_retry') return 'success';
  return by === 'pending_by_retry' ? 'pending' : statusKind(status);
}
