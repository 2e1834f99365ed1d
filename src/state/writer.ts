/**
 * Where a run's commits are written. state.db's commits are synced (synchronous=FULL), and an
 * fsync on the main thread holds up every answer in flight; so a send's commits go to a worker
 * thread that owns a write connection of its own (state-writer.ts), and the main thread keeps
 * its connection for reads, which WAL lets it make meanwhile. A private database (a shared
 * history's local copy, unsynced) and the sources under test write in the thread itself.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { rowWriter, type StateDb } from './db.js';
import { type LockWait, stateError } from './errors.js';
import type { JournalRecord } from '../domain/records.js';

/** Writes a run's commits, one after the other, each in one transaction. */
export interface StateWriter {
  /** Resolves once the records are committed; after a failure, every later commit fails too. */
  commit(run: number, records: JournalRecord[]): Promise<void>;
  /** Ends the writer once the commits it was given are settled. */
  close(): Promise<void>;
}

/** Payouts an intent statement takes. */
const INTENT_ROWS = 100;
/** Rows a results or reports statement takes. */
const ROWS_PER_WRITE = 100;

/** Applies a commit's records to a connection (inside the caller's transaction). */
export function applierOf(db: StateDb): (run: number, records: JournalRecord[]) => void {
  const s = statementsOf(db);
  return (run, records) => {
    for (const r of records) {
      switch (r.kind) {
        case 'intent': {
          const values: unknown[] = [];
          for (const row of r.rows) values.push(run, row, 'in_flight', r.req, r.at, null, r.at);
          s.intent(values);
          break;
        }
        case 'seen':
          s.seen.run({ run, refs: JSON.stringify(r.refs), req: r.req, at: r.at });
          break;
        case 'done':
          s.done.run({ run, list: JSON.stringify(r.list), req: r.req, at: r.at });
          break;
        case 'not-applied':
          s.notApplied.run({ run, refs: JSON.stringify(r.refs), req: r.req, why: r.why, at: r.at });
          break;
        case 'unknown':
          s.unknown.run({ run, refs: JSON.stringify(r.refs), why: r.why, at: r.at });
          break;
        // A row writer empties its list: a shared history still needs these.
        case 'results':
          s.results(r.values.slice());
          break;
        case 'reports':
          s.reports(r.values.slice());
          break;
        case 'touch':
          s.touch.run(r.lastReq, r.at, run);
          break;
      }
    }
  };
}

/** The statements a run's commits write with. */
function statementsOf(db: StateDb) {
  // These take a record's references as one JSON array, found through the reference index.
  const rows = `SELECT p.row FROM payouts p WHERE p.run = @run
    AND p.reference_id IN (SELECT value FROM json_each(@refs))`;
  const open = 'NOT EXISTS (SELECT 1 FROM results d WHERE d.run = @run AND d.row = p.row)';
  return {
    // A row of intents a payout, or its state again if it had one (sent again once freed).
    intent: rowWriter(db, {
      head: 'INSERT INTO intents (run, row, state, req, sent_at, note, updated_at)',
      width: 7,
      perStatement: INTENT_ROWS,
      tail: `ON CONFLICT (run, row) DO UPDATE SET state = 'in_flight', req = excluded.req,
        sent_at = excluded.sent_at, note = NULL, updated_at = excluded.updated_at`,
    }),
    // Results read back by reference: [ref, status, transaction id, charges, message] each.
    done: db.prepare(
      `INSERT OR REPLACE INTO results (run, row, req, status, transaction_id, charges, message, at)
       SELECT @run, p.row, @req, j.value ->> 1, j.value ->> 2, j.value ->> 3, j.value ->> 4, @at
       FROM json_each(@list) j JOIN payouts p ON p.run = @run AND p.reference_id = j.value ->> 0`,
    ),
    // Seen by the service, status not known: in flight, if this run had not sent it yet.
    seen: db.prepare(
      `INSERT INTO intents (run, row, state, req, sent_at, updated_at)
       SELECT @run, p.row, 'in_flight', @req, @at, @at FROM payouts p
       WHERE p.run = @run AND p.reference_id IN (SELECT value FROM json_each(@refs)) AND ${open}
       ON CONFLICT (run, row) DO NOTHING`,
    ),
    notApplied: db.prepare(
      `UPDATE intents SET state = 'free', note = @why, updated_at = @at
       WHERE run = @run AND row IN (${rows} AND ${open})
         AND state IN ('in_flight', 'unknown') AND (@req = -1 OR req = @req)`,
    ),
    // A payout never sent, or freed, becomes unknown as of now (request -1).
    unknown: db.prepare(
      `INSERT INTO intents (run, row, state, req, sent_at, note, updated_at)
       SELECT @run, p.row, 'unknown', -1, @at, @why, @at FROM payouts p
       WHERE p.run = @run AND p.reference_id IN (SELECT value FROM json_each(@refs)) AND ${open}
       ON CONFLICT (run, row) DO UPDATE SET state = 'unknown', note = excluded.note,
         updated_at = excluded.updated_at,
         req = iif(intents.state = 'free', -1, intents.req),
         sent_at = iif(intents.state = 'free', excluded.sent_at, intents.sent_at)`,
    ),
    results: rowWriter(db, {
      head: 'INSERT OR REPLACE INTO results (run, row, req, status, transaction_id, charges, message, at)',
      width: 8,
      perStatement: ROWS_PER_WRITE,
    }),
    reports: rowWriter(db, {
      head: `INSERT OR REPLACE INTO reports (run, row, status, transaction_id, charges, message,
        sent_earlier)`,
      width: 7,
      perStatement: ROWS_PER_WRITE,
    }),
    touch: db.prepare('UPDATE runs SET last_req = ?, updated_at = ? WHERE id = ?'),
  };
}

