/**
 * Which recipients the runs of a service have paid before (docs/approvals.md: new recipients),
 * written once for both databases, as journal-sql.ts writes its lookups.
 */
import type { Dialect } from './dialect.js';

/**
 * The recipients, of those given as one JSON array, that a run of the service paid or is
 * paying (a result other than failed or canceled): parameters are the array and the service id.
 */
export function paidRecipientsSql(d: Dialect, schema?: string): string {
  const s = schema ? `${schema}.` : '';
  const paid = `SELECT 1 FROM ${s}payouts p JOIN ${s}runs r ON r.id = p.run
        JOIN ${s}results x ON x.run = p.run AND x.row = p.row
      WHERE p.recipient = j.value AND r.service_id = ? AND x.status NOT IN ('failed', 'canceled')`;
  // A probe per recipient that stops at the first payment found: PostgreSQL would otherwise
  // hash the whole history for a semi-join (LATERAL ... LIMIT 1 keeps it a probe).
  if (d === 'pg') {
    return `SELECT j.value AS recipient FROM json_array_elements_text(?::json) j
      CROSS JOIN LATERAL (${paid} LIMIT 1) hit`;
  }
  return `SELECT j.value AS recipient FROM json_each(?) j WHERE EXISTS (${paid})`;
}

/**
 * Recipients looked up a statement at a time. Large: with no index on recipient, each
 * statement reads the service's payouts once, so a run's recipients go in one statement.
 */
export const RECIPIENT_PAGE = 1_000_000;

/** `recipients` in pages of RECIPIENT_PAGE, each as a JSON array. */
export function recipientPages(recipients: Iterable<string>): string[] {
  const all = [...new Set(recipients)];
  const pages: string[] = [];
  for (let i = 0; i < all.length; i += RECIPIENT_PAGE) {
    pages.push(JSON.stringify(all.slice(i, i + RECIPIENT_PAGE)));
  }
  return pages;
}
