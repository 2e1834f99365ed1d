import { join } from 'node:path';
import { STATE_DB } from '../state/db.js';
import { redactStateUrl } from '../state/pg/url.js';

/**
 * Where a command's history is, for a person: "the history in /home/ana/.local/state/payouts/
 * state.db", or "the shared history at postgres://ana:***@db:5432/pay" (the password never
 * shown).
 */
export function historyPlace(from: { stateDir: string; stateUrl?: string }): string {
  return from.stateUrl
    ? `the shared history at ${redactStateUrl(from.stateUrl)}`
    : `the history in ${join(from.stateDir, STATE_DB)}`;
}
