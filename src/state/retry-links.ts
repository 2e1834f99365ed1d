/**
 * The retries a history holds of given references, for what speaks of a payout after its run
 * (`runs show`, `status`): the links of each chain, followed a bounded number of times, each
 * lookup a probe of `payouts_retry_of` per reference (src/domain/chain.ts reads them).
 */
import { addHeld, CHAIN_LINKS, type HeldRef, type HeldRow } from '../domain/chain.js';
import { serviceIdOf } from './hash.js';

/** References looked up per query. */
const PER_QUERY = 500;

/** The journal rows of the references that retry any of `n` references (portable SQL). */
function linksSql(n: number): string {
  return `SELECT p.reference_id, p.retry_of, r.run_id, j.state, j.sent_at, j.status,
      j.transaction_id, j.charges, j.message
    FROM payouts p JOIN runs r ON r.id = p.run JOIN journal j ON j.run = p.run AND j.row = p.row
    WHERE p.retry_of IN (${new Array(n).fill('?').join(', ')}) AND r.service_id = ?
      AND r.run_id IS NOT NULL AND j.state IN ('in_flight', 'done', 'unknown')
    ORDER BY p.run`;
}

/**
 * Every retry the runs of `service` (a base URL, or "sandbox") hold along the chains that
 * start at `refs`, by reference: `tailOf(links, ref)` is where a payout's chain ends.
 */
export async function retryLinks(
  read: (sql: string, params: unknown[]) => Promise<unknown[]>,
  service: string,
  refs: readonly string[],
): Promise<Map<string, HeldRef>> {
  const links = new Map<string, HeldRef>();
  let frontier = [...new Set(refs)];
  const seen = new Set(frontier);
  const id = serviceIdOf(service);
  for (let step = 0; step < CHAIN_LINKS && frontier.length; step++) {
    const next: string[] = [];
    for (let k = 0; k < frontier.length; k += PER_QUERY) {
      const part = frontier.slice(k, k + PER_QUERY);
      const rows = (await read(linksSql(part.length), [...part, id])) as Array<
        HeldRow & { reference_id: string }
      >;
      for (const r of rows) {
        addHeld(links, r, r.reference_id);
        if (!seen.has(r.reference_id)) {
          seen.add(r.reference_id);
          next.push(r.reference_id);
        }
      }
    }
    frontier = next;
  }
  return links;
}

/**
 * The service's reason for each of `refs` that failed or was canceled, as the history
 * recorded it from the create answer (the payout record a lookup gives has none).
 */
export async function failureReasons(
  read: (sql: string, params: unknown[]) => Promise<unknown[]>,
  service: string,
  refs: readonly string[],
): Promise<Map<string, string>> {
  const reasons = new Map<string, string>();
  const id = serviceIdOf(service);
  for (let k = 0; k < refs.length; k += PER_QUERY) {
    const part = refs.slice(k, k + PER_QUERY);
    const rows = (await read(
      `SELECT j.reference_id, j.message FROM journal j JOIN runs r ON r.id = j.run
       WHERE j.reference_id IN (${part.map(() => '?').join(', ')}) AND r.service_id = ?
         AND lower(j.status) IN ('failed', 'canceled') AND j.message IS NOT NULL
       ORDER BY j.run`,
      [...part, id],
    )) as Array<{ reference_id: string; message: string }>;
    for (const r of rows) reasons.set(r.reference_id, r.message);
  }
  return reasons;
}

/**
 * Of `refs`, those some run of `service` sent (a result, or in doubt), as a send's decision
 * holds them: one this history never sent may have been sent, and retried, from a machine
 * whose history this is not.
 */
export async function heldAmong(
  read: (sql: string, params: unknown[]) => Promise<unknown[]>,
  service: string,
  refs: readonly string[],
): Promise<Set<string>> {
  const held = new Set<string>();
  const id = serviceIdOf(service);
  for (let k = 0; k < refs.length; k += PER_QUERY) {
    const part = refs.slice(k, k + PER_QUERY);
    const rows = (await read(
      `SELECT DISTINCT j.reference_id FROM journal j JOIN runs r ON r.id = j.run
       WHERE j.reference_id IN (${part.map(() => '?').join(', ')}) AND r.service_id = ?
         AND r.run_id IS NOT NULL AND j.state IN ('in_flight', 'done', 'unknown')`,
      [...part, id],
    )) as Array<{ reference_id: string }>;
    for (const r of rows) held.add(r.reference_id);
  }
  return held;
}
