/**
 * A run's counts by the one rule for a failed payout that its retry paid (src/domain/chain.ts,
 * byRetry): of its failed and canceled payouts, those a retry paid count as succeeded
 * (`paid_by_retry` says how many), those whose retry is pending as pending. What the run's own
 * rows say is kept in run_counts (run-counts.ts); a retry, made in another run, is read at each
 * listing, and only for a run that has failed or canceled payouts: their rows, through the
 * run's key (as many as its counts say), and their chains' links (retry-links.ts).
 */
import { byRetry, type HeldRef, tailOf } from '../domain/chain.js';
import { heldKind } from '../domain/statuses.js';
import { retryLinks } from './retry-links.js';
import type { RowReader } from './run-counts.js';

/** The counts the rule moves a payout between. */
export interface RuleCounts {
  success: number;
  failed: number;
  canceled: number;
  pending: number;
}

/** A failed or canceled payout of a run, with the last retry of its chain when one took it on. */
export interface FailedPayout {
  status: string;
  retried?: HeldRef;
}

/** `counts` with each failed or canceled payout counted by its chain, and paid_by_retry. */
export function countByRetry<C extends RuleCounts>(
  counts: C,
  failed: Iterable<FailedPayout>,
): C & { paid_by_retry: number } {
  const c = { ...counts, paid_by_retry: 0 };
  for (const p of failed) {
    const by = byRetry(p.status, p.retried);
    if (!by) continue;
    if (p.status.toLowerCase() === 'canceled') c.canceled -= 1;
    else c.failed -= 1;
    if (by === 'pending_by_retry') c.pending += 1;
    else {
      c.success += 1;
      c.paid_by_retry += 1;
    }
  }
  return c;
}

/**
 * A run's failed and canceled payouts by their latest word (the view `journal`, as the run's
 * counts read them), at most `n` (its counts say how many there are).
 */
const FAILED_ROWS = `SELECT j.reference_id, j.status FROM journal j
  WHERE j.run = ? AND j.state = 'done' AND lower(j.status) IN ('failed', 'canceled')
  ORDER BY j.row LIMIT ?`;

/** The failed and canceled payouts of a run (its key, its service), with their retries. */
export async function failedOfRun(
  read: RowReader,
  run: { id: number; service: string; failed: number; canceled: number },
): Promise<FailedPayout[]> {
  const n = run.failed + run.canceled;
  if (n <= 0) return [];
  const rows = (await read(FAILED_ROWS, [run.id, n])) as Array<{
    reference_id: string;
    status: string;
  }>;
  const links = await retryLinks(
    read,
    run.service,
    rows.map((r) => r.reference_id),
  );
  return rows.map((r) => {
    const tail = tailOf(links, r.reference_id);
    return { status: r.status, ...(tail ? { retried: tail } : {}) };
  });
}

/** A payout of a run as `runs show` reads it: its reference, its state, and its last retry. */
interface ShownPayout {
  reference_id: string;
  state: { state: string; status?: string };
  retried?: HeldRef;
}

/**
 * Names the last retry of each failed or canceled payout of a run (`retried`, through the
 * chains' indexed links) and returns the run's counts by the one rule.
 */
export async function markRetries<C extends RuleCounts>(
  read: RowReader,
  service: string,
  payouts: ShownPayout[],
  counts: C,
): Promise<C & { paid_by_retry: number }> {
  const failed = payouts.filter(
    (p) =>
      p.state.state === 'confirmed' &&
      heldKind({ state: 'done', status: p.state.status ?? null }) === 'failed',
  );
  if (!failed.length) return countByRetry(counts, []);
  const links = await retryLinks(
    read,
    service,
    failed.map((p) => p.reference_id),
  );
  for (const p of failed) {
    const tail = tailOf(links, p.reference_id);
    if (tail) p.retried = tail;
  }
  return countByRetry(
    counts,
    failed.map((p) => ({
      status: p.state.status ?? '',
      ...(p.retried ? { retried: p.retried } : {}),
    })),
  );
}
