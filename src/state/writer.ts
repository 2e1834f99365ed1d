/**
 * Where a run's commits are written. state.db's commits are synced (synchronous=FULL), and an
 * fsync on the main thread holds up every answer in flight; so a send's commits go to a worker
 * thread that owns a write connection of its own (state-writer.ts), and the main thread keeps
 * its connection for reads, which WAL lets it make meanwhile. A private database (a shared
 * history's local copy, unsynced) and the sources under test write in the thread itself.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  MessageChannel,
  type MessagePort,
  receiveMessageOnPort,
  Worker,
} from 'node:worker_threads';
import type { StateDb } from './db.js';
import { type LockWait, stateError } from './errors.js';
import type { JournalRecord } from '../domain/records.js';
import type { RowStager } from './intake.js';
import { recordStatements } from './journal-sql.js';

/** Writes a run's commits, one after the other, each in one transaction. */
export interface StateWriter {
  /** Resolves once the records are committed; after a failure, every later commit fails too. */
  commit(run: number, records: JournalRecord[]): Promise<void>;
  /** Ends the writer once the commits it was given are settled. */
  close(): Promise<void>;
  /** Where pass 1's rows can be written meanwhile, when the writer is a thread of its own. */
  stager?: RowStager;
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
  /** Test hook: the thread holds each commit while element 0 of this Int32Array is 0. */
  gate?: SharedArrayBuffer;
  /** [the last staging flush done, 1 once staging failed]: what flushSync waits on. */
  flushed: SharedArrayBuffer;
  /** Where the thread tells a failed staging, for the main thread to read while it waits. */
  failures: MessagePort;
}

/** A message to the writer thread: pass 1's rows, a flush of them, a commit, or the end. */
export type WriterMessage =
  | { open: { file: string; noticeMs: number; waitMs: number } }
  | { stage: unknown[] }
  | { flush: number }
  | { id: number; run: number; records: JournalRecord[] }
  | 'close';

/** The driver's error behind a failed commit, as plain data: the main thread translates it again. */
export interface WriterError {
  message: string;
  code?: string;
  path?: string;
}

/** A message from the writer thread. */
export type WriterReply =
  | { notice: string }
  | { done: number[] }
  | { failed: number[]; error: WriterError };

/** Options of threadWriter. */
export interface ThreadWriterOptions {
  /** state.db's path, and how its connection waits for another program's lock. */
  file: string;
  wait: LockWait;
  script?: URL;
  gate?: SharedArrayBuffer;
}

/** A writer thread before it has a database: started early, it loads its code meanwhile. */
export interface WriterThread {
  worker: Worker;
  failures: MessageChannel;
  flushed: SharedArrayBuffer;
}

/** Starts a writer thread, which opens a database when threadWriter names it. */
export function startWriterThread(
  script: URL = WRITER_SCRIPT,
  gate?: SharedArrayBuffer,
): WriterThread {
  const failures = new MessageChannel();
  const flushed = new SharedArrayBuffer(8);
  const data: WriterData = { flushed, failures: failures.port2 };
  if (gate) data.gate = gate;
  const worker = new Worker(script, { workerData: data, transferList: [failures.port2] });
  worker.unref();
  return { worker, failures, flushed };
}

/** A writer thread when the bundle has its script (the sources' tests write in their thread). */
export function builtWriterThread(): WriterThread | undefined {
  return existsSync(fileURLToPath(WRITER_SCRIPT)) ? startWriterThread() : undefined;
}

/** Ends a writer thread no writer took. */
export function dropWriterThread(thread: WriterThread | undefined): void {
  if (!thread) return;
  void thread.worker.terminate();
  thread.failures.port1.close();
}

/**
 * The writer to use for a connection: the thread started for it (or a new one) for state.db
 * when the bundle has its script; else this thread.
 */
export function writerFor(
  db: StateDb,
  wait: LockWait | undefined,
  thread?: WriterThread,
): StateWriter {
  if (wait === undefined || !existsSync(fileURLToPath(WRITER_SCRIPT))) {
    dropWriterThread(thread);
    return localWriter(db);
  }
  return threadWriter({ file: db.name, wait }, thread);
}

/**
 * Commits in a worker thread. The thread keeps the event loop alive only while a commit is
 * pending, so a finished send exits, and a send waiting for a commit is not taken for a stall.
 */
export function threadWriter(
  o: ThreadWriterOptions,
  thread: WriterThread = startWriterThread(o.script, o.gate),
): StateWriter {
  const { worker, failures, flushed } = thread;
  const { noticeMs, waitMs } = o.wait;
  worker.postMessage({ open: { file: o.file, noticeMs, waitMs } } satisfies WriterMessage);
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
  // Resolves when the thread has done everything posted before it (a commit, or a flush).
  const request = (message: (id: number) => WriterMessage): Promise<void> => {
    if (failure !== undefined) return Promise.reject(failure);
    const id = ++seq;
    const done = new Promise<void>((resolve, reject) => pending.set(id, { resolve, reject }));
    worker.ref();
    worker.postMessage(message(id));
    return done;
  };
  const stager: RowStager = {
    stage: (values) => worker.postMessage({ stage: values } satisfies WriterMessage),
    flush: () => request((id) => ({ flush: id })),
    flushSync() {
      if (failure !== undefined) throw failure;
      const id = ++seq;
      worker.postMessage({ flush: id } satisfies WriterMessage);
      const err = waitFlushed(new Int32Array(flushed), id, failures.port1);
      if (!err) return;
      failure ??= stateError(err, o.file);
      throw failure;
    },
  };
  return {
    stager,
    commit: (run, records) => request((id) => ({ id, run, records })),
    // The run flushes first: nothing is pending unless a commit failed.
    async close() {
      closing = true;
      worker.ref();
      worker.postMessage('close');
      await exited;
      failures.port1.close();
    },
  };
}

/**
 * Waits in this thread until the writer thread has flushed up to `id`; the driver's error
 * when its staging failed instead. (Its notices of another program's lock show afterwards.)
 */
function waitFlushed(
  flushed: Int32Array,
  id: number,
  failures: MessagePort,
): (Error & { code?: string }) | undefined {
  for (;;) {
    const done = Atomics.load(flushed, 0);
    if (done >= id) return undefined;
    if (Atomics.load(flushed, 1) !== 0) {
      const m = receiveMessageOnPort(failures)?.message as WriterError | undefined;
      return Object.assign(new Error(m?.message ?? 'the writer thread failed'), m);
    }
    Atomics.wait(flushed, 0, done, 1_000);
  }
}
