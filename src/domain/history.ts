/**
 * The store's port: what a send needs of a history, whichever store keeps it. `Staged` is the
 * store's own handle on the rows pass 1 staged; the core passes it back without looking inside.
 */
import type { PayoutRequest } from './payout.js';
import type { JournalMirror } from './records.js';

/** What the caller knows about a run when it opens its state. */
export interface RunHeader {
  service: string;
  client_id: string;
  inputs: string[];
  input_hash: string;
  payout_count: number;
  batch_reference?: string;
  /**
   * How its report and retry files are written (`{"delimiter":";","decimal_mark":","}`): the
   * conventions its CSV input was read in, or --report-locale's.
   */
  csv_style?: string;
  /**
   * The options its files were read with, as given (--encoding …, --decimal-comma, --map …):
   * the command that finishes the run repeats them.
   */
  send_args?: string[];
}

/** One of a run's staged payouts that an earlier run of the same service sent. */
export interface PriorRow {
  row: number;
  payout: PayoutRequest;
  /** The run that holds the state. */
  run_id: string;
  /** The Client-Id that run sent under (null: not recorded). */
  client_id: string | null;
  /** That run's payout hash for the reference, and its version (null: not known). */
  hash: string | null;
  hash_version: number;
  state: 'in_flight' | 'done' | 'unknown';
  req: number | null;
  sent_at: string | null;
  status: string | null;
  transaction_id: string | null;
  charges: string | null;
  message: string | null;
  /** The reference the held row retries (null: none; it is an original). */
  retry_of?: string | null;
  /** When the service's latest word on it was kept (null or absent: never since its run). */
  checked_at?: string | null;
  /**
   * Set when the held row is not the staged reference's own but another of its payout's chain
   * (the original a retry row retries, or a reference that retries the row's payout): that
   * reference. Such rows tell the chain; they never settle the staged row themselves.
   */
  via?: string;
}

/** An earlier run of a service, as a series is told from its header (src/core/series.ts). */
export interface EarlierRun {
  run_id: string;
  /** JSON array of its inputs' names. */
  inputs: string;
  batch_reference: string | null;
  created_at: string;
}

/** A payout an earlier run holds, as a comparison shows it, with the run. */
export interface HeldPayout {
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
  description: string | null;
  run_id: string;
}

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

/** A service's lock, once taken. */
export interface ServiceLock {
  release(): Promise<void>;
}

/**
 * A place among the sends waiting for a service's lock (`send --wait`), first come first
 * served: `take` gives the lock once every send that asked before has had it (or is gone) and
 * it is free, else throws a BusyError naming who holds it and how many wait ahead; `leave`
 * gives the place up (harmless once taken or left).
 */
export interface LockQueue {
  take(): Promise<ServiceLock>;
  leave(): Promise<void>;
}

/**
 * The runs a send decides (issue 51): its own, and those whose payouts in doubt it reads back,
 * claimed so that another send meeting their payouts in doubt leaves them to it. A claim is
 * held by the send's process (a lock file) or its database session, so a send that dies
 * claims nothing; `release` gives every claim back.
 */
export interface RunClaims {
  /** Claims those of `runIds` no other live send claims; returns those another one does. */
  take(runIds: Iterable<string>): Promise<Set<string>>;
  release(): Promise<void>;
}

/** What opening a run needs beyond the rows staged in the local database. */
export interface AdoptedRun {
  /**
   * The run in the local database the store staged it in (state.db, or a shared history's
   * local copy), where its commits go first: the staged rows, or the run they resume.
   */
  run: { id: number; resumed: boolean };
  /** Where every commit of the run goes as well, before it counts as done. */
  mirror?: JournalMirror;
  /** The highest request id the history holds for the run. */
  lastReqFloor?: number;
  /** Who writes the run's attempts, as the store names its session (a shared history's). */
  session?: string;
}

/**
 * Where what was sent is kept, as a send uses it: the state folder's state.db
 * (src/state/local-history.ts) or a shared history on PostgreSQL (src/state/pg/store.ts). Every
 * call is async and takes no driver type; a run's own commits go through RunState, and to a
 * shared history through the mirror `adopt` gives.
 */
export interface HistoryStore<Staged> {
  /** How messages name it: "this state folder", or the shared history with its password as ***. */
  readonly name: string;
  /** Opens where pass 1 stages a run's rows (a dry run's keep nothing). */
  stage(how: { dryRun: boolean; pid: number; inputs: string[]; now: Date }): Promise<Staged>;
  /**
   * One sending run per service at a time; a BusyError naming the holder when taken, or the
   * sends queued for it (they go first).
   */
  lockService(serviceKey: string, me: LockRequest): Promise<ServiceLock>;
  /** Joins the queue of the sends waiting for a service's lock (send --wait), last. */
  joinLockQueue(serviceKey: string, me: LockRequest): Promise<LockQueue>;
  /** This send's claims on runs (RunClaims), none taken yet. */
  runClaims(me: LockRequest): RunClaims;
  /** What earlier runs of the service hold about the staged references, in row order. */
  prior(staged: Staged, serviceKey: string): Promise<PriorRow[]>;
  /** Whether any run of the service is recorded. */
  holdsService(staged: Staged, serviceKey: string): Promise<boolean>;
  /**
   * Those of the recipients that runs of the service paid before (not failed or canceled);
   * null, without asking for the recipients, when the history holds no run of the service.
   */
  paidRecipients(
    staged: Staged,
    serviceKey: string,
    recipients: () => string[],
  ): Promise<Set<string> | null>;
  /** The service's latest runs but `except` (a resumed run's own id), newest first, a few. */
  latestRuns(staged: Staged, serviceKey: string, except: string): Promise<EarlierRun[]>;
  /** A run's first payouts in row order, at most `limit`. */
  runPayouts(staged: Staged, runId: string, limit: number): Promise<HeldPayout[]>;
  /** What runs of the service hold under these references, the latest run's first. */
  heldPayouts(staged: Staged, serviceKey: string, refs: string[]): Promise<HeldPayout[]>;
  /** Makes the staged rows the run (or finds the run they resume) where the history is. */
  adopt(
    staged: Staged,
    run: {
      runId: string;
      serviceKey: string;
      header: RunHeader;
      now: string;
      sendsNothing?: boolean;
    },
  ): Promise<AdoptedRun>;
  close(): Promise<void>;
}
