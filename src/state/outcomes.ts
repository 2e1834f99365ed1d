import type { OutcomeCounts, PayoutOutcome } from '../core/send/outcome.js';
import {
  NOT_SENT as NOT_SENT_STATUS,
  OUTCOME_UNKNOWN as OUTCOME_UNKNOWN_STATUS,
  type StatusKind,
  statusKind,
} from '../core/statuses.js';
import type { StateDb } from './db.js';

/** Status codes of a row (0: the run never reached the row). */
const SUCCESS = 1;
const PENDING = 2;
const NOT_SENT = 3;
/** Failed or canceled. */
const FAILED = 4;
/** The CLI's own "outcome unknown". */
const OUTCOME_UNKNOWN = 5;
/** A status the interface does not document. */
const UNDOCUMENTED = 6;
const STATUS_BITS = 7;
const SENT_EARLIER = 8;
const HAS_CHARGES = 16;

/** How a written row's columns change: its outcome, the journal's "done" too, or only that. */
const OUTCOME_ONLY = 0;
const OUTCOME_AND_DONE = 1;
const DONE_ONLY = 2;

/** The journal's "done" record of a stated result, written with the row's outcome. */
interface DoneRecord {
  req: number;
  at: string;
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

/** Converts a charge the service sent into minor units of its currency (undefined: not exact). */
export type ChargeMinor = (currency: string, charges: number) => bigint | undefined;

/** The code of a status, by its kind. */
const STATUS_CODES: Record<StatusKind, number> = {
  success: SUCCESS,
  pending: PENDING,
  not_sent: NOT_SENT,
  failed: FAILED,
  outcome_unknown: OUTCOME_UNKNOWN,
  undocumented: UNDOCUMENTED,
};

/**
 * A payouts row's outcome columns, as read (raw: arrays cost less than objects): row,
 * reference_id, amount, currency, outcome_status, outcome_transaction_id, outcome_charges,
 * outcome_message, sent_earlier.
 */
type OutcomeRow = [
  number,
  string,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  number,
];

/** The same with file, location, recipient and description after them (reportRows). */
type ReportRowColumns = [...OutcomeRow, string, string, string, string | null];

/** An outcome from its row. */
function fromRow(r: OutcomeRow | ReportRowColumns): PayoutOutcome {
  const o: PayoutOutcome = { reference_id: r[1], amount: r[2], currency: r[3], status: r[4] ?? '' };
  if (r[5] !== null) o.transaction_id = r[5];
  if (r[6] !== null) o.charges = Number(r[6]);
  if (r[7] !== null) o.message = r[7];
  if (r[8]) o.sent_earlier = true;
  return o;
}

/** A charge as stored: the service's number as JSON writes it (exact for any double). */
function chargesText(charges: number | undefined): string | null {
  return typeof charges === 'number' && Number.isFinite(charges) ? String(charges) : null;
}

/** Values of one row in RunOutcomes' write (see its statement). */
const WRITE_WIDTH = 9;
/** Rows a write statement takes: a shorter list is padded with rows of NULLs, which match none. */
const ROWS_PER_WRITE = 100;

/** Appends a row to a write: its outcome, and the journal's "done" record when `d` is given. */
function pushEntry(
  out: unknown[],
  row: number,
  o: PayoutOutcome,
  d?: DoneRecord,
  mode?: number,
): void {
  out.push(
    row,
    o.status,
    o.transaction_id ?? null,
    chargesText(o.charges),
    o.message ?? null,
    o.sent_earlier ? 1 : 0,
    mode ?? (d ? OUTCOME_AND_DONE : OUTCOME_ONLY),
    d ? d.req : null,
    d ? d.at : null,
  );
}

/**
 * The outcome of each row of one send of a run, in the run's payouts rows (the outcome_*
 * columns). Writes are buffered and go with the run's next commit; memory holds one code byte
 * per row, and the counts and charge totals, kept as the outcomes arrive.
 */
export class RunOutcomes {
  private codes = new Uint8Array(16);
  private readonly pending = new Map<number, PayoutOutcome>();
  /** Journal "done" records waiting to be written, by row. */
  private readonly done = new Map<number, DoneRecord>();
  private readonly counts = [0, 0, 0, 0, 0, 0, 0];
  private sentEarlier = 0;
  private readonly chargeTotals = new Map<string, { rows: number; minor: bigint }>();
  private readonly write;
  private readonly readOne;
  private readonly readPage;
  private readonly readAll;

