/** The hashes an approval binds (docs/approvals.md): each payout's, and the whole run's. */
import { hash } from 'node:crypto';
import { type PayoutIdentity, payoutHash } from './hash.js';

/**
 * A payout's hash for approvals: its identity (payoutHash), its description and, for a retry,
 * the reference it retries (that original's chain is part of what moves). A payout that
 * retries nothing hashes as before retries were bound.
 */
export function approvalHash(
  p: PayoutIdentity & { description?: string | null; retry_of?: string | null },
): string {
  const parts = [payoutHash(p), p.description ?? null];
  if (p.retry_of) parts.push(p.retry_of);
  return hash('sha256', JSON.stringify(parts), 'hex');
}

/** What an approval binds beside the payouts: where they go and what rides with them. */
export interface Bound {
  /** The service's identity (serviceIdentity()). */
  service: string;
  batch_reference: string | null;
  webhook_url: string | null;
}

/**
 * The content hash of a run: SHA-256 of each payout's reference and approval hash, in
 * reference order (so the same payouts match however a file orders or formats them), and of
 * the service, batch reference and webhook URL they are sent with.
 */
export function contentHash(
  payouts: Array<{ reference_id: string; hash: string }>,
  bound: Bound,
): string {
  const lines = payouts.map((p) => JSON.stringify([p.reference_id, p.hash])).sort();
  const head = JSON.stringify(['v2', bound.service, bound.batch_reference, bound.webhook_url]);
  return hash('sha256', [head, ...lines].join('\n'), 'hex');
}
