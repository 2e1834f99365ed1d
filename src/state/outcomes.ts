import {
  type OutcomeCounts,
  outcomeKind,
  type PayoutOutcome,
  type RetriedAs,
} from '../domain/outcome.js';
import type { JournalRecord } from '../domain/records.js';
import type { StateDb } from './db.js';
import { JOURNAL_SQL, REPORT_ROWS, RESULT_ROWS, rowsStatements } from './journal-sql.js';
import { type ChargeMinor, OutcomeTally } from './outcome-tally.js';

/** What a stated result is recorded with: its request and time. */
interface Stated {
  req: number;
  at: string;
}

/** A stated result waiting to be written, with the outcome it was stated as. */
interface StatedResult extends Stated {
  outcome: PayoutOutcome;
}

/** Rows read per query when outcomes are listed. */
const PAGE_ROWS = 1000;

/** One payout of the run with where it was read and its outcome, for --report and --failed-out. */
export interface ReportRow {
  file: string;
  location: string;
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
  description?: string;
  /** Undefined when the run never reached the row. */
  outcome?: PayoutOutcome;
}

/**
 * A row with its outcome columns, as read (raw: arrays cost less than objects): row,
 * reference_id, amount, currency, then status, transaction_id, charges, message of its stated
 * result and of its report, and the report's sent_earlier; then file, location, recipient and
 * description (reportRows).
 */
type OutcomeRow = [number, string, string, string, ...Array<string | number | null>];

/** Where the outcome columns start in an OutcomeRow: the stated result's, the report's. */
const STATED_AT = 4;
const REPORT_AT = 8;

/** An outcome from its row's stated result or (reported) its report. */
function fromRow(r: OutcomeRow, reported: boolean): PayoutOutcome {
  const at = reported ? REPORT_AT : STATED_AT;
  const o: PayoutOutcome = {
    reference_id: r[1],
    amount: r[2],
    currency: r[3],
    status: (r[at] as string | null) ?? '',
  };
  const [tx, charges, message] = [r[at + 1], r[at + 2], r[at + 3]] as Array<string | null>;
  if (tx != null) o.transaction_id = tx;
  if (charges != null) o.charges = Number(charges);
  if (message != null) o.message = message;
  if (reported && r[12]) o.sent_earlier = true;
  if (reported && r[12] === 2) o.found_at_service = true;
  return o;
}

/** A charge as stored: the service's number as JSON writes it (exact for any double). */
function chargesText(charges: number | undefined): string | null {
  return typeof charges === 'number' && Number.isFinite(charges) ? String(charges) : null;
}

/**
 * The outcome of each row of one send of a run. A result the service stated goes to the
 * journal's `results` once, and is the row's outcome; any other outcome (not sent, unknown,
 * sent earlier) goes to `reports`. Writes are buffered and go with the run's next commit;
 * memory holds one code byte per row, and the counts and charge totals (OutcomeTally).
 */
export class RunOutcomes {
  /** The counts, charge totals and each row's code, in memory. */
  private readonly tally: OutcomeTally;
  /** Outcomes not written yet, by row; and stated results not written yet, by row. */
  private pending = new Map<number, PayoutOutcome>();
  private stated = new Map<number, StatedResult>();
  /** Outcomes on their way to the database, oldest commit first (see takePending). */
  private taken: Array<{
    pending: Map<number, PayoutOutcome>;
    stated: Map<number, StatedResult>;
  }> = [];
  /**
   * The retry of each row that failed earlier and that a retry took on: kept in memory (a
   * run's failures are few), since `reports` keeps the row's own status and no link.
   */
  private readonly retried = new Map<number, RetriedAs>();
  private readonly readOne;
  private readonly readPage;
  private readonly readStated;
  /** The error of the commit that failed: outcomes are kept in memory from then on. */
  private failure: unknown;

  constructor(
    private readonly db: StateDb,
    private readonly run: number,
    chargeMinor: ChargeMinor,
  ) {
    this.tally = new OutcomeTally(chargeMinor);
    const select = `SELECT p.row, p.reference_id, p.amount, p.currency, d.status,
        d.transaction_id, d.charges, d.message, o.status, o.transaction_id, o.charges,
        o.message, o.sent_earlier, p.file, p.location, p.recipient, p.description
      FROM payouts p LEFT JOIN results d ON d.run = p.run AND d.row = p.row
        LEFT JOIN reports o ON o.run = p.run AND o.row = p.row`;
    this.readOne = db.prepare(`${select} WHERE p.run = ? AND p.row = ?`).raw(true);
    this.readPage = db
      .prepare(`${select} WHERE p.run = ? AND p.row >= ? ORDER BY p.row LIMIT ${PAGE_ROWS}`)
      .raw(true);
    // Outcomes when none is reported: the stated results, in row order, and only those.
    this.readStated = db
      .prepare(
        `SELECT p.row, p.reference_id, p.amount, p.currency, d.status, d.transaction_id,
           d.charges, d.message
         FROM results d JOIN payouts p ON p.run = d.run AND p.row = d.row
         WHERE d.run = ? AND d.row >= ? ORDER BY d.row LIMIT ${PAGE_ROWS}`,
      )
      .raw(true);
  }

