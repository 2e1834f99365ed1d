/**
 * A cross-process exclusive lock on a file path, for the sandbox ledger. Creating the lock
 * file with O_EXCL ('wx') is atomic on local file systems, so exactly one process wins.
 */
import { randomBytes } from 'node:crypto';
import { open, readFile, rename, stat, unlink } from 'node:fs/promises';
import { errorCode } from '../errors.js';

/** Options of lock acquisition. */
export interface LockOptions {
  /** A lock older than this is abandoned by a stuck or dead holder (default 10 s). */
  staleMs?: number;
  /** Give up after waiting this long (default 30 s). */
  timeoutMs?: number;
}

/** Releases a held lock. */
export type ReleaseLock = () => Promise<void>;

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Whether a process with this pid exists on this machine. */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return errorCode(error) === 'EPERM';
  }
}

/**
 * Whether the lock at `path` is stale: older than `staleMs`, or written by a pid that no
 * longer runs. Returns the inode judged, so the caller removes that file and no newer one.
 */
export async function staleLock(path: string, staleMs: number): Promise<number | undefined> {
  try {
    const st = await stat(path);
    if (Date.now() - st.mtimeMs > staleMs) return st.ino;
    const pid = Number.parseInt((await readFile(path, 'utf8')).split(' ')[0] ?? '', 10);
    // An empty file is a lock being written right now: only its age can make it stale.
    if (Number.isSafeInteger(pid) && pid > 0 && !processAlive(pid)) return st.ino;
    return undefined;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

/** Removes a stale lock, unless another process replaced it since it was judged. */
async function breakLock(path: string, judgedIno: number): Promise<void> {
  // Renaming first narrows the race where two waiters both judge the same lock stale and
  // the second removes the first one's fresh lock: the inode is checked just before.
  const aside = `${path}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    if ((await stat(path)).ino !== judgedIno) return;
    await rename(path, aside);
    await unlink(aside);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}

/** Takes the lock at `path`, waiting with short sleeps while another process holds it. */
export async function acquireLock(path: string, opts: LockOptions = {}): Promise<ReleaseLock> {
  const staleMs = opts.staleMs ?? 10_000;
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  const token = `${process.pid} ${Date.now()} ${randomBytes(6).toString('hex')}\n`;
  for (;;) {
    try {
      const fh = await open(path, 'wx', 0o600);
      try {
        await fh.writeFile(token);
      } finally {
        await fh.close();
      }
      return () => releaseLock(path, token);
    } catch (error) {
      if (errorCode(error) !== 'EEXIST') throw error;
    }
    const ino = await staleLock(path, staleMs);
    if (ino !== undefined) {
      await breakLock(path, ino);
      continue;
    }
    if (Date.now() > deadline) {
      const holder = await readFile(path, 'utf8').catch(() => '');
      throw new Error(
        `the sandbox ledger lock ${path} is held by pid ${holder.split(' ')[0] || '?'}: retry, or remove the file if no sandbox is running`,
      );
    }
    await sleep(2 + Math.floor(Math.random() * 15));
  }
}

/** Removes the lock if it is still ours (a holder judged stale may have lost it). */
async function releaseLock(path: string, token: string): Promise<void> {
  try {
    if ((await readFile(path, 'utf8')) === token) await unlink(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}
