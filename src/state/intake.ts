/**
 * Pass 1's side of the state database: every valid payout of a run becomes a row, staged
 * under a run without an id until the service is known (RunState.open adopts it). The unique
 * index on (reference_id, run) finds a reference used twice as the rows go in.
 */
import { isPidAlive } from '../lock.js';
import type { StateDb } from './db.js';
import { HASH_VERSION } from './hash.js';

/** Rows inserted per transaction: one commit per batch keeps pass 1 quick. */
const BATCH_ROWS = 10_000;

/** Where a row is. */
export interface Place {
  file: string;
  location: string;
}

/** A row's place and its position among every row of pass 1 (refused ones included). */
export interface Sighting extends Place {
  order: number;
}

/** A validated payout as pass 1 stores it. */
export interface IntakeRow extends Place {
  reference_id: string;
  /** Exact decimal text. */
  amount: string;
  currency: string;
  recipient: string;
  description?: string;
  /** The payout hash, or '' when none is needed (a dry run). */
  hash: string;
}

/** The number in "line 12" or "item 3". */
function lineOf(location: string): number | null {
  const m = /\d+/.exec(location);
  return m ? Number(m[0]) : null;
}

/** The rows of one run as pass 1 reads them. */
export class RunIntake {
  private rows = 0;
  private inTransaction = false;
  /** References of refused rows (not stored), with where they were first seen. */
  private readonly refusedRefs = new Map<string, Sighting>();
  /** For each row not stored (refused or repeated), how many rows were stored before it. */
  private readonly skippedAt: number[] = [];
  private readonly insert;
  private readonly findRef;

  private constructor(
    private readonly db: StateDb,
    readonly id: number,
  ) {
    this.insert = db.prepare(
      `INSERT INTO payouts (run, row, reference_id, file, line, location, amount, currency,
         recipient, description, hash, hash_version)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ${HASH_VERSION})
       ON CONFLICT (reference_id, run) DO NOTHING`,
    );
    this.findRef = db.prepare(
      'SELECT row, file, location FROM payouts WHERE reference_id = ? AND run = ?',
    );
  }

  /** Starts staging a run's rows; removes what runs staged by processes now gone left. */
  static begin(db: StateDb, opts: { pid: number; inputs: string[]; now: Date }): RunIntake {
    const at = opts.now.toISOString();
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
            'INSERT INTO runs (inputs, staged_by, created_at, updated_at) VALUES (?, ?, ?, ?)',
          )
          .run(JSON.stringify(opts.inputs), opts.pid, at, at).lastInsertRowid,
      );
    })();
    return new RunIntake(db, id);
  }

  /** Number of rows stored. */
  get count(): number {
    return this.rows;
  }

  /** Stores a valid payout; when its reference is already used, returns where, and stores nothing. */
  add(p: IntakeRow): Sighting | undefined {
    const earlier = this.refusedRefs.get(p.reference_id);
    if (earlier) {
      this.skippedAt.push(this.rows);
      return earlier;
    }
    this.begin();
    const done = this.insert.run(
      this.id,
      this.rows,
      p.reference_id,
      p.file,
      lineOf(p.location),
      p.location,
      p.amount,
      p.currency,
      p.recipient,
      p.description ?? null,
      p.hash,
    );
    if (done.changes === 0) {
      const first = this.sighting(p.reference_id);
      this.skippedAt.push(this.rows);
      return first;
    }
    this.rows += 1;
    if (this.rows % BATCH_ROWS === 0) this.commit();
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
    const refused = this.refusedRefs.get(ref);
    if (refused) return refused;
    const r = this.findRef.get(ref, this.id) as
      | { row: number; file: string; location: string }
      | undefined;
    if (r === undefined) return undefined;
    // Rows not stored before this one count in pass 1's order too.
    const skipped = this.skippedAt.filter((n) => n <= r.row).length;
    return { file: r.file, location: r.location, order: r.row + skipped };
  }

  /** Commits the rows stored so far. */
  finish(): void {
    this.commit();
  }

  /** Drops the staged rows (the run stops before sending anything). */
  discard(): void {
    if (this.inTransaction) {
      this.db.exec('ROLLBACK');
      this.inTransaction = false;
    }
    this.db.transaction(() => removeRun(this.db, this.id))();
  }

  /** Opens the transaction of the current batch. */
  private begin(): void {
    if (this.inTransaction) return;
    this.db.exec('BEGIN IMMEDIATE');
    this.inTransaction = true;
  }

  /** Commits the current batch. */
  private commit(): void {
    if (!this.inTransaction) return;
    this.db.exec('COMMIT');
    this.inTransaction = false;
  }
}

/** Deletes a run and its rows. */
export function removeRun(db: StateDb, id: number): void {
  db.prepare('DELETE FROM payouts WHERE run = ?').run(id);
  db.prepare('DELETE FROM runs WHERE id = ?').run(id);
}
