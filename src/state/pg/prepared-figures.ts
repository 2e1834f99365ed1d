/**
 * A prepared run's figures computed from its payouts, apart from what its row claims: an
 * approver and a send trust only what the payouts themselves make.
 */
import type pg from 'pg';
import { serviceIdentity } from '../../api/base-url.js';
import { approvalHash, contentHash } from '../approval-hash.js';
import { canonicalDecimal } from '../hash.js';
import type { PreparedPayout, PreparedRun } from './approvals.js';
import type { PgHistory } from './history.js';

/** A prepared run's figures as its payouts make them, whatever its own row says. */
export interface PreparedFigures {
  /** Its payouts, in row order, each hash made again from the row's columns. */
  payouts: PreparedPayout[];
  payout_count: number;
  /** Per currency: count and exact decimal total. */
  totals: PreparedRun['totals'];
  /** Of the payouts, the service, the batch reference and the webhook URL (contentHash). */
  content_hash: string;
  service: string;
  batch_reference: string | null;
  webhook_url: string | null;
  /** Where the prepared run's row says otherwise, what it says: empty when it is true. */
  claims: string[];
}

/**
 * The figures of a prepared run computed from its payouts (`prepared_payouts`): what an
 * approver is shown and a send compared with, never the preparer's own count, totals or hash.
 */
export function preparedFigures(h: PgHistory, p: PreparedRun): Promise<PreparedFigures> {
  return h.read('reading a prepared run', async (c: pg.Client) => {
    const rows = await c.query<PreparedPayout>(
      `SELECT row, reference_id, amount, currency, recipient, description, hash, retry_of
       FROM prepared_payouts WHERE prep = $1 ORDER BY row`,
      [p.id],
    );
    // Exact decimal sums; a text that is not a plain decimal is counted apart, never summed.
    const sums = await c.query<{ currency: string; count: number; total: string | null }>(
      `SELECT currency, count(*)::int AS count,
         CASE WHEN bool_and(amount ~ '^[0-9]+(\\.[0-9]+)?$')
           THEN sum(CASE WHEN amount ~ '^[0-9]+(\\.[0-9]+)?$' THEN amount::numeric END)::text END AS total
       FROM prepared_payouts WHERE prep = $1 GROUP BY currency ORDER BY currency`,
      [p.id],
    );
    const payouts = rows.rows.map((x) => ({ ...x, hash: approvalHash(x) }));
    const totals: PreparedRun['totals'] = {};
    for (const t of sums.rows)
      totals[t.currency] = { count: t.count, total: t.total ?? 'not a decimal' };
    const bound = {
      service: serviceIdentity(p.service),
      batch_reference: p.batch_reference,
      webhook_url: p.webhook_url,
    };
    const f = {
      payouts,
      payout_count: payouts.length,
      totals,
      content_hash: contentHash(payouts, bound),
      ...bound,
    };
    const claims = claimsOf(p, f);
    if (rows.rows.some((x, i) => x.hash !== payouts[i]!.hash))
      claims.push('payout hashes its rows do not make');
    return { ...f, claims };
  });
}

/** What a prepared run's row claims that its payouts do not make. */
function claimsOf(p: PreparedRun, f: Omit<PreparedFigures, 'claims'>): string[] {
  const out: string[] = [];
  if (p.payout_count !== f.payout_count)
    out.push(`${p.payout_count} payouts (it holds ${f.payout_count})`);
  if (JSON.stringify(sorted(p.totals)) !== JSON.stringify(sorted(f.totals)))
    out.push(`totals ${JSON.stringify(p.totals)} (its payouts make ${JSON.stringify(f.totals)})`);
  if (p.content_hash !== f.content_hash) out.push('a content hash its payouts do not make');
  // The database keys the rule (approvers, expiry) by this text: another spelling misses it.
  if (p.service !== f.service)
    out.push(`the service ${JSON.stringify(p.service)}, not as payouts records ${f.service}`);
  return out;
}

/** Totals with their currencies in order, each total as a number's text, for comparing. */
function sorted(t: PreparedRun['totals']): Array<[string, number, string]> {
  return Object.entries(t ?? {})
    .map(([cur, v]): [string, number, string] => [cur, v.count, canonicalDecimal(v.total)])
    .sort((a, b) => a[0].localeCompare(b[0]));
}

/**
 * The prepared run as its payouts make it: its count, totals and content hash computed, and
 * its retries named (a retry's original is part of what moves).
 */
export function withFigures(p: PreparedRun, f: PreparedFigures): PreparedRun {
  const retries = f.payouts.flatMap(({ reference_id, retry_of }) =>
    retry_of === null ? [] : [{ reference_id, retry_of }],
  );
  return {
    ...p,
    payout_count: f.payout_count,
    totals: f.totals,
    content_hash: f.content_hash,
    ...(retries.length ? { retries } : {}),
  };
}
