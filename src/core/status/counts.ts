/** What a status counts: the closing line's counts, and which rows need attention first. */

import { serviceStatusKind } from '../../domain/statuses.js';
import { count, displayText } from '../../output/display.js';
import { LONG_RUN_ROWS } from '../send/render.js';
import { counted, paidByRetryCount } from './chains.js';
import type { LookupOutcome } from './lookup.js';
import type { NotFoundContext } from './near.js';

/** The counts of the summary line, in their fixed order, with the words `send` uses. */
const SUMMARY_WORDS = [
  ['success', 'succeeded'],
  ['failed', 'failed'],
  ['canceled', 'canceled'],
  ['pending', 'pending'],
  ['not found', 'not found'],
] as const;

/**
 * Counts outcomes for the summary line, always in one order: "200 payouts: 194 succeeded,
 * 4 failed, 2 canceled, 0 pending, 0 not found"; statuses the interface does not document
 * are counted together as unknown, with their names, and lookups with no answer last.
 */
export function summarize(outcomes: LookupOutcome[], ctx?: NotFoundContext): string {
  const counts = new Map<string, number>();
  const unknown = new Map<string, number>();
  // Each payout counted by its chain: a failed one its retry paid is a success.
  for (const o of outcomes.map((x) => counted(x, ctx))) {
    if (o.kind === 'found' && serviceStatusKind(o.record.status) === 'undocumented') {
      unknown.set(o.record.status, (unknown.get(o.record.status) ?? 0) + 1);
      continue;
    }
    const key =
      o.kind === 'found' ? o.record.status : o.kind === 'not_found' ? 'not found' : 'error';
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  const parts: string[] = SUMMARY_WORDS.map(([key, word]) => `${counts.get(key) ?? 0} ${word}`);
  const paid = paidByRetryCount(outcomes, ctx);
  if (paid) parts[0] += ` (${paid} paid by a retry)`;
  if (unknown.size) {
    let n = 0;
    for (const count of unknown.values()) n += count;
    const names = [...unknown.keys()].map(displayText).join(', ');
    parts.push(`${n} unknown status${n === 1 ? '' : 'es'} (${names})`);
  }
  const errors = counts.get('error');
  if (errors) parts.push(`${errors} could not be looked up`);
  const n = outcomes.length;
  return `${count(n, 'payout')}: ${parts.join(', ')}`;
}

/** Whether an outcome needs no one's attention: a payout found succeeded, or paid by its retry. */
function succeeded(o: LookupOutcome, ctx?: NotFoundContext): boolean {
  const c = counted(o, ctx);
  return c.kind === 'found' && serviceStatusKind(c.record.status) === 'success';
}

/**
 * The rows of the table: those needing attention (failed, canceled, not found, pending, any
 * other status, no answer) first, in input order, then the successes, which a list longer
 * than LONG_RUN_ROWS shows only with --all, as `send` does. Returns the rows and how many
 * successes were left out.
 */
export function attentionFirst(
  outcomes: LookupOutcome[],
  all: boolean,
  ctx?: NotFoundContext,
): { rows: LookupOutcome[]; hidden: number } {
  const attention = outcomes.filter((o) => !succeeded(o, ctx));
  const fine = outcomes.filter((o) => succeeded(o, ctx));
  if (all || outcomes.length <= LONG_RUN_ROWS) return { rows: [...attention, ...fine], hidden: 0 };
  return { rows: attention, hidden: fine.length };
}
