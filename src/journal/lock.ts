import { randomBytes } from 'node:crypto';
import { type FileHandle, open, rename, unlink, writeFile } from 'node:fs/promises';
import { hostname as osHostname } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../errors.js';
import { ensureServiceDir, errorCode, FILE_MODE } from './fsutil.js';

/** Name of the send lock in a service's folder. */
export const LOCK_NAME = 'send.lock';
/** Name of the file whose holder alone may replace a stale send lock. */
export const TAKEOVER_NAME = 'send.lock.takeover';

/** How long acquire keeps retrying while another process is creating or taking over the lock. */
const WAIT_MS = 5_000;
/** An unreadable lock older than this was left by a process that died while writing it. */
const GRACE_MS = 2_000;

/** What a lock file holds. `token` tells our lock from any other, even with the same pid. */
export interface LockInfo {
  pid: number;
  hostname: string;
  started_at: string;
  command: string;
  token: string;
}

/** A lock file as read: its text, its identity on disk, and its content when readable. */
interface SeenLock {
  raw: string;
  ino: number;
  mtimeMs: number;
  info: LockInfo | undefined;
}

/** Options of RunLock.acquire. */
export interface AcquireLockOptions {
  stateDir: string;
  serviceKey: string;
  pid: number;
  command: string;
  isAlive?: (pid: number) => boolean;
  /** This machine's name (tests pretend to be another host). */
  hostname?: string;
  now?: () => Date;
}

/** Whether a process exists on this host: signal 0 checks without sending anything. */
export function isPidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to another user.
    return errorCode(err) !== 'ESRCH';
  }
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

/** The error for a lock held by a running (or unverifiable) process. */
function busyError(info: LockInfo, path: string, ownHost: string): UsageError {
  const where = info.hostname === ownHost ? '' : ` on host ${info.hostname}`;
  const hint =
    info.hostname === ownHost
      ? ''
      : `; if no payouts send is running there, delete ${path} and try again`;
  return new UsageError(
    `another payouts send to this service is running (pid ${info.pid}${where}, started ${info.started_at}, ${JSON.stringify(info.command)}); wait for it to finish${hint}`,
  );
}

/** Context of one acquire attempt. */
interface Acquirer {
  dir: string;
  path: string;
  me: LockInfo;
  text: string;
  isAlive: (pid: number) => boolean;
}

/** Whether a lock is stale (its process is gone); throws when it is held. */
function isStale(a: Acquirer, seen: SeenLock): boolean {
  if (!seen.info) return Date.now() - seen.mtimeMs > GRACE_MS;
  // A process on another host cannot be checked from here: never take its lock.
  if (seen.info.hostname !== a.me.hostname || a.isAlive(seen.info.pid)) {
    throw busyError(seen.info, a.path, a.me.hostname);
  }
  return true;
}

/**
 * Replaces a stale lock with ours. Only the holder of the takeover file may replace, and it
 * replaces only if the lock is still the very one judged stale, by renaming a complete file
 * over it. Returns false when another process got in first: the caller looks again.
 */
async function takeOver(a: Acquirer, stale: SeenLock): Promise<boolean> {
  const takeoverPath = join(a.dir, TAKEOVER_NAME);
  if (!(await createExclusive(takeoverPath, a.text))) {
    await checkTakeoverHolder(a, takeoverPath);
    return false;
  }
  try {
    const now = await readLock(a.path);
    if (!now || !sameLock(now, stale)) return false;
    const tmp = join(a.dir, `${LOCK_NAME}.${a.me.token}.tmp`);
    await writeFile(tmp, a.text, { mode: FILE_MODE, flag: 'wx' });
    try {
      await rename(tmp, a.path);
    } catch (err) {
      await unlink(tmp).catch(() => {});
      throw err;
    }
    const after = await readLock(a.path);
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
    throw new UsageError(
      `a payouts process${t.info ? ` (pid ${t.info.pid})` : ''} stopped while taking over the send lock; if no payouts send to this service is running, delete ${takeoverPath} and try again`,
    );
  }
}

/** One sending run per service on this machine, held as `send.lock` in the service's folder. */
export class RunLock {
  private released = false;

  private constructor(
    readonly path: string,
    readonly info: LockInfo,
  ) {}

  /** Takes the service's send lock, taking over a stale one; UsageError when another send holds it. */
  static async acquire(opts: AcquireLockOptions): Promise<RunLock> {
    const dir = await ensureServiceDir(opts.stateDir, opts.serviceKey);
    const me: LockInfo = {
      pid: opts.pid,
      hostname: opts.hostname ?? osHostname(),
      started_at: (opts.now?.() ?? new Date()).toISOString(),
      command: opts.command,
      token: randomBytes(8).toString('hex'),
    };
    const a: Acquirer = {
      dir,
      path: join(dir, LOCK_NAME),
      me,
      text: `${JSON.stringify(me)}\n`,
      isAlive: opts.isAlive ?? isPidAlive,
    };
    const deadline = Date.now() + WAIT_MS;
    for (;;) {
      if (await createExclusive(a.path, a.text)) return new RunLock(a.path, me);
      // Absent means released in between: try to create it again at once.
      const seen = await readLock(a.path);
      if (seen && isStale(a, seen) && (await takeOver(a, seen))) return new RunLock(a.path, me);
      if (Date.now() > deadline) {
        throw new UsageError(
          `could not take the send lock ${a.path}: other payouts processes keep changing it; try again`,
        );
      }
      if (seen) await backoff();
    }
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