/** Commits in this thread, on the connection the run reads with. */
export function localWriter(db: StateDb): StateWriter {
  const apply = applierOf(db);
  let failure: unknown;
  return {
    commit(run, records) {
      if (failure !== undefined) return Promise.reject(failure);
      try {
        db.transaction(() => apply(run, records))();
        return Promise.resolve();
      } catch (err) {
        failure = err;
        return Promise.reject(err);
      }
    },
    close: async () => {},
  };
}

/** The worker thread's script: next to the chunk that holds this module, in dist/chunks/. */
export const WRITER_SCRIPT = new URL('./state-writer.js', import.meta.url);

/** What the writer thread starts with (see state-writer.ts). */
export interface WriterData {
  file: string;
  noticeMs: number;
  waitMs: number;
  /** Test hook: the thread holds each commit while element 0 of this Int32Array is 0. */
  gate?: SharedArrayBuffer;
}

/** A message from the writer thread. */
export type WriterReply =
  | { notice: string }
  | { done: number[] }
  | { failed: number[]; error: { message: string; code?: string; path?: string } };

/** Options of threadWriter. */
export interface ThreadWriterOptions {
  /** state.db's path, and how its connection waits for another program's lock. */
  file: string;
  wait: LockWait;
  script?: URL;
  gate?: SharedArrayBuffer;
}

/** The writer to use for a connection: a thread for state.db when the bundle has its script. */
export function writerFor(db: StateDb, wait: LockWait | undefined): StateWriter {
  if (wait === undefined || !existsSync(fileURLToPath(WRITER_SCRIPT))) return localWriter(db);
  return threadWriter({ file: db.name, wait });
}

/**
 * Commits in a worker thread. The thread keeps the event loop alive only while a commit is
 * pending, so a finished send exits, and a send waiting for a commit is not taken for a stall.
 */
export function threadWriter(o: ThreadWriterOptions): StateWriter {
  const data: WriterData = { file: o.file, noticeMs: o.wait.noticeMs, waitMs: o.wait.waitMs };
  if (o.gate) data.gate = o.gate;
  const worker = new Worker(o.script ?? WRITER_SCRIPT, { workerData: data });
  worker.unref();
  const pending = new Map<number, { resolve: () => void; reject: (err: unknown) => void }>();
  let seq = 0;
  let failure: unknown;
  let closing = false;
  // Once closing, the thread holds the loop open until it has exited, whatever settles meanwhile.
  const idle = () => {
    if (pending.size === 0 && !closing) worker.unref();
  };
  const fail = (ids: Iterable<number>, err: unknown) => {
    failure ??= err;
    for (const id of [...ids]) {
      pending.get(id)?.reject(failure);
      pending.delete(id);
    }
    idle();
  };
  worker.on('message', (m: WriterReply) => {
    if ('notice' in m) return o.wait.notice(m.notice);
    if ('failed' in m) {
      const err = Object.assign(new Error(m.error.message), m.error);
      return fail(m.failed, stateError(err, o.file));
    }
    for (const id of m.done) {
      pending.get(id)?.resolve();
      pending.delete(id);
    }
    idle();
  });
  worker.on('error', (err) => fail(pending.keys(), stateError(err, o.file)));
  const exited = new Promise<void>((resolve) =>
    worker.on('exit', () => {
      fail(pending.keys(), new Error(`the writer of ${o.file} stopped`));
      resolve();
    }),
  );
  return {
    commit(run, records) {
      if (failure !== undefined) return Promise.reject(failure);
      const id = ++seq;
      const done = new Promise<void>((resolve, reject) => pending.set(id, { resolve, reject }));
      worker.ref();
      worker.postMessage({ id, run, records });
      return done;
    },
    // The run flushes first: nothing is pending unless a commit failed.
    async close() {
      closing = true;
      worker.ref();
      worker.postMessage('close');
      await exited;
    },
  };
}