  /** Forgets the reports of an earlier send of the run: each send reports its own. */
  reset(): void {
    this.db.prepare(JOURNAL_SQL.sqlite.forgetReports).run(this.run);
  }

  /** Number of rows the run reached (sent, queued or sent earlier). */
  get size(): number {
    return this.tally.size;
  }

  /** Whether a row has an outcome. */
  has(row: number): boolean {
    return this.tally.has(row);
  }

  /** Records a row's outcome (reported, unless `stated` gives the result's request); a row sent earlier keeps that mark. */
  set(row: number, outcome: PayoutOutcome, stated?: Stated): void {
    const o = this.tally.set(row, outcome, stated !== undefined, () => this.get(row));
    if (o.retried_as) this.retried.set(row, o.retried_as);
    else this.retried.delete(row);
    this.pending.set(row, o);
    // The journal keeps what was stated, whatever the row's outcome becomes later.
    if (stated) this.stated.set(row, { ...stated, outcome: o });
  }

  /**
   * Records a result the service stated for a row, from request `req`: the journal's result
   * (which settles the payout, as RunState.recordOutcome writes it) and the row's outcome,
   * written with the run's next commit.
   */
  setDone(row: number, outcome: PayoutOutcome, journal: Stated): void {
    this.set(row, outcome, journal);
  }

  /** A row's outcome; undefined when the run never reached the row. */
  get(row: number): PayoutOutcome | undefined {
    if (!this.has(row)) return undefined;
    const waiting = this.waiting(row);
    if (waiting) return waiting;
    const r = this.readOne.get(this.run, row) as OutcomeRow | undefined;
    return r && this.withRetry(row, fromRow(r, this.tally.isReported(row)));
  }

  /** An outcome read from the database, with the retry that took its row on (kept in memory). */
  private withRetry(row: number, o: PayoutOutcome): PayoutOutcome {
    const r = this.retried.get(row);
    return r ? { ...o, retried_as: r } : o;
  }

  /** Whether outcomes wait to be written. */
  get dirty(): boolean {
    return this.pending.size > 0;
  }

  /** Number of rows whose outcome waits to be written. */
  get pendingRows(): number {
    return this.pending.size;
  }

  /** Writes the buffered results and reports, in the caller's transaction; keeps them buffered. */
  private writePending(): void {
    const { results, reports } = this.pendingValues();
    const statements = rowsStatements(RESULT_ROWS, results, 'sqlite');
    for (const s of statements.concat(rowsStatements(REPORT_ROWS, reports, 'sqlite'))) {
      this.db.prepare(s.sql).run(s.params);
    }
  }

  /**
   * The buffered results and reports as records, for a commit that another connection makes;
   * until settle() says how it went, reads find them here.
   */
  takePending(): JournalRecord[] {
    if (!this.dirty) return [];
    const { results, reports } = this.pendingValues();
    const records: JournalRecord[] = [];
    if (results.length) records.push({ kind: 'results', values: results });
    if (reports.length) records.push({ kind: 'reports', values: reports });
    // Handed over whole, not copied: a run's outcomes pass through here once each.
    this.taken.push({ pending: this.pending, stated: this.stated });
    this.pending = new Map();
    this.stated = new Map();
    return records;
  }

  /**
   * The oldest taken records were committed (true), or a commit failed (false): then every
   * outcome taken waits to be written again, so the listings still report it (see save).
   */
  settle(committed: boolean, error?: unknown): void {
    if (committed) {
      this.taken.shift();
      return;
    }
    this.failure ??= error ?? new Error('a commit of the run failed');
    const pending = new Map<number, PayoutOutcome>();
    const stated = new Map<number, StatedResult>();
    for (const t of [...this.taken, { pending: this.pending, stated: this.stated }]) {
      for (const [row, o] of t.pending) pending.set(row, o);
      for (const [row, d] of t.stated) stated.set(row, d);
    }
    this.taken = [];
    this.pending.clear();
    this.stated.clear();
    for (const [row, o] of pending) this.pending.set(row, o);
    for (const [row, d] of stated) this.stated.set(row, d);
  }

