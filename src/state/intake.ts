/**
 * Pass 1's side of the state database: every valid payout of a run becomes a row, staged
 * under a run without an id until the service is known (RunState.open adopts it). A dry run
 * stages its rows in a private database instead (see RunIntake.scratch). A reference used
 * twice is found in memory (RefIndex) as the rows go in, and confirmed against the rows.
 */
import { hostname, userInfo } from 'node:os';
import { isPidAlive } from '../lock.js';
import { openPrivateDb, type StateDb } from './db.js';
import { RefIndex, refHash } from './ref-index.js';
import { migrationsFor } from './dialect.js';
import {
  type IntakeRow,
  payoutsTable,
  ROWS_PER_INSERT,
  type RowTable,
  stagedTable,
} from './row-tables.js';
import { STAGING } from './staging-schema.js';

/** Who sends a run: the machine and its OS user (a shared history adds the database role). */
export interface Sender {
  host: string;
  user: string | null;
}

/** This machine as a run's sender; the user null where the system cannot name it (no passwd entry). */
export function thisMachine(): Sender {
  let user: string | null = null;
  try {
    user = userInfo().username;
  } catch {}
  return { host: hostname(), user };
}

/** The tables of a dry run's private database (staging-schema.ts). */
const STAGING_SQL = migrationsFor(STAGING, 'sqlite').join('');

/**
 * Writes pass 1's rows in another thread (the send's writer thread, writer.ts), so the main
 * thread reads the files on while the rows go into state.db's B-trees on the other core.
 */
export interface RowStager {
  /** Queues rows' values (PAYOUT_WIDTH each, the hash left to the thread); copies them. */
  stage(values: unknown[]): void;
  /** Commits what was queued; resolves once another connection can read it. */
  flush(): Promise<void>;
  /** The same, waiting in this thread: a lookup in the middle of pass 1 (a repeated reference). */
  flushSync(): void;
}

/** Rows inserted per transaction: one commit per batch keeps pass 1 quick. */
export const BATCH_ROWS = 10_000;

/** Where a row is. */
export interface Place {
  file: string;
  location: string;
}

/** A row's place and its position among every row of pass 1 (refused ones included). */
export interface Sighting extends Place {
  order: number;
}