  constructor(
    private readonly db: StateDb,
    private readonly run: number,
    private readonly chargeMinor: ChargeMinor,
  ) {
    // The buffered outcomes as bound rows of (row, status, transaction id, charges, message,
    // sent earlier, mode, req, at): one statement rewrites a row once for its outcome and the
    // journal's "done" alike (bound values cost SQLite less than a JSON list).
    const keep = (col: string, mode: number, value: string) =>
      `${col} = iif(j.mode = ${mode}, payouts.${col}, ${value})`;
    const outcome = (col: string, value: string) => keep(col, DONE_ONLY, value);
    const done = (col: string, value: string) => keep(col, OUTCOME_ONLY, value);
    const one = `(${new Array(WRITE_WIDTH).fill('?').join(', ')})`;
    this.write = db.prepare(
      `WITH j (row, status, transaction_id, charges, message, sent_earlier, mode, req, at)
       AS (VALUES ${new Array(ROWS_PER_WRITE).fill(one).join(', ')})
       UPDATE payouts SET ${outcome('outcome_status', 'j.status')},
         ${outcome('outcome_transaction_id', 'j.transaction_id')},
         ${outcome('outcome_charges', 'j.charges')}, ${outcome('outcome_message', 'j.message')},
         ${outcome('sent_earlier', 'j.sent_earlier')}, ${done('state', "'done'")},
         ${done('req', 'j.req')}, ${done('status', 'j.status')},
         ${done('transaction_id', 'j.transaction_id')}, ${done('charges', 'j.charges')},
         ${done('message', 'j.message')}, ${done('note', 'NULL')}, ${done('updated_at', 'j.at')}
       FROM j WHERE payouts.run = ? AND payouts.row = j.row`,
    );
    const columns = `row, reference_id, amount, currency, outcome_status, outcome_transaction_id,
      outcome_charges, outcome_message, sent_earlier`;
    this.readOne = db.prepare(`SELECT ${columns} FROM payouts WHERE run = ? AND row = ?`).raw(true);
    this.readAll = db
      .prepare(
        `SELECT ${columns}, file, location, recipient, description FROM payouts
         WHERE run = ? AND row >= ? ORDER BY row LIMIT ${PAGE_ROWS}`,
      )
      .raw(true);
    this.readPage = db
      .prepare(
        `SELECT ${columns} FROM payouts WHERE run = ? AND row >= ? AND outcome_status IS NOT NULL
         ORDER BY row LIMIT ${PAGE_ROWS}`,
      )
      .raw(true);
  }

  /** Forgets the outcomes of an earlier send of the run: each send reports its own. */
  reset(): void {
    this.db
      .prepare(
        `UPDATE payouts SET outcome_status = NULL, outcome_transaction_id = NULL,
           outcome_charges = NULL, outcome_message = NULL, sent_earlier = 0
         WHERE run = ? AND outcome_status IS NOT NULL`,
      )
      .run(this.run);
  }

  /** Number of rows the run reached (sent, queued or sent earlier). */
  get size(): number {
    let n = 0;
    for (const c of this.counts) n += c;
    return n;
  }

  /** Whether a row has an outcome. */
  has(row: number): boolean {
    return row < this.codes.length && this.codes[row]! !== 0;
  }

  /** Records a row's outcome; a row sent earlier keeps that mark. */
  set(row: number, outcome: PayoutOutcome): void {
    if (row >= this.codes.length) this.grow(row + 1);
    const prev = this.codes[row]!;
    let o = outcome;
    if (prev !== 0) {
      this.counts[prev & STATUS_BITS]! -= 1;
      if (prev & SENT_EARLIER) this.sentEarlier -= 1;
      if (prev & HAS_CHARGES) {
        const old = this.get(row);
        if (old?.charges !== undefined) this.addCharges(old.currency, old.charges, -1);
      }
      if (prev & SENT_EARLIER && !o.sent_earlier) o = { ...o, sent_earlier: true };
    }
    let code = STATUS_CODES[statusKind(o.status)];
    this.counts[code]! += 1;
    if (o.sent_earlier) {
      code |= SENT_EARLIER;
      this.sentEarlier += 1;
    }
    if (o.charges !== undefined && this.addCharges(o.currency, o.charges, 1)) code |= HAS_CHARGES;
    this.codes[row] = code;
    this.pending.set(row, o);
  }

  /**
   * Records a result the service stated for a row: its outcome, and the journal's record that
   * request `req` settled the payout ("done", as RunState.recordOutcome writes it), both
   * written by one statement with the run's next commit.
   */
  setDone(row: number, outcome: PayoutOutcome, journal: { req: number; at: string }): void {
    this.set(row, outcome);
    this.done.set(row, { req: journal.req, at: journal.at, outcome: this.pending.get(row)! });
  }

  /** A row's outcome; undefined when the run never reached the row. */
  get(row: number): PayoutOutcome | undefined {
    if (!this.has(row)) return undefined;
    const waiting = this.pending.get(row);
    if (waiting) return waiting;
    const r = this.readOne.get(this.run, row) as OutcomeRow | undefined;
    return r?.[4] == null ? undefined : fromRow(r);
  }

  /** Whether outcomes wait to be written. */
  get dirty(): boolean {
    return this.pending.size > 0 || this.done.size > 0;
  }

  /** Number of rows whose outcome waits to be written. */
  get pendingRows(): number {
    return this.pending.size;
  }

