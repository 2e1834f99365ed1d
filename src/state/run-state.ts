import { randomUUID } from 'node:crypto';
import type { PayoutRequest } from '../api/types.js';
import type { PayoutOutcome } from '../domain/outcome.js';
import type { JournalMirror, JournalRecord, StatedByRef } from '../domain/records.js';
import { checkpoint, lockWaitOf, type StateDb } from './db.js';
import type { AdoptedId } from './adopt.js';
import { JOURNAL_SQL } from './journal-sql.js';
import type { OutcomeResult } from './outcome-result.js';
import type { ChargeMinor } from './outcome-tally.js';
import { RunOutcomes } from './outcomes.js';
import { type StateWriter, writerFor } from './writer.js';

const SQL = JOURNAL_SQL.sqlite;

/** Options of RunState.open. */
export interface OpenRunOptions {
  db: StateDb;
  /** The run its store adopted in `db` (adopt.ts), and its id. */
  run: AdoptedId;
  runId: string;
  chargeMinor: ChargeMinor;
  now?: () => Date;
  /** A shared history that every commit goes to as well, before it counts as done. */
  mirror?: JournalMirror;
  /** The highest request id the shared history holds for this run (0: none). */
  lastReqFloor?: number;
  /**
   * Who writes the run's attempts and withdrawals, as the store knows it: a shared history's
   * session (which its triggers check); by default, this run alone.
   */
  session?: string;
  /** Where commits are written (default: writerFor the connection). */
  writer?: StateWriter;
}

/** A payout of the run, as the engine sends it. */
export interface RunPayout {
  row: number;
  payout: PayoutRequest;
  hash: string;
}

/** Rows read per query when the run's payouts are listed. */
const PAGE_ROWS = 1000;
/** Buffered records that make a commit start without waiting for an intent. */
const MAX_BUFFERED = 10_000;

