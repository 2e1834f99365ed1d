/**
 * A send's claims on runs in a shared history (RunClaims, src/domain/history.ts): a
 * session-level advisory lock per run, (CLAIM_CLASS, a hash of its id), which the server gives
 * back by itself when the session ends, so a send that died claims nothing. A hash shared by
 * two runs only makes a send leave the other's payouts in doubt to their decider: it never
 * lets two decide one.
 */
import type pg from 'pg';
import type { RunClaims } from '../../domain/history.js';
import { refHash } from '../ref-index.js';

/** The first key of a run's claim ("payd"). */
export const CLAIM_CLASS = 0x70617964;

/** The second key of a run's claim. */
export function claimKey(runId: string): number {
  return refHash(runId);
}

/** Claims each run this session can; returns those another session claims. */
export async function claimRuns(c: pg.Client, runIds: string[]): Promise<Set<string>> {
  if (!runIds.length) return new Set();
  const r = await c.query<{ id: string; ok: boolean }>(
    `SELECT t.id, pg_try_advisory_lock($1, t.k) AS ok
     FROM unnest($2::text[], $3::int[]) AS t(id, k)`,
    [CLAIM_CLASS, runIds, runIds.map(claimKey)],
  );
  return new Set(r.rows.filter((row) => !row.ok).map((row) => row.id));
}

/** Gives back the claims this session holds on these runs. */
export async function unclaimRuns(c: pg.Client, runIds: string[]): Promise<void> {
  if (!runIds.length) return;
  await c.query('SELECT pg_advisory_unlock($1, k) FROM unnest($2::int[]) AS t(k)', [
    CLAIM_CLASS,
    runIds.map(claimKey),
  ]);
}

/** Runs `work` on the send's session, after what is queued on it. */
type OnSession = <T>(doing: string, work: (c: pg.Client) => Promise<T>) => Promise<T>;

/** A send's claims on runs, held by its session (see the file's comment). */
export function sessionClaims(onSession: OnSession): RunClaims {
  const held = new Set<string>();
  return {
    async take(runIds) {
      const fresh = [...new Set(runIds)].filter((id) => !held.has(id));
      const others = await onSession('claiming the runs it decides', (c) => claimRuns(c, fresh));
      for (const id of fresh) if (!others.has(id)) held.add(id);
      return others;
    },
    async release() {
      const ids = [...held];
      held.clear();
      await onSession('giving back its claims on runs', (c) => unclaimRuns(c, ids));
    },
  };
}