  /** A row's outcome not written yet: buffered, or on its way to the database. */
  private waiting(row: number): PayoutOutcome | undefined {
    const o = this.pending.get(row);
    if (o) return o;
    for (let i = this.taken.length - 1; i >= 0; i--) {
      const t = this.taken[i]!.pending.get(row);
      if (t) return t;
    }
    return undefined;
  }

  /** The buffered results' and reports' rows of values. */
  private pendingValues(): { results: unknown[]; reports: unknown[] } {
    const results: unknown[] = [];
    const reports: unknown[] = [];
    const run = this.run;
    for (const [row, d] of this.stated) {
      const o = d.outcome;
      const [tx, message] = [o.transaction_id ?? null, o.message ?? null];
      results.push(run, row, d.req, o.status, tx, chargesText(o.charges), message, d.at);
    }
    for (const [row, o] of this.pending) {
      if (!this.tally.isReported(row)) continue;
      const [tx, message] = [o.transaction_id ?? null, o.message ?? null];
      const earlier = o.found_at_service ? 2 : o.sent_earlier ? 1 : 0;
      reports.push(run, row, o.status, tx, chargesText(o.charges), message, earlier);
    }
    return { results, reports };
  }

  /**
   * Writes the outcomes that wait to be written, if the database lets it; returns the error
   * when it does not (a full disk), and the listings then read those outcomes from memory, so
   * a run that cannot record its last outcomes still reports every row.
   */
  save(): unknown {
    if (!this.dirty) return undefined;
    // Once a commit has failed, no other is tried: another wait for a lock, or another write to
    // a full disk, would only hold up the report.
    if (this.failure !== undefined) return this.failure;
    try {
      this.db.transaction(() => this.writePending())();
    } catch (error) {
      this.failure = error;
      return error;
    }
    // Forgotten only once committed: a COMMIT that fails (a full disk) comes after the writes.
    this.pending.clear();
    this.stated.clear();
    return undefined;
  }

  /** Every outcome in input order, read a page at a time. */
  *values(): Generator<PayoutOutcome> {
    if (this.tally.reportedRows > 0 || this.save() !== undefined) {
      for (const r of this.reportRows()) if (r.outcome) yield r.outcome;
      return;
    }
    let from = 0;
    for (;;) {
      const page = this.readStated.all(this.run, from) as OutcomeRow[];
      // A result stated for a row this send did not reach is an earlier send's.
      for (const r of page) if (this.has(r[0])) yield fromRow(r, false);
      if (page.length < PAGE_ROWS) return;
      from = page[page.length - 1]![0] + 1;
    }
  }

  /** Every payout of the run in input order, with its outcome when the run reached it. */
  *reportRows(): Generator<ReportRow> {
    this.save();
    let from = 0;
    for (;;) {
      const page = this.readPage.all(this.run, from) as OutcomeRow[];
      for (const r of page) {
        const row: ReportRow = {
          file: r[13] as string,
          location: r[14] as string,
          reference_id: r[1],
          amount: r[2],
          currency: r[3],
          recipient: r[15] as string,
        };
        if (r[16] != null) row.description = r[16] as string;
        // Outcomes the database could not take are still in memory (see save).
        if (this.has(r[0]))
          row.outcome =
            this.waiting(r[0]) ?? this.withRetry(r[0], fromRow(r, this.tally.isReported(r[0])));
        yield row;
      }
      if (page.length < PAGE_ROWS) return;
      from = page[page.length - 1]![0] + 1;
    }
  }

  /** The outcomes of rows that succeeded (true) or need attention (false), in input order. */
  *withSuccess(success: boolean): Generator<PayoutOutcome> {
    for (const o of this.values()) if ((outcomeKind(o) === 'success') === success) yield o;
  }

  /** Counts by status, as countOutcomes would make them. */
  countsOf(): OutcomeCounts {
    return this.tally.countsOf();
  }

  /** Rows that reached the service whose charges are not in the totals (OutcomeTally). */
  chargesUnknownCount(): number {
    return this.tally.chargesUnknownCount();
  }

  /** Charge totals per currency in minor units (of max(digits, 6)), for currencies with charges. */
  chargeEntries(): Array<{ currency: string; minor: bigint }> {
    return this.tally.chargeEntries();
  }

  /** One status per kind present, for exitCodeForStatuses. */
  statusKinds(): string[] {
    return this.tally.statusKinds();
  }
}
