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
  /** The session every read of the shared history shares (sharedSession), opened at the first. */
  session?: (stop?: AbortSignal) => Promise<PgHistory>;
}

type Read<T> = (rows: RowReader, keep: RowWriter, write: RowWriter) => Promise<T>;

/** Runs `read` on a shared history's session. */
function readOn<T>(history: PgHistory, read: Read<T>): Promise<T> {
  const write = rowWriterOf((sql, params) => history.rows(sql, params));
  return read((sql, params) => history.rows(sql, params), write, write);
}

/**
 * `from` with one session on its shared history, when runs are read from one, that all its
 * reads share: one login rather than one a read (on a distant server each costs round trips
 * for TCP, TLS and the password's exchange). Opened at the first read (a read that failed to
 * open it leaves the next to try again); close() ends it.
 */
export function sharedSession(from: RunsSource): RunsSource & { close(): Promise<void> } {
  const url = from.stateUrl;
  if (!url || from.session) return { ...from, close: async () => {} };
  let opening: Promise<PgHistory> | undefined;
  const session = (stop?: AbortSignal) => {
    opening ??= import('../../state/pg/history.js').then(({ PgHistory }) =>
      PgHistory.open(url, stop),
    );
    opening.catch(() => {
      opening = undefined;
    });
    return opening;
  };
  const close = async () => {
    await (await opening?.catch(() => undefined))?.close();
  };
  return { ...from, session, close };
}

/** Runs `work` with `from`'s reads of a shared history on one session (sharedSession). */
export async function withSession<T>(
  from: RunsSource,
  work: (from: RunsSource) => Promise<T>,
): Promise<T> {
  const shared = sharedSession(from);
  try {
    return await work(shared);
  } finally {
    await shared.close();
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
  if (from.stateUrl) return withSession(from, async (f) => readOn(await f.session!(f.stop), read));
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
