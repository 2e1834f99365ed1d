/**
 * Where `payouts runs`, `runs show` and `status`'s look into the history read runs: the state
 * folder's state.db, or a shared history on PostgreSQL, whose connection a stop ends at once.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Output } from '../../output/output.js';
import type { PgHistory } from '../../state/pg/history.js';
import {
  openStateDb,
  type RowReader,
  type RowWriter,
  rowWriterOf,
  STATE_DB,
  stateDbKeeper,
  stateDbWriter,
} from '../../state/index.js';

/** Where runs are read: the state folder, or a shared history (postgres://…) when given. */
export interface RunsSource {
  stateDir: string;
  stateUrl?: string;
  /** Ends the wait for a shared history's connection at once (a Ctrl-C). */
  stop?: AbortSignal;
  /** A session open on the shared history (withSession), which every read shares. */
  session?: PgHistory;
}

type Read<T> = (rows: RowReader, keep: RowWriter, write: RowWriter) => Promise<T>;

/** Runs `read` on a shared history's session. */
function readOn<T>(history: PgHistory, read: Read<T>): Promise<T> {
  const write = rowWriterOf((sql, params) => history.rows(sql, params));
  return read((sql, params) => history.rows(sql, params), write, write);
}

/**
 * Runs `work` with one session on the shared history, when runs are read from one, that its
 * reads share: one login rather than one a read (on a distant server each costs round trips
 * for TCP, TLS and the password's exchange).
 */
export async function withSession<T>(
  from: RunsSource,
  work: (from: RunsSource) => Promise<T>,
): Promise<T> {
  if (!from.stateUrl || from.session) return work(from);
  const { PgHistory } = await import('../../state/pg/history.js');
  const session = await PgHistory.open(from.stateUrl, from.stop);
  try {
    return await work({ ...from, session });
  } finally {
    await session.close();
  }
}

/**
 * Runs `read` on the store runs are read from (a shared history, else state.db); undefined
 * when there is no state.db (nothing was ever sent), so that reading creates nothing. `keep`
 * writes a run's counts for the next listing (run-counts.ts): a failure there changes nothing;
 * `write` adds what must be kept (the service's word: checks.ts), waiting for state.db's lock.
 */
export async function withRunReader<T>(
  from: RunsSource,
  output: Output,
  read: Read<T>,
): Promise<T | undefined> {
  if (from.stateUrl) return withSession(from, (f) => readOn(f.session!, read));
  const file = join(from.stateDir, STATE_DB);
  if (!existsSync(file)) return undefined;
  const db = await openStateDb(from.stateDir, { notice: (m) => output.warn(m) });
  try {
    const rows: RowReader = async (sql, params) => db.prepare(sql).all(...params);
    return await read(rows, stateDbKeeper(file), stateDbWriter(db));
  } finally {
    db.close();
  }
}
