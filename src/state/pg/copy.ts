/** How far a run's payouts are copied into a shared history, and what a commit waits for. */
import type { JournalRecord, StagedPayout } from '../../domain/records.js';

/**
 * How far a run's payouts are copied into the shared history: the rows below `rows` are
 * committed. The first page is copied with the run; the others follow while the run sends,
 * and an intent waits until its rows are there, so a later run's lookup by reference (which
 * joins the payouts) finds every payout an intent names.
 */
export class CopyProgress {
  private rows: number;
  private done = false;
  private error: unknown;
  private waiters: Array<{ rows: number; resolve: () => void; reject: (e: unknown) => void }> = [];

  constructor(rows: number, done: boolean) {
    this.rows = rows;
    this.done = done;
  }

  /** Resolves once the rows below `rows` are copied (Infinity: all of them). */
  reached(rows: number): Promise<void> {
    if (this.error !== undefined) return Promise.reject(this.error);
    if (this.done || this.rows >= rows) return Promise.resolve();
    return new Promise((resolve, reject) => this.waiters.push({ rows, resolve, reject }));
  }

  /** The rows below `rows` are committed. */
  advance(rows: number): void {
    this.rows = rows;
    this.wake();
  }

  finish(): void {
    this.done = true;
    this.wake();
  }

  fail(err: unknown): void {
    this.error = err;
    for (const w of this.waiters.splice(0)) w.reject(err);
  }

  private wake(): void {
    const waiting = this.waiters;
    this.waiters = [];
    for (const w of waiting) {
      if (this.done || this.rows >= w.rows) w.resolve();
      else this.waiters.push(w);
    }
  }
}

/** The rows a commit's records need copied first: an intent's, or all for a lookup by reference. */
export function rowsNeeded(records: JournalRecord[]): number {
  let need = 0;
  for (const r of records) {
    if (r.kind === 'intent') for (const row of r.rows) need = Math.max(need, row + 1);
    else if (r.kind !== 'results' && r.kind !== 'reports' && r.kind !== 'touch') return Infinity;
  }
  return need;
}

/** The row number of a page's last payout. */
export function lastRowOf(page: StagedPayout[]): number {
  return page[page.length - 1]!.row;
}
