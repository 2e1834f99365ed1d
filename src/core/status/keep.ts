/**
 * What a lookup of a payout the history holds leaves in it: the one rule of which answers are
 * kept as the service's word (`checks`, src/state/checks.ts), for `status`, `status --watch`
 * and `reconcile` alike. A record that is the payout (same amount, currency
 * and recipient) is kept as it is; "not found" only of a payout recorded as paid or pending,
 * where it is news (a payout that failed at validation is not stored by the service); another
 * payout under the reference, or no answer, is kept nowhere.
 */
import type { Check, CheckedBy } from '../../domain/checks.js';
import { heldKind } from '../../domain/statuses.js';
import { errorMessage } from '../../errors.js';
import { agoText } from '../../output/display.js';
import type { Output } from '../../output/output.js';
import { type HeldPayout, heldPayouts, recordChecks } from '../../state/index.js';
import { type RunsSource, withRunReader } from '../runs/reader.js';
import { readBackOf } from '../send/readback.js';
import type { LookupOutcome } from './lookup.js';

/** Whether the history records a payout as paid or pending (a result or an earlier word). */
export function recordedPaid(h: Pick<HeldPayout, 'state' | 'status'>): boolean {
  const kind = heldKind(h);
  return kind === 'success' || kind === 'pending';
}

/**
 * What a reader of the history says of a payout that is not final: when the service last
 * said so, and the command that asks it again (`now` in ms).
 */
export function lastCheckedText(checkedAt: string | null | undefined, now: number): string {
  const when = checkedAt
    ? `last checked ${agoText(checkedAt, now)}`
    : 'not checked since it was sent';
  return `${when}: \`payouts reconcile\``;
}

/** When and by what a payout was checked. */
export interface Checking {
  at: string;
  by: CheckedBy;
}

/** The check an answer about a held payout makes, if it is one to keep (the file's rule). */
export function checkOf(held: HeldPayout, answer: LookupOutcome, how: Checking): Check | undefined {
  const o = readBackOf(held.payout, answer);
  const at = { run: held.run, row: held.row, checked_at: how.at, checked_by: how.by };
  if (o.kind === 'found') {
    const { status, transaction_id: tx, updated_at: updated } = o.record;
    return {
      ...at,
      held: true,
      status: typeof status === 'string' ? status : null,
      transaction_id: typeof tx === 'string' ? tx : null,
      updated_at: typeof updated === 'string' ? updated : null,
    };
  }
  if (o.kind !== 'not-found' || !recordedPaid(held)) return undefined;
  return { ...at, held: false, status: null, transaction_id: null, updated_at: null };
}

/**
 * Whether the answer about a held payout is one this Client-Id may give: a payout recorded
 * under another key may be another account's, which this key's lookups do not see.
 */
export function askedRightly(held: HeldPayout, clientId: string | undefined): boolean {
  return clientId === undefined || held.client_id === null || held.client_id === clientId;
}

/** What keeping `status`'s answers needs: where the history is, which service, who asked. */
export interface StatusKeeping {
  from: RunsSource;
  serviceKey: string;
  clientId?: string;
  how: Checking;
  output: Output;
}

/**
 * Keeps `status`'s answers about the payouts the history holds (none for references it does
 * not). The history is a help here, never a reason to fail: when it cannot be read or written
 * (a role that may only read), nothing is kept and the status stands. Returns the checks kept.
 */
export async function keepStatusAnswers(
  outcomes: readonly LookupOutcome[],
  k: StatusKeeping,
): Promise<number> {
  const answers = new Map(
    outcomes.filter((o) => o.kind !== 'error').map((o) => [o.reference_id, o]),
  );
  if (!answers.size) return 0;
  const dialect = k.from.stateUrl ? 'pg' : 'sqlite';
  try {
    const kept = await withRunReader(k.from, k.output, async (read, _keep, write) => {
      const held = await heldPayouts(read, dialect, k.serviceKey, [...answers.keys()]);
      const checks = held.flatMap((h) => {
        const answer = answers.get(h.payout.reference_id);
        const check = answer && askedRightly(h, k.clientId) && checkOf(h, answer, k.how);
        return check ? [check] : [];
      });
      if (checks.length) await recordChecks(write, dialect, checks);
      return checks.length;
    });
    return kept ?? 0;
  } catch (error) {
    k.output.debug(`the answers were not kept in the history: ${errorMessage(error)}`);
    return 0;
  }
}
