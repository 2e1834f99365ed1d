/**
 * A cross-process lock on a file path, shared by the send lock and the sandbox ledger.
 * Creating the file with O_EXCL ('wx') is atomic on local file systems, so one process wins;
 * a lock whose process is gone is taken over, by one process only. Processes that wait for it
 * (send --wait) queue as files in `PATH.queue/`, named by when they asked, and take it in turn.
 */
import { randomBytes } from 'node:crypto';
import {
  type FileHandle,
  mkdir,
  open,
  readdir,
  rename,
  unlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { hasEnded } from './proc.js';

/** Mode of lock files: only the user may read them. */
const FILE_MODE = 0o600;
/** How long acquire keeps retrying while other processes create or take over the lock. */
const CHURN_MS = 5_000;
/** An unreadable lock older than this was left by a process that died while writing it. */
const GRACE_MS = 2_000;
/** A waiter on another host not seen for this long is gone (it touches its file as it waits). */
const WAITER_STALE_MS = 30_000;

/** What a lock file holds. `token` tells our lock from any other, even with the same pid. */
export interface LockInfo {
  pid: number;
  hostname: string;
  started_at: string;
  command: string;
  token: string;
}

/** Options of FileLock.acquire. */
export interface FileLockOptions {
  path: string;
  pid: number;
  command: string;
  /**
   * The error for a lock held by a live process (or one on another host), or, with `queue`,
   * free while `waiting` (the live waiters before this one, in order) wait for it.
   */
  busy: (holder: LockInfo | undefined, path: string, ownHost: string, waiting: LockInfo[]) => Error;
  /** Waiters queue for this lock (FileLockQueue): it is not taken while any waits. */
  queue?: boolean;
  /** How long to wait for a live holder to let go (0, the default: fail at once). */
  waitMs?: number;
  /** A lock older than this is stale even if its process lives: for locks held only briefly. */
  staleAfterMs?: number;
  isAlive?: (pid: number) => boolean;
  /** This machine's name (tests pretend to be another host). */
  hostname?: string;
  now?: () => Date;
}

/** A lock file as read: its text, its identity on disk, and its content when readable. */
interface SeenLock {
  raw: string;
  ino: number;
  mtimeMs: number;
  info: LockInfo | undefined;
}

/** The error code of a Node system error, if any. */
function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err
    ? String((err as { code: unknown }).code)
    : undefined;
}

/**
 * Whether a process runs on this host: signal 0 checks it exists without sending anything,
 * and a zombie (killed, not yet reaped by its parent) runs no more: it holds nothing.
 */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    if (errorCode(err) === 'ESRCH') return false;
  }
  return !hasEnded(pid);
}

/** Parses a lock file's text; undefined when it is not a complete lock. */
function parseLock(raw: string): LockInfo | undefined {
  try {
    const o = JSON.parse(raw) as Partial<LockInfo> | null;
    if (
      o &&
      typeof o === 'object' &&
      Number.isSafeInteger(o.pid) &&
      (o.pid as number) > 0 &&
      typeof o.hostname === 'string' &&
      typeof o.started_at === 'string' &&
      typeof o.command === 'string' &&
      typeof o.token === 'string'
    ) {
      return o as LockInfo;
    }
  } catch {
    // Unparsable: being written, or left half-written by a crash.
  }
  return undefined;
}

/** Reads a lock file; undefined when it does not exist. */
async function readLock(path: string): Promise<SeenLock | undefined> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'r');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw err;
  }
  try {
    // Stat and read the same open file, so identity and content belong together.
    const st = await fh.stat();
    const raw = await fh.readFile('utf8');
    return { raw, ino: st.ino, mtimeMs: st.mtimeMs, info: parseLock(raw) };
  } finally {
    await fh.close();
  }
}

/** Creates a file only if it does not exist; false when it does. */
async function createExclusive(path: string, text: string): Promise<boolean> {
  let fh: FileHandle;
  try {
    fh = await open(path, 'wx', FILE_MODE);
  } catch (err) {
    if (errorCode(err) === 'EEXIST') return false;
    throw err;
  }
  let written = false;
  try {
    await fh.writeFile(text, 'utf8');
    written = true;
  } finally {
    await fh.close();
    // A lock without content would stall others for GRACE_MS: take it back.
    if (!written) await unlink(path).catch(() => {});
  }
  return true;
}

/** Whether two reads saw the very same lock file. */
function sameLock(a: SeenLock, b: SeenLock): boolean {
  return a.raw === b.raw && a.ino === b.ino && a.mtimeMs === b.mtimeMs;
}

