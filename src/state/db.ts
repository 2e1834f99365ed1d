import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { MIGRATIONS } from './schema.js';
import { importV1Journals } from './v1/import.js';

/** A connection to state.db (or to a scratch database of the same schema). */
export type StateDb = Database.Database;

/** File name of the state database in the state folder. */
export const STATE_DB = 'state.db';

/** How long a statement waits for another process's write to finish before failing. */
const BUSY_TIMEOUT_MS = 30_000;

/** Applies the migrations the database has not seen yet, in one transaction. */
export function migrate(db: StateDb, path: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  if (current > MIGRATIONS.length) {
    throw new Error(
      `${path} was written by a newer version of payouts (schema ${current}, this version knows ${MIGRATIONS.length}); update payouts to use it`,
    );
  }
  if (current === MIGRATIONS.length) return;
  db.transaction(() => {
    // Another process may have migrated since the version was read: read it again under the lock.
    const now = db.pragma('user_version', { simple: true }) as number;
    for (const step of MIGRATIONS.slice(now)) db.exec(step);
    db.pragma(`user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/**
 * Opens (creating if need be) the state database of a state folder: WAL, every commit
 * synced (synchronous=FULL), migrated, and with any v1 journals imported once.
 */
export async function openStateDb(stateDir: string): Promise<StateDb> {
  mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  chmodSync(stateDir, 0o700);
  const path = join(stateDir, STATE_DB);
  // Created first with the owner's mode: SQLite gives its -wal and -shm files the same one.
  closeSync(openSync(path, 'a', 0o600));
  chmodSync(path, 0o600);
  const db = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    migrate(db, path);
    await importV1Journals(db, stateDir);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/** A private database of the same schema, deleted when closed: a dry run keeps nothing. */
export function openScratchDb(): StateDb {
  // '' is an anonymous temporary file: large runs spill to disk rather than fill memory.
  const db = new Database('');
  db.pragma('synchronous = OFF');
  db.pragma('journal_mode = OFF');
  db.pragma('locking_mode = EXCLUSIVE');
  // 32 MiB of pages: a large run's index mostly stays in memory, and memory stays bounded.
  db.pragma('cache_size = -32768');
  migrate(db, '(scratch)');
  return db;
}