/** A promise with its settle functions, shared by every caller of one group commit. */
interface Batch {
  promise: Promise<void>;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** Makes a batch whose rejection is never reported as unhandled before someone awaits it. */
function newBatch(): Batch {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/** A string as is, a number or boolean as its text, anything else as null. */
function textOrNull(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return null;
}

/** The statements a run's state reads with. */
function statementsOf(db: StateDb) {
  return {
    // Raw rows (arrays cost less than objects): row, reference_id, amount, currency,
    // recipient, description, hash.
    page: db
      .prepare(
        `SELECT row, reference_id, amount, currency, recipient, description, hash
         FROM payouts WHERE run = ? AND row >= ? ORDER BY row LIMIT ${PAGE_ROWS}`,
      )
      .raw(true),
  };
}

/**
 * The state of one run in state.db, written ahead of every request: an intent (payouts in
 * flight, with the request number and send time) is committed before the request is sent;
 * outcomes are buffered and go with the next commit. Intents recorded in the same turn of the
 * event loop share one commit (group commit).
 */
export class RunState {
  readonly id: number;
  readonly runId: string;
  readonly resumed: boolean;
  readonly outcomes: RunOutcomes;
  readonly db: StateDb;
  private ops: JournalRecord[] = [];
  private batch: Batch | undefined;
  private readonly mirror: JournalMirror | undefined;
  private readonly writer: StateWriter;
  /** The commits, settled one after the other, each locally and then in the shared history. */
  private mirrored: Promise<void> = Promise.resolve();
  private failure: unknown;
  private closed = false;
  private lastReq: number;
  private commits = 0;
  private readonly now: () => Date;
  private readonly stmts;
  private readonly session: string;

  private constructor(run: { id: number; runId: string; resumed: boolean }, opts: OpenRunOptions) {
    const { db } = opts;
    const { id } = run;
    this.db = db;
    this.id = id;
    this.runId = run.runId;
    this.resumed = run.resumed;
    this.now = opts.now ?? (() => new Date());
    this.session = opts.session ?? `run:${randomUUID()}`;
    this.outcomes = new RunOutcomes(db, id, opts.chargeMinor);
    this.stmts = statementsOf(db);
    this.mirror = opts.mirror;
    this.writer = opts.writer ?? writerFor(db, lockWaitOf(db));
    const r = db.prepare(SQL.lastReq).get(id) as { n: number };
    this.lastReq = Math.max(r.n, opts.lastReqFloor ?? 0);
  }

  /**
   * Opens the state of a run its store adopted (adopt.ts): the rows pass 1 staged, or the run
   * they resume.
   */
  static open(opts: OpenRunOptions): RunState {
    return new RunState({ ...opts.run, runId: opts.runId }, opts);
  }

  /** Highest request id used so far, so a resumed run numbers new requests after it. */
  get lastRequestId(): number {
    return this.lastReq;
  }

  /** Number of commits so far, to observe group commit. */
  get commitCount(): number {
    return this.commits;
  }

  /**
   * Durable: resolves once the intent of request `req` for these rows of the run is committed;
   * intents of one turn share one commit.
   */
  recordIntent(req: number, rows: readonly number[]): Promise<void> {
    try {
      this.assertOpen();
      if (!Number.isSafeInteger(req) || req <= this.lastReq)
        throw new Error(`request id ${req} is already used`);
      if (rows.length === 0) throw new Error('an intent needs at least one payout');
      if (this.failure !== undefined) throw this.failure;
    } catch (err) {
      return Promise.reject(err);
    }
    this.lastReq = req;
    const at = this.now().toISOString();
    this.ops.push({ kind: 'intent', req, at, rows, session: this.session });
    return this.commit();
  }

  /** Buffered: goes with the next commit; losing it in a crash is safe. */
  recordOutcome(req: number, results: OutcomeResult[]): void {
    this.assertOpen();
    if (results.length === 0) return;
    const at = this.now().toISOString();
    const seen: string[] = [];
    // By reference: a reference stated twice keeps its last result.
    const done = new Map<string, StatedByRef>();
    for (const r of results) {
      const status = textOrNull(r.status);
      const ref = textOrNull(r.ref) ?? '';
      // A result without a status proves the service saw the payout, not what became of it.
      if (!status) seen.push(ref);
      else {
        const charges =
          typeof r.charges === 'number' && Number.isFinite(r.charges) ? String(r.charges) : null;
        done.delete(ref);
        done.set(ref, [ref, status, textOrNull(r.transaction_id), charges, textOrNull(r.message)]);
      }
    }
    if (seen.length) this.buffer({ kind: 'seen', req, at, refs: seen });
    if (done.size) this.buffer({ kind: 'done', req, at, list: [...done.values()] });
  }

  /**
   * Buffered: the results the service stated for payouts of request `req`, each with the
   * outcome its row reports; a stated result is one row of `results`, which is also the outcome.
   */
  recordResults(req: number, rows: Array<{ row: number; outcome: PayoutOutcome }>): void {
    this.assertOpen();
    if (rows.length === 0) return;
    const journal = { req, at: this.now().toISOString() };
    for (const r of rows) this.outcomes.setDone(r.row, r.outcome, journal);
    if (this.outcomes.pendingRows >= MAX_BUFFERED) this.commit().catch(() => {});
  }

  /** Buffered: the request provably did not apply, so its payouts are free to send again. */
  recordNotApplied(req: number, refs: string[], why: string): void {
    this.assertOpen();
    if (refs.length === 0) return;
    const at = this.now().toISOString();
    this.buffer({ kind: 'not-applied', req, at, refs, why, session: this.session });
  }

  /** Buffered: the outcome of these payouts could not be established; they stay in flight. */
  recordUnknown(refs: string[], why: string): void {
    this.assertOpen();
    if (refs.length === 0) return;
    this.buffer({ kind: 'unknown', at: this.now().toISOString(), refs, why });
  }

  /** Commits everything buffered. */
  flush(): Promise<void> {
    if (this.failure !== undefined) return Promise.reject(this.failure);
    if (this.ops.length === 0 && !this.outcomes.dirty && !this.batch) {
      // The last batch may still be on its way to the shared history.
      return this.mirrored.then(() => {
        if (this.failure !== undefined) throw this.failure;
      });
    }
    return this.commit();
  }

  /** Commits what is buffered; later record calls throw. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.flush();
    } finally {
      this.closed = true;
      await this.writer.close();
      // A failed run's state is left as it is: its -wal may be all that holds its last commits.
      if (this.failure === undefined) checkpoint(this.db);
    }
  }

  /** The run's payouts in row order, read a page at a time. */
  *payouts(): Generator<RunPayout> {
    let from = 0;
    for (;;) {
      const page = this.stmts.page.all(this.id, from) as Array<
        [number, string, string, string, string, string | null, string]
      >;
      for (const [row, reference_id, amount, currency, recipient, description, hash] of page) {
        const payout: PayoutRequest = { reference_id, amount, currency, recipient };
        if (description) payout.description = description;
        yield { row, payout, hash };
      }
      if (page.length < PAGE_ROWS) return;
      from = page[page.length - 1]![0] + 1;
    }
  }

  /** Throws when the state is closed. */
  private assertOpen(): void {
    if (this.closed) throw new Error(`the state of run ${this.runId} is closed`);
  }

  /** Queues a buffered record; a long queue starts a commit of its own. */
  private buffer(op: JournalRecord): void {
    this.ops.push(op);
    if (this.ops.length >= MAX_BUFFERED) this.commit().catch(() => {});
  }

  /** Joins the commit of this turn of the event loop, or schedules one. */
  private commit(): Promise<void> {
    if (this.batch) return this.batch.promise;
    const batch = newBatch();
    this.batch = batch;
    setImmediate(() => this.runBatch(batch));
    return batch.promise;
  }

  /**
   * Hands every queued record to the writer as one commit; settles everyone who joined once it
   * is committed (and, with a shared history, once it is there too).
   */
  private runBatch(batch: Batch): void {
    // From here on, new records wait for the next batch.
    this.batch = undefined;
    if (this.failure !== undefined) {
      batch.reject(this.failure);
      return;
    }
    const touch: JournalRecord = {
      kind: 'touch',
      lastReq: this.lastReq,
      at: this.now().toISOString(),
    };
    const records = [...this.ops, ...this.outcomes.takePending(), touch];
    this.ops = [];
    const committed = this.writer.commit(this.id, records);
    committed.catch(() => {});
    const mirror = this.mirror;
    this.mirrored = this.mirrored.then(async () => {
      try {
        if (this.failure !== undefined) throw this.failure;
        await committed;
        this.outcomes.settle(true);
        if (mirror) await mirror.apply(records);
        this.commits += 1;
        batch.resolve();
      } catch (err) {
        // What was not committed is lost: the run must not go on as if it had been.
        if (this.failure === undefined) this.outcomes.settle(false, err);
        this.failure ??= err;
        batch.reject(err);
      }
    });
  }
}

/** A payouts row's payout columns. */
export interface PayoutRow {
  row: number;
  reference_id: string;
  amount: string;
  currency: string;
  recipient: string;
  description: string | null;
}

/** The wire form of a stored payout. */
export function payoutOf(r: PayoutRow): PayoutRequest {
  const p: PayoutRequest = {
    reference_id: r.reference_id,
    amount: r.amount,
    currency: r.currency,
    recipient: r.recipient,
  };
  if (r.description) p.description = r.description;
  return p;
}
