import { chmodSync, closeSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { UsageError } from '../errors.js';
import { openKeptFile } from '../files.js';
import { checkStateFolder } from './folder.js';
import { serviceIdOf, sha256Hex16 } from './hash.js';
import {
  guardConnection,
  type LockWait,
  moduleLoadError,
  newerSchemaError,
  StateError,
  stateError,
} from './errors.js';
import { clientWorkFor } from './dialect.js';
import { MIGRATIONS, STEPS } from './schema.js';

/** A connection to state.db (or to a scratch database of the same schema). */
export type StateDb = Database.Database;

/** File name of the state database in the state folder. */
export const STATE_DB = 'state.db';

/** How state.db waits for a lock another program holds: 2 s in silence, then 28 s more, told. */
const LOCK_WAIT: LockWait = { notice: () => {}, noticeMs: 2_000, waitMs: 28_000 };

/**
 * How long to wait for another program's lock on state.db, from `text` seconds
 * (PAYOUTS_STATE_WAIT; 30 when unset): the first part in silence (2 s at most), the rest told.
 */
export function lockWaitFor(text: string | undefined): Pick<LockWait, 'noticeMs' | 'waitMs'> {
  const t = text?.trim() ?? '';
  if (t === '') return { noticeMs: LOCK_WAIT.noticeMs, waitMs: LOCK_WAIT.waitMs };
  const seconds = Number(t);
  if (!/^\d+(\.\d+)?$/.test(t) || seconds < 0.1 || seconds > 3600) {
    throw new UsageError(
      `PAYOUTS_STATE_WAIT ${JSON.stringify(text)}: give the seconds to wait for state.db while another program holds it locked, from 0.1 to 3600 (default 30)`,
    );
  }
  const totalMs = Math.round(seconds * 1000);
  const noticeMs = Math.min(LOCK_WAIT.noticeMs, Math.round(totalMs / 2));
  return { noticeMs, waitMs: totalMs - noticeMs };
}

/**
 * Every connection, and through its cache every statement, for the life of the process:
 * better-sqlite3 12 on Node 24 aborts the process when the garbage collector frees one of
 * them outside JavaScript (an idle-time collection), so none may ever become garbage.
 */
const pinned: StateDb[] = [];

/** Makes a connection's statements live as long as it does: prepare() returns one per text. */
function pin(db: StateDb): StateDb {
  pinned.push(db);
  const prepare = db.prepare.bind(db);
  const statements = new Map<string, Database.Statement>();
  db.prepare = ((sql: string) => {
    let stmt = statements.get(sql);
    if (stmt === undefined) {
      stmt = prepare(sql);
      statements.set(sql, stmt);
    }
    return stmt;
  }) as StateDb['prepare'];
  return db;
}

/** How each state.db connection waits for another program's lock, for its writer thread. */
const lockWaits = new WeakMap<StateDb, LockWait>();

/** How a connection opened by openStateDb waits for a lock; undefined for any other. */
export function lockWaitOf(db: StateDb): LockWait | undefined {
  return lockWaits.get(db);
}

/** Opens a database file (or '' for a private temporary one) whose statements are never freed. */
export function openDatabase(path: string, opts: Database.Options = {}): StateDb {
  let db: StateDb;
  try {
    db = new Database(path, opts);
  } catch (err) {
    // The first connection loads better-sqlite3's compiled part.
    throw moduleLoadError(err) ?? err;
  }
  return pin(db);
}

/** How rowWriter writes: `head VALUES (?, ...), ... tail`, `width` values a row. */
export interface RowWriterSql {
  head: string;
  width: number;
  /** Rows one statement takes; a shorter rest goes by a statement of its own length. */
  perStatement: number;
  /** What follows the rows (an ON CONFLICT clause). */
  tail?: string;
}

/**
 * Writes rows of bound values, many to a statement (one call for many rows saves most of the
 * per-call cost), and empties the list it is given.
 */
export function rowWriter(db: StateDb, sql: RowWriterSql): (values: unknown[]) => void {
  const one = `(${new Array(sql.width).fill('?').join(', ')})`;
  const text = (n: number) =>
    `${sql.head} VALUES ${new Array(n).fill(one).join(', ')} ${sql.tail ?? ''}`;
  const full = db.prepare(text(sql.perStatement));
  const step = sql.width * sql.perStatement;
  return (values) => {
    let k = 0;
    for (; k + step <= values.length; k += step) {
      full.run(k === 0 && values.length === step ? values : values.slice(k, k + step));
    }
    const rest = (values.length - k) / sql.width;
    if (rest > 0) db.prepare(text(rest)).run(values.slice(k));
    values.length = 0;
  };
}

/** What this client does itself after a step of MIGRATIONS, by its index. */
const MIGRATION_WORK = clientWorkFor(STEPS, 'sqlite');

/** The schema version of a database (db.pragma would make a statement for each call). */
function userVersion(db: StateDb): number {
  return (db.prepare('PRAGMA user_version').get() as { user_version: number }).user_version;
}

/**
 * Applies the migrations the database has not seen yet, in one transaction. `lost`, when
 * given, is the error of a database found empty (no schema at all) under the write lock.
 */
export function migrate(db: StateDb, path: string, lost?: StateError): void {
  const current = userVersion(db);
  if (current > MIGRATIONS.length) {
    throw newerSchemaError(path, current, MIGRATIONS.length);
  }
  if (current === MIGRATIONS.length) return;
  db.transaction(() => {
    // Another process may have migrated since the version was read: read it again under the lock.
    const found = userVersion(db);
    if (found === 0 && lost) throw lost;
    if (found === 0 && isEmpty(db)) db.exec(schemaAtOnce());
    else applySteps(db, found);
    db.exec(`PRAGMA user_version = ${MIGRATIONS.length}`);
  }).immediate();
}

/** Applies the migrations from step `found` on. */
function applySteps(db: StateDb, found: number): void {
  // Step 3 derives service and run ids in SQL, as hash.ts does (PostgreSQL: sha256()).
  db.function('sha256_16', { deterministic: true }, (text) => sha256Hex16(String(text)));
  for (let i = found; i < MIGRATIONS.length; i++) {
    db.exec(MIGRATIONS[i]!);
    // A database made now holds no run to rekey.
    if (MIGRATION_WORK.get(i) === 'service_ids' && found > 0) rekeyServices(db);
  }
}

/** Whether a database holds nothing yet. */
function isEmpty(db: StateDb): boolean {
  return db.prepare('SELECT 1 FROM sqlite_master LIMIT 1').get() === undefined;
}

/** The statements that make the latest schema at once, read once a process (schemaAtOnce). */
let atOnce: string | undefined;

/**
 * What the migrations make of an empty database, as statements that make it at once: each
 * object's definition as an in-memory database migrated step by step holds it, in the order
 * it was made. A new database (a state folder's first use, every send's scratch database)
 * runs these rather than every step: some 0.6 ms instead of 3.
 */
function schemaAtOnce(): string {
  if (atOnce === undefined) {
    const mem = openDatabase(':memory:');
    try {
      applySteps(mem, 0);
      const made = mem
        .prepare(
          "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid",
        )
        .all() as Array<{ sql: string }>;
      atOnce = made.map((m) => `${m.sql};`).join('\n');
    } finally {
      mem.close();
    }
  }
  return atOnce;
}

/**
 * Gives each run the service id of its `service`'s identity (serviceIdOf), so runs recorded
 * under another spelling of a service's URL are found as its runs. Run ids stay as recorded.
 */
function rekeyServices(db: StateDb): void {
  const services = db
    .prepare('SELECT DISTINCT service FROM runs WHERE service IS NOT NULL')
    .all() as Array<{ service: string }>;
  const set = db.prepare(
    'UPDATE runs SET service_id = ? WHERE service = ? AND service_id IS NOT ?',
  );
  for (const { service } of services) {
    const id = serviceIdOf(service);
    set.run(id, service, id);
  }
}

/**
 * The error for a state.db that was there but holds nothing, in a folder whose `locks` shows
 * that a send ran from it; undefined otherwise. A -wal or -shm is no sign: another program
 * that opened an empty state.db (sqlite3, a database browser) makes them too.
 */
export function lostContents(path: string, stateDir: string): StateError | undefined {
  const locks = join(stateDir, 'locks');
  if (!existsSync(path) || !existsSync(locks)) return undefined;
  return new StateError(
    path,
    'damaged',
    `the state database ${path} is damaged (it is empty, but ${locks} shows that payouts were sent from this folder: the runs it held are lost)`,
    `restore it from a backup; or move it aside (mv ${path} ${path}.damaged) and send each file again with --check-service, which looks every payout up at the service first, so none is sent twice`,
  );
}

/**
 * Opens (creating if need be) the state database of a state folder: WAL, every commit
 * synced (synchronous=FULL) and migrated. Any problem
 * with the file is a StateError naming it and the fix (see state/errors.ts); `lockWait`
 * says how long to wait for another program's lock, and how to tell the user meanwhile.
 */
export async function openStateDb(
  stateDir: string,
  lockWait: Partial<LockWait> = {},
): Promise<StateDb> {
  const path = join(stateDir, STATE_DB);
  let db: StateDb;
  let lost: StateError | undefined;
  checkStateFolder(stateDir);
  try {
    // Looked at before SQLite opens the file, which makes a -shm of its own.
    lost = lostContents(path, stateDir);
    mkdirSync(stateDir, { recursive: true, mode: 0o700 });
    chmodSync(stateDir, 0o700);
    // Created first with the owner's mode: SQLite gives its -wal and -shm files the same one.
    // Never through a link, never waiting on a FIFO planted at its name.
    closeSync(openKeptFile(path));
    chmodSync(path, 0o600);
    db = openDatabase(path);
    lockWaits.set(db, { ...LOCK_WAIT, ...lockWait });
    guardConnection(db, path, lockWaits.get(db)!);
  } catch (err) {
    throw stateError(err, path);
  }
  try {
    db.exec('PRAGMA journal_mode = WAL');
    db.exec('PRAGMA synchronous = FULL');
    migrate(db, path, lost);
  } catch (err) {
    db.close();
    throw err;
  }
  return db;
}

/**
 * Moves every commit from state.db's -wal into state.db itself and empties the -wal, so a
 * finished run never depends on it (SQLite does so at close only when no other program has
 * the file open). Nothing is lost when it cannot: the -wal keeps what it holds.
 */
export function checkpoint(db: StateDb): void {
  if (!db.open || db.memory || db.name === '') return;
  try {
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  } catch {
    // The commits are durable in the -wal all the same.
  }
}

/** A private database, unsynced and deleted when closed, for what a run need not keep. */
export function openPrivateDb(): StateDb {
  // '' is an anonymous temporary file: large runs spill to disk rather than fill memory.
  const db = openDatabase('');
  // 8 MiB of pages: memory stays bounded whatever the run's size (a larger cache was no quicker).
  db.exec(
    'PRAGMA synchronous = OFF; PRAGMA journal_mode = OFF; PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -8192',
  );
  return db;
}

/** A private database of state.db's schema. */
export function openScratchDb(): StateDb {
  const db = openPrivateDb();
  migrate(db, '(scratch)');
  return db;
}
