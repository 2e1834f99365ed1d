import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { errorCode, errorMessage, PayoutsError } from '../errors.js';

// The one translation of the database driver's errors (SQLite's SQLITE_* codes, the file
// system's E* codes, a native module that will not load) into errors the user can act on.
// It is applied where state.db is opened and on every statement of its connection, so no
// driver message reaches the user without the file and the fix; the codes show with --debug.

/** What is wrong with the state database; docs/state-db.md has a section for each. */
export type StateProblem = 'read-only' | 'damaged' | 'locked' | 'newer' | 'full' | 'io' | 'module';

/** The state database cannot be used: the file, what is wrong, and what to do (exit 7). */
export class StateError extends PayoutsError {
  override name = 'StateError';
  constructor(
    readonly file: string,
    readonly problem: StateProblem,
    what: string,
    readonly fix: string,
    /** The driver's or the system's error, shown with --debug. */
    cause?: unknown,
  ) {
    super(`${what}: ${fix}`, cause === undefined ? undefined : { cause });
  }
}

/** The error code of a driver or system error, looking through causes. */
function codeOf(err: unknown): string {
  return errorCode(err) ?? '';
}

/** Whether an error is SQLite's "another connection holds the lock". */
export function isLockedError(err: unknown): boolean {
  return /^SQLITE_(BUSY|LOCKED)/.test(codeOf(err));
}

const RUN_AGAIN = 'then run the same command again';

/**
 * The StateError of a driver or file-system error met while using `file`, or the error
 * itself when it is none of those (a bug stays a bug). `file` is state.db, or the folder
 * being created; a file-system error names its own path.
 */
export function stateError(err: unknown, file: string): unknown {
  if (err instanceof StateError || !(err instanceof Error)) return err;
  const code = codeOf(err);
  const path = (err as { path?: unknown }).path;
  const at = typeof path === 'string' ? path : file;
  if (/^(SQLITE_READONLY|SQLITE_PERM|SQLITE_AUTH|EACCES|EPERM|EROFS)/.test(code)) {
    return new StateError(
      at,
      'read-only',
      `cannot write the state database ${at}: ${code === 'EROFS' ? 'the file system is read-only' : 'permission denied'}`,
      `make it and its folder writable by you (ls -l shows their owner; for example chown -R "$(id -un)" ${dirname(at)}), or set XDG_STATE_HOME to a writable folder`,
      err,
    );
  }
  if (/^(SQLITE_NOTADB|SQLITE_CORRUPT)/.test(code)) {
    return new StateError(
      file,
      'damaged',
      `the state database ${file} is damaged (${code === 'SQLITE_NOTADB' ? 'it is not a database' : 'its content is malformed'})`,
      `restore it from a backup, or move it aside (mv ${file} ${file}.damaged) to start a new one; the runs it held are then forgotten, so check their payouts with payouts status before sending their files again`,
      err,
    );
  }
  if (/^(SQLITE_FULL|ENOSPC|EDQUOT)/.test(code)) {
    return new StateError(
      file,
      'full',
      `cannot write the state database ${file}: the disk is full`,
      `free space on that disk, ${RUN_AGAIN} to resume the run`,
      err,
    );
  }
  if (isLockedError(err)) return lockedError(file, err);
  if (/^(SQLITE_IOERR|SQLITE_CANTOPEN|EIO|EISDIR|ENOTDIR|ENOENT|ELOOP)/.test(code)) {
    return new StateError(
      at,
      'io',
      `cannot read or write the state database ${at} (${code.startsWith('SQLITE') ? 'a disk or file error' : err.message})`,
      `check that it is a file on a working disk, and that its folder is writable (SQLite adds ${dirname(at)}/state.db-wal and -shm), ${RUN_AGAIN}`,
      err,
    );
  }
  return err;
}

/** The error of a lock another program held for the whole wait. */
function lockedError(file: string, cause: unknown): StateError {
  return new StateError(
    file,
    'locked',
    `the state database ${file} stayed locked by another program`,
    `close the program that holds it open in a transaction (a database browser, or sqlite3 with BEGIN), ${RUN_AGAIN}`,
    cause,
  );
}

/** The error for a database written by a newer schema than this version knows. */
export function newerSchemaError(file: string, found: number, known: number): StateError {
  return new StateError(
    file,
    'newer',
    `the state database ${file} was written by a newer version of payouts (schema ${found}; this version knows ${known})`,
    'update payouts to the version that wrote it, or a later one',
  );
}

/**
 * The StateError of better-sqlite3's native part failing to load, or undefined for another
 * error: a Node.js upgrade (another NODE_MODULE_VERSION), or an install with --ignore-scripts
 * (no compiled file at all).
 */
