/** The state folder's state.db as a send's HistoryStore (src/domain/history.ts). */
import type { HistoryStore } from '../domain/history.js';
import { openStateDb } from './db.js';
import { heldPayouts, latestRuns, runPayouts } from './earlier-runs.js';
import type { LockWait } from './errors.js';
import { RunIntake, thisMachine } from './intake.js';
import { adoptLocally } from './adopt.js';
import { hasHistory, paidRecipients, priorRows } from './prior.js';
import { acquireSendLock, joinSendLockQueue, localRunClaims } from './send-lock.js';

/**
 * The history of one state folder: staged and recorded in its state.db, locked by a file.
 * `lockWait` says how to tell the user while another program holds state.db.
 */
export function localHistory(
  stateDir: string,
  lockWait: Partial<LockWait> = {},
): HistoryStore<RunIntake> {
  return {
    name: 'this state folder',
    async stage(how) {
      if (how.dryRun) return RunIntake.scratch();
      const db = await openStateDb(stateDir, lockWait);
      return RunIntake.begin(db, { pid: how.pid, inputs: how.inputs, now: how.now });
    },
    lockService: (serviceKey, me) =>
      acquireSendLock({ stateDir, serviceKey, pid: me.pid, command: me.command }),
    joinLockQueue: (serviceKey, me) =>
      joinSendLockQueue({ stateDir, serviceKey, pid: me.pid, command: me.command }),
    runClaims: (me) => localRunClaims({ stateDir, pid: me.pid, command: me.command }),
    prior: async (staged, serviceKey) => priorRows(staged, serviceKey, stateDir),
    holdsService: async (staged, serviceKey) => hasHistory(staged, serviceKey),
    paidRecipients: async (staged, serviceKey, recipients) =>
      paidRecipients(staged, serviceKey, stateDir, recipients),
    latestRuns: async (staged, serviceKey, except) =>
      latestRuns(staged, stateDir, serviceKey, except),
    runPayouts: async (staged, runId, limit) => runPayouts(staged, stateDir, runId, limit),
    heldPayouts: async (staged, serviceKey, refs) =>
      heldPayouts(staged, stateDir, serviceKey, refs),
    // The staged rows are in state.db already: they become the run there.
    adopt: async (staged, run) => ({
      run: adoptLocally(staged.db, staged, {
        ...run,
        sender: run.sendsNothing === true ? undefined : thisMachine(),
      }),
    }),
    close: async () => {},
  };
}
