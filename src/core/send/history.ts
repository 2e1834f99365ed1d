import type { JournalMirror, PriorRow, RunHeader, RunIntake } from '../../state/index.js';

/** Who takes a service's lock, so that a second send can name it. */
export interface LockRequest {
  pid: number;
  /** The command line. */
  command: string;
  /** ISO 8601. */
  startedAt: string;
  /** The run it sends, so that `payouts runs` elsewhere marks it running. */
  runId?: string;
}

/** What opening a run needs beyond the rows staged in the local database. */
export interface AdoptedRun {
  /** Where every commit of the run goes as well, before it counts as done. */
  mirror?: JournalMirror;
  /** The highest request id the history holds for the run. */
  lastReqFloor?: number;
}

/**
 * Where what was sent is kept, as a send uses it: the state folder's state.db
 * (src/state/local-history.ts) or a shared history on PostgreSQL (src/state/pg/store.ts). Every
 * call is async and takes no driver type; a run's own commits go through RunState, and to a
 * shared history through the mirror `adopt` gives.
 */
export interface HistoryStore {
  /** How messages name it: "this state folder", or the shared history with its password as ***. */
  readonly name: string;
  /** Opens where pass 1 stages a run's rows (a dry run's keep nothing). */
  stage(how: { dryRun: boolean; pid: number; inputs: string[]; now: Date }): Promise<RunIntake>;
  /** One sending run per service at a time; a BusyError naming the holder when taken. */
  lockService(serviceKey: string, me: LockRequest): Promise<{ release(): Promise<void> }>;
  /** What earlier runs of the service hold about the staged references, in row order. */
  prior(staged: RunIntake, serviceKey: string): Promise<PriorRow[]>;
  /** Whether any run of the service is recorded. */
  holdsService(staged: RunIntake, serviceKey: string): Promise<boolean>;
  /** Makes the staged rows the run (or finds the run they resume) where the history is. */
  adopt(
    staged: RunIntake,
    run: { runId: string; serviceKey: string; header: RunHeader; now: string },
  ): Promise<AdoptedRun>;
  close(): Promise<void>;
}
