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
import type { StateDb } from './db.js';
import { type LockWait, stateError } from './errors.js';
import type { JournalRecord } from '../domain/records.js';
import { recordStatements } from './journal-sql.js';

/** Writes a run's commits, one after the other, each in one transaction. */
export interface StateWriter {
  /** Resolves once the records are committed; after a failure, every later commit fails too. */
  commit(run: number, records: JournalRecord[]): Promise<void>;
  /** Ends the writer once the commits it was given are settled. */
  close(): Promise<void>;
}

/**
 * Applies a commit's records to a connection (inside the caller's transaction), with the
 * statements a shared history applies them with too (journal-sql.ts), each prepared once.
 */
export function applierOf(db: StateDb): (run: number, records: JournalRecord[]) => void {
  return (run, records) => {
    for (const r of records) {
      for (const s of recordStatements(run, r, 'sqlite')) db.prepare(s.sql).run(s.params);
    }
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
  // The thread waits for another program's lock after its notice, until its next reply.
  let endCountdown: (() => void) | undefined;
  const waitEnded = () => {
    endCountdown?.();
    endCountdown = undefined;
  };
  worker.on('message', (m: WriterReply) => {
    if ('notice' in m) {
      o.wait.notice(m.notice);
      waitEnded();
      endCountdown = o.wait.countdown?.(o.wait.waitMs);
      return;
    }
    waitEnded();
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
      waitEnded();
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