  /** Writes the buffered outcomes and "done" records; called inside the run's commit. */
  writePending(): void {
    if (!this.dirty) return;
    const values: unknown[] = [];
    for (const [row, o] of this.pending) {
      const d = this.done.get(row);
      // A "done" record whose outcome was replaced since is written on its own, below.
      if (d?.outcome === o) this.done.delete(row);
      pushEntry(values, row, o, d?.outcome === o ? d : undefined);
      if (values.length === WRITE_WIDTH * ROWS_PER_WRITE) this.writeRows(values);
    }
    this.writeRows(values);
    for (const [row, d] of this.done) {
      pushEntry(values, row, d.outcome, d, DONE_ONLY);
      if (values.length === WRITE_WIDTH * ROWS_PER_WRITE) this.writeRows(values);
    }
    this.writeRows(values);
    this.pending.clear();
    this.done.clear();
  }

  /** Runs the write statement over `values` (padded with NULL rows), then empties it. */
  private writeRows(values: unknown[]): void {
    if (values.length === 0) return;
    while (values.length < WRITE_WIDTH * ROWS_PER_WRITE) values.push(null);
    values.push(this.run);
    this.write.run(values);
    values.length = 0;
  }

  /** Every outcome in input order, read a page at a time. */
  *values(): Generator<PayoutOutcome> {
    if (this.dirty) this.db.transaction(() => this.writePending())();
    let from = 0;
    for (;;) {
      const page = this.readPage.all(this.run, from) as OutcomeRow[];
      for (const r of page) yield fromRow(r);
      if (page.length < PAGE_ROWS) return;
      from = page[page.length - 1]![0] + 1;
    }
  }

  /** Every payout of the run in input order, with its outcome when the run reached it. */
  *reportRows(): Generator<ReportRow> {
    if (this.dirty) this.db.transaction(() => this.writePending())();
    let from = 0;
    for (;;) {
      const page = this.readAll.all(this.run, from) as ReportRowColumns[];
      for (const r of page) {
        const row: ReportRow = {
          file: r[9],
          location: r[10],
          reference_id: r[1],
          amount: r[2],
          currency: r[3],
          recipient: r[11],
        };
        if (r[12] !== null) row.description = r[12];
        if (r[4] !== null) row.outcome = fromRow(r);
        yield row;
      }
      if (page.length < PAGE_ROWS) return;
      from = page[page.length - 1]![0] + 1;
    }
  }

  /** The outcomes of rows that succeeded (true) or need attention (false), in input order. */
  *withSuccess(success: boolean): Generator<PayoutOutcome> {
    for (const o of this.values()) if ((statusKind(o.status) === 'success') === success) yield o;
  }

  /** Counts by status, as countOutcomes would make them. */
  countsOf(): OutcomeCounts {
    const n = this.counts;
    return {
      success: n[SUCCESS]!,
      pending: n[PENDING]!,
      failed: n[FAILED]!,
      unknown: n[OUTCOME_UNKNOWN]! + n[UNDOCUMENTED]!,
      notSent: n[NOT_SENT]!,
      sentEarlier: this.sentEarlier,
    };
  }

  /** Charge totals per currency in minor units (of max(digits, 6)), for currencies with charges. */
  chargeEntries(): Array<{ currency: string; minor: bigint }> {
    return [...this.chargeTotals.entries()]
      .filter(([, t]) => t.rows > 0)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([currency, t]) => ({ currency, minor: t.minor }));
  }

  /** One status per kind present, for exitCodeForStatuses. */
  statusKinds(): string[] {
    const out: string[] = [];
    if (this.counts[SUCCESS]) out.push('success');
    if (this.counts[PENDING]) out.push('pending');
    if (this.counts[NOT_SENT]) out.push(NOT_SENT_STATUS);
    if (this.counts[FAILED]) out.push('failed');
    if (this.counts[OUTCOME_UNKNOWN]) out.push(OUTCOME_UNKNOWN_STATUS);
    // Stands for every undocumented status: exitCodeForStatuses treats them alike.
    if (this.counts[UNDOCUMENTED]) out.push('undocumented');
    return out;
  }

  /** Adds (sign 1) or takes back (-1) a charge; false when it is not an exact amount. */
  private addCharges(currency: string, charges: number, sign: 1 | -1): boolean {
    const minor = this.chargeMinor(currency, charges);
    if (minor === undefined) return false;
    const t = this.chargeTotals.get(currency);
    if (t) {
      t.rows += sign;
      t.minor += sign === 1 ? minor : -minor;
    } else this.chargeTotals.set(currency, { rows: 1, minor });
    return true;
  }

  /** Makes room for `rows` rows. */
  private grow(rows: number): void {
    let n = this.codes.length;
    while (n < rows) n *= 2;
    const codes = new Uint8Array(n);
    codes.set(this.codes);
    this.codes = codes;
  }
}
