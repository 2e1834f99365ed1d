/**
 * Where pass 1's rows are written and read back, apart from the intake that decides which go
 * in: state.db's payouts table, or a dry run's staged chunks.
 */
import { rowWriter, type StateDb } from './db.js';
import { HASH_VERSION, payoutHash } from './hash.js';
import { PAYOUT_ROWS } from './journal-sql.js';

/** Rows per INSERT statement: one call for many rows saves most of the per-call cost. */
export const ROWS_PER_INSERT = 64;

/** A validated payout as pass 1 stores it: where it is, by its line or its location's text. */
export interface IntakeRow {
  file: string;
  /** The line number when the row's place is a line ("line 12"). */
  line?: number;
  /** The place's text when it is not a line ("item 3", "sheet Payouts row 12"). */
  location?: string;
  reference_id: string;
  /** Exact decimal text. */
  amount: string;
  currency: string;
  recipient: string;
  description?: string;
  /** The payout hash, or '' when none is needed (a dry run). */
  hash: string;
  /** The reference of the payout this row retries (a retry file's row sent under its new_reference_id). */
  retry_of?: string;
}

/** The row's line, or the number in its location's text ("item 3": 3). */
function lineOf(p: IntakeRow): number | null {
  if (p.line !== undefined) return p.line;
  const m = /\d+/.exec(p.location ?? '');
  return m ? Number(m[0]) : null;
}

/** The text of the row's place. */
function locationOf(p: IntakeRow): string {
  return p.line !== undefined ? `line ${p.line}` : (p.location ?? '');
}

/** Where a run's rows go: how a row waits to be written, and the statements that write and read rows. */
export interface RowTable {
  /** Appends what one row needs written to `out`. */
  values(run: number, row: number, p: IntakeRow, out: unknown[]): void;
  /** Writes `rows` rows from `firstRow` on, whose values `values` appended to `pending`. */
  write(firstRow: number, rows: number, pending: unknown[]): void;
  /** A stored row's reference and place. */
  at(run: number, row: number): { reference_id: string; file: string; location: string };
}

/** Values per payouts row, in the order of payoutsInsert's columns. */
export const PAYOUT_WIDTH = PAYOUT_ROWS.width;
/** Where a row's hash goes among its values (see payoutsTable's values). */
const HASH_AT = 10;

/** Inserts payouts rows, ROWS_PER_INSERT per statement (here and in the writer thread). */
export function payoutsInsert(db: StateDb): (values: unknown[]) => void {
  return rowWriter(db, {
    head: PAYOUT_ROWS.head,
    width: PAYOUT_WIDTH,
    perStatement: ROWS_PER_INSERT,
  });
}

/** Puts each row's payout hash in its place, from the row's own values (the writer thread's share). */
export function hashRows(values: unknown[]): void {
  for (let k = 0; k < values.length; k += PAYOUT_WIDTH) {
    const text = (i: number) => values[k + i] as string;
    values[k + HASH_AT] = payoutHash({
      reference_id: text(2),
      amount: text(6),
      currency: text(7),
      recipient: text(8),
    });
  }
}

/** state.db's payouts table. */
export function payoutsTable(db: StateDb): RowTable {
  const insert = payoutsInsert(db);
  const at = db.prepare(
    'SELECT reference_id, file, location FROM payouts WHERE run = ? AND row = ?',
  );
  return {
    values(run, row, p, out) {
      out.push(run, row, p.reference_id, p.file, lineOf(p), locationOf(p));
      out.push(p.amount, p.currency, p.recipient, p.description ?? null, p.hash, HASH_VERSION);
      out.push(p.retry_of ?? null);
    },
    write: (_firstRow, _rows, pending) => insert(pending),
    at: (run, row) => at.get(run, row) as ReturnType<RowTable['at']>,
  };
}

/** A dry run's staged chunks; its files are numbered as they come. */
export function stagedTable(db: StateDb): RowTable {
  const insert = db.prepare('INSERT INTO staged_chunks (first_row, payouts) VALUES (?, ?)');
  const addFile = db.prepare('INSERT INTO staged_files (id, name) VALUES (?, ?)');
  const chunk = db.prepare(
    'SELECT first_row, payouts FROM staged_chunks WHERE first_row <= ? ORDER BY first_row DESC LIMIT 1',
  );
  const files: string[] = [];
  const fileId = (name: string): number => {
    // Files come one after the other: the last one is almost always the one.
    let id = files.length - 1;
    if (files[id] !== name) {
      id = files.indexOf(name);
      if (id === -1) {
        id = files.push(name) - 1;
        addFile.run(id, name);
      }
    }
    return id;
  };
  return {
    values(_run, _row, p, out) {
      const line = p.line ?? null;
      const location = line === null ? (p.location ?? '') : null;
      const row = [p.reference_id, fileId(p.file), line, location, p.amount, p.currency];
      row.push(p.recipient);
      if (p.retry_of !== undefined) row.push(p.retry_of);
      out.push(row);
    },
    write: (firstRow, _rows, pending) => insert.run(firstRow, JSON.stringify(pending)),
    at(_run, row) {
      const c = chunk.get(row) as { first_row: number; payouts: string };
      const [ref, file, line, location] = (JSON.parse(c.payouts) as unknown[][])[
        row - c.first_row
      ]!;
      return {
        reference_id: ref as string,
        file: files[file as number]!,
        location: (location as string | null) ?? `line ${line}`,
      };
    },
  };
}
