/**
 * The writer thread of a send (see writer.ts): owns a write connection to state.db, with the
 * main connection's pragmas and error translation. During pass 1 it hashes and inserts the
 * run's rows as the main thread reads them (unsynced batches: the run begins only in a later
 * synced commit); then it commits what the main thread posts, every commit waiting when one
 * ends in the next transaction (group commit).
 */
import {
  type MessagePort,
  parentPort,
  receiveMessageOnPort,
  workerData,
} from 'node:worker_threads';
import { openDatabase, type StateDb } from './db.js';
import { guardConnection, StateError } from './errors.js';
import type { JournalRecord } from '../domain/records.js';
import { BATCH_ROWS } from './intake.js';
import { hashRows, PAYOUT_WIDTH, payoutsInsert } from './row-tables.js';
import {
  applierOf,
  type WriterData,
  type WriterError,
  type WriterMessage,
  type WriterReply,
} from './writer.js';

interface Commit {
  id: number;
  run: number;
  records: JournalRecord[];
}

const data = workerData as WriterData;
const port = parentPort as MessagePort;
/** The connection, opened when the main thread names the file (it starts this thread first). */
let db: StateDb;
let apply: ReturnType<typeof applierOf>;
const gate = data.gate ? new Int32Array(data.gate) : undefined;
const flushed = new Int32Array(data.flushed);
/** The error of a failed commit or staging: nothing later is written. */
let failure: WriterError | undefined;

/** Pass 1's rows: inserted in unsynced batches, committed when the main thread flushes. */
const staging = {
  insert: undefined as ((values: unknown[]) => void) | undefined,
  /** A batch's transaction is open. */
  open: false,
  /** Commits are unsynced until the rows are flushed (synchronous = NORMAL). */
  unsynced: false,
  rows: 0,
};

port.on('message', (first: WriterMessage) => {
  const commits: Commit[] = [];
  let close = false;
  for (let m: unknown = first; m !== undefined; m = receiveMessageOnPort(port)?.message) {
    const message = m as WriterMessage;
    if (message === 'close') close = true;
    else if ('open' in message) open(message.open);
    else if ('stage' in message) stage(message.stage);
    else if ('flush' in message) flush(message.flush);
    else commits.push(message as Commit);
  }
  if (commits.length) commitAll(commits);
  // Closed here, not torn down by terminate(): the connection and its statements end in order.
  if (close) {
    // Rows never flushed belong to a run that never began.
    if (staging.open && db?.inTransaction) db.exec('ROLLBACK');
    db?.close();
    port.close();
  }
});

/** Opens state.db with the main connection's pragmas and waits for another program's lock. */
function open(o: Extract<WriterMessage, { open: unknown }>['open']): void {
  try {
    db = openDatabase(o.file);
    guardConnection(db, o.file, {
      notice: (notice) => port.postMessage({ notice } satisfies WriterReply),
      noticeMs: o.noticeMs,
      waitMs: o.waitMs,
    });
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    apply = applierOf(db);
  } catch (err) {
    fail(err);
  }
}

/** Hashes and inserts rows of pass 1 (PAYOUT_WIDTH values each). */
function stage(values: unknown[]): void {
  if (failure !== undefined) return;
  try {
    if (!staging.open) {
      if (!staging.unsynced) db.exec('PRAGMA synchronous = NORMAL');
      staging.unsynced = true;
      db.exec('BEGIN IMMEDIATE');
      staging.open = true;
    }
    staging.insert ??= payoutsInsert(db);
    staging.rows += values.length / PAYOUT_WIDTH;
    hashRows(values);
    staging.insert(values);
    if (staging.rows >= BATCH_ROWS) endBatch();
  } catch (err) {
    fail(err);
  }
}

/** Commits the staged rows and says so, through the shared counter and as a reply. */
function flush(id: number): void {
  if (failure === undefined) {
    try {
      endStaging();
      Atomics.store(flushed, 0, id);
      Atomics.notify(flushed, 0);
      port.postMessage({ done: [id] } satisfies WriterReply);
      return;
    } catch (err) {
      fail(err);
    }
  }
  port.postMessage({ failed: [id], error: failure } as WriterReply);
}

/** Commits the open batch of staged rows. */
function endBatch(): void {
  if (!staging.open) return;
  db.exec('COMMIT');
  staging.open = false;
  staging.rows = 0;
}

/** Commits the staged rows, and syncs every commit again, as a run's commits must be. */
function endStaging(): void {
  endBatch();
  if (!staging.unsynced) return;
  db.exec('PRAGMA synchronous = FULL');
  staging.unsynced = false;
}

/** Keeps the first error; tells a main thread waiting in flushSync. */
function fail(err: unknown): void {
  try {
    if (staging.open && db.inTransaction) db.exec('ROLLBACK');
  } catch {
    // The error to tell is the one that stopped the staging.
  }
  staging.open = false;
  failure ??= errorParts(err);
  data.failures.postMessage(failure);
  Atomics.store(flushed, 1, 1);
  Atomics.notify(flushed, 0);
}

/** Applies the commits in one transaction and says how it went. */
function commitAll(commits: Commit[]): void {
  const ids = commits.map((c) => c.id);
  if (gate) Atomics.wait(gate, 0, 0);
  if (failure === undefined) {
    try {
      endStaging();
      db.transaction(() => {
        for (const c of commits) apply(c.run, c.records);
      })();
      port.postMessage({ done: ids } satisfies WriterReply);
      return;
    } catch (err) {
      failure = errorParts(err);
    }
  }
  port.postMessage({ failed: ids, error: failure } as WriterReply);
}

/** The driver's error behind a StateError, as plain data: the main thread translates it again. */
function errorParts(err: unknown): WriterError {
  const e = (err instanceof StateError ? err.cause : err) as {
    message?: unknown;
    code?: unknown;
    path?: unknown;
  };
  const parts: WriterError = { message: String(e?.message) };
  if (typeof e?.code === 'string') parts.code = e.code;
  if (typeof e?.path === 'string') parts.path = e.path;
  return parts;
}
