/** A shared history on PostgreSQL as a send's HistoryStore (src/domain/history.ts). */
import type { HistoryStore, LockRequest } from '../../domain/history.js';
import { openScratchDb } from '../db.js';
import { RunIntake } from '../intake.js';
import { stagedPages } from '../prior.js';
import { serviceId } from '../hash.js';
import { type LockMe, PgHistory } from './history.js';
import { adoptLocally } from '../adopt.js';
import { paidRecipientsIn } from './prepared-views.js';
import type { EarlierRun, HeldPayout } from '../../domain/history.js';
import { heldPayoutsSql, latestRunsSql, runPayoutsSql } from '../earlier-runs.js';

/**
 * Payouts a page of a run's copy holds: the first page goes with the run before anything is
 * sent, the others while it sends.
 */
const COPY_PAGE_ROWS = 1_000;

/** Who asks for a service's lock, as PgHistory records it. */
function lockMe(holder: { host?: string; user?: string }, me: LockRequest): LockMe {
  return {
    ...holder,
    pid: me.pid,
    started_at: me.startedAt,
    command: me.command,
    ...(me.runId ? { runId: me.runId } : {}),
  };
}

/** A shared history as a send's store, with its session, which the send's other reads share. */
export type SharedStore = HistoryStore<RunIntake> & { session: PgHistory };

/**
 * Connects to a shared history (pg is loaded only then). A send stages its rows in a private
 * database of state.db's schema; they go to PostgreSQL as its run once it holds the lock.
 * `holder` names the host and user in the lock (the machine's unless a test says); `stop` (a
 * Ctrl-C) ends the wait for the connection at once.
 */
export async function sharedHistory(
  url: string,
  holder: { host?: string; user?: string } = {},
  stop?: AbortSignal,
): Promise<SharedStore> {
  return sharedStore(await PgHistory.open(url, stop), holder, true);
}

/**
 * A send's store on a session already open: `owned`, closed with the store; else its opener's
 * to close (send --approved's, which read the approved run on it).
 */
export function sharedStore(
  history: PgHistory,
  holder: { host?: string; user?: string },
  owned: boolean,
): SharedStore {
  return {
    session: history,
    name: `the shared history at ${history.where}`,
    async stage(how) {
      if (how.dryRun) return RunIntake.scratch();
      return RunIntake.begin(openScratchDb(), { pid: how.pid, inputs: how.inputs, now: how.now });
    },
    lockService: (serviceKey, me) => history.lockService(serviceKey, lockMe(holder, me)),
    joinLockQueue: (serviceKey, me) => history.joinLockQueue(serviceKey, lockMe(holder, me)),
    runClaims: () => history.runClaims(),
    prior: (staged, serviceKey) => history.prior(serviceKey, stagedPages(staged)),
    holdsService: (_staged, serviceKey) => history.hasRuns(serviceKey),
    paidRecipients: async (_staged, serviceKey, recipients) =>
      (await history.hasRuns(serviceKey))
        ? paidRecipientsIn(history, serviceId(serviceKey), recipients())
        : null,
    latestRuns: async (_staged, serviceKey, except) =>
      (await history.rows(latestRunsSql(), [serviceId(serviceKey), except])) as EarlierRun[],
    runPayouts: async (_staged, runId, limit) =>
      (await history.rows(runPayoutsSql(), [runId, runId, limit])) as HeldPayout[],
    heldPayouts: async (_staged, serviceKey, refs) =>
      refs.length
        ? ((await history.rows(heldPayoutsSql('pg'), [
            JSON.stringify(refs),
            serviceId(serviceKey),
          ])) as HeldPayout[])
        : [],
    async adopt(staged, run) {
      // A run resumed only to find everything sent keeps its sender: it sends nothing.
      const sender = run.sendsNothing === true ? undefined : history.senderOf;
      const shared = await history.adopt({ ...run, sender }, () =>
        stagedPages(staged, COPY_PAGE_ROWS),
      );
      // The local copy of this one run: its staged rows become the run there too.
      const local = adoptLocally(staged.db, staged, { ...run, sender: undefined });
      return {
        run: local,
        mirror: history.mirrorOf(shared.id, shared.copied),
        lastReqFloor: shared.lastReq,
        session: history.session,
      };
    },
    close: async () => {
      if (owned) await history.close();
    },
  };
}