/** How many numbers of an ascending list are at most `n` (a binary search: files with many repeats). */
function countAtMost(ascending: readonly number[], n: number): number {
  let lo = 0;
  let hi = ascending.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (ascending[mid]! <= n) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The rows of one run as pass 1 reads them. */
export class RunIntake {
  private rows = 0;
  /** Rows staged under a retry file's new_reference_id (see stagedRetries). */
  retryCount = 0;
  /** Rows handed to the database so far; the others wait in `pending`. */
  private written = 0;
  /** Rows this connection can read (fewer than `written` while a stager holds some). */
  private readable = 0;
  /** The writer thread, once the rows are handed to it (handTo). */
  private stager: RowStager | undefined;
  private pending: unknown[] = [];
  private inTransaction = false;
  /** Pass 1's index of references; dropped by seal(). */
  private refs: RefIndex | undefined = new RefIndex();
  /** state.db's synchronous setting while pass 1 writes unsynced (see begin); then undefined. */
  private synchronous: number | undefined;
  /** References of refused rows (not stored), with where they were first seen. */
  private readonly refusedRefs = new Map<string, Sighting>();
  /** For each row not stored (refused or repeated), how many rows were stored before it. */
  private readonly skippedAt: number[] = [];

  private constructor(
    readonly db: StateDb,
    readonly id: number,
    private readonly table: RowTable,
    /** Whether the database is this intake's own, unsynced, and closed with it. */
    /** A dry run's rows, in a private database of their own (table `staged`). */
    readonly owned = false,
  ) {}

  /** Starts staging a run's rows; removes what runs staged by processes now gone left. */
  static begin(db: StateDb, opts: { pid: number; inputs: string[]; now: Date }): RunIntake {
    const at = opts.now.toISOString();
    const me = thisMachine();
    const id = db.transaction(() => {
      const staged = db
        .prepare('SELECT id, staged_by FROM runs WHERE staged_by IS NOT NULL')
        .all() as Array<{ id: number; staged_by: number }>;
      for (const s of staged) {
        if (s.staged_by !== opts.pid && !isPidAlive(s.staged_by)) removeRun(db, s.id);
      }
      return Number(
        db
          .prepare(
            'INSERT INTO runs (inputs, staged_by, created_at, updated_at, host, os_user) VALUES (?, ?, ?, ?, ?, ?)',
          )
          .run(JSON.stringify(opts.inputs), opts.pid, at, at, me.host, me.user).lastInsertRowid,
      );
    })();
    const intake = new RunIntake(db, id, payoutsTable(db));
    // Pass 1's batches are not synced: the rows become a run only in a synced commit, whose
    // sync writes out every earlier frame of the write-ahead log; lost before, no run began.
    const { synchronous } = db.prepare('PRAGMA synchronous').get() as { synchronous: number };
    if (synchronous > 1) {
      intake.synchronous = synchronous;
      db.exec('PRAGMA synchronous = NORMAL');
    }
    return intake;
  }

  /**
   * Stages a dry run's rows in a private database of their own (table `staged`), unsynced and
   * deleted when closed: a dry run keeps nothing.
   */
  static scratch(): RunIntake {
    const db = openPrivateDb();
    db.exec(STAGING_SQL);
    return new RunIntake(db, 0, stagedTable(db), true);
  }

  /**
   * From now on the rows go to `stager`, which hashes and writes them in its thread; a send
   * hands them over before pass 1 reads its first row.
   */
  handTo(stager: RowStager): void {
    if (this.rows > 0 || this.owned) throw new Error('rows are handed over before pass 1');
    this.stager = stager;
  }

  /** Whether the rows' payout hashes are made where they are written (handTo), not by pass 1. */
  get hashesOwn(): boolean {
    return this.stager !== undefined;
  }

  /** Number of rows stored. */
  get count(): number {
    return this.rows;
  }

  /** Stores a valid payout; when its reference is already used, returns where, and stores nothing. */
  add(p: IntakeRow): Sighting | undefined {
    const ref = p.reference_id;
    const earlier = this.refusedRefs.size ? this.refusedRefs.get(ref) : undefined;
    if (earlier) {
      this.skippedAt.push(this.rows);
      return earlier;
    }
    const hash = refHash(ref);
    const first = this.stored(ref, hash);
    if (first) {
      this.skippedAt.push(this.rows);
      return first;
    }
    this.refs!.add(hash, this.rows);
    this.table.values(this.id, this.rows, p, this.pending);
    if (p.retry_of !== undefined) this.retryCount += 1;
    this.rows += 1;
    if (this.rows - this.written === ROWS_PER_INSERT) this.write();
    // A private database keeps one transaction: its commits would only write pages sooner.
    if (this.rows % BATCH_ROWS === 0 && !this.owned) this.commit();
    return undefined;
  }

  /** Notes the reference of a refused row; returns where it was first used, if it was. */
  refused(ref: string, place: Place): Sighting | undefined {
    const first = this.sighting(ref);
    this.skippedAt.push(this.rows);
    if (first === undefined) {
      this.refusedRefs.set(ref, {
        file: place.file,
        location: place.location,
        order: this.rows + this.skippedAt.length - 1,
      });
    }
    return first;
  }

  /** Whether some row of the run, refused or not, has exactly this reference. */
  has(ref: string): boolean {
    return this.sighting(ref) !== undefined;
  }

  /** Where a reference was first used in the run, with its position among pass 1's rows. */
  sighting(ref: string): Sighting | undefined {
    return this.refusedRefs.get(ref) ?? this.stored(ref, refHash(ref));
  }

  /**
   * Ends pass 1: frees the in-memory index of references (16 MiB at a million rows) before
   * the run goes on; a sighting is then looked up in state.db's reference index.
   */
  seal(): void {
    this.finish();
    this.synced();
    if (!this.owned) this.refs = undefined;
  }

  /** Commits are synced again, as before pass 1. */
  private synced(): void {
    if (this.synchronous === undefined || !this.db.open) return;
    this.db.exec(`PRAGMA synchronous = ${this.synchronous}`);
    this.synchronous = undefined;
  }

  /** Waits while the thread the rows were handed to (handTo) writes them; then finish() is quick. */
  async caughtUp(): Promise<void> {
    if (!this.stager) return;
    this.write();
    await this.stager.flush();
    this.readable = this.written;
  }

  /** Commits the rows stored so far; this connection can read every one. */
  finish(): void {
    this.commit();
    if (this.readable < this.written) this.makeReadable();
  }

  /** Drops the staged rows (the run stops before sending anything). */
  discard(): void {
    this.pending = [];
    this.written = this.rows;
    this.readable = this.rows;
    // SQLite may have rolled the batch back itself (a full disk does): then there is none to end.
    if (this.inTransaction && this.db.inTransaction) this.db.exec('ROLLBACK');
    this.inTransaction = false;
    this.synced();
    if (this.owned) this.db.close();
    else this.db.transaction(() => removeRun(this.db, this.id))();
  }

  /** The stored row with exactly this reference, as a sighting. */
  private stored(ref: string, hash: number): Sighting | undefined {
    for (const row of this.candidates(ref, hash)) {
      if (row >= this.readable) this.makeReadable();
      const r = this.table.at(this.id, row);
      if (r.reference_id !== ref) continue;
      // Rows not stored before this one count in pass 1's order too.
      const skipped = countAtMost(this.skippedAt, row);
      return { file: r.file, location: r.location, order: row + skipped };
    }
    return undefined;
  }

  /** The rows that may have this reference: by its hash in pass 1, else through state.db's index. */
  private candidates(ref: string, hash: number): readonly number[] {
    if (this.refs) return this.refs.rowsOf(hash);
    const r = this.db
      .prepare('SELECT row FROM payouts WHERE reference_id = ? AND run = ?')
      .get(ref, this.id) as { row: number } | undefined;
    return r === undefined ? [] : [r.row];
  }

  /** Hands the pending rows to the database (or to the stager, which copies them). */
  private write(): void {
    const n = this.rows - this.written;
    if (n === 0) return;
    if (this.stager) this.stager.stage(this.pending);
    else {
      this.begin();
      this.table.write(this.written, n, this.pending);
    }
    this.pending.length = 0;
    this.written = this.rows;
    if (!this.stager) this.readable = this.written;
  }

  /** Every row stored so far, readable here: the stager's are waited for (rare: a repeat). */
  private makeReadable(): void {
    this.write();
    this.stager?.flushSync();
    this.readable = this.written;
  }

  /** Opens the transaction of the current batch. */
  private begin(): void {
    if (this.inTransaction) return;
    this.db.exec('BEGIN IMMEDIATE');
    this.inTransaction = true;
  }

  /** Commits the current batch (a stager commits its own). */
  private commit(): void {
    this.write();
    if (!this.inTransaction) return;
    this.db.exec('COMMIT');
    this.inTransaction = false;
  }
}

/** Deletes a run and its rows. */
export function removeRun(db: StateDb, id: number): void {
  for (const table of ['payouts', 'intents', 'results', 'reports']) {
    db.prepare(`DELETE FROM ${table} WHERE run = ?`).run(id);
  }
  db.prepare('DELETE FROM runs WHERE id = ?').run(id);
}