/** A short random pause, so contenders do not retry in lockstep. */
function backoff(): Promise<void> {
  return sleep(5 + Math.floor(Math.random() * 20));
}

/** Context of one acquire attempt. */
interface Acquirer {
  opts: FileLockOptions;
  me: LockInfo;
  text: string;
  isAlive: (pid: number) => boolean;
}

/** Whether a lock is stale (left by a process that is gone); false while it is held. */
function isStale(a: Acquirer, seen: SeenLock): boolean {
  const age = Date.now() - seen.mtimeMs;
  if (!seen.info) return age > GRACE_MS;
  // A process on another host cannot be checked from here: never take its lock.
  if (seen.info.hostname !== a.me.hostname) return false;
  if (!a.isAlive(seen.info.pid)) return true;
  return a.opts.staleAfterMs !== undefined && age > a.opts.staleAfterMs;
}

/**
 * Replaces a stale lock with ours. Only the holder of the takeover file may replace, and it
 * replaces only if the lock is still the very one judged stale, by renaming a complete file
 * over it. Returns false when another process got in first: the caller looks again.
 */
async function takeOver(a: Acquirer, stale: SeenLock): Promise<boolean> {
  const path = a.opts.path;
  const takeoverPath = `${path}.takeover`;
  if (!(await createExclusive(takeoverPath, a.text))) {
    await checkTakeoverHolder(a, takeoverPath);
    return false;
  }
  try {
    const now = await readLock(path);
    if (!now || !sameLock(now, stale)) return false;
    const tmp = `${path}.${a.me.token}.tmp`;
    await writeFile(tmp, a.text, { mode: FILE_MODE, flag: 'wx' });
    try {
      await rename(tmp, path);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
    const after = await readLock(path);
    return after?.info?.token === a.me.token;
  } finally {
    await unlink(takeoverPath).catch(() => {});
  }
}

/** Throws when the takeover file was left by a process that died holding it. */
async function checkTakeoverHolder(a: Acquirer, takeoverPath: string): Promise<void> {
  const t = await readLock(takeoverPath);
  if (!t) return;
  const dead = t.info
    ? t.info.hostname === a.me.hostname && !a.isAlive(t.info.pid)
    : Date.now() - t.mtimeMs > GRACE_MS;
  if (dead) {
    // Removing it here could race with another process doing the same; a person must decide.
    throw new Error(
      `a payouts process${t.info ? ` (pid ${t.info.pid})` : ''} stopped while taking over the lock ${a.opts.path}; if no other payouts process is using it, delete ${takeoverPath} and try again`,
    );
  }
}

/** The lock's identity as this process writes it: who, where, since when, and a token of its own. */
function acquirer(opts: FileLockOptions): Acquirer {
  const me: LockInfo = {
    pid: opts.pid,
    hostname: opts.hostname ?? osHostname(),
    started_at: (opts.now?.() ?? new Date()).toISOString(),
    command: opts.command,
    token: randomBytes(8).toString('hex'),
  };
  return { opts, me, text: `${JSON.stringify(me)}\n`, isAlive: opts.isAlive ?? isPidAlive };
}

/** The folder where the processes waiting for a lock queue. */
function queueDir(path: string): string {
  return `${path}.queue`;
}

/** Whether a waiter's file was left by a process that no longer waits. */
function isGoneWaiter(a: Acquirer, seen: SeenLock): boolean {
  const age = Date.now() - seen.mtimeMs;
  if (!seen.info) return age > GRACE_MS;
  if (seen.info.hostname === a.me.hostname) return !a.isAlive(seen.info.pid);
  return age > WAITER_STALE_MS;
}

/**
 * The live waiters of a lock, in the order they asked (those whose file sorts before `before`
 * only, when given); the files of waiters gone are removed on the way.
 */
async function waitersAhead(a: Acquirer, before?: string): Promise<LockInfo[]> {
  const dir = queueDir(a.opts.path);
  let names: string[];
  try {
    names = (await readdir(dir)).filter((n) => n.endsWith('.waiter')).sort();
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return [];
    throw err;
  }
  const ahead: LockInfo[] = [];
  for (const name of names) {
    if (before !== undefined && name >= before) break;
    const seen = await readLock(join(dir, name));
    if (!seen) continue;
    if (isGoneWaiter(a, seen)) await unlink(join(dir, name)).catch(() => {});
    else if (seen.info) ahead.push(seen.info);
  }
  return ahead;
}

/** The busy error of a lock others wait for: its holder, if a live one holds it, and them. */
async function queuedBusy(a: Acquirer, waiting: LockInfo[]): Promise<Error> {
  const seen = await readLock(a.opts.path);
  const holder = seen?.info && !isStale(a, seen) ? seen.info : undefined;
  return a.opts.busy(holder, a.opts.path, a.me.hostname, waiting);
}

/**
 * Takes the lock, taking over a stale one; throws `busy` while a live process holds it (after
 * `waitMs`) or, unless `queued` (the first waiter's turn), while others queue for it.
 */
async function acquireAs(a: Acquirer, queued: boolean): Promise<FileLock> {
  const { opts, me } = a;
  await mkdir(dirname(opts.path), { recursive: true, mode: 0o700 });
  if (opts.queue && !queued) {
    const waiting = await waitersAhead(a);
    if (waiting.length) throw await queuedBusy(a, waiting);
  }
  const waitUntil = Date.now() + (opts.waitMs ?? 0);
  const churnUntil = waitUntil + CHURN_MS;
  for (;;) {
    if (await createExclusive(opts.path, a.text)) return new FileLock(opts.path, me);
    // Absent means released in between: try to create it again at once.
    const seen = await readLock(opts.path);
    if (seen && isStale(a, seen)) {
      if (await takeOver(a, seen)) return new FileLock(opts.path, me);
    } else if (seen?.info && Date.now() >= waitUntil) {
      throw opts.busy(seen.info, opts.path, me.hostname, []);
    }
    if (Date.now() > churnUntil) {
      throw new Error(
        `could not take the lock ${opts.path}: other payouts processes keep changing it; try again`,
      );
    }
    if (seen) await backoff();
  }
}

/** An exclusive lock held as a file naming its process. */
export class FileLock {
  private released = false;

  constructor(
    readonly path: string,
    readonly info: LockInfo,
  ) {}

  /** Takes the lock, taking over a stale one; throws `busy` while a live process holds it. */
  static acquire(opts: FileLockOptions): Promise<FileLock> {
    return acquireAs(acquirer(opts), false);
  }

  /** Removes the lock only if it is still ours. */
  async release(): Promise<void> {
    if (this.released) return;
    this.released = true;
    const seen = await readLock(this.path);
    if (seen?.info?.token !== this.info.token) return;
    await unlink(this.path).catch((err: unknown) => {
      if (errorCode(err) !== 'ENOENT') throw err;
    });
  }
}

/**
 * A place in the queue of a lock (`queue` locks): a file named by when this process asked,
 * touched at each try so that waiters on other hosts see it is still there. `take` gets the
 * lock once every waiter before this one has had it (or is gone) and the lock is free.
 */
export class FileLockQueue {
  private left = false;

  private constructor(
    private readonly opts: FileLockOptions,
    private readonly file: string,
    private readonly text: string,
  ) {}

  /** Joins the queue of `opts.path`, last. */
  static async join(opts: FileLockOptions): Promise<FileLockQueue> {
    const a = acquirer(opts);
    const dir = queueDir(opts.path);
    await mkdir(dir, { recursive: true, mode: 0o700 });
    // Names sort in the order of asking: the time in 15 digits, then a token of its own.
    const file = join(dir, `${String(Date.now()).padStart(15, '0')}-${a.me.token}.waiter`);
    await writeFile(file, a.text, { mode: FILE_MODE, flag: 'wx' });
    return new FileLockQueue(opts, file, a.text);
  }

  /** The lock, when this waiter's turn has come and it is free; else `busy`, with those ahead. */
  async take(): Promise<FileLock> {
    await this.touch();
    const a = acquirer(this.opts);
    const waiting = await waitersAhead(a, basename(this.file));
    if (waiting.length) throw await queuedBusy(a, waiting);
    const lock = await acquireAs(a, true);
    await this.leave();
    return lock;
  }

  /** Leaves the queue (taken, given up or stopped); harmless once left. */
  async leave(): Promise<void> {
    if (this.left) return;
    this.left = true;
    await unlink(this.file).catch(() => {});
  }

  /** Shows this waiter is still there; its file again (same place) if someone removed it. */
  private async touch(): Promise<void> {
    const now = new Date();
    await utimes(this.file, now, now).catch(() =>
      writeFile(this.file, this.text, { mode: FILE_MODE, flag: 'wx' }).catch(() => {}),
    );
  }
}
