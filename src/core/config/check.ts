import { randomBytes } from 'node:crypto';
import { DEFAULT_READ_RETRY, type RetryPolicy, withRetry } from '../../api/retry.js';
import { NotFoundError } from '../../errors.js';
import type { HistoryProbe } from '../../state/pg/history.js';
import type { PayoutReader } from '../status/lookup.js';
import { count } from '../../output/display.js';

/** A reference that no real payout has, so reading it can only say "not found" or refuse us. */
export function probeReference(hex = randomBytes(8).toString('hex')): string {
  return `payouts-config-check-${hex}`;
}

/** What `config check` found out. */
export interface CheckResult {
  accepted: true;
  probe: string;
  /** What the service said to the probe: not found (the expected answer) or a record. */
  answer: 'not_found' | 'found';
}

/**
 * Verifies credentials by reading a payout that cannot exist: "Payout not found" means the
 * service accepted them. A rejection (3), no answer (7) or any other failure is thrown.
 */
export async function verifyCredentials(
  reader: PayoutReader,
  opts: { probe?: string; signal?: AbortSignal; retry?: RetryPolicy } = {},
): Promise<CheckResult> {
  const probe = opts.probe ?? probeReference();
  try {
    await withRetry(() => reader.getPayout(probe, opts.signal), opts.retry ?? DEFAULT_READ_RETRY, {
      signal: opts.signal,
    });
    // Unlikely, but the service did answer a read with these credentials: they work.
    return { accepted: true, probe, answer: 'found' };
  } catch (error) {
    if (error instanceof NotFoundError) return { accepted: true, probe, answer: 'not_found' };
    throw error;
  }
}

/** What `config check` says about a shared history, in a line. */
export function historyLine(p: HistoryProbe): string {
  const schema =
    p.schema_version === 0
      ? 'no payouts tables yet (the first send creates them)'
      : `${count(p.runs, 'run')} (schema ${p.schema_version}${p.schema_version < p.schema_known ? `, updated to ${p.schema_known} by the next send` : ''})`;
  return `Shared history reached at ${p.where}: PostgreSQL ${p.server_version}, ${p.tls ? 'TLS' : 'no TLS'}, role ${p.role}; ${schema}`;
}

/** Connects to a shared history without changing it, and says what is there (exit 7 when it cannot). */
export async function probeHistory(url: string): Promise<HistoryProbe> {
  const { PgHistory } = await import('../../state/pg/history.js');
  return PgHistory.probe(url);
}
