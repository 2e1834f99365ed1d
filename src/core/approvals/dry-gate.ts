/**
 * A dry run's approval check: its staged rows keep no descriptions, so the content hash
 * cannot be computed; the prepared run holding the same references, amounts, currencies
 * and recipients stands for it (the send itself checks the hash).
 */
import type { PayoutRequest } from '../../api/types.js';
import { listPrepared, type PreparedRun, preparedPayouts } from '../../state/pg/approvals.js';
import type { PgHistory } from '../../state/pg/history.js';
import { preparedHoldingAll } from '../../state/pg/prepared-views.js';
import { serviceId } from '../../state/hash.js';

/** The newest prepared run of the service holding exactly these payouts but for descriptions. */
export async function looseMatch(
  h: PgHistory,
  serviceKey: string,
  payouts: Array<{ payout: PayoutRequest }>,
): Promise<PreparedRun | undefined> {
  const mine = new Map(payouts.map(({ payout: p }) => [p.reference_id, p]));
  if (mine.size !== payouts.length || !mine.size) return undefined;
  const ids = await preparedHoldingAll(h, serviceId(serviceKey), [...mine.keys()]);
  for (const id of ids) {
    const theirs = await preparedPayouts(h, id);
    const same =
      theirs.length === mine.size &&
      theirs.every((t) => {
        const p = mine.get(t.reference_id);
        return p?.amount === t.amount && p.currency === t.currency && p.recipient === t.recipient;
      });
    if (same) return (await listPrepared(h)).find((p) => p.id === id);
  }
  return undefined;
}
