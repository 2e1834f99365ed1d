/**
 * The writer thread of a send (see writer.ts): owns a write connection to state.db, with the
 * main connection's pragmas and error translation, and commits what the main thread posts.
 * Every commit waiting when one ends goes in the next transaction (group commit).
 */
import {
  type MessagePort,
  parentPort,
  receiveMessageOnPort,
  workerData,
} from 'node:worker_threads';
import { openDatabase } from './db.js';
import { guardConnection, StateError } from './errors.js';
import type { JournalRecord } from '../domain/records.js';
import { applierOf, type WriterData, type WriterReply } from './writer.js';

interface Commit {
  id: number;
  run: number;
  records: JournalRecord[];
}

const data = workerData as WriterData;
const port = parentPort as MessagePort;
const db = openDatabase(data.file);
guardConnection(db, data.file, {
  notice: (notice) => port.postMessage({ notice } satisfies WriterReply),
  noticeMs: data.noticeMs,
  waitMs: data.waitMs,
});
db.exec('PRAGMA journal_mode = WAL');
db.exec('PRAGMA synchronous = FULL');
const apply = applierOf(db);
const gate = data.gate ? new Int32Array(data.gate) : undefined;
/** The error of a failed commit: no later one is written. */
let failure: WriterReply | undefined;

port.on('message', (first: Commit | 'close') => {
  const commits: Commit[] = [];
  let close = false;
  for (let m: unknown = first; m !== undefined; m = receiveMessageOnPort(port)?.message) {
    if (m === 'close') close = true;
    else commits.push(m as Commit);
  }
  if (commits.length) commitAll(commits);
  // Closed here, not torn down by terminate(): the connection and its statements end in order.
  if (close) {
    db.close();
    port.close();
  }
});

/** Applies the commits in one transaction and says how it went. */
function commitAll(commits: Commit[]): void {
  const ids = commits.map((c) => c.id);
  if (gate) Atomics.wait(gate, 0, 0);
  if (failure === undefined) {
    try {
      db.transaction(() => {
        for (const c of commits) apply(c.run, c.records);
      })();
      port.postMessage({ done: ids } satisfies WriterReply);
      return;
    } catch (err) {
      failure = { failed: [], error: errorParts(err) };
    }
  }
  port.postMessage({ ...failure, failed: ids } as WriterReply);
}

/** The driver's error behind a StateError, as plain data: the main thread translates it again. */
function errorParts(err: unknown): { message: string; code?: string; path?: string } {
  const e = (err instanceof StateError ? err.cause : err) as {
    message?: unknown;
    code?: unknown;
    path?: unknown;
  };
  const parts: { message: string; code?: string; path?: string } = { message: String(e?.message) };
  if (typeof e?.code === 'string') parts.code = e.code;
  if (typeof e?.path === 'string') parts.path = e.path;
  return parts;
}