export function moduleLoadError(err: unknown): StateError | undefined {
  const message = errorMessage(err);
  const versions =
    /NODE_MODULE_VERSION (\d+)\. This version of Node\.js requires\s+NODE_MODULE_VERSION (\d+)/.exec(
      message,
    );
  let why: string;
  if (versions) {
    why = `it was built for another version of Node.js (NODE_MODULE_VERSION ${versions[1]}; this Node.js ${process.version} needs ${versions[2]})`;
  } else if (/Could not locate the bindings file/.test(message)) {
    why = 'its compiled part is missing (was it installed with --ignore-scripts?)';
  } else if (codeOf(err) === 'ERR_DLOPEN_FAILED') {
    why = `its compiled part cannot be loaded (${message.split('\n')[0]})`;
  } else {
    return undefined;
  }
  const home = packageHome();
  return new StateError(
    home,
    'module',
    `payouts cannot load better-sqlite3, the SQLite module that keeps its state: ${why}`,
    `run npm rebuild better-sqlite3 in ${home}, or install payouts again`,
    err,
  );
}

/** The folder whose node_modules holds better-sqlite3: where `npm rebuild` is run. */
function packageHome(): string {
  try {
    const main = createRequire(import.meta.url).resolve('better-sqlite3');
    const at = main.search(/[\\/]node_modules[\\/]better-sqlite3[\\/]/);
    return at > 0 ? main.slice(0, at) : dirname(main);
  } catch {
    return 'the folder payouts is installed in';
  }
}

/** How a connection to state.db waits for a lock another program holds. */
export interface LockWait {
  /** Told once a wait has lasted `noticeMs`, while the wait goes on. */
  notice: (message: string) => void;
  /** How long to wait silently before telling. */
  noticeMs: number;
  /** How much longer to wait after telling, before giving up. */
  waitMs: number;
  /**
   * Shows the told wait while it lasts (a countdown on a terminal) until the returned function
   * is called. Only a wait in the writer thread can: elsewhere SQLite's wait blocks the loop.
   */
  countdown?: (ms: number) => () => void;
}

/** A statement method or exec, as guarded. */
type Call<T> = () => T;

/**
 * Makes every statement, exec and transaction of a state.db connection report driver errors
 * as StateErrors, and wait for a lock held by another program in two steps: `noticeMs` in
 * silence (the connection's busy timeout), then, told, `waitMs` more. Only a call that has
 * changed nothing is tried again: one made outside a transaction (a BEGIN, or a statement
 * on its own), as SQLite advises. Every transaction begins IMMEDIATE, taking the write lock
 * at BEGIN, so none meets the lock half-way.
 */
export function guardConnection(db: Database.Database, file: string, wait: LockWait): void {
  db.exec(`PRAGMA busy_timeout = ${wait.noticeMs}`);
  const exec = db.exec.bind(db);
  const guard = <T>(call: Call<T>, changed: () => boolean = () => false): T => {
    const outside = !db.inTransaction;
    try {
      return call();
    } catch (err) {
      if (!outside || changed() || !isLockedError(err)) throw stateError(err, file);
      return waitLonger(call, { exec, file, wait });
    }
  };
  const prepare = db.prepare.bind(db);
  const seen = new WeakSet<Database.Statement>();
  db.prepare = ((sql: string) => {
    const stmt = prepare(sql);
    if (!seen.has(stmt)) {
      seen.add(stmt);
      for (const name of ['run', 'get', 'all'] as const) {
        const method = stmt[name].bind(stmt) as (...args: unknown[]) => unknown;
        Object.defineProperty(stmt, name, {
          value: (...args: unknown[]) => guard(() => method(...args)),
        });
      }
    }
    return stmt;
  }) as typeof db.prepare;
  db.exec = ((sql: string) => guard(() => exec(sql))) as typeof db.exec;
  const transaction = db.transaction.bind(db);
  db.transaction = ((fn: (...args: unknown[]) => unknown) => {
    let entered = false;
    const t = transaction((...args: unknown[]) => {
      entered = true;
      return fn(...args);
    });
    const run = (...args: unknown[]) => {
      entered = false;
      return guard(
        () => t.immediate(...args),
        () => entered,
      );
    };
    for (const name of ['default', 'deferred', 'immediate', 'exclusive'] as const) {
      Object.defineProperty(run, name, { value: run });
    }
    return run;
  }) as typeof db.transaction;
}

/** Tells the user, then waits `waitMs` more for the lock, and restores the short timeout. */
function waitLonger<T>(
  call: Call<T>,
  c: { exec: (sql: string) => unknown; file: string; wait: LockWait },
): T {
  const seconds = Math.ceil(c.wait.waitMs / 1000);
  c.wait.notice(
    `the state database ${c.file} is locked by another program: waiting up to ${seconds} s more for it (close the program that holds it to go on at once)`,
  );
  c.exec(`PRAGMA busy_timeout = ${c.wait.waitMs}`);
  try {
    return call();
  } catch (err) {
    throw isLockedError(err) ? lockedError(c.file, err) : stateError(err, c.file);
  } finally {
    c.exec(`PRAGMA busy_timeout = ${c.wait.noticeMs}`);
  }
}
